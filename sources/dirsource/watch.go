package dirsource

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// loop is the watcher goroutine's state; only that goroutine touches it after Start.
type loop struct {
	src  *Source
	w    *fsnotify.Watcher
	dirs map[string]bool // watched folders
}

// run debounces relevant events into one notification: it fires once the events have been
// quiet for the debounce period, or at the latest maxWait after the first of a burst, so
// that a file rewritten forever still gets synced.
func (l *loop) run(ctx context.Context) {
	debounce := l.src.cfg.Debounce
	maxWait := 10 * debounce
	timer := time.NewTimer(debounce)
	timer.Stop()
	defer timer.Stop()
	var pending bool
	var first time.Time
	arm := func() {
		now := time.Now()
		if !pending {
			pending, first = true, now
		}
		delay := min(debounce, first.Add(maxWait).Sub(now))
		timer.Reset(max(delay, 0))
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-l.w.Events:
			if !ok {
				return
			}
			if l.relevant(ev) {
				l.src.logger.Debug("manifest event", "event", ev.Op.String(), "file", ev.Name)
				arm()
			}
		case err, ok := <-l.w.Errors:
			if !ok {
				return
			}
			l.src.logger.Warn("watcher error, rescanning", "error", err.Error())
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				arm() // events were lost: assume a change
			}
		case <-timer.C:
			pending = false
			l.src.notify()
		}
	}
}

// relevant reports whether ev may change the manifests, and watches new folders.
func (l *loop) relevant(ev fsnotify.Event) bool {
	name := filepath.Base(ev.Name)
	if ignored(name) {
		return false
	}
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			has, err := l.addTree(ev.Name)
			if err != nil {
				l.src.logger.Warn("cannot watch new folder", "dir", ev.Name, "error", err.Error())
				return true // unwatched: let a scan find out
			}
			return has
		}
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		if l.dirs[ev.Name] {
			// A watched folder went away with whatever it held. After a rename the
			// kernel watch follows the folder to its new name, which fsnotify cannot
			// report correctly: drop it (a Create at the destination re-adds it).
			l.forget(ev.Name)
			return true
		}
	}
	if !ev.Has(fsnotify.Create) && !ev.Has(fsnotify.Write) && !ev.Has(fsnotify.Remove) && !ev.Has(fsnotify.Rename) {
		return false // Chmod only
	}
	return l.src.wanted(name)
}

// addTree watches dir and its non-hidden subfolders and reports whether they hold a
// manifest. Each folder is watched before it is listed, so a file created meanwhile is
// either listed or reported by an event.
func (l *loop) addTree(dir string) (bool, error) {
	has := false
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != dir && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			if p != dir && ignored(d.Name()) {
				return filepath.SkipDir
			}
			if err := l.w.Add(p); err != nil {
				if p == dir {
					return err
				}
				l.src.logger.Warn("cannot watch folder", "dir", p, "error", err.Error())
				return nil
			}
			l.dirs[p] = true
			return nil
		}
		if l.src.wanted(d.Name()) {
			has = true
		}
		return nil
	})
	return has, err
}

// forget drops the watches of dir and of the folders below it.
func (l *loop) forget(dir string) {
	prefix := dir + string(filepath.Separator)
	for p := range l.dirs {
		if p == dir || strings.HasPrefix(p, prefix) {
			_ = l.w.Remove(p) // already gone when the folder was deleted
			delete(l.dirs, p)
		}
	}
}
