package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/config"
)

// token create prints the token, a config snippet that parses as it stands, and that the
// controller takes it after a restart (a reload refuses a changed auth: block).
func TestTokenCreateSaysWhatToDo(t *testing.T) {
	t.Parallel()
	out, _, err := runCLI(t, "token", "create", "ci-bot", "--role", "operator", "-n", "staging")
	if err != nil {
		t.Fatal(err)
	}
	masked := regexp.MustCompile(`tu_[A-Za-z0-9_-]{43}`).ReplaceAllString(out, "TOKEN")
	masked = regexp.MustCompile(`sha256: "[0-9a-f]{64}"`).ReplaceAllString(masked, `sha256: "SUM"`)
	const want = `Token ci-bot (shown once, store it now):

    TOKEN

Add it under auth.tokens in the controller config (create the auth: block if there is none):

    auth:
      tokens:
        - {name: "ci-bot", sha256: "SUM", role: operator, namespaces: ["staging"]}

Then restart trueup: auth: is read only at start, and a reload (SIGHUP or
POST /api/v1/admin/reload) refuses a changed auth: block. Once auth: exists, callers without a
token get 401 unless auth.anonymous gives them a role (e.g. anonymous: viewer).
`
	if masked != want {
		t.Errorf("token create printed:\n%s\nwant:\n%s", masked, want)
	}
	// The snippet, pasted as it is printed, is a valid auth: block.
	start, end := strings.Index(out, "    auth:\n"), strings.Index(out, "\n\nThen restart")
	if start < 0 || end < start {
		t.Fatalf("no snippet in:\n%s", out)
	}
	var snippet strings.Builder
	for _, l := range strings.Split(out[start:end], "\n") {
		snippet.WriteString(strings.TrimPrefix(l, "    ") + "\n")
	}
	cfg, err := config.Parse([]byte(snippet.String()), ".", func(string) string { return "" })
	if err != nil {
		t.Fatalf("snippet does not parse: %v\n%s", err, snippet.String())
	}
	if cfg.Auth == nil || len(cfg.Auth.Tokens) != 1 || cfg.Auth.Tokens[0].Role != "operator" {
		t.Errorf("snippet parses to auth %+v", cfg.Auth)
	}
}
