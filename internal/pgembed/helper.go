package pgembed

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// HelperAttr returns how to start a helper process that reaches a cluster's socket as the
// server's own processes do (PgBouncer in front of a test cluster): as the same user, in a
// process group of its own, ended with the caller; and the uid and gid that must own the
// files it reads and writes (the caller's own when trueup does not run as root).
func HelperAttr() (attr *syscall.SysProcAttr, uid, gid int, err error) {
	acc, err := serverAccount()
	if err != nil {
		return nil, 0, 0, err
	}
	if acc == nil {
		return postmasterAttr(nil), os.Geteuid(), os.Getegid(), nil
	}
	return postmasterAttr(acc), int(acc.uid), int(acc.gid), nil
}

// FindPgBouncer returns the pgbouncer binary (Debian installs it in /usr/sbin, which a
// user's PATH may lack). The error says how to install it.
func FindPgBouncer() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	const debian = "/usr/sbin/pgbouncer"
	if fi, err := os.Stat(debian); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return debian, nil
	}
	install := "apt-get install -y pgbouncer"
	if os.Geteuid() != 0 {
		install = "sudo " + install
	}
	return "", errors.New("pgbouncer not found: install it with `" + install + "` (.ci/ensure-pgbouncer.sh)")
}
