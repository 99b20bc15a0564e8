package server

import (
	"errors"
	"html/template"
	"strings"

	"github.com/trueup-dev/trueup/internal/store"
)

// The dashboard's dependency views: a resource's "Depends on" and "Dependents" tables, and the
// source page's graph (graphsvg.go draws it).

// neighbourRow is one row of a resource's dependency tables.
type neighbourRow struct {
	Kind, Namespace, Name string
	Link                  string // "" when missing
	Phase                 string
	Missing               bool
	Ready                 bool
	Explicit              bool
	Outputs               string // the referenced output paths, comma-separated
}

type neighboursView struct {
	DependsOn, Dependents []neighbourRow
	ResolvedSpec          string
}

// makeNeighbours builds the tables of a resource for a caller who sees sc:
// values of the resolved spec from namespaces outside it are masked (resolvedFor).
func makeNeighbours(n store.Neighbours, sc store.Scope) neighboursView {
	var v neighboursView
	for _, d := range n.DependsOn {
		row := neighbourRow{Kind: d.Kind, Namespace: d.Namespace, Name: d.Name, Phase: d.Phase, Missing: !d.Exists, Ready: d.Ready,
			Explicit: d.Explicit, Outputs: strings.Join(d.Outputs, ", ")}
		if d.Exists {
			row.Link = resourcePath(d.Namespace, d.Kind, d.Name)
		}
		v.DependsOn = append(v.DependsOn, row)
	}
	for _, d := range n.Dependents {
		v.Dependents = append(v.Dependents, neighbourRow{Kind: d.Kind, Namespace: d.Namespace, Name: d.Name, Phase: d.Phase,
			Link: resourcePath(d.Namespace, d.Kind, d.Name)})
	}
	if spec := resolvedFor(n, sc); spec != nil {
		v.ResolvedSpec = prettyJSON(spec)
	}
	return v
}

// graphView is the source page's graph section: an SVG, or why there is none.
type graphView struct {
	SVG      template.HTML
	Nodes    int
	Edges    int
	TooLarge bool
}

// makeGraphView draws g; err is the store's answer (ErrGraphTooLarge: too large to draw).
func makeGraphView(g store.Graph, err error) graphView {
	if errors.Is(err, store.ErrGraphTooLarge) {
		return graphView{TooLarge: true}
	}
	v := graphView{Nodes: len(g.Nodes), Edges: len(g.Edges)}
	if len(g.Edges) == 0 {
		return v // nothing depends on anything: no drawing of unconnected boxes
	}
	nodes := make([]svgNode, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		sn := svgNode{ID: n.String(), Kind: n.Kind, Namespace: n.Namespace, Name: n.Name, Phase: n.Phase, Missing: !n.Exists, External: n.External}
		if n.Exists {
			sn.Link = resourcePath(n.Namespace, n.Kind, n.Name)
		}
		nodes = append(nodes, sn)
	}
	edges := make([]svgEdge, 0, len(g.Edges))
	for _, e := range g.Edges {
		edges = append(edges, svgEdge{From: e.From.String(), To: e.To.String(), Explicit: e.Explicit})
	}
	svg, err := graphSVG(nodes, edges)
	if err != nil {
		return graphView{TooLarge: true}
	}
	v.SVG = svg
	return v
}
