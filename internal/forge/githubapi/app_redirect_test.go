package githubapi

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestExchangeRefusesUnsafeRedirects: the token exchange, which carries the signed token,
// follows no redirect to http:// on a machine that is not this one, nor to another host.
// The API answers as https://example.com (a name the test certificate holds); a dialer sends
// example.com:443 to the TLS fake and example.com:80 to a plain one, so the downgrade is to a
// host that does not look like loopback, as in production.
func TestExchangeRefusesUnsafeRedirects(t *testing.T) {
	t.Parallel()
	var leaked atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Add(1)
		http.Error(w, "should not be reached", http.StatusTeapot)
	}))
	t.Cleanup(plain.Close)
	var target atomic.Value
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/moved/") {
			leaked.Add(1)
			http.Error(w, "should not be reached", http.StatusTeapot)
			return
		}
		http.Redirect(w, r, target.Load().(string)+"/moved"+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(api.Close)
	client := api.Client()
	tr := client.Transport.(*http.Transport).Clone()
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		switch addr {
		case "example.com:443":
			addr = api.Listener.Addr().String()
		case "example.com:80":
			addr = plain.Listener.Addr().String()
		}
		return d.DialContext(ctx, network, addr)
	}
	client.Transport = tr
	key, _ := appKeys(t)
	path, _ := writeKey(t, t.TempDir(), key, false)

	for _, tc := range []struct{ name, target, want string }{
		{"downgrade to http", "http://example.com", "unencrypted"},
		{"another host", api.URL, "credentials configured for example.com"},
	} {
		target.Store(tc.target)
		src, err := NewApp(AppConfig{AppID: testAppID, InstallationID: testInstallationID, PrivateKeyFile: path,
			BaseURL: "https://example.com/"}, client)
		if err != nil {
			t.Fatal(err)
		}
		_, err = src.Token(t.Context())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v; want %q", tc.name, err, tc.want)
		}
		if n := leaked.Swap(0); n != 0 {
			t.Errorf("%s: the redirect was followed (%d request(s))", tc.name, n)
		}
	}
}
