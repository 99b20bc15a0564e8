package terraform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/sources"
)

// lockTimeout is how long a run waits for the backend's state lock (held by another
// replica's run, or an operator's).
const lockTimeout = "60s"

// initKey is the keyLocks key that serialises the instance's inits; workspaces never
// contain a NUL.
const initKey = "\x00init"

// errClosed is the cause of calls cancelled by Close.
var errClosed = fmt.Errorf("terraform action closed: %w", context.Canceled)

// Action is a terraform instance. It is safe for concurrent use; calls for one resource run
// one at a time.
type Action struct {
	settings
	logger *slog.Logger
	dbURL  string // actions.Env.DatabaseURL
	// readTree reads a module kept in a source's repository (actions.Env.ReadTree).
	readTree func(ctx context.Context, source, revision, dir string) ([]sources.TreeFile, error)
	trees    treeHashes
	calls    actions.Calls
	locks    keyLocks
	// versions are the binaries' versions, for the init stamp.
	versions versions
	// gate stops a plan of a resource when another call of it comes, unless the host
	// shares one (actions.PlanArbitrated).
	gate actions.PlanGate
}

// PlanGate is the instance's actions.PlanArbitrated gate: a plan uses the resource's working
// copy, which a reconcile needs.
func (a *Action) PlanGate() *actions.PlanGate { return &a.gate }

// New is the actions.Factory of the terraform kind. It checks the config without touching
// the module, the binary or the database: a missing one fails each call, not the start.
func New(raw json.RawMessage, env actions.Env) (actions.Action, error) {
	s, err := parseConfig(raw, env)
	if err != nil {
		return nil, err
	}
	logger := env.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Action{settings: s, logger: logger, dbURL: env.DatabaseURL, readTree: env.ReadTree}, nil
}

// call is one prepared call: the resource's working copy initialised, its var file written.
type call struct {
	a         *Action
	binary    string
	workspace string
	dir       string // the resource's working copy
	callDir   string // this call's var file and plan
	varFile   string
	module    string   // the module's content hash
	secrets   []string // the call's and the instance's secrets, kept out of plan hashes
	request   string   // requestDigest of the module and the var file
	env       []string
	scrub     func(string) string
}

// begin registers a call, takes the resource's lock, and prepares its working copy; end
// releases all of it and removes the call's files.
func (a *Action) begin(ctx context.Context, req actions.Request, plan bool) (context.Context, *call, func(), error) {
	ctx, endCall, err := a.calls.Begin(ctx, errClosed)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, a.timeout, fmt.Errorf("timed out after %s", a.timeout))
	ws := workspaceName(req.Resource)
	var preempt context.CancelCauseFunc // a plan's: a call that wants its locks stops it
	var unlock func()
	if plan {
		ctx, preempt = context.WithCancelCause(ctx)
		if unlock, err = a.locks.tryLockPlan(ws, preempt); err != nil {
			preempt(nil)
			cancel()
			endCall()
			return nil, nil, nil, err
		}
	} else if unlock, err = a.locks.lock(ctx, ws); err != nil {
		cancel()
		endCall()
		return nil, nil, nil, fmt.Errorf("wait for the previous run of %s: %w", ws, err)
	}
	end := func() {
		unlock()
		if preempt != nil {
			preempt(nil)
		}
		cancel()
		endCall()
	}
	c, err := a.prepare(ctx, req, ws, preempt)
	if err != nil && preempt != nil && errors.Is(context.Cause(ctx), actions.ErrPlanBusy) {
		err = actions.ErrPlanBusy
	}
	if err != nil {
		end()
		return nil, nil, nil, err
	}
	return ctx, c, func() { _ = os.RemoveAll(c.callDir); end() }, nil
}

