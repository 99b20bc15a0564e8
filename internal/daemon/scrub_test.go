package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
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

// TestRedactor: ${VAR} values and the literal secrets of every action are replaced, whole
// when one contains another, and in their JSON-escaped form too (outputs are scrubbed as
// encoded JSON, where json.Marshal writes < as \u003c and " as \").
func TestRedactor(t *testing.T) {
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
	scrub := Redactor(cfg, map[string]actions.Action{
		"a": holder{secrets: []string{`pw<&>"q-8d7c`, "env-secret-123-longer"}},
		"b": plain,
	}).Scrub
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

// TestLogLinesAreScrubbed: every record through the log sink of serve and migrate is scrubbed,
// with the secrets known when it is written (the actions' literal ones once they are built).
func TestLogLinesAreScrubbed(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte("dataDir: /tmp/${DATA_SECRET}\nlog: {format: json}\n"), "/tmp",
		func(string) string { return "env-secret-123" })
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	secrets := Redactor(cfg, nil)
	logger := NewLogger(cfg, secrets.Writer(&buf))
	logger.Warn("clone failed", "err", errors.New(`get https://x:env-secret-123@git.example.com/: "pw<q-8d7c" refused`))
	secrets.Add(secretsOf(cfg, map[string]actions.Action{"a": holder{secrets: []string{`pw<q-8d7c`}}})...)
	logger.Warn("clone failed", "err", errors.New(`get https://x:env-secret-123@git.example.com/: "pw<q-8d7c" refused`))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines:\n%s", len(lines), buf.String())
	}
	if strings.Contains(lines[0], "env-secret-123") || !strings.Contains(lines[0], "x:***@") {
		t.Errorf("first line: %s", lines[0])
	}
	if strings.Contains(lines[1], "env-secret-123") || strings.Contains(lines[1], "8d7c") {
		t.Errorf("second line: %s", lines[1])
	}
}

// TestLiteralPluginSecretsAreScrubbed: credentials written as literals in the config of the
// http, gitlab and github-actions instances (no ${VAR}) are scrubbed by the controller from
// any plugin's message or outputs, as the exec instance's literal secrets are.
func TestLiteralPluginSecretsAreScrubbed(t *testing.T) {
	t.Parallel()
	literals := []string{"lit-http-token-1a2b", "X-Api-lit-key-3c4d", "lit-sign-secret-5e6f", "lit-trigger-7a8b",
		"glpat-lit-api-9c0d", "ghp_litToken0123456789"}
	cfg, acts := buildActions(t, `dataDir: /tmp/trueup-test
actions:
  - name: hook
    type: http
    config: {url: "https://prov.example.com/", headers: {Authorization: "Bearer lit-http-token-1a2b", X-Api-Key: "X-Api-lit-key-3c4d"},
      signingSecret: lit-sign-secret-5e6f}
  - name: ci
    type: gitlab
    config: {baseURL: "https://gitlab.example.com/", project: infra/db, triggerToken: lit-trigger-7a8b, token: glpat-lit-api-9c0d}
  - name: gh
    type: github-actions
    config: {token: ghp_litToken0123456789, owner: acme, repo: infra, workflow: deploy.yml}
  - name: short
    type: gitlab
    config: {baseURL: "https://gitlab.example.com/", project: infra/db, triggerToken: t, token: u}
`)
	scrub := Redactor(cfg, acts).Scrub
	for _, v := range literals {
		outputs, _ := json.Marshal(map[string]any{"echo": "seen <" + v + ">"})
		for _, in := range []string{"the server said: " + v, string(outputs)} {
			if got := scrub(in); strings.Contains(got, v) || !strings.Contains(got, "***") {
				t.Errorf("scrub(%q) = %q", in, got)
			}
		}
	}
	// A short literal is not handed over: scrubbing "t" everywhere would mangle every message.
	if got := scrub("it ran: ok"); got != "it ran: ok" {
		t.Errorf("scrub mangled a plain message: %q", got)
	}
}

// buildActions parses a controller config and builds its action instances as Start does.
func buildActions(t *testing.T, yaml string) (*config.Config, map[string]actions.Action) {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), t.TempDir(), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := Registry()
	if err != nil {
		t.Fatal(err)
	}
	acts, err := NewActions(cfg, reg, slog.New(slog.DiscardHandler), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { CloseActions(acts) })
	return cfg, acts
}
