package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/reconciler"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
)

func (e *env) sourceEvents() []store.Event {
	evs, err := e.store.ListEvents(context.Background(), store.Everything, store.EventFilter{Source: "infra", Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

func hasEvent(evs []store.Event, typ, reason, msgPart string) bool {
	for _, ev := range evs {
		if ev.Type == typ && ev.Reason == reason && strings.Contains(ev.Message, msgPart) {
			return true
		}
	}
	return false
}

func (e *env) liveRows() int {
	var n int
	if err := e.store.Pool().QueryRow(context.Background(), "SELECT count(*) FROM resources WHERE deletion_timestamp IS NULL").Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestPruneGuards: every guard keeps the rows and records a Warning.
func TestPruneGuards(t *testing.T) {
	t.Parallel()
	four := map[string]string{"manifests/t.yaml": dbType}
	for i := 0; i < 4; i++ {
		four[fmt.Sprintf("manifests/db%d.yaml", i)] = dbResource("prod", fmt.Sprintf("db%d", i), 1)
	}
	cases := []struct {
		name    string
		prune   bool
		change  map[string]string
		wantErr bool   // the revision is not applied at all
		reason  string // Warning reason on the source's events
		msg     string
	}{
		{name: "empty render", prune: true, reason: "PruneSkipped", msg: "renders no resources",
			change: map[string]string{"manifests/db0.yaml": "", "manifests/db1.yaml": "", "manifests/db2.yaml": "", "manifests/db3.yaml": ""}},
		{name: "too many deletions", prune: true, reason: "PruneSkipped", msg: "would delete 3 of 4",
			change: map[string]string{"manifests/db0.yaml": "", "manifests/db1.yaml": "", "manifests/db2.yaml": ""}},
		{name: "prune disabled", prune: false, reason: "PruneSkipped", msg: "pruning is disabled",
			change: map[string]string{"manifests/db0.yaml": ""}},
		{name: "annotation", prune: true, reason: "PruneSkipped", msg: "trueup.dev/prune: disabled",
			change: map[string]string{"manifests/db0.yaml": ""}},
		{name: "path missing", prune: true, wantErr: true, reason: "PathNotFound", msg: "manifests",
			change: map[string]string{"manifests/t.yaml": "", "manifests/db0.yaml": "", "manifests/db1.yaml": "", "manifests/db2.yaml": "", "manifests/db3.yaml": "", "other/x.yaml": dbType}},
		{name: "parse failure", prune: true, wantErr: true, reason: "ValidationFailed", msg: "db1.yaml",
			change: map[string]string{"manifests/db0.yaml": "", "manifests/db1.yaml": "kind: [broken"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, options{noPrune: !tc.prune})
			files := map[string]string{}
			for k, v := range four {
				files[k] = v
			}
			if tc.name == "annotation" {
				files["manifests/db0.yaml"] = strings.Replace(dbResource("prod", "db0", 1), "  namespace: prod\n",
					"  namespace: prod\n  annotations: {trueup.dev/prune: disabled}\n", 1)
			}
			e.commit(files, "four")
			if _, err := e.syncOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			e.commit(tc.change, tc.name)
			_, err := e.syncOnce(context.Background())
			if (err != nil) != tc.wantErr {
				t.Fatalf("sync error %v, want error %v", err, tc.wantErr)
			}
			if n := e.liveRows(); n != 4 {
				t.Errorf("%d resources left undeleted, want all 4", n)
			}
			if evs := e.sourceEvents(); !hasEvent(evs, "Warning", tc.reason, tc.msg) {
				t.Errorf("no Warning %s containing %q in %+v", tc.reason, tc.msg, evs)
			}
			src, _ := e.store.GetSource(context.Background(), "infra")
			if !tc.wantErr && tc.reason == "PruneSkipped" && (tc.name == "empty render" || tc.name == "too many deletions") {
				if c, ok := status.Get(src.Conditions, status.PruneSkipped); !ok || c.Status != "True" {
					t.Errorf("source PruneSkipped condition %+v", src.Conditions)
				}
			}
		})
	}
}

// TestDeleteRetriedUntilItSucceeds: a deletion whose action fails three times then succeeds
// ends with the row gone and four delete history rows; meanwhile the API shows Deleting.
func TestDeleteRetriedUntilItSucceeds(t *testing.T) {
	t.Parallel()
	e := setup(t, options{backoff: [2]time.Duration{100 * time.Millisecond, 400 * time.Millisecond}})
	e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1), "manifests/b.yaml": dbResource("prod", "b", 1)}, "two")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("Ready", 1, "prod/a", "prod/b")
	if err := os.WriteFile(e.failFlg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.commit(map[string]string{"manifests/a.yaml": ""}, "drop a")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	failedDeletes := func() int {
		n := 0
		for _, c := range e.calls() {
			if c.failed && c.op == "delete" {
				n++
			}
		}
		return n
	}
	e.eventually(20*time.Second, "3 failed deletes", func() (bool, string) { return failedDeletes() >= 3, fmt.Sprint(failedDeletes()) })
	// Hold the fourth attempt back until we looked at the API.
	r, code := e.resource("prod", "Database", "a")
	if code != 200 || r.Status.Phase != "Deleting" || r.Metadata.DeletionTimestamp == nil || !strings.Contains(r.Status.Message, "delete failed") {
		t.Errorf("while deletion fails: %d phase %s message %q", code, r.Status.Phase, r.Status.Message)
	}
	e.eventually(10*time.Second, "3rd failure recorded", func() (bool, string) {
		h, _ := e.store.ListHistory(context.Background(), "prod", "Database", "a", 100)
		return countOp(h, "delete") >= 3, fmt.Sprint(countOp(h, "delete"))
	})
	if err := os.Remove(e.failFlg); err != nil {
		t.Fatal(err)
	}
	e.eventually(20*time.Second, "a deleted", func() (bool, string) {
		_, code := e.resource("prod", "Database", "a")
		return code == 404, fmt.Sprint(code)
	})
	h, err := e.store.ListHistory(context.Background(), "prod", "Database", "a", 100)
	if err != nil {
		t.Fatal(err)
	}
	if n := countOp(h, "delete"); n != failedDeletes()+1 || n < 4 {
		t.Errorf("%d delete history rows for %d failed calls, want failures+1 ≥ 4: %+v", n, failedDeletes(), h)
	}
	if h[0].Operation != "delete" || h[0].Result != "Succeeded" {
		t.Errorf("newest history %+v", h[0])
	}
	if _, code := e.resource("prod", "Database", "b"); code != 200 {
		t.Errorf("b: %d", code)
	}
}

func countOp(h []store.HistoryEntry, op string) int {
	n := 0
	for _, x := range h {
		if x.Operation == op {
			n++
		}
	}
	return n
}

// fakeProvider is an external system that counts side effects by correlation id.
type fakeProvider struct {
	mu      sync.Mutex
	created map[string]int
}

func (p *fakeProvider) create(corr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.created[corr]++
}

func (p *fakeProvider) has(corr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.created[corr] > 0
}

func (p *fakeProvider) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.created {
		n += c
	}
	return n
}