// prepare resolves the binary, initialises the working copy when the module (or the backend,
// or the binary) changed since the last init, and writes the spec as the call's var file.
// A plan (preempt set) selects the workspace, which exists (Plan checked), and never creates
// it; it inits only when no other call does, and stops when one asks to.
func (a *Action) prepare(ctx context.Context, req actions.Request, ws string, preempt context.CancelCauseFunc) (*call, error) {
	plan := preempt != nil
	vars, err := varFile(req.Resource.Spec)
	if err != nil {
		return nil, err
	}
	binary, err := a.findBinary()
	if err != nil {
		return nil, err
	}
	c := &call{a: a, binary: binary, workspace: ws, dir: filepath.Join(a.workDir, ws)}
	secrets := append(slices.Clone(a.secrets), req.Secrets...)
	env := append(actions.MinimalEnv(os.Environ()), a.env...)
	env = append(env, "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1",
		"TF_DATA_DIR="+filepath.Join(c.dir, "data"))
	if !a.custom {
		conn := a.dbURL
		if conn == "" {
			return nil, errors.New("no database for the pg backend: the controller has not opened one (set backend: in the config to keep state elsewhere)")
		}
		if u, err := url.Parse(conn); err == nil {
			if p, ok := u.User.Password(); ok && p != "" {
				secrets = append(secrets, p)
			}
		}
		secrets = append(secrets, conn)
		env = append(env, "PG_CONN_STR="+conn, "PG_SCHEMA_NAME="+a.schema)
	}
	c.scrub = actions.Scrubber(secrets)
	c.secrets = secrets
	c.env = env

	if err := ensurePrivateDir(a.rootDir); err != nil {
		return nil, err
	}
	if err := ensurePrivateDir(a.workDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, fmt.Errorf("working copy: %w", err)
	}
	mod, err := a.moduleOf(ctx, req.Resource)
	if err != nil {
		return nil, err
	}
	c.module = mod.hash
	if c.request, err = requestDigest(mod.hash, vars); err != nil {
		return nil, err
	}
	version, err := c.version(ctx)
	if err != nil {
		return nil, err
	}
	stamp := fmt.Sprintf("module %s\nbinary %s\nversion %s\nbackend %s\nschema %s\n", mod.hash, binary, version, digest(a.backend), a.schema)
	stampFile := filepath.Join(c.dir, "stamp")
	if old, err := os.ReadFile(stampFile); err != nil || string(old) != stamp {
		_ = os.Remove(stampFile) // a failed init below is retried in full
		// One init of the instance at a time in this process (see lockInit for why)…
		var unlock func()
		if plan {
			if unlock, err = a.locks.tryLockPlan(initKey, preempt); err != nil {
				return nil, err
			}
		} else if unlock, err = a.locks.lock(ctx, initKey); err != nil {
			return nil, err
		}
		defer unlock()
		// … and across processes: another replica may init the same instance now.
		unlockDB, err := a.lockInit(ctx)
		if err != nil {
			return nil, err
		}
		defer unlockDB()
		if err := mod.write(ctx, filepath.Join(c.dir, "root")); err != nil {
			return nil, fmt.Errorf("copy module %s: %w", mod.desc, err)
		}
		// -reconfigure: the state stays in the backend; a changed backend block is used as
		// it is, never migrated from the old one.
		// Without TF_WORKSPACE: init refuses a selected workspace the backend lacks. The
		// workspace is then created (or selected) once, and every later run names it.
		if _, err := c.run(ctx, false, "init", "-input=false", "-no-color", "-reconfigure"); err != nil {
			return nil, err
		}
		selectArgs := []string{"workspace", "select", "-no-color", "-or-create=true", ws}
		if plan {
			selectArgs = []string{"workspace", "select", "-no-color", ws}
		}
		if err := waitWorkspaceCreation(ctx, c, selectArgs); err != nil {
			return nil, err
		}
		if err := os.WriteFile(stampFile, []byte(stamp), 0o600); err != nil {
			return nil, err
		}
		a.logger.InfoContext(ctx, "terraform init", "workspace", ws, "module", mod.desc)
	}

	declared, err := moduleVariables(filepath.Join(c.dir, "root"))
	if err != nil {
		return nil, fmt.Errorf("module variables: %w", err)
	}
	if err := writeSensitive(filepath.Join(c.dir, "root"), secretVariables(vars, req.Secrets, declared)); err != nil {
		return nil, fmt.Errorf("working copy: %w", err)
	}

	callDir, err := os.MkdirTemp(c.dir, "call-")
	if err != nil {
		return nil, err
	}
	c.callDir = callDir
	c.varFile = filepath.Join(callDir, "spec.tfvars.json")
	if err := writeFile0600(c.varFile, vars); err != nil {
		_ = os.RemoveAll(callDir)
		return nil, err
	}
	return c, nil
}

// varFile is the spec as a var file: each top-level field a variable.
func varFile(spec json.RawMessage) ([]byte, error) {
	b := bytes.TrimSpace(spec)
	if len(b) == 0 || string(b) == "null" {
		return []byte("{}"), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, actions.Terminalf("spec must be a JSON object of Terraform variables: %w", err)
	}
	return b, nil
}

