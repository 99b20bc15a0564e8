//go:build unix

package terraform_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/actions"
)

// schemaExists reports whether the pg backend's schema is in the database.
func (f fixture) schemaExists(t *testing.T) bool {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), f.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var ok bool
	if err := conn.QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", f.schema).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

func workingCopies(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// Previews of resources never applied leave nothing behind: no schema, no workspace row, no
// working copy; they say the resources are new.
func TestPlanOfNewResourcesWritesNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, "plannothing", config{})
	for _, n := range []string{"pr-only-1", "pr-only-2", "pr-only-3"} {
		plan, err := f.action.(actions.Planner).Plan(t.Context(), request(n, `{"size": 1}`))
		if err != nil {
			t.Fatal(err)
		}
		if !plan.Changes || !strings.HasPrefix(plan.Summary, "new: ") {
			t.Fatalf("Plan of a new resource = %+v; want changes, summary new: …", plan)
		}
	}
	if f.schemaExists(t) {
		t.Fatalf("plans created the backend's schema %s (rows: %v)", f.schema, keys(f.states(t)))
	}
	if wc := workingCopies(t, f.cfg.WorkDir); len(wc) > 0 {
		t.Fatalf("plans left working copies: %v", wc)
	}

	// Once another resource is applied the schema exists; a new one is still not planned.
	if _, err := f.action.Reconcile(t.Context(), request("applied", `{"size": 1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.action.(actions.Planner).Plan(t.Context(), request("pr-only-4", `{"size": 1}`)); err != nil {
		t.Fatal(err)
	}
	if rows := keys(f.states(t)); len(rows) != 1 {
		t.Fatalf("workspace rows %v; want only the applied resource's", rows)
	}
	if wc := workingCopies(t, f.cfg.WorkDir); len(wc) != 1 {
		t.Fatalf("working copies %v; want only the applied resource's", wc)
	}
}

// With a configured backend, a resource without a working copy has not been applied by this
// instance: not planned either.
func TestPlanOfNewResourceConfiguredBackend(t *testing.T) {
	t.Parallel()
	stateDir := t.TempDir()
	f := setup(t, "plannothinglocal", config{Backend: map[string]any{"type": "local", "config": map[string]any{"workspace_dir": stateDir}}})
	plan, err := f.action.(actions.Planner).Plan(t.Context(), request("db", `{"size": 1}`))
	if err != nil || plan.Summary != "new: the module's resources will be created (not planned before the first apply)" {
		t.Fatalf("Plan = %+v, %v", plan, err)
	}
	if wc := workingCopies(t, f.cfg.WorkDir); len(wc) > 0 {
		t.Fatalf("the plan left working copies: %v", wc)
	}
	if st := workingCopies(t, stateDir); len(st) > 0 {
		t.Fatalf("the plan left state: %v", st)
	}
}

// A plan of an applied resource whose working copy is gone (another replica applied it, or
// the temp folder was cleaned) initialises one and selects the workspace, never creating it.
func TestPlanSelectsWithoutCreating(t *testing.T) {
	t.Parallel()
	f, rec := recording(t, "planselect", config{})
	req := request("db", `{"size": 1}`)
	if _, err := f.action.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(f.cfg.WorkDir, "team-a.Database.db")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(rec, "args")); err != nil {
		t.Fatal(err)
	}
	req.Resource.Spec = []byte(`{"size": 2}`)
	plan, err := f.action.(actions.Planner).Plan(t.Context(), req)
	if err != nil || plan.Summary != "0 to add, 1 to change, 0 to destroy" {
		t.Fatalf("Plan = %+v, %v; want Terraform's plan", plan, err)
	}
	args := read(t, filepath.Join(rec, "args"))
	if strings.Contains(args, "-or-create") || !strings.Contains(args, "workspace select -no-color team-a.Database.db") {
		t.Fatalf("the plan's runs:\n%s\nwant a plain workspace select", args)
	}
}

// The gate's plan of a resource never applied creates its workspace (the apply needs it), but
// the resource stays new for previews until a Reconcile: the gate may deny it or wait.
func TestGatePlanLeavesResourceNew(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]config{
		"gatenewpg":    {},
		"gatenewlocal": {Backend: map[string]any{"type": "local", "config": map[string]any{"workspace_dir": t.TempDir()}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg.Module = "testdata/modules/gate"
			f := setup(t, name, cfg)
			pl := f.action.(actions.Planner)
			kept := keptPlan(t, f, `{"size": 1}`)
			if plan, err := pl.Plan(t.Context(), request("db", `{"size": 1}`)); err != nil || !strings.HasPrefix(plan.Summary, "new: ") {
				t.Fatalf("preview after the gate's plan = %+v, %v; want the resource new", plan, err)
			}
			req := request("db", `{"size": 1}`)
			req.ApprovedPlan = kept.Hash
			if _, err := f.action.Reconcile(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			plan, err := pl.Plan(t.Context(), request("db", `{"size": 2}`))
			if err != nil || plan.Summary != "0 to add, 1 to change, 0 to destroy" {
				t.Fatalf("preview after the apply = %+v, %v; want Terraform's plan", plan, err)
			}
		})
	}
}
