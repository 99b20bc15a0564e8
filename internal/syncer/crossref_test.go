package syncer

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/crossref"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/status"
)

// crossFiles: Database production/a, and staging/b reading a's output size (ref) or naming
// it in dependsOn.
func crossFiles(ref bool) map[string]string {
	b := `apiVersion: infra.example.com/v1
kind: Database
metadata:
  name: b
  namespace: staging
spec:
  size: "${{ Database/production/a.outputs.size }}"
`
	if !ref {
		b = `apiVersion: infra.example.com/v1
kind: Database
metadata:
  name: b
  namespace: staging
dependsOn:
  - {kind: Database, namespace: production, name: a}
spec:
  size: 2
`
	}
	return map[string]string{"t.yaml": dbType, "a.yaml": `apiVersion: infra.example.com/v1
kind: Database
metadata:
  name: a
  namespace: production
spec:
  size: 1
`, "dir/b.yaml": "# staging\n" + b}
}

// TestSyncRefusesUngrantedCrossNamespaceReference: a revision with a reference (output or
// dependsOn) across namespaces that no grant allows is rejected whole, with file:line naming
// the missing grant; once a grant is added (a reload), Reconsider applies the same head.
func TestSyncRefusesUngrantedCrossNamespaceReference(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ref  bool
		path string
		want string
	}{
		{"output reference", true, "spec", "reference to Database/production/a outputs size crosses from namespace staging to production without a grant"},
		{"dependsOn", false, "dependsOn", "dependsOn Database/production/a crosses from namespace staging to production without a grant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var grants atomic.Pointer[[]config.ReferenceExpose]
			grants.Store(&[]config.ReferenceExpose{})
			var r repo
			r.set(rev(1), dbFiles(1))
			s := New(b.store, Options{Name: "infra", Source: r.source(), Interval: time.Hour, Prune: true, Replica: "r1", LeaseTTL: 15 * time.Second,
				CheckReference: func(from string, target graph.ID, outputs []string) error {
					return crossref.Check(*grants.Load(), from, target, outputs)
				}}, slog.New(slog.DiscardHandler))
			if _, err := s.SyncOnce(b.ctx); err != nil {
				t.Fatal(err)
			}
			r.set(rev(2), crossFiles(tc.ref))
			_, err := s.SyncOnce(b.ctx)
			if err == nil || !strings.Contains(err.Error(), "dir/b.yaml:2: "+tc.path+": "+tc.want) {
				t.Fatalf("SyncOnce error = %v, want dir/b.yaml:2: %s: %s", err, tc.path, tc.want)
			}
			got := b.source()
			c, _ := status.Get(got.Conditions, status.Ready)
			if got.Revision != rev(1) || c.Status != status.False || len(got.Errors) != 1 || got.Errors[0].File != "dir/b.yaml" ||
				got.Errors[0].Line != 2 || !strings.Contains(got.Errors[0].Message, "references.expose needs {namespace: production, kinds: [Database]") {
				t.Fatalf("after the rejection: revision %s, ready %+v, errors %+v", clip.Rev(got.Revision), c, got.Errors)
			}
			if _, err := b.store.GetResource(b.ctx, "staging", "Database", "b"); err == nil {
				t.Fatal("staging/b was applied from a rejected revision")
			}
			grants.Store(&[]config.ReferenceExpose{{Namespace: "production", Kinds: []string{"Database"}, Outputs: []string{"size"},
				To: []config.ReferenceTo{{Namespace: "staging"}}}})
			if out, err := s.SyncOnce(b.ctx); err != nil || !out.Unchanged {
				t.Fatalf("the rejected head is not tried again by itself: %+v, %v", out, err)
			}
			s.Reconsider()
			if _, err := s.SyncOnce(b.ctx); err != nil {
				t.Fatalf("granted: %v", err)
			}
			if got := b.source(); got.Revision != rev(2) || len(got.Errors) != 0 {
				t.Fatalf("after the grant: revision %s, errors %+v", clip.Rev(got.Revision), got.Errors)
			}
		})
	}
}
