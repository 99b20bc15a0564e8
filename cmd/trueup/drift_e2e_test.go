package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestDriftModesEndToEnd is the acceptance of drift modes with the real binary and an exec
// action whose observe reports that /tags/team was changed by hand (expected "checkout",
// found "legacy"), resynced every second:
//   - probe (a type in mode detect): Drifted=True DriftDetected with the path and both values,
//     a Drifted history row; its observes go on and no reconcile follows the first; no
//     notification;
//   - beacon (mode notify): Drifted=True and a Drifted notification reaches the webhook;
//   - sensor (mode detect, ignore /tags): drift only below an ignored path is no drift (no
//     Drifted, history InSync saying so);
//   - `trueup reconcile` of probe reconciles it, and Drifted goes.
func TestDriftModesEndToEnd(t *testing.T) {
	t.Parallel()
	actions, log := holdAction(t, t.TempDir(), "drift")
	const spec = "{tags: {team: checkout}}"
	g := startGate(t, map[string]string{
		"types.yaml": holdType("Probe", "  resyncInterval: 1s\n  drift: {mode: detect}\n") + "---\n" +
			holdType("Beacon", "  resyncInterval: 1s\n  drift: {mode: notify}\n") + "---\n" +
			holdType("Sensor", "  resyncInterval: 1s\n  drift: {mode: detect, ignore: [/tags]}\n"),
		"probe.yaml":  holdResource("Probe", "default", "probe", "", spec),
		"beacon.yaml": holdResource("Beacon", "default", "beacon", "", spec),
		"sensor.yaml": holdResource("Sensor", "default", "sensor", "", spec),
	}, actions, "")
	const probe, beacon, sensor = "default/Probe/probe", "default/Beacon/beacon", "default/Sensor/sensor"
	g.atRevision(g.head())

	drifted := func(ref, mode string) func() (bool, string) {
		return func() (bool, string) {
			r := g.resource(ref)
			st, reason, msg := r.condition("Drifted")
			ok := st == "True" && reason == "DriftDetected" && strings.Contains(msg, "/tags/team") &&
				strings.Contains(msg, "checkout") && strings.Contains(msg, "legacy")
			return ok, fmt.Sprintf("phase %s, Drifted=%s %s %q, want Drifted=True DriftDetected naming /tags/team, checkout and legacy (mode %s)%s",
				r.Status.Phase, st, reason, msg, mode, r.err)
		}
	}
	g.eventually("probe Drifted", drifted(probe, "detect"))
	g.eventually("beacon Drifted", drifted(beacon, "notify"))

	// detect: the resyncs go on, nothing is corrected, the phase stays.
	observes := len(calls(t, log, "observe", "probe"))
	g.eventually("two more observes of probe", func() (bool, string) {
		n := len(calls(t, log, "observe", "probe"))
		return n >= observes+2, fmt.Sprintf("%d observes since Drifted appeared, want 2", n-observes)
	})
	if got := calls(t, log, "reconcile", "probe"); len(got) != 1 {
		t.Errorf("probe (mode detect) was reconciled %d times, want once (its creation):\n%s", len(got), strings.Join(got, "\n"))
	}
	r := g.resource(probe)
	if ok, s := r.ready(); !ok {
		t.Errorf("probe under detect: %s, want Ready kept", s)
	}
	want := `drift detected, not corrected (drift mode detect): /tags/team: expected "checkout", found "legacy"`
	var row bool
	for _, h := range g.history(probe) {
		row = row || h.Result == "Drifted" && strings.Contains(h.Message, want)
	}
	if !row {
		t.Errorf("probe's history has no Drifted row saying %q:%s", want, results(g.history(probe)))
	}

	// notify: the notification; detect sends none.
	g.eventually("the Drifted notification of beacon", func() (bool, string) { return g.hook.received("beacon", "Drifted") })
	if got := calls(t, log, "reconcile", "beacon"); len(got) != 1 {
		t.Errorf("beacon (mode notify) was reconciled %d times, want once (its creation)", len(got))
	}
	for _, name := range []string{"probe", "sensor"} {
		if ok, _ := g.hook.received(name, "Drifted"); ok {
			t.Errorf("a Drifted notification of %s (mode detect) was sent: %q", name, g.hook.events(name))
		}
	}

	// ignore: drift only under /tags is no drift.
	g.eventually("sensor's drift found in ignored fields only", func() (bool, string) {
		h := g.history(sensor)
		for _, e := range h {
			if e.Result == "InSync" && strings.Contains(e.Message, "drift only in ignored fields: /tags/team") {
				return true, ""
			}
		}
		return false, "no InSync attempt saying \"drift only in ignored fields: /tags/team\":" + results(h)
	})
	if st, reason, msg := g.resource(sensor).condition("Drifted"); st != "" {
		t.Errorf("sensor (ignore /tags) has Drifted=%s %s %q, want no Drifted condition", st, reason, msg)
	}
	if got := calls(t, log, "reconcile", "sensor"); len(got) != 1 {
		t.Errorf("sensor was reconciled %d times, want once (its creation)", len(got))
	}

	// An operator's reconcile corrects probe's drift; Drifted goes and stays gone.
	if out, err := g.cli(g.ci, "reconcile", "Probe/probe"); err != nil {
		t.Fatalf("trueup reconcile Probe/probe: %v\n%s", err, out)
	}
	g.eventually("probe reconciled and Drifted gone", func() (bool, string) {
		r := g.resource(probe)
		st, reason, msg := r.condition("Drifted")
		n := len(calls(t, log, "reconcile", "probe"))
		return n == 2 && st == "" && r.Status.Phase == "Ready", fmt.Sprintf("%d reconcile calls (want 2), phase %s, Drifted=%s %s %q%s",
			n, r.Status.Phase, st, reason, msg, r.err)
	})
	observes = len(calls(t, log, "observe", "probe"))
	g.eventually("an observe of probe after the reconcile", func() (bool, string) {
		n := len(calls(t, log, "observe", "probe"))
		return n > observes, "no observe since the reconcile"
	})
	if st, reason, msg := g.resource(probe).condition("Drifted"); st != "" {
		t.Errorf("probe after the reconcile and an in-sync resync: Drifted=%s %s %q, want none", st, reason, msg)
	}
}
