package terraform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/trueup-dev/trueup/actions/proc"
)

// Output limits.
const (
	maxOutput = 4 << 20 // bytes of a run's output kept (the plan text of a preview)
	logTail   = 2 << 10 // bytes of a run's output put in a message or an error
)

// interruptGrace is how long Terraform has, after the SIGINT of a timeout or cancellation, to
// stop gracefully (it then writes the state of what it did) before the group is killed.
const interruptGrace = 20 * time.Second

// output is a run's combined stdout and stderr, the first maxOutput bytes.
type output struct {
	mu  sync.Mutex
	buf []byte
	cut bool
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	room := maxOutput - len(o.buf)
	if len(p) > room {
		o.cut = true
		o.buf = append(o.buf, p[:max(room, 0)]...)
		return len(p), nil
	}
	o.buf = append(o.buf, p...)
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := strings.ToValidUTF8(string(o.buf), "\uFFFD")
	if o.cut {
		s += "\n… (output cut at 4 MiB)"
	}
	return s
}

// tail returns the last n bytes of s, trimmed, starting with "…" when cut.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return "…" + strings.TrimSpace(s)
}

// runResult is what a finished run left.
type runResult struct {
	code   int    // exit status
	output string // stdout and stderr, interleaved, scrubbed
	stdout string // stdout alone (for output -json), scrubbed
}

// runSpec is one run of the binary.
type runSpec struct {
	binary string
	dir    string
	env    []string
	args   []string
	scrub  func(string) string
	// okCodes are the exit statuses that are not failures (0, and 2 for -detailed-exitcode).
	okCodes []int
	// stdout, when set, gets stdout alone, unscrubbed and uncut (show -json of a plan, which
	// is only counted and hashed); runResult.stdout is then empty.
	stdout io.Writer
}

// run starts the binary and waits for it. A timeout or cancellation interrupts it (SIGINT,
// as Ctrl-C: Terraform stops gracefully and records what it did), then kills its process
// group after interruptGrace; whatever is left in the group is killed when it exits. The run
// is contained as exec commands are (proc.Tree): it dies with trueup, and where PID namespaces
// are available its providers and provisioners die with it.
func run(ctx context.Context, r runSpec) (runResult, error) {
	cmd := exec.CommandContext(ctx, r.binary, r.args...)
	cmd.Dir = r.dir
	cmd.Env = r.env
	var all output
	var stdout output
	cmd.Stdout = multi{&all, &stdout}
	if r.stdout != nil {
		cmd.Stdout = r.stdout
	}
	cmd.Stderr = &all
	proc.NewTree().Prepare(cmd)
	cmd.Cancel = func() error { return proc.Interrupt(cmd.Process) }
	cmd.WaitDelay = interruptGrace
	err := cmd.Start()
	if err != nil {
		return runResult{}, fmt.Errorf("start %s: %w", r.binary, err)
	}
	err = cmd.Wait()
	proc.Kill(cmd.Process)
	res := runResult{code: -1, output: r.scrub(all.String()), stdout: r.scrub(stdout.String())}
	if cmd.ProcessState != nil {
		res.code = cmd.ProcessState.ExitCode()
	}
	what := "terraform " + r.args[0]
	if ctx.Err() != nil {
		return res, fmt.Errorf("%s interrupted: %w%s", what, context.Cause(ctx), withTail(res.output))
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		for _, c := range r.okCodes {
			if c == res.code {
				return res, nil
			}
		}
		return res, fmt.Errorf("%s: exit status %d%s", what, res.code, withTail(res.output))
	case errors.Is(err, exec.ErrWaitDelay):
		// Terraform succeeded but a process it started held its output; killed above.
	default:
		return res, fmt.Errorf("%s: %w", what, err)
	}
	return res, nil
}

func withTail(out string) string {
	if t := tail(out, logTail); t != "" {
		return ": " + t
	}
	return ""
}

// multi writes to each writer; they never fail.
type multi []*output

func (m multi) Write(p []byte) (int, error) {
	for _, w := range m {
		_, _ = w.Write(p)
	}
	return len(p), nil
}
