package ratelimit

import (
	"testing"
	"time"
)

func TestPause(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name string
		do   func(p *Pause)
		at   time.Time
		want time.Time // zero: not paused
	}{
		{"never paused", func(*Pause) {}, now, time.Time{}},
		{"paused", func(p *Pause) { p.Extend(now.Add(time.Minute)) }, now, now.Add(time.Minute)},
		{"over", func(p *Pause) { p.Extend(now.Add(time.Minute)) }, now.Add(time.Minute), time.Time{}},
		{"earlier end keeps the later", func(p *Pause) { p.Extend(now.Add(time.Minute)); p.Extend(now.Add(time.Second)) }, now, now.Add(time.Minute)},
		{"later end extends", func(p *Pause) { p.Extend(now.Add(time.Second)); p.Extend(now.Add(time.Hour)) }, now, now.Add(time.Hour)},
		{"spent", func(p *Pause) { p.Spent(0, now.Add(time.Minute), now) }, now, now.Add(time.Minute)},
		{"requests left", func(p *Pause) { p.Spent(1, now.Add(time.Minute), now) }, now, time.Time{}},
		{"spent, reset past", func(p *Pause) { p.Spent(0, now.Add(-time.Minute), now) }, now, time.Time{}},
		{"spent, no reset", func(p *Pause) { p.Spent(0, time.Time{}, now) }, now, time.Time{}},
	} {
		p := &Pause{}
		tc.do(p)
		got, ok := p.Until(tc.at)
		if ok != !tc.want.IsZero() || !got.Equal(tc.want) {
			t.Errorf("%s: Until = %v, %v; want %v", tc.name, got, ok, tc.want)
		}
	}
}

func TestFor(t *testing.T) {
	t.Parallel()
	const origin = "https://forge.test.for.example"
	r := new(Registry)
	a := r.For(origin, "token-a")
	for _, tc := range []struct {
		name       string
		origin     string
		credential string
		shared     bool
	}{
		{"same host and credential", origin, "token-a", true},
		{"other credential", origin, "token-b", false},
		{"other host", "https://other.test.for.example", "token-a", false},
		{"other port", origin + ":8443", "token-a", false},
		{"no credential", origin, "", false},
	} {
		if got := r.For(tc.origin, tc.credential) == a; got != tc.shared {
			t.Errorf("%s: shared = %v, want %v", tc.name, got, tc.shared)
		}
	}
	if own1, own2 := r.For(origin, ""), r.For(origin, ""); own1 == own2 {
		t.Error("two clients without a credential share a pause")
	}
	if new(Registry).For(origin, "token-a") == a {
		t.Error("two registries share a pause")
	}
	s1, s2 := Shared(), Shared()
	if s1 != s2 || s1.For(origin, "token-a") != s2.For(origin, "token-a") || s1.For(origin, "token-a") == a {
		t.Error("the process's registry is not one registry of its own")
	}
}
