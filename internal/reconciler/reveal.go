package reconciler

import (
	"bytes"
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
// logged or shown: message, error, conditions, drift, outputs and state. JSON is scrubbed in
// its strings (keys too) and encoded again, so state and outputs stay valid whatever a secret
// looks like.
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
		if clean, ok := scrubValue(map[string]any(a.res.Outputs), scrub).(map[string]any); ok {
			a.res.Outputs = clean
		}
	}
}

// scrubMessages scrubs the messages of an attempt (not its outputs or state, which are the
// action's results): history and events are read in the resource's namespace, and a plugin
// error may quote a value the call took from another namespace.
func scrubMessages(a *attempt, scrub func(string) string) {
	a.err = actions.ScrubError(a.err, scrub)
	a.res.Message = scrub(a.res.Message)
	a.drift = scrub(a.drift)
	for i := range a.res.Conditions {
		a.res.Conditions[i].Message = scrub(a.res.Conditions[i].Message)
	}
}

// scrubJSON scrubs the strings of an encoded JSON value. A value that does not decode is
// scrubbed as text (it is stored as the plugin sent it).
func scrubJSON(v json.RawMessage, scrub func(string) string) json.RawMessage {
	if len(v) == 0 {
		return v
	}
	if s := scrub(string(v)); s == string(v) {
		return v // nothing to scrub: kept byte for byte
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return json.RawMessage(scrub(string(v)))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(scrubValue(x, scrub)); err != nil {
		return json.RawMessage(`{"error":"state held a secret and was not stored"}`)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

// scrubValue scrubs every string and key of a decoded JSON value.
func scrubValue(v any, scrub func(string) string) any {
	switch x := v.(type) {
	case string:
		return scrub(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[scrub(k)] = scrubValue(e, scrub)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = scrubValue(e, scrub)
		}
		return out
	}
	return v
}
