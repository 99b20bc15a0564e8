package server

import (
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"slices"
	"strings"

	"github.com/trueup-dev/trueup/internal/plural"
)

// The dependency graph of the source page, drawn on the server as SVG: no script library, no
// outside service, and nothing the Content-Security-Policy forbids (colours come from
// classes in dashboard.css, not style attributes). Names are user input: every text and
// attribute is escaped.

// maxSVGNodes caps the drawing: above it the page points to trueup graph -o dot instead.
const maxSVGNodes = 500

var errGraphTooLarge = errors.New("graph too large to draw")

// svgNode is one box; ID is what edges name it by.
type svgNode struct {
	ID                    string
	Kind, Namespace, Name string
	Phase                 string
	Missing, External     bool
	Link                  string // the resource's page; "" for none
}

// svgEdge says that From depends on To.
type svgEdge struct {
	From, To string
	Explicit bool
}

// graphLayout places nodes in columns by longest-path depth (a node without dependencies in
// column 0, each other node one column right of its deepest dependency), ordered top to
// bottom within a column.
type graphLayout struct {
	Depth   []int   // column of each node
	Columns [][]int // node indexes per column, top to bottom
}

// layoutGraph lays out nodes and edges; edges naming unknown nodes are ignored, and a cycle
// (ingest rejects them) is cut where it is found instead of looping.
func layoutGraph(nodes []svgNode, edges []svgEdge) graphLayout {
	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		index[n.ID] = i
	}
	deps := make([][]int, len(nodes)) // dependencies of each node
	dents := make([][]int, len(nodes))
	for _, e := range edges {
		f, okf := index[e.From]
		t, okt := index[e.To]
		if !okf || !okt || f == t {
			continue
		}
		deps[f] = append(deps[f], t)
		dents[t] = append(dents[t], f)
	}

	const unvisited, visiting = -1, -2
	depth := make([]int, len(nodes))
	for i := range depth {
		depth[i] = unvisited
	}
	var visit func(i int) int
	visit = func(i int) int {
		switch depth[i] {
		case visiting:
			return -1 // a cycle: this edge does not count
		case unvisited:
		default:
			return depth[i]
		}
		depth[i] = visiting
		d := 0
		for _, t := range deps[i] {
			d = max(d, visit(t)+1)
		}
		depth[i] = d
		return d
	}
	cols := 0
	for i := range nodes {
		cols = max(cols, visit(i)+1)
	}
	l := graphLayout{Depth: depth, Columns: make([][]int, cols)}
	for i := range nodes {
		l.Columns[depth[i]] = append(l.Columns[depth[i]], i)
	}

	// Two barycenter sweeps each way: a node moves towards the mean row of its neighbours in
	// the columns already placed, which removes most crossings of a layered DAG.
	pos := make([]float64, len(nodes))
	place := func(c int) {
		for r, i := range l.Columns[c] {
			pos[i] = float64(r)
		}
	}
	for c := range l.Columns {
		place(c)
	}
	sweep := func(c int, neighbours [][]int) {
		key := make(map[int]float64, len(l.Columns[c]))
		for _, i := range l.Columns[c] {
			key[i] = pos[i]
			if len(neighbours[i]) > 0 {
				sum := 0.0
				for _, j := range neighbours[i] {
					sum += pos[j]
				}
				key[i] = sum / float64(len(neighbours[i]))
			}
		}
		slices.SortStableFunc(l.Columns[c], func(a, b int) int { return cmp.Compare(key[a], key[b]) })
		place(c)
	}
	for range 2 {
		for c := 1; c < cols; c++ {
			sweep(c, deps)
		}
		for c := cols - 2; c >= 0; c-- {
			sweep(c, dents)
		}
	}
	return l
}

// Geometry of the drawing, in px.
const (
	svgPad     = 16
	svgBoxW    = 220
	svgBoxH    = 44
	svgGapX    = 72
	svgGapY    = 14
	svgMaxText = 30 // runes of a line before it is cut
)

// graphSVG draws nodes and edges, or returns errGraphTooLarge above maxSVGNodes.
func graphSVG(nodes []svgNode, edges []svgEdge) (template.HTML, error) {
	if len(nodes) > maxSVGNodes {
		return "", fmt.Errorf("%w: %d resources, at most %d are drawn", errGraphTooLarge, len(nodes), maxSVGNodes)
	}
	l := layoutGraph(nodes, edges)
	x := make([]int, len(nodes))
	y := make([]int, len(nodes))
	rows := 0
	for c, col := range l.Columns {
		rows = max(rows, len(col))
		for r, i := range col {
			x[i] = svgPad + c*(svgBoxW+svgGapX)
			y[i] = svgPad + r*(svgBoxH+svgGapY)
		}
	}
	width := 2*svgPad + len(l.Columns)*svgBoxW + max(len(l.Columns)-1, 0)*svgGapX
	height := 2*svgPad + rows*svgBoxH + max(rows-1, 0)*svgGapY
	esc := template.HTMLEscapeString

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="graph-svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="Dependency graph: %s, %s; dependencies on the left, arrows point from a dependent to what it depends on">`,
		width, height, width, height, plural.Count(len(nodes), "resource", "resources"), plural.Count(len(edges), "dependency", "dependencies"))
	b.WriteString(`<defs><marker id="garrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path class="garrow" d="M0,0 L10,5 L0,10 z"/></marker></defs>`)

	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		index[n.ID] = i
	}
	b.WriteString(`<g class="gedges">`)
	for _, e := range edges {
		f, okf := index[e.From]
		t, okt := index[e.To]
		if !okf || !okt || f == t {
			continue
		}
		// From the dependent's left side to the dependency's right side.
		x1, y1 := x[f], y[f]+svgBoxH/2
		x2, y2 := x[t]+svgBoxW, y[t]+svgBoxH/2
		dx := max((x1-x2)/2, 24)
		class := "gedge"
		if !e.Explicit {
			class += " gedge-ref"
		}
		fmt.Fprintf(&b, `<path class="%s" d="M%d,%d C%d,%d %d,%d %d,%d" marker-end="url(#garrow)"><title>%s → %s</title></path>`,
			class, x1, y1, x1-dx, y1, x2+dx, y2, x2, y2, esc(e.From), esc(e.To))
	}
	b.WriteString(`</g>`)

	for i, n := range nodes {
		class := "gnode gnode-" + phaseClass(n.Phase)
		state := n.Phase
		if n.Missing {
			class, state = "gnode gnode-missing", "missing"
		}
		if n.External {
			class += " gnode-external"
		}
		if n.Link != "" {
			fmt.Fprintf(&b, `<a href="%s">`, esc(n.Link))
		}
		fmt.Fprintf(&b, `<g class="%s"><title>%s (%s)</title>`, class, esc(n.ID), esc(state))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" rx="6"/>`, x[i], y[i], svgBoxW, svgBoxH)
		fmt.Fprintf(&b, `<text class="gkind" x="%d" y="%d">%s</text>`, x[i]+10, y[i]+17, esc(cut(n.Kind+" · "+state, svgMaxText)))
		fmt.Fprintf(&b, `<text class="gname" x="%d" y="%d">%s</text>`, x[i]+10, y[i]+35, esc(cut(n.Namespace+"/"+n.Name, svgMaxText)))
		b.WriteString(`</g>`)
		if n.Link != "" {
			b.WriteString(`</a>`)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()), nil //nolint:gosec // every value above is escaped
}

// cut shortens s to n runes, marking the cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
