package manifest

import (
	"strings"
	"testing"
)

func TestSuggest(t *testing.T) {
	t.Parallel()
	kinds := []string{"DatabaseCluster", "Bucket", "Network", "App", "Queue", "Dns", "Vpc", "Job", "Role", "Node", "Topic", "Secret", "Cluster"}
	for _, tc := range []struct{ word, want string }{
		{"DatabaseCluster", "DatabaseCluster"},
		{"databasecluster", "DatabaseCluster"}, // case only
		{"DATABASECLUSTER", "DatabaseCluster"},
		{"app", "App"},
		{"DatabseCluster", "DatabaseCluster"}, // a letter missing
		{"DatabaseClusters", "DatabaseCluster"},
		{"DatabaseClsuter", "DatabaseCluster"}, // two letters swapped: two edits
		{"Buckt", "Bucket"},
		{"bukets", "Bucket"},
		{"Ap", "App"},
		{"Qeue", "Queue"},
		{"Topc", "Topic"},
		{"Database", ""}, // too far: seven letters missing
		{"Topics2", "Topic"},
		{"", ""},
		{"X", ""},
		// Short words: two edits leave too little of them.
		{"A", ""}, {"Pod", ""}, {"Log", ""}, {"Lb", ""}, {"Ops", ""}, {"Map", ""},
		{"Db", ""}, {"Vm", ""}, {"Dog", ""}, {"Zone", ""},
	} {
		if got := strings.Join(suggest(tc.word, kinds), " or "); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
	if got := suggest("Bucket", nil); got != nil {
		t.Errorf("no candidates: %q", got)
	}
	// Equally close candidates are named, two at most, in sorted order whatever the order
	// of the candidates.
	for _, cands := range [][]string{{"Cat", "Bat"}, {"Bat", "Cat"}, {"Rat", "Cat", "Bat"}} {
		if got := strings.Join(suggest("Hat", cands), " or "); got != "Bat or Cat" {
			t.Errorf("suggest(Hat, %v) = %q, want Bat or Cat", cands, got)
		}
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"kitten", "sitting", 3},
		{"flaw", "lawn", 2}, {"same", "same", 0}, {"héllo", "hello", 1},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
