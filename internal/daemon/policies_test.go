package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/logbuf"
	"github.com/trueup-dev/trueup/internal/status"
)

// TestDaemonPoliciesLive: the reconciler decides with the policies of the running config,
// and a reload that changes them decides again what they held.
func TestDaemonPoliciesLive(t *testing.T) {
	e := newDaemonEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := e.folder("a", "things")
	if err := os.WriteFile(filepath.Join(dir, "db.yaml"), []byte("apiVersion: example.com/v1\nkind: ThingA\n"+
		"metadata: {name: db, namespace: default, labels: {tier: critical}}\nspec: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withPolicy := func(action string) *config.Config {
		return e.parse(e.configText("", map[string]string{"a": dir}) +
			"policies:\n  - {name: critical-things, match: {selector: tier=critical}, action: " + action + "}\n")
	}
	var logs logbuf.Buffer
	d, err := New(withPolicy("deny"), Deps{Stderr: &logs, Version: "test", Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatalf("start: %v\n%s", err, logs.String())
	}
	defer d.Stop()
	approved := func() status.Condition {
		res, err := e.st.GetResource(ctx, "default", "ThingA", "db")
		if err != nil {
			return status.Condition{}
		}
		c, _ := status.Get(res.Status.Conditions, status.Approved)
		return c
	}
	waitFor(t, "db denied", func() bool { return approved().Reason == status.ReasonPolicyDenied })
	if res := d.Reload(withPolicy("allow")); !res.OK {
		t.Fatalf("reload: %+v", res)
	}
	waitFor(t, "db allowed after the reload", func() bool { return approved().Reason == status.ReasonPolicyAllowed })
}