func (a *Action) findBinary() (string, error) {
	if a.binary != "" {
		p, err := exec.LookPath(a.binary)
		if err != nil {
			return "", fmt.Errorf("binary: %w", err)
		}
		return p, nil
	}
	for _, name := range []string{"terraform", "tofu"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("neither terraform nor tofu is on PATH (set binary: in the config)")
}

// run runs the binary in the working copy; withWorkspace false leaves TF_WORKSPACE unset
// (init, and the workspace commands, which refuse it).
func (c *call) run(ctx context.Context, withWorkspace bool, args ...string) (runResult, error) {
	return c.runCodes(ctx, withWorkspace, nil, args...)
}

func (c *call) runCodes(ctx context.Context, withWorkspace bool, okCodes []int, args ...string) (runResult, error) {
	return c.runTo(ctx, withWorkspace, okCodes, nil, args...)
}

// runTo is runCodes with stdout, when not nil, written there alone (runSpec.stdout).
func (c *call) runTo(ctx context.Context, withWorkspace bool, okCodes []int, stdout io.Writer, args ...string) (runResult, error) {
	env := c.env
	if withWorkspace {
		env = append(slices.Clone(env), "TF_WORKSPACE="+c.workspace)
	}
	start := time.Now()
	res, err := run(ctx, runSpec{binary: c.binary, dir: filepath.Join(c.dir, "root"), env: env, args: args,
		scrub: c.scrub, okCodes: append([]int{0}, okCodes...), stdout: stdout})
	c.a.logger.DebugContext(ctx, "terraform run", "command", args[0], "workspace", c.workspace, "exit_code", res.code,
		"duration", time.Since(start))
	if err != nil {
		return res, classify(res.output, err)
	}
	return res, nil
}

// terminalMarks are Terraform errors that only a change of the spec fixes.
var terminalMarks = []string{
	"Error: No value for required variable",
	"Error: Invalid value for input variable",
	"Error: Invalid value for variable",
}

// classify marks an error terminal when Terraform refused the spec's variables.
func classify(out string, err error) error {
	for _, m := range terminalMarks {
		if strings.Contains(out, m) {
			return actions.Terminal(adviseSchema(err))
		}
	}
	return err
}

// varAdvice is Terraform's advice for a required variable without a value, which points at
// its command line; words may be wrapped onto the next line.
var varAdvice = regexp.MustCompile(`input\s+variable\s+"([^"]+)"\s+is\s+not\s+set,\s+and\s+has\s+no\s+default\s+value\.\s+Use\s+a\s+-var\s+or\s+-var-file\s+command\s+line\s+argument\s+to\s+provide\s+a\s+value\s+for\s+this\s+variable\.`)

// adviseSchema replaces Terraform's -var advice with the fix in trueup's terms: the spec is
// the var file, so the resource must set the field (which the type's schema can make required
// or default), or the variable needs a default. The action cannot see the schema, so the
// advice covers a field the schema lacks and one it leaves optional.
func adviseSchema(err error) error {
	msg := err.Error()
	fixed := varAdvice.ReplaceAllString(msg, "input variable \"$1\" is not set, and has no default value. "+
		"spec.$1 is not set: set it in the resource (make it required or give it a default in the type's schema), or give the variable a default in the module.")
	if fixed == msg {
		return err
	}
	return errors.New(fixed)
}

// plan runs plan with -detailed-exitcode and reports whether it found changes.
func (c *call) plan(ctx context.Context, extra ...string) (runResult, bool, error) {
	args := append([]string{"plan", "-input=false", "-no-color", "-detailed-exitcode", "-var-file=" + c.varFile}, extra...)
	res, err := c.runCodes(ctx, true, []int{2}, args...)
	return res, res.code == 2, err
}

// Reconcile plans into a saved plan and applies exactly that plan when it changes anything;
// with Request.ApprovedPlan it applies the plan the gate kept instead, without planning. Any
// other kept plan is removed (dropPlans).
func (a *Action) Reconcile(ctx context.Context, req actions.Request) (actions.Result, error) {
	ctx, c, end, err := a.begin(ctx, req, false)
	if err != nil {
		return actions.Result{}, err
	}
	defer end()
	planFile := filepath.Join(c.callDir, "plan.tfplan")
	var changes bool
	if req.ApprovedPlan != "" {
		planFile, changes, err = c.approved(ctx, req.ApprovedPlan, false)
	}
	// The approved plan, if any, is out of plans/ now: what is left there is applied by no one.
	if derr := c.dropPlans(); derr != nil && err == nil {
		err = derr
	}
	if err == nil && req.ApprovedPlan == "" {
		_, changes, err = c.plan(ctx, "-lock-timeout="+lockTimeout, "-out="+planFile)
	}
	if err != nil {
		return actions.Result{}, err
	}
	// From here the resource counts as applied for previews (applied), also when the apply
	// fails half-way.
	if err := os.Remove(filepath.Join(c.dir, unappliedFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return actions.Result{}, fmt.Errorf("working copy: %w", err)
	}
	state := c.state()
	message := "No changes."
	if changes {
		// The lease is checked before the world changes; a replica that lost it stops here.
		if err := req.SaveCheckpoint(ctx, state); err != nil {
			return actions.Result{}, err
		}
		res, err := c.apply(ctx, planFile, req.ApprovedPlan)
		if err != nil {
			return actions.Result{}, err
		}
		message = tail(res.output, logTail)
	}
	outputs, err := c.outputs(ctx)
	if err != nil {
		return actions.Result{}, err
	}
	return actions.Result{Done: true, State: state, Outputs: outputs, Message: message}, nil
}

// Delete destroys what the workspace holds (with Request.ApprovedPlan, by applying the destroy
// plan the gate kept), then deletes the workspace (its row in the pg backend) and the working
// copy.
func (a *Action) Delete(ctx context.Context, req actions.Request) (actions.Result, error) {
	ctx, c, end, err := a.begin(ctx, req, false)
	if err != nil {
		return actions.Result{}, err
	}
	defer end()
	var file string // the approved plan
	if req.ApprovedPlan != "" {
		file, _, err = c.approved(ctx, req.ApprovedPlan, true)
	}
	// The approved plan, if any, is out of plans/ now: what is left there is applied by no one.
	if derr := c.dropPlans(); derr != nil && err == nil {
		err = derr
	}
	if err != nil {
		return actions.Result{}, err
	}
	if err := req.SaveCheckpoint(ctx, c.state()); err != nil {
		return actions.Result{}, err
	}
	var res runResult
	if file != "" {
		res, err = c.apply(ctx, file, req.ApprovedPlan)
	} else {
		res, err = c.run(ctx, true, "destroy", "-input=false", "-no-color", "-auto-approve", "-lock-timeout="+lockTimeout, "-var-file="+c.varFile)
	}
	if err != nil {
		return actions.Result{}, err
	}
	// A workspace is deleted from another one.
	if err := waitWorkspaceCreation(ctx, c, []string{"workspace", "select", "-no-color", "default"}); err != nil {
		return actions.Result{}, err
	}
	if err := waitWorkspaceCreation(ctx, c, []string{"workspace", "delete", "-no-color", "-lock-timeout=" + lockTimeout, c.workspace}); err != nil {
		return actions.Result{}, err
	}
	// The working copy goes with the workspace; the next resource of this name starts from a
	// fresh init.
	if err := os.RemoveAll(c.dir); err != nil {
		a.logger.WarnContext(ctx, "terraform: remove working copy", "workspace", c.workspace, "error", err)
	}
	return actions.Result{Done: true, Message: tail(res.output, logTail)}, nil
}

// Observe runs a plan: changes are drift, summarised in the message. A plan the gate kept is
// removed (dropPlans): no call applies it after an observe.
func (a *Action) Observe(ctx context.Context, req actions.Request) (actions.Observation, error) {
	ctx, c, end, err := a.begin(ctx, req, false)
	if err != nil {
		return actions.Observation{}, err
	}
	defer end()
	if err := c.dropPlans(); err != nil {
		return actions.Observation{}, err
	}
	res, changes, err := c.plan(ctx, "-lock-timeout="+lockTimeout)
	if err != nil {
		return actions.Observation{}, err
	}
	if !changes {
		return actions.Observation{InSync: true}, nil
	}
	return actions.Observation{Message: "terraform plan: " + summary(res.output, true)}, nil
}

// SourcesRead names the source a repository module is read from (none for a local module).
func (a *Action) SourcesRead() []string {
	if a.repo.source == "" {
		return nil
	}
	return []string{a.repo.source}
}

// RunsCommands is true: every call runs terraform.
func (a *Action) RunsCommands() bool { return true }

var (
	_ actions.SourceReader  = (*Action)(nil)
	_ actions.CommandRunner = (*Action)(nil)
)

// RunsPullRequestCode reports whether plans run the pull request's own module: a module read
// from the source's repository with pullRequestModules. Its code (a `data "external"`, a
// provider) then runs on the controller with the instance's environment and the database URL,
// so a preview of a pull request from a fork plans it only with preview.forkPlans.
func (a *Action) RunsPullRequestCode() bool { return a.repo.source != "" && a.prPlans }

// Plan runs a plan without the state lock (it writes nothing) and returns its summary and
// the names of the changes. A resource never applied is not planned: its workspace would be
// created for a preview (Plan creates no workspace); it is new, all of it to be created.
// A plan never delays another call: it is refused (actions.ErrPlanBusy) while a call of its
// resource runs or waits, or while another plan holds its workspace (ErrPlanInProgress); it is
// stopped when a call asks for its resource (actions.PlanGate, and its workspace lock) or,
// during an init, for the instance's init lock.
//
// Previews plan at the pull request's head. A module read from a source is then the pull
// request's version: unreviewed code that the plan would run (data sources, providers).
// Without pullRequestModules such an instance does not plan for them.
//
// The gate's plan (Request.KeepPlan) is none of this: it runs as a reconcile does and keeps
// its file for the Reconcile that applies it (gatePlan). Both report counts and a hash read
// from show -json of the saved plan.
func (a *Action) Plan(ctx context.Context, req actions.Request) (actions.Plan, error) {
	return a.planFor(ctx, req, false)
}

// state is the Result.State of a call: where the resource's Terraform state is.
func (c *call) state() json.RawMessage {
	st := map[string]string{"workspace": c.workspace}
	if !c.a.custom {
		st["schema"] = c.a.schema
	}
	b, _ := json.Marshal(st)
	return b
}

// outputs reads the root module's outputs; sensitive ones become "***".
func (c *call) outputs(ctx context.Context) (map[string]any, error) {
	res, err := c.run(ctx, true, "output", "-no-color", "-json")
	if err != nil {
		return nil, err
	}
	var raw map[string]struct {
		Sensitive bool            `json:"sensitive"`
		Value     json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &raw); err != nil {
		return nil, fmt.Errorf("terraform output: %w", err)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(raw))
	for name, o := range raw {
		if o.Sensitive {
			out[name] = "***"
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(o.Value))
		dec.UseNumber() // 64-bit IDs keep their digits
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("terraform output %s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

var _ actions.Closer = (*Action)(nil)

// Close refuses new calls, interrupts the runs in flight and waits for them. It is safe to
// call more than once.
func (a *Action) Close() error {
	a.calls.Close(errClosed)
	return nil
}

// Secrets returns the values of the config's secret-named env variables, for the controller
// to scrub from whatever any plugin returns.
func (a *Action) Secrets() []string { return slices.Clone(a.secrets) }

// LocalDirs are the folders of working copies and, for a folder module, the module's.
func (a *Action) LocalDirs() []string {
	dirs := []string{a.workDir, a.rootDir}
	if a.module != "" {
		dirs = append(dirs, a.module)
	}
	return dirs
}

// ValidateWith refuses with: parameters: the module and its variables come from the
// instance config and the spec.
func (a *Action) ValidateWith(with json.RawMessage) error {
	b := bytes.TrimSpace(with)
	if len(b) == 0 || string(b) == "null" || string(b) == "{}" {
		return nil
	}
	return errors.New("the terraform action takes no with: parameters (the spec holds the module's variables)")
}

var (
	_ actions.Action                 = (*Action)(nil)
	_ actions.Observer               = (*Action)(nil)
	_ actions.Planner                = (*Action)(nil)
	_ actions.PullRequestCodePlanner = (*Action)(nil)
	_ actions.WithValidator          = (*Action)(nil)
	_ actions.SecretHolder           = (*Action)(nil)
)

// workspaceLocked is what the pg backend answers (in either case: "Already locked …" from a
// workspace command, "… already locked for workspace creation" from a state lock) when
// another process creates a workspace at that moment: it takes a lock for creation and fails
// at once instead of waiting.
const workspaceLocked = "already locked for workspace creation"

// waitWorkspaceCreation runs a workspace command (select or create the resource's workspace,
// select default, delete), waiting out another process's workspace creation (other replicas,
// other instances on the same schema) for up to 30 s instead of failing the call.
func waitWorkspaceCreation(ctx context.Context, c *call, args []string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.run(ctx, false, args...)
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), workspaceLocked) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(100+rand.IntN(200)) * time.Millisecond):
		}
	}
}
