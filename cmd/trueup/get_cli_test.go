package main

import (
	"strings"
	"testing"
)

// goldenCase is one CLI invocation whose stdout must match a golden file.
type goldenCase struct {
	golden string
	args   []string
}

func runGolden(t *testing.T, a *api, cases []goldenCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			out, stderr, err := a.run(t, tc.args...)
			if err != nil {
				t.Fatalf("trueup %s: %v\n%s", strings.Join(tc.args, " "), err, stderr)
			}
			golden(t, tc.golden, out)
		})
	}
}

func TestGet(t *testing.T) {
	t.Parallel()
	a := setup(t)
	runGolden(t, a, []goldenCase{
		{"get_resources_table.txt", []string{"get", "resources"}},
		{"get_resources_wide.txt", []string{"get", "resources", "-o", "wide"}},
		{"get_resources_json.txt", []string{"get", "resources", "-o", "json"}},
		{"get_resources_yaml.txt", []string{"get", "resources", "-o", "yaml"}},
		{"get_resources_filtered.txt", []string{"get", "res", "-n", "production", "-l", "team in (checkout,catalog)", "--kind", "databasecluster"}},
		{"get_resources_failed.txt", []string{"get", "resource", "--phase", "Failed", "--source", "infra", "-A"}},
		{"get_types_table.txt", []string{"get", "types"}},
		{"get_types_wide.txt", []string{"get", "resourcetypes", "-o", "wide"}},
		{"get_types_json.txt", []string{"get", "type", "-o", "json", "--source", "platform"}},
		{"get_types_yaml.txt", []string{"get", "types", "-o", "yaml", "--source", "platform"}},
		{"get_sources_table.txt", []string{"get", "sources"}},
		{"get_sources_wide.txt", []string{"get", "src", "-o", "wide"}},
		{"get_sources_json.txt", []string{"get", "source", "-o", "json"}},
		{"get_sources_yaml.txt", []string{"get", "sources", "-o", "yaml"}},
	})
}

// TestGetFollowsPages reads the list two items per page and must print the same table.
func TestGetFollowsPages(t *testing.T) {
	t.Parallel()
	a := setup(t)
	for _, format := range []string{"table", "json"} {
		whole, _, err := a.run(t, "get", "resources", "-o", format)
		if err != nil {
			t.Fatal(err)
		}
		paged, _, err := a.run(t, "get", "resources", "-o", format, "--chunk-size", "2")
		if err != nil {
			t.Fatal(err)
		}
		if paged != whole || strings.Count(whole, "\n") < 7 {
			t.Errorf("-o %s: two per page differs from one page:\n%s\nvs\n%s", format, paged, whole)
		}
	}
}

func TestGetNothingFound(t *testing.T) {
	t.Parallel()
	a := setup(t)
	out, stderr, err := a.run(t, "get", "resources", "-n", "nowhere")
	if err != nil || out != "" || stderr != "No resources found in namespace nowhere.\n" {
		t.Errorf("err %v stdout %q stderr %q", err, out, stderr)
	}
	out, _, err = a.run(t, "get", "resources", "-n", "nowhere", "-o", "json")
	if err != nil || out != "{\n  \"items\": []\n}\n" {
		t.Errorf("json: err %v stdout %q", err, out)
	}
	out, _, err = a.run(t, "get", "resources", "-n", "nowhere", "-o", "yaml")
	if err != nil || out != "items: []\n" {
		t.Errorf("yaml: err %v stdout %q", err, out)
	}
}

// TestGetPhase: --phase takes a phase in any case and refuses one that does not exist.
func TestGetPhase(t *testing.T) {
	t.Parallel()
	a := setup(t)
	runGolden(t, a, []goldenCase{
		{"get_resources_failed.txt", []string{"get", "resource", "--phase", "failed", "--source", "infra", "-A"}},
	})
	want, _, err := a.run(t, "get", "resources", "--phase", "Ready")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(want, "\n") < 2 {
		t.Fatalf("--phase Ready lists nothing:\n%s", want)
	}
	for _, spelling := range []string{"ready", "READY", "rEaDy"} {
		got, _, err := a.run(t, "get", "resources", "--phase", spelling)
		if err != nil || got != want {
			t.Errorf("--phase %s: err %v\n%s\nwant\n%s", spelling, err, got, want)
		}
	}
	_, _, err = a.run(t, "get", "resources", "--phase", "done")
	if err == nil || !strings.Contains(err.Error(), `--phase "done"`) ||
		!strings.Contains(err.Error(), "Pending, Reconciling, Ready, Failed, Deleting") {
		t.Errorf("unknown phase: %v", err)
	}
}
