package reconciler

import (
	"context"
	"encoding/json"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/store"
)

// Reveal returns the spec an action is called with: the stored one with every secret put
// back (SOPS-encrypted fields decrypted, secretRef values resolved), and those secrets,
// which are scrubbed from everything the call returns. It runs right before each call, and
// what it returns lives only for that call. A terminal error (actions.Terminal) stalls the
// resource; any other is retried with backoff.
type Reveal func(ctx context.Context, c store.Claimed) (spec json.RawMessage, secrets []string, err error)

// scrubAttempt removes a call's secrets from everything the plugin returned that is stored,
// logged or shown: message, error, conditions, drift, outputs and state.
func scrubAttempt(a *attempt, scrub func(string) string) {
	a.err = actions.ScrubError(a.err, scrub)
	a.res.Message = scrub(a.res.Message)
	a.drift = scrub(a.drift)
	for i := range a.res.Conditions {
		a.res.Conditions[i].Message = scrub(a.res.Conditions[i].Message)
		a.res.Conditions[i].Reason = scrub(a.res.Conditions[i].Reason)
	}
	a.res.State = scrubJSON(a.res.State, scrub)
	if a.res.Outputs != nil {
		b, err := json.Marshal(a.res.Outputs)
		if err != nil {
			return // boundOutputs reports it
		}
		if s := scrub(string(b)); s != string(b) {
			var clean map[string]any
			if json.Unmarshal([]byte(s), &clean) != nil {
				clean = map[string]any{"error": "outputs held a secret and were not stored"}
			}
			a.res.Outputs = clean
		}
	}
}

// scrubJSON scrubs an encoded JSON value; a value that no longer decodes after scrubbing
// is dropped rather than stored with the secret.
func scrubJSON(v json.RawMessage, scrub func(string) string) json.RawMessage {
	if len(v) == 0 {
		return v
	}
	s := scrub(string(v))
	if s == string(v) {
		return v
	}
	if !json.Valid([]byte(s)) {
		return json.RawMessage(`{"error":"state held a secret and was not stored"}`)
	}
	return json.RawMessage(s)
}
