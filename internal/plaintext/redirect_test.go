package plaintext

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestRedirect names every transition the redirect rule distinguishes, with host names that
// need no network.
func TestRedirect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		origin, from, to string
		creds, insecure  bool
		count            int
		want             string // substring of the error; "" follows
	}{
		{"same host, same scheme", "https://git.example.com/a", "https://git.example.com/a", "https://git.example.com/b", true, false, 1, ""},
		{"upgrade to https on the same host", "http://git.example.com/a", "http://git.example.com/a", "https://git.example.com/a", true, false, 1, ""},
		{"default ports are the same host", "https://git.example.com/a", "https://git.example.com/a", "https://GIT.example.com:443/b", true, false, 1, ""},
		{"downgrade to another machine", "https://git.example.com/a", "https://git.example.com/a", "http://git.example.com/a", false, false, 1, "unencrypted"},
		{"downgrade with credentials", "https://git.example.com/a", "https://git.example.com/a", "http://git.example.com/a", true, false, 1, "unencrypted"},
		{"downgrade to a private address", "https://10.0.0.5/a", "https://10.0.0.5/a", "http://10.0.0.5/a", true, false, 1, "unencrypted"},
		{"downgrade, insecure endpoint", "https://git.example.com/a", "https://git.example.com/a", "http://git.example.com/a", true, true, 1, ""},
		{"downgrade to loopback", "https://127.0.0.1:8443/a", "https://127.0.0.1:8443/a", "http://127.0.0.1:8443/a", true, false, 1, ""},
		{"downgrade to localhost", "https://localhost/a", "https://localhost/a", "http://localhost/a", false, false, 1, ""},
		{"downgrade on a later hop", "https://a.example.com/", "https://a.example.com/x", "http://a.example.com/y", false, false, 3, "unencrypted"},
		{"http to http stays allowed", "http://git.example.com/", "http://git.example.com/", "http://git.example.com/x", false, false, 1, ""},
		{"another host without credentials", "https://api.example.com/", "https://api.example.com/", "https://blob.example.net/x", false, false, 1, ""},
		{"another host with credentials", "https://api.example.com/", "https://api.example.com/", "https://blob.example.net/x", true, false, 1, "credentials configured for api.example.com"},
		{"a subdomain with credentials", "https://example.com/", "https://example.com/", "https://evil.example.com/", true, false, 1, "credentials"},
		{"another port with credentials", "https://example.com/", "https://example.com/", "https://example.com:8443/", true, false, 1, "credentials"},
		{"another host with credentials, insecure", "https://api.example.com/", "https://api.example.com/", "https://evil.example.net/", true, true, 1, "credentials"},
		{"loopback to another loopback name with credentials", "https://127.0.0.1:1/", "https://127.0.0.1:1/", "https://localhost:1/", true, false, 1, "credentials"},
		{"back to the origin after leaving it", "https://a.example.com/", "https://b.example.com/", "https://a.example.com/", true, false, 2, ""},
		{"leaving again after leaving", "https://a.example.com/", "https://b.example.com/", "https://c.example.com/", true, false, 2, "credentials"},
		{"another scheme", "https://a.example.com/", "https://a.example.com/", "ftp://a.example.com/", false, false, 1, "not http or https"},
		{"too many hops", "https://a.example.com/", "https://a.example.com/", "https://a.example.com/", false, false, 10, "stopped after 10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Redirect(Hop{Origin: mustURL(t, tc.origin), From: mustURL(t, tc.from), To: mustURL(t, tc.to),
				Credentials: tc.creds, Insecure: tc.insecure, Count: tc.count})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v; want %q", err, tc.want)
			}
		})
	}
}

// TestCredentials: user info and any header outside the known plain ones count.
func TestCredentials(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url    string
		header map[string]string
		want   bool
	}{
		{"https://a.example.com/", map[string]string{"Accept": "application/json", "User-Agent": "trueup", "Content-Type": "application/json"}, false},
		{"https://a.example.com/", map[string]string{"Authorization": "Bearer x"}, true},
		{"https://a.example.com/", map[string]string{"PRIVATE-TOKEN": "x"}, true},
		{"https://a.example.com/", map[string]string{"X-Trueup-Signature-256": "sha256=ab"}, true},
		{"https://bot:pw@a.example.com/", nil, true},
	} {
		req, err := http.NewRequest(http.MethodGet, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		if got := Credentials(req); got != tc.want {
			t.Errorf("Credentials(%s %v) = %v; want %v", tc.url, tc.header, got, tc.want)
		}
	}
}

// TestCheckRedirectUsesTheChain: the hook judges the next hop against the chain's origin and
// the original request's credentials (net/http rebuilds each hop's headers from it).
func TestCheckRedirectUsesTheChain(t *testing.T) {
	t.Parallel()
	first, _ := http.NewRequest(http.MethodGet, "https://api.example.com/x", nil)
	first.Header.Set("PRIVATE-TOKEN", "tok")
	second, _ := http.NewRequest(http.MethodGet, "https://api.example.com/y", nil)
	next, _ := http.NewRequest(http.MethodGet, "https://cdn.example.net/z", nil)
	check := CheckRedirect(false)
	if err := check(second, []*http.Request{first}); err != nil {
		t.Errorf("same host: %v", err)
	}
	if err := check(next, []*http.Request{first, second}); err == nil {
		t.Error("a hop to another host with PRIVATE-TOKEN was allowed")
	}
	down, _ := http.NewRequest(http.MethodGet, "http://api.example.com/y", nil)
	if err := check(down, []*http.Request{first}); err == nil {
		t.Error("a downgrade was allowed")
	}
	if err := CheckRedirect(true)(down, []*http.Request{first}); err != nil {
		t.Errorf("a downgrade with insecure: %v", err)
	}
}
