package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// fakeWorker stands in for a reconciler: once the resource is asked for a manual reconcile,
// it records the attempt with result in history, as the reconciler does.
func fakeWorker(t *testing.T, a *api, ns, kind, name, result string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	go func() {
		defer cancel()
		for ctx.Err() == nil {
			var actor *string
			if err := a.store.Pool().QueryRow(ctx, `SELECT q.manual_requested_by FROM resources r JOIN resource_queue q USING (id)
				WHERE r.namespace = $1 AND r.kind = $2 AND r.name = $3`,
				ns, kind, name).Scan(&actor); err == nil && actor != nil {
				_, err = a.store.Pool().Exec(ctx, `INSERT INTO reconcile_history (resource_uid, namespace, kind, name, generation, revision,
					operation, trigger, result, message, started_at, finished_at, actor)
					SELECT uid, namespace, kind, name, generation, revision, 'reconcile', 'manual', $4, 'from the fake worker',
					  now() - interval '1500 milliseconds', now(), q.manual_requested_by
					FROM resources r JOIN resource_queue q USING (id) WHERE r.namespace = $1 AND r.kind = $2 AND r.name = $3`, ns, kind, name, result)
				if err != nil {
					t.Error(err)
				}
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	t.Cleanup(cancel)
}

func TestReconcileCLI(t *testing.T) {
	t.Parallel()
	a := setup(t)
	out, stderr, err := a.run(t, "reconcile", "databasecluster/orders-pg", "-n", "production")
	if err != nil || out != "reconcile of DatabaseCluster/orders-pg in namespace production requested by anonymous\n" {
		t.Errorf("reconcile: err %v stdout %q stderr %q", err, out, stderr)
	}
	// --wait prints the attempt and exits 1 when it failed.
	fakeWorker(t, a, "production", "DatabaseCluster", "catalog-mysql", "Stalled")
	out, _, err = a.run(t, "reconcile", "DatabaseCluster/catalog-mysql", "-n", "production", "--wait", "--timeout", "10s")
	if code, ok := err.(exitCode); !ok || code != 1 || !strings.Contains(out, "Stalled after 1.5s (generation 1, trigger manual by anonymous): from the fake worker") {
		t.Errorf("reconcile --wait of a failing resource: err %v stdout %q", err, out)
	}
	fakeWorker(t, a, "production", "Bucket", "invoices", "Succeeded")
	out, _, err = a.run(t, "reconcile", "Bucket/invoices", "-n", "production", "--wait", "--timeout", "10s")
	if err != nil || !strings.Contains(out, "Succeeded after 1.5s") {
		t.Errorf("reconcile --wait: err %v stdout %q", err, out)
	}
	if out, _, err := a.run(t, "history", "Bucket/invoices", "-n", "production"); err != nil || !strings.Contains(out, "manual (anonymous)") {
		t.Errorf("history shows no actor of the manual attempt: err %v\n%s", err, out)
	}
	if _, _, err := a.run(t, "reconcile", "Bucket/nope", "-n", "production"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("reconcile of a missing resource: %v", err)
	}
	// --override-window needs a reason; the answer and the events say who and why.
	if _, _, err := a.run(t, "reconcile", "Bucket/invoices", "-n", "production", "--override-window"); err == nil || !strings.Contains(err.Error(), "--reason is required") {
		t.Errorf("--override-window without --reason: %v", err)
	}
	out, _, err = a.run(t, "reconcile", "Bucket/invoices", "-n", "production", "--override-window", "--reason", "hotfix INC-42")
	if err != nil || out != "reconcile of Bucket/invoices in namespace production requested by anonymous, overriding the change windows\n" {
		t.Errorf("reconcile --override-window: err %v stdout %q", err, out)
	}
	if out, _, err := a.run(t, "events", "-n", "production"); err != nil || !strings.Contains(out, "change windows overridden by anonymous: hotfix INC-42") {
		t.Errorf("events show no override: err %v\n%s", err, out)
	}
}

func TestSuspendCLI(t *testing.T) {
	t.Parallel()
	a := setup(t)
	ctx := context.Background()
	out, _, err := a.run(t, "suspend", "DatabaseCluster/orders-pg", "-n", "production", "--reason", "resizing by hand")
	if err != nil || out != "DatabaseCluster/orders-pg in namespace production suspended by anonymous\n" {
		t.Errorf("suspend: err %v stdout %q", err, out)
	}
	r, _ := a.store.GetResource(ctx, "production", "DatabaseCluster", "orders-pg")
	if c, _ := status.Get(r.Status.Conditions, status.Suspended); c.Message != "suspended by anonymous: resizing by hand" {
		t.Errorf("Suspended condition %+v", c)
	}
	out, _, err = a.run(t, "get", "resources", "-n", "production")
	if err != nil || !strings.Contains(out, "Ready (SUSPENDED)") {
		t.Errorf("get shows no SUSPENDED marker: err %v\n%s", err, out)
	}
	if _, _, err := a.run(t, "reconcile", "DatabaseCluster/orders-pg", "-n", "production"); err == nil || !strings.Contains(err.Error(), "resume it first") {
		t.Errorf("reconcile of a suspended resource: %v", err)
	}
	out, _, err = a.run(t, "resume", "DatabaseCluster/orders-pg", "-n", "production")
	if err != nil || !strings.Contains(out, "resumed by anonymous") {
		t.Errorf("resume: err %v stdout %q", err, out)
	}

	out, _, err = a.run(t, "suspend", "--source", "infra", "--reason", "freeze")
	if err != nil || out != "source infra suspended by anonymous\n" {
		t.Errorf("suspend --source: err %v stdout %q", err, out)
	}
	out, _, err = a.run(t, "get", "sources")
	if err != nil || !strings.Contains(out, "(SUSPENDED)") {
		t.Errorf("get sources shows no SUSPENDED marker: err %v\n%s", err, out)
	}
	if _, _, err := a.run(t, "resume", "--source", "infra"); err != nil {
		t.Errorf("resume --source: %v", err)
	}

	out, _, err = a.run(t, "suspend", "-l", "team=checkout", "-n", "production")
	if err != nil || strings.Count(out, "suspended by anonymous") < 1 || strings.Contains(out, "catalog") {
		t.Errorf("suspend -l: err %v stdout %q", err, out)
	}
	out, stderr, err := a.run(t, "suspend", "-l", "tier=nope")
	if err != nil || out != "" || !strings.Contains(stderr, "No resources to suspend") {
		t.Errorf("suspend -l matching nothing: err %v stdout %q stderr %q", err, out, stderr)
	}
	if _, _, err := a.run(t, "suspend", "DatabaseCluster/orders-pg", "--source", "infra"); err == nil {
		t.Error("suspend with both a resource and --source: no error")
	}
	out, _, err = a.run(t, "sync", "infra")
	if err != nil || out != "sync of source infra requested by anonymous\n" {
		t.Errorf("sync: err %v stdout %q", err, out)
	}
	if _, _, err := a.run(t, "sync", "nope"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("sync of an unknown source: %v", err)
	}
}

// A suspended resource whose manifest changed is not reconciling: get says which generation
// waits for the resume, and a suspended Ready resource keeps its phase.
func TestSuspendedNewGenerationCLI(t *testing.T) {
	t.Parallel()
	a := setup(t)
	ctx := context.Background()
	if _, _, err := a.run(t, "suspend", "DatabaseCluster/orders-pg", "-n", "production"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.run(t, "suspend", "Bucket/invoices", "-n", "production"); err != nil {
		t.Fatal(err)
	}
	var fs []sources.File
	for p, data := range infraFiles("800") {
		fs = append(fs, sources.File{Path: p, Data: []byte(data)})
	}
	set, err := manifest.NewLoader().Load(fs, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.ApplyRevision(ctx, store.ApplyParams{Source: "infra", Revision: "4e5f6a7b8c9d0e1f", Set: set, Prune: true}); err != nil {
		t.Fatal(err)
	}
	out, _, err := a.run(t, "get", "resources", "-n", "production")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"orders-pg       DatabaseCluster   Suspended (generation 3 pending)", "invoices        Bucket            Ready (SUSPENDED)"} {
		if !strings.Contains(out, want) {
			t.Errorf("get resources: no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "Reconciling") {
		t.Errorf("get resources calls a suspended resource Reconciling:\n%s", out)
	}
}

func TestDeleteAbandonCLI(t *testing.T) {
	t.Parallel()
	a := setup(t)
	ctx := context.Background()
	const ref = "production/DatabaseCluster/orders-pg"
	if _, _, err := a.run(t, "delete", ref, "--reason", "x"); err == nil || !strings.Contains(err.Error(), "manifest is removed from Git") {
		t.Errorf("delete without --abandon: %v", err)
	}
	if _, _, err := a.run(t, "delete", ref, "--abandon"); err == nil || !strings.Contains(err.Error(), "--reason is required") {
		t.Errorf("delete --abandon without a reason: %v", err)
	}
	if _, _, err := a.run(t, "delete", ref, "--abandon", "--reason", "x"); err == nil || !strings.Contains(err.Error(), "manifest still in Git") {
		t.Errorf("abandon of a resource still in Git: %v", err)
	}
	if _, _, err := a.run(t, "delete", "DatabaseCluster/nope", "-n", "production", "--abandon", "--reason", "x"); err == nil ||
		!strings.Contains(err.Error(), "not found") {
		t.Errorf("abandon of a missing resource: %v", err)
	}
	if _, err := a.store.Pool().Exec(ctx, `UPDATE resources SET deletion_timestamp = now() WHERE name = 'orders-pg'`); err != nil {
		t.Fatal(err)
	}
	out, _, err := a.run(t, "delete", "databasecluster/orders-pg", "-n", "production", "--abandon", "--reason", "cluster deleted by hand")
	if err != nil || out != "DatabaseCluster/orders-pg in namespace production abandoned by anonymous (its action was not called)\n" {
		t.Errorf("delete --abandon: err %v stdout %q", err, out)
	}
	if _, err := a.store.GetResource(ctx, "production", "DatabaseCluster", "orders-pg"); err == nil {
		t.Error("the resource is still there after the abandon")
	}
	if out, _, err := a.run(t, "history", "DatabaseCluster/orders-pg", "-n", "production"); err != nil || !strings.Contains(out, "Abandoned") {
		t.Errorf("history shows no abandon: err %v\n%s", err, out)
	}
	if out, _, err := a.run(t, "events", "--for", "DatabaseCluster/orders-pg", "-n", "production"); err != nil ||
		!strings.Contains(out, "abandoned by anonymous: cluster deleted by hand") {
		t.Errorf("events show no abandon: err %v\n%s", err, out)
	}
}

func TestParseNamespacedRef(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, n, want, err string
	}{
		{"prod/Db/orders", "", "prod Db orders", ""},
		{"prod/Db/orders", "prod", "prod Db orders", ""},
		{"prod/Db/orders", "dev", "", "names namespace prod, -n says dev"},
		{"Db/orders", "", "default Db orders", ""},
		{"Db/orders", "dev", "dev Db orders", ""},
		{"orders", "", "", "want NAMESPACE/KIND/NAME"},
		{"prod//orders", "", "", "want NAMESPACE/KIND/NAME"},
		{"a/b/c/d", "", "", "want NAMESPACE/KIND/NAME"},
	}
	for _, tc := range cases {
		ns, kind, name, err := parseNamespacedRef(tc.in, tc.n)
		got := ""
		if err == nil {
			got = ns + " " + kind + " " + name
		}
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("parseNamespacedRef(%q, %q) = %q, %v; want %q, %q", tc.in, tc.n, got, err, tc.want, tc.err)
		}
	}
}
