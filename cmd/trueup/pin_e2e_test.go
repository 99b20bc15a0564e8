package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestSourcePinEndToEnd is the acceptance of pinning a source with the real binary and a Git
// repository: c1 declares alpha and beta, c2 removes beta (deleted through its action);
// `trueup source pin infra c1` applies c1 again, so beta is created again through its action;
// c3, pushed meanwhile, is the source's pendingRevision and is not applied; `trueup source
// history` lists c1 and c2; `trueup source unpin` applies c3 (gamma created, beta deleted
// again).
func TestSourcePinEndToEnd(t *testing.T) {
	t.Parallel()
	actions, log := holdAction(t, t.TempDir(), "")
	g := startGate(t, map[string]string{
		"types.yaml": holdType("Queue", ""),
		"alpha.yaml": holdResource("Queue", "default", "alpha", "", "{size: 1}"),
		"beta.yaml":  holdResource("Queue", "default", "beta", "", "{size: 2}"),
	}, actions, "")
	const alpha, beta, gamma = "default/Queue/alpha", "default/Queue/beta", "default/Queue/gamma"
	c1 := g.head()
	g.atRevision(c1)
	g.eventually("alpha Ready", func() (bool, string) { return g.resource(alpha).ready() })
	g.eventually("beta Ready", func() (bool, string) { return g.resource(beta).ready() })

	// c2 removes beta: its delete runs through the action.
	g.remove("drop beta", "beta.yaml")
	c2 := g.head()
	g.eventually("beta deleted by c2", func() (bool, string) {
		ok, s := g.found(beta, 404)
		return ok && len(calls(t, log, "delete", "beta")) == 1, fmt.Sprintf("%s; calls %q", s, calls(t, log, "", "beta"))
	})
	g.atRevision(c2)

	// Pinned at c1: beta comes back through its action.
	if out, err := g.cli(g.ci, "source", "pin", "infra", c1[:12]); err == nil || !strings.Contains(out, "reason") {
		t.Errorf("trueup source pin without --reason: %v\n%s\nwant a usage error naming --reason", err, out)
	}
	if out, err := g.cli(g.ci, "source", "pin", "infra", c1[:12], "--reason", "INC-7: c2 broke checkout"); err != nil {
		t.Fatalf("trueup source pin infra %s: %v\n%s", c1[:12], err, out)
	}
	g.atRevision(c1)
	g.eventually("beta created again through its action", func() (bool, string) {
		ok, s := g.resource(beta).ready()
		n := len(calls(t, log, "reconcile", "beta"))
		return ok && n == 2, fmt.Sprintf("%s; %d reconcile calls of beta, want 2 (created, created again)", s, n)
	})
	s, raw := g.source("infra")
	if s.Pinned == nil || s.Pinned.Revision != c1 || s.Pinned.Actor != "token:ci" || s.Pinned.Reason != "INC-7: c2 broke checkout" {
		t.Errorf("the source's pin: want {revision %s, actor token:ci, reason INC-7: c2 broke checkout}: %s", c1, raw)
	}

	// c3, pushed while pinned, waits.
	g.commit("add gamma", map[string]string{"gamma.yaml": holdResource("Queue", "default", "gamma", "", "{size: 3}")})
	c3 := g.head()
	g.eventually("c3 pending", func() (bool, string) {
		s, raw := g.source("infra")
		return s.PendingRevision == c3, fmt.Sprintf("want pendingRevision %s: %s", c3, raw)
	})
	if s, raw := g.source("infra"); s.Revision != c1 {
		t.Errorf("c3 pushed while pinned at c1: want revision %s: %s", c1, raw)
	}
	if ok, st := g.found(gamma, 404); !ok || len(calls(t, log, "", "gamma")) != 0 {
		t.Errorf("gamma, added by the pending c3, was applied: %s; calls %q", st, calls(t, log, "", "gamma"))
	}
	if ok, st := g.resource(beta).ready(); !ok || len(calls(t, log, "delete", "beta")) != 1 {
		t.Errorf("beta while pinned at c1: %s; %d delete calls, want 1", st, len(calls(t, log, "delete", "beta")))
	}

	out, err := g.cli(g.dba, "source", "history", "infra")
	if err != nil || !strings.Contains(out, c1[:7]) || !strings.Contains(out, c2[:7]) || strings.Contains(out, c3[:7]) {
		t.Errorf("trueup source history infra: want c1 %s and c2 %s listed, not the pending c3 %s: %v\n%s", c1[:7], c2[:7], c3[:7], err, out)
	}

	// Unpinned: the newest commit is applied.
	if out, err := g.cli(g.ci, "source", "unpin", "infra", "--reason", "INC-7 fixed"); err != nil {
		t.Fatalf("trueup source unpin infra: %v\n%s", err, out)
	}
	g.atRevision(c3)
	g.eventually("gamma Ready", func() (bool, string) { return g.resource(gamma).ready() })
	g.eventually("beta deleted again by c3", func() (bool, string) {
		ok, s := g.found(beta, 404)
		return ok && len(calls(t, log, "delete", "beta")) == 2, fmt.Sprintf("%s; calls %q", s, calls(t, log, "", "beta"))
	})
	if s, raw := g.source("infra"); s.Pinned != nil || s.PendingRevision != "" {
		t.Errorf("the source once unpinned and at c3: want no pin and no pendingRevision: %s", raw)
	}
	if ok, s := g.resource(alpha).ready(); !ok || len(calls(t, log, "reconcile", "alpha")) != 1 {
		t.Errorf("alpha, the same in every commit: %s; %d reconcile calls, want 1", s, len(calls(t, log, "reconcile", "alpha")))
	}
}
