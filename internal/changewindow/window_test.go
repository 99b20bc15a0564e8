package changewindow

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/trueup-dev/trueup/internal/policy"
)

func mustCompile(t testing.TB, ws ...Window) *Set {
	t.Helper()
	s, err := Compile(ws)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestCheck(t *testing.T) {
	prod := &policy.Resource{Namespace: "production", Kind: "Database", Name: "db"}
	dev := &policy.Resource{Namespace: "dev", Kind: "Network", Name: "net"}
	freeze := Window{Name: "friday-freeze", Kind: Deny, Schedule: "0 12 * * 5", Duration: 60 * time.Hour, TimeZone: "Europe/Paris",
		Match: policy.Match{Namespaces: []string{"production"}}, AllowOperators: true}
	early := Window{Name: "early", Kind: Deny, Schedule: "0 8 * * *", Duration: 4 * time.Hour, AllowOperators: true}
	late := Window{Name: "late", Kind: Deny, Schedule: "0 11 * * *", Duration: 3 * time.Hour, AllowOperators: true}
	night := Window{Name: "night", Kind: Deny, Schedule: "30 2 * * *", Duration: 10 * time.Minute, TimeZone: "Europe/Paris"}
	nightly := Window{Name: "nightly", Kind: Deny, Schedule: "0 0 * * *", Duration: 5 * time.Hour, AllowOperators: true}
	maint := Window{Name: "db-maintenance", Kind: Allow, Schedule: "0 2 * * *", Duration: 2 * time.Hour, Match: policy.Match{Kinds: []string{"Database"}}}
	for _, tc := range []struct {
		name    string
		ws      []Window
		r       *policy.Resource
		now     string
		closed  bool
		window  string
		until   string
		forever bool
		ops     bool
	}{
		{name: "no windows", r: prod, now: "2026-11-27T13:00:00Z"},
		{name: "freeze open", ws: []Window{freeze}, r: prod, now: "2026-11-27T13:00:00Z", closed: true, window: "friday-freeze",
			until: "2026-11-30T00:00:00+01:00", ops: true},
		{name: "freeze not selecting", ws: []Window{freeze}, r: dev, now: "2026-11-27T13:00:00Z"},
		{name: "freeze closed on thursday", ws: []Window{freeze}, r: prod, now: "2026-11-26T13:00:00Z"},
		{name: "freeze just closed", ws: []Window{freeze}, r: prod, now: "2026-11-29T23:00:00Z"},
		{name: "allow closed", ws: []Window{maint}, r: prod, now: "2026-11-27T13:00:00Z", closed: true, window: "db-maintenance",
			until: "2026-11-28T02:00:00Z"},
		{name: "allow open", ws: []Window{maint}, r: prod, now: "2026-11-27T03:00:00Z"},
		{name: "allow inside freeze waits for both", ws: []Window{freeze, maint}, r: prod, now: "2026-11-27T13:00:00Z", closed: true,
			window: "friday-freeze", until: "2026-11-30T02:00:00Z"},
		{name: "overlapping openings chain", ws: []Window{{Name: "daily", Kind: Deny, Schedule: "@daily", Duration: 36 * time.Hour}}, r: dev,
			now: "2026-11-27T13:00:00Z", closed: true, window: "daily", forever: true, ops: false},
		// The duration is elapsed time: 60 h from Friday noon CEST crosses the change to CET.
		{name: "freeze across the end of summer time", ws: []Window{freeze}, r: prod, now: "2026-10-24T12:00:00Z", closed: true,
			window: "friday-freeze", until: "2026-10-25T23:00:00+01:00", ops: true},
		{name: "freeze opens at noon Paris summer time", ws: []Window{freeze}, r: prod, now: "2026-10-23T10:00:00Z", closed: true,
			window: "friday-freeze", until: "2026-10-25T23:00:00+01:00", ops: true},
		{name: "freeze not yet open at 11:59 Paris", ws: []Window{freeze}, r: prod, now: "2026-10-23T09:59:00Z"},
		// 02:30 does not exist in Paris on 2026-03-29: that opening is skipped.
		{name: "allow at a time summer time skips", ws: []Window{{Name: "night", Kind: Allow, Schedule: "30 2 * * *", Duration: time.Hour,
			TimeZone: "Europe/Paris"}}, r: dev, now: "2026-03-28T12:00:00Z", closed: true, window: "night", until: "2026-03-30T02:30:00+02:00"},
		// 02:30 happens twice in Paris on 2026-10-25 (CEST, then CET): the window opens at both.
		{name: "deny at a repeated time, first", ws: []Window{night}, r: dev, now: "2026-10-25T00:35:00Z", closed: true, window: "night",
			until: "2026-10-25T02:40:00+02:00"},
		{name: "deny at a repeated time, between", ws: []Window{night}, r: dev, now: "2026-10-25T01:00:00Z"},
		{name: "deny at a repeated time, second", ws: []Window{night}, r: dev, now: "2026-10-25T01:35:00Z", closed: true, window: "night",
			until: "2026-10-25T02:40:00+01:00"},
		// and not at all on 2026-03-29, when 02:30 does not exist.
		{name: "deny at a skipped time", ws: []Window{night}, r: dev, now: "2026-03-29T00:35:00Z"},
		{name: "deny at a skipped time, at 03:05", ws: []Window{night}, r: dev, now: "2026-03-29T01:05:00Z"},
		{name: "deny at a skipped time, at 03:35", ws: []Window{night}, r: dev, now: "2026-03-29T01:35:00Z"},
		{name: "chained deny windows", ws: []Window{late, early}, r: dev, now: "2026-11-27T09:00:00Z", closed: true, window: "early",
			until: "2026-11-27T14:00:00Z", ops: true},
		{name: "deny closes at its end exactly", ws: []Window{early}, r: dev, now: "2026-11-27T12:00:00Z"},
		{name: "deny holds from its opening exactly", ws: []Window{early}, r: dev, now: "2026-11-27T08:00:00Z", closed: true, window: "early",
			until: "2026-11-27T12:00:00Z", ops: true},
		{name: "one holding window refuses operators", ws: []Window{late, early, {Name: "strict", Kind: Deny, Schedule: "0 9 * * *",
			Duration: time.Hour}}, r: dev, now: "2026-11-27T09:30:00Z", closed: true, window: "early", until: "2026-11-27T14:00:00Z"},
		{name: "allow opening while a deny window is open", ws: []Window{nightly, {Name: "dawn", Kind: Allow, Schedule: "0 4 * * *",
			Duration: 3 * time.Hour, AllowOperators: true}}, r: dev, now: "2026-11-27T01:00:00Z", closed: true, window: "nightly",
			until: "2026-11-27T05:00:00Z", ops: true},
		{name: "allow open but a deny window holds", ws: []Window{{Name: "dawn", Kind: Allow, Schedule: "0 4 * * *", Duration: 3 * time.Hour},
			nightly}, r: dev, now: "2026-11-27T04:30:00Z", closed: true, window: "nightly", until: "2026-11-27T05:00:00Z", ops: true},
		{name: "allow open when the deny window closes", ws: []Window{nightly, {Name: "two", Kind: Allow,
			Schedule: "0 2 * * *", Duration: 4 * time.Hour}}, r: dev, now: "2026-11-27T01:00:00Z", closed: true, window: "nightly",
			until: "2026-11-27T05:00:00Z", ops: false},
		{name: "allow only ever inside the deny window", ws: []Window{nightly, {Name: "inside", Kind: Allow, Schedule: "0 1 * * *",
			Duration: time.Hour, AllowOperators: true}}, r: dev, now: "2026-11-27T12:00:00Z", closed: true, window: "inside", forever: true,
			ops: true},
		{name: "earliest of two allow windows", ws: []Window{{Name: "weekly", Kind: Allow, Schedule: "@weekly", Duration: time.Hour,
			AllowOperators: true}, {Name: "hourly", Kind: Allow, Schedule: "@hourly", Duration: time.Minute, AllowOperators: true}}, r: dev,
			now: "2026-11-27T12:30:00Z", closed: true, window: "weekly", until: "2026-11-27T13:00:00Z", ops: true},
		{name: "descriptor @daily", ws: []Window{{Name: "midnight", Kind: Deny, Schedule: "@daily", Duration: time.Hour}}, r: dev,
			now: "2026-11-27T00:30:00Z", closed: true, window: "midnight", until: "2026-11-27T01:00:00Z"},
		{name: "allow that never opens", ws: []Window{{Name: "feb30", Kind: Allow, Schedule: "0 0 30 2 *", Duration: time.Hour}}, r: dev,
			now: "2026-11-27T12:00:00Z", closed: true, window: "feb30", forever: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := mustCompile(t, tc.ws...).Check(tc.r, at(tc.now))
			if v.Closed != tc.closed || v.Window != tc.window || v.Forever != tc.forever || v.AllowOperators != tc.ops {
				t.Fatalf("verdict %+v", v)
			}
			// In the zone of the window the walk ended at: the message shows that local time.
			if tc.until != "" && v.Until.Format(time.RFC3339) != tc.until {
				t.Fatalf("until %s, want %s", v.Until.Format(time.RFC3339), tc.until)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	_, err := Compile([]Window{{Name: "Bad", Kind: "sometimes", Schedule: "61 * * * *", TimeZone: "Mars/Olympus"}})
	for _, want := range []string{"windows[0] (Bad).name", "windows[0] (Bad).kind", "windows[0] (Bad).schedule", "windows[0] (Bad).timeZone",
		"windows[0] (Bad).duration"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %s", err, want)
		}
	}
}

func TestMessage(t *testing.T) {
	until := at("2026-11-30T00:00:00+01:00")
	for _, tc := range []struct {
		v    Verdict
		want string
	}{
		{Verdict{}, ""},
		{Verdict{Closed: true, Window: "freeze", Kind: Deny, Until: until, AllowOperators: true},
			"change window freeze (deny) holds changes until 2026-11-30T00:00:00+01:00; an operator may apply it now with trueup reconcile --override-window --reason"},
		{Verdict{Closed: true, Window: "maint", Kind: Allow, Forever: true}, "change window maint (allow) is closed: changes wait with no opening within a year"},
	} {
		if got := tc.v.Message(); got != tc.want {
			t.Errorf("Message() = %q, want %q", got, tc.want)
		}
	}
}

// tenUnmatched are 10 windows of which none selects benchResource.
func tenUnmatched(tb testing.TB) *Set {
	tb.Helper()
	ws := make([]Window, 10)
	for i := range ws {
		ws[i] = Window{Name: fmt.Sprintf("w%d", i), Kind: Deny, Schedule: "0 12 * * 5", Duration: 60 * time.Hour, TimeZone: "Europe/Paris",
			Match: policy.Match{Namespaces: []string{fmt.Sprintf("team-%d-*", i)}, Kinds: []string{"Database"}}}
	}
	s, err := Compile(ws)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

var benchResource = &policy.Resource{Source: "infra", Namespace: "production", Kind: "Database", Name: "db", Labels: map[string]string{"tier": "critical"}}

func TestCheckUnmatchedAllocatesNothing(t *testing.T) {
	s, now := tenUnmatched(t), at("2026-11-27T13:00:00Z")
	if n := testing.AllocsPerRun(100, func() { s.Check(benchResource, now) }); n != 0 {
		t.Errorf("Check allocates %v times for a resource no window selects", n)
	}
}

func BenchmarkCheckUnmatched(b *testing.B) {
	s, now := tenUnmatched(b), at("2026-11-27T13:00:00Z")
	b.ReportAllocs()
	for b.Loop() {
		if s.Check(benchResource, now).Closed {
			b.Fatal("held")
		}
	}
}

func BenchmarkCheckHeld(b *testing.B) {
	s := mustCompile(b, Window{Name: "friday-freeze", Kind: Deny, Schedule: "0 12 * * 5", Duration: 60 * time.Hour, TimeZone: "Europe/Paris"},
		Window{Name: "db-maintenance", Kind: Allow, Schedule: "0 2 * * *", Duration: 2 * time.Hour})
	now := at("2026-11-27T13:00:00Z")
	b.ReportAllocs()
	for b.Loop() {
		if !s.Check(benchResource, now).Closed {
			b.Fatal("not held")
		}
	}
}

// counting counts the activations a schedule is asked for.
type counting struct {
	cron.Schedule
	n *int
}

func (c counting) Next(t time.Time) time.Time {
	*c.n++
	return c.Schedule.Next(t)
}

// A window always open (every minute for two minutes) holds with no known close, and Check
// asks its schedule for a bounded number of activations (not each one up to the horizon).
func TestCheckAlwaysOpenIsBounded(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, Window{Name: "always", Kind: Deny, Schedule: "* * * * *", Duration: 2 * time.Minute})
	n := 0
	s.windows[0].sched = counting{s.windows[0].sched, &n}
	v := s.Check(benchResource, at("2026-11-27T13:00:30Z"))
	if !v.Closed || !v.Forever || v.Window != "always" {
		t.Errorf("verdict %+v; want closed with no known end", v)
	}
	if n > maxChain+8 {
		t.Errorf("Check asked the schedule for %d activations; want at most %d", n, maxChain+8)
	}
	// A chain shorter than the bound still ends where it ends: hourly for 90 minutes, for
	// the hours of one day (the last opens at 17:00).
	s = mustCompile(t, Window{Name: "day", Kind: Deny, Schedule: "0 8-17 * * *", Duration: 90 * time.Minute})
	if v := s.Check(benchResource, at("2026-11-27T09:10:00Z")); !v.Closed || v.Forever || !v.Until.Equal(at("2026-11-27T18:30:00Z")) {
		t.Errorf("verdict %+v; want until 18:30", v)
	}
}

func BenchmarkCheckAlwaysOpen(b *testing.B) {
	s := mustCompile(b, Window{Name: "always", Kind: Deny, Schedule: "* * * * *", Duration: 2 * time.Minute})
	now := at("2026-11-27T13:00:30Z")
	for b.Loop() {
		if !s.Check(benchResource, now).Forever {
			b.Fatal("not held forever")
		}
	}
}
