package execaction

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/proc"
)

// Process-group shutdown timing.
const (
	// killGrace is how long a cancelled command's group has between SIGTERM and SIGKILL.
	killGrace = 2 * time.Second
	// waitDelay bounds how long a call waits for stdout and stderr to close after the
	// command exits, when a process it left behind still holds them.
	waitDelay = 2 * time.Second
)

// errClosed is the cause of calls cancelled by Close. It wraps context.Canceled so that
// callers treat it like any other cancellation.
var errClosed = fmt.Errorf("exec action closed: %w", context.Canceled)

// Action is an exec instance. It is safe for concurrent use; every call runs its own process.
type Action struct {
	settings
	logger *slog.Logger

	calls actions.Calls // calls in flight, for Close
	// ns, when not nil, makes every command the init of a PID namespace of its own;
	// otherwise descendants are contained by the command's process group only.
	tree proc.Tree
	// gate stops a plan of a resource when another call of it comes, unless the host
	// shares one (actions.PlanArbitrated).
	gate actions.PlanGate
}

// PlanGate is the instance's actions.PlanArbitrated gate: a plan holds the resource's lock,
// shared, which a reconcile takes exclusive.
func (a *Action) PlanGate() *actions.PlanGate { return &a.gate }

// New is the actions.Factory of the exec kind. It decodes and checks the config without
// touching the command: a missing command fails each call, not the controller's start.
func New(raw json.RawMessage, env actions.Env) (actions.Action, error) {
	s, err := parseConfig(raw, env.BaseDir)
	if err != nil {
		return nil, err
	}
	logger := env.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Action{
		settings: s,
		logger:   logger.With("action", env.Name, "command", s.path),
		tree:     proc.NewTree(),
	}, nil
}

// Reconcile runs the command with operation "reconcile".
func (a *Action) Reconcile(ctx context.Context, req actions.Request) (actions.Result, error) {
	r, err := a.run(ctx, opReconcile, req)
	if err != nil {
		return actions.Result{}, err
	}
	return a.result(r, req), nil
}

// Delete runs the command with operation "delete".
func (a *Action) Delete(ctx context.Context, req actions.Request) (actions.Result, error) {
	r, err := a.run(ctx, opDelete, req)
	if err != nil {
		return actions.Result{}, err
	}
	return a.result(r, req), nil
}

// Observe runs the command with operation "observe" and reads inSync, and what drifted:
// drift (paths, their values redacted like outputs) and observed (the spec as found).
func (a *Action) Observe(ctx context.Context, req actions.Request) (actions.Observation, error) {
	r, err := a.run(ctx, opObserve, req)
	if err != nil {
		return actions.Observation{}, err
	}
	o := actions.Observation{
		InSync:  r.inSync,
		Message: redact(r.message, a.secrets),
		Outputs: redactOutputs(r.outputs, a.secrets),
	}
	if r.inSync {
		return o, nil
	}
	drift, observed, err := r.whatDrifted()
	if err != nil {
		return actions.Observation{}, err
	}
	for _, d := range drift {
		o.Drift = append(o.Drift, actions.DriftPath{Path: d.Path, Expected: redactValue(d.Expected, a.secrets), Actual: redactValue(d.Actual, a.secrets)})
	}
	// Observed as it is: the controller compares it with the spec it sent, which holds the
	// revealed values; one redacted would drift forever from a spec field set to an instance
	// secret. It is never stored, and what drifted is told scrubbed.
	o.Observed = observed
	return o, nil
}

// Plan runs the command with operation "plan", when the instance declares plan: true, and
// reads its plan reply. It returns actions.ErrNoPlan without starting anything for other
// instances, and when the command exits with ExitNoPlan. A plan changes nothing on trueup's
// side: no checkpoint, and the request's state is handed over but never replaced.
func (a *Action) Plan(ctx context.Context, req actions.Request) (actions.Plan, error) {
	if !a.plan {
		return actions.Plan{}, actions.ErrNoPlan
	}
	req.Checkpoint = nil
	out, err := a.invoke(ctx, opPlan, req)
	if err != nil {
		return actions.Plan{}, err
	}
	secrets := a.callSecrets(req)
	// The hash is published as it is: a hash holding a secret is refused.
	p, err := parsePlan(out, actions.Scrubber(secrets))
	if err != nil {
		return actions.Plan{}, err
	}
	p.Summary = redact(p.Summary, secrets)
	p.Text = redact(p.Text, secrets)
	return p, nil
}

