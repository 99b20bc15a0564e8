// Package actions declares the contract every action plugin implements (DESIGN §6) and the
// registry that maps plugin kinds to factories. Plugin kinds live in sub-packages and are wired
// explicitly by cmd/trueup.
package actions

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/trueup-dev/trueup/internal/registry"
	"github.com/trueup-dev/trueup/sources"
)

// Action moves an external system toward a resource's spec.
type Action interface {
	// Reconcile moves the external system toward req.Resource.Spec. It must be idempotent
	// and short: long work is started, its handle kept in Result.State, and checked on the
	// next call after Result.RequeueAfter.
	Reconcile(ctx context.Context, req Request) (Result, error)
	// Delete removes what Reconcile created; the resource row goes only after it reports Done.
	Delete(ctx context.Context, req Request) (Result, error)
}

// Observer is implemented by plugins that can detect drift cheaply. The reconciler calls it
// for Ready resources on resync; InSync=false leads to a Reconcile.
type Observer interface {
	Observe(ctx context.Context, req Request) (Observation, error)
}

// Planner is implemented by plugins that can say what a Reconcile would do without doing
// it: pull-request previews ask every changed resource's action for a plan. It must cause no
// side effect. A plugin whose backend does not implement plan for this call (an exec
// command that exits with the documented code) returns ErrNoPlan.
type Planner interface {
	Plan(ctx context.Context, req Request) (Plan, error)
}

// Plan is what a Reconcile (or, from PlanDelete, a Delete) would do.
type Plan struct {
	Changes bool   // it would change something
	Summary string // one line, e.g. "1 to add, 0 to change, 0 to destroy"
	Text    string // the full plan, shown in previews and approvals (bounded by the caller)
	// Counted says the plugin reports what the plan would do in Add, Change, Destroy and
	// Replace (things created, updated in place, deleted, deleted and created again); policies
	// read them as plan.add, plan.change, plan.destroy and plan.replace (0 when not Counted).
	Counted                       bool
	Add, Change, Destroy, Replace int
	// Hash identifies what the plan would do (not when it was made): two plans of the same
	// change against the same world have the same Hash. "" lets the host derive one from the
	// other fields (PlanHash, over the Text and Summary scrubbed of the call's secrets). An
	// approval binds to it. It is published (approval requests, the API, history,
	// notifications), so it must not be computable from secret values: a plugin leaves the
	// call's secrets (Request.Secrets) and its own out of what it hashes, or a low-entropy
	// secret is recovered by hashing guesses. Approvers never see secrets, so binding an
	// approval to a secret's value adds nothing; a spec change is a new generation, which the
	// approval is bound to as well.
	Hash string
}

// DeletePlanner is implemented by planners that can say what a Delete would do (terraform's
// plan -destroy). The gate of a delete asks for it; without it a delete's plan is not
// available to policies.
type DeletePlanner interface {
	PlanDelete(ctx context.Context, req Request) (Plan, error)
}

// PlanHash is the hash an approval binds to: p.Hash when the plugin gave one, else a SHA-256
// of the plan's other fields.
func PlanHash(p Plan) string {
	if p.Hash != "" {
		return p.Hash
	}
	h := sha256.New()
	fmt.Fprintf(h, "%t\x00%t\x00%d\x00%d\x00%d\x00%d\x00%s\x00%s", p.Changes, p.Counted, p.Add, p.Change, p.Destroy, p.Replace, p.Summary, p.Text)
	return hex.EncodeToString(h.Sum(nil))
}

// PullRequestCodePlanner is implemented by planners whose plan may run code or CI that a pull
// request chooses: github-actions and gitlab run a workflow or pipeline of the forge's
// repository with its CI secrets and hand it the pull request's spec as inputs or variables
// (a workflow that interpolates an input into a script, `run: echo ${{ inputs.spec }}`, runs
// what the fork's author wrote there); terraform with a module read from the repository and
// pullRequestModules runs the pull request's module (a `data "external"` runs any program)
// on the controller, with its environment and database URL. RunsPullRequestCode says whether
// this instance's plans do. A preview of a pull request from a fork asks such a planner for
// plans only when the source allows it (preview.forkPlans).
type PullRequestCodePlanner interface {
	Planner
	RunsPullRequestCode() bool
}

