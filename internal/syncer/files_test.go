package syncer

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
)

// TestSyncComparesChangedFiles: a sync compares only the changed files' resources, and a
// type's change still reaches every resource of its kind, in unchanged files too: a schema
// that no longer admits one rejects the revision at that resource's file, and a default the
// schema adds is a new spec for each.
func TestSyncComparesChangedFiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	schema := "{type: object, required: [size], properties: {size: {type: integer, minimum: 1, maximum: %d}%s}}"
	typ := func(max int, more string) string {
		return manifesttest.TypeDoc("Database", "infra.example.com", fmt.Sprintf(schema, max, more), "provision")
	}
	db := func(name string, size int) string {
		return fmt.Sprintf("apiVersion: infra.example.com/v1\nkind: Database\nmetadata: {name: %s}\nspec: {size: %d}\n", name, size)
	}
	var r repo
	s := b.syncer(r.source(), "r1", time.Minute)
	sync := func(n int, files map[string]string) (Outcome, error) {
		t.Helper()
		r.set(rev(n), files)
		return s.SyncOnce(b.ctx)
	}

	out, err := sync(1, map[string]string{"t.yaml": typ(100, ""), "a.yaml": db("a", 5), "b.yaml": db("b", 5)})
	if err != nil || out.Result.Created != 2 {
		t.Fatalf("first sync: %+v %v", out, err)
	}
	out, err = sync(2, map[string]string{"t.yaml": typ(100, ""), "a.yaml": db("a", 6), "b.yaml": db("b", 5)})
	if err != nil || out.Result.Updated != 1 || out.Result.Unchanged != 1 {
		t.Fatalf("one file changed: %+v %v", out, err)
	}
	_, err = sync(3, map[string]string{"t.yaml": typ(5, ""), "a.yaml": db("a", 6), "b.yaml": db("b", 5)})
	if err == nil || !strings.Contains(err.Error(), "a.yaml:4") {
		t.Fatalf("a type that no longer admits a resource of an unchanged file: %v, want the revision rejected at a.yaml:4", err)
	}
	out, err = sync(4, map[string]string{"t.yaml": typ(100, ", color: {type: string, default: blue}"), "a.yaml": db("a", 6), "b.yaml": db("b", 5)})
	if err != nil || out.Result.Updated != 2 {
		t.Fatalf("a default added to the type: %+v %v, want both resources updated", out, err)
	}
	for _, name := range []string{"a", "b"} {
		var color string
		if err := b.db.QueryRow(b.ctx, `SELECT spec->>'color' FROM resources WHERE name = $1`, name).Scan(&color); err != nil || color != "blue" {
			t.Errorf("%s: color %q %v, want the default", name, color, err)
		}
	}
}
