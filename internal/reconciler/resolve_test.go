package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/store"
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

// TestResolveOrigins: resolving records which paths took values from another namespace, and
// from which; those values are what the call's messages are scrubbed of, and a schema error
// about one does not quote it.
func TestResolveOrigins(t *testing.T) {
	typeSpec := json.RawMessage(`{"group":"example.com","versions":[{"name":"v1","schema":{"type":"object",
		"properties":{"port":{"type":"integer"},"enum":{"type":"string","enum":["a"]}}}}],"action":{"name":"a"}}`)
	prod := graph.ID{Kind: "Db", Namespace: "production", Name: "orders"}
	local := graph.ID{Kind: "Net", Namespace: "staging", Name: "core"}
	deps := []graph.Dep{
		{Target: prod, Exists: true, Ready: true, Outputs: []string{"host", "port", "conn"},
			Values: map[string]any{"host": "prod-host.internal", "port": float64(5432), "conn": map[string]any{"user": "produser", "tls": true}, "password": "pw-Zx81sQ"}},
		{Target: local, Exists: true, Ready: true, Outputs: []string{"cidr"}, Values: map[string]any{"cidr": "10.0.0.0/16"}},
	}
	tests := []struct {
		name, spec string
		origins    string
		foreign    []string
		err        string
	}{
		{name: "same namespace only", spec: `{"net":"${{ Net/core.outputs.cidr }}"}`, origins: "map[]"},
		{name: "a whole reference and an interpolation", spec: `{"a":{"h":"${{ Db/production/orders.outputs.host }}"},"url":"pg://${{ Db/production/orders.outputs.host }}:${{ Net/core.outputs.cidr }}","net":"${{ Net/core.outputs.cidr }}"}`,
			origins: "map[spec.a.h:[production] spec.url:[production]]", foreign: []string{"prod-host.internal", "pg://prod-host.internal:10.0.0.0/16"}},
		{name: "an object: its leaves, short ones not", spec: `{"list":["x","${{ Db/production/orders.outputs.conn }}"]}`,
			origins: "map[spec.list[1]:[production]]", foreign: []string{"produser"}},
		{name: "a value spliced into a string, on its own too", spec: `{"dsn":"postgres://app:${{ Db/production/orders.outputs.password }}@db:${{ Db/production/orders.outputs.port }}/x"}`,
			origins: "map[spec.dsn:[production]]", foreign: []string{"5432", "postgres://app:pw-Zx81sQ@db:5432/x", "pw-Zx81sQ"}},
		{name: "a number", spec: `{"port":"${{ Db/production/orders.outputs.port }}"}`, origins: "map[spec.port:[production]]", foreign: []string{"5432"}},
		{name: "a schema error does not quote the foreign value", spec: `{"enum":"${{ Db/production/orders.outputs.host }}"}`,
			err: `spec.enum (from "${{ Db/production/orders.outputs.host }}")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := resolveOrigins(json.RawMessage(tt.spec), "staging", deps, typeSpec, "example.com/v1")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "prod-host.internal") {
					t.Fatalf("err %v, want %q without the value", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(res.origins); got != tt.origins {
				t.Errorf("origins %s, want %s", got, tt.origins)
			}
			slices.Sort(res.foreign)
			slices.Sort(tt.foreign)
			if !slices.Equal(res.foreign, tt.foreign) {
				t.Errorf("foreign %q, want %q", res.foreign, tt.foreign)
			}
		})
	}
}

// TestForeignIn: a delete is called with the stored resolved spec; the values at its foreign
// paths, and each value spliced into a foreign string, are what its messages are scrubbed of.
func TestForeignIn(t *testing.T) {
	tests := []struct {
		name, spec, resolved string
		origins              map[string][]string
		want                 []string
	}{
		{name: "none", spec: `{"a":"x"}`, resolved: `{"a":"x"}`},
		{name: "a whole value", spec: `{"h":"${{ Db/production/o.outputs.host }}","n":"${{ Net/core.outputs.cidr }}"}`,
			resolved: `{"h":"prod-host.internal","n":"10.0.0.0/16"}`, origins: map[string][]string{"spec.h": {"production"}},
			want: []string{"prod-host.internal"}},
		{name: "an object's leaves, short ones not", spec: `{"c":["${{ Db/production/o.outputs.conn }}"]}`,
			resolved: `{"c":[{"user":"produser","port":5432,"tls":true,"db":"x"}]}`, origins: map[string][]string{"spec.c[0]": {"production"}},
			want: []string{"5432", "produser"}},
		{name: "spliced values", spec: `{"dsn":"postgres://${{ Net/core.outputs.user }}:${{ Db/production/o.outputs.password }}@db/x"}`,
			resolved: `{"dsn":"postgres://stageuser:pw-Zx81sQ@db/x"}`, origins: map[string][]string{"spec.dsn": {"production"}},
			want: []string{"postgres://stageuser:pw-Zx81sQ@db/x", "pw-Zx81sQ"}},
		{name: "a spec changed since: the whole string only", spec: `{"dsn":"mysql://${{ Db/production/o.outputs.password }}"}`,
			resolved: `{"dsn":"postgres://pw-Zx81sQ@db"}`, origins: map[string][]string{"spec.dsn": {"production"}},
			want: []string{"postgres://pw-Zx81sQ@db"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := foreignIn(json.RawMessage(tt.spec), json.RawMessage(tt.resolved), "staging", tt.origins)
			if !slices.Equal(got, tt.want) {
				t.Errorf("foreignIn %q, want %q", got, tt.want)
			}
		})
	}
}

func TestClaimDepsUsable(t *testing.T) {
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		read bool
		now  time.Time
		want bool
	}{
		{"read, call at once", true, at, true},
		{"read, call at the bound", true, at.Add(depsFresh), true},
		{"read, call after waiting in the queue", true, at.Add(depsFresh + time.Millisecond), false},
		{"not read by the claim", false, at, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := claimDepsUsable(tt.read, at, tt.now); got != tt.want {
				t.Fatalf("claimDepsUsable(%v, %s) = %v", tt.read, tt.now.Sub(at), got)
			}
		})
	}
}

// A call started at once resolves from the dependencies its claim read: the reconciler has
// no store here, and a read of its own would fail.
func TestResolveFromTheClaimsDeps(t *testing.T) {
	r := newTestReconciler()
	typeSpec := json.RawMessage(`{"group":"example.com","versions":[{"name":"v1","schema":{"type":"object",
		"properties":{"subnet":{"type":"string"}}}}],"action":{"name":"a"}}`)
	net := graph.ID{Kind: "Network", Namespace: "prod", Name: "core"}
	c := store.Claimed{ID: 7, Namespace: "prod", Kind: "Database", Name: "db", APIVersion: "example.com/v1", HasDeps: true, TypeSpec: typeSpec,
		Spec:     json.RawMessage(`{"subnet":"${{ Network/core.outputs.subnetId }}"}`),
		Deps:     []graph.Dep{{Target: net, Exists: true, Ready: true, Outputs: []string{"subnetId"}, Values: map[string]any{"subnetId": "subnet-9"}}},
		DepsRead: true}
	spec, res, _, err := r.resolve(context.Background(), c, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if string(spec) != `{"subnet":"subnet-9"}` || res == nil || res.Inputs != graph.InputsOf(c.Deps).Encode() {
		t.Fatalf("resolved %s, %+v", spec, res)
	}
}
