package changewindow

import (
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/policy"
)

func mustCompile(t *testing.T, ws ...Window) *Set {
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := mustCompile(t, tc.ws...).Check(tc.r, at(tc.now))
			if v.Closed != tc.closed || v.Window != tc.window || v.Forever != tc.forever || v.AllowOperators != tc.ops {
				t.Fatalf("verdict %+v", v)
			}
			if tc.until != "" && !v.Until.Equal(at(tc.until)) {
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
