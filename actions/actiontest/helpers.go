package actiontest

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
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
