//go:build !unix

package terraform

import (
	"os"
	"os/exec"
)

func setProcessGroup(*exec.Cmd) {}

func interrupt(p *os.Process) error { return p.Kill() }

func killGroup(*os.Process) {}
