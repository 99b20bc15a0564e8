package manifest

import (
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/trueup-dev/trueup/internal/graph"
)

// GraphNode is a resource in the dependency graph, for CycleErrors.
type GraphNode struct {
	ID     graph.ID
	File   string
	Line   int
	Source string     // the source declaring it; shown when a cycle spans sources
	Deps   []graph.ID // what it depends on (Dependency.Target)
}

// DependencyCycles returns the cycles among nodes (edges to IDs not among nodes are
// ignored; a node depending on itself is a cycle of one), each as indices into nodes in
// dependency order: each member depends on the next and the last on the first. Each
// cycle starts at its member with the smallest ID (kind, namespace, name), so that it
// reads the same whatever the order of nodes; cycles are in no particular order. IDs
// compare with kinds case-insensitive; of nodes with the same ID the first counts.
// Linear in nodes and edges.
func DependencyCycles(nodes []GraphNode) [][]int {
	// Kinds are few: each is lower-cased once rather than once per node and edge.
	lower := map[string]string{}
	key := func(id graph.ID) graph.ID {
		k, ok := lower[id.Kind]
		if !ok {
			k = strings.ToLower(id.Kind)
			lower[id.Kind] = k
		}
		id.Kind = k
		return id
	}
	index := make(map[graph.ID]int32, len(nodes))
	edges := 0
	for i := range nodes {
		k := key(nodes[i].ID)
		if _, dup := index[k]; !dup {
			index[k] = int32(i)
		}
		edges += len(nodes[i].Deps)
	}
	if edges == 0 {
		return nil
	}
	g := graph.New(len(nodes))
	for i := range nodes {
		for _, d := range nodes[i].Deps {
			if j, ok := index[key(d)]; ok {
				g.Edge(i, int(j))
			}
		}
	}
	cycles := g.Cycles()
	for _, c := range cycles {
		first := 0
		for i := range c {
			if compareIDs(nodes[c[i]].ID, nodes[c[first]].ID) < 0 {
				first = i
			}
		}
		slices.Reverse(c[:first])
		slices.Reverse(c[first:])
		slices.Reverse(c)
	}
	return cycles
}

// CycleErrors returns one ValidationError per member of every cycle among nodes (edges to
// IDs not among nodes are ignored), nil when none. Each is at its member's file and line,
// with path dependsOn, and lists the cycle in dependency order, where "A → B" reads "A
// depends on B":
//
//	dependency cycle: Network/prod/core (net.yaml:1) → Database/prod/orders (db.yaml:3) → App/prod/web (app.yaml:5) → Network/prod/core
//
// When the cycle spans sources, the members of a source other than the error's own
// member's are shown as (source/file:line). A cycle of more than 20 members lists its
// first and last ten.
func CycleErrors(nodes []GraphNode) Errors { return cycleErrors(nodes, nil) }

// CycleErrorsOf is CycleErrors keeping only the errors of members declared by source (the
// one being applied): each message still lists the whole cycle.
func CycleErrorsOf(nodes []GraphNode, source string) Errors {
	return cycleErrors(nodes, func(n *GraphNode) bool { return n.Source == source })
}

func cycleErrors(nodes []GraphNode, keep func(*GraphNode) bool) Errors {
	var errs Errors
	for _, c := range DependencyCycles(nodes) {
		spans := false
		for _, i := range c {
			spans = spans || nodes[i].Source != nodes[c[0]].Source
		}
		for _, m := range c {
			if keep != nil && !keep(&nodes[m]) {
				continue
			}
			errs = append(errs, ValidationError{File: nodes[m].File, Line: nodes[m].Line, Path: "dependsOn",
				Msg: cycleMessage(nodes, c, m, spans)})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return sortErrors(errs)
}

// maxCycleListed is how many members a cycle's message lists at most: every member gets
// the message, so listing all of a long cycle would cost its length squared.
const maxCycleListed = 20

// cycleMessage spells cycle c for the error of its member m.
func cycleMessage(nodes []GraphNode, c []int, m int, spans bool) string {
	var b strings.Builder
	b.WriteString("dependency cycle: ")
	for k, i := range c {
		if len(c) > maxCycleListed && k >= maxCycleListed/2 && k < len(c)-maxCycleListed/2 {
			if k == maxCycleListed/2 {
				fmt.Fprintf(&b, "… %d more → ", len(c)-maxCycleListed)
			}
			continue
		}
		n := &nodes[i]
		b.WriteString(n.ID.String())
		b.WriteString(" (")
		if spans && n.Source != nodes[m].Source {
			b.WriteString(n.Source)
			b.WriteByte('/')
		}
		b.WriteString(n.File)
		if n.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(n.Line))
		}
		b.WriteString(") → ")
	}
	b.WriteString(nodes[c[0]].ID.String())
	return b.String()
}

// graphNodesOf is graphNodes of the n resources of each, in its order; each is walked
// twice: once to count the edges, once to build the nodes.
func graphNodesOf(n int, each iter.Seq[*Resource]) []GraphNode {
	edges := 0
	for r := range each {
		edges += len(r.DependsOn)
	}
	if edges == 0 {
		return nil
	}
	nodes := make([]GraphNode, 0, n)
	targets := make([]graph.ID, 0, edges) // one block for every node's Deps
	for r := range each {
		start := len(targets)
		for _, d := range r.DependsOn {
			targets = append(targets, d.Target)
		}
		nodes = append(nodes, GraphNode{
			ID:   graph.ID{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name},
			File: r.File, Line: r.Line,
			Deps: targets[start:len(targets):len(targets)],
		})
	}
	return nodes
}
