package cli

import "fmt"

// ExitCode ends the process with a code after the command printed its own report (diff(1)'s
// 1 for "differs", validate's 1 for "invalid").
type ExitCode int

func (e ExitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
