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

// chownTree gives dir and everything below it to a; it does nothing when a is nil.
func (a *account) chownTree(dir string) error {
	if a == nil {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, int(a.uid), int(a.gid)); err != nil {
			return fmt.Errorf("give %s to user %s: %w", path, a.name, err)
		}
		return nil
	})
}

// makeParentsTraversable adds o+x to every ancestor of dir that a could not otherwise enter.
// os.MkdirTemp and t.TempDir create root-owned 0700 folders; without this, postgres running
// as a cannot reach a data folder below them. Read permission is not added, so the folders
// stay unlistable.
func (a *account) makeParentsTraversable(dir string, log *slog.Logger) error {
	if a == nil {
		return nil
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !a.canEnter(fi) {
			mode := fi.Mode().Perm() | 0o001
			if err := os.Chmod(p, mode|(fi.Mode()&(fs.ModeSticky|fs.ModeSetgid|fs.ModeSetuid))); err != nil {
				return fmt.Errorf("make %s traversable for user %s: %w", p, a.name, err)
			}
			log.Info("made folder traversable for the postgres user", "path", p, "mode", mode.String(), "user", a.name)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
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

// socketDirFor returns the folder for the server's Unix socket: the cluster folder itself when
// the socket path fits, else a short folder under the temporary folder named by a hash of dir
// (stable, so a restarted cluster keeps its URL).
func socketDirFor(dir string) string {
	if len(filepath.Join(dir, socketName)) <= maxSocketPath {
		return dir
	}
	sum := sha256.Sum256([]byte(dir))
	name := "trueup-pg-" + hex.EncodeToString(sum[:4])
	base := os.TempDir()
	if len(filepath.Join(base, name, socketName)) > maxSocketPath {
		base = "/tmp"
	}
	return filepath.Join(base, name)
}

// prepareSocketDir creates a separate socket folder (0755) and refuses one that someone else
// owns: the folder is in a shared temporary folder, and whoever owns it could intercept the
// connections.
func prepareSocketDir(path string, a *account, log *slog.Logger) error {
	if err := os.Mkdir(path, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create socket folder: %w", err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("socket folder: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("socket folder %s is not a folder", path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		me := uint32(os.Geteuid())
		if st.Uid != me && (a == nil || st.Uid != a.uid) {
			return fmt.Errorf("socket folder %s belongs to uid %d, not to this user: remove it", path, st.Uid)
		}
	}
	if err := os.Chmod(path, 0o755); err != nil {
		return fmt.Errorf("socket folder: %w", err)
	}
	if err := a.chownTree(path); err != nil {
		return err
	}
	return a.makeParentsTraversable(path, log)
}
