package main

import (
	"context"
	"encoding/json"
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
	if _, err := a.store.Pool().Exec(ctx, `UPDATE resources SET phase = $1, conditions = $2, message = $3, run_at = $4, last_reconcile_time = $5
		WHERE namespace = 'production' AND kind = 'Bucket' AND name = 'invoices'`,
		s.Phase, cj, "exit status 1: terraform apply: connection reset", cliNow.Add(42*time.Second), cliNow.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	runGolden(t, a, []goldenCase{{"describe_retrying.txt", []string{"describe", "Bucket/invoices", "-n", "production"}}})
}
