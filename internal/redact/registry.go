// Package redact keeps secrets out of what trueup writes. A Registry holds every secret known
// to the process, registered where it becomes known: the config's values from the environment
// and the literal secrets of the action instances (Add, kept for the registry's life: a call
// started before a reload may still quote its old instance's), and the values revealed into a
// call's spec for as long as the call runs (Hold). Its Scrub replaces each of them, in every
// escaping (as written, JSON-escaped, URL-escaped), with "***"; the sinks scrub through it: the
// log writer (Writer), the messages, conditions and outputs the controller stores, the errors
// the API and the reload report.
//
// The functions of escape.go are the engine: plugins scrub their own messages with it through
// the actions package (actions.Scrubber, actions.ScrubError, actions.ScrubValue).
package redact

import (
	"io"
	"slices"
	"sync"
	"sync/atomic"
)

// MinLength is the length below which a value is not taken for a secret to scrub: a value of
// one to three characters ("3", "eu", "on") is found in most texts, and replacing each of its
// occurrences would garble them while hiding little (such a value is guessed in a few tries
// anyway). Where values are registered (config.Secrets, secrets.Resolve, the sealed files'
// plaintexts, a preview's resolved values), shorter ones are left out.
const MinLength = 4

// Registry is the set of secrets scrubbed from what leaves the process. Its methods may be
// called from any goroutine. A nil *Registry scrubs nothing and holds nothing (its Add
// panics): components built without one, in tests, scrub only what they know themselves.
type Registry struct {
	mu   sync.Mutex // serialises changes; Scrub reads snap without it
	kept []string
	seen map[string]bool
	held map[string]int // the secrets of the calls in flight, by how many calls hold each
	snap atomic.Pointer[snapshot]
}

// snapshot is what Scrub applies: the kept secrets' layer when no call holds a secret, else
// the held layer, which replaces the kept secrets and those the calls in flight hold as one
// set, longest first (a held DSN quoting a kept password goes whole, not leaving its other
// parts behind, and a kept secret quoting a held one alike). A call holding or releasing its
// secrets replaces only the held layer: the kept one keeps its forms, which the held layer
// merges with its own instead of escaping the kept secrets again.
type snapshot struct {
	kept *layer
	held *layer // nil: no call holds a secret
}

// top is the layer Scrub applies (nil: none).
func (s *snapshot) top() *layer {
	switch {
	case s == nil:
		return nil
	case s.held != nil:
		return s.held
	}
	return s.kept
}

// layer is one replacer, built on first use: calls come and go faster than lines are written.
// The kept layer also checks JSON numbers (Kept); nothing reads a held layer's.
type layer struct {
	values  []string
	base    *layer // a held layer's: the kept layer, replaced together with values (nil: none)
	kept    bool   // build numbers too
	once    sync.Once
	forms   []string // the forms of values and base's, longest first
	replace func(string) string
	numbers *Numbers
}

func newLayer(values []string, base *layer, kept bool) *layer {
	if len(values) == 0 {
		return nil
	}
	return &layer{values: values, base: base, kept: kept}
}

func (l *layer) build() {
	l.once.Do(func() {
		l.forms = forms(l.values)
		if l.base != nil {
			l.base.build()
			l.forms = mergeForms(l.base.forms, l.forms)
		}
		l.replace = replacerOf(l.forms)
		if l.kept {
			l.numbers = NewNumbers(l.replace, l.values)
		}
	})
}

func (l *layer) scrub(s string) string {
	if l == nil {
		return s
	}
	l.build()
	return l.replace(s)
}

// New returns a registry keeping secrets.
func New(secrets ...string) *Registry {
	r := &Registry{}
	r.Add(secrets...)
	return r
}

// Add keeps secrets for the registry's life ("" is ignored).
func (r *Registry) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	added := false
	for _, s := range secrets {
		if s == "" || r.seen[s] {
			continue
		}
		if r.seen == nil {
			r.seen = map[string]bool{}
		}
		r.seen[s] = true
		r.kept = append(r.kept, s)
		added = true
	}
	if added {
		kept := newLayer(append([]string(nil), r.kept...), nil, true)
		r.publish(kept, r.heldLayer(kept))
	}
}

// Hold adds a call's secrets until release is called; two calls may hold the same value, which
// stays until both released it. release may be called more than once: only its first call
// releases. Hold keeps a copy of secrets: the caller may reuse the slice.
func (r *Registry) Hold(secrets []string) (release func()) {
	if r == nil || len(secrets) == 0 {
		return func() {}
	}
	secrets = slices.Clone(secrets)
	r.mu.Lock()
	if r.held == nil {
		r.held = map[string]int{}
	}
	for _, v := range secrets {
		r.held[v]++
	}
	kept, _ := r.layers()
	r.publish(kept, r.heldLayer(kept))
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, v := range secrets {
				if r.held[v]--; r.held[v] <= 0 {
					delete(r.held, v)
				}
			}
			kept, _ := r.layers()
			r.publish(kept, r.heldLayer(kept))
		})
	}
}

