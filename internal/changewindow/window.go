// Package changewindow owns the change windows of the controller config (the `windows` block):
// their shape, their compilation and the pure decision of whether a resource's change may
// proceed at a given time, and when it may if not. A window opens at each activation of its
// cron schedule (in its time zone) and stays open for its duration; a deny window holds the
// changes of the resources it selects while open, and allow windows let the resources they
// select change only while one of them is open. The package does no I/O.
package changewindow

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/trueup-dev/trueup/internal/policy"
)

// Kind says what an open window does.
type Kind string

const (
	// Allow windows let the resources they select change only while one of them is open.
	Allow Kind = "allow"
	// Deny windows hold the changes of the resources they select while open.
	Deny Kind = "deny"
)

// Window is one entry of the windows block: a time when the changes of the resources it
// selects are held (deny) or let through (allow). It opens at each activation of schedule,
// read in timeZone, and stays open for duration. A held change — an apply, a delete, a drift
// correction; never work in flight, nor drift detection — is not called: the resource shows
// Reconciling=True reason WindowClosed, naming the window and when the change may proceed
// (RFC 3339), and is reconciled then without a new commit. Example:
// `{name: friday-freeze, kind: deny, schedule: "0 12 * * 5", duration: 60h, timeZone: Europe/Paris, match: {namespaces: [production]}, allowOperators: true}`.
type Window struct {
	// Name identifies the window in conditions, history and errors (a DNS label); unique.
	Name string `yaml:"name"`
	// Kind is deny (the window holds the changes of the resources it selects while open) or
	// allow (the resources it selects change only while one of the allow windows selecting
	// them is open, and no deny window holds them).
	Kind Kind `yaml:"kind"`
	// Schedule is a cron expression (five fields: minute hour day-of-month month
	// day-of-week, or a descriptor such as @daily or @weekly) saying when the window opens,
	// read in timeZone. It follows the local clock on the days it changes: an opening at a
	// local time that a change to summer time skips does not happen that day, and one at a
	// local time that the end of summer time repeats happens twice (e.g. `30 2 * * *` in
	// Europe/Paris).
	Schedule string `yaml:"schedule"`
	// Duration is how long the window stays open after each opening (> 0; elapsed time, so
	// a window across a change of summer time lasts exactly as long). Openings that overlap
	// make one longer window; one that chains more than 1024 openings (a duration at least
	// the time between openings, such as every minute for two minutes) counts as open with
	// no close within a year.
	Duration time.Duration `yaml:"duration"`
	// TimeZone is the IANA name of the zone the schedule is read in (default UTC). In a
	// zone with summer time, an opening in the hour the clocks skip or repeat happens
	// never or twice that day (see schedule).
	TimeZone string `yaml:"timeZone"`
	// Match selects the resources the window is about (every resource without it), as a
	// policy's match does.
	Match policy.Match `yaml:"match"`
	// AllowOperators lets an operator apply one resource's change while the window holds it
	// (`trueup reconcile --override-window --reason …`); without it the override is refused.
	AllowOperators bool `yaml:"allowOperators"`
}

// horizon bounds how far ahead Check looks for a window to open: a schedule that never
// opens within it holds an allow-windowed resource with no known end.
const horizon = 366 * 24 * time.Hour

// maxSteps bounds Check's walk over windows that chain (a deny window closing as another
// opens, an allow window opening inside a deny window).
const maxSteps = 64

// maxChain bounds the openings of one window that openAt follows, each before the previous
// one closes: beyond it the window counts as open past the horizon.
const maxChain = 1024

var nameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// Set is a compiled list of windows, safe for concurrent use. The nil Set has no windows.
type Set struct {
	windows []compiled
}

type compiled struct {
	Window
	policy.Matcher
	sched cron.Schedule
	loc   *time.Location
}

// CompileError is a window that does not compile: which one and which of its fields.
type CompileError struct {
	Index int
	Name  string
	Field string
	Msg   string
}