// intentAction checkpoints an intent before its side effect and adopts an intent it finds.
// crashAt makes it stop (as a dead replica would) before or after the side effect.
type intentAction struct {
	p       *fakeProvider
	crashAt string // "", "before-call", "after-call"
	stuck   chan struct{}
	calls   atomic.Int32
}

func (a *intentAction) Reconcile(ctx context.Context, req actions.Request) (actions.Result, error) {
	a.calls.Add(1)
	var st struct{ Correlation string }
	_ = json.Unmarshal(req.State, &st)
	if st.Correlation != "" {
		// A predecessor committed an intent: adopt its work if it happened, else do it now.
		if !a.p.has(st.Correlation) {
			a.p.create(st.Correlation)
		}
		return actions.Result{Done: true, Outputs: map[string]any{"adopted": true}}, nil
	}
	corr := fmt.Sprintf("%s-%d-%d", req.Resource.UID, req.Resource.Generation, time.Now().UnixNano())
	state, _ := json.Marshal(map[string]string{"correlation": corr})
	if err := req.SaveCheckpoint(ctx, state); err != nil {
		return actions.Result{}, err
	}
	if a.crashAt == "before-call" {
		<-a.stuck
		return actions.Result{}, ctx.Err()
	}
	a.p.create(corr)
	if a.crashAt == "after-call" {
		<-a.stuck
		return actions.Result{}, ctx.Err()
	}
	return actions.Result{Done: true, State: state}, nil
}

func (a *intentAction) Delete(context.Context, actions.Request) (actions.Result, error) {
	return actions.Result{Done: true}, nil
}