// layers are the layers Scrub applies now (nil: none).
func (r *Registry) layers() (kept, held *layer) {
	if r == nil {
		return nil, nil
	}
	if s := r.snap.Load(); s != nil {
		return s.kept, s.held
	}
	return nil, nil
}

// heldLayer builds the layer of the secrets held now over kept (nil: none held); r.mu is held.
func (r *Registry) heldLayer(kept *layer) *layer {
	vals := make([]string, 0, len(r.held))
	for v := range r.held {
		vals = append(vals, v)
	}
	return newLayer(vals, kept, false)
}

// publish makes kept and held what Scrub applies; r.mu is held.
func (r *Registry) publish(kept, held *layer) {
	if kept == nil && held == nil {
		r.snap.Store(nil)
		return
	}
	r.snap.Store(&snapshot{kept: kept, held: held})
}

// Scrub replaces every secret of the registry in s with "***".
func (r *Registry) Scrub(s string) string { return r.top().scrub(s) }

// top is the layer Scrub applies now (nil: none).
func (r *Registry) top() *layer {
	if r == nil {
		return nil
	}
	return r.snap.Load().top()
}

// Error returns err with its message scrubbed, err itself still in the chain (Error).
func (r *Registry) Error(err error) error {
	if r == nil {
		return err
	}
	return Error(err, r.Scrub)
}

// secrets lists the kept secrets, in the order they were added (not to be modified).
func (r *Registry) secrets() []string {
	if l, _ := r.layers(); l != nil {
		return l.values
	}
	return nil
}

// Kept returns the scrubber of the kept secrets alone and the check of JSON numbers against
// them (NewNumbers: an output number equal to a secret written in another form, secret "1e3",
// output 1000, is replaced too). Stored values that must not depend on which calls run at
// the same time (a plugin's outputs) are scrubbed with these.
func (r *Registry) Kept() (scrub func(string) string, numbers *Numbers) {
	l, _ := r.layers()
	if l == nil {
		return noScrub, noNumbers
	}
	l.build()
	return l.replace, l.numbers
}

// KeptWith returns the scrubber of the kept secrets and own (a call's revealed values) as
// one set, longest first: a kept secret quoting one of own (a DSN holding a call's password)
// goes whole, not leaving its other parts behind, and one of own quoting a kept secret alike.
// It is built once, over the kept secrets as they are now, merging the kept layer's forms
// with own's; the held secrets are left out (Kept). With no value of own, it is Kept's.
func (r *Registry) KeptWith(own []string) func(string) string {
	if len(own) == 0 {
		scrub, _ := r.Kept()
		return scrub
	}
	all := forms(own)
	if l, _ := r.layers(); l != nil {
		l.build()
		all = mergeForms(l.forms, all)
	}
	return replacerOf(all)
}

// noScrub and noNumbers are Kept of a registry with no secret.
var (
	noScrub   = func(s string) string { return s }
	noNumbers = NewNumbers(noScrub, nil)
)

// With returns a scrubber of extra (a call's own values, the secrets of a config being
// loaded) together with the registry's secrets as they are when it scrubs, extra being kept
// out of the registry. The kept secrets, extra and the held ones are replaced as one set,
// longest first, so that none leaves a piece of another behind; its replacer is built on
// first use, and again when the registry's secrets changed since.
func (r *Registry) With(extra []string) func(string) string {
	if len(extra) == 0 {
		return r.Scrub
	}
	type built struct {
		top     *layer // what it was built over
		replace func(string) string
	}
	var (
		once       sync.Once
		extraForms []string
		cur        atomic.Pointer[built]
	)
	return func(s string) string {
		top := r.top()
		b := cur.Load()
		if b == nil || b.top != top {
			once.Do(func() { extraForms = forms(extra) })
			all := extraForms
			if top != nil {
				top.build()
				all = mergeForms(top.forms, extraForms)
			}
			b = &built{top: top, replace: replacerOf(all)}
			cur.Store(b)
		}
		return b.replace(s)
	}
}

// Writer returns a writer to w that scrubs every write of the registry's secrets as they are
// when it is written. slog's handlers write each record with a single Write, so a secret is
// never split between two calls.
func (r *Registry) Writer(w io.Writer) io.Writer { return &writer{r: r, w: w} }

type writer struct {
	r *Registry
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	msg := string(p)
	if clean := w.r.Scrub(msg); clean != msg {
		_, err := io.WriteString(w.w, clean)
		return len(p), err
	}
	return w.w.Write(p)
}
