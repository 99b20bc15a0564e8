package redact

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/trueup-dev/trueup/internal/logbuf"
)

// TestRegistryScrub: every kept secret goes in each of its escapings, a longer secret whole
// when it contains another, and nothing else is touched.
func TestRegistryScrub(t *testing.T) {
	t.Parallel()
	r := New("env-secret-123", "", `pw<&>"q-8d7c`, "p@ss word/1")
	r.Add("env-secret-123-longer", "env-secret-123") // a repeat is kept once
	for _, tc := range []struct{ name, in, want string }{
		{"as written", "dir /tmp/env-secret-123", "dir /tmp/***"},
		{"longer first", "token env-secret-123-longer", "token ***"},
		{"raw", `raw pw<&>"q-8d7c`, "raw ***"},
		{"JSON-escaped", `{"out":"pw\u003c\u0026\u003e\"q-8d7c"}`, `{"out":"***"}`},
		{"query-escaped", "postgres://u:p%40ss+word%2F1@db/x", "postgres://u:***@db/x"},
		{"path-escaped", "https://h/p@ss%20word%2F1/x", "https://h/***/x"},
		{"clean", "nothing secret here", "nothing secret here"},
		{"empty", "", ""},
	} {
		if got := r.Scrub(tc.in); got != tc.want {
			t.Errorf("%s: Scrub(%q) = %q; want %q", tc.name, tc.in, got, tc.want)
		}
	}
	if got, want := strings.Join(r.secrets(), ","), `env-secret-123,pw<&>"q-8d7c,p@ss word/1,env-secret-123-longer`; got != want {
		t.Errorf("Secrets() = %s; want %s", got, want)
	}
}

// TestRegistryHold: a call's secrets are scrubbed while it holds them, a value two calls hold
// until both released it; kept secrets stay whatever calls release.
func TestRegistryHold(t *testing.T) {
	t.Parallel()
	r := New("kept-secret")
	line := `kept-secret call-secret-1 quo"ted-2 {"v":"quo\"ted-2"}`
	steps := []struct {
		name string
		do   func()
		want string
	}{
		{"none held", func() {}, `*** call-secret-1 quo"ted-2 {"v":"quo\"ted-2"}`},
	}
	var rel1, rel2 func()
	steps = append(steps,
		struct {
			name string
			do   func()
			want string
		}{"two calls hold", func() {
			rel1 = r.Hold([]string{"call-secret-1", `quo"ted-2`})
			rel2 = r.Hold([]string{"call-secret-1"})
		}, `*** *** *** {"v":"***"}`},
		struct {
			name string
			do   func()
			want string
		}{"first released", func() { rel1() }, `*** *** quo"ted-2 {"v":"quo\"ted-2"}`},
		struct {
			name string
			do   func()
			want string
		}{"both released", func() { rel2() }, `*** call-secret-1 quo"ted-2 {"v":"quo\"ted-2"}`},
	)
	for _, s := range steps {
		s.do()
		if got := r.Scrub(line); got != s.want {
			t.Errorf("%s: got %s; want %s", s.name, got, s.want)
		}
	}
	if got := r.secrets(); len(got) != 1 {
		t.Errorf("held values were kept: %q", got)
	}
	r.Hold(nil)() // nothing to hold: a no-op
}

// TestRegistryReleaseTwice: a second call of a release changes nothing (the other calls
// holding the same value keep it held), and the caller may reuse the slice it held.
func TestRegistryReleaseTwice(t *testing.T) {
	t.Parallel()
	r := New()
	vals := []string{"shared-secret"}
	rel1 := r.Hold(vals)
	rel2 := r.Hold([]string{"shared-secret"})
	vals[0] = "reused-slot" // the caller's slice, reused after Hold
	rel1()
	rel1()
	if got := r.Scrub("shared-secret"); got != "***" {
		t.Errorf("released twice by one call, shared-secret is no longer held by the other: %q", got)
	}
	rel2()
	if got := r.Scrub("shared-secret reused-slot"); got != "shared-secret reused-slot" {
		t.Errorf("after both released: %q", got)
	}
}

