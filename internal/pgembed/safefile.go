package pgembed

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Files root opens in folders the server's user owns, or owned in the past. When trueup runs
// as root, the server's user (postgres or nobody, which other software may share) can put a
// symbolic link, a hard link or a FIFO where root expects a file of its own; root must never
// be led by one to change, write or read a file elsewhere. So these files are opened without
// following a symbolic link in their last element (the folders above them are root's, or
// the data folder, whose name sits in root's cluster folder), checked on the descriptor, and
// changed through the descriptor only: never by path.

// openFlags are added to every open of such a file: no symbolic link, and no wait on a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC

// openChecked opens path with flag|openFlags and checks that it is a regular file with one
// link and, unless owners is empty, owned by one of owners. what names the file in errors.
func openChecked(path, what string, flag int, perm fs.FileMode, owners ...uint32) (*os.File, error) {
	f, err := os.OpenFile(path, flag|openFlags, perm)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		// A FIFO without a reader fails with ENXIO, a socket with ENXIO or EOPNOTSUPP:
		// name the kind of file rather than the errno.
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode().Type()&^fs.ModeSymlink != 0 {
			err = fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
		}
		return nil, notOwnFile(path, what, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkOwnFile(fi, owners)
	}
	if err != nil {
		f.Close()
		return nil, notOwnFile(path, what, err)
	}
	return f, nil
}

// checkOwnFile checks what openChecked promises of an open file.
func checkOwnFile(fi fs.FileInfo, owners []uint32) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if st.Nlink != 1 {
		return fmt.Errorf("it has %d hard links, not one", st.Nlink)
	}
	if len(owners) == 0 {
		return nil
	}
	for _, uid := range owners {
		if st.Uid == uid {
			return nil
		}
	}
	return fmt.Errorf("it belongs to uid %d, not to uid %d", st.Uid, owners[0])
}

// notOwnFile explains why trueup refuses path, which it did not make as it is now.
func notOwnFile(path, what string, err error) error {
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK) { // EMLINK: O_NOFOLLOW on the BSDs
		target, _ := os.Readlink(path)
		err = fmt.Errorf("it is a symbolic link (to %q)", target)
	}
	return fmt.Errorf("refusing the %s %s: %v; trueup never makes it so, and does not follow or change it: "+
		"another program (perhaps one running as the PostgreSQL user) put it there; check it, then remove it", what, path, err)
}

// readChecked reads the regular file path without following a symbolic link; owners as in
// openChecked.
func readChecked(path, what string, owners ...uint32) ([]byte, error) {
	f, err := openChecked(path, what, os.O_RDONLY, 0, owners...)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// createExclusive creates path, which must not exist (not even as a symbolic link), mode
// perm, owned by uid and gid.
func createExclusive(path string, perm fs.FileMode, uid, gid int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|openFlags, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: not a regular file", path)
	}
	if err == nil {
		err = f.Chmod(perm) // the umask may have narrowed it; never widened past perm
	}
	if err == nil && (uid != os.Geteuid() || gid != os.Getegid()) {
		err = f.Chown(uid, gid)
	}
	if err != nil {
		f.Close()
		_ = os.Remove(path)
		return nil, err
	}
	return f, nil
}

// ownerOf returns the uid and gid of fi, or the current user's where the system has none.
func ownerOf(fi fs.FileInfo) (uid, gid uint32) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid, st.Gid
	}
	return uint32(os.Geteuid()), uint32(os.Getegid())
}
