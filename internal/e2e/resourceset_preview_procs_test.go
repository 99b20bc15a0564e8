//go:build linux

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/commitstatus/forgetest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// queueSet is a ResourceSet of a Queue per team and region; teams is the inputs' flow list.
func queueSet(teams string) string {
	return `apiVersion: trueup.dev/v1
kind: ResourceSet
metadata: {name: team-queues}
spec:
  inputs: ` + teams + `
  matrix: {region: [eu, us]}
  resources:
    - apiVersion: mq.example.com/v1
      kind: Queue
      metadata: {name: "q-<< inputs.team >>-<< inputs.region >>"}
      spec: {size: "<< inputs.size >>"}
`
}

// TestProcsResourceSetPreview: the real binary previews a pull request that adds an input to
// a ResourceSet: the status and the comment show the input's 2 resources to create, and the
// applied state does not move.
func TestProcsResourceSetPreview(t *testing.T) {
	t.Parallel()
	forge := forgetest.New(previewForgeToken, false)
	t.Cleanup(forge.Close)
	w := procSetup(t, pgtest.NewDatabase(t, store.MigrateURL), "0")
	w.source = map[string]any{
		"webhook":      map[string]any{"secret": previewHookSecret},
		"commitStatus": map[string]any{"provider": "github", "token": previewForgeToken, "baseURL": forge.URL + "/", "repo": "acme/infra"},
		"preview":      map[string]any{"enabled": true},
	}
	main := w.commit(map[string]string{"manifests/types.yaml": previewTypes,
		"manifests/queues.yaml": queueSet("[{team: a, size: 1}, {team: b, size: 2}]")}, "queues of teams a and b")
	w.start(1)
	w.waitReady(60*time.Second, map[string]int64{"default/Queue/q-a-eu": 1, "default/Queue/q-a-us": 1, "default/Queue/q-b-eu": 1, "default/Queue/q-b-us": 1})
	applied := previewApplied(w)
	calls := len(w.calls())

	pv := &previewForge{w: w, forge: forge, main: main}
	sha := pv.pr(9, map[string]string{"manifests/queues.yaml": queueSet("[{team: a, size: 1}, {team: b, size: 2}, {team: c, size: 3}]")})
	pv.hook(9, "opened", sha)
	if st := pv.final(sha); st.State != "success" || !strings.Contains(st.Description, "2 to add, 0 to change, 0 to delete") {
		t.Fatalf("status %+v", st)
	}
	cs := forge.Comments()
	if len(cs) != 1 || cs[0].Number != 9 {
		t.Fatalf("comments %+v", cs)
	}
	for _, want := range []string{"2 to add, 0 to change, 0 to delete, 4 unchanged, 0 invalid", "Queue/default/q-c-eu", "Queue/default/q-c-us"} {
		if !strings.Contains(cs[0].Body, want) {
			t.Errorf("comment lacks %q:\n%s", want, cs[0].Body)
		}
	}
	if got := previewApplied(w); got != applied {
		t.Errorf("the applied state moved:\n%s\n%s", applied, got)
	}
	if got := len(w.calls()); got != calls {
		t.Errorf("the action was called %d more times", got-calls)
	}
}
