package daemon

import (
	"io"
	"sync"
	"sync/atomic"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
)

// Scrubber replaces with "***" every secret the config took from the environment and every
// literal secret an action instance holds (actions.SecretHolder).
func Scrubber(cfg *config.Config, acts map[string]actions.Action) func(string) string {
	return actions.Scrubber(secretsOf(cfg, acts))
}

// secretsOf lists the secrets scrubber replaces.
func secretsOf(cfg *config.Config, acts map[string]actions.Action) []string {
	secrets := cfg.Secrets()
	for _, a := range acts {
		if h, ok := a.(actions.SecretHolder); ok {
			secrets = append(secrets, h.Secrets()...)
		}
	}
	return secrets
}

// ScrubWriter is the log sink of serve and migrate: it removes secrets from every record
// before it reaches stderr, whichever package logged it and however the secret got into the
// message (a plugin's error quoting its config, a URL in a transport error). slog's handlers
// write each record with a single Write, so a secret is never split between two calls. The
// scrub function grows once the action instances, which hold literal secrets, are built.
type ScrubWriter struct {
	w     io.Writer
	scrub atomic.Pointer[func(string) string]
	calls callSecrets // the secrets of the calls in flight
}

// NewScrubWriter writes to w through scrub.
func NewScrubWriter(w io.Writer, scrub func(string) string) *ScrubWriter {
	s := &ScrubWriter{w: w}
	s.Set(scrub)
	return s
}

// Set replaces the scrub function.
func (s *ScrubWriter) Set(scrub func(string) string) { s.scrub.Store(&scrub) }

// Current returns the scrub function in use, for errors that are printed rather than logged.
func (s *ScrubWriter) Current() func(string) string { return *s.scrub.Load() }

func (s *ScrubWriter) Write(p []byte) (int, error) {
	msg := string(p)
	if clean := s.calls.scrub(s.Current()(msg)); clean != msg {
		_, err := io.WriteString(s.w, clean)
		return len(p), err
	}
	return s.w.Write(p)
}

// callSecrets are the values revealed into the specs of the calls in flight (reconciler
// Options.Hold): a log line any package writes during a call is scrubbed of them too, not
// only of the config's secrets.
type callSecrets struct {
	mu       sync.Mutex
	held     map[string]int
	version  int
	builtAt  int
	replacer func(string) string
}

// hold adds a call's values until release is called.
func (c *callSecrets) hold(values []string) (release func()) {
	if len(values) == 0 {
		return func() {}
	}
	c.mu.Lock()
	if c.held == nil {
		c.held = map[string]int{}
	}
	for _, v := range values {
		c.held[v]++
	}
	c.version++
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		for _, v := range values {
			if c.held[v]--; c.held[v] <= 0 {
				delete(c.held, v)
			}
		}
		c.version++
		c.mu.Unlock()
	}
}

// scrub replaces the values held now.
func (c *callSecrets) scrub(s string) string {
	c.mu.Lock()
	if len(c.held) == 0 {
		c.mu.Unlock()
		return s
	}
	if c.replacer == nil || c.builtAt != c.version {
		vals := make([]string, 0, len(c.held))
		for v := range c.held {
			vals = append(vals, v)
		}
		c.replacer, c.builtAt = actions.Scrubber(vals), c.version
	}
	r := c.replacer
	c.mu.Unlock()
	return r(s)
}
