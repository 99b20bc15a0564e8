package reconciler

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"

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
// logged or shown: message, error, conditions, drift, outputs and state. stored scrubs the
// call's own values together with the kept secrets (Registry.KeptWith), so that a kept secret
// quoting one of the call's values goes whole from the text a result stores; the state, which
// only drops the call's own values, goes through own. JSON is scrubbed in its strings (keys
// too) and numbers (numbers, the check against the call's values) and encoded again, so
// state and outputs stay valid whatever a secret looks like.
func scrubAttempt(a *attempt, stored, own func(string) string, numbers *actions.Numbers) {
	a.err = actions.ScrubError(a.err, stored)
	a.res.Message = stored(a.res.Message)
	a.drift = stored(a.drift)
	for i := range a.res.Conditions {
		a.res.Conditions[i].Message = stored(a.res.Conditions[i].Message)
		a.res.Conditions[i].Reason = stored(a.res.Conditions[i].Reason)
	}
	a.res.State = scrubJSON(a.res.State, own, numbers)
	a.res.Outputs = scrubOutputs(a.res.Outputs, stored, numbers)
	if a.gate != nil {
		a.gate.scrub(stored)
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
		a.res.Conditions[i].Reason = scrub(a.res.Conditions[i].Reason)
	}
	if a.gate != nil {
		a.gate.scrub(scrub)
	}
}

// scrubOutputs scrubs a plugin's outputs as the JSON they are stored as: whatever Go values
// the plugin built (float64, int, []string, structs), they are scrubbed as they will read.
// Outputs that do not encode are returned as they are (boundOutputs replaces them).
func scrubOutputs(out map[string]any, scrub func(string) string, numbers *actions.Numbers) map[string]any {
	if out == nil {
		return nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return out
	}
	return scrubEncodedOutputs(out, b, scrub, numbers)
}

// scrubEncodedOutputs is scrubOutputs for outputs already encoded as b.
func scrubEncodedOutputs(out map[string]any, b []byte, scrub func(string) string, numbers *actions.Numbers) map[string]any {
	clean := scrubJSON(b, scrub, numbers)
	if bytes.Equal(clean, b) {
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(clean))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return map[string]any{"error": "outputs held a secret and were not stored"}
	}
	return m
}

// scrubJSON scrubs the strings and numbers of an encoded JSON value; one with nothing to
// scrub is kept byte for byte. A value that does not decode is scrubbed as text (it is
// stored as the plugin sent it).
func scrubJSON(v json.RawMessage, scrub func(string) string, numbers *actions.Numbers) json.RawMessage {
	if len(v) == 0 || numbers.Clean(v) {
		return v
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return json.RawMessage(scrub(string(v)))
	}
	clean := actions.ScrubValue(x, scrub, numbers)
	if reflect.DeepEqual(clean, x) {
		return v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(clean); err != nil {
		return json.RawMessage(`{"error":"state held a secret and was not stored"}`)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}
