package ocisource

import (
	"net/http"
	"strings"
	"testing"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// An insecure source talks plain HTTP to a loopback host only: a token realm or a redirect
// naming another host over http is refused before anything is sent.
func TestSchemeGuardPlainHTTPOnlyToLoopback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url      string
		insecure bool
		sent     bool
	}{
		{"http://127.0.0.1:5000/v2/", true, true},
		{"http://localhost:5000/v2/", true, true},
		{"http://[::1]:5000/v2/", true, true},
		{"http://auth.example.com/token", true, false},
		{"http://10.0.0.7:5000/v2/", true, false},
		{"http://127.0.0.1:5000/v2/", false, false},
		{"https://auth.example.com/token", false, true},
	} {
		sent := false
		g := &schemeGuard{insecure: tc.insecure, next: roundTripFunc(func(*http.Request) (*http.Response, error) {
			sent = true
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
		})}
		req, err := http.NewRequest(http.MethodGet, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer secret")
		_, err = g.RoundTrip(req)
		if sent != tc.sent || !tc.sent && (err == nil || !strings.Contains(err.Error(), "plain http")) {
			t.Errorf("%s insecure=%v: sent %v, %v", tc.url, tc.insecure, sent, err)
		}
	}
}
