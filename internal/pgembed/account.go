package pgembed

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// maxSocketPath is the longest Unix socket path PostgreSQL can bind: sun_path holds 108 bytes
// on Linux and 104 on the BSDs and macOS, including the terminating NUL. The smaller one
// keeps a cluster folder portable between them.
const maxSocketPath = 103

// account is the unprivileged user initdb and postgres run as when trueup runs as root,
// because postgres refuses to start as root.
type account struct {
	name     string
	uid, gid uint32
}

// serverAccount returns nil when the current user can run postgres itself.
func serverAccount() (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &account{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root, and neither user postgres nor nobody exists to run PostgreSQL as (it refuses root): create one with `useradd --system postgres`")
}

// credential is nil when no user switch is needed.
func (a *account) credential() *syscall.Credential {
	if a == nil {
		return nil
	}
	// An empty Groups drops root's supplementary groups.
	return &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: []uint32{}}
}

// handOver gives the folder dir and everything in it to a, for the data folder; it does
// nothing when a is nil. The folder is the server's user's, who may change it during the
// walk, so the walk stays inside dir (os.Root), opens each folder and file it changes and
// changes it through the descriptor, checked to be what the listing said: a hard link or a
// symbolic link planted by that user cannot lead root to another file. Symbolic links are
// left as they are; anything else that is not a folder or a regular file is refused unless
// it is a's already.
func (a *account) handOver(dir string) error {
	if a == nil {
		return nil
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("give %s to user %s: %w", dir, a.name, err)
	}
	defer r.Close()
	if err := a.handOverIn(r, dir); err != nil {
		return fmt.Errorf("give %s to user %s: %w", dir, a.name, err)
	}
	return nil
}

// handOverIn gives the folder r (named path in errors) and everything in it to a.
func (a *account) handOverIn(r *os.Root, path string) error {
	d, err := r.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return err
	}
	if uid, gid := ownerOf(fi); uid != a.uid || gid != a.gid {
		if err := d.Chown(int(a.uid), int(a.gid)); err != nil {
			return err
		}
	}
	entries, err := d.ReadDir(-1)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(path, name)
		fi, err := r.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return err
		}
		uid, gid := ownerOf(fi)
		switch {
		case fi.IsDir():
			sub, err := r.OpenRoot(name)
			if err != nil {
				return err
			}
			// OpenRoot follows a symbolic link that stays inside r: one put there since the
			// Lstat would lead the walk in circles.
			err = sameFile(sub, fi, p)
			if err == nil {
				err = a.handOverIn(sub, p)
			}
			sub.Close()
			if err != nil {
				return err
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			// Left alone: nothing reads a symbolic link's owner.
		case uid == a.uid && gid == a.gid:
		case fi.Mode().IsRegular():
			f, err := r.OpenFile(name, os.O_RDONLY|openFlags, 0)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			fi, err := f.Stat()
			if err == nil {
				if err = checkOwnFile(fi, nil); err != nil {
					err = notOwnFile(p, "file", err)
				}
			}
			if err == nil {
				err = f.Chown(int(a.uid), int(a.gid))
			}
			f.Close()
			if err != nil {
				return err
			}
		default:
			return notOwnFile(p, "file", fmt.Errorf("a %s of uid %d in the data folder", fi.Mode().Type(), uid))
		}
	}
	return nil
}

// sameFile checks that the folder r is the one fi describes.
func sameFile(r *os.Root, fi fs.FileInfo, path string) error {
	now, err := r.Stat(".")
	if err != nil {
		return err
	}
	if !os.SameFile(fi, now) {
		return fmt.Errorf("%s changed while trueup handed it to the PostgreSQL user; try again", path)
	}
	return nil
}

// Which folders pgembed may change. It changes the owner or the mode of a folder only when
// the folder is its own: the cluster folder (Options.Dir is pgembed's, with everything in
// it; as root it keeps the folder root's and hands only data/ to the server's user), the parents of the cluster folder that it creates itself because they
// were missing, and the socket folder it creates in the temporary folder. Every other folder
// is someone else's, even when trueup runs as root: when the server's user cannot traverse
// one on the way to the cluster folder, Start refuses and names it, rather than opening it
// to every user of the host (which is what adding o+x to, say, /root would do).

