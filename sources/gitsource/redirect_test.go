package gitsource

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRedirectDropsCredentialsToAnotherHost guards the redirect rule this source does not
// implement itself: it uses go-git's HTTP transport, which follows a redirect only on the ref
// discovery, refuses https:// to http:// (wherever it goes), and sends no credentials to
// another origin (it keeps only the headers it sets itself). Installing a CheckRedirect of
// our own would mean replacing the transport go-git registers globally, which trueup does
// not do (no global state), so this test pins the behaviour instead: a server that redirects
// the discovery to another host (localhost instead of 127.0.0.1, another port) never sees
// the password. (A downgrade cannot be shown here: the source trusts the system's roots
// only, not a test certificate.)
func TestRedirectDropsCredentialsToAnotherHost(t *testing.T) {
	t.Parallel()
	const password = "redirect-Passw0rd"
	var leaked, reached atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	t.Cleanup(other.Close)
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL+r.URL.RequestURI(), http.StatusFound)
	}))
	t.Cleanup(origin.Close)

	s := newSource(t, Config{URL: origin.URL + "/repo", Auth: Auth{Username: "bot", Password: password}})
	_, err := s.Head(testContext(t))
	if err == nil {
		t.Fatal("Head succeeded against a server that only redirects")
	}
	if strings.Contains(err.Error(), password) {
		t.Errorf("the error leaks the password: %v", err)
	}
	if reached.Load() == 0 {
		t.Fatalf("the redirect was not followed at all (%v); the test proves nothing", err)
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("the other host received the credentials %d time(s)", n)
	}
}
