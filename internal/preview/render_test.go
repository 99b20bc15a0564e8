package preview

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRenderComment(t *testing.T) {
	t.Parallel()
	const sha = "0123456789abcdef0123456789abcdef01234567"
	valid := Result{
		Counts: Counts{Add: 1, Change: 1, Unchanged: 3},
		Changes: []Change{
			{Op: "add", Kind: "Queue", Namespace: "default", Name: "orders", File: "q.yaml", Line: 4,
				Diff: "--- a\n+++ b\n@@ -1 +1,3 @@\n-null\n+{\n+  \"size\": 3\n+}", Plan: &Plan{Status: "planned", Changes: true, Summary: "1 to add", Text: "+ queue orders"}},
			{Op: "change", Kind: "Queue", Namespace: "default", Name: "pi|pe`x", File: "q.yaml", Line: 9,
				Diff: "@@ -1 +1 @@\n-  \"password\": \"*** sops:abc\"\n+  \"password\": \"*** sops:def\"", Plan: &Plan{Status: "no-plan"}},
		},
		Warnings: []string{"TooManyDeletions: revision x would delete 3 of 4 resources"},
	}
	for _, tc := range []struct {
		name    string
		c       Comment
		want    []string
		notWant []string
		maxLen  int
	}{
		{
			name: "valid",
			c:    Comment{Source: "infra", HeadSHA: sha, Result: valid, DashboardURL: "https://trueup.example/sources/infra/previews/7"},
			want: []string{Marker, "`infra`", "`0123456789ab`", "1 to add, 1 to change, 0 to delete, 3 unchanged, 0 invalid", "✅ valid",
				"| + add | Queue/default/orders | q.yaml:4 | 1 to add |", `| ~ change | Queue/default/pi\|pe\` + "`" + `x | q.yaml:9 | no plan (the action cannot plan) |`,
				"```diff\n--- a\n+++ b\n", "<details><summary>Plan output</summary>\n\n```text\n+ queue orders\n```", "*** sops:def",
				"#### Warnings\n\n- TooManyDeletions: revision x would delete 3 of 4 resources",
				"[Full preview on trueup's dashboard](https://trueup.example/sources/infra/previews/7)"},
			notWant: []string{"Errors", "cut at", "Policies:", "After merge"},
		},
		{
			name: "gated by policies",
			c: Comment{Source: "infra", HeadSHA: sha, Result: Result{Counts: Counts{Change: 1, Delete: 1}, Changes: []Change{
				{Op: "change", Kind: "Database", Namespace: "production", Name: "orders", File: "db.yaml", Line: 1,
					Plan: &Plan{Status: "planned", Changes: true, Summary: "0 to add, 0 to change, 0 to destroy, 1 to replace"},
					Gate: &Gate{Decision: "requireApproval", Policy: "prod-destroy-needs-dba", Message: "a DBA approves",
						Requires: []string{"1 approval from group dba (policy prod-destroy-needs-dba)"}}},
				{Op: "delete", Kind: "Database", Namespace: "production", Name: "users", File: "db.yaml", Line: 9,
					Gate: &Gate{Decision: "deny", Policy: "no-deletes", Message: "production databases are not deleted"}},
			}}},
			want: []string{"Policies: after merge, of the changes below, 1 would wait for approval and 1 would be denied.",
				"| ~ change | Database/production/orders | db.yaml:1 | 0 to add, 0 to change, 0 to destroy, 1 to replace; ⏸ needs 1 approval from group dba (policy prod-destroy-needs-dba) |",
				"| - delete | Database/production/users | db.yaml:9 | ⛔ denied by policy no-deletes: production databases are not deleted |",
				"⏸ After merge: needs 1 approval from group dba (policy prod-destroy-needs-dba)\n",
				"⛔ After merge: denied by policy no-deletes: production databases are not deleted\n"},
		},
		{
			name: "invalid",
			c: Comment{Source: "infra", HeadSHA: sha, Result: Result{Counts: Counts{Invalid: 2}, Errors: []Error{
				{File: "bad.yaml", Line: 3, Path: "spec.size", Message: "expected integer, but got string"},
				{Message: "revision has too many files"}}}},
			want: []string{"0 to add, 0 to change, 0 to delete, 0 unchanged, 2 invalid", "❌ invalid", "#### Errors (2)",
				"```text\nbad.yaml:3: spec.size: expected integer, but got string\nrevision has too many files\n```"},
			notWant: []string{"dashboard", "| |"},
		},
		{
			name:    "fence in user content",
			c:       Comment{Source: "infra", HeadSHA: sha, Result: Result{Counts: Counts{Invalid: 1}, Errors: []Error{{File: "a.yaml", Line: 1, Message: "bad ``` fence"}}}},
			want:    []string{"````text\na.yaml:1: bad ``` fence\n````"},
			notWant: []string{"\n```text"},
		},
		{
			name: "failure",
			c:    Comment{Source: "infra", HeadSHA: sha, Failure: "fetch ref refs/pull/7/head: not found"},
			want: []string{"**Could not preview this pull request:**", "```text\nfetch ref refs/pull/7/head: not found\n```"},
		},
		{
			name: "cut at the limit with a link",
			c:    Comment{Source: "infra", HeadSHA: sha, Result: many(2000), DashboardURL: "https://trueup.example/sources/infra/previews/7", Limit: 65536},
			want: []string{"2000 to add", "| + add | Queue/default/q0000 |", "… and ", "more\n",
				"**This comment was cut at the forge's size limit.** [See the full preview on trueup's dashboard](https://trueup.example/sources/infra/previews/7)"},
			maxLen: 65536,
		},
		{
			name:   "cut without a link",
			c:      Comment{Source: "infra", HeadSHA: sha, Result: many(300), Limit: 20000},
			want:   []string{"See the full preview with `trueup preview infra --pr N` or the API."},
			maxLen: 20000,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := RenderComment(tc.c)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("comment lacks %q:\n%s", w, head(got))
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("comment has %q:\n%s", w, head(got))
				}
			}
			if tc.maxLen > 0 && utf8.RuneCountInString(got) > tc.maxLen {
				t.Errorf("comment is %d characters, more than %d", utf8.RuneCountInString(got), tc.maxLen)
			}
			if strings.Count(got, "```")%2 != 0 && !strings.Contains(got, "````") {
				t.Errorf("unbalanced fences:\n%s", head(got))
			}
		})
	}
}

