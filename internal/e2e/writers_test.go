package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/logbuf"
	"github.com/trueup-dev/trueup/internal/store"
)

// orderAction answers at once and records, for each call, whether the resource its name
// depends on (d<i/2> for d<i>) was Ready in the database when the call began.
type orderAction struct {
	st    *store.Store
	mu    sync.Mutex
	calls map[string]int
	early []string // calls that began before their dependency was Ready
	errs  []error
}

func (a *orderAction) Reconcile(ctx context.Context, req actions.Request) (actions.Result, error) {
	var i int
	if _, err := fmt.Sscanf(req.Resource.Name, "d%d", &i); err == nil && i > 1 {
		var phase string
		err := a.st.Pool().QueryRow(ctx, `SELECT phase FROM resources WHERE namespace = 'prod' AND name = $1`, fmt.Sprintf("d%d", i/2)).Scan(&phase)
		a.mu.Lock()
		switch {
		case err != nil:
			a.errs = append(a.errs, err)
		case phase != "Ready":
			a.early = append(a.early, fmt.Sprintf("%s (d%d %s)", req.Resource.Name, i/2, phase))
		}
		a.mu.Unlock()
	}
	a.mu.Lock()
	a.calls[req.Resource.Name]++
	a.mu.Unlock()
	return actions.Result{Done: true}, nil
}

func (a *orderAction) Delete(context.Context, actions.Request) (actions.Result, error) {
	return actions.Result{Done: true}, nil
}

// TestResultWritersDrainAFleetWithDependencies: 600 Databases, each but the first depending
// on the one of half its number (a tree ten levels deep), reconciled by one replica whose
// result writers share the drain while each result makes dependents due (dependency
// refreshes beside the other writer's batch): every resource ends Ready after exactly one
// call, no call began before its dependency was Ready, each call left one history row, no
// lease is left behind, and the replica logged no deadlock, failed batch or failed refresh.
func TestResultWritersDrainAFleetWithDependencies(t *testing.T) {
	t.Parallel()
	const n = 600
	act := &orderAction{calls: map[string]int{}}
	var log logbuf.Buffer
	e := setup(t, options{action: act, workers: 8, stderr: &log})
	act.st = e.store
	files := map[string]string{"manifests/t.yaml": dbType}
	var docs [10][]string
	for i := 1; i <= n; i++ {
		doc := dbResource("prod", fmt.Sprintf("d%d", i), 1)
		if i > 1 {
			doc = strings.Replace(doc, "spec:", fmt.Sprintf("dependsOn: [{kind: Database, name: d%d}]\nspec:", i/2), 1)
		}
		docs[i%10] = append(docs[i%10], doc)
	}
	for f, d := range docs {
		files[fmt.Sprintf("manifests/fleet%d.yaml", f)] = strings.Join(d, "---\n")
	}
	e.commit(files, "fleet")
	e.start("a", e.o)

	ctx := context.Background()
	e.eventually(60*time.Second, "all Ready", func() (bool, string) {
		var ready int
		if err := e.store.Pool().QueryRow(ctx, `SELECT count(*) FROM resources WHERE phase = 'Ready' AND observed_generation = 1`).Scan(&ready); err != nil {
			return false, err.Error()
		}
		return ready == n, fmt.Sprintf("%d of %d Ready", ready, n)
	})

	act.mu.Lock()
	defer act.mu.Unlock()
	if len(act.errs) > 0 {
		t.Fatalf("reading a dependency's phase: %v", act.errs[0])
	}
	if len(act.early) > 0 {
		t.Errorf("%d calls began before their dependency was Ready, e.g. %s", len(act.early), act.early[0])
	}
	if len(act.calls) != n {
		t.Errorf("%d resources called, want %d", len(act.calls), n)
	}
	for name, c := range act.calls {
		if c != 1 {
			t.Errorf("%s called %d times, want once", name, c)
		}
	}
	var history, succeeded, leased int
	if err := e.store.Pool().QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE result = $1) FROM reconcile_history`,
		"Succeeded").Scan(&history, &succeeded); err != nil {
		t.Fatal(err)
	}
	if history != n || succeeded != n {
		t.Errorf("history: %d rows, %d Succeeded; want %d of each", history, succeeded, n)
	}
	if err := e.store.Pool().QueryRow(ctx, `SELECT count(*) FROM resource_queue WHERE lease_owner IS NOT NULL`).Scan(&leased); err != nil {
		t.Fatal(err)
	}
	if leased != 0 {
		t.Errorf("%d rows still leased after the drain", leased)
	}
	// A deadlock between the writers, or with a dependency refresh, is retried or caught up
	// by the sweep, so the outcome alone would not show it: the log does.
	if log.String() == "" {
		t.Fatal("the replica's log did not reach the test")
	}
	for _, line := range strings.Split(log.String(), "\n") {
		for _, bad := range []string{"deadlock", "the batch is written again", "write results as a batch failed", "refresh dependents", "lease lost"} {
			if strings.Contains(line, bad) {
				t.Errorf("the replica logged %q: %s", bad, line)
			}
		}
	}
}
