package main

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
	if got := age(time.Time{}); got != "<none>" {
		t.Errorf("age of zero time %q", got)
	}
	// A server clock ahead of the client's: no "<invalid> ago".
	for d, want := range map[time.Duration]string{-time.Minute: "in the future", -500 * time.Millisecond: "0s ago", time.Minute: "60s ago"} {
		if got := ago(now().Add(-d)); got != want {
			t.Errorf("ago(now%+v) = %q, want %q", -d, got, want)
		}
	}
	if got := timestamp(now().Add(time.Minute)); !strings.HasSuffix(got, " (in the future)") {
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

func TestUnifiedDiff(t *testing.T) {
	t.Parallel()
	lines := func(s string) []string { return strings.Fields(s) }
	cases := []struct {
		name, a, b string
		want       []string
	}{
		{"equal", "a b c", "a b c", nil},
		{"one changed", "a b c d e f g h i", "a b c d X f g h i",
			[]string{"@@ -2,7 +2,7 @@", " b", " c", " d", "-e", "+X", " f", " g", " h"}},
		{"added at end", "a b", "a b c", []string{"@@ -1,2 +1,3 @@", " a", " b", "+c"}},
		{"from empty", "", "a", []string{"@@ -0,0 +1 @@", "+a"}},
		{"to empty", "a b", "", []string{"@@ -1,2 +0,0 @@", "-a", "-b"}},
		{"two hunks", "1 2 3 4 5 6 7 8 9 10 11 12", "X 2 3 4 5 6 7 8 9 10 11 Y",
			[]string{"@@ -1,4 +1,4 @@", "-1", "+X", " 2", " 3", " 4", "@@ -9,4 +9,4 @@", " 9", " 10", " 11", "-12", "+Y"}},
		{"close changes share a hunk", "1 2 3 4 5 6 7 8", "X 2 3 4 5 6 7 Y",
			[]string{"@@ -1,8 +1,8 @@", "-1", "+X", " 2", " 3", " 4", " 5", " 6", " 7", "-8", "+Y"}},
		{"moved line", "a b c d", "b c a d", []string{"@@ -1,4 +1,4 @@", "-a", " b", " c", "+a", " d"}},
	}
	for _, tc := range cases {
		got := unifiedDiff(lines(tc.a), lines(tc.b), 3)
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
	// Beyond the table size limit the middle is shown replaced, still a valid diff.
	var a, b []string
	for i := range 3000 {
		a = append(a, "a"+strings.Repeat("x", i%7))
		b = append(b, "b"+strings.Repeat("x", i%7))
	}
	got := unifiedDiff(a, b, 3)
	if len(got) != 6001 || got[0] != "@@ -1,3000 +1,3000 @@" {
		t.Errorf("large diff: %d lines, header %q", len(got), got[0])
	}
}