func (e *CompileError) Error() string {
	at := fmt.Sprintf("windows[%d]", e.Index)
	if e.Name != "" {
		at += " (" + e.Name + ")"
	}
	return at + "." + e.Field + ": " + e.Msg
}

var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Compile checks and compiles windows; the error names each window and field that is wrong.
func Compile(windows []Window) (*Set, error) {
	s := &Set{windows: make([]compiled, 0, len(windows))}
	var errs []error
	seen := map[string]bool{}
	for i, w := range windows {
		bad := func(field, format string, args ...any) {
			errs = append(errs, &CompileError{Index: i, Name: w.Name, Field: field, Msg: fmt.Sprintf(format, args...)})
		}
		c := compiled{Window: w, loc: time.UTC}
		if !nameRe.MatchString(w.Name) {
			bad("name", "%q must be a DNS label (lowercase letters, digits and '-', at most 63)", w.Name)
		} else if seen[w.Name] {
			bad("name", "window %q declared twice", w.Name)
		}
		seen[w.Name] = true
		switch w.Kind {
		case Allow, Deny:
		case "":
			bad("kind", "required (allow or deny)")
		default:
			bad("kind", "%q is not allow or deny", w.Kind)
		}
		if w.TimeZone != "" {
			loc, err := time.LoadLocation(w.TimeZone)
			if err != nil || strings.EqualFold(w.TimeZone, "local") {
				bad("timeZone", "%q is not an IANA time zone name (e.g. Europe/Paris, UTC)", w.TimeZone)
			} else {
				c.loc = loc
			}
		}
		if strings.TrimSpace(w.Schedule) == "" {
			bad("schedule", "required (a cron expression, e.g. \"0 12 * * 5\")")
		} else if strings.HasPrefix(strings.TrimSpace(w.Schedule), "@every") ||
			strings.Contains(w.Schedule, "TZ=") {
			bad("schedule", "%q: use a cron expression or descriptor, and timeZone for the zone", w.Schedule)
		} else if sched, err := parser.Parse(w.Schedule); err != nil {
			bad("schedule", "%q: %v", w.Schedule, err)
		} else {
			c.sched = sched
		}
		if w.Duration <= 0 {
			bad("duration", "required and > 0 (e.g. 2h)")
		}
		c.Matcher = policy.CompileMatch(w.Match, bad)
		s.windows = append(s.windows, c)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// Len is the number of windows.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.windows)
}

// Window returns the window named name (ok false: none).
func (s *Set) Window(name string) (Window, bool) {
	if s != nil {
		for i := range s.windows {
			if s.windows[i].Name == name {
				return s.windows[i].Window, true
			}
		}
	}
	return Window{}, false
}

// Verdict is whether a resource's change may proceed at a time.
type Verdict struct {
	// Closed says a window holds the change now.
	Closed bool
	// Window names the window that holds it (the first deny window open; else the first of
	// the allow windows selecting the resource), Kind its kind.
	Window string
	Kind   Kind
	// Until is when the change may proceed: the first time no deny window selecting the
	// resource is open and, when allow windows select it, one of them is (zero when Closed
	// is false, or when no such time comes within a year: Forever).
	Until   time.Time
	Forever bool
	// AllowOperators says an operator may override: every window that holds the change at
	// now allows it. Otherwise Refusing names the first of those that does not.
	AllowOperators bool
	Refusing       string
}

// Message is what a condition says of a held change: the window, its kind and when the
// change may proceed (RFC 3339, in the window's time zone).
func (v Verdict) Message() string {
	if !v.Closed {
		return ""
	}
	until := "with no opening within a year"
	if !v.Forever {
		until = "until " + v.Until.Format(time.RFC3339)
	}
	msg := fmt.Sprintf("change window %s (%s) holds changes %s", v.Window, v.Kind, until)
	if v.Kind == Allow {
		msg = fmt.Sprintf("change window %s (allow) is closed: changes wait %s", v.Window, until)
	}
	if v.AllowOperators {
		msg += "; an operator may apply it now with trueup reconcile --override-window --reason"
	}
	return msg
}

// Selects reports whether any window selects r: only then may Check hold its changes.
func (s *Set) Selects(r *policy.Resource) bool {
	if s == nil {
		return false
	}
	for i := range s.windows {
		if s.windows[i].Selects(r) {
			return true
		}
	}
	return false
}

// Check says whether a change of r may proceed at now, and if not, which window holds it and
// when it may. It allocates nothing for a resource that at most eight windows select.
func (s *Set) Check(r *policy.Resource, now time.Time) Verdict {
	if s == nil {
		return Verdict{}
	}
	var buf [8]*compiled
	sel := buf[:0]
	hasAllow, allowOpen := false, false
	for i := range s.windows {
		w := &s.windows[i]
		if !w.Selects(r) {
			continue
		}
		sel = append(sel, w)
		if w.Kind == Allow {
			hasAllow = true
			allowOpen = allowOpen || w.open(now)
		}
	}
	// The windows holding the change at now: each deny window open, and every allow window
	// when none of them is open.
	v := Verdict{AllowOperators: true}
	for _, w := range sel {
		if w.Kind == Deny && !w.open(now) || w.Kind == Allow && allowOpen {
			continue
		}
		if !v.Closed || v.Kind == Allow && w.Kind == Deny {
			v.Closed, v.Window, v.Kind = true, w.Name, w.Kind
		}
		if !w.AllowOperators && v.AllowOperators {
			v.AllowOperators, v.Refusing = false, w.Name
		}
	}
	if !v.Closed {
		return Verdict{}
	}
	// Walk forward: past every deny window open at t (their ends chain), then to the next
	// opening of an allow window when none is open at t, until neither moves t.
	t, step := now, 0
	for ; step < maxSteps; step++ {
		if t.Sub(now) > horizon {
			v.Forever = true
			return v
		}
		moved := false
		for _, w := range sel {
			if w.Kind != Deny {
				continue
			}
			if end, open := w.openAt(t); open {
				t, moved = end, true
			}
		}
		if moved {
			continue
		}
		if !hasAllow {
			break
		}
		next, open := time.Time{}, false
		for _, w := range sel {
			if w.Kind != Allow {
				continue
			}
			if w.open(t) {
				open = true
				break
			}
			if n := w.nextOpen(t); !n.IsZero() && (next.IsZero() || n.Before(next)) {
				next = n
			}
		}
		if open {
			break
		}
		if next.IsZero() {
			v.Forever = true
			return v
		}
		t = next
	}
	if step == maxSteps {
		// Windows that keep chaining (an allow window that only ever opens inside a deny
		// window) count as no opening.
		v.Forever = true
		return v
	}
	v.Until = t
	return v
}

// open reports whether w is open at t.
func (w *compiled) open(t time.Time) bool {
	first := w.sched.Next(t.In(w.loc).Add(-w.Duration))
	return !first.IsZero() && !first.After(t)
}

// openAt reports whether w is open at t and, if so, when it closes: the end of the last of
// the openings that chain from the one covering t (an opening before the previous one ended
// extends it).
func (w *compiled) openAt(t time.Time) (end time.Time, open bool) {
	first := w.sched.Next(t.In(w.loc).Add(-w.Duration))
	if first.IsZero() || first.After(t) {
		return time.Time{}, false
	}
	end = first.Add(w.Duration)
	steps := 0
	for n := w.sched.Next(first); !n.IsZero() && !n.After(end) && end.Sub(t) <= horizon; n = w.sched.Next(n) {
		if steps++; steps > maxChain {
			// Openings that keep chaining (a window open more than it is closed, such as
			// every minute for two minutes): open beyond the horizon.
			return t.Add(horizon + time.Nanosecond), true
		}
		if e := n.Add(w.Duration); e.After(end) {
			end = e
		}
	}
	return end, end.After(t)
}

// nextOpen is w's first opening after t (zero: none within the cron library's horizon).
func (w *compiled) nextOpen(t time.Time) time.Time {
	return w.sched.Next(t.In(w.loc))
}