// TestRegistryWith: a scrubber of extra values and the registry's replaces both as one set
// (neither leaves a piece of the other), the calls' held values too, and leaves the registry
// as it was.
func TestRegistryWith(t *testing.T) {
	t.Parallel()
	r := New("hunter22")
	defer r.Hold([]string{"held-value"})()
	scrub := r.With([]string{"hunter2", "extra-secret"})
	for _, tc := range []struct{ in, want string }{
		{"old hunter22 new hunter2", "old *** new ***"},
		{"extra-secret and held-value", "*** and ***"},
		{"plain", "plain"},
	} {
		if got := scrub(tc.in); got != tc.want {
			t.Errorf("With(...)(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
	if got := r.Scrub("extra-secret hunter2"); got != "extra-secret hunter2" {
		t.Errorf("With added to the registry: %q", got)
	}
	if got := r.With(nil)("hunter22 held-value"); got != "*** ***" {
		t.Errorf("With(nil) = %q", got)
	}
}

// TestRegistryHeldAndKeptOverlap: a held secret that contains a kept one goes whole, and a
// kept one that contains a held one too, from Scrub and from With (where extra may contain
// a held or a kept value, or be contained in one): the kept, extra and held values are one
// set, longest first.
func TestRegistryHeldAndKeptOverlap(t *testing.T) {
	t.Parallel()
	const (
		pw      = "hunter22"
		dsn     = "postgres://app:hunter22@db.internal:5432/app"
		token   = "tok-Zx81sQ-prod"
		header  = "Authorization: Bearer tok-Zx81sQ-prod"
		apiKey  = "key-9f8e7d6c"
		keyURL  = "https://api.example.com/?key=key-9f8e7d6c"
		extraPw = "extra-pw-55aa"
		extraDN = "mysql://root:extra-pw-55aa@db"
	)
	for _, tc := range []struct {
		name       string
		kept, held []string
		extra      []string // With's; nil: Scrub
		in, want   string
	}{
		{"held contains kept", []string{pw}, []string{dsn}, nil, "dsn " + dsn, "dsn ***"},
		{"held contains kept, JSON", []string{pw}, []string{dsn}, nil, `{"dsn":"` + dsn + `"}`, `{"dsn":"***"}`},
		{"held contains kept, URL-escaped", []string{pw}, []string{dsn}, nil, "u=" + url.QueryEscape(dsn), "u=***"},
		{"kept contains held", []string{header}, []string{token}, nil, "sent " + header, "sent ***"},
		{"both apart", []string{pw}, []string{dsn}, nil, "pw " + pw + " dsn " + dsn, "pw *** dsn ***"},
		{"With: held contains kept", []string{pw}, []string{dsn}, []string{extraPw}, "dsn " + dsn + " " + extraPw, "dsn *** ***"},
		{"With: kept contains held", []string{header}, []string{token}, []string{extraPw}, header, "***"},
		{"With: held contains extra", []string{pw}, []string{keyURL}, []string{apiKey}, "GET " + keyURL, "GET ***"},
		{"With: extra contains held", []string{pw}, []string{apiKey}, []string{keyURL}, "GET " + keyURL, "GET ***"},
		{"With: extra contains kept", []string{extraPw}, []string{token}, []string{extraDN}, "dsn " + extraDN, "dsn ***"},
	} {
		r := New(tc.kept...)
		release := r.Hold(tc.held)
		scrub := r.Scrub
		if tc.extra != nil {
			scrub = r.With(tc.extra)
		}
		if got := scrub(tc.in); got != tc.want {
			t.Errorf("%s: scrub(%q) = %q; want %q", tc.name, tc.in, got, tc.want)
		}
		release()
	}
	// A held layer built before an Add is rebuilt over the new kept secrets.
	r := New()
	defer r.Hold([]string{dsn})()
	scrub := r.With([]string{extraPw})
	_ = scrub("warm")
	r.Add(pw)
	if got := r.Scrub("pw " + pw + " dsn " + dsn); got != "pw *** dsn ***" {
		t.Errorf("after Add: Scrub = %q", got)
	}
	if got := scrub("pw " + pw + " " + extraPw); got != "pw *** ***" {
		t.Errorf("after Add: With = %q", got)
	}
}

// TestRegistryError: a scrubbed error keeps its chain; an error with nothing to scrub is
// returned as it is.
func TestRegistryError(t *testing.T) {
	t.Parallel()
	r := New("s3cr3t-pw")
	err := fmt.Errorf("open s3cr3t-pw: %w", fs.ErrNotExist)
	got := r.Error(err)
	if got.Error() != "open ***: file does not exist" || !errors.Is(got, fs.ErrNotExist) {
		t.Errorf("Error = %v (chain kept: %v)", got, errors.Is(got, fs.ErrNotExist))
	}
	plain := errors.New("plain")
	if r.Error(plain) != plain || r.Error(nil) != nil {
		t.Error("an error with nothing to scrub was replaced")
	}
}

// TestRegistryKept: outputs are scrubbed of the kept secrets alone (not of what the calls in
// flight hold), numbers checked against the kept secrets in any form.
func TestRegistryKept(t *testing.T) {
	t.Parallel()
	_, numbers := New("1e3").Kept()
	if !numbers.Shows("1000") || numbers.Shows("1001") {
		t.Error("the kept secret 1e3 is not checked in its canonical form")
	}
	scrub, numbers := New().Kept()
	if !numbers.Clean([]byte(`{"n":5432}`)) || scrub("x") != "x" {
		t.Error("with no secret, a value is not clean")
	}
	r := New("kept-secret")
	defer r.Hold([]string{"held-secret", "777"})()
	if scrub, numbers := r.Kept(); scrub("kept-secret held-secret") != "*** held-secret" || numbers.Shows("777") {
		t.Error("Kept scrubs more than the kept secrets")
	}
}

// TestRegistryKeptWith: a call's own values and the kept secrets are replaced as one set,
// longest first, in every escaping: a kept DSN quoting a call's password goes whole, a call's
// value quoting a kept secret alike; held secrets are left out, and with no own value it is
// Kept's scrubber.
func TestRegistryKeptWith(t *testing.T) {
	t.Parallel()
	dsn := "postgres://app:hunter22@db.internal:5432/app"
	r := New(dsn, "kept-token", `kept"quo<te`)
	defer r.Hold([]string{"held-secret"})()
	scrub := r.KeptWith([]string{"hunter22", "call-kept-token-x", `own"quo<te-long`, "quo<te"})
	for _, tc := range []struct{ name, in, want string }{
		{"kept quoting own", "connect " + dsn + ": refused", "connect ***: refused"},
		{"own alone", "password hunter22 rejected", "password *** rejected"},
		{"kept alone", "token kept-token", "token ***"},
		{"own quoting kept", "token call-kept-token-x", "token ***"},
		{"kept quoting own, JSON-escaped", `{"q":"kept\"quo\u003cte"}`, `{"q":"***"}`},
		{"kept quoting own, query-escaped", "dsn=" + url.QueryEscape(dsn), "dsn=***"},
		{"own JSON-escaped", `{"v":"own"quo<te-long"}`, `{"v":"***"}`},
		{"kept Go-quoted", `msg="kept"quo<te"`, `msg="***"`},
		{"held kept out", "held-secret", "held-secret"},
	} {
		if got := scrub(tc.in); got != tc.want {
			t.Errorf("%s: KeptWith(...)(%q) = %q; want %q", tc.name, tc.in, got, tc.want)
		}
	}
	// The same overlap the other way: an own value quoting a kept password.
	if got := New("hunter22").KeptWith([]string{dsn})("connect " + dsn); got != "connect ***" {
		t.Errorf("own DSN quoting a kept password: %q", got)
	}
	kept, _ := r.Kept()
	if got := r.KeptWith(nil)("kept-token held-secret hunter22"); got != kept("kept-token held-secret hunter22") {
		t.Errorf("KeptWith(nil) = %q; want Kept's", got)
	}
	var nilReg *Registry
	if got := nilReg.KeptWith([]string{"hunter22"})("pw hunter22"); got != "pw ***" {
		t.Errorf("nil KeptWith = %q", got)
	}
}

// TestNilRegistry: components built without a registry scrub nothing.
func TestNilRegistry(t *testing.T) {
	t.Parallel()
	var r *Registry
	r.Hold([]string{"x-secret"})()
	err := errors.New("x-secret")
	scrub, numbers := r.Kept()
	if r.Scrub("x-secret") != "x-secret" || r.Error(err) != err || r.secrets() != nil || numbers == nil || scrub("x-secret") != "x-secret" {
		t.Error("a nil registry changed something")
	}
	if got := r.With([]string{"x-secret"})("a x-secret"); got != "a ***" {
		t.Errorf("nil With = %q", got)
	}
}

// TestRegistryWriter: every write is scrubbed with the secrets known when it is written (the
// actions' literal ones once they are added, a call's while it holds them); a write with
// nothing to scrub goes through as it is.
func TestRegistryWriter(t *testing.T) {
	t.Parallel()
	r := New("env-secret-123")
	var out strings.Builder
	w := r.Writer(&out)
	lines := []string{"a env-secret-123 lit-secret-9\n", "b env-secret-123 lit-secret-9\n", "c call-secret-1\n", "d plain\n"}
	_, _ = w.Write([]byte(lines[0]))
	r.Add("lit-secret-9")
	_, _ = w.Write([]byte(lines[1]))
	release := r.Hold([]string{"call-secret-1"})
	n, err := w.Write([]byte(lines[2]))
	release()
	_, _ = w.Write([]byte(lines[3]))
	if n != len(lines[2]) || err != nil {
		t.Errorf("Write = %d, %v; want %d, nil", n, err, len(lines[2]))
	}
	if want := "a *** lit-secret-9\nb *** ***\nc ***\nd plain\n"; out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestRegistryConcurrent: calls holding and releasing, configs adding, and writers scrubbing
// at once (run under -race): a line written while its secret is held or kept never keeps it.
func TestRegistryConcurrent(t *testing.T) {
	t.Parallel()
	r := New("kept-0")
	var out logbuf.Buffer
	w := r.Writer(&out)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			secret := fmt.Sprintf("concurrent-secret-%d", i)
			for j := range 100 {
				release := r.Hold([]string{secret, "shared-secret"})
				_, _ = fmt.Fprintf(w, "x %s shared-secret\n", secret)
				if r.Scrub(secret) != "***" || r.Error(errors.New(secret)).Error() != "***" {
					t.Errorf("held %s not scrubbed", secret)
				}
				release()
				if j%10 == 0 {
					r.Add(fmt.Sprintf("kept-%d-%d", i, j))
				}
			}
		})
	}
	wg.Wait()
	if strings.Contains(out.String(), "secret") {
		t.Fatalf("a line written during a call kept its secret:\n%s", out.String())
	}
	if got := len(r.secrets()); got != 81 {
		t.Errorf("kept %d secrets; want 81", got)
	}
	if got := r.Scrub("concurrent-secret-3 kept-3-50"); got != "concurrent-secret-3 ***" {
		t.Errorf("after every release: %q", got)
	}
}

// benchSecrets are a config's worth of secrets; benchLine is a log line with none of them.
var (
	benchSecrets = func() []string {
		var out []string
		for i := range 20 {
			out = append(out, fmt.Sprintf("secret-value-%02d-abcdefgh", i))
		}
		return out
	}()
	benchLine = []byte(`time=2026-01-01T00:00:00Z level=INFO msg="reconciled" resource=ns01/Widget/w000123 generation=4 duration=12ms replica=replica-a` + "\n")
)

// BenchmarkWriter: a log line through the registry's writer, with 20 kept secrets, without
// and with a call holding its values.
func BenchmarkWriter(b *testing.B) {
	for _, held := range []bool{false, true} {
		b.Run(fmt.Sprintf("held=%v", held), func(b *testing.B) {
			r := New(benchSecrets...)
			if held {
				defer r.Hold([]string{"call-secret-value-1", "call-secret-value-2"})()
			}
			w := r.Writer(io.Discard)
			b.ReportAllocs()
			for b.Loop() {
				_, _ = w.Write(benchLine)
			}
		})
	}
}

// BenchmarkHoldScrub: a call holds its values, its message is scrubbed, it releases them.
func BenchmarkHoldScrub(b *testing.B) {
	r := New(benchSecrets...)
	vals := []string{"call-secret-value-1", "call-secret-value-2"}
	b.ReportAllocs()
	for b.Loop() {
		release := r.Hold(vals)
		_ = r.Scrub(string(benchLine))
		release()
	}
}

// TestWriterSlogHandlers: a secret holding a quote, a backslash and characters HTML escapes
// goes from lines of both of log/slog's handlers, which quote it in ways of their own (the
// JSON handler without HTML escapes, the text handler as Go quotes), as a value, an error
// and the message.
func TestWriterSlogHandlers(t *testing.T) {
	t.Parallel()
	const secret = `pw<&>"q\8d7c` + "\t"
	r := New(secret)
	for _, format := range []string{"json", "text"} {
		var out strings.Builder
		var h slog.Handler = slog.NewTextHandler(r.Writer(&out), nil)
		if format == "json" {
			h = slog.NewJSONHandler(r.Writer(&out), nil)
		}
		logger := slog.New(h)
		logger.Warn("failed", "value", secret, "err", errors.New("refused "+secret))
		logger.Warn(secret)
		if strings.Contains(out.String(), "8d7c") || strings.Count(out.String(), "***") != 3 {
			t.Errorf("%s:\n%s", format, out.String())
		}
	}
}
