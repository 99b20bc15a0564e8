package main

import (
	"strings"
	"testing"
)

func TestHistory(t *testing.T) {
	t.Parallel()
	a := setup(t)
	runGolden(t, a, []goldenCase{
		{"history_table.txt", []string{"history", "DatabaseCluster/orders-pg", "-n", "production"}},
		{"history_json.txt", []string{"history", "DatabaseCluster/orders-pg", "-n", "production", "-o", "json", "--limit", "2"}},
		{"history_yaml.txt", []string{"history", "bucket/invoices", "-n", "production", "-o", "yaml"}},
	})
	out, stderr, err := a.run(t, "history", "Bucket/build-cache")
	if err != nil || out != "" || !strings.Contains(stderr, "No reconcile attempts recorded for Bucket/build-cache in namespace default yet.") {
		t.Errorf("never reconciled: err %v stdout %q stderr %q", err, out, stderr)
	}
}