// TestCrashBetweenIntentAndStatus: a replica dies after committing the intent, before or
// after the external call; the replica taking over adopts instead of repeating it.
func TestCrashBetweenIntentAndStatus(t *testing.T) {
	t.Parallel()
	for _, at := range []string{"before-call", "after-call"} {
		t.Run(at, func(t *testing.T) {
			t.Parallel()
			e := setup(t, options{})
			ctx := context.Background()
			e.commit(map[string]string{"manifests/t.yaml": dbType, "manifests/a.yaml": dbResource("prod", "a", 1)}, "one")
			// Synced with no replica reconciling: A must be the first to claim.
			if _, err := e.handSyncer().SyncOnce(ctx); err != nil {
				t.Fatal(err)
			}
			p := &fakeProvider{created: map[string]int{}}
			dying := &intentAction{p: p, crashAt: at, stuck: make(chan struct{})}
			defer close(dying.stuck)
			// Replica A has its own connection pool; closing it is the crash: it can neither
			// renew its lease nor write a result.
			stA, err := store.Open(ctx, e.store.Pool().Config().ConnString(), store.Options{MaxConns: 4})
			if err != nil {
				t.Fatal(err)
			}
			a := reconciler.New(stA, map[string]actions.Action{"provision": dying}, reconciler.Options{Replica: "a", Workers: 1, LeaseTTL: time.Second}, e.log)
			actx, stopA := context.WithCancel(ctx)
			go func() { _ = a.Run(actx) }()
			defer stopA()
			e.eventually(10*time.Second, "A reached the crash point", func() (bool, string) {
				var st []byte
				_ = e.store.Pool().QueryRow(ctx, "SELECT action_state FROM resources").Scan(&st)
				want := at != "after-call" || p.total() == 1
				return len(st) > 0 && want, string(st)
			})
			stA.Close()

			b := &intentAction{p: p}
			e.start("b", options{action: b, workers: 1, leaseTTL: time.Second})
			e.waitPhase("Ready", 1, "prod/a")
			if n := p.total(); n != 1 {
				t.Errorf("external side effect happened %d times, want exactly once", n)
			}
			r, _ := e.resource("prod", "Database", "a")
			if !strings.Contains(string(r.Status.Outputs), "adopted") {
				t.Errorf("B did not adopt the intent: outputs %s", r.Status.Outputs)
			}
		})
	}
}

// TestLongActionsDoNotHoldWorkers: an action that takes 30 s, kept in state across calls, for
// 200 resources with 4 workers completes in about the time of one run, not 50.
func TestLongActionsDoNotHoldWorkers(t *testing.T) {
	t.Parallel()
	e := setup(t, options{script: "testdata/long-action.sh", timeout: "10s", env: map[string]string{"DURATION": "30"}})
	files := map[string]string{"manifests/t.yaml": dbType}
	var b strings.Builder
	for i := 0; i < 200; i++ {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.WriteString(dbResource("prod", fmt.Sprintf("db%03d", i), 1))
	}
	files["manifests/dbs.yaml"] = b.String()
	e.commit(files, "200")
	start := time.Now()
	if _, err := e.syncOnce(context.Background()); err != nil { // r1 (4 workers) starts
		t.Fatal(err)
	}
	e.eventually(150*time.Second, "200 Ready", func() (bool, string) {
		var ready, inProgress int
		_ = e.store.Pool().QueryRow(context.Background(),
			"SELECT count(*) FILTER (WHERE phase = 'Ready'), count(*) FILTER (WHERE phase = 'Reconciling') FROM resources").Scan(&ready, &inProgress)
		return ready == 200, fmt.Sprintf("%d ready, %d reconciling", ready, inProgress)
	})
	// Serialised on 4 workers, 200 runs of 30 s would take 1,500 s.
	if took := time.Since(start); took > 120*time.Second {
		t.Errorf("200 × 30 s actions on 4 workers took %s", took)
	}
	t.Logf("200 × 30 s actions on 4 workers: %s", time.Since(start).Round(time.Second))
	h, _ := e.store.ListHistory(context.Background(), "prod", "Database", "db000", 100)
	if len(h) < 2 || h[len(h)-1].Result != "InProgress" || h[0].Result != "Succeeded" {
		t.Errorf("history of one long run: %+v", h)
	}
}
