package main

import "testing"

func TestEvents(t *testing.T) {
	t.Parallel()
	a := setup(t)
	runGolden(t, a, []goldenCase{
		{"events_table.txt", []string{"events"}},
		{"events_namespace.txt", []string{"events", "-n", "production"}},
		{"events_for.txt", []string{"events", "--for", "DatabaseCluster/orders-pg", "-n", "production"}},
		{"events_source.txt", []string{"events", "--source", "platform"}},
		{"events_json.txt", []string{"events", "--for", "databasecluster/orders-pg", "-n", "staging", "-o", "json"}},
		{"events_yaml.txt", []string{"events", "--for", "Queue/jobs", "-o", "yaml"}},
	})
}