// ErrNoPlan says the plugin cannot plan this call; a preview shows "no plan".
var ErrNoPlan = errors.New("the action does not implement plan")

// WithValidator is implemented by plugins that check a ResourceType's `with:` parameters at
// ingest, so that a bad parameter rejects the commit instead of failing every reconcile.
type WithValidator interface {
	ValidateWith(with json.RawMessage) error
}

// SpecRequirer is implemented by plugins whose calls need certain top-level spec fields that
// can be known offline (a Terraform module's variables without a default): `trueup validate
// --config` checks each type's schema against them. repoDir is the local checkout of a
// source's repository root ("" when there is none here); an error says what could not be
// read, and the caller reports it as not checked.
type SpecRequirer interface {
	RequiredSpecFields(repoDir func(source string) string) ([]RequiredField, error)
}

// RequiredField is a top-level spec field a plugin's calls need, and where that need is
// declared (a variable block's file and line, for messages).
type RequiredField struct {
	Name string
	File string
	Line int
}

// SecretHolder is implemented by plugins whose config holds secrets written as literals
// rather than through ${VAR} (an exec instance's secret-named env values): the controller
// scrubs them, like ${VAR} values, from every message, condition and output of every plugin.
type SecretHolder interface {
	Secrets() []string
}

// LocalDirs is implemented by plugins that keep files in folders of the controller (working
// copies, lock files, the folder their command runs in): previews cut paths in those folders
// from what plans publish, since the pull request's readers have no business with them.
type LocalDirs interface {
	LocalDirs() []string
}

// SourceReader is implemented by plugins whose instance reads files of configured sources
// through Env.ReadTree (a terraform module kept in a source's repository): the host warns
// when a config does not have a source an instance reads, since its resources would stall.
type SourceReader interface {
	// SourcesRead names the sources the instance reads.
	SourcesRead() []string
}

// CommandRunner is implemented by plugins whose calls start processes (through actions/proc:
// exec, terraform): the host says once at start-up when the processes of a killed trueup may
// outlive it.
type CommandRunner interface {
	RunsCommands() bool
}

