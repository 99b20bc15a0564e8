package ghactions

import (
	"context"
	"fmt"
	"github.com/trueup-dev/trueup/actions"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// redacted replaces secrets in text.
const redacted = "[REDACTED]"

// maxRememberedSecrets bounds the installation tokens kept for scrubbing: a token lives one
// hour, so the last few cover every token still able to show up in an answer.
const maxRememberedSecrets = 16

// secrets are the credential strings of an instance: the static token, the installation
// tokens issued so far and the App's private key. Everything the plugin hands back (errors,
// messages, conditions, outputs, State) and logs goes through scrub, so that a credential
// echoed by a server or a workflow never leaves the process.
type secrets struct {
	mu     sync.RWMutex
	fixed  []string // token, private key and its lines; never dropped
	recent []string // installation tokens, newest last
}

func (s *secrets) addFixed(v string) {
	if len(v) < 8 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.fixed, v) {
		s.fixed = append(s.fixed, v)
		// Longest first, so that a secret containing another is replaced whole.
		slices.SortFunc(s.fixed, func(a, b string) int { return len(b) - len(a) })
	}
}

// addKey registers a PEM private key: the whole text and each base64 line, since a partial
// echo would leak as well.
func (s *secrets) addKey(pemText string) {
	s.addFixed(strings.TrimSpace(pemText))
	for line := range strings.SplitSeq(pemText, "\n") {
		line = strings.TrimSpace(line)
		if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
			s.addFixed(line)
		}
	}
}

func (s *secrets) addRecent(v string) {
	if v == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(s.recent, v) {
		return
	}
	s.recent = append(s.recent, v)
	if len(s.recent) > maxRememberedSecrets {
		s.recent = slices.Delete(s.recent, 0, len(s.recent)-maxRememberedSecrets)
	}
}

func (s *secrets) scrub(text string) string {
	if text == "" {
		return text
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, v := range s.fixed {
		text = strings.ReplaceAll(text, v, redacted)
	}
	for _, v := range s.recent {
		text = strings.ReplaceAll(text, v, redacted)
	}
	return text
}

// scrubErr removes the credentials from err's message, keeping err in the chain.
func (s *secrets) scrubErr(err error) error { return actions.ScrubError(err, s.scrub) }

// scrubHandler redacts secrets from every log record's message and attributes, so that a
// secret reaching a log call by some unforeseen path still never reaches the log.
type scrubHandler struct {
	next    slog.Handler
	secrets *secrets
}

func (h *scrubHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.secrets.scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.scrubAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *scrubHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.scrubAttr(a)
	}
	return &scrubHandler{next: h.next.WithAttrs(clean), secrets: h.secrets}
}

func (h *scrubHandler) WithGroup(name string) slog.Handler {
	return &scrubHandler{next: h.next.WithGroup(name), secrets: h.secrets}
}

func (h *scrubHandler) scrubAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.secrets.scrub(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]any, len(group))
		for i, g := range group {
			clean[i] = h.scrubAttr(g)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		// Errors and other values are logged by their text; redact that text.
		return slog.String(a.Key, h.secrets.scrub(fmt.Sprint(v.Any())))
	}
	return slog.Attr{Key: a.Key, Value: v}
}
