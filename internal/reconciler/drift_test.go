package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
)

// observer is an action whose Observe returns what the test sets.
type observer struct {
	callsOnly
	obs *actions.Observation
}

func (a observer) Observe(_ context.Context, req actions.Request) (actions.Observation, error) {
	a.record("observe %s", req.Resource.Name)
	a.mu.Lock()
	defer a.mu.Unlock()
	return *a.obs, nil
}

var _ actions.Observer = observer{}

// set makes what Observe returns o.
func (a observer) set(o actions.Observation) {
	a.mu.Lock()
	defer a.mu.Unlock()
	*a.obs = o
}

// newDriftFixture runs a reconciler whose Widget type has the drift policy policy (YAML flow
// mapping) and waits until db is Ready.
func newDriftFixture(t *testing.T, policy string) (*gateFixture, observer, *recorder) {
	t.Helper()
	return newDriftFixtureWith(t, policy, func(*Options) {})
}

func newDriftFixtureWith(t *testing.T, policy string, tweak func(*Options)) (*gateFixture, observer, *recorder) {
	t.Helper()
	rec := &recorder{}
	act := observer{callsOnly{rec}, &actions.Observation{InSync: true}}
	f := newGateFixtureWith(t, act, tweak)
	f.waitPhase("db", status.PhaseReady)
	f.apply(strings.Replace(gateManifests(1, true), "  action: {name: act}\n", "  action: {name: act}\n  drift: "+policy+"\n", 1))
	return f, act, rec
}

// resync makes db due and waits for the history row of its next resync.
func (f *gateFixture) resync() store.HistoryEntry {
	f.t.Helper()
	before := f.history()
	f.due()
	var h store.HistoryEntry
	waitFor(f.t, "a resync of db", func() (bool, string) {
		all := f.history()
		if len(all) == len(before) {
			return false, fmt.Sprint(len(all), " history rows")
		}
		h = all[0]
		return true, ""
	})
	f.waitIdle()
	return h
}

func (f *gateFixture) history() []store.HistoryEntry {
	f.t.Helper()
	h, err := f.st.ListHistory(f.ctx, "default", "Widget", "db", 100)
	if err != nil {
		f.t.Fatal(err)
	}
	return h
}

