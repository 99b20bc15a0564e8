package graph

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in      string
		want    []string // Ref.String()
		whole   bool
		wantErr string
	}{
		{"plain", nil, false, ""},
		{"${{ Network/core.outputs.subnetId }}", []string{"${{ Network/prod/core.outputs.subnetId }}"}, true, ""},
		{"  ${{Network/prod/core.outputs.port}} ", []string{"${{ Network/prod/core.outputs.port }}"}, true, ""},
		{"postgres://${{ Network/core.outputs.host }}:5432/${{ Database/db.outputs.name }}",
			[]string{"${{ Network/prod/core.outputs.host }}", "${{ Database/prod/db.outputs.name }}"}, false, ""},
		{"${{ Network/other/core.outputs.a.b.c }}", []string{"${{ Network/other/core.outputs.a.b.c }}"}, true, ""},
		{"literal $${{ not a ref }}", nil, false, ""},
		{"${{ Network/core.outputs.host", nil, false, "not closed"},
		{"${{ Network.outputs.host }}", nil, false, "want Kind/name or Kind/namespace/name"},
		{"${{ Network/core }}", nil, false, "want Kind/name.outputs.key"},
		{"${{ Network/a/b/c.outputs.x }}", nil, false, "want Kind/name or Kind/namespace/name"},
		{"${{ Network/core.outputs. }}", nil, false, "want outputs.key"},
		{"${{ Network/core.outputs.a..b }}", nil, false, "want outputs.key"},
	}
	for _, c := range cases {
		refs, err := Parse(c.in, "prod")
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("Parse(%q) err = %v, want %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		var got []string
		for _, r := range refs {
			got = append(got, r.String())
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Parse(%q) = %v, want %v", c.in, got, c.want)
		}
		if Whole(c.in, refs) != c.whole {
			t.Errorf("Whole(%q) = %v", c.in, !c.whole)
		}
	}
}

func TestResolve(t *testing.T) {
	outputs := map[ID]map[string]any{
		{Kind: "Network", Namespace: "prod", Name: "core"}: {"host": "10.0.0.1", "port": float64(5432), "tags": []any{"a"}, "nested": map[string]any{"id": "n-1"}},
	}
	look := func(id ID) (map[string]any, bool) { o, ok := outputs[id]; return o, ok }
	cases := []struct {
		in      string
		want    any
		missing string
	}{
		{"no refs", "no refs", ""},
		{"${{ Network/core.outputs.port }}", float64(5432), ""},
		{"${{ Network/core.outputs.tags }}", []any{"a"}, ""},
		{"${{ Network/core.outputs.nested.id }}", "n-1", ""},
		{"postgres://${{ Network/core.outputs.host }}:${{ Network/core.outputs.port }}/x", "postgres://10.0.0.1:5432/x", ""},
		{"tags=${{ Network/core.outputs.tags }}", `tags=["a"]`, ""},
		{"$${{ kept }} and ${{ Network/core.outputs.host }}", "${{ kept }} and 10.0.0.1", ""},
		{"${{ Network/core.outputs.nope }}", "${{ Network/core.outputs.nope }}", "no output nope"},
		{"${{ Network/edge.outputs.host }}", "${{ Network/edge.outputs.host }}", "no outputs yet"},
	}
	for _, c := range cases {
		got, missing, err := Resolve(c.in, "prod", look)
		if err != nil {
			t.Errorf("Resolve(%q): %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Resolve(%q) = %#v, want %#v", c.in, got, c.want)
		}
		switch {
		case c.missing == "" && len(missing) > 0:
			t.Errorf("Resolve(%q) missing %+v", c.in, missing)
		case c.missing != "" && (len(missing) != 1 || missing[0].Why != c.missing):
			t.Errorf("Resolve(%q) missing %+v, want %q", c.in, missing, c.missing)
		}
	}
}

func TestCycles(t *testing.T) {
	cases := []struct {
		name  string
		n     int
		edges [][2]int
		want  [][]int
	}{
		{"none", 4, [][2]int{{0, 1}, {1, 2}, {0, 2}, {3, 2}}, [][]int{}},
		{"three", 4, [][2]int{{0, 1}, {1, 2}, {2, 0}, {3, 0}}, [][]int{{0, 1, 2}}},
		{"order follows dependencies", 3, [][2]int{{0, 2}, {2, 1}, {1, 0}}, [][]int{{0, 2, 1}}},
		{"self", 2, [][2]int{{1, 1}}, [][]int{{1}}},
		{"two separate", 6, [][2]int{{0, 1}, {1, 0}, {3, 4}, {4, 5}, {5, 3}, {2, 3}}, [][]int{{0, 1}, {3, 4, 5}}},
		{"shortest through the smallest", 4, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {1, 0}}, [][]int{{0, 1}}},
	}
	for _, c := range cases {
		g := New(c.n)
		for _, e := range c.edges {
			g.Edge(e[0], e[1])
		}
		if got := g.Cycles(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Cycles() = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCyclesLongChain(t *testing.T) {
	const n = 200000
	g := New(n)
	for i := 0; i+1 < n; i++ {
		g.Edge(i, i+1)
	}
	if got := g.Cycles(); len(got) != 0 {
		t.Fatalf("chain: %d cycles", len(got))
	}
	g.Edge(n-1, 0)
	if got := g.Cycles(); len(got) != 1 || len(got[0]) != n {
		t.Fatalf("ring: %d cycles", len(got))
	}
}

func BenchmarkCycles100k(b *testing.B) {
	const n = 100000
	for b.Loop() {
		g := New(n)
		for i := 0; i < n; i++ {
			for _, d := range []int{1, 7, 31} {
				if i+d < n {
					g.Edge(i, i+d)
				}
			}
		}
		if len(g.Cycles()) != 0 {
			b.Fatal("cycle")
		}
	}
}
