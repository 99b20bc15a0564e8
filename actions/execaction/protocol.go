package execaction

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/jsonptr"
)

// Protocol is the version of the exec protocol this package speaks, sent in every request.
const Protocol = "trueup.dev/exec/v1"

// ExitConfig is the exit status (EX_CONFIG) by which a command reports a terminal failure:
// it cannot succeed until the spec changes.
const ExitConfig = 78

// ExitNoPlan is the exit status (EX_USAGE in sysexits.h) by which a command of an instance
// with plan: true says it cannot plan this call: the preview shows "no plan"
// (actions.ErrNoPlan). It is read only for the plan operation; for the others it is an
// ordinary failure.
const ExitNoPlan = 64

// Operations of the protocol.
const (
	opReconcile = "reconcile"
	opDelete    = "delete"
	opObserve   = "observe"
	// opPlan is sent only to commands whose instance declares plan: true: a command written
	// before plan existed may treat an unknown operation as reconcile, and must never be
	// handed one it would act on.
	opPlan = "plan"
)

// wireRequest is the stdin document.
type wireRequest struct {
	Protocol  string          `json:"protocol"`
	Operation string          `json:"operation"`
	Resource  wireResource    `json:"resource"`
	With      json.RawMessage `json:"with"`
	State     json.RawMessage `json:"state"`
	// KeepPlan and ApprovedPlan are actions.Request's, for the gate of a policy: a plan to
	// keep, and the hash of the plan a reconcile or delete applies. Added within v1: a
	// command that does not know them ignores them.
	KeepPlan     bool   `json:"keepPlan"`
	ApprovedPlan string `json:"approvedPlan"`
}

