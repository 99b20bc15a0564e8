package preview

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/syncer"
	"github.com/trueup-dev/trueup/sources"
)

// specRecorder records the spec each Plan gets.
type specRecorder struct {
	planner
	specs []string
}

func (s *specRecorder) Plan(ctx context.Context, req actions.Request) (actions.Plan, error) {
	s.mu.Lock()
	s.specs = append(s.specs, string(req.Resource.Spec))
	s.mu.Unlock()
	return actions.Plan{Changes: true}, nil
}

// A pull request's plan sees the outputs of the source's own applied resources only: a
// reference to another source's (or namespace's) resource stays as written, so that a pull
// request cannot print someone else's outputs in its comment.
func TestPlanResolvesOnlyOwnOutputs(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, store.SourceConfig{Name: "infra"}, store.SourceConfig{Name: "other"})
	apply := func(source string, files ...sources.File) {
		t.Helper()
		known, err := syncer.OtherTypes(ctx, st, source)
		if err != nil {
			t.Fatal(err)
		}
		set, err := manifest.NewLoader().Load(files, manifest.Options{KnownTypes: known})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: source, Revision: "r1", Set: set}); err != nil {
			t.Fatal(err)
		}
	}
	theirs := "apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: x, namespace: other-ns}\nspec: {size: 1}\n"
	apply("other", sources.File{Path: "types.yaml", Data: []byte(typeDoc)}, sources.File{Path: "x.yaml", Data: []byte(theirs)})
	apply("infra", sources.File{Path: "a.yaml", Data: []byte(queueDoc("a", 1))}, sources.File{Path: "b.yaml", Data: []byte(queueDoc("b", 1))})
	for _, o := range []struct{ ns, name, endpoint string }{{"default", "a", "mine.internal"}, {"other-ns", "x", "theirs.internal"}} {
		b, _ := json.Marshal(map[string]string{"endpoint": o.endpoint})
		if _, err := st.Pool().Exec(ctx, `UPDATE resources SET outputs = $1 WHERE namespace = $2 AND name = $3`, b, o.ns, o.name); err != nil {
			t.Fatal(err)
		}
	}
	act := &specRecorder{}
	c := &Checker{Source: "infra", Store: st, Loader: manifest.NewLoader(), Actions: map[string]actions.Action{"planner": act}}
	b := "apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: b}\nspec:\n  size: 2\n" +
		"  own: \"${{ Queue/a.outputs.endpoint }}\"\n  foreign: \"${{ Queue/other-ns/x.outputs.endpoint }}\"\n"
	if _, _, err := c.Check(ctx, &sources.Snapshot{Revision: "pr", Files: []sources.File{{Path: "a.yaml", Data: []byte(queueDoc("a", 1))},
		{Path: "b.yaml", Data: []byte(b)}}}); err != nil {
		t.Fatal(err)
	}
	if len(act.specs) != 1 {
		t.Fatalf("plans %q", act.specs)
	}
	spec := act.specs[0]
	if !strings.Contains(spec, `"own":"mine.internal"`) || strings.Contains(spec, "theirs") || !strings.Contains(spec, "Queue/other-ns/x.outputs.endpoint") {
		t.Errorf("planned spec %s", spec)
	}
}

// A pull request referencing another namespace of the same source: without a grant it is
// invalid with the ingest's file:line error; granted, its plan still sees the reference as
// written (a preview resolves within the referring resource's namespace only).
func TestPlanCrossNamespaceReference(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, store.SourceConfig{Name: "infra"})
	prod := "apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: p, namespace: prod-ns}\nspec: {size: 1}\n"
	files := []sources.File{{Path: "types.yaml", Data: []byte(typeDoc)}, {Path: "p.yaml", Data: []byte(prod)}, {Path: "b.yaml", Data: []byte(queueDoc("b", 1))}}
	set, err := manifest.NewLoader().Load(files, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "infra", Revision: "r1", Set: set}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `UPDATE resources SET outputs = '{"endpoint": "prod-endpoint.internal"}' WHERE name = 'p'`); err != nil {
		t.Fatal(err)
	}
	b := "apiVersion: mq.example.com/v1\nkind: Queue\nmetadata: {name: b}\nspec:\n  size: 2\n  foreign: \"${{ Queue/prod-ns/p.outputs.endpoint }}\"\n"
	pr := &sources.Snapshot{Revision: "pr", Files: []sources.File{files[0], files[1], {Path: "b.yaml", Data: []byte(b)}}}
	for _, granted := range []bool{false, true} {
		act := &specRecorder{}
		c := &Checker{Source: "infra", Store: st, Loader: manifest.NewLoader(), Actions: map[string]actions.Action{"planner": act},
			CheckReference: func(from string, target graph.ID, outputs []string) error {
				if granted {
					return nil
				}
				return fmt.Errorf("reference to %s crosses namespaces without a grant", target)
			}}
		res, _, err := c.Check(ctx, pr)
		if err != nil {
			t.Fatal(err)
		}
		if !granted {
			if len(res.Errors) != 1 || res.Errors[0].File != "b.yaml" || res.Errors[0].Line != 1 || !strings.Contains(res.Errors[0].Message, "Queue/prod-ns/p crosses namespaces") {
				t.Fatalf("ungranted: errors %+v", res.Errors)
			}
			continue
		}
		if len(res.Errors) != 0 || len(act.specs) != 1 || strings.Contains(act.specs[0], "prod-endpoint") || !strings.Contains(act.specs[0], "Queue/prod-ns/p.outputs.endpoint") {
			t.Fatalf("granted: errors %+v, planned specs %q", res.Errors, act.specs)
		}
	}
}
