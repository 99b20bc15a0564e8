package tracing

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExportClientRefusesRedirects: a collector's redirect is answered as it is, and its
// target never sees the export's headers.
func TestExportClientRefusesRedirects(t *testing.T) {
	t.Parallel()
	reached := make(chan http.Header, 1)
	target := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { reached <- r.Header.Clone() }))
	defer target.Close()
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/v1/traces", http.StatusTemporaryRedirect)
	}))
	defer col.Close()
	client, err := exportClient(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, col.URL+"/v1/traces", strings.NewReader("spans"))
	req.Header.Set("X-Api-Key", "k3y")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect {
		t.Errorf("status %d, want the redirect itself", resp.StatusCode)
	}
	select {
	case h := <-reached:
		t.Errorf("the redirect was followed with %v", h)
	default:
	}
}

// TestExportClientEnv: the timeout and certificate variables the SDK ignores once given a
// client are read as it reads them; a bad one is an error naming the variable.
func TestExportClientEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		env     map[string]string
		timeout time.Duration
		err     string
	}{
		{"defaults", nil, 10 * time.Second, ""},
		{"timeout", map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "2500"}, 2500 * time.Millisecond, ""},
		{"traces timeout wins", map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "700"}, 700 * time.Millisecond, ""},
		{"bad timeout", map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "5s"}, 0, `OTEL_EXPORTER_OTLP_*TIMEOUT: "5s"`},
		{"missing CA file", map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": filepath.Join(dir, "none.pem")}, 0, "OTEL_EXPORTER_OTLP_*CERTIFICATE"},
		{"CA file not PEM", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": notPEM}, 0, "holds no PEM certificate"},
		{"client key without certificate", map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_KEY": notPEM}, 0, "go together"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := exportClient(func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Timeout != tc.timeout || c.CheckRedirect == nil {
				t.Errorf("timeout %s (want %s), redirects checked %v", c.Timeout, tc.timeout, c.CheckRedirect != nil)
			}
		})
	}
}
