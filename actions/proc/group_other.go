//go:build !unix

package proc

import (
	"os"
	"os/exec"
)

// Without process groups only the command itself can be stopped; its children may survive.

func ownProcessGroup(*exec.Cmd) {}

func terminateGroup(p *os.Process) { _ = p.Kill() } // no SIGTERM to send

// killGroup is safe after Wait: os.Process then refuses to signal.
func killGroup(p *os.Process) { _ = p.Kill() }

// Interrupt kills p: there is no SIGINT to send.
func Interrupt(p *os.Process) error { return p.Kill() }