// notifications lists the messages of db's outbox rows of event.
func (f *gateFixture) notifications(event string) []string {
	f.t.Helper()
	rows, err := f.db.Query(f.ctx, `SELECT message FROM notification_outbox WHERE name = 'db' AND event = $1 ORDER BY id`, event)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// drifted returns db's Drifted condition ("" status: absent) and checks that phase and Ready
// are what a Ready resource shows.
func (f *gateFixture) drifted() status.Condition {
	f.t.Helper()
	res := f.get("db")
	if ready, _ := status.Get(res.Status.Conditions, status.Ready); res.Status.Phase != status.PhaseReady || ready.Status != status.True {
		f.t.Errorf("db is not Ready: %s", shows(res))
	}
	c, _ := status.Get(res.Status.Conditions, status.Drifted)
	return c
}

// Under detect, drift is recorded and left: no Reconcile, Drifted=True with what drifted, an
// Event once per drift, no notification; an operator's reconcile corrects it and clears it.
func TestDriftDetect(t *testing.T) {
	t.Parallel()
	f, act, rec := newDriftFixture(t, "{mode: detect}")
	act.set(actions.Observation{Observed: json.RawMessage(`{"size": 2}`)})
	const msg = `drift detected, not corrected (drift mode detect): /size: expected 1, found 2`
	for i := range 2 {
		h := f.resync()
		if h.Result != resultDrifted || h.Message != msg || h.Trigger != "resync" {
			t.Fatalf("resync %d: history %s %q", i, h.Result, h.Message)
		}
		if c := f.drifted(); c.Status != status.True || c.Reason != status.ReasonDriftDetected || c.Message != msg {
			t.Fatalf("resync %d: Drifted %+v", i, c)
		}
	}
	if n := rec.count("reconcile db"); n != 1 {
		t.Errorf("%d reconciles; want only the first apply: %v", n, rec.log())
	}
	if evs := f.events(status.ReasonDriftDetected); len(evs) != 1 || evs[0].Type != store.EventWarning || evs[0].Message != msg {
		t.Errorf("events: %+v; want one Warning for the drift", evs)
	}
	if n := f.notifications("Drifted"); len(n) != 0 {
		t.Errorf("detect sent notifications: %q", n)
	}

	// An operator's reconcile corrects it.
	if _, err := f.st.RequestReconcile(f.ctx, "default", "Widget", "db", "token:ops"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "db reconciled by the operator", func() (bool, string) {
		res := f.get("db")
		_, drifted := status.Get(res.Status.Conditions, status.Drifted)
		return rec.count("reconcile db") == 2 && !drifted, shows(res)
	})
}

// Under notify, the Drifted notification goes when the drift appears or changes, not again
// for the same drift; a resync in sync removes Drifted.
func TestDriftNotify(t *testing.T) {
	t.Parallel()
	f, act, rec := newDriftFixture(t, "{mode: notify}")
	act.set(actions.Observation{Drift: []actions.DriftPath{{Path: "/size", Expected: 1, Actual: 3}}})
	f.resync()
	f.resync()
	const first = `drift detected, not corrected (drift mode notify): /size: expected 1, found 3`
	if n := f.notifications("Drifted"); len(n) != 1 || n[0] != first {
		t.Fatalf("notifications %q; want one: %s", n, first)
	}
	act.set(actions.Observation{Drift: []actions.DriftPath{{Path: "/size"}}})
	f.resync()
	if n := f.notifications("Drifted"); len(n) != 2 || n[1] != "drift detected, not corrected (drift mode notify): /size" {
		t.Fatalf("notifications %q; want a second for the other drift", n)
	}
	if n := len(f.events(status.ReasonDriftDetected)); n != 2 {
		t.Errorf("%d DriftDetected events; want 2", n)
	}
	act.set(actions.Observation{InSync: true})
	f.due()
	waitFor(t, "Drifted gone", func() (bool, string) {
		res := f.get("db")
		_, ok := status.Get(res.Status.Conditions, status.Drifted)
		return !ok, shows(res)
	})
	if c := f.drifted(); c.Status != "" {
		t.Errorf("Drifted %+v", c)
	}
	if n := rec.count("reconcile db"); n != 1 {
		t.Errorf("%d reconciles; want only the first apply: %v", n, rec.log())
	}
}

// Ignored paths never count as drift, whatever the mode: the resync is in sync and says so;
// drift elsewhere, or without paths, is corrected (remediate).
func TestDriftIgnored(t *testing.T) {
	t.Parallel()
	f, act, rec := newDriftFixture(t, "{ignore: [/tags, /meta~1data]}")
	act.set(actions.Observation{Drift: []actions.DriftPath{{Path: "/tags/owner", Expected: "a", Actual: "b"}, {Path: "/meta~1data"}}})
	if h := f.resync(); h.Result != resultInSync || h.Message != "drift only in ignored fields: /tags/owner, /meta~1data" {
		t.Fatalf("history %s %q", h.Result, h.Message)
	}
	if c := f.drifted(); c.Status != "" {
		t.Errorf("Drifted %+v", c)
	}
	if n := rec.count("reconcile db"); n != 1 {
		t.Fatalf("%d reconciles; want only the first apply", n)
	}
	for i, o := range []actions.Observation{
		{Drift: []actions.DriftPath{{Path: "/tags/owner"}, {Path: "/size", Expected: 1, Actual: 2}}},
		{Message: "the bucket policy changed"},
	} {
		act.set(o)
		if h := f.resync(); h.Result != resultSucceeded || !strings.HasPrefix(h.Message, "drift corrected: ") {
			t.Errorf("drift %d: history %s %q", i, h.Result, h.Message)
		}
		if n := rec.count("reconcile db"); n != 2+i {
			t.Errorf("drift %d: %d reconciles", i, n)
		}
	}
	if n := f.notifications("Drifted"); len(n) != 2 {
		t.Errorf("remediated drift: %d notifications, want 2 (as before drift policies)", len(n))
	}
}

// What drifted is told without the call's secrets: where a revealed value is expected,
// neither it nor what the action found there (likely a live credential too) is in history,
// condition, event or notification.
func TestDriftScrubbed(t *testing.T) {
	t.Parallel()
	f, act, _ := newDriftFixtureWith(t, "{mode: notify}", func(o *Options) {
		o.Reveal = func(_ context.Context, c store.Claimed) (json.RawMessage, []string, error) {
			return json.RawMessage(`{"size": 1, "password": "hunter2-secret"}`), []string{"hunter2-secret"}, nil
		}
	})
	act.set(actions.Observation{Observed: json.RawMessage(`{"size": 1, "password": "found-other"}`)})
	h := f.resync()
	c := f.drifted()
	evs := f.events(status.ReasonDriftDetected)
	n := f.notifications("Drifted")
	if len(evs) != 1 || len(n) != 1 {
		t.Fatalf("events %+v, notifications %q", evs, n)
	}
	for what, m := range map[string]string{"history": h.Message, "condition": c.Message, "event": evs[0].Message, "notification": n[0]} {
		if strings.Contains(m, "hunter2") || strings.Contains(m, "found-other") || !strings.Contains(m, "/password: differs (secret value)") {
			t.Errorf("%s: %q", what, m)
		}
	}
}

// A revealed secret longer than a drift value's bound is scrubbed before the value is cut:
// no beginning of it is left in history, condition, events or notification, whether the
// drift is left (notify) or corrected (remediate, told by the paths).
func TestDriftScrubbedLong(t *testing.T) {
	t.Parallel()
	secret := strings.Repeat("0123456789abcdef", 19)[:300]
	for _, policy := range []string{"{mode: notify}", "{}"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			f, act, _ := newDriftFixtureWith(t, policy, func(o *Options) {
				o.Reveal = func(_ context.Context, c store.Claimed) (json.RawMessage, []string, error) {
					return json.RawMessage(`{"size": 1, "key": "` + secret + `"}`), []string{secret}, nil
				}
			})
			act.set(actions.Observation{Observed: json.RawMessage(`{"size": 1, "key": "other"}`)})
			h := f.resync()
			told := map[string]string{"history": h.Message, "condition": f.drifted().Message, "message": f.get("db").Status.Message}
			for i, e := range f.events(status.ReasonDriftDetected) {
				told[fmt.Sprint("event ", i)] = e.Message
			}
			n := f.notifications("Drifted")
			if len(n) != 1 {
				t.Fatalf("notifications %q", n)
			}
			told["notification"] = n[0]
			if !strings.Contains(h.Message, "/key") {
				t.Errorf("history %q does not name /key", h.Message)
			}
			for what, m := range told {
				for i := 0; i+20 <= len(secret); i++ {
					if strings.Contains(m, secret[i:i+20]) {
						t.Errorf("%s: %q holds %q of the secret", what, m, secret[i:i+20])
						break
					}
				}
			}
		})
	}
}

