package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/wire"
)

// TestGraphTreeGuards checks the tree's guards on graphs the API does not answer with: a
// cycle (ingest rejects them) and an edge to a node the answer does not list.
func TestGraphTreeGuards(t *testing.T) {
	t.Parallel()
	g := wire.Graph{
		Nodes: []wire.GraphNode{{ID: "Q/a/x", Phase: "Ready"}, {ID: "Q/a/y", Phase: "Ready"}, {ID: "Q/a/z", Phase: "Ready"}},
		Edges: []wire.GraphEdge{{From: "Q/a/x", To: "Q/a/y"}, {From: "Q/a/y", To: "Q/a/x"}, {From: "Q/a/z", To: "Q/a/ghost", Explicit: true}},
	}
	var b bytes.Buffer
	writeTree(&b, g)
	want := `Q/a/z  Ready
└── Q/a/ghost  (missing)  (dependsOn)
Q/a/x  Ready
└── Q/a/y  Ready
    └── Q/a/x  Ready  (cycle)
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}

	b.Reset()
	writeDot(&b, wire.Graph{Nodes: []wire.GraphNode{{ID: `Q/a/"evil" \ name`, Phase: "Ready"}}})
	if !strings.Contains(b.String(), `"Q/a/\"evil\" \\ name" [label="Q/a/\"evil\" \\ name\nReady"`) {
		t.Errorf("dot quoting:\n%s", b.String())
	}
}
