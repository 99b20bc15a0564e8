package main

import "testing"

func TestDescribe(t *testing.T) {
	t.Parallel()
	a := setup(t)
	runGolden(t, a, []goldenCase{
		{"describe_ready.txt", []string{"describe", "DatabaseCluster/orders-pg", "-n", "production"}},
		{"describe_stalled.txt", []string{"describe", "databasecluster/catalog-mysql", "--namespace", "production"}},
		{"describe_pending.txt", []string{"describe", "Bucket/build-cache"}},
	})
}
