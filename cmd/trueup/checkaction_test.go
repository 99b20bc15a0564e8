package main

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/daemon"
	"github.com/trueup-dev/trueup/internal/manifest"
)

// allowlistConfig declares a gitlab instance that restricts with.ref and with.variables.
const allowlistConfig = `dataDir: /tmp/trueup-test
actions:
  - name: ci
    type: gitlab
    config: {baseURL: "https://gitlab.example.com/", project: infra/db, triggerToken: t, token: u,
      allowedRefs: [main, "release/*"], allowedVariables: [TIER]}
`

// allowlistCases are types' with: against allowlistConfig and the error each gets at ingest
// ("" passes).
var allowlistCases = []struct{ with, want string }{
	{`{ref: release/2.0, variables: {TIER: gold}}`, ""},
	{`{ref: evil}`, `t.yaml:7: spec.action.with.ref: "evil" is not in the action's allowedRefs [main release/*]`},
	{`{variables: {CI_DEBUG_TRACE: "true"}}`, `t.yaml:7: spec.action.with.variables: "CI_DEBUG_TRACE" is not in the action's allowedVariables [TIER]`},
}

// databaseType is a ResourceType file whose spec.action is action (a YAML flow mapping).
func databaseType(action string) string {
	return `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Database}
spec:
  group: db.example.com
  versions: [{name: v1, schema: {type: object}}]
  action: ` + action + "\n"
}

// buildActions parses a controller config and builds its action instances as serve does.
func buildActions(t *testing.T, yaml string) (*config.Config, map[string]actions.Action) {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), t.TempDir(), getenv)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := daemon.Registry()
	if err != nil {
		t.Fatal(err)
	}
	acts, err := daemon.NewActions(cfg, reg, slog.New(slog.DiscardHandler), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { daemon.CloseActions(acts) })
	return cfg, acts
}

// TestIngestRefusesDisallowedWith: with the check serve hands the syncer, a type whose with:
// the action's allowedRefs or allowedVariables do not cover rejects the revision at ingest,
// naming the field, and a type within them passes.
func TestIngestRefusesDisallowedWith(t *testing.T) {
	t.Parallel()
	_, acts := buildActions(t, allowlistConfig)

	for _, tc := range allowlistCases {
		dir := t.TempDir()
		writeTestFile(t, filepath.Join(dir, "t.yaml"), databaseType(`{name: ci, with: `+tc.with+`}`))
		_, err := manifest.NewLoader().LoadDir(dir, manifest.Options{CheckAction: daemon.CheckAction(acts)})
		var verrs manifest.Errors
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("with %s: %v", tc.with, err)
		case tc.want != "" && (!errors.As(err, &verrs) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("with %s: err = %v; want %q", tc.with, err, tc.want)
		}
	}
}
