package syncer

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/status"
)

const immutableType = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata:
  name: Database
spec:
  group: infra.example.com
  versions:
    - name: v1
      schema:
        type: object
        required: [engine]
        properties:
          engine:
            type: string
            x-trueup-validations: [{rule: "self == oldSelf", message: "engine is immutable"}]
          size: {type: integer}
  action:
    name: provision
`

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
		t.Fatalf("after the rejection: revision %s, ready %+v, errors %+v", short(got.Revision), c, got.Errors)
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
