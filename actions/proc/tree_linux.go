package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// pidNamespace says how to start a command as the init (PID 1) of a new PID namespace. When
// the init dies the kernel kills every other process in its namespace, double-forked and
// setsid'd ones included; with Pdeathsig the init dies with trueup, so nothing the command
// started outlives trueup, however trueup dies.
type pidNamespace struct {
	// userNS: the namespace is created inside a new user namespace that maps trueup's uid
	// and gid onto themselves, since only CAP_SYS_ADMIN may create PID namespaces.
	userNS bool
}

var pidNSProbe struct {
	once sync.Once
	ns   *pidNamespace
	err  error
}

// probePIDNamespace finds, once per process, how PID namespaces can be created here: first
// without a user namespace when trueup runs as root, then with one. Calls pay no probe.
func probePIDNamespace() (*pidNamespace, error) {
	pidNSProbe.once.Do(func() { pidNSProbe.ns, pidNSProbe.err = probe() })
	return pidNSProbe.ns, pidNSProbe.err
}

func probe() (*pidNamespace, error) {
	path, err := exec.LookPath("true")
	if err != nil {
		path = "/bin/true"
	}
	var errs error // one line: serve logs it
	candidates := []*pidNamespace{{userNS: true}}
	if os.Geteuid() == 0 {
		// Root in a container may lack CAP_SYS_ADMIN: then a user namespace may still work.
		candidates = []*pidNamespace{{}, {userNS: true}}
	}
	for _, ns := range candidates {
		cmd := exec.Command(path)
		ownProcessGroup(cmd)
		ns.apply(cmd)
		if err := cmd.Run(); err != nil {
			what := "new PID namespace"
			if ns.userNS {
				what += " in a new user namespace"
			}
			err = fmt.Errorf("run %s in a %s: %w", path, what, err)
			if errs != nil {
				err = fmt.Errorf("%w; %w", errs, err)
			}
			errs = err
			continue
		}
		return ns, nil
	}
	return nil, errs
}

// apply makes cmd, already set up by ownProcessGroup, the init of a new PID namespace.
func (ns *pidNamespace) apply(cmd *exec.Cmd) {
	a := cmd.SysProcAttr
	a.Cloneflags |= syscall.CLONE_NEWPID
	if ns.userNS {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		uid, gid := os.Getuid(), os.Getgid()
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	}
}

// termInit is called after p's group got SIGTERM. The kernel drops signals from outside the
// namespace that its init has no handler for, so a command that would have died of SIGTERM
// as an ordinary process ignored it as PID 1: it is killed now, as it would have died. A
// command that handles or ignores SIGTERM keeps its grace.
func termInit(p *os.Process) {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/status")
	if err != nil {
		return // gone
	}
	caught, ignored, err := sigMasks(status)
	if err != nil || !diesOfTERM(caught, ignored) {
		return
	}
	_ = p.Kill() // the namespace goes with it
}

// sigMasks reads the SigCgt and SigIgn masks of /proc/PID/status.
func sigMasks(status []byte) (caught, ignored uint64, err error) {
	var seen int
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		var dst *uint64
		switch string(k) {
		case "SigCgt":
			dst = &caught
		case "SigIgn":
			dst = &ignored
		default:
			continue
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 16, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", k, err)
		}
		*dst = n
		seen++
	}
	if seen != 2 {
		return 0, 0, errors.New("status lacks SigCgt or SigIgn")
	}
	return caught, ignored, nil
}

// diesOfTERM reports whether an ordinary process with these signal masks dies of SIGTERM.
func diesOfTERM(caught, ignored uint64) bool {
	bit := uint64(1) << (syscall.SIGTERM - 1)
	return caught&bit == 0 && ignored&bit == 0
}
