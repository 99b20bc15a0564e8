package ghactions

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestArtifactDownloadRefusesDowngrade: an artifact's blob, whose content becomes outputs, is
// not fetched over http:// when the API (https) sends it there, neither by the API's own
// redirect nor by one of the blob service; a redirect within https is followed.
func TestArtifactDownloadRefusesDowngrade(t *testing.T) {
	t.Parallel()
	var blobHits atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/repos/acme/infra/actions/artifacts/1/zip": // the API sends the blob to http://
			w.Header().Set("Location", "http://blob.example.com/blob/1?sig=abc")
			w.WriteHeader(http.StatusFound)
		case "/repos/acme/infra/actions/artifacts/2/zip":
			w.Header().Set("Location", srv.URL+"/blob/2?sig=abc")
			w.WriteHeader(http.StatusFound)
		case "/blob/2": // the blob service sends it on to http://
			http.Redirect(w, r, "http://blob.example.com/blob/2", http.StatusFound)
		case "/repos/acme/infra/actions/artifacts/3/zip":
			w.Header().Set("Location", srv.URL+"/blob/3?sig=abc")
			w.WriteHeader(http.StatusFound)
		case "/blob/3":
			http.Redirect(w, r, srv.URL+"/blob/3b", http.StatusFound)
		case "/blob/3b":
			blobHits.Add(1)
			_, _ = w.Write([]byte("zip"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	// The API answers as https://example.com (a name of the test certificate), so the blob
	// host is not loopback; the test's transport sends every name to the TLS fake.
	f := &fakeGitHub{t: t, srv: srv, clk: &testClock{}, token: "ghp_" + randomHex(18)}
	a, _ := newAction(t, f, f.config(map[string]any{"baseURL": "https://example.com/"}), t.TempDir())
	a.transport.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	dial := a.transport.DialContext
	a.transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if strings.HasPrefix(addr, "example.com:") {
			addr = srv.Listener.Addr().String()
		}
		return dial(ctx, network, addr)
	}
	for _, id := range []int64{1, 2} {
		if _, err := a.downloadArtifact(t.Context(), id, 1<<20); err == nil || !strings.Contains(err.Error(), "unencrypted") {
			t.Errorf("artifact %d: err = %v; want the downgrade refused", id, err)
		}
	}
	if b, err := a.downloadArtifact(t.Context(), 3, 1<<20); err != nil || string(b) != "zip" || blobHits.Load() != 1 {
		t.Errorf("artifact 3: %q, %v", b, err)
	}
}
