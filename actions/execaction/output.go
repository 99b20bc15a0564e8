package execaction

import (
	"encoding/json"
	"strings"
	"sync"
	"unicode/utf8"
)

// Output limits of the protocol.
const (
	maxStdout  = 4 << 20 // bytes of stdout accepted
	stderrTail = 4 << 10 // bytes of stderr kept, from the end
)

// capWriter keeps the first max bytes written and counts the rest. It never fails a write:
// an error would close the pipe and kill the command with SIGPIPE, hiding its exit status.
type capWriter struct {
	mu       sync.Mutex
	max      int
	buf      []byte
	overflow bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.max - len(w.buf)
	if len(p) > room {
		w.overflow = true
		w.buf = append(w.buf, p[:max(room, 0)]...)
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *capWriter) bytes() ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf, w.overflow
}

// tailWriter keeps the last keep bytes written.
type tailWriter struct {
	mu        sync.Mutex
	keep      int
	buf       []byte
	truncated bool
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	// Compact only once the buffer is twice the size kept, so copying stays amortised O(n).
	if len(w.buf) > 2*w.keep {
		n := copy(w.buf, w.buf[len(w.buf)-w.keep:])
		w.buf = w.buf[:n]
		w.truncated = true
	}
	return len(p), nil
}

// tail returns the last size bytes of stderr, redacted of secrets and trimmed, starting with
// "…" when earlier output was dropped. The writer keeps more than size bytes (size plus the
// longest secret) so that a secret straddling the cut is still recognised and redacted.
func (w *tailWriter) tail(size int, secrets []string) string {
	w.mu.Lock()
	b := w.buf
	truncated := w.truncated
	w.mu.Unlock()
	s := redact(string(b), secrets)
	if len(s) > size {
		s = s[len(s)-size:]
		truncated = true
	}
	// The cut may split a UTF-8 sequence; drop its continuation bytes.
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	s = strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
	if truncated && s != "" {
		s = "…" + s
	}
	return s
}

// redact replaces every secret in s with "***".
func redact(s string, secrets []string) string {
	for _, v := range secrets {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, "***")
		}
	}
	return s
}

// redactOutputs returns out with secrets redacted from every string in it, keys included: an
// output is stored, served by the API and kept in history, so it is held to the same rule as
// a message. A number whose digits are a secret becomes the string "***".
func redactOutputs(out map[string]any, secrets []string) map[string]any {
	if out == nil || len(secrets) == 0 {
		return out
	}
	clean, _ := redactValue(out, secrets).(map[string]any)
	return clean
}

func redactValue(v any, secrets []string) any {
	switch v := v.(type) {
	case string:
		return redact(v, secrets)
	case json.Number:
		if r := redact(string(v), secrets); r != string(v) {
			return r
		}
		return v
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[redact(k, secrets)] = redactValue(e, secrets)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = redactValue(e, secrets)
		}
		return l
	}
	return v
}
