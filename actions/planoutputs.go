package actions

import (
	"encoding/json"
	"errors"
	"fmt"
)

// PlanFromOutputs reads a plan published as outputs by a remote run (the github-actions and
// gitlab kinds' trueup-outputs artifact): {"changes": bool, "summary": string, "plan":
// string}, changes required, and the optional PlanDetails ("add", "change", "destroy",
// "replace", "hash"). scrub is the plugin's scrubber of the call's and the instance's
// secrets: a hash holding one is refused (PlanDetails.SetOn).
func PlanFromOutputs(out map[string]any, scrub func(string) string) (Plan, error) {
	var p Plan
	changes, ok := out["changes"].(bool)
	if !ok {
		return p, errors.New(`want a boolean "changes"`)
	}
	p.Changes = changes
	for _, f := range []struct {
		key string
		dst *string
	}{{"summary", &p.Summary}, {"plan", &p.Text}} {
		switch v := out[f.key].(type) {
		case nil:
		case string:
			*f.dst = v
		default:
			return p, fmt.Errorf("%q is not a string", f.key)
		}
	}
	var d PlanDetails
	for _, f := range []struct {
		key string
		dst *json.RawMessage
	}{{"add", &d.Add}, {"change", &d.Change}, {"destroy", &d.Destroy}, {"replace", &d.Replace}, {"hash", &d.Hash}} {
		if v, ok := out[f.key]; ok {
			b, err := json.Marshal(v)
			if err != nil {
				return p, fmt.Errorf("%q: %w", f.key, err)
			}
			*f.dst = b
		}
	}
	return p, d.SetOn(&p, scrub)
}
