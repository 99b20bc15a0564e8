package dirsource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/sources"
)

// racyWindow: a file modified this close to the moment it was hashed may change again
// within the file system's timestamp granularity without its size or times changing, so
// its cached hash is not trusted (git's "racily clean" entries).
const racyWindow = 2 * time.Second

// fullScanEvery: every this many scans hash every file, whatever its stat data says, so
// that a change the stat rule misses (a clock it cannot measure) lasts that many scans at
// most.
const fullScanEvery = 64

// clock is the moment a scan starts by the file system's clock, that of the timestamps it
// compares: the modification time of a hidden file it writes in the folder and removes
// (neither the scan nor the watcher reads hidden files), as git measures against its
// index file's. Never later than the process's clock; that clock when the folder is not
// writable (every fullScanEvery scans then still hash every file).
func (s *Source) clock(root string) time.Time {
	now := s.now()
	f, err := os.CreateTemp(root, sources.ClockProbePrefix+"*")
	if err != nil {
		return now
	}
	fi, err := f.Stat()
	_ = f.Close()
	_ = os.Remove(f.Name())
	if err != nil || fi.ModTime().After(now) {
		return now
	}
	return fi.ModTime()
}

// statEntry remembers a file's content hash with the stat data it was read under.
//
// The rule, as git's index: a file whose size, modification time, change time, device and
// inode are those it was hashed under, and which was last modified (or changed) more than
// racyWindow before it was hashed (by the file system's clock, Source.clock), has the hash
// it had. A rewrite changes the change time
// even when a tool sets the modification time back; one within the racy window is hashed
// again. Without a change time (not Linux), Fetch hashes every file it reads.
type statEntry struct {
	size     int64
	modTime  time.Time
	ctime    time.Time // zero when unknown
	dev, ino uint64
	hashedAt time.Time
	hash     string
}

func newStatEntry(fi fs.FileInfo, hashedAt time.Time, hash string) statEntry {
	e := statEntry{size: fi.Size(), modTime: fi.ModTime(), hashedAt: hashedAt, hash: hash}
	e.ctime, e.dev, e.ino, _ = changeStat(fi)
	return e
}

// matches reports whether fi is the file e was hashed from, by the rule above; strict
// requires the change time to be known (a Fetch, whose hash names the data it returns).
func (e statEntry) matches(fi fs.FileInfo, strict bool, racy time.Duration) bool {
	if e.size != fi.Size() || !e.modTime.Equal(fi.ModTime()) || e.hashedAt.Sub(e.modTime) <= racy {
		return false
	}
	ctime, dev, ino, ok := changeStat(fi)
	if !ok || e.ctime.IsZero() {
		return !strict
	}
	return ctime.Equal(e.ctime) && dev == e.dev && ino == e.ino && e.hashedAt.Sub(ctime) > racy
}

