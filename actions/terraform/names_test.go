package terraform

import (
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

func TestSchemaName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"tf":      "trueup_tf_tf",
		"db_prod": "trueup_tf_db_prod",
		"DB-prod": "trueup_tf_db_prod_" + digest("DB-prod"),
		"a/b c":   "trueup_tf_a_b_c_" + digest("a/b c"),
	} {
		if got := schemaName(in); got != want {
			t.Errorf("schemaName(%q) = %q; want %q", in, got, want)
		}
	}
	long := schemaName(string(make([]byte, 100)))
	if len(long) > maxIdent {
		t.Errorf("schemaName of a long name is %d bytes; want at most %d", len(long), maxIdent)
	}
}

func TestWorkspaceName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r    actions.Resource
		want string
	}{
		{actions.Resource{Namespace: "team-a", Kind: "Database", Name: "orders"}, "team-a.Database.orders"},
		{actions.Resource{Namespace: "team-a", Kind: "Database", Name: "a/b"}, "team-a.Database.a_b-" + digest("team-a.Database.a/b")},
		{actions.Resource{Kind: "Database", Name: "x"}, ".Database.x-" + digest(".Database.x")},
	} {
		if got := workspaceName(tc.r); got != tc.want {
			t.Errorf("workspaceName(%+v) = %q; want %q", tc.r, got, tc.want)
		}
	}
	// Two names that clean to the same text stay apart.
	a := workspaceName(actions.Resource{Namespace: "n", Kind: "K", Name: "a/b"})
	b := workspaceName(actions.Resource{Namespace: "n", Kind: "K", Name: "a b"})
	if a == b {
		t.Errorf("a/b and a b share workspace %q", a)
	}
}

func TestSummary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		out     string
		changes bool
		want    string
	}{
		{"…\nPlan: 1 to add, 0 to change, 0 to destroy.\n\nChanges to Outputs:\n", true, "1 to add, 0 to change, 0 to destroy"},
		{"Plan: 1 to import, 0 to add, 1 to change, 0 to destroy.\n", true, "1 to import, 0 to add, 1 to change, 0 to destroy"},
		{"No changes. Your infrastructure matches the configuration.\n", false, "no changes"},
		{"Changes to Outputs:\n  + x = 1\n", true, "only outputs change"},
		{"", true, "changes"},
	} {
		if got := summary(tc.out, tc.changes); got != tc.want {
			t.Errorf("summary(%q) = %q; want %q", tc.out, got, tc.want)
		}
	}
}
