package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/wire"
)

// Output formats of trueup graph besides json and yaml.
const (
	OutText = "text"
	OutDot  = "dot"
)

// Graph prints the API's dependency graph that q selects in format.
func Graph(ctx context.Context, c *apiclient.Client, q url.Values, format string, out io.Writer) error {
	var raw json.RawMessage
	if err := c.Get(ctx, "/api/v1/graph", q, &raw); err != nil {
		return err
	}
	if format == OutJSON || format == OutYAML {
		return printDoc(out, format, raw)
	}
	var g wire.Graph
	if err := json.Unmarshal(raw, &g); err != nil {
		return fmt.Errorf("graph: unexpected answer: %w", err)
	}
	var b bytes.Buffer
	if format == OutDot {
		writeDot(&b, g)
	} else {
		writeTree(&b, g)
	}
	_, err := b.WriteTo(out)
	return err
}

// writeTree prints one tree per root (a node nothing in the graph depends on), dependencies
// indented below their dependent. A node expanded once is not expanded again, and a node on
// its own path (a cycle, which ingest rejects) stops the branch.
func writeTree(w *bytes.Buffer, g wire.Graph) {
	if len(g.Nodes) == 0 {
		w.WriteString("No resources.\n")
		return
	}
	nodes := make(map[string]wire.GraphNode, len(g.Nodes))
	for _, n := range g.Nodes {
		nodes[n.ID] = n
	}
	deps := map[string][]wire.GraphEdge{}
	hasDependents := map[string]bool{}
	for _, e := range g.Edges {
		deps[e.From] = append(deps[e.From], e)
		hasDependents[e.To] = true
	}
	expanded := map[string]bool{}
	onPath := map[string]bool{}
	var walk func(id string, via *wire.GraphEdge, prefix, branch string)
	walk = func(id string, via *wire.GraphEdge, prefix, branch string) {
		n, ok := nodes[id]
		if !ok {
			n = wire.GraphNode{ID: id, Missing: true}
		}
		line := prefix + branch + n.ID
		switch {
		case n.Missing:
			line += "  (missing)"
		default:
			line += "  " + orNone(n.Phase)
			if n.External && n.Source != "" {
				line += "  [source " + n.Source + "]"
			}
		}
		if via != nil {
			var how []string
			if via.Explicit {
				how = append(how, "dependsOn")
			}
			if len(via.Outputs) > 0 {
				how = append(how, "outputs: "+strings.Join(via.Outputs, ", "))
			}
			if len(how) > 0 {
				line += "  (" + strings.Join(how, "; ") + ")"
			}
		}
		children := deps[id]
		switch {
		case onPath[id]:
			line += "  (cycle)"
			children = nil
		case expanded[id] && len(children) > 0:
			line += "  (dependencies shown above)"
			children = nil
		}
		w.WriteString(strings.TrimRight(line, " ") + "\n")
		expanded[id] = true
		onPath[id] = true
		next := prefix
		switch branch {
		case "├── ":
			next += "│   "
		case "└── ":
			next += "    "
		}
		for i, e := range children {
			b := "├── "
			if i == len(children)-1 {
				b = "└── "
			}
			walk(e.To, &e, next, b)
		}
		onPath[id] = false
	}
	for _, n := range g.Nodes {
		if !hasDependents[n.ID] {
			walk(n.ID, nil, "", "")
		}
	}
	// Only a cycle leaves nodes without a root above them.
	for _, n := range g.Nodes {
		if !expanded[n.ID] {
			walk(n.ID, nil, "", "")
		}
	}
}

// dotColors are the outline and fill of a node per phase.
var dotColors = map[string][2]string{
	"Ready":       {"#2da44e", "#dafbe1"},
	"Failed":      {"#cf222e", "#ffebe9"},
	"Reconciling": {"#0969da", "#ddf4ff"},
	"Pending":     {"#6e7781", "#eaeef2"},
	"Deleting":    {"#8250df", "#f3ebff"},
}

// writeDot prints g as Graphviz DOT, dependencies on the left.
func writeDot(w *bytes.Buffer, g wire.Graph) {
	w.WriteString("digraph trueup {\n  rankdir=RL;\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n  edge [color=\"#57606a\"];\n")
	for _, n := range g.Nodes {
		if n.Missing {
			fmt.Fprintf(w, "  %s [label=%s, style=\"rounded,dashed\", color=grey, fontcolor=grey];\n", dotQuote(n.ID), dotQuote(n.ID+"\n(missing)"))
			continue
		}
		c, ok := dotColors[n.Phase]
		if !ok {
			c = [2]string{"black", "white"}
		}
		label := n.ID + "\n" + orNone(n.Phase)
		if n.External && n.Source != "" {
			label += " · source " + n.Source
		}
		fmt.Fprintf(w, "  %s [label=%s, color=%s, fillcolor=%s];\n", dotQuote(n.ID), dotQuote(label), dotQuote(c[0]), dotQuote(c[1]))
	}
	for _, e := range g.Edges {
		var attrs []string
		if !e.Explicit {
			attrs = append(attrs, "style=dashed")
		}
		if len(e.Outputs) > 0 {
			attrs = append(attrs, "label="+dotQuote(strings.Join(e.Outputs, ", ")))
		}
		fmt.Fprintf(w, "  %s -> %s", dotQuote(e.From), dotQuote(e.To))
		if len(attrs) > 0 {
			fmt.Fprintf(w, " [%s]", strings.Join(attrs, ", "))
		}
		w.WriteString(";\n")
	}
	w.WriteString("}\n")
}

// dotQuote makes s a DOT string: names are user input, and a quote or a backslash in one
// must not end the string or start an escape.
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", "", "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
