package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
)

// TestCrossNamespaceGrantRemovedStalls: staging/b reads production/a's size under a grant; its
// resolved spec records that spec.size came from production. When the grant goes (a reload),
// b stalls at its next reconcile with ingest's message; when it comes back, b is Ready again.
func TestCrossNamespaceGrantRemovedStalls(t *testing.T) {
	e := setup(t, options{references: grantOf("size"), backoff: [2]time.Duration{100 * time.Millisecond, 400 * time.Millisecond}})
	e.commit(map[string]string{"manifests/types.yaml": dbType, "manifests/a.yaml": dbResource("production", "a", 7),
		"manifests/b.yaml": strings.Replace(dbResource("staging", "b", 0), "size: 0", `size: "${{ Database/production/a.outputs.size }}"`, 1)}, "a and b")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("Ready", 1, "production/a", "staging/b")
	n, err := e.store.ResourceNeighbours(context.Background(), store.Everything, "staging", "Database", "b")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(n.ResolvedSpec), `"size": 7`) || fmt.Sprint(n.ResolvedOrigins) != "map[spec.size:[production]]" {
		t.Fatalf("resolved spec %s, origins %v", n.ResolvedSpec, n.ResolvedOrigins)
	}

	noGrant := e.o
	noGrant.references = ""
	if res := e.replicas[0].Reload(e.config("r1", noGrant)); !res.OK {
		t.Fatalf("reload without the grant: %+v", res)
	}
	if _, err := e.store.RequeueCrossNamespace(context.Background()); err != nil {
		t.Fatal(err)
	}
	const want = "reference to Database/production/a outputs size crosses from namespace staging to production without a grant: the controller config's references.expose needs {namespace: production, kinds: [Database], outputs: [size], to: [{namespace: staging}]}"
	e.eventually(20*time.Second, "b Stalled", func() (bool, string) {
		r, _ := e.resource("staging", "Database", "b")
		c, _ := status.Get(r.Status.Conditions, status.Stalled)
		return c.Status == status.True && strings.Contains(c.Message, want), r.Status.Phase + ": " + r.Status.Message
	})
	if n, _ := e.store.ResourceNeighbours(context.Background(), store.Everything, "staging", "Database", "b"); n.ResolvedSpec != nil || n.ResolvedOrigins != nil {
		t.Fatalf("a refused resolution keeps the resolved spec %s (origins %v)", n.ResolvedSpec, n.ResolvedOrigins)
	}
	if r, _ := e.resource("production", "Database", "a"); r.Status.Phase != "Ready" {
		t.Fatalf("production/a is %s", r.Status.Phase)
	}

	if res := e.replicas[0].Reload(e.config("r1", e.o)); !res.OK {
		t.Fatalf("reload with the grant: %+v", res)
	}
	if _, err := e.store.RequeueCrossNamespace(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitPhase("Ready", 1, "staging/b")
}

// TestCrossNamespaceValueScrubbedFromMessages: staging/b reads production/a's host under a
// grant and its action fails quoting its whole input. The value is "***" in b's message,
// conditions, history and events (read in staging), while b's call got the real value.
func TestCrossNamespaceValueScrubbedFromMessages(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "echo.sh")
	got := filepath.Join(dir, "stdin")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
req="$(cat)"
if [ "$TRUEUP_NAMESPACE" = production ]; then
  printf '{"done": true, "outputs": {"host": "prodhost-abc123.internal"}}\n'
  exit 0
