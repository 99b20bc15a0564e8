package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// The dependency views of the API (DESIGN §4, Dependencies): a resource's dependsOn,
// dependents and resolved spec on GET /api/v1/resources/{namespace}/{kind}/{name}, and
// GET /api/v1/graph. The list endpoint has each resource's dependsOn as its manifest writes it
// and neither dependents nor state: it stays one statement per page.

// maxGraphNodes bounds GET /api/v1/graph; a larger graph answers 400 and asks for a filter.
const maxGraphNodes = 10000

// resourceAnswer is one resource with its neighbours. Status shadows the embedded
// Resource's, to carry resolvedSpec; DependsOn shadows the list's, to carry each
// dependency's state, and is present when empty.
type resourceAnswer struct {
	wire.Resource
	Status     resourceStatusAnswer `json:"status"`
	DependsOn  []wire.Dependency    `json:"dependsOn"`
	Dependents []dependentAnswer    `json:"dependents"`
}

type resourceStatusAnswer struct {
	wire.ResourceStatus
	// ResolvedSpec is the spec as last called, output references resolved; secrets stay
	// references or markers, and a value from a namespace the caller may not read is "***".
	// Absent until the first call.
	ResolvedSpec json.RawMessage `json:"resolvedSpec,omitempty"`
}

type dependentAnswer struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Phase     string `json:"phase"`
}

// makeResourceAnswer answers for a caller who sees sc: values of the resolved spec from
// namespaces outside it are masked.
func makeResourceAnswer(res store.Resource, n store.Neighbours, sc store.Scope) resourceAnswer {
	rw := resourceWire(res)
	a := resourceAnswer{Resource: rw, Status: resourceStatusAnswer{ResourceStatus: rw.Status, ResolvedSpec: resolvedFor(n, sc)},
		DependsOn: make([]wire.Dependency, 0, len(n.DependsOn)), Dependents: make([]dependentAnswer, 0, len(n.Dependents))}
	for _, d := range n.DependsOn {
		da := wire.Dependency{Kind: d.Kind, Namespace: d.Namespace, Name: d.Name, Explicit: d.Explicit, Outputs: nonNil(d.Outputs)}
		if d.Exists {
			ready := d.Ready
			da.Phase, da.Source, da.Ready = d.Phase, d.Source, &ready
		} else {
			da.Missing = true
		}
		a.DependsOn = append(a.DependsOn, da)
	}
	for _, d := range n.Dependents {
		a.Dependents = append(a.Dependents, dependentAnswer{Kind: d.Kind, Namespace: d.Namespace, Name: d.Name, Phase: d.Phase})
	}
	return a
}

func (s *Server) getResource(w http.ResponseWriter, r *http.Request) {
	ns, kind, name := r.PathValue("namespace"), r.PathValue("kind"), r.PathValue("name")
	sc := scope(r)
	res, n, err := s.store.ResourceDetail(r.Context(), sc, ns, kind, name)
	if s.fail(w, err) {
		return
	}
	q, err := s.store.ApprovalRequest(r.Context(), ns, kind, name, s.votesSince())
	if s.fail(w, err) {
		return
	}
	a := makeResourceAnswer(res, n, sc)
	a.Approval = s.approvalWire(q, planTextVisible(n, sc))
	writeJSON(w, http.StatusOK, a)
}

func makeGraphAnswer(g store.Graph) wire.Graph {
	a := wire.Graph{Nodes: make([]wire.GraphNode, 0, len(g.Nodes)), Edges: make([]wire.GraphEdge, 0, len(g.Edges))}
	for _, n := range g.Nodes {
		a.Nodes = append(a.Nodes, wire.GraphNode{ID: n.String(), Kind: n.Kind, Namespace: n.Namespace, Name: n.Name,
			Phase: n.Phase, Source: n.Source, Ready: n.Ready, Missing: !n.Exists, External: n.External})
	}
	for _, e := range g.Edges {
		a.Edges = append(a.Edges, wire.GraphEdge{From: e.From.String(), To: e.To.String(), Explicit: e.Explicit, Outputs: nonNil(e.Outputs)})
	}
	return a
}

// graphFilter reads GET /api/v1/graph's parameters: source and namespace select a set of
// resources; resource=KIND/NAMESPACE/NAME, with depth, a resource's surroundings instead.
func graphFilter(r *http.Request) (store.GraphFilter, error) {
	q := r.URL.Query()
	f := store.GraphFilter{Source: q.Get("source"), Namespace: q.Get("namespace"), MaxNodes: maxGraphNodes}
	if v := q.Get("resource"); v != "" {
		parts := strings.Split(v, "/")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return f, fmt.Errorf("%w: resource must be KIND/NAMESPACE/NAME", store.ErrBadRequest)
		}
		if f.Source != "" || f.Namespace != "" {
			return f, fmt.Errorf("%w: resource selects a graph of its own: leave out source and namespace", store.ErrBadRequest)
		}
		f.Root = &store.NodeRef{Kind: parts[0], Namespace: parts[1], Name: parts[2]}
	}
	if v := q.Get("depth"); v != "" {
		d, err := strconv.Atoi(v)
		if err != nil || d < 0 || f.Root == nil {
			return f, fmt.Errorf("%w: depth must be a number from 0 (no limit) up, with resource", store.ErrBadRequest)
		}
		f.Depth = d
	}
	return f, nil
}

func (s *Server) graph(w http.ResponseWriter, r *http.Request) {
	f, err := graphFilter(r)
	if s.fail(w, err) {
		return
	}
	sc := scope(r)
	if f.Source != "" {
		ok, err := s.store.SourceVisible(r.Context(), sc, f.Source)
		if s.fail(w, err) {
			return
		}
		if !ok {
			writeError(w, http.StatusNotFound, "source "+f.Source+": "+store.ErrNotFound.Error())
			return
		}
	}
	g, err := s.store.ResourceGraph(r.Context(), sc, f)
	if errors.Is(err, store.ErrGraphTooLarge) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("the graph has more than %d resources: narrow it with source, namespace or resource", maxGraphNodes))
		return
	}
	if s.fail(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, makeGraphAnswer(g))
}
