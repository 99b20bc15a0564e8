package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/status"
)

// The read queries over resource dependencies (resource_edges, migration 0013): one
// resource's neighbours for its page, and the graph of a source, a resource's surroundings or
// the whole installation. Every step is one indexed statement: edges of a resource through the
// primary key (resource_id first), its dependents through resource_edges_dep, and the state of
// a named resource through the identity index.
//
// In a narrow scope, a resource out of scope reads exactly like a missing one (DESIGN §9,
// authorization): a dependency on it shows as missing, and it is never listed as a dependent.

// NodeRef names a resource, which may not exist; Kind compares case-insensitively.
type NodeRef struct {
	Kind, Namespace, Name string
}

// Key identifies the resource whatever the spelling of its kind.
func (r NodeRef) Key() string { return r.Namespace + "/" + strings.ToLower(r.Kind) + "/" + r.Name }

// String is Kind/namespace/name, as trueup graph and the API's graph name nodes.
func (r NodeRef) String() string { return r.Kind + "/" + r.Namespace + "/" + r.Name }

// NodeState is what is known of a named resource: whether it exists (in the caller's scope)
// and, when it does, its phase, source and readiness.
type NodeState struct {
	Exists bool
	Phase  string
	Source string
	// Ready: the Ready condition is True at the resource's current generation, the state its
	// dependents wait for.
	Ready bool
}

// Dependency is one thing a resource depends on.
type Dependency struct {
	NodeRef   // the dependency's kind as its manifest spells it when it exists
	NodeState // zero when it does not exist
	// Explicit: listed under dependsOn; Outputs: the output paths the spec references.
	Explicit bool
	Outputs  []string
}

// Dependent is a resource that depends on another.
type Dependent struct {
	NodeRef
	Phase string
}

// Neighbours are what one resource depends on and what depends on it, each in identity order,
// and its spec as last called with output references resolved (nil: not called since).
type Neighbours struct {
	DependsOn    []Dependency
	Dependents   []Dependent
	ResolvedSpec json.RawMessage
	// ResolvedOrigins are the paths of ResolvedSpec whose value came from other namespaces,
	// with those namespaces (store.Resolved.Origins); empty when none, nil when not known (a
	// resolved spec stored before origins were recorded).
	ResolvedOrigins map[string][]string
}

// readyColumn is the Ready condition's status of resources aliased r ("" when absent).
const readyColumn = `COALESCE((SELECT c->>'status' FROM jsonb_array_elements(r.conditions) c WHERE c->>'type' = 'Ready' LIMIT 1), '')`

// readyAt reports whether a resource is Ready at its current generation.
func readyAt(readyStatus string, generation, observed int64) bool {
	return readyStatus == string(status.True) && observed == generation
}

// ResourceNeighbours returns the dependencies and dependents of one resource in scope, or
// ErrNotFound like GetResourceIn.
func (s *Store) ResourceNeighbours(ctx context.Context, sc Scope, namespace, kind, name string) (Neighbours, error) {
	_, n, err := s.resourceDetail(ctx, sc, namespace, kind, name, false)
	return n, err
}

// ResourceDetail returns one resource in scope (as GetResourceIn) with its neighbours (as
// ResourceNeighbours), read in one round trip (a statement apiece, each of its own snapshot
// under READ COMMITTED), or ErrNotFound.
func (s *Store) ResourceDetail(ctx context.Context, sc Scope, namespace, kind, name string) (Resource, Neighbours, error) {
	return s.resourceDetail(ctx, sc, namespace, kind, name, true)
}