// Secrets returns the values of the config's secret-named env variables, so that the
// controller scrubs them from whatever any plugin returns, as it does ${VAR} values.
func (a *Action) Secrets() []string { return slices.Clone(a.secrets) }

// LocalDirs are the folder the command runs in and the lock folder.
func (a *Action) LocalDirs() []string { return []string{a.dir, a.lockDir} }

// RunsCommands is true: every call runs the command.
func (a *Action) RunsCommands() bool { return true }

var _ actions.CommandRunner = (*Action)(nil)

// ValidateWith accepts a JSON object or nothing: the command sees `with:` as an object.
func (a *Action) ValidateWith(with json.RawMessage) error { return validateWith(with) }

var _ actions.Closer = (*Action)(nil)

// Close refuses new calls, kills the commands of calls in flight and waits for those calls to
// return. It is safe to call more than once.
func (a *Action) Close() error {
	a.calls.Close(errClosed)
	return nil
}

func (a *Action) result(r reply, req actions.Request) actions.Result {
	res := actions.Result{
		Done:         r.done,
		RequeueAfter: r.requeueAfter,
		State:        r.state,
		Outputs:      redactOutputs(r.outputs, a.secrets),
		Conditions:   r.conditions,
		Message:      redact(r.message, a.secrets),
	}
	if r.keepState {
		res.State = req.State
	}
	for i := range res.Conditions {
		res.Conditions[i].Message = redact(res.Conditions[i].Message, a.secrets)
	}
	return res
}

// begin registers a call, so that Close can cancel it and wait for it.
func (a *Action) begin(ctx context.Context) (context.Context, func(), error) {
	return a.calls.Begin(ctx, errClosed)
}

// timeoutError is the cause of a call's context when the config timeout expires.
type timeoutError struct{ d time.Duration }

func (e *timeoutError) Error() string { return "timed out after " + formatDuration(e.d) }

// run runs the command once for op and checks its reply.
func (a *Action) run(ctx context.Context, op string, req actions.Request) (reply, error) {
	out, err := a.invoke(ctx, op, req)
	if err != nil {
		return reply{}, err
	}
	return parseReply(out)
}

// callSecrets are the instance's secrets and the call's, longest first.
func (a *Action) callSecrets(req actions.Request) []string {
	if len(req.Secrets) == 0 {
		return a.secrets
	}
	secrets := append(append([]string(nil), a.secrets...), req.Secrets...)
	slices.SortFunc(secrets, func(x, y string) int { return len(y) - len(x) })
	return secrets
}

