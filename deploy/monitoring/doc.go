// Package monitoring ships trueup's Prometheus alerting rules (trueup-alerts.yaml, with their
// promtool unit tests in trueup-alerts_test.yaml) and its Grafana dashboard
// (grafana-dashboard.json). It holds no code: its tests run promtool over the rules and check
// the runbook links; internal/e2e checks that every metric they name is served by trueup.
package monitoring