// resourceDetail sends its statements as one batch: under CPU contention each round trip to
// the database waits for the scheduler twice, which a single resource's read paid five
// times (the resource, its id, dependencies, dependents, and the approval request apart).
func (s *Store) resourceDetail(ctx context.Context, sc Scope, namespace, kind, name string, withResource bool) (Resource, Neighbours, error) {
	var res Resource
	var n Neighbours
	if !sc.Contains(namespace) {
		return res, n, resourceNotFound(namespace, kind, name)
	}
	args := params{namespace, kind, name}
	scoped := ""
	if w := sc.where("r.namespace", args.add); w != "" {
		scoped = " AND " + w
	}
	const this = "namespace = $1 AND lower(kind) = lower($2) AND name = $3"
	var b pgx.Batch
	var found bool
	if withResource {
		b.Queue("SELECT resolved_spec, resolved_origins, "+resourceColumns+" FROM resources"+withQueue+" WHERE "+this, namespace, kind, name).QueryRow(func(row pgx.Row) error {
			var err error
			res, err = scanResource(row, &n.ResolvedSpec, &n.ResolvedOrigins)
			found = err == nil
			return ignoreNoRows(err)
		})
	} else {
		b.Queue("SELECT resolved_spec, resolved_origins FROM resources WHERE "+this, namespace, kind, name).QueryRow(func(row pgx.Row) error {
			err := row.Scan(&n.ResolvedSpec, &n.ResolvedOrigins)
			found = err == nil
			return ignoreNoRows(err)
		})
	}
	b.Queue(`SELECT e.dep_namespace, COALESCE(r.kind, e.dep_kind), e.dep_name, e.explicit, e.outputs,
		  r.id IS NOT NULL, COALESCE(r.phase, ''), COALESCE(r.source, ''), COALESCE(r.generation, 0), COALESCE(r.observed_generation, 0), `+
		readyColumn+`
		FROM resource_edges e
		LEFT JOIN resources r ON r.namespace = e.dep_namespace AND lower(r.kind) = lower(e.dep_kind) AND r.name = e.dep_name`+scoped+`
		WHERE e.resource_id = (SELECT id FROM resources WHERE `+this+`)
		ORDER BY e.dep_namespace, lower(e.dep_kind), e.dep_name`, args...).Query(func(rows pgx.Rows) error {
		var err error
		n.DependsOn, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Dependency, error) {
			var d Dependency
			var gen, observed int64
			var ready string
			err := row.Scan(&d.Namespace, &d.Kind, &d.Name, &d.Explicit, &d.Outputs, &d.Exists, &d.Phase, &d.Source, &gen, &observed, &ready)
			d.Ready = d.Exists && readyAt(ready, gen, observed)
			return d, err
		})
		if err != nil {
			return fmt.Errorf("dependencies: %w", err)
		}
		return nil
	})
	b.Queue(`SELECT r.kind, r.namespace, r.name, r.phase
		FROM resource_edges e JOIN resources r ON r.id = e.resource_id
		WHERE e.dep_namespace = $1 AND lower(e.dep_kind) = lower($2) AND e.dep_name = $3`+scoped+`
		ORDER BY r.namespace, lower(r.kind), r.name`, args...).Query(func(rows pgx.Rows) error {
		var err error
		n.Dependents, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Dependent, error) {
			var d Dependent
			err := row.Scan(&d.Kind, &d.Namespace, &d.Name, &d.Phase)
			return d, err
		})
		if err != nil {
			return fmt.Errorf("dependents: %w", err)
		}
		return nil
	})
	if err := s.reader().SendBatch(ctx, &b).Close(); err != nil {
		return res, n, fmt.Errorf("resource %s/%s/%s: %w", namespace, kind, name, err)
	}
	if !found {
		return res, Neighbours{}, resourceNotFound(namespace, kind, name)
	}
	return res, n, nil
}

// ignoreNoRows is err, or nil for pgx.ErrNoRows.
func ignoreNoRows(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	return err
}

// GraphFilter selects a graph: the resources of one source, those of one namespace, or every
// resource in scope; or, with Root, the resources Root depends on and those depending on it,
// transitively, up to Depth edges away (0: no limit).
type GraphFilter struct {
	Source    string
	Namespace string
	Root      *NodeRef
	Depth     int
	// MaxNodes bounds the answer (default 10,000): a larger graph is ErrGraphTooLarge.
	MaxNodes int
}

// ErrGraphTooLarge is returned when a graph has more nodes than GraphFilter.MaxNodes; it
// wraps ErrBadRequest (the caller should narrow the filter).
var ErrGraphTooLarge = fmt.Errorf("%w: graph too large", ErrBadRequest)

// GraphNode is one resource of a graph.
type GraphNode struct {
	NodeRef
	NodeState
	// External: the node is drawn only as an end of an edge: it exists outside the source the
	// graph was asked for (in another source, or out of scope), or does not exist.
	External bool
}