// Resource is the desired state handed to a plugin.
type Resource struct {
	APIVersion  string            `json:"apiVersion"`
	Kind        string            `json:"kind"`
	Namespace   string            `json:"namespace"`
	Name        string            `json:"name"`
	UID         string            `json:"uid"`
	Generation  int64             `json:"generation"`
	Spec        json.RawMessage   `json:"spec"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Source      string            `json:"source,omitempty"`
	// Revision is the Git revision the call is made at: for a reconcile, the one that last
	// changed the resource's desired state; for a delete, the one it was last applied at
	// (what applied it can delete it, whatever later commits hold), or the one that removed
	// it when it was never applied.
	Revision string `json:"revision,omitempty"`
	// FallbackRevision is set for a delete only: the newest revision of the source trueup
	// applied. A plugin that reads the repository at Revision and finds the commit gone
	// (sources.ErrRevisionNotFound: history rewritten) reads it there instead.
	FallbackRevision string `json:"fallbackRevision,omitempty"`
}

// Request is one call to a plugin.
type Request struct {
	Resource Resource
	// With holds the ResourceType's `with:` parameters (JSON object, may be nil).
	With json.RawMessage
	// State is what the plugin returned in Result.State on its previous call for this
	// resource (nil on the first call), or what it last passed to Checkpoint.
	State json.RawMessage
	// Checkpoint durably records state before the plugin causes an external side effect
	// (dispatching a workflow, starting a pipeline): the intent, with a correlation id, is
	// committed first, so that a replica that dies between "dispatch" and "record" is
	// followed by one that finds State carrying the intent and adopts the work in flight
	// instead of starting it twice. It fails when the lease was lost, or when state holds a
	// number PostgreSQL's numeric cannot hold; the plugin must then not cause the side
	// effect. Nil in tests that do not care (treat as success).
	Checkpoint func(ctx context.Context, state json.RawMessage) error
	// KeepPlan is set on the plan the gate asks for before a Reconcile or Delete (policies
	// select the resource): the plugin keeps what it needs to apply exactly this plan (terraform
	// saves the plan file in the resource's working copy) and should give it a Hash.
	KeepPlan bool
	// ApprovedPlan is set on a Reconcile or Delete the gate let through after a plan: the
	// PlanHash of that plan. A plugin that kept it (KeepPlan) applies exactly it, and fails
	// (to be planned again) when it no longer holds a plan of that hash.
	ApprovedPlan string
	// Secrets are the values put back into this call's spec (SOPS-encrypted fields, secretRef
	// values). The controller scrubs them from everything the call returns; a plugin that
	// logs, or cuts text before returning it (a stderr tail, an answer's excerpt), scrubs
	// them first, as it does its own secrets, so that no piece of one survives the cut.
	Secrets []string
}

// Scrub returns a function replacing the call's secrets (and extra, the plugin's own) with
// "***".
func (req Request) Scrub(extra ...string) func(string) string {
	return Scrubber(append(append([]string(nil), extra...), req.Secrets...))
}

// SaveCheckpoint calls req.Checkpoint when it is set.
func (req Request) SaveCheckpoint(ctx context.Context, state json.RawMessage) error {
	if req.Checkpoint == nil {
		return nil
	}
	return req.Checkpoint(ctx, state)
}

// Condition is a plugin-defined status condition. Status is "True", "False" or "Unknown";
// Reason is CamelCase.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Result is the outcome of a successful call.
type Result struct {
	// Done reports that the external system has reached the spec (or, for Delete, that
	// everything is removed).
	Done bool
	// RequeueAfter asks for the next call after this delay when Done is false. Zero means
	// the reconciler's default poll delay.
	RequeueAfter time.Duration
	// State is kept by the reconciler and handed back in the next Request. A state holding a
	// number PostgreSQL's numeric cannot hold fails the attempt instead.
	State json.RawMessage
	// Outputs become status.outputs (a JSON object).
	Outputs map[string]any
	// Conditions are added to the standard ones in status.conditions.
	Conditions []Condition
	// Message is a human-readable summary shown in status.message and history.
	Message string
}

// Observation is the outcome of Observe.
type Observation struct {
	InSync  bool
	Message string
	Outputs map[string]any
	// Drift says what drifted, as JSON pointers into the spec (nil: the action does not say).
	// A type's drift.ignore pointers leave out what they cover; drift without paths is never
	// ignored.
	Drift []DriftPath
	// Observed is the spec as found, for the host to compare with the spec it sent when the
	// action gives no Drift (nil: not given).
	Observed json.RawMessage
}

// DriftPath is one drifted field: where in the spec (a JSON pointer, "/tags/owner"), what the
// spec says and what was found (nil when the action does not say).
type DriftPath struct {
	Path     string `json:"path"`
	Expected any    `json:"expected,omitempty"`
	Actual   any    `json:"actual,omitempty"`
}

// terminalError marks errors that will not go away until the spec changes.
type terminalError struct{ err error }

func (e *terminalError) Error() string { return e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

// Terminal marks err as terminal: the resource becomes Stalled and is not retried until its
// generation changes.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// Terminalf is Terminal(fmt.Errorf(...)).
func Terminalf(format string, args ...any) error {
	return Terminal(fmt.Errorf(format, args...))
}

// IsTerminal reports whether err (or anything it wraps) was marked Terminal.
func IsTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}

// Env is what the registry hands a factory besides the instance's config.
type Env struct {
	// Name is the instance name from the controller config.
	Name string
	// BaseDir is the folder of the controller config file; relative paths in plugin config
	// are resolved against it.
	BaseDir string
	Logger  *slog.Logger
	// DatabaseURL is the URL of the controller's own PostgreSQL, for plugins that keep their
	// state there (terraform's pg backend): the daemon opens the database before it builds
	// the instances. "" where there is none (trueup validate, config check).
	DatabaseURL string
	// ReadTree reads the files under dir (relative to the repository's root) of the named
	// source's revision, within the limits of sources.TreeReader: the terraform action reads
	// a module kept in the manifests repository at the revision a resource came from. Nil
	// where no source is open (trueup validate, tests that need none).
	ReadTree func(ctx context.Context, source, revision, dir string) ([]sources.TreeFile, error)
}

// Factory builds a plugin instance from its raw JSON config. It must decode strictly
// (unknown fields are errors naming the field) and validate without side effects.
type Factory func(config json.RawMessage, env Env) (Action, error)

// FilesFunc lists the files an instance's config names whose content the instance is built
// from (a key read once, by the factory), as written in the config: a relative path is
// relative to the controller config's folder. The host reads them when it loads the config,
// before any instance is built, and rebuilds the instance when one of them holds other bytes
// at a reload (a key rotated in place). A file read at each call (a script, a module) is
// not one of them.
type FilesFunc func(config json.RawMessage) ([]string, error)

// Registry maps plugin kinds ("exec", "noop", …) to factories, and the kinds whose config
// names files to their FilesFunc.
type Registry struct {
	kinds *registry.Kinds[Factory]
	files map[string]FilesFunc
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{kinds: registry.New[Factory]("action"), files: map[string]FilesFunc{}}
}

// Register adds a kind; registering a kind twice is an error.
func (r *Registry) Register(kind string, f Factory) error { return r.kinds.Register(kind, f) }

// RegisterFiles declares the files a registered kind's config names; a kind registers them
// once at most.
func (r *Registry) RegisterFiles(kind string, f FilesFunc) error {
	switch _, ok := r.kinds.Get(kind); {
	case !ok:
		return fmt.Errorf("register the files of action kind %q: the kind is not registered", kind)
	case f == nil:
		return fmt.Errorf("register the files of action kind %q: nil function", kind)
	case r.files[kind] != nil:
		return fmt.Errorf("register the files of action kind %q: registered twice", kind)
	}
	r.files[kind] = f
	return nil
}

// Files lists the files an instance of kind with config names (nil for a kind that declares
// none, or is not registered).
func (r *Registry) Files(kind string, config json.RawMessage) ([]string, error) {
	if f := r.files[kind]; f != nil {
		return f(config)
	}
	return nil, nil
}

// Kinds lists the registered kinds, sorted.
func (r *Registry) Kinds() []string { return r.kinds.Names() }

// New builds an instance of kind.
func (r *Registry) New(kind string, config json.RawMessage, env Env) (Action, error) {
	f, ok := r.kinds.Get(kind)
	if !ok {
		return nil, fmt.Errorf("action %q: unknown type %q (known: %v)", env.Name, kind, r.Kinds())
	}
	a, err := f(config, env)
	if err != nil {
		return nil, fmt.Errorf("action %q (%s): %w", env.Name, kind, err)
	}
	return a, nil
}

// Closer is implemented by plugins that hold something to release (clients, working
// copies, a process's lock): the host calls Close when an instance is replaced or the daemon
// stops. It is safe to call twice.
type Closer interface {
	Close() error
}

// RateLimited is implemented by plugins that call an API with a rate limit (github-actions,
// gitlab): the host exports what is left of it as a metric.
type RateLimited interface {
	// RateLimitRemaining is the remaining count the API last reported, -1 when unknown.
	RateLimitRemaining() int
}

// Close closes a if it is a Closer.
func Close(a Action) error {
	if c, ok := a.(Closer); ok {
		return c.Close()
	}
	return nil
}

// DecodeStrict decodes a JSON object into v, rejecting unknown fields. Empty input leaves v
// untouched. Plugins use it for their config and `with:` parameters.
func DecodeStrict(data json.RawMessage, v any) error {
	if len(data) == 0 || string(data) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	return nil
}
