package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/wire"
)

// Output formats of trueup graph besides json and yaml.
const (
	outText = "text"
	outDot  = "dot"
)

type graphOptions struct {
	output    string
	namespace string
	source    string
	depth     int
}

func newGraphCmd(api *apiOptions) *cobra.Command {
	var o graphOptions
	cmd := &cobra.Command{
		Use:   "graph [KIND/NAME]",
		Short: "Show the dependency graph: as a tree, as Graphviz DOT, or as the API's JSON",
		Long: `Shows which resources depend on which (dependsOn, and output references ${{ Kind/name.outputs.x }}).

Without an argument it shows every resource you may see, or those of one source (--source) or
namespace (-n), with the edges that leave or enter the set. With KIND/NAME it shows what that
resource depends on and what depends on it, transitively (--depth limits how far); its
namespace is "default" unless -n says otherwise.

The text form prints one tree per resource that nothing depends on: each resource with its
phase, what it depends on indented below it, and how (dependsOn, or the outputs it
references). A dependency that does not exist is marked (missing); one shown already is not
expanded again. -o dot prints Graphviz DOT (render it with: dot -Tsvg): edges point from a
dependent to its dependency, dashed when only implied by an output reference; missing
resources are dashed and grey.`,
		Example: `  trueup graph
  trueup graph --source infra -o dot | dot -Tsvg > infra.svg
  trueup graph Database/orders -n prod
  trueup graph App/web -n prod --depth 1 -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(o.output, outText, outDot, outJSON, outYAML); err != nil {
				return err
			}
			q := url.Values{}
			if len(args) == 1 {
				kind, name, err := parseObjectRef(args[0])
				if err != nil {
					return err
				}
				if o.source != "" {
					return fmt.Errorf("--source selects a graph of its own: leave it out with %s", args[0])
				}
				ns := o.namespace
				if ns == "" {
					ns = "default"
				}
				q.Set("resource", kind+"/"+ns+"/"+name)
				if o.depth > 0 {
					q.Set("depth", strconv.Itoa(o.depth))
				}
			} else {
				if cmd.Flags().Changed("depth") {
					return fmt.Errorf("--depth needs a KIND/NAME to start from")
				}
				if o.source != "" {
					q.Set("source", o.source)
				}
				if o.namespace != "" {
					q.Set("namespace", o.namespace)
				}
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			return printGraph(cmd.Context(), c, q, o.output, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", outText, "output format: text, dot, json or yaml")
	f.StringVarP(&o.namespace, "namespace", "n", "", `only this namespace; with KIND/NAME, the resource's namespace (default "default")`)
	f.StringVar(&o.source, "source", "", "only what this source declares (and the ends of its edges)")
	f.IntVar(&o.depth, "depth", 0, "with KIND/NAME: how many edges away to go (0: no limit)")
	return cmd
}

func printGraph(ctx context.Context, c *apiclient.Client, q url.Values, format string, out io.Writer) error {
	var raw json.RawMessage
	if err := c.Get(ctx, "/api/v1/graph", q, &raw); err != nil {
		return err
	}
	if format == outJSON || format == outYAML {
		return printDoc(out, format, raw)
	}
	var g wire.Graph
	if err := json.Unmarshal(raw, &g); err != nil {
		return fmt.Errorf("graph: unexpected answer: %w", err)
	}
	var b bytes.Buffer
	if format == outDot {
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