// GraphEdge says that From depends on To.
type GraphEdge struct {
	From, To NodeRef
	Explicit bool
	Outputs  []string
}

// Graph is nodes in identity order and edges in order of (From, To).
type Graph struct {
	Nodes []GraphNode
	Edges []GraphEdge
}

// graphBuilder collects nodes and edges by identity.
type graphBuilder struct {
	nodes map[string]*GraphNode
	edges map[[2]string]GraphEdge
	max   int
}

func (b *graphBuilder) node(ref NodeRef) (*GraphNode, bool, error) {
	k := ref.Key()
	if n, ok := b.nodes[k]; ok {
		return n, false, nil
	}
	if len(b.nodes) >= b.max {
		return nil, false, fmt.Errorf("%w: more than %d resources", ErrGraphTooLarge, b.max)
	}
	n := &GraphNode{NodeRef: ref}
	b.nodes[k] = n
	return n, true, nil
}

func (b *graphBuilder) edge(e GraphEdge) { b.edges[[2]string{e.From.Key(), e.To.Key()}] = e }

// ResourceGraph returns the graph f selects, in scope.
func (s *Store) ResourceGraph(ctx context.Context, sc Scope, f GraphFilter) (Graph, error) {
	b := &graphBuilder{nodes: map[string]*GraphNode{}, edges: map[[2]string]GraphEdge{}, max: f.MaxNodes}
	if b.max <= 0 {
		b.max = 10000
	}
	var err error
	if f.Root != nil {
		err = s.walkGraph(ctx, sc, b, *f.Root, f.Depth)
	} else {
		err = s.setGraph(ctx, sc, b, f)
	}
	if err != nil {
		return Graph{}, err
	}
	// Every end of an edge is a node; those not read yet are read now, in one statement.
	var unknown []NodeRef
	asked := map[string]bool{}
	for _, e := range b.edges {
		for _, ref := range []NodeRef{e.From, e.To} {
			n, added, err := b.node(ref)
			if err != nil {
				return Graph{}, err
			}
			if (added || !n.Exists) && !asked[ref.Key()] {
				asked[ref.Key()] = true
				unknown = append(unknown, n.NodeRef)
			}
		}
	}
	states, err := s.nodeStates(ctx, sc, unknown)
	if err != nil {
		return Graph{}, err
	}
	for _, ref := range unknown {
		n := b.nodes[ref.Key()]
		if st, ok := states[ref.Key()]; ok {
			n.Kind, n.NodeState = st.Kind, st.NodeState
		}
		n.External = f.Root == nil && (!n.Exists || f.Source != "" || f.Namespace != "")
	}
	return b.graph(), nil
}

func (b *graphBuilder) graph() Graph {
	g := Graph{Nodes: make([]GraphNode, 0, len(b.nodes)), Edges: make([]GraphEdge, 0, len(b.edges))}
	for _, n := range b.nodes {
		g.Nodes = append(g.Nodes, *n)
	}
	slices.SortFunc(g.Nodes, func(x, y GraphNode) int { return compareRefs(x.NodeRef, y.NodeRef) })
	for k, e := range b.edges {
		// An edge names its ends as the nodes spell their kinds.
		e.From, e.To = b.nodes[k[0]].NodeRef, b.nodes[k[1]].NodeRef
		g.Edges = append(g.Edges, e)
	}
	slices.SortFunc(g.Edges, func(x, y GraphEdge) int {
		return cmp.Or(compareRefs(x.From, y.From), compareRefs(x.To, y.To))
	})
	return g
}