// invoke runs the command once for op and returns its stdout, checked for its exit status and
// size but not parsed.
func (a *Action) invoke(ctx context.Context, op string, req actions.Request) ([]byte, error) {
	ctx, end, err := a.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()

	stdin, err := encodeRequest(op, req)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	// Taken before the timeout starts: the wait for a previous run is bounded on its own.
	// A plan does not wait for another call: it takes a lock free within lockGrace or none
	// (the host's actions.PlanGate stops it when another call of the resource comes).
	lock, release, err := lockResource(ctx, a.lockDir, req.Resource, op != opPlan)
	if errors.Is(err, errLockHeld) && op == opPlan {
		return nil, actions.ErrPlanBusy
	}
	if err != nil {
		return nil, err
	}
	// Closed when the call ends, not after Start: the lock then does not depend on the
	// command keeping lockFD open while trueup waits for it.
	defer release()
	ctx, cancel := context.WithTimeoutCause(ctx, a.timeout, &timeoutError{a.timeout})
	defer cancel()

	cmd := exec.Command(a.path, a.args...)
	cmd.Dir = a.dir
	env := actions.MinimalEnv(cmd.Environ())
	if a.inherit {
		env = inheritedEnv(cmd.Environ())
	}
	env = append(env, a.env...)
	cmd.Env = append(env, protocolEnv(op, req.Resource)...)
	cmd.Env = append(cmd.Env, traceEnv(ctx)...)
	if lock != nil {
		cmd.ExtraFiles = []*os.File{lock} // lockFD
		cmd.Env = append(cmd.Env, "TRUEUP_LOCK_FD="+strconv.Itoa(lockFD))
	}
	cmd.Stdin = bytes.NewReader(stdin)
	stdout := &capWriter{max: maxStdout}
	// The call's own secrets (revealed into its spec) are redacted like the instance's,
	// before the tail is cut.
	secrets := a.callSecrets(req)
	stderr := &tailWriter{keep: stderrTail + longest(secrets)}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = waitDelay
	a.tree.Prepare(cmd)

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start command: %w", err)
	}
	stopWatch := watch(ctx, cmd.Process, a.tree)
	waitErr := cmd.Wait()
	interrupted := stopWatch()
	// Whatever the command left running in its group goes with it.
	proc.Kill(cmd.Process)

	logger := a.logger.With("operation", op, "kind", req.Resource.Kind,
		"namespace", req.Resource.Namespace, "name", req.Resource.Name,
		"duration", time.Since(start))
	tail := func() string { return stderr.tail(stderrTail, secrets) }

	if interrupted {
		cause := context.Cause(ctx)
		logger.DebugContext(ctx, "exec interrupted", "cause", cause)
		if t, ok := cause.(*timeoutError); ok {
			return nil, withTail(t, tail())
		}
		return nil, fmt.Errorf("command interrupted: %w", cause)
	}
	var exitErr *exec.ExitError
	switch {
	case errors.As(waitErr, &exitErr):
		code := exitErr.ExitCode()
		logger.DebugContext(ctx, "exec failed", "exit_code", code)
		err := withTail(exitErr, tail())
		if code == ExitConfig {
			return nil, actions.Terminal(err)
		}
		if code == ExitNoPlan && op == opPlan {
			return nil, fmt.Errorf("%w: %w", actions.ErrNoPlan, err)
		}
		return nil, err
	case errors.Is(waitErr, exec.ErrWaitDelay):
		// The command succeeded but left a process holding stdout or stderr; that process
		// has been killed and the reply read so far is the command's.
		logger.WarnContext(ctx, "exec command left processes holding its output; killed them")
	case waitErr != nil:
		return nil, fmt.Errorf("wait for command: %w", waitErr)
	}
	logger.DebugContext(ctx, "exec finished")

	out, overflow := stdout.bytes()
	if overflow {
		return nil, fmt.Errorf("stdout: more than %d MiB", maxStdout>>20)
	}
	return out, nil
}

// withTail appends the stderr tail to err's message, keeping err in the chain.
func withTail(err error, tail string) error {
	if tail == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, tail)
}

// inheritedEnv is the controller's environment without its TRUEUP_ variables: those
// configure trueup itself (TRUEUP_DATABASE_URL holds the database password) and the prefix
// belongs to the exec protocol, whose variables are added after.
func inheritedEnv(environ []string) []string {
	return slices.DeleteFunc(environ, func(kv string) bool { return strings.HasPrefix(kv, "TRUEUP_") })
}

// longest is the length of the first of secrets, which are sorted longest first.
func longest(secrets []string) int {
	if len(secrets) == 0 {
		return 0
	}
	return len(secrets[0])
}

// watch signals p's process group when ctx is done: SIGTERM, then SIGKILL after killGrace or
// as soon as stop is called (the command has exited and its output is closed), whichever
// comes first. Children that outlive the command get only the grace the command gave them;
// a command that wants its children to clean up waits for them. stop ends the watch and
// reports whether the group was signalled. When p is the init of its own PID namespace, a p
// without a SIGTERM handler is killed right after the SIGTERM, since as PID 1 it would not die
// of it; its SIGKILL takes the whole namespace with it.
//
// Ending the grace on the command's exit, rather than on the whole group's, keeps calls
// prompt where orphans are never reaped (a container whose PID 1 is not an init): their
// zombies would keep the group alive.
func watch(ctx context.Context, p *os.Process, tree proc.Tree) (stop func() bool) {
	exited := make(chan struct{})
	finished := make(chan struct{})
	var signalled bool
	go func() {
		defer close(finished)
		select {
		case <-exited:
			return
		case <-ctx.Done():
		}
		signalled = true
		tree.Terminate(p)
		grace := time.NewTimer(killGrace)
		defer grace.Stop()
		select {
		case <-grace.C:
		case <-exited:
		}
		proc.Kill(p)
	}()
	return func() bool {
		close(exited)
		<-finished
		return signalled
	}
}

var (
	_ actions.Action        = (*Action)(nil)
	_ actions.Observer      = (*Action)(nil)
	_ actions.Planner       = (*Action)(nil)
	_ actions.WithValidator = (*Action)(nil)
	_ actions.SecretHolder  = (*Action)(nil)
	_ actions.LocalDirs     = (*Action)(nil)
)