// What a resync's drift comes to under each drift policy.
func TestObservedDrift(t *testing.T) {
	t.Parallel()
	spec := []byte(`{"size": 1, "tags": {"owner": "a"}}`)
	paths := actions.Observation{Message: "differs", Drift: []actions.DriftPath{{Path: "/tags/owner", Expected: "a", Actual: "b"}}}
	for _, tc := range []struct {
		name                   string
		policy                 *manifest.DriftPolicy
		o                      actions.Observation
		leave, inSync, ignored bool
		drift                  string
	}{
		{"no policy: remediate with the action's message", nil, paths, false, false, false, "differs"},
		{"remediate without a message: the paths", &manifest.DriftPolicy{Mode: manifest.DriftRemediate}, actions.Observation{Drift: paths.Drift},
			false, false, false, `/tags/owner: expected "a", found "b"`},
		{"remediate, nothing said", nil, actions.Observation{}, false, false, false, "drift detected"},
		{"ignored under remediate", &manifest.DriftPolicy{Mode: manifest.DriftRemediate, Ignore: []string{"/tags"}}, paths,
			false, true, true, "/tags/owner"},
		{"ignored under detect", &manifest.DriftPolicy{Mode: manifest.DriftDetect, Ignore: []string{"/tags"}}, paths,
			false, true, true, "/tags/owner"},
		{"detect: the paths", &manifest.DriftPolicy{Mode: manifest.DriftDetect}, paths, true, false, false, `/tags/owner: expected "a", found "b"`},
		{"notify, compared", &manifest.DriftPolicy{Mode: manifest.DriftNotify, Ignore: []string{"/tags"}},
			actions.Observation{Observed: json.RawMessage(`{"size": 2, "tags": {"owner": "b"}}`)}, true, false, false, "/size: expected 1, found 2"},
		{"detect, a long message", &manifest.DriftPolicy{Mode: manifest.DriftDetect}, actions.Observation{Message: strings.Repeat("x", 10000)},
			true, false, false, strings.Repeat("x", 10000)},
		{"detect, no paths: never ignored", &manifest.DriftPolicy{Mode: manifest.DriftDetect, Ignore: []string{"/"}},
			actions.Observation{Message: "etag differs"}, true, false, false, "etag differs"},
	} {
		a := attempt{driftPolicy: tc.policy}
		leave := observedDrift(tc.o, spec, nil, &a)
		if leave != tc.leave || a.leave != tc.leave || a.inSync != tc.inSync || a.ignored != tc.ignored || a.drift != tc.drift {
			t.Errorf("%s: leave %v/%v inSync %v ignored %v drift %q; want %v %v %v %q", tc.name, leave, a.leave, a.inSync, a.ignored, a.drift,
				tc.leave, tc.inSync, tc.ignored, tc.drift)
		}
	}
}

