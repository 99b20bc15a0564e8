package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestReloadSeriesAtZero: both results of trueup_config_reloads_total are served at 0 from
// the start, so that an alert on increase() sees the first refused reload.
func TestReloadSeriesAtZero(t *testing.T) {
	m := New(Options{})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`trueup_config_reloads_total{result="failure"} 0`, `trueup_config_reloads_total{result="success"} 0`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("no %s", want)
		}
	}
	m.ConfigLoaded(true, false, time.Now())
	rec = httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if want := `trueup_config_reloads_total{result="failure"} 1`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("after a refused reload: no %s", want)
	}
}
