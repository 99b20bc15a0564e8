package proc

import "syscall"

// dieWithParent has the kernel kill the command when the trueup process that started it dies
// (kill -9, out of memory): otherwise its lease expires, another replica runs the resource,
// and the orphan keeps causing side effects next to it. (The signal is tied to the starting
// OS thread; Go keeps its threads alive unless a goroutine exits while locked to one, which
// trueup does not do.) Grandchildren are covered when the command is the init of its own PID
// namespace (tree_linux.go): its death takes them all. Otherwise they are in the command's
// process group, which trueup kills on timeout and shutdown, but not after its own death.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
