package gitlabapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/forge/ratelimit"
)

func TestAPIBase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ raw, want, err string }{
		{"https://gitlab.example.com", "https://gitlab.example.com/api/v4/", ""},
		{"https://gitlab.example.com/", "https://gitlab.example.com/api/v4/", ""},
		{"https://gitlab.example.com/api/v4", "https://gitlab.example.com/api/v4/", ""},
		{"http://host:8080/sub/api/v4/", "http://host:8080/sub/api/v4/", ""},
		{"", "", "baseURL is required"},
		{"ftp://host", "", "absolute http(s) URL"},
		{"https://u:p@host/", "", "must not hold credentials"},
		{"https://host/?x=1", "", "query or fragment"},
	} {
		got, err := APIBase(tc.raw)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("APIBase(%q) error = %v, want %q", tc.raw, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("APIBase(%q) = %q, %v; want %q", tc.raw, got, err, tc.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"reset", http.Header{"Ratelimit-Reset": {"1800000030"}}, 30 * time.Second},
		{"reset past", http.Header{"Ratelimit-Reset": {"1799999990"}}, 0},
		{"none", http.Header{}, defaultRateLimitWait},
	} {
		if got := RetryAfter(tc.h, now); got != tc.want {
			t.Errorf("%s: RetryAfter = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestClient(t *testing.T) {
	t.Parallel()
	const token, trigger = "glpat-secret-token", "trigger-secret"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/v4/items":
			if r.Header.Get("PRIVATE-TOKEN") != token {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			page, _ := strconv.Atoi(r.URL.Query().Get("page"))
			if page < 3 {
				w.Header().Set("X-Next-Page", strconv.Itoa(page+1))
			}
			w.Header().Set("RateLimit-Remaining", "17")
			w.Write([]byte(`[` + strconv.Itoa(page) + `]`))
		case r.URL.Path == "/api/v4/echo":
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"message": "bad token ` + r.FormValue("token") + ` here"}`))
		case r.URL.Path == "/api/v4/moved":
			http.Redirect(w, r, "https://elsewhere.example/x", http.StatusTemporaryRedirect)
		case r.URL.Path == "/api/v4/limited":
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{BaseURL: srv.URL, Token: token, Secrets: []string{trigger}, Timeout: time.Minute, Pauses: new(ratelimit.Registry)})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Remaining(); got != -1 {
		t.Errorf("Remaining before any call = %d, want -1", got)
	}

	var pages []int
	err = EachPage(t.Context(), c, "items", nil, func(p []int) (bool, error) {
		pages = append(pages, p...)
		return false, nil
	})
	if err != nil || len(pages) != 3 || pages[2] != 3 {
		t.Errorf("EachPage = %v, %v; want [1 2 3]", pages, err)
	}
	if got := c.Remaining(); got != 17 {
		t.Errorf("Remaining = %d, want 17", got)
	}

	_, err = c.Do(t.Context(), Request{Method: http.MethodPost, Path: "echo", Form: map[string][]string{"token": {trigger}}})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !IsStatus(err, http.StatusBadRequest) {
		t.Fatalf("error answer: %v, want an *APIError 400", err)
	}
	if strings.Contains(err.Error(), trigger) || !strings.Contains(err.Error(), "bad token *** here") {
		t.Errorf("error answer not scrubbed: %v", err)
	}

	if _, err = c.Do(t.Context(), Request{Method: http.MethodGet, Path: "moved", Auth: true}); !IsStatus(err, http.StatusTemporaryRedirect) ||
		!strings.Contains(err.Error(), "not followed") {
		t.Errorf("redirect: %v, want it refused", err)
	}

	_, err = c.Do(t.Context(), Request{Method: http.MethodGet, Path: "limited", Auth: true})
	var rl *RateLimitError
	if !errors.As(err, &rl) || !rl.Sent {
		t.Fatalf("429: %v, want a sent *RateLimitError", err)
	}
	if until, ok := c.Limited(); !ok || !until.Equal(rl.Until) {
		t.Errorf("Limited = %v, %v; want until %v", until, ok, rl.Until)
	}
	// Paused: the next call is not sent.
	_, err = c.Do(t.Context(), Request{Method: http.MethodGet, Path: "items", Auth: true})
	if !errors.As(err, &rl) || rl.Sent {
		t.Errorf("call while paused: %v, want an unsent *RateLimitError", err)
	}
	// The pause lives in the client's registry: the process's knows nothing of it.
	other, err := New(Config{BaseURL: srv.URL, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	if until, ok := other.Limited(); ok {
		t.Errorf("a client of the process's registry is paused until %v", until)
	}
}

// TestEachPage: a listing is followed to its end, past any fixed number of pages, and one
// that goes on past the client's bound, or whose next page does not move forward, fails
// instead of being cut short.
func TestEachPage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		total    int  // pages the fake GitLab serves
		repeat   bool // X-Next-Page names the page served
		maxPages int
		stopAt   int // fn stops after this page; 0: never
		want     int // pages read
		err      string
	}{
		{"past fifty pages", 120, false, 0, 0, 120, ""},
		{"exactly the bound", 5, false, 5, 0, 5, ""},
		{"past the bound", 10, false, 5, 0, 5, "listing longer than 5 pages"},
		{"caller stops", 120, false, 0, 3, 3, ""},
		{"next page repeats", 10, true, 0, 0, 1, `names "1" as the next page`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				page, _ := strconv.Atoi(r.URL.Query().Get("page"))
				switch {
				case tc.repeat:
					w.Header().Set("X-Next-Page", strconv.Itoa(page))
				case page < tc.total:
					w.Header().Set("X-Next-Page", strconv.Itoa(page+1))
				}
				w.Write([]byte(`[` + strconv.Itoa(page) + `]`))
			}))
			t.Cleanup(srv.Close)
			c, err := New(Config{BaseURL: srv.URL, Token: "glpat-pages", MaxPages: tc.maxPages})
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			err = EachPage(t.Context(), c, "items", nil, func(p []int) (bool, error) {
				got = append(got, p...)
				return len(got) == tc.stopAt, nil
			})
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("err = %v, want %q", err, tc.err)
			}
			if len(got) != tc.want || got[len(got)-1] != tc.want {
				t.Errorf("read %d pages (last %v), want %d", len(got), got[len(got)-1:], tc.want)
			}
		})
	}
}
