package syncer

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/sealed/sealedtest"
	"github.com/trueup-dev/trueup/internal/status"
)

var immutableType = manifesttest.TypeDoc("Database", "infra.example.com", `{type: object, required: [engine], properties: {
        engine: {type: string, x-trueup-validations: [{rule: "self == oldSelf", message: "engine is immutable"}]},
        size: {type: integer}}}`, "provision")

func immutableFiles(engine string, size int) map[string]string {
	return map[string]string{"t.yaml": immutableType, "a.yaml": fmt.Sprintf(`apiVersion: infra.example.com/v1
kind: Database
metadata:
  name: a
spec:
  engine: %s
  size: %d
`, engine, size)}
}

// TestSyncTransitionRuleRejects: a commit that changes an immutable field is rejected with
// the field's file:line, the applied spec stays; a commit that changes another field is
// applied.
func TestSyncTransitionRuleRejects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var r repo
	r.set(rev(1), immutableFiles("postgres", 1))
	s := b.syncer(r.source(), "r1", 15*time.Second)
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	r.set(rev(2), immutableFiles("mysql", 2))
	if _, err := s.SyncOnce(b.ctx); err == nil || !strings.Contains(err.Error(), "a.yaml:6: spec.engine: engine is immutable") {
		t.Fatalf("SyncOnce error = %v, want the rejection naming a.yaml:6: spec.engine", err)
	}
	got := b.source()
	c, _ := status.Get(got.Conditions, status.Ready)
	if got.Revision != rev(1) || c.Status != status.False || len(got.Errors) != 1 ||
		got.Errors[0].File != "a.yaml" || got.Errors[0].Line != 6 || got.Errors[0].Path != "spec.engine" {
		t.Fatalf("after the rejection: revision %s, ready %+v, errors %+v", clip.Rev(got.Revision), c, got.Errors)
	}
	res, err := b.store.GetResource(b.ctx, "default", "Database", "a")
	if err != nil {
		t.Fatal(err)
	}
	if spec := strings.ReplaceAll(string(res.Spec), " ", ""); spec != `{"size":1,"engine":"postgres"}` && spec != `{"engine":"postgres","size":1}` {
		t.Errorf("spec after the rejection: %s, want the applied one", res.Spec)
	}

	r.set(rev(3), immutableFiles("postgres", 3))
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	if res, err = b.store.GetResource(b.ctx, "default", "Database", "a"); err != nil || res.Metadata.Generation != 2 {
		t.Errorf("after an allowed change: generation %d, %v; want 2", res.Metadata.Generation, err)
	}
}

// TestTransitionRulesOnEncryptedFields: transition rules compare an encrypted field's values,
// not its markers: re-encrypting with a new data key (sops rotate) is accepted, a changed
// value of an immutable encrypted field is rejected, and no plaintext is in the error.
func TestTransitionRulesOnEncryptedFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	identity, recipient := sealedtest.Key()
	keys, err := sealed.ParseAgeKeys(identity)
	if err != nil {
		t.Fatal(err)
	}
	encrypted := func(engine string, size int) map[string]string {
		files := immutableFiles(engine, size)
		enc, err := sealedtest.Encrypt("a.yaml", []byte(files["a.yaml"]), "^engine$", recipient)
		if err != nil {
			t.Fatal(err)
		}
		files["a.yaml"] = string(enc)
		return files
	}
	var r repo
	r.set(rev(1), encrypted("postgres-Secret-1", 1))
	s := New(b.store, Options{Name: "infra", Source: r.source(), Interval: time.Hour, Prune: true, Replica: "r1", LeaseTTL: 15 * time.Second,
		Opener: sealed.NewOpener(keys)}, slog.New(slog.DiscardHandler))
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	// sops rotate: a new data key, the same values; another field changes too.
	r.set(rev(2), encrypted("postgres-Secret-1", 2))
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatalf("a rotated file with the same engine was rejected: %v", err)
	}
	r.set(rev(3), encrypted("mysql-Secret-2", 3))
	_, err = s.SyncOnce(b.ctx)
	if err == nil || !strings.Contains(err.Error(), "spec.engine: engine is immutable") {
		t.Fatalf("SyncOnce error = %v, want engine is immutable", err)
	}
	if strings.Contains(err.Error(), "Secret") {
		t.Fatalf("the rejection quotes a plaintext: %v", err)
	}
	res, err := b.store.GetResource(b.ctx, "default", "Database", "a")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res.Spec), "Secret-") || !strings.Contains(string(res.Spec), sealed.MarkerPrefix) {
		t.Fatalf("stored spec %s", res.Spec)
	}
}
