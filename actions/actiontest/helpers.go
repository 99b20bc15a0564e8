package actiontest

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// MustJSON encodes v, failing the test when it cannot.
func MustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Config encodes base with the keys of extra laid over it: an instance config built from a
// fake server's valid one. A nil value in extra removes the key.
func Config(t testing.TB, base, extra map[string]any) json.RawMessage {
	t.Helper()
	c := maps.Clone(base)
	for k, v := range extra {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return MustJSON(t, c)
}

// HangingServer never answers: the SlowConfig of plugins that call an HTTP API. It reads
// the request body, which lets it notice the client hanging up.
func HangingServer(t testing.TB) *httptest.Server {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // runs first
	return srv
}

// WriteJSON answers status with v as a JSON body, as the fake servers of plugin tests do.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Plaintext checks the refusal of credentials sent over plain http (internal/plaintext):
// each case's config parses, or fails naming Want and the fix (`insecure: true`) without
// quoting any of secrets. Want is a substring of the error, "" for success.
func Plaintext(t *testing.T, parse func(json.RawMessage) error, secrets []string, cases []struct{ Name, Config, Want string }) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			plaintextCase(t, parse, secrets, tc.Config, tc.Want)
		})
	}
}

// plaintextCase is one case of Plaintext.
func plaintextCase(t testing.TB, parse func(json.RawMessage) error, secrets []string, config, want string) {
	t.Helper()
	err := parse(json.RawMessage(config))
	switch {
	case want == "" && err != nil:
		t.Fatalf("error %v, want none", err)
	case want == "":
		return
	case err == nil || !strings.Contains(err.Error(), want):
		t.Fatalf("error %v, want it to contain %q", err, want)
	case !strings.Contains(err.Error(), "insecure: true"):
		t.Errorf("error %v does not say how to allow it", err)
	}
	for _, secret := range secrets {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %v quotes a secret", err)
		}
	}
}

// WaitFile waits until path exists (a test command's sign that it started), failing the test
// after d.
func WaitFile(t testing.TB, path string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not written within %s", path, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