func many(n int) Result {
	r := Result{Counts: Counts{Add: n}}
	for i := range n {
		name := fmt.Sprintf("q%04d", i)
		r.Changes = append(r.Changes, Change{Op: "add", Kind: "Queue", Namespace: "default", Name: name, File: "queues.yaml", Line: i + 1,
			Diff: "--- a\n+++ b\n@@ -1 +1,3 @@\n-null\n+{\n+  \"size\": 1\n+}", Plan: &Plan{Status: "planned", Summary: "1 to add"}})
	}
	return r
}

func head(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}

func TestMask(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{`{"password":{"secretRef":{"name":"db","key":"pw"}},"n":2}`, `{"n":2,"password":"*** secretRef db/pw"}`},
		{`{"list":[{"secretRef":{"name":"a","key":"b"}}]}`, `{"list":["*** secretRef a/b"]}`},
	} {
		if got := string(Mask([]byte(tc.in))); got != tc.want {
			t.Errorf("Mask(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestInlineCodeAndEscape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"infra", "`infra`"},
		{"a`b", "``a`b``"},
		{"`", "`` ` ``"},
		{"a``b", "```a``b```"},
	} {
		if got := inlineCode(tc.in); got != tc.want {
			t.Errorf("inlineCode(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// A name or message from the pull request must not mention anyone.
	if got := escape("ping @octocat and @acme/admins"); strings.Contains(got, "@o") || strings.Contains(got, "@a") {
		t.Errorf("escape left a mention: %q", got)
	}
}
