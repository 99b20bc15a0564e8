package main

import (
	"context"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/noop"
	"github.com/trueup-dev/trueup/internal/config"
)

// holder is an action whose config holds literal secrets.
type holder struct{ secrets []string }

func (holder) Reconcile(context.Context, actions.Request) (actions.Result, error) {
	return actions.Result{}, nil
}

func (holder) Delete(context.Context, actions.Request) (actions.Result, error) {
	return actions.Result{}, nil
}

func (h holder) Secrets() []string { return h.secrets }

// TestScrubber: ${VAR} values and the literal secrets of every action are replaced, whole
// when one contains another, and in their JSON-escaped form too (outputs are scrubbed as
// encoded JSON, where json.Marshal writes < as \u003c and " as \").
func TestScrubber(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte("dataDir: /tmp/${DATA_SECRET}\n"), "/tmp",
		func(string) string { return "env-secret-123" })
	if err != nil {
		t.Fatal(err)
	}
	plain, err := noop.New(nil, actions.Env{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	scrub := scrubber(cfg, map[string]actions.Action{
		"a": holder{secrets: []string{`pw<&>"q-8d7c`, "env-secret-123-longer"}},
		"b": plain,
	})
	for _, tc := range []struct{ in, want string }{
		{"dir /tmp/env-secret-123", "dir /tmp/***"},
		{"token env-secret-123-longer", "token ***"},
		{`raw pw<&>"q-8d7c`, "raw ***"},
		{`{"out":"pw\u003c\u0026\u003e\"q-8d7c"}`, `{"out":"***"}`},
		{"nothing secret here", "nothing secret here"},
	} {
		if got := scrub(tc.in); got != tc.want {
			t.Errorf("scrub(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
