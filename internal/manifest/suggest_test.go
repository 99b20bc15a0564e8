package manifest

import "testing"

func TestSuggest(t *testing.T) {
	t.Parallel()
	kinds := []string{"DatabaseCluster", "Bucket", "Network", "App", "Queue"}
	for _, tc := range []struct{ word, want string }{
		{"DatabaseCluster", "DatabaseCluster"},
		{"databasecluster", "DatabaseCluster"}, // case only
		{"DATABASECLUSTER", "DatabaseCluster"},
		{"DatabseCluster", "DatabaseCluster"}, // a letter missing
		{"DatabaseClusters", "DatabaseCluster"},
		{"DatabaseClsuter", "DatabaseCluster"}, // two letters swapped: two edits
		{"Buckt", "Bucket"},
		{"bukets", "Bucket"},
		{"Ap", "App"},
		{"Qeue", "Queue"},
		{"Database", ""}, // too far: seven letters missing
		{"Topic", ""},
		{"", ""},
		{"X", ""},
	} {
		if got := suggest(tc.word, kinds); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
	if got := suggest("Bucket", nil); got != "" {
		t.Errorf("no candidates: %q", got)
	}
	// Ties go to the first in sorted order, whatever the order of the candidates.
	for _, cands := range [][]string{{"Cat", "Bat"}, {"Bat", "Cat"}} {
		if got := suggest("Hat", cands); got != "Bat" {
			t.Errorf("suggest(Hat, %v) = %q, want Bat", cands, got)
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