// setGraph reads the resources of a source, a namespace or the whole scope, their edges, and
// the edges into them from outside.
func (s *Store) setGraph(ctx context.Context, sc Scope, b *graphBuilder, f GraphFilter) error {
	// filter returns the WHERE clause selecting the set's resources (aliased r) and its
	// arguments, which come first.
	filter := func() (string, params) {
		var args params
		var where []string
		if w := sc.where("r.namespace", args.add); w != "" {
			where = append(where, w)
		}
		if f.Source != "" {
			where = append(where, "r.source = "+args.add(f.Source))
		}
		if f.Namespace != "" {
			where = append(where, "r.namespace = "+args.add(f.Namespace))
		}
		if len(where) == 0 {
			return "", args
		}
		return " WHERE " + strings.Join(where, " AND "), args
	}
	cond, args := filter()
	rows, err := s.reader().Query(ctx, `SELECT r.kind, r.namespace, r.name, r.phase, r.source, r.generation, r.observed_generation, `+readyColumn+`
		FROM resources r`+cond+` ORDER BY r.namespace, lower(r.kind), r.name LIMIT `+args.add(b.max+1), args...)
	if err != nil {
		return fmt.Errorf("graph resources: %w", err)
	}
	if _, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
		st, err := scanNodeState(row)
		if err != nil {
			return struct{}{}, err
		}
		n, _, err := b.node(st.NodeRef)
		if err != nil {
			return struct{}{}, err
		}
		n.NodeState = st.NodeState
		return struct{}{}, nil
	}); err != nil {
		return fmt.Errorf("graph resources: %w", err)
	}

	// Edges out of the set.
	cond, args = filter()
	rows, err = s.reader().Query(ctx, `SELECT r.kind, r.namespace, r.name, e.dep_kind, e.dep_namespace, e.dep_name, e.explicit, e.outputs
		FROM resources r JOIN resource_edges e ON e.resource_id = r.id`+cond, args...)
	if err != nil {
		return fmt.Errorf("graph edges: %w", err)
	}
	if err := b.collectEdges(rows); err != nil {
		return err
	}
	if f.Source == "" && f.Namespace == "" {
		return nil // every edge in scope is read already
	}
	// Edges into the set from resources outside it (and in scope).
	var outside []string
	if f.Source != "" {
		outside = append(outside, "d.source <> r.source")
	}
	if f.Namespace != "" {
		outside = append(outside, "d.namespace <> r.namespace")
	}
	cond, args = filter()
	dscope := ""
	if w := sc.where("d.namespace", args.add); w != "" {
		dscope = " AND " + w
	}
	rows, err = s.reader().Query(ctx, `SELECT d.kind, d.namespace, d.name, r.kind, r.namespace, r.name, e.explicit, e.outputs
		FROM resources r
		JOIN resource_edges e ON e.dep_namespace = r.namespace AND lower(e.dep_kind) = lower(r.kind) AND e.dep_name = r.name
		JOIN resources d ON d.id = e.resource_id AND (`+strings.Join(outside, " OR ")+`)`+dscope+cond, args...)
	if err != nil {
		return fmt.Errorf("graph edges in: %w", err)
	}
	return b.collectEdges(rows)
}

func (b *graphBuilder) collectEdges(rows pgx.Rows) error {
	_, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
		var e GraphEdge
		err := row.Scan(&e.From.Kind, &e.From.Namespace, &e.From.Name, &e.To.Kind, &e.To.Namespace, &e.To.Name, &e.Explicit, &e.Outputs)
		b.edge(e)
		return struct{}{}, err
	})
	if err != nil {
		return fmt.Errorf("graph edges: %w", err)
	}
	return nil
}

