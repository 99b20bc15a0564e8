package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/status"
)

func TestDescribe(t *testing.T) {
	t.Parallel()
	a := setup(t)
	runGolden(t, a, []goldenCase{
		{"describe_ready.txt", []string{"describe", "DatabaseCluster/orders-pg", "-n", "production"}},
		{"describe_stalled.txt", []string{"describe", "databasecluster/catalog-mysql", "--namespace", "production"}},
		{"describe_pending.txt", []string{"describe", "Bucket/build-cache"}},
	})
}

// A resource retrying after a failure says when the next attempt is, from the row's run_at.
func TestDescribeRetrying(t *testing.T) {
	t.Parallel()
	a := setup(t)
	ctx := context.Background()
	prev := status.State{Phase: status.PhaseReady, ObservedGeneration: 1, Conditions: status.Initial(t0)}
	s, _ := status.Result(prev, status.Outcome{Generation: 1, CurrentGeneration: 1, Err: "exit status 1: terraform apply: connection reset"}, cliNow.Add(-time.Minute))
	cj, err := json.Marshal(s.Conditions)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.store.Pool().Exec(ctx, `WITH r AS (UPDATE resources SET phase = $1, conditions = $2, message = $3
		WHERE namespace = 'production' AND kind = 'Bucket' AND name = 'invoices' RETURNING id)
		UPDATE resource_queue q SET run_at = $4, last_reconcile_time = $5 FROM r WHERE q.id = r.id`,
		s.Phase, cj, "exit status 1: terraform apply: connection reset", cliNow.Add(42*time.Second), cliNow.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	runGolden(t, a, []goldenCase{{"describe_retrying.txt", []string{"describe", "Bucket/invoices", "-n", "production"}}})
}

// The next retry of a resource a replica is running reads "running now", not due; a retry
// past its time with no replica on it reads "due".
func TestDescribeRetryRunning(t *testing.T) {
	t.Parallel()
	a := setup(t)
	ctx := context.Background()
	prev := status.State{Phase: status.PhaseReady, ObservedGeneration: 1, Conditions: status.Initial(t0)}
	s, _ := status.Result(prev, status.Outcome{Generation: 1, CurrentGeneration: 1, Err: "exit status 1: connection reset"}, cliNow.Add(-time.Minute))
	s, _ = status.Start(s, 1, false, cliNow.Add(-20*time.Second))
	cj, err := json.Marshal(s.Conditions)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lease any
		want  string
	}{
		{"replica-1", "Next Retry:           running now\n"},
		{nil, "Next Retry:           2026-03-05T11:59:40Z (due)\n"},
	} {
		if _, err := a.store.Pool().Exec(ctx, `WITH r AS (UPDATE resources SET phase = $1, conditions = $2
			WHERE namespace = 'production' AND kind = 'Bucket' AND name = 'invoices' RETURNING id)
			UPDATE resource_queue q SET run_at = $3, lease_owner = $4::text,
			lease_token = CASE WHEN $4::text IS NULL THEN NULL ELSE gen_random_uuid() END,
			lease_expires_at = CASE WHEN $4::text IS NULL THEN NULL ELSE now() + interval '1 hour' END
			FROM r WHERE q.id = r.id`,
			s.Phase, cj, cliNow.Add(-20*time.Second), tc.lease); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, err := a.run(t, "describe", "Bucket/invoices", "-n", "production")
		if err != nil || !strings.Contains(stdout, tc.want) {
			t.Errorf("lease %v: err %v, stderr %q; want %q in\n%s", tc.lease, err, stderr, tc.want, stdout)
		}
	}

	// The API's nextReconcileTime is absent while nothing is scheduled: leased, suspended, blocked.
	for _, set := range []string{"lease_owner = 'replica-1', lease_token = gen_random_uuid(), lease_expires_at = now() + interval '1 hour'",
		"suspended = true", "blocked = true"} {
		if _, err := a.store.Pool().Exec(ctx, `UPDATE resource_queue SET lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
			suspended = false, blocked = false WHERE id IN (SELECT id FROM resources WHERE namespace = 'production' AND kind = 'Bucket' AND name = 'invoices')`); err != nil {
			t.Fatal(err)
		}
		if _, err := a.store.Pool().Exec(ctx, `UPDATE resource_queue SET `+set+` WHERE id IN (SELECT id FROM resources WHERE namespace = 'production' AND kind = 'Bucket' AND name = 'invoices')`); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, err := a.run(t, "get", "resources", "--kind", "Bucket", "-n", "production", "-o", "json")
		if err != nil || !strings.Contains(stdout, `"phase"`) || strings.Contains(stdout, "nextReconcileTime") {
			t.Errorf("%s: err %v, stderr %q; want no nextReconcileTime in\n%s", set, err, stderr, stdout)
		}
	}
}
