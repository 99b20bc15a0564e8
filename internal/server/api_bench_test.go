package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/trueup-dev/trueup/internal/cputime"
)

// BenchmarkAPIReads measures the server's CPU for the reads of the apiload crowd and of the
// reads1m figures (a page of resources, one resource, a page of events) on 2,000 resources
// seeded through the apply path: `go test -run - -bench APIReads -benchmem ./internal/server/`.
func BenchmarkAPIReads(b *testing.B) {
	srv, st := setup(b, 2000)
	// Nothing due: the engine idle, requests unpaced.
	if _, err := st.Pool().Exec(context.Background(), "UPDATE resource_queue SET run_at = now() + interval '1 hour'"); err != nil {
		b.Fatal(err)
	}
	h := srv.Config.Handler
	for _, c := range []struct{ name, path string }{
		{"list100", "/api/v1/resources?limit=100"},
		{"list50ns", "/api/v1/resources?limit=50&namespace=beta"},
		{"get", "/api/v1/resources/alpha/Queue/q000"},
		{"events50", "/api/v1/events?limit=50"},
	} {
		p := c.path
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := cputime.Self()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", p, rec.Code, rec.Body.String())
				}
			}
			b.ReportMetric(float64(cputime.Self()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