// walkGraph reads root and, one level per statement, what it depends on and what depends on
// it, up to depth levels (0: until nothing is new). Dependencies are followed downwards only
// and dependents upwards only: a sibling sharing a dependency is not root's business.
func (s *Store) walkGraph(ctx context.Context, sc Scope, b *graphBuilder, root NodeRef, depth int) error {
	states, err := s.nodeStates(ctx, sc, []NodeRef{root})
	if err != nil {
		return err
	}
	st, ok := states[root.Key()]
	if !ok {
		return resourceNotFound(root.Namespace, root.Kind, root.Name)
	}
	n, _, err := b.node(st.NodeRef)
	if err != nil {
		return err
	}
	n.NodeState = st.NodeState

	var scoped string
	var scopeArgs params
	scopeArgs = append(scopeArgs, nil, nil, nil) // the frontier's three arrays come first
	if w := sc.where("r.namespace", scopeArgs.add); w != "" {
		scoped = " AND " + w
	}
	for _, dir := range []struct {
		down bool // following dependencies (else dependents)
		sql  string
	}{
		// Dependencies of the frontier (which exist and are in scope).
		{true, `SELECT r.kind, r.namespace, r.name, e.dep_kind, e.dep_namespace, e.dep_name, e.explicit, e.outputs
		FROM unnest($1::text[], $2::text[], $3::text[]) f(ns, kind, name)
		JOIN resources r ON r.namespace = f.ns AND lower(r.kind) = lower(f.kind) AND r.name = f.name` + scoped + `
		JOIN resource_edges e ON e.resource_id = r.id`},
		// Dependents of the frontier.
		{false, `SELECT r.kind, r.namespace, r.name, e.dep_kind, e.dep_namespace, e.dep_name, e.explicit, e.outputs
		FROM unnest($1::text[], $2::text[], $3::text[]) f(ns, kind, name)
		JOIN resource_edges e ON e.dep_namespace = f.ns AND lower(e.dep_kind) = lower(f.kind) AND e.dep_name = f.name
		JOIN resources r ON r.id = e.resource_id` + scoped},
	} {
		seen := map[string]bool{root.Key(): true}
		frontier := []NodeRef{st.NodeRef}
		for level := 0; len(frontier) > 0 && (depth <= 0 || level < depth); level++ {
			args := append(params(nil), scopeArgs...)
			args[0], args[1], args[2] = refColumns(frontier)
			rows, err := s.reader().Query(ctx, dir.sql, args...)
			if err != nil {
				return fmt.Errorf("graph around %s: %w", root, err)
			}
			var found []GraphEdge
			if _, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
				var e GraphEdge
				err := row.Scan(&e.From.Kind, &e.From.Namespace, &e.From.Name, &e.To.Kind, &e.To.Namespace, &e.To.Name, &e.Explicit, &e.Outputs)
				found = append(found, e)
				return struct{}{}, err
			}); err != nil {
				return fmt.Errorf("graph around %s: %w", root, err)
			}
			frontier = frontier[:0:0]
			for _, e := range found {
				b.edge(e)
				next := e.From
				if dir.down {
					next = e.To
				}
				if !seen[next.Key()] {
					seen[next.Key()] = true
					if _, _, err := b.node(next); err != nil {
						return err
					}
					frontier = append(frontier, next)
				}
			}
		}
	}
	return nil
}

// nodeStates reads the state of named resources in scope in one statement, by key; the
// missing ones (and those out of scope) are absent.
func (s *Store) nodeStates(ctx context.Context, sc Scope, refs []NodeRef) (map[string]GraphNode, error) {
	out := make(map[string]GraphNode, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	ns, kinds, names := refColumns(refs)
	args := params{ns, kinds, names}
	scoped := ""
	if w := sc.where("r.namespace", args.add); w != "" {
		scoped = " AND " + w
	}
	rows, err := s.reader().Query(ctx, `SELECT r.kind, r.namespace, r.name, r.phase, r.source, r.generation, r.observed_generation, `+readyColumn+`
		FROM unnest($1::text[], $2::text[], $3::text[]) f(ns, kind, name)
		JOIN resources r ON r.namespace = f.ns AND lower(r.kind) = lower(f.kind) AND r.name = f.name`+scoped, args...)
	if err != nil {
		return nil, fmt.Errorf("graph node states: %w", err)
	}
	nodes, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (GraphNode, error) { return scanNodeState(row) })
	if err != nil {
		return nil, fmt.Errorf("graph node states: %w", err)
	}
	for _, n := range nodes {
		out[n.Key()] = n
	}
	return out, nil
}

func scanNodeState(row pgx.Row) (GraphNode, error) {
	var n GraphNode
	var gen, observed int64
	var ready string
	err := row.Scan(&n.Kind, &n.Namespace, &n.Name, &n.Phase, &n.Source, &gen, &observed, &ready)
	n.Exists = err == nil
	n.Ready = readyAt(ready, gen, observed)
	return n, err
}

// compareRefs orders refs as the identity index does: namespace, kind (case-insensitive), name.
func compareRefs(x, y NodeRef) int {
	return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(strings.ToLower(x.Kind), strings.ToLower(y.Kind)), cmp.Compare(x.Name, y.Name))
}

// refColumns splits refs into the three arrays of an unnest.
func refColumns(refs []NodeRef) (ns, kinds, names []string) {
	ns, kinds, names = make([]string, len(refs)), make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		ns[i], kinds[i], names[i] = r.Namespace, r.Kind, r.Name
	}
	return ns, kinds, names
}
