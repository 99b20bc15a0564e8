package ghactions

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"
)

// Operations, sent as the "operation" input.
const (
	opReconcile = "reconcile"
	opDelete    = "delete"
	opCheck     = "check"
	opPlan      = "plan"
)

// Phases of the State's run handle.
const (
	// phaseDispatching: the intent is recorded (Request.Checkpoint) and the dispatch may or
	// may not have reached GitHub. The next call looks for the run by correlation id and
	// adopts it; it dispatches again (new id) only after adoptGrace without a run.
	phaseDispatching = "dispatching"
	// phaseDispatched: GitHub accepted the dispatch without naming the run (204); the run
	// is found by correlation id.
	phaseDispatched = "dispatched"
	// phaseRunning: the run id is known; it is polled.
	phaseRunning = "running"
	// phaseCompleted: the run succeeded; Outputs holds what Reconcile reported.
	phaseCompleted = "completed"
	// phaseFailed: the run concluded without success; the next call dispatches again.
	phaseFailed = "failed"
)

// state is the plugin's Result.State: the handle of the latest run for the resource. It
// holds no credentials.
type state struct {
	Op           string          `json:"op"`
	Phase        string          `json:"phase"`
	Generation   int64           `json:"generation"`
	Workflow     string          `json:"workflow"`
	Correlation  string          `json:"correlation"`
	DispatchedAt time.Time       `json:"dispatchedAt"`
	RunID        int64           `json:"runID,omitempty"`
	RunURL       string          `json:"runURL,omitempty"`
	ETag         string          `json:"etag,omitempty"`
	Supersedes   int64           `json:"supersedes,omitempty"`
	Conclusion   string          `json:"conclusion,omitempty"`
	Outputs      json.RawMessage `json:"outputs,omitempty"`
}

// inFlight reports whether the state names a run that may still be going.
func (s state) inFlight() bool {
	switch s.Phase {
	case phaseDispatching, phaseDispatched, phaseRunning:
		return true
	}
	return false
}

// decodeState reads a previous Result.State; nil and null give the zero state.
func decodeState(raw json.RawMessage) (state, error) {
	var s state
	if len(raw) == 0 || string(raw) == "null" {
		return s, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return state{}, err
	}
	if s.Op == "" && s.Phase != "" {
		s.Op = opReconcile
	}
	return s, nil
}

// encode returns the state as JSON, or nil for the zero state.
func (s state) encode() json.RawMessage {
	if s.Phase == "" {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		// Every field marshals; this cannot happen.
		panic("ghactions: encode state: " + err.Error())
	}
	return b
}

// newCorrelation returns a fresh trueup_id: unique per dispatch, short enough for run-name.
func newCorrelation() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return "trueup-" + hex.EncodeToString(b[:])
}