fi
printf '%s' "$req" > "$STDIN_FILE"
echo "provider refused the request: $req" >&2
exit 3
`), 0o755); err != nil {
		t.Fatal(err)
	}
	e := setup(t, options{script: script, env: map[string]string{"STDIN_FILE": got}, references: grantOf("host"),
		backoff: [2]time.Duration{time.Minute, time.Minute}})
	e.commit(map[string]string{"manifests/types.yaml": dbType, "manifests/a.yaml": dbResource("production", "a", 7),
		"manifests/b.yaml": strings.Replace(dbResource("staging", "b", 3), "size: 3", "size: 3\n  engine: \"${{ Database/production/a.outputs.host }}\"", 1)}, "a and b")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.eventually(20*time.Second, "b failed", func() (bool, string) {
		r, _ := e.resource("staging", "Database", "b")
		return r.Status.Phase == "Failed" && strings.Contains(r.Status.Message, "provider refused"), r.Status.Phase + ": " + r.Status.Message
	})
	if b, err := os.ReadFile(got); err != nil || !strings.Contains(string(b), `"engine":"prodhost-abc123.internal"`) {
		t.Fatalf("b's call got %s (%v), want the real host", b, err)
	}
	const value = "prodhost-abc123"
	for _, s := range stagingTexts(t, e) {
		if strings.Contains(s, value) {
			t.Errorf("a message read in staging holds production's value: %s", s)
		}
	}
	if r, _ := e.resource("staging", "Database", "b"); !strings.Contains(r.Status.Message, `"engine":"***"`) {
		t.Errorf("message %q, want the value as ***", r.Status.Message)
	}
}

// prodPassword is production/a's password output in the tests below.
const prodPassword = "pw-Zx81sQ-prod"

// quoteAction gives production resources a password output. A staging resource's call (a
// reconcile while failReconcile is set, or a delete) fails quoting the password it finds
// spliced into spec.engine (a DSN), alone, and the delete its whole spec too.
type quoteAction struct{ failReconcile atomic.Bool }

func (a *quoteAction) password(req actions.Request) string {
	var spec struct {
		Engine string `json:"engine"`
	}
	_ = json.Unmarshal(req.Resource.Spec, &spec)
	u, err := url.Parse(spec.Engine)
	if err != nil || u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return pw
}

func (a *quoteAction) Reconcile(_ context.Context, req actions.Request) (actions.Result, error) {
	if req.Resource.Namespace == "production" {
		return actions.Result{Done: true, Outputs: map[string]any{"password": prodPassword}}, nil
	}
	if a.failReconcile.Load() {
		return actions.Result{}, fmt.Errorf("password authentication failed for user app (password %q)", a.password(req))
	}
	return actions.Result{Done: true}, nil
}

func (a *quoteAction) Delete(_ context.Context, req actions.Request) (actions.Result, error) {
	if req.Resource.Namespace == "production" {
		return actions.Result{Done: true}, nil
	}
	return actions.Result{}, fmt.Errorf("drop refused with password %s for %s", a.password(req), req.Resource.Spec)
}

// spliceSetup: staging/b's spec.engine is a DSN with production/a's password spliced in,
// under a grant; the action is a quoteAction, failing staging's reconciles if failReconcile.
func spliceSetup(t *testing.T, failReconcile bool) *env {
	act := &quoteAction{}
	act.failReconcile.Store(failReconcile)
	e := setup(t, options{action: act, references: grantOf("password"), backoff: [2]time.Duration{time.Minute, time.Minute}})
	e.commit(map[string]string{"manifests/types.yaml": dbType, "manifests/a.yaml": dbResource("production", "a", 7),
		"manifests/b.yaml": strings.Replace(dbResource("staging", "b", 3), "size: 3",
			"size: 3\n  engine: \"postgres://app:${{ Database/production/a.outputs.password }}@db:5432/x\"", 1)}, "a and b")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

// grantOf is a references block letting staging read outputs of production's Databases.
func grantOf(outputs ...string) string {
	return fmt.Sprintf("references: {expose: [{namespace: production, kinds: [Database], outputs: [%s], to: [{namespace: staging}]}]}",
		strings.Join(outputs, ", "))
}

// stagingTexts is every message of staging/b read in staging: its message, conditions,
// history and the namespace's events.
func stagingTexts(t *testing.T, e *env) []string {
	r, _ := e.resource("staging", "Database", "b")
	texts := []string{r.Status.Message}
	for _, c := range r.Status.Conditions {
		texts = append(texts, c.Message)
	}
	hist, err := e.store.ListHistory(context.Background(), "staging", "Database", "b", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hist {
		texts = append(texts, h.Message)
	}
	evs, err := e.store.ListEvents(context.Background(), store.InNamespaces("staging"), store.EventFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		texts = append(texts, ev.Message)
	}
	return texts
}

// TestCrossNamespaceSplicedValueScrubbed: a production password spliced into a staging DSN;
// b's action fails quoting the password alone. It is "***" in every message read in staging.
func TestCrossNamespaceSplicedValueScrubbed(t *testing.T) {
	e := spliceSetup(t, true)
	e.eventually(20*time.Second, "b failed", func() (bool, string) {
		r, _ := e.resource("staging", "Database", "b")
		return r.Status.Phase == "Failed" && strings.Contains(r.Status.Message, "authentication failed"), r.Status.Phase + ": " + r.Status.Message
	})
	for _, s := range stagingTexts(t, e) {
		if strings.Contains(s, prodPassword) {
			t.Errorf("a message read in staging holds production's password: %s", s)
		}
	}
	if r, _ := e.resource("staging", "Database", "b"); !strings.Contains(r.Status.Message, `(password "***")`) {
		t.Errorf("message %q, want the password as ***", r.Status.Message)
	}
}

// TestCrossNamespaceValueScrubbedFromDeletes: staging/b, Ready with production's password
// spliced into its resolved spec, is removed; its delete (called with the resolved spec)
// fails quoting the password and the whole spec. Neither shows in a message read in staging.
func TestCrossNamespaceValueScrubbedFromDeletes(t *testing.T) {
	e := spliceSetup(t, false)
	e.waitPhase("Ready", 1, "production/a", "staging/b")
	e.commit(map[string]string{"manifests/b.yaml": ""}, "remove b")
	if _, err := e.syncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.eventually(20*time.Second, "b's delete failed", func() (bool, string) {
		r, _ := e.resource("staging", "Database", "b")
		return strings.Contains(r.Status.Message, "drop refused"), r.Status.Phase + ": " + r.Status.Message
	})
	for _, s := range stagingTexts(t, e) {
		if strings.Contains(s, prodPassword) {
			t.Errorf("a message read in staging holds production's password: %s", s)
		}
	}
	if r, _ := e.resource("staging", "Database", "b"); !strings.Contains(r.Status.Message, "drop refused with password *** for") {
		t.Errorf("message %q, want the password as ***", r.Status.Message)
	}
}
