package cli

import (
	"strings"
	"testing"
	"time"
)

func TestHumanDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-2 * time.Second, "<invalid>"},
		{-500 * time.Millisecond, "0s"},
		{0, "0s"},
		{5 * time.Second, "5s"},
		{119 * time.Second, "119s"},
		{2 * time.Minute, "2m"},
		{3*time.Minute + 20*time.Second, "3m20s"},
		{45 * time.Minute, "45m"},
		{179 * time.Minute, "179m"},
		{3 * time.Hour, "3h"},
		{5*time.Hour + 12*time.Minute, "5h12m"},
		{30 * time.Hour, "30h"},
		{4 * 24 * time.Hour, "4d"},
		{4*24*time.Hour + 5*time.Hour, "4d5h"},
		{120 * 24 * time.Hour, "120d"},
		{(3*365 + 10) * 24 * time.Hour, "3y10d"},
		{10 * 365 * 24 * time.Hour, "10y"},
	} {
		if got := humanDuration(tc.d); got != tc.want {
			t.Errorf("humanDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if got := age(now, time.Time{}); got != "<none>" {
		t.Errorf("age of zero time %q", got)
	}
	// A server clock ahead of the client's: no "<invalid> ago".
	for d, want := range map[time.Duration]string{-time.Minute: "in the future", -500 * time.Millisecond: "0s ago", time.Minute: "60s ago"} {
		if got := ago(now, now.Add(-d)); got != want {
			t.Errorf("ago(now%+v) = %q, want %q", -d, got, want)
		}
	}
	if got := timestamp(now, now.Add(time.Minute)); !strings.HasSuffix(got, " (in the future)") {
		t.Errorf("timestamp of a future time %q", got)
	}
}

func TestMillis(t *testing.T) {
	t.Parallel()
	for ms, want := range map[int64]string{0: "0ms", 999: "999ms", 1200: "1.2s", 59_940: "59.9s", 123_456: "2m3s", 3_600_000: "1h0m0s"} {
		if got := millis(ms); got != want {
			t.Errorf("millis(%d) = %q, want %q", ms, got, want)
		}
	}
}

func TestCells(t *testing.T) {
	t.Parallel()
	if got := truncate("exit status 1\nstderr tail", 60); got != "exit status 1 …" {
		t.Errorf("multi-line cell %q", got)
	}
	if got := truncate("ééééééééééé", 5); got != "éééé…" {
		t.Errorf("truncate runes %q", got)
	}
	if got := truncate("a\tb\n\n", 10); got != "a b" {
		t.Errorf("tab and blank second line %q", got)
	}
	var b strings.Builder
	tb := newTable(&b, "A", "B", "C")
	tb.row("x", "", "")
	tb.row("long value", "y", "z")
	if err := tb.flush(); err != nil {
		t.Fatal(err)
	}
	if want := "A            B   C\nx\nlong value   y   z\n"; b.String() != want {
		t.Errorf("table:\n%q\nwant\n%q", b.String(), want)
	}
}
