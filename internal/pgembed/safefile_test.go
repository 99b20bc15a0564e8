package pgembed

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The server's user must not lead root to another file: these tests put what that user
// could put in the cluster folder (of an older trueup, where the folder was that user's) or
// in the data folder, and check that Start leaves the file it points at alone.

// precious is a file outside the cluster, root's when the tests run as root, that a planted
// link points at; check fails the test if Start changed its owner, mode or content.
type precious struct {
	path     string
	content  []byte
	mode     os.FileMode
	uid, gid uint32
}

func newPrecious(t *testing.T, content string) *precious {
	t.Helper()
	path := filepath.Join(tempDir(t), "precious")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	p := &precious{path: path, content: []byte(content), mode: 0o644}
	p.uid, p.gid = uint32(os.Geteuid()), uint32(os.Getegid())
	return p
}

func (p *precious) check(t *testing.T) {
	t.Helper()
	fi, err := os.Lstat(p.path)
	if err != nil {
		t.Fatal(err)
	}
	if uid, gid := ownerOf(fi); uid != p.uid || gid != p.gid {
		t.Errorf("%s now owned by %d:%d, want %d:%d", p.path, uid, gid, p.uid, p.gid)
	}
	if fi.Mode() != p.mode {
		t.Errorf("%s mode now %v, want %v", p.path, fi.Mode(), p.mode)
	}
	if b, err := os.ReadFile(p.path); err != nil || !bytes.Equal(b, p.content) {
		t.Errorf("%s content now %q (%v), want %q", p.path, b, err, p.content)
	}
}

// plant makes path a symbolic link to target, owned by the server's user (as that user
// would make it), or the current user's when trueup is not root.
func plant(t *testing.T, c *Cluster, path, target string) {
	t.Helper()
	_ = os.Remove(path)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	giveToServer(t, c, path)
}

func giveToServer(t *testing.T, c *Cluster, path string) {
	t.Helper()
	if c.acc != nil {
		if err := os.Lchown(path, int(c.acc.uid), int(c.acc.gid)); err != nil {
			t.Fatal(err)
		}
	}
}

// stoppedOldCluster returns a stopped cluster whose folder is laid out as an older trueup
// left it as root: the cluster folder and the log the server's user's.
func stoppedOldCluster(t *testing.T) *Cluster {
	t.Helper()
	c := setup(t, "")
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	giveToServer(t, c, c.dir)
	giveToServer(t, c, c.logPath)
	return c
}

func startAgain(c *Cluster) (*Cluster, error) {
	c2, err := Start(context.Background(), Options{Dir: c.dir, Fast: true})
	if err == nil {
		_ = c2.Stop()
	}
	return c2, err
}

func requireRefusal(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("Start succeeded")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
	t.Log(err)
}

