package actions

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestRegistryFiles: a kind's declared files are listed from its config; a kind that
// declares none, or is unknown, names none; a declaration needs its kind, and comes once.
func TestRegistryFiles(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	factory := func(json.RawMessage, Env) (Action, error) { return nil, nil }
	for _, kind := range []string{"keyed", "plain"} {
		if err := r.Register(kind, factory); err != nil {
			t.Fatal(err)
		}
	}
	keyed := func(config json.RawMessage) ([]string, error) {
		var c struct{ Key string }
		err := json.Unmarshal(config, &c)
		return []string{c.Key}, err
	}
	if err := r.RegisterFiles("missing", keyed); err == nil {
		t.Error("files of an unregistered kind accepted")
	}
	if err := r.RegisterFiles("keyed", nil); err == nil {
		t.Error("nil files function accepted")
	}
	if err := r.RegisterFiles("keyed", keyed); err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterFiles("keyed", keyed); err == nil {
		t.Error("files registered twice accepted")
	}
	if got, err := r.Files("keyed", json.RawMessage(`{"key": "k.pem"}`)); err != nil || !reflect.DeepEqual(got, []string{"k.pem"}) {
		t.Errorf("keyed: %q, %v", got, err)
	}
	for _, kind := range []string{"plain", "unknown"} {
		if got, err := r.Files(kind, json.RawMessage(`{"keyFile": "k.pem"}`)); err != nil || got != nil {
			t.Errorf("%s: %q, %v, want none", kind, got, err)
		}
	}
}
