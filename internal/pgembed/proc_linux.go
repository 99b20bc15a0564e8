package pgembed

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// postmasterAttr starts the postmaster in its own process group, so a Ctrl-C at the terminal
// reaches trueup alone and trueup stops the server after draining. The parent-death signal
// asks for a fast shutdown if trueup dies without stopping it, so no orphan keeps the data
// folder locked for the next run.
func postmasterAttr(a *account) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGINT, Credential: a.credential()}
}

// postmasterOf reports whether pid is a live postmaster serving dataDir. A postmaster's
// working folder is its data folder, which tells it apart from an unrelated process that
// reused the pid of a crashed server.
func postmasterOf(pid int, dataDir string) bool {
	if !alive(pid) {
		return false
	}
	proc := "/proc/" + strconv.Itoa(pid)
	if cwd, err := os.Readlink(proc + "/cwd"); err == nil {
		want, err := filepath.EvalSymlinks(dataDir)
		if err != nil {
			want = dataDir
		}
		return cwd == want
	}
	comm, err := os.ReadFile(proc + "/comm")
	if err != nil {
		return true // alive but unreadable: assume the worst
	}
	return strings.Contains(string(comm), "postgres")
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
