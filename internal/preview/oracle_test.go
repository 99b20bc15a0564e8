package preview

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/sealed/sealedtest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// A pull request (from a fork) that keeps the repository's encrypted file as it is and only
// edits the ResourceType must not read the value through rules: one rule per (position,
// character) would spell it out in the comment if rules saw the plaintext, as they do when
// the value is in plaintext (the control).
func TestPreviewRulesCannotReadEncryptedValues(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, store.SourceConfig{Name: "infra"})
	_, recipient := sealedtest.Key()
	secret := "s3cretXY"
	plain := "apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: a}\nspec:\n  size: 1\n  password: " + secret + "\n"
	enc, err := sealedtest.Encrypt("queues/a.yaml", []byte(plain), "^password$", recipient)
	if err != nil {
		t.Fatal(err)
	}
	// The attacker's type: one rule per (position, character).
	var rules []string
	alphabet := "s3cretXYabz"
	for i := 0; i < 8; i++ {
		for _, ch := range alphabet {
			rules = append(rules, fmt.Sprintf("{rule: \"self.password.substring(%d, %d) != '%c'\", message: \"pos %d is %c\"}", i, i+1, ch, i, ch))
		}
	}
	evilType := manifesttest.TypeDoc("Queue", "mq.example.com", `{type: object, properties: {size: {type: integer}, password: {type: string}},
        x-trueup-validations: [`+strings.Join(rules, ", ")+`]}`, "planner")
	c := &Checker{Source: "infra", Store: st, Loader: manifest.NewLoader(), Prune: true,
		Actions: map[string]actions.Action{"planner": &planner{}}}
	// spelled checks the pull request with the queue's file as file: the value the rules
	// spell out in the comment, and the errors.
	spelled := func(file []byte) (string, []Error) {
		t.Helper()
		res, _, err := c.Check(ctx, &sources.Snapshot{Revision: "pr", Files: []sources.File{{Path: "types.yaml", Data: []byte(evilType)}, {Path: "queues/a.yaml", Data: file}}})
		if err != nil {
			t.Fatal(err)
		}
		body := RenderComment(Comment{Source: "infra", HeadSHA: "pr", Result: res})
		got := make([]byte, 8)
		for _, e := range res.Errors {
			var i int
			var ch byte
			if _, err := fmt.Sscanf(e.Message, "pos %d is %c", &i, &ch); err == nil && strings.Contains(body, e.Message) {
				got[i] = ch
			}
		}
		return string(got), res.Errors
	}
	// The control: with the value in plaintext, the rules load and spell it out.
	if got, errs := spelled([]byte(plain)); got != secret {
		t.Fatalf("the attacker's rules on a plaintext value spelled %q, want %q: %+v", got, secret, errs)
	}
	if got, errs := spelled(enc); len(errs) != 0 || strings.ContainsAny(got, alphabet) {
		t.Errorf("the rules judged the encrypted value: %d errors, recovered %q: %+v", len(errs), got, errs)
	}
}

// Transition rules compare with the applied spec as stored: its encrypted fields are
// markers, unknown to the rules, never the revealed values.
func TestPreviewTransitionRulesCannotReadAppliedSecrets(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, store.SourceConfig{Name: "infra"})
	identity, recipient := sealedtest.Key()
	keys, _ := sealed.ParseAgeKeys(identity)
	plain := "apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: a}\nspec:\n  size: 1\n  password: hunter2\n"
	enc, err := sealedtest.Encrypt("queues/a.yaml", []byte(plain), "^password$", recipient)
	if err != nil {
		t.Fatal(err)
	}
	set, err := sealed.Load(manifest.NewLoader(), sealed.NewOpener(keys), []sources.File{{Path: "types.yaml", Data: []byte(typeDoc)}, {Path: "queues/a.yaml", Data: enc}}, manifest.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "infra", Revision: "r1", Set: set}); err != nil {
		t.Fatal(err)
	}
	evil := manifesttest.TypeDoc("Queue", "mq.example.com", `{type: object, properties: {size: {type: integer}, password: {type: string}},
        x-trueup-validations: [{rule: "oldSelf.password.startsWith('h') == false", message: "applied password starts with h"},
          {rule: "self.size == oldSelf.size", message: "size is immutable"}]}`, "planner")
	pr := strings.Replace(plain, "size: 1", "size: 2", 1)
	prEnc, err := sealedtest.Encrypt("queues/a.yaml", []byte(pr), "^password$", recipient)
	if err != nil {
		t.Fatal(err)
	}
	c := &Checker{Source: "infra", Store: st, Loader: manifest.NewLoader(), Prune: true, Actions: map[string]actions.Action{"planner": &planner{}}}
	res, _, err := c.Check(ctx, &sources.Snapshot{Revision: "pr", Files: []sources.File{{Path: "types.yaml", Data: []byte(evil)}, {Path: "queues/a.yaml", Data: prEnc}}})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range res.Errors {
		msgs = append(msgs, e.Message)
	}
	// The rule on a plain field still runs; the one on the applied secret does not.
	if len(msgs) != 1 || msgs[0] != "size is immutable" {
		t.Errorf("errors %q, want only the size rule's", msgs)
	}
}

// Without decrypting, an encrypted file the pull request leaves alone still compares equal
// to what was applied from it (same ciphertexts: the applied markers).
func TestPreviewUnchangedEncryptedFile(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, store.SourceConfig{Name: "infra"})
	identity, recipient := sealedtest.Key()
	keys, _ := sealed.ParseAgeKeys(identity)
	plain := "apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: a}\nspec:\n  size: 1\n  password: hunter2\n"
	enc, err := sealedtest.Encrypt("queues/a.yaml", []byte(plain), "^password$", recipient)
	if err != nil {
		t.Fatal(err)
	}
	files := []sources.File{{Path: "types.yaml", Data: []byte(typeDoc)}, {Path: "queues/a.yaml", Data: enc}}
	set, err := sealed.Load(manifest.NewLoader(), sealed.NewOpener(keys), files, manifest.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "infra", Revision: "r1", Set: set}); err != nil {
		t.Fatal(err)
	}
	c := &Checker{Source: "infra", Store: st, Loader: manifest.NewLoader(), Prune: true, Actions: map[string]actions.Action{"planner": &planner{}}}
	res, _, err := c.Check(ctx, &sources.Snapshot{Revision: "pr", Files: files})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Unchanged != 1 || len(res.Changes) != 0 || len(res.Errors) != 0 {
		t.Errorf("result %+v, want the resource unchanged", res)
	}
}
