package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/server"
)

// TestApprovalCommands: approvals lists what waits, describe shows the plan, and approve and
// reject vote with the plan hash they read, as the caller the server authenticates.
func TestApprovalCommands(t *testing.T) {
	t.Parallel()
	a := setup(t)
	if _, err := a.store.Pool().Exec(context.Background(), `INSERT INTO approval_requests (resource_id, generation, change_type, revision,
		plan_hash, plan, decision, policy, message, requirements, author_name, author_email, requested_at)
		SELECT id, generation, 'update', revision, '9f86d081884c7d659a2feaa0c55ad015',
		  '{"available":true,"changes":true,"counted":true,"add":0,"change":0,"destroy":0,"replace":1,"summary":"1 to replace","text":"-/+ aws_db_instance.main\n    storage: 200 -> 500"}',
		  'requireApproval', 'prod-needs-dba', 'replacing a production database needs a DBA',
		  '[{"policy":"prod-needs-dba","count":1,"from":[{"group":"dba"},{"token":"release-bot"}],"notAuthor":true}]',
		  'Ann', 'ann@example.com', $1
		FROM resources WHERE namespace = 'production' AND name = 'orders-pg'`, cliNow.Add(-5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]auth.Identity{
		"rb": {Kind: "token", Name: "release-bot", Role: auth.Viewer, Namespaces: []string{"production"}},
		"ci": {Kind: "token", Name: "ci-bot", Role: auth.Admin, Namespaces: []string{auth.AllNamespaces}},
	}
	srv := httptest.NewServer(server.New(a.store, server.Options{Replica: "test", Authenticate: func(r *http.Request) (auth.Identity, error) {
		id, ok := tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			return auth.Identity{}, errors.New("no such token")
		}
		return id, nil
	}}, slog.New(slog.NewTextHandler(io.Discard, nil))).Handler())
	t.Cleanup(srv.Close)
	as := func(token string, args ...string) (string, error) {
		t.Helper()
		out, _, err := runCLI(t, append([]string{"--server", srv.URL, "--token", token}, args...)...)
		return out, err
	}

	out, err := as("rb", "approvals")
	want := "RESOURCE                               STATE     POLICY           REQUIRES                                                                 PLAN                         VOTES   AGE\n" +
		"production/DatabaseCluster/orders-pg   pending   prod-needs-dba   1 approval from group dba or token release-bot, not by the commit's a…   9f86d081884c: 1 to replace   0       5m\n"
	if err != nil || out != want {
		t.Errorf("approvals: %v\n%s\nwant\n%s", err, out, want)
	}
	if out, err := as("rb", "approvals", "-n", "staging"); err != nil || out != "" {
		t.Errorf("approvals in another namespace: %v %q", err, out)
	}
	out, err = as("rb", "describe", "DatabaseCluster/orders-pg", "-n", "production")
	for _, s := range []string{"Approval:\n  State: pending (requireApproval by policy prod-needs-dba, 5m ago)\n  Message: replacing a production database needs a DBA\n",
		"  Author: Ann <ann@example.com>\n  Plan: 9f86d081884c: 1 to replace\n  Requires: 1 approval from group dba or token release-bot, not by the commit's author\n  Votes: <none>\n",
		"  Plan text:\n    -/+ aws_db_instance.main\n        storage: 200 -> 500\n"} {
		if err != nil || !strings.Contains(out, s) {
			t.Errorf("describe: %v: no %q in\n%s", err, s, out)
		}
	}

	if _, err := as("ci", "approve", "production/DatabaseCluster/orders-pg"); err == nil ||
		!strings.Contains(err.Error(), "policy prod-needs-dba: token ci-bot may not approve") {
		t.Errorf("approve by a token outside approvals.from: %v", err)
	}
	out, err = as("rb", "approve", "production/databasecluster/orders-pg", "--reason", "reviewed")
	if err != nil || !strings.HasPrefix(out, "approved DatabaseCluster/orders-pg in namespace production: policy prod-needs-dba, plan 9f86d081884c: 1 to replace, generation 2\n") ||
		!strings.Contains(out, "Vote: approve by token:release-bot at ") || !strings.Contains(out, ": reviewed\n") {
		t.Errorf("approve: %v\n%s", err, out)
	}
	out, err = as("rb", "reject", "DatabaseCluster/orders-pg", "-n", "production")
	if err != nil || !strings.HasPrefix(out, "rejected DatabaseCluster/orders-pg") || !strings.Contains(out, "Vote: reject by token:release-bot") ||
		!strings.Contains(out, "the resource stalls") {
		t.Errorf("reject: %v\n%s", err, out)
	}
	if _, err := as("rb", "approve", "production/Bucket/invoices"); err == nil || !strings.Contains(err.Error(), "nothing waits for approval") {
		t.Errorf("approve with nothing waiting: %v", err)
	}
	if _, err := as("rb", "approve", "orders-pg"); err == nil || !strings.Contains(err.Error(), "want NAMESPACE/KIND/NAME") {
		t.Errorf("approve of a bad reference: %v", err)
	}
}