func TestPlantedLogLinkRefused(t *testing.T) {
	t.Parallel()
	target := newPrecious(t, "root:x:0:0:root:/root:/bin/bash\n")
	c := stoppedOldCluster(t)
	plant(t, c, c.logPath, target.path)
	_, err := startAgain(c)
	requireRefusal(t, err, "refusing the server log "+c.logPath, "symbolic link", target.path)
	target.check(t)

	if c.acc != nil {
		// The cluster folder is root's again, so the server's user cannot plant another.
		fi, err := os.Lstat(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		if uid, _ := ownerOf(fi); uid != 0 || fi.Mode().Perm() != 0o711 {
			t.Errorf("cluster folder uid %d mode %v after Start, want root's 0711", uid, fi.Mode().Perm())
		}
	}
	// Once the link is gone, the cluster starts.
	if err := os.Remove(c.logPath); err != nil {
		t.Fatal(err)
	}
	if _, err := startAgain(c); err != nil {
		t.Fatal(err)
	}
	target.check(t)
}

func TestPlantedLogHardLinkAndFIFORefused(t *testing.T) {
	t.Parallel()
	target := newPrecious(t, "keep me\n")
	c := stoppedOldCluster(t)
	if err := os.Remove(c.logPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(target.path, c.logPath); err != nil {
		t.Fatal(err)
	}
	_, err := startAgain(c)
	requireRefusal(t, err, "refusing the server log", "2 hard links")
	target.check(t)

	if err := os.Remove(c.logPath); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(c.logPath, 0o600); err != nil {
		t.Fatal(err)
	}
	giveToServer(t, c, c.logPath)
	_, err = startAgain(c) // must not hang on the FIFO
	requireRefusal(t, err, "refusing the server log", "not a regular file")
}

func TestPlantedPasswordLinkRefused(t *testing.T) {
	t.Parallel()
	// A file that would pass for a password, so only the link itself is refused.
	target := newPrecious(t, newPassword()+"\n")
	c := stoppedOldCluster(t)
	plant(t, c, c.passwordPath(), target.path)
	_, err := startAgain(c)
	requireRefusal(t, err, "refusing the password file "+c.passwordPath(), "symbolic link")
	target.check(t) // in particular not chmod 0600

	if c.acc == nil {
		return
	}
	// A regular file the server's user put in place of the password file.
	if err := os.Remove(c.passwordPath()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.passwordPath(), []byte(newPassword()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	giveToServer(t, c, c.passwordPath())
	_, err = startAgain(c)
	requireRefusal(t, err, "refusing the password file", "belongs to uid")
}

// TestPlantedHBAScratchLink: a cluster made before passwords gets a new pg_hba.conf through
// data/pg_hba.conf.trueup-new, in the data folder the server's user owns.
func TestPlantedHBAScratchLink(t *testing.T) {
	t.Parallel()
	target := newPrecious(t, "do not replace\n")
	c := setup(t, "")
	ctx := context.Background()
	if _, err := connect(t, c.URL("trueup")).Exec(ctx, "ALTER ROLE trueup PASSWORD NULL"); err != nil {
		t.Fatal(err)
	}
	stopAsTrustCluster(t, c)
	scratch := c.hbaPath() + ".trueup-new"
	plant(t, c, scratch, target.path)

	c2 := setup(t, c.Dir())
	target.check(t)
	if trusting, err := c2.hbaTrusts(); err != nil || trusting {
		t.Fatalf("pg_hba.conf still trusts: %v, %v", trusting, err)
	}
	fi, err := os.Lstat(c.hbaPath())
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("pg_hba.conf: %v, %v", fi, err)
	}
	if c.acc != nil {
		if uid, _ := ownerOf(fi); uid != c.acc.uid {
			t.Errorf("pg_hba.conf owned by uid %d, want the server's %d", uid, c.acc.uid)
		}
	}
	if _, err := os.Lstat(scratch); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("scratch file left: %v", err)
	}

	// A link planted while trueup works (after its removal) makes the create fail.
	plant(t, c2, scratch, target.path)
	defer os.Remove(scratch)
	if f, err := createExclusive(scratch, 0o600, os.Geteuid(), os.Getegid()); err == nil {
		f.Close()
		t.Fatal("created a file through a symbolic link")
	}
	target.check(t)
}

// TestPlantedLinksInDataFolder: the hand-over of the data folder at each start changes no
// file outside it, whether a symbolic link or a hard link leads there.
func TestPlantedLinksInDataFolder(t *testing.T) {
	t.Parallel()
	c := setup(t, "")
	if c.acc == nil {
		t.Skip("the data folder is handed to another user only when trueup runs as root")
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	viaSymlink := newPrecious(t, "symlink target\n")
	plant(t, c, filepath.Join(c.dataDir, "base", "planted-symlink"), viaSymlink.path)
	if _, err := startAgain(c); err != nil {
		t.Fatal(err)
	}
	viaSymlink.check(t)

	viaHardlink := newPrecious(t, "hard link target\n")
	if err := os.Link(viaHardlink.path, filepath.Join(c.dataDir, "global", "planted-hardlink")); err != nil {
		t.Fatal(err)
	}
	_, err := startAgain(c)
	requireRefusal(t, err, "planted-hardlink", "2 hard links")
	viaHardlink.check(t)
}

func TestPlantedDataAndSocketLinksRefused(t *testing.T) {
	t.Parallel()
	c := stoppedOldCluster(t)
	if c.acc == nil {
		t.Skip("only root keeps the cluster folder from the server's user")
	}
	elsewhere := tempDir(t)
	fi, err := os.Stat(elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	if c.socketDir == filepath.Join(c.dir, socketSubdir) {
		plant(t, c, c.socketDir, elsewhere)
		_, err := startAgain(c)
		requireRefusal(t, err, "socket folder "+c.socketDir+" is not a folder")
		if err := os.Remove(c.socketDir); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(c.dataDir, c.dataDir+".moved"); err != nil {
		t.Fatal(err)
	}
	plant(t, c, c.dataDir, c.dataDir+".moved")
	_, err = startAgain(c)
	requireRefusal(t, err, "data folder "+c.dataDir+" is not a folder")
	after, err := os.Stat(elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	if uid, _ := ownerOf(after); uid != 0 || after.Mode() != fi.Mode() {
		t.Errorf("%s changed: uid %d mode %v", elsewhere, uid, after.Mode())
	}
}

// TestRootLayout: as root, the cluster folder, the password file and the log are root's and
// only the data and socket folders the server's user's.
func TestRootLayout(t *testing.T) {
	t.Parallel()
	c := setup(t, "")
	if c.acc == nil {
		t.Skip("not root")
	}
	for path, want := range map[string]struct {
		uid  uint32
		mode os.FileMode
	}{
		c.dir:            {0, os.ModeDir | 0o711},
		c.passwordPath(): {0, 0o600},
		c.logPath:        {0, 0o600},
		c.dataDir:        {c.acc.uid, os.ModeDir | 0o700},
		c.socketDir:      {c.acc.uid, os.ModeDir | 0o755},
	} {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Error(err)
			continue
		}
		if uid, _ := ownerOf(fi); uid != want.uid || fi.Mode() != want.mode {
			t.Errorf("%s: uid %d mode %v, want uid %d mode %v", path, uid, fi.Mode(), want.uid, want.mode)
		}
	}
}

// TestOldRootLayoutTakenBack starts a cluster laid out as an older trueup left it as root:
// the cluster folder, the log and a stale socket of the server's user's.
func TestOldRootLayoutTakenBack(t *testing.T) {
	t.Parallel()
	c := stoppedOldCluster(t)
	if c.acc == nil {
		t.Skip("not root")
	}
	if err := os.Chmod(c.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{socketName, socketName + ".lock"} {
		if err := os.WriteFile(filepath.Join(c.dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		giveToServer(t, c, filepath.Join(c.dir, name))
	}
	c2 := setup(t, c.dir)
	connect(t, c2.URL("trueup"))
	for path, wantMode := range map[string]os.FileMode{c.dir: os.ModeDir | 0o711, c.logPath: 0o600} {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if uid, _ := ownerOf(fi); uid != 0 || fi.Mode() != wantMode {
			t.Errorf("%s: uid %d mode %v, want root's %v", path, uid, fi.Mode(), wantMode)
		}
	}
	if _, err := os.Lstat(filepath.Join(c.dir, socketName+".lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale socket lock file left: %v", err)
	}
}
