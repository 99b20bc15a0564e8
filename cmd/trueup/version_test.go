package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestVersion: the -ldflags stamps are printed; the Makefile's dist build sets them.
// Not parallel: it sets the package variables.
func TestVersion(t *testing.T) {
	defer func(v, c, d string) { version, commit, date = v, c, d }(version, commit, date)
	version, commit, date = "v1.2.3", "0123456789abcdef", "2026-11-24T03:00:00Z"
	out, _, err := runCLI(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"trueup v1.2.3\n", "commit: 0123456789abcdef\n", "built: 2026-11-24T03:00:00Z\n", "go: go1."} {
		if !strings.Contains(out, want) {
			t.Errorf("version printed %q, want %q in it", out, want)
		}
	}
}

func TestHealthcheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		code    int
		wantErr bool
	}{{"ready", http.StatusOK, false}, {"not ready", http.StatusServiceUnavailable, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/readyz" {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(tc.code)
			}))
			defer srv.Close()
			_, _, err := runCLI(t, "healthcheck", "--url", srv.URL+"/readyz")
			if (err != nil) != tc.wantErr {
				t.Errorf("healthcheck against %d: err = %v, want error %v", tc.code, err, tc.wantErr)
			}
		})
	}
}
