package preview

import (
	"context"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/sealed/sealedtest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// Encrypted fields are diffed as their markers and never decrypted into a diff or a plan;
// secret references are masked.
func TestCheckSecretsMasked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t, store.SourceConfig{Name: "infra"})
	identity, recipient := sealedtest.Key()
	keys, err := sealed.ParseAgeKeys(identity)
	if err != nil {
		t.Fatal(err)
	}
	files := func(password, ref string) []sources.File {
		plain := "apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: a}\nspec:\n  size: 1\n  password: " + password + "\n"
		enc, err := sealedtest.Encrypt("queues/a.yaml", []byte(plain), "^password$", recipient)
		if err != nil {
			t.Fatal(err)
		}
		b := "apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: b}\nspec:\n  size: 1\n  token: {secretRef: {name: " + ref + ", key: pw}}\n"
		return []sources.File{{Path: "types.yaml", Data: []byte(typeDoc)}, {Path: "queues/a.yaml", Data: enc}, {Path: "queues/b.yaml", Data: []byte(b)}}
	}
	set, err := sealed.Load(manifest.NewLoader(), sealed.NewOpener(keys), files("hunter2-old-value", "db"), manifest.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "infra", Revision: "r1", Set: set}); err != nil {
		t.Fatal(err)
	}
	act := &planner{}
	c := &Checker{Source: "infra", Store: st, Loader: manifest.NewLoader(), Prune: true,
		Actions: map[string]actions.Action{"planner": act}}
	res, _, err := c.Check(ctx, &sources.Snapshot{Revision: "pr", Files: files("hunter2-new-value", "db2")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Change != 2 || len(res.Changes) != 2 {
		t.Fatalf("result %+v", res)
	}
	a, b := res.Changes[0], res.Changes[1]
	if !strings.Contains(a.Diff, `-  "password": "*** sops:`) || !strings.Contains(a.Diff, `+  "password": "*** sops:`) {
		t.Errorf("diff of a:\n%s", a.Diff)
	}
	if !strings.Contains(b.Diff, `-  "token": "*** secretRef db/pw"`) || !strings.Contains(b.Diff, `+  "token": "*** secretRef db2/pw"`) {
		t.Errorf("diff of b:\n%s", b.Diff)
	}
	body := RenderComment(Comment{Source: "infra", HeadSHA: "pr", Result: res})
	act.mu.Lock()
	calls := strings.Join(act.calls, "\n")
	act.mu.Unlock()
	for _, leak := range []string{"hunter2"} {
		if strings.Contains(body, leak) || strings.Contains(a.Plan.Text, leak) || strings.Contains(calls, leak) {
			t.Errorf("%q leaked:\n%s\n%s", leak, body, a.Plan.Text)
		}
	}
}
