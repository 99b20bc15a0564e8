package githubapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/forge/ratelimit"
)

func TestParseBaseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw, want, err string
	}{
		{"", DefaultBaseURL, ""},
		{"https://ghe.example/api/v3", "https://ghe.example/api/v3/", ""},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8080/", ""},
		{"ftp://x", "", "not an http(s) URL"},
		{"https://", "", "not an http(s) URL"},
		{"https://u:p@ghe.example/", "", "may not carry credentials"},
		{"https://ghe.example/?q=1", "", "may not carry credentials"},
	} {
		u, err := ParseBaseURL(tc.raw)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseBaseURL(%q) error = %v, want %q", tc.raw, err, tc.err)
		case tc.err == "" && (err != nil || u.String() != tc.want):
			t.Errorf("ParseBaseURL(%q) = %v, %v; want %s", tc.raw, u, err, tc.want)
		}
	}
}

type failingTokens struct{}

func (failingTokens) Token(context.Context) (string, error) { return "", errors.New("no token") }

func TestNewClient(t *testing.T) {
	t.Parallel()
	var otherAuth atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherAuth.Store(r.Header.Get("Authorization"))
	}))
	t.Cleanup(other.Close)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
			return
		}
		w.Header().Set("X-RateLimit-Remaining", "41")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(api.Close)
	base, err := ParseBaseURL(api.URL)
	if err != nil {
		t.Fatal(err)
	}
	var remaining atomic.Int64
	c, _ := NewClient(ClientConfig{BaseURL: base, Tokens: StaticToken("tok"), Remaining: &remaining})
	req, _ := c.NewRequest(http.MethodGet, "ok", nil)
	if _, err := c.Do(t.Context(), req, nil); err != nil {
		t.Fatalf("authorized call: %v", err)
	}
	if got := remaining.Load(); got != 41 {
		t.Errorf("remaining = %d, want 41", got)
	}
	req, _ = c.NewRequest(http.MethodGet, "moved", nil)
	if _, err := c.Do(t.Context(), req, nil); StatusCode(err) != http.StatusFound {
		t.Errorf("redirect: %v (status %d), want the 302 returned, not followed", err, StatusCode(err))
	}
	if v := otherAuth.Load(); v != nil {
		t.Errorf("the redirect was followed (Authorization %q there)", v)
	}
	// A request to another origin goes out without the token.
	resp, err := c.Client().Get(other.URL + "/y")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if v := otherAuth.Load(); v != "" {
		t.Errorf("Authorization sent to another origin: %q", v)
	}

	c, _ = NewClient(ClientConfig{BaseURL: base, Tokens: failingTokens{}})
	req, _ = c.NewRequest(http.MethodGet, "ok", nil)
	_, err = c.Do(t.Context(), req, nil)
	var te *TokenError
	if !errors.As(err, &te) {
		t.Errorf("token failure: %v, want a *TokenError", err)
	}
}

// TestNewClientPause: the pause NewClient returns is the one its calls honour, the
// credential's in the registry, or one of the client's own without a credential.
func TestNewClientPause(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(api.Close)
	base, err := ParseBaseURL(api.URL)
	if err != nil {
		t.Fatal(err)
	}
	pauses := new(ratelimit.Registry)
	for name, tokens := range map[string]Tokens{"token": StaticToken("tok"), "no credential": failingTokens{}} {
		c, pause := NewClient(ClientConfig{BaseURL: base, Tokens: tokens, Pauses: pauses})
		if _, shared := tokens.(StaticToken); shared != (pause == pauses.For(base.Scheme+"://"+base.Host, "tok")) {
			t.Errorf("%s: the pause returned is not the credential's", name)
		}
		until := time.Now().Add(time.Hour)
		pause.Extend(until)
		req, _ := c.NewRequest(http.MethodGet, "ok", nil)
		_, err := c.Do(t.Context(), req, nil)
		var pe *PausedError
		if !errors.As(err, &pe) || !pe.Until.Equal(until) {
			t.Errorf("%s: call while the returned pause holds: %v, want a *PausedError until %v", name, err, until)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests sent while paused", n)
	}
}