// The write of drift left in place: scrubbed and bounded, phase and Ready kept, the next
// resync due (a change that arrived meanwhile at once), news told once.
func TestDriftLeftUpdate(t *testing.T) {
	t.Parallel()
	r := newTestReconciler()
	c := claimed(readyGen1, 1, false)
	notify := &manifest.DriftPolicy{Mode: manifest.DriftNotify}
	a := attempt{op: "reconcile", trigger: "resync", started: tPrev, driftPolicy: notify, leave: true,
		drift: "/key: expected \"" + secret + "\", found \"x\"; " + strings.Repeat("y", 3*maxDriftMessage)}
	u := r.update(c, a, unchanged(c))
	d, _ := status.Get(u.Conditions, status.Drifted)
	if strings.Contains(u.Message, secret) || len(u.Message) > maxDriftMessage+200 || d.Message != u.Message || u.History.Message != u.Message {
		t.Errorf("message of %d bytes, scrubbed %v; condition and history the same: %v", len(u.Message), !strings.Contains(u.Message, secret),
			d.Message == u.Message && u.History.Message == u.Message)
	}
	if u.Phase != status.PhaseReady || d.Status != status.True || u.History.Result != resultDrifted || !u.Drifted || len(u.Events) != 1 || !u.KeepActionState {
		t.Errorf("phase %s Drifted %s result %s notified %v events %d", u.Phase, d.Status, u.History.Result, u.Drifted, len(u.Events))
	}
	if u.RunAt == nil || time.Until(*u.RunAt) < testResync/2 {
		t.Errorf("next run %v; want the next resync", u.RunAt)
	}
	// The same drift again: nothing to tell.
	again := claimed(status.State{Phase: u.Phase, Conditions: u.Conditions, ObservedGeneration: u.ObservedGeneration}, 1, false)
	if u2 := r.update(again, a, unchanged(again)); u2.Drifted || len(u2.Events) != 0 {
		t.Errorf("the same drift told again: notified %v, %d events", u2.Drifted, len(u2.Events))
	}
	// Under detect, no notification; a change that arrived meanwhile runs at once.
	a.driftPolicy = &manifest.DriftPolicy{Mode: manifest.DriftDetect}
	u3 := r.update(c, a, specChanged(c, 2))
	if u3.Drifted || len(u3.Events) != 1 || u3.Phase != status.PhaseReconciling || u3.RunAt == nil || time.Until(*u3.RunAt) > time.Second {
		t.Errorf("detect with a new generation: notified %v, %d events, phase %s, run at %v", u3.Drifted, len(u3.Events), u3.Phase, u3.RunAt)
	}
}