// wireResource is actions.Resource with every field always present, so that scripts need
// not tell a missing field from an empty one.
type wireResource struct {
	APIVersion  string            `json:"apiVersion"`
	Kind        string            `json:"kind"`
	Namespace   string            `json:"namespace"`
	Name        string            `json:"name"`
	UID         string            `json:"uid"`
	Generation  int64             `json:"generation"`
	Spec        json.RawMessage   `json:"spec"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Source      string            `json:"source"`
	Revision    string            `json:"revision"`
	// FallbackRevision: for a delete, where to read the repository when the commit of
	// Revision is gone (actions.Resource.FallbackRevision); "" otherwise. Added within v1:
	// a command that does not know it ignores it.
	FallbackRevision string `json:"fallbackRevision"`
}

var emptyObject = json.RawMessage(`{}`)

// encodeRequest builds the stdin document. A malformed spec or `with:` comes from Git and is
// terminal; a malformed state is the plugin's own and is not.
func encodeRequest(op string, req actions.Request) ([]byte, error) {
	r := req.Resource
	w := wireRequest{
		Protocol:  Protocol,
		Operation: op,
		Resource: wireResource{
			APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			UID: r.UID, Generation: r.Generation, Spec: r.Spec,
			Labels: r.Labels, Annotations: r.Annotations, Source: r.Source, Revision: r.Revision,
			FallbackRevision: r.FallbackRevision,
		},
		With:         req.With,
		State:        req.State,
		KeepPlan:     req.KeepPlan,
		ApprovedPlan: req.ApprovedPlan,
	}
	if actions.IsNull(w.Resource.Spec) {
		w.Resource.Spec = emptyObject
	} else if !json.Valid(w.Resource.Spec) {
		return nil, actions.Terminalf("spec is not valid JSON")
	}
	if w.Resource.Labels == nil {
		w.Resource.Labels = map[string]string{}
	}
	if w.Resource.Annotations == nil {
		w.Resource.Annotations = map[string]string{}
	}
	if err := validateWith(w.With); err != nil {
		return nil, actions.Terminal(err)
	}
	if actions.IsNull(w.With) {
		w.With = emptyObject
	}
	if actions.IsNull(w.State) {
		w.State = nil // encodes as null
	} else if !json.Valid(w.State) {
		return nil, errors.New("state is not valid JSON")
	}
	return json.Marshal(w)
}

// env is the protocol's part of the command's environment.
func protocolEnv(op string, r actions.Resource) []string {
	return []string{
		"TRUEUP_OPERATION=" + op,
		"TRUEUP_KIND=" + r.Kind,
		"TRUEUP_NAMESPACE=" + r.Namespace,
		"TRUEUP_NAME=" + r.Name,
		"TRUEUP_GENERATION=" + strconv.FormatInt(r.Generation, 10),
		"TRUEUP_REVISION=" + r.Revision,
		"TRUEUP_FALLBACK_REVISION=" + r.FallbackRevision,
	}
}

// traceEnv is TRACEPARENT (and TRACESTATE) for a call made under a trace: the W3C trace
// context of the call's span in the environment-variable convention of OpenTelemetry, so
// that a traced command's spans join trueup's trace. Nothing when the call is not sampled.
func traceEnv(ctx context.Context) []string {
	if !trace.SpanContextFromContext(ctx).IsSampled() {
		return nil
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	out := []string{"TRACEPARENT=" + c.Get("traceparent")}
	if ts := c.Get("tracestate"); ts != "" {
		out = append(out, "TRACESTATE="+ts)
	}
	return out
}

func validateWith(with json.RawMessage) error {
	if actions.IsNull(with) {
		return nil
	}
	if !json.Valid(with) {
		return errors.New("with: not valid JSON")
	}
	if b := bytes.TrimSpace(with); b[0] != '{' {
		return errors.New("with: must be a JSON object")
	}
	return nil
}

// wireReply is the stdout document. Unknown fields are ignored (forward compatibility), so
// it is decoded leniently.
type wireReply struct {
	Done         *bool               `json:"done"`
	Outputs      map[string]any      `json:"outputs"`
	State        json.RawMessage     `json:"state"` // nil: absent; "null": clear
	RequeueAfter string              `json:"requeueAfter"`
	Message      string              `json:"message"`
	Conditions   []actions.Condition `json:"conditions"`
	InSync       *bool               `json:"inSync"`
	// Drift and Observed: observe only, when not in sync (whatDrifted); added within v1. Kept
	// as they are until then: another operation's reply, or one in sync, may carry keys of
	// these names of any shape, unread.
	Drift    json.RawMessage `json:"drift"`
	Observed json.RawMessage `json:"observed"`
}

// wireDrift is one drifted field of an observe reply.
type wireDrift struct {
	Path     *string `json:"path"`
	Expected any     `json:"expected"`
	Actual   any     `json:"actual"`
}

// maxDriftPaths bounds the drift list of an observe reply.
const maxDriftPaths = 100

// reply is a checked wireReply.
type reply struct {
	done         bool
	inSync       bool
	requeueAfter time.Duration
	keepState    bool // the reply did not mention state
	state        json.RawMessage
	outputs      map[string]any
	conditions   []actions.Condition
	message      string
	drift        json.RawMessage // unchecked: whatDrifted
	observed     json.RawMessage // unchecked: whatDrifted
}

// parseReply checks stdout against the protocol. Errors do not echo stdout: it may hold
// secrets.
func parseReply(stdout []byte) (reply, error) {
	b := bytes.TrimSpace(stdout)
	if len(b) == 0 {
		return reply{done: true, inSync: true, keepState: true}, nil
	}
	if b[0] != '{' {
		return reply{}, errors.New("stdout: not a JSON object (stdout must be empty or one JSON reply; write logs to stderr)")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // outputs keep their exact digits (64-bit IDs)
	var w wireReply
	if err := dec.Decode(&w); err != nil {
		return reply{}, fmt.Errorf("stdout: invalid reply: %w", err)
	}
	if dec.InputOffset() != int64(len(b)) {
		return reply{}, errors.New("stdout: more than one JSON document (stdout must be empty or one JSON reply; write logs to stderr)")
	}

	r := reply{
		inSync:     w.InSync == nil || *w.InSync,
		outputs:    w.Outputs,
		conditions: w.Conditions,
		message:    w.Message,
		drift:      w.Drift,
		observed:   w.Observed,
	}
	if w.RequeueAfter != "" {
		d, err := time.ParseDuration(w.RequeueAfter)
		if err != nil {
			return reply{}, fmt.Errorf("stdout: requeueAfter: %w", err)
		}
		if d < 0 {
			return reply{}, fmt.Errorf("stdout: requeueAfter %s is negative", w.RequeueAfter)
		}
		r.requeueAfter = d
	}
	switch {
	case w.Done != nil:
		r.done = *w.Done
	default:
		r.done = w.RequeueAfter == ""
	}
	switch {
	case w.State == nil:
		r.keepState = true
	case string(w.State) == "null":
		r.state = nil
	default:
		r.state = w.State
	}
	for i, c := range r.conditions {
		if c.Type == "" {
			return reply{}, fmt.Errorf("stdout: conditions[%d]: type is required", i)
		}
		switch c.Status {
		case "True", "False", "Unknown":
		default:
			return reply{}, fmt.Errorf("stdout: conditions[%d] (%s): status %q is not True, False or Unknown", i, c.Type, c.Status)
		}
	}
	return r, nil
}

// whatDrifted checks what an observe reply not in sync says drifted: drift, a list of at
// most maxDriftPaths paths, each a JSON pointer into the spec; observed, a JSON object (the
// spec as found). Either may be absent or null.
func (r reply) whatDrifted() ([]actions.DriftPath, json.RawMessage, error) {
	var paths []actions.DriftPath
	if !actions.IsNull(r.drift) {
		dec := json.NewDecoder(bytes.NewReader(r.drift))
		dec.UseNumber()
		var w []wireDrift
		if err := dec.Decode(&w); err != nil {
			// Not quoted: stdout may hold secrets.
			return nil, nil, errors.New(`stdout: drift: must be a list of {"path": JSON pointer, "expected": …, "actual": …}`)
		}
		if len(w) > maxDriftPaths {
			return nil, nil, fmt.Errorf("stdout: drift: %d entries; at most %d", len(w), maxDriftPaths)
		}
		for i, d := range w {
			if d.Path == nil {
				return nil, nil, fmt.Errorf("stdout: drift[%d]: path is required", i)
			}
			if jsonptr.Check(*d.Path) != nil {
				return nil, nil, fmt.Errorf(`stdout: drift[%d].path: not a JSON pointer into the spec (it starts with "/", and "~" is written only as ~0 or ~1)`, i)
			}
			paths = append(paths, actions.DriftPath{Path: *d.Path, Expected: d.Expected, Actual: d.Actual})
		}
	}
	var observed json.RawMessage
	if !actions.IsNull(r.observed) {
		if bytes.TrimSpace(r.observed)[0] != '{' {
			return nil, nil, errors.New("stdout: observed: must be a JSON object (the spec as found)")
		}
		observed = r.observed
	}
	return paths, observed, nil
}

// wirePlan is the stdout document of a plan. Unknown fields are ignored, as in wireReply.
type wirePlan struct {
	Changes *bool  `json:"changes"`
	Summary string `json:"summary"`
	Plan    string `json:"plan"`
	// add, change, destroy, replace and hash: optional, added within v1.
	actions.PlanDetails
}

// parsePlan checks a plan's stdout. "changes" is required: a reply without it (empty stdout,
// a reconcile reply such as {"done": true}) comes from a command that did not plan, and
// taking it for "no changes" would show a wrong plan. The counts and the hash are optional
// (actions.PlanDetails); a hash that scrub (the call's secrets) changes is refused. Errors do
// not echo stdout.
func parsePlan(stdout []byte, scrub func(string) string) (actions.Plan, error) {
	b := bytes.TrimSpace(stdout)
	if len(b) == 0 {
		return actions.Plan{}, errors.New(`stdout: empty; a plan reply is a JSON object with "changes" (a command that cannot plan exits with status 64)`)
	}
	if b[0] != '{' {
		return actions.Plan{}, errors.New("stdout: not a JSON object (stdout must be one JSON plan reply; write logs to stderr)")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var w wirePlan
	if err := dec.Decode(&w); err != nil {
		return actions.Plan{}, fmt.Errorf("stdout: invalid plan reply: %w", err)
	}
	if dec.InputOffset() != int64(len(b)) {
		return actions.Plan{}, errors.New("stdout: more than one JSON document (stdout must be one JSON plan reply; write logs to stderr)")
	}
	if w.Changes == nil {
		return actions.Plan{}, errors.New(`stdout: plan reply without "changes" (a command that cannot plan exits with status 64)`)
	}
	p := actions.Plan{Changes: *w.Changes, Summary: w.Summary, Text: w.Plan}
	if err := w.SetOn(&p, scrub); err != nil {
		return actions.Plan{}, fmt.Errorf("stdout: plan reply: %w", err)
	}
	return p, nil
}
