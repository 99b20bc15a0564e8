package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/preview"
	"github.com/trueup-dev/trueup/internal/store"
)

// savePreviews stores three previews of infra, as the preview runner would have: #42
// succeeded with a change, an add and a delete; #43 failed validation; #44 pending.
func savePreviews(t *testing.T, a *api) {
	t.Helper()
	ctx := context.Background()
	ok, err := json.Marshal(preview.Result{
		Counts: preview.Counts{Add: 1, Change: 1, Delete: 1, Unchanged: 3},
		Changes: []preview.Change{
			{Op: "change", Kind: "DatabaseCluster", Namespace: "production", Name: "orders-pg", File: "manifests/databases.yaml", Line: 3,
				Diff: "--- production/DatabaseCluster/orders-pg\n+++ production/DatabaseCluster/orders-pg\n@@ -1,3 +1,3 @@\n engine: postgres\n-storage_gb: 500\n+storage_gb: 800\n password: '***'\n",
				Plan: &preview.Plan{Status: "planned", Changes: true, Summary: "0 to add, 1 to change, 0 to destroy",
					Text: "  # aws_db_instance.main will be updated in-place\n  ~ allocated_storage = 500 -> 800\n"},
				Gate: &preview.Gate{Decision: "requireApproval", Policy: "prod-needs-dba", Requires: []string{"1 approval from group dba (policy prod-needs-dba)"}}},
			{Op: "add", Kind: "Bucket", Namespace: "production", Name: "exports", File: "manifests/buckets.yaml", Line: 9,
				Diff: "--- /dev/null\n+++ production/Bucket/exports\n@@ -0,0 +1,2 @@\n+region: eu-west-1\n+versioning: true\n",
				Plan: &preview.Plan{Status: "no-plan"}},
			{Op: "delete", Kind: "Bucket", Namespace: "production", Name: "invoices", File: "manifests/buckets.yaml", Line: 1,
				Diff: "--- production/Bucket/invoices\n+++ /dev/null\n@@ -1 +0,0 @@\n-region: eu-west-1\n",
				Plan: &preview.Plan{Status: "timeout", Error: "no plan within 2m0s"}},
		},
		Errors:   []preview.Error{},
		Warnings: []string{"plan of Bucket production/invoices timed out after 2m0s"},
	})
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := json.Marshal(preview.Result{Counts: preview.Counts{Unchanged: 4, Invalid: 2}, Changes: []preview.Change{},
		Errors: []preview.Error{{File: "manifests/databases.yaml", Line: 7, Path: "spec.storage_gb", Message: "must be at most 10000"},
			{File: "manifests/queues.yaml", Message: "yaml: mapping values are not allowed in this context"}}})
	for _, p := range []struct {
		store.Preview
		updated time.Time
	}{
		{store.Preview{Source: "infra", Number: 42, Provider: "github", Title: "Grow orders-pg to 800 GB\x1b[31m", URL: "https://github.com/acme/infra/pull/42",
			HeadSHA: "5d41402abc4b2a76b9719d911017c592ae1a2f01", BaseRevision: rev2, State: store.PreviewSucceeded,
			Message: "1 to add, 1 to change, 1 to delete", Result: ok, CommentURL: "https://github.com/acme/infra/pull/42#issuecomment-1001"},
			cliNow.Add(-5 * time.Minute)},
		{store.Preview{Source: "infra", Number: 43, Provider: "github", Title: "Bigger is better", URL: "https://github.com/acme/infra/pull/43",
			HeadSHA: "7d793037a0760186574b0282f2f435e7b2a1c0de", BaseRevision: rev2, State: store.PreviewFailed,
			Message: "2 validation errors", Result: bad}, cliNow.Add(-2 * time.Hour)},
		{store.Preview{Source: "infra", Number: 44, Provider: "github", Title: "Queue for exports", URL: "https://github.com/acme/infra/pull/44",
			HeadSHA: "0c1e0a0cbe7b1d8a4b3c2d1e0f9a8b7c6d5e4f30", BaseRevision: rev2, State: store.PreviewPending}, cliNow.Add(-30 * time.Second)},
	} {
		if _, err := a.store.SavePreview(ctx, p.Preview); err != nil {
			t.Fatal(err)
		}
		if _, err := a.store.Pool().Exec(ctx, `UPDATE previews SET created_at = $3, updated_at = $3 WHERE source = $1 AND number = $2`,
			p.Source, p.Number, p.updated); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPreview(t *testing.T) {
	t.Parallel()
	a := setup(t)
	savePreviews(t, a)
	runGolden(t, a, []goldenCase{
		{"preview_list.txt", []string{"preview", "infra"}},
		{"preview_list_json.txt", []string{"preview", "infra", "-o", "json", "--limit", "2"}},
		{"preview_show.txt", []string{"preview", "infra", "--pr", "42"}},
		{"preview_show_yaml.txt", []string{"preview", "infra", "--pr", "42", "-o", "yaml"}},
		{"preview_invalid.txt", []string{"preview", "infra", "--pr", "43"}},
		{"preview_pending.txt", []string{"preview", "infra", "--pr", "44"}},
	})
}

func TestPreviewErrors(t *testing.T) {
	t.Parallel()
	a := setup(t)
	savePreviews(t, a)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"preview", "infra", "--pr", "45"}, "preview infra#45: not found"},
		{[]string{"preview", "nope"}, "source nope: not found"},
		{[]string{"preview", "nope", "--pr", "1"}, "source nope: not found"},
		{[]string{"preview", "infra", "--pr", "0"}, "--pr 0: want a pull request number"},
		{[]string{"preview", "infra", "-o", "wide"}, `unknown output format "wide"`},
		{[]string{"preview", "infra", "--limit", "0"}, "--limit 0: want 1 to 1000"},
		{[]string{"preview"}, "accepts 1 arg"},
	} {
		_, _, err := a.run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("trueup %s: err = %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	out, stderr, err := a.run(t, "preview", "platform")
	if err != nil || out != "" || stderr != "No previews found for source platform.\n" {
		t.Errorf("preview of a source without previews: %q %q %v", out, stderr, err)
	}
	if out, _, _ := a.run(t, "preview", "infra", "--pr", "42"); strings.Contains(out, "\x1b") {
		t.Error("an escape sequence from a title reached the terminal")
	}
}
