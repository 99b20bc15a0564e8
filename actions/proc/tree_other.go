//go:build !linux

package proc

import (
	"errors"
	"os"
	"os/exec"
)

// pidNamespace exists only on Linux.
type pidNamespace struct{}

var errNoPIDNamespace = errors.New("PID namespaces need Linux")

func probePIDNamespace() (*pidNamespace, error) { return nil, errNoPIDNamespace }

func (*pidNamespace) apply(*exec.Cmd) {}

func termInit(*os.Process) {}
