package graph

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestWaiting(t *testing.T) {
	net := ID{"Network", "prod", "core"}
	db := ID{"Database", "prod", "orders"}
	tests := []struct {
		name string
		deps []Dep
		want string
	}{
		{"none", nil, ""},
		{"all ready", []Dep{{Target: net, Exists: true, Ready: true}}, ""},
		{"missing", []Dep{{Target: net}}, "waiting for Network/prod/core (not found)"},
		{"failed with message", []Dep{{Target: net, Exists: true, Phase: "Failed", Message: "quota exceeded"}, {Target: db, Exists: true, Ready: true}},
			"waiting for Network/prod/core (Failed: quota exceeded)"},
		{"reconciling", []Dep{{Target: db, Exists: true, Phase: "Reconciling", Message: "busy"}}, "waiting for Database/prod/orders (Reconciling)"},
		{"deleting", []Dep{{Target: db, Exists: true, Phase: "Deleting"}}, "waiting for Database/prod/orders (being deleted)"},
	}
	for _, tt := range tests {
		if got := Waiting("prod", tt.deps); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	var many []Dep
	for i := range 7 {
		many = append(many, Dep{Target: ID{"K", "ns", fmt.Sprint(i)}})
	}
	if got := Waiting("ns", many); !strings.HasSuffix(got, "K/ns/4 (not found) and 2 more") {
		t.Errorf("many: %q", got)
	}
	if got := WaitingForDependents([]ID{{"App", "prod", "web"}}, 1, 1); got != "waiting for dependents to be deleted first: App/prod/web" {
		t.Errorf("dependents: %q", got)
	}
	if got := WaitingForDependents([]ID{{"App", "prod", "web"}}, 7, 9); got != "waiting for dependents to be deleted first: App/prod/web and 6 more and 2 in other namespaces" {
		t.Errorf("dependents: %q", got)
	}
	if got := WaitingForDependents(nil, 0, 3); got != "waiting for dependents to be deleted first: 3 in other namespaces" {
		t.Errorf("dependents elsewhere: %q", got)
	}
	// Another namespace's dependency tells nothing of its state.
	if got := Waiting("app", []Dep{{Target: ID{"Database", "data", "orders"}, Exists: true, Phase: "Failed", Message: "quota"}, {Target: ID{"Database", "data", "gone"}}}); got != "waiting for Database/data/orders (not Ready), Database/data/gone (not Ready)" {
		t.Errorf("other namespace: %q", got)
	}
	if got := WaitingForDependents(nil, 0, 0); got != "" {
		t.Errorf("no dependents: %q", got)
	}
}

func TestInputs(t *testing.T) {
	net := ID{"Network", "prod", "core"}
	dep := func(vals map[string]any, paths ...string) []Dep {
		return []Dep{{Target: net, Exists: vals != nil, Ready: true, Outputs: paths, Values: vals},
			{Target: ID{"Plain", "prod", "x"}, Exists: true, Ready: true}}
	}
	a := InputsOf(dep(map[string]any{"subnet": "s-1", "other": 1}, "subnet"))
	if len(a) != 1 {
		t.Fatalf("inputs %v: only referenced dependencies count", a)
	}
	tests := []struct {
		name    string
		now     Inputs
		changed []string
	}{
		{"same value", InputsOf(dep(map[string]any{"subnet": "s-1", "other": 1}, "subnet")), nil},
		{"unreferenced output changed", InputsOf(dep(map[string]any{"subnet": "s-1", "other": 2}, "subnet")), nil},
		{"referenced output changed", InputsOf(dep(map[string]any{"subnet": "s-2"}, "subnet")), []string{"Network/prod/core"}},
		{"output gone", InputsOf(dep(map[string]any{}, "subnet")), []string{"Network/prod/core"}},
		{"dependency gone", InputsOf(dep(nil, "subnet")), []string{"Network/prod/core"}},
	}
	for _, tt := range tests {
		if got := Changed(a, tt.now); !reflect.DeepEqual(got, tt.changed) {
			t.Errorf("%s: changed %v, want %v", tt.name, got, tt.changed)
		}
	}
	if Changed(nil, a) != nil {
		t.Error("a dependent that never ran re-runs nothing")
	}
	if got := DecodeInputs(a.Encode()); !reflect.DeepEqual(got, a) {
		t.Errorf("round trip %v != %v", got, a)
	}
	if InputsOf(nil).Encode() != "" || DecodeInputs("garbage") != nil {
		t.Error("empty inputs")
	}
	nested := InputsOf(dep(map[string]any{"db": map[string]any{"host": "h", "port": 5432}}, "db.host"))
	moved := InputsOf(dep(map[string]any{"db": map[string]any{"host": "h", "port": 5433}}, "db.host"))
	if Changed(nested, moved) != nil {
		t.Error("a nested path compares only its own value")
	}
	if !IsReady("Ready", 2, 2, false) || IsReady("Ready", 3, 2, false) || IsReady("Ready", 2, 2, true) || IsReady("Failed", 1, 1, false) {
		t.Error("IsReady")
	}
}
