package tracing

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"
)

// defaultExportTimeout bounds one export request when no OTEL_EXPORTER_OTLP_*TIMEOUT says
// otherwise (the SDK's default).
const defaultExportTimeout = 10 * time.Second

// exportClient is the exporter's HTTP client. It follows no redirect: the exporter's headers
// (an API key in X-Api-Key, say) would go along to wherever the redirect points, even over
// plain http, and Go strips only Authorization and Cookie on a redirect to another host; the
// collector's 3xx is reported as an export error instead. The SDK offers no option for
// redirects, only its own client (WithHTTPClient), and with one it ignores the timeout and
// certificate variables it otherwise reads: getenv reads them here as it does
// (OTEL_EXPORTER_OTLP_TRACES_* over OTEL_EXPORTER_OTLP_*; timeouts in milliseconds; PEM files).
// A variable the SDK would ignore with a warning (a bad number, an unreadable file) is an
// error here: serve refuses to start rather than export in a way nobody asked for.
func exportClient(getenv func(string) string) (*http.Client, error) {
	get := func(name string) string {
		if v := getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
			return v
		}
		return getenv("OTEL_EXPORTER_OTLP_" + name)
	}
	timeout := defaultExportTimeout
	if v := get("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_*TIMEOUT: %q is not a number of milliseconds", v)
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if ca := get("CERTIFICATE"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_*CERTIFICATE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_*CERTIFICATE: %s holds no PEM certificate", ca)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if cert, key := get("CLIENT_CERTIFICATE"), get("CLIENT_KEY"); cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, errors.New("OTEL_EXPORTER_OTLP_*CLIENT_CERTIFICATE and *CLIENT_KEY go together")
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_*CLIENT_CERTIFICATE: %w", err)
		}
		if transport.TLSClientConfig == nil {
			transport.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		transport.TLSClientConfig.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{Transport: transport, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}