// ignored reports whether a file or folder name is hidden or an editor's temporary file:
// dot files (".#x.yaml" emacs locks, ".x.yaml.swp"), backups ("x.yaml~"), vim swap files
// and its "4913" write test, "*.tmp" and JetBrains' safe-write files.
func ignored(name string) bool {
	if strings.HasPrefix(name, ".") {
		return true
	}
	for _, suffix := range []string{"~", ".swp", ".swx", ".tmp", "4913", "___jb_tmp___", "___jb_old___"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

// wanted reports whether a file name is read: a manifest, or any file with AllFiles.
func (s *Source) wanted(name string) bool {
	return !ignored(name) && (s.cfg.AllFiles || sources.IsManifest(name))
}

// scan walks the folder and returns the revision and, when read is set, the files with
// their data. Without read, files whose stat data matches the cache are not opened; with
// read, those that held (when not nil) reports too, which come Unread.
func (s *Source) scan(ctx context.Context, read bool, held func(path, hash string) bool) (string, []sources.File, error) {
	s.scanMu.Lock()
	defer s.scanMu.Unlock()

	type entry struct{ rel, hash string }
	var entries []entry
	var files []sources.File
	stats := make(map[string]statEntry, len(s.stats))
	n, count, total := 0, 0, 0
	realRoot, err := filepath.EvalSymlinks(s.root)
	if err != nil {
		return "", nil, err
	}
	// Every file is read after this moment: what it was hashed from was there then.
	now := s.clock(realRoot)
	s.scans++
	full := s.scans%fullScanEvery == 0
	err = filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != s.root && errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking; the watcher reports it
			}
			return err
		}
		if n++; n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if d.IsDir() {
			if p != s.root && ignored(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !s.wanted(d.Name()) && d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		refuse := func(reason string) error {
			entries = append(entries, entry{rel, "refused:" + reason})
			if read {
				files = append(files, sources.File{Path: rel, Hash: "refused:" + reason, Refused: reason})
			}
			return nil
		}

		// A symlink is resolved and must stay inside the folder: one leading out of it is
		// refused, without reading what it points to. Inside, links to files are followed
		// and links to folders are not (no cycles, no file seen twice under one folder).
		target := p
		if d.Type()&fs.ModeSymlink != 0 {
			if ignored(d.Name()) {
				return nil
			}
			target, err = filepath.EvalSymlinks(p)
			if errors.Is(err, fs.ErrNotExist) {
				return nil // dangling
			}
			if err != nil {
				return err
			}
			if !sources.Within(realRoot, target) {
				fi, err := os.Stat(target)
				if err == nil && (fi.IsDir() || s.wanted(d.Name())) {
					return refuse("symlink leads outside the source folder")
				}
				return nil
			}
			if !s.wanted(d.Name()) {
				return nil
			}
		}
		fi, err := os.Stat(target)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		if fi.Size() > sources.MaxFileBytes {
			return refuse(sources.TooLarge(fi.Size()))
		}
		if s.cfg.AllFiles {
			count++
			total += int(fi.Size())
			if err := s.limits.Check(rel, count, total); err != nil {
				return err
			}
		}

		prev, known := s.stats[rel]
		known = known && !full
		if known && !read && prev.matches(fi, false, s.racy) {
			stats[rel] = prev
			entries = append(entries, entry{rel, prev.hash})
			return nil
		}
		if known && held != nil && prev.matches(fi, true, s.racy) && held(rel, prev.hash) {
			// Unchanged by the rule, as Head judges it, and its content is the caller's.
			stats[rel] = prev
			entries = append(entries, entry{rel, prev.hash})
			files = append(files, sources.File{Path: rel, Hash: prev.hash, Unread: true})
			return nil
		}
		data, err := readBounded(target)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(data) > sources.MaxFileBytes {
			return refuse(sources.TooLarge(int64(len(data)))) // grew since the stat
		}
		if known && prev.matches(fi, true, s.racy) && int64(len(data)) == fi.Size() {
			// Unchanged by the rule, before and after the read: the data is what was
			// hashed. A one-file change hashes that file, not the folder.
			if after, err := os.Stat(target); err == nil && prev.matches(after, true, s.racy) {
				stats[rel] = prev
				entries = append(entries, entry{rel, prev.hash})
				files = append(files, sources.File{Path: rel, Hash: prev.hash, Data: data})
				return nil
			}
		}
		sum := sha256.Sum256(data)
		hash := hex.EncodeToString(sum[:])
		// The stat data is taken before the read: a write during the read leaves a stale
		// mtime that the next scan sees as changed.
		stats[rel] = newStatEntry(fi, now, hash)
		if int64(len(data)) != fi.Size() {
			delete(stats, rel)
		}
		entries = append(entries, entry{rel, hash})
		if read {
			files = append(files, sources.File{Path: rel, Hash: hash, Data: data})
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	s.stats = stats

	// WalkDir visits in lexical order of each folder's entries, which is not the order of
	// the joined paths ("a/b" vs "a.yaml"): sort explicitly.
	sort.Slice(entries, func(i, j int) bool { return entries[i].rel < entries[j].rel })
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	h := sha256.New()
	for _, e := range entries {
		h.Write([]byte(e.rel))
		h.Write([]byte{0})
		h.Write([]byte(e.hash))
		h.Write([]byte{'\n'})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), files, nil
}

// readBounded reads at most one byte past sources.MaxFileBytes, whatever the stat said: the
// file may grow between the stat and the read.
func readBounded(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, sources.MaxFileBytes+1))
}
