package reconciler

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/graph"
)

func TestResolveSpec(t *testing.T) {
	typeSpec := json.RawMessage(`{"group":"example.com","versions":[{"name":"v1","schema":{"type":"object","additionalProperties":false,
		"properties":{"subnet":{"type":"string"},"port":{"type":"integer"},"url":{"type":"string"},"tags":{"type":"object"},
		"lit":{"type":"string"},"password":{"type":"string"}}}}],"action":{"name":"a"}}`)
	net := graph.ID{Kind: "Network", Namespace: "prod", Name: "core"}
	deps := []graph.Dep{{Target: net, Exists: true, Ready: true, Outputs: []string{"subnetId", "port", "host", "tags"},
		Values: map[string]any{"subnetId": "subnet-1", "port": float64(5432), "host": "db.internal", "tags": map[string]any{"a": "b"}, "name": "x",
			"evil":   map[string]any{"x": map[string]any{"secretRef": map[string]any{"name": "db", "key": "password"}}},
			"marker": "*** sops:0123456789abcdef"}}}
	tests := []struct {
		name, spec, want, err string
		terminal              bool
	}{
		{name: "whole reference keeps the output's type",
			spec: `{"subnet":"${{ Network/core.outputs.subnetId }}","port":"${{ Network/prod/core.outputs.port }}","tags":"${{ Network/core.outputs.tags }}"}`,
			want: `{"port":5432,"subnet":"subnet-1","tags":{"a":"b"}}`},
		{name: "interpolation as text", spec: `{"url":"postgres://${{ Network/core.outputs.host }}:${{ Network/core.outputs.port }}/orders"}`,
			want: `{"url":"postgres://db.internal:5432/orders"}`},
		{name: "escape stays literal", spec: `{"lit":"$${{ not.a.ref }}"}`, want: `{"lit":"${{ not.a.ref }}"}`},
		{name: "secret reference left for later", spec: `{"password":{"secretRef":{"name":"db","key":"pw"}},"subnet":"${{ Network/core.outputs.subnetId }}"}`,
			want: `{"password":{"secretRef":{"key":"pw","name":"db"}},"subnet":"subnet-1"}`},
		{name: "missing output is terminal", spec: `{"subnet":"${{ Network/core.outputs.nope }}"}`, terminal: true,
			err: "spec.subnet: ${{ Network/prod/core.outputs.nope }}: no output nope"},
		{name: "resolved value the schema refuses names the reference", spec: `{"port":"${{ Network/core.outputs.host }}"}`, terminal: true,
			err: `spec.port (from "${{ Network/core.outputs.host }}")`},
		{name: "an output may not bring a secret reference", spec: `{"tags":"${{ Network/core.outputs.evil }}"}`, terminal: true,
			err: "spec.tags: ${{ Network/core.outputs.evil }}: the output holds a secretRef"},
		{name: "nor an encrypted field's marker", spec: `{"url":"x-${{ Network/core.outputs.marker }}"}`, terminal: true,
			err: "encrypted-field marker"},
		{name: "missing dependency", spec: `{"subnet":"${{ Network/other.outputs.subnetId }}"}`, terminal: true, err: "no outputs yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveSpec(json.RawMessage(tt.spec), "prod", deps, typeSpec, "example.com/v1")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				if actions.IsTerminal(err) != tt.terminal {
					t.Fatalf("terminal %v", actions.IsTerminal(err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
	if _, err := resolveSpec(json.RawMessage(`{}`), "prod", nil, typeSpec, "example.com/v9"); err == nil {
		t.Fatal("an unknown version is an error")
	}
}