// ensureDir creates dir and its missing parents, after checking that a can traverse every
// folder on the way that already exists. The parents it creates are its own: it makes them
// traversable for a if the umask left them closed. It does nothing more when a is nil.
func (a *account) ensureDir(dir string, log *slog.Logger) error {
	var missing []string // deepest first
	top := dir
	for {
		_, err := os.Lstat(top)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, top)
		parent := filepath.Dir(top)
		if parent == top {
			break
		}
		top = parent
	}
	if len(missing) > 0 && top == missing[len(missing)-1] {
		return fmt.Errorf("no folder of %s exists", dir) // not even the root
	}
	if len(missing) == 0 {
		// The cluster folder itself exists; it is pgembed's, so only its parents count.
		top = filepath.Dir(dir)
	}
	if err := a.checkTraversable(top, dir); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		p := missing[i]
		if err := os.Mkdir(p, 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) {
				// Made by someone else meanwhile: not ours to open up.
				if err := a.checkTraversable(p, dir); err != nil {
					return err
				}
				continue
			}
			return err
		}
		if a == nil || p == dir {
			continue // prepare sets the cluster folder's owner and mode
		}
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !a.canEnter(fi) {
			mode := fi.Mode().Perm() | 0o001
			if err := os.Chmod(p, mode); err != nil {
				return fmt.Errorf("make %s traversable for user %s: %w", p, a.name, err)
			}
			log.Info("made a folder trueup created traversable for the postgres user", "path", p, "mode", mode.String(), "user", a.name)
		}
	}
	return nil
}

// checkTraversable checks that a can enter folder and each folder above it, on the path as
// written and on the path with symbolic links resolved; target names what a must reach, for
// the error. It never changes a mode: see the rule above ensureDir.
func (a *account) checkTraversable(folder, target string) error {
	if a == nil {
		return nil
	}
	paths := []string{folder}
	if real, err := filepath.EvalSymlinks(folder); err == nil && real != folder {
		paths = append(paths, real)
	}
	for _, start := range paths {
		for p := start; ; p = filepath.Dir(p) {
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			if !a.canEnter(fi) {
				return a.unreachable(target, p, fi)
			}
			if p == filepath.Dir(p) {
				break
			}
		}
	}
	return nil
}

// unreachable is the error for a folder on the way to target that a cannot enter.
func (a *account) unreachable(target, folder string, fi fs.FileInfo) error {
	owner := ""
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		owner = fmt.Sprintf(", owner uid %d", st.Uid)
	}
	return fmt.Errorf("user %s (uid %d), which runs PostgreSQL because trueup runs as root, cannot reach %s: "+
		"it may not enter %s (mode %s%s), and trueup does not widen the permissions of a folder it did not create; "+
		"choose a data folder that user can reach (e.g. --data-dir /var/lib/trueup), or run trueup as a non-root user",
		a.name, a.uid, target, folder, fi.Mode().Perm(), owner)
}

// canEnter applies the Unix permission classes in order: owner, then group, then others.
// The server runs without supplementary groups (see credential), so only a.gid counts.
func (a *account) canEnter(fi fs.FileInfo) bool {
	perm := fi.Mode().Perm()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return perm&0o001 != 0
	}
	switch {
	case st.Uid == a.uid:
		return perm&0o100 != 0
	case st.Gid == a.gid:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

// socketDirFor returns the folder for the server's Unix socket: the cluster folder itself,
// or its folder "socket" when sub (the cluster folder is root's then, and the server may not
// create files in it), when the socket path fits; else a short folder under the temporary
// folder named by a hash of dir (stable, so a restarted cluster keeps its URL).
func socketDirFor(dir string, sub bool) string {
	want := dir
	if sub {
		want = filepath.Join(dir, socketSubdir)
	}
	if len(filepath.Join(want, socketName)) <= maxSocketPath {
		return want
	}
	sum := sha256.Sum256([]byte(dir))
	name := "trueup-pg-" + hex.EncodeToString(sum[:4])
	base := os.TempDir()
	if len(filepath.Join(base, name, socketName)) > maxSocketPath {
		base = "/tmp"
	}
	return filepath.Join(base, name)
}

// socketSubdir is the socket folder in a cluster folder of root's.
const socketSubdir = "socket"

// prepareSocketDir creates a separate socket folder (0755) and refuses one that someone else
// owns: the folder may be in a shared temporary folder, and whoever owns it could intercept
// the connections. The folder is checked and changed through a descriptor opened without
// following a symbolic link: its owner, the server's user, may rename it and put a link in
// its place (the sticky bit of /tmp lets the owner of an entry do that).
func prepareSocketDir(path string, a *account) error {
	if err := os.Mkdir(path, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create socket folder: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK) || errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("socket folder %s is not a folder (a symbolic link or a file): remove it", path)
		}
		return fmt.Errorf("socket folder: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("socket folder: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("socket folder %s is not a folder", path)
	}
	uid, gid := ownerOf(fi)
	if uid != uint32(os.Geteuid()) && (a == nil || uid != a.uid) {
		return fmt.Errorf("socket folder %s belongs to uid %d, not to this user: remove it", path, uid)
	}
	if err := f.Chmod(0o755); err != nil {
		return fmt.Errorf("socket folder: %w", err)
	}
	if a != nil && (uid != a.uid || gid != a.gid) {
		if err := f.Chown(int(a.uid), int(a.gid)); err != nil {
			return fmt.Errorf("give socket folder %s to user %s: %w", path, a.name, err)
		}
	}
	return a.checkTraversable(filepath.Dir(path), path)
}
