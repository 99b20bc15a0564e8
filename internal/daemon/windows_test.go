package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/logbuf"
	"github.com/trueup-dev/trueup/internal/status"
)

// TestDaemonWindowsLive: the reconciler checks changes against the windows of the running
// config, and a reload that changes them looks again at what they held.
func TestDaemonWindowsLive(t *testing.T) {
	e := newDaemonEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := e.folder("a", "things")
	if err := os.WriteFile(filepath.Join(dir, "db.yaml"), []byte("apiVersion: example.com/v1\nkind: ThingA\n"+
		"metadata: {name: db, namespace: default}\nspec: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A deny window open since the start of this minute, for a day.
	start := time.Now().UTC().Truncate(time.Minute)
	frozen := e.parse(e.configText("", map[string]string{"a": dir}) +
		fmt.Sprintf("windows:\n  - {name: freeze, kind: deny, schedule: %q, duration: 24h, match: {namespaces: [default]}}\n", start.Format("4 15 * * *")))
	var logs logbuf.Buffer
	d, err := New(frozen, Deps{Stderr: &logs, Version: "test", Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatalf("start: %v\n%s", err, logs.String())
	}
	defer d.Stop()
	phase := func() (string, status.Condition) {
		res, err := e.st.GetResource(ctx, "default", "ThingA", "db")
		if err != nil {
			return "", status.Condition{}
		}
		c, _ := status.Get(res.Status.Conditions, status.Reconciling)
		return res.Status.Phase, c
	}
	waitFor(t, "db held by the window", func() bool { _, c := phase(); return c.Reason == status.ReasonWindowClosed })
	if res := d.Reload(e.parse(e.configText("", map[string]string{"a": dir}))); !res.OK {
		t.Fatalf("reload: %+v", res)
	}
	waitFor(t, "db applied after the reload", func() bool { p, _ := phase(); return p == status.PhaseReady })
}
