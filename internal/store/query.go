package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/status"
)

// Resource is a resource's row with its status (package wire spells it for the API).
type Resource struct {
	APIVersion string
	Kind       string
	Metadata   Metadata
	Spec       json.RawMessage
	Status     ResourceStatus
	Source     ResourceSource
	// DependsOn is the resource's edges (resource_edges) in identity order, each dependency
	// named as the resource's manifest writes it; nil when none. ListResources and
	// GetResource fill it.
	DependsOn []ResourceEdge
}

// ResourceEdge is one thing a resource depends on, as its manifest writes it: the kind as
// spelled there (what the apply's MetaHash counts), whether dependsOn lists it, and the output
// paths its spec references. ResourceNeighbours reads the dependency's state as well.
type ResourceEdge struct {
	NodeRef
	Explicit bool
	Outputs  []string
}

// Metadata is a resource's identity and bookkeeping.
type Metadata struct {
	Name              string
	Namespace         string
	UID               string
	Generation        int64
	Labels            map[string]string
	Annotations       map[string]string
	CreationTimestamp time.Time
	DeletionTimestamp *time.Time
}

// ResourceStatus is what the reconciler wrote.
type ResourceStatus struct {
	Phase              string
	ObservedGeneration int64
	Conditions         []status.Condition
	Message            string
	Outputs            json.RawMessage
	LastReconcileTime  *time.Time
	// NextReconcileTime is when the controller takes the resource up next: a retry after its
	// backoff, a resync, or now when work is due. Absent when nothing is scheduled: while a
	// replica works on the resource, and while it is suspended or blocked
	// (status.NextReconcile decides).
	NextReconcileTime *time.Time
	// Orphaned: the manifest is gone from Git but pruning kept the resource.
	Orphaned bool
}

// ResourceSource says where the desired state came from.
type ResourceSource struct {
	Name     string
	Path     string
	Line     int
	Revision string
	// ResourceSet is the set that generated the resource (its manifest.LabelResourceSet
	// label); "" for a written resource.
	ResourceSet string
}

const resourceColumns = `api_version, kind, name, namespace, uid::text, generation, labels, annotations, created_at,
	deletion_timestamp, spec, phase, observed_generation, conditions, message, outputs, last_reconcile_time,
	source, file_path, file_line, revision,
	run_at, lease_owner IS NOT NULL, suspended, blocked, orphaned`

// withQueue follows FROM resources in a query of resourceColumns: the columns of the row's
// queue entry (resource_queue) beside its own, id one column of both.
const withQueue = " JOIN resource_queue USING (id)"

// scanResource reads resourceColumns, after the columns extra receives when the query
// selects some before them. It leaves DependsOn to the caller (ListResources attaches it).
func scanResource(row pgx.Row, extra ...any) (Resource, error) {
	var r Resource
	err := newResourceRow(false, extra...).scan(row, &r)
	return r, err
}

// resourceRow holds the scan targets of rows of resourceColumns: a list reads each of its
// rows through one, where targets made afresh for each row (the slice of them, the locals
// they point at, copies of the jsonb that is decoded at once) cost a page of resources
// several hundred bytes of garbage a row.
type resourceRow struct {
	r Resource
	// Labels, annotations and conditions: as the driver holds them (read before the next
	// row) when rows are read from pgx.Rows, else copies (QueryRow refuses DriverBytes).
	raw                        [3][]byte
	runAt                      *time.Time
	leased, suspended, blocked bool
	dest                       []any
}

// newResourceRow is a resourceRow whose scans fill extra first; rows says whether it scans
// pgx.Rows (one row after another) rather than a QueryRow's single row.
func newResourceRow(rows bool, extra ...any) *resourceRow {
	s := &resourceRow{}
	r := &s.r
	raw := [3]any{&s.raw[0], &s.raw[1], &s.raw[2]}
	if rows {
		raw = [3]any{(*pgtype.DriverBytes)(&s.raw[0]), (*pgtype.DriverBytes)(&s.raw[1]), (*pgtype.DriverBytes)(&s.raw[2])}
	}
	s.dest = append(extra, &r.APIVersion, &r.Kind, &r.Metadata.Name, &r.Metadata.Namespace, &r.Metadata.UID, &r.Metadata.Generation,
		raw[0], raw[1], &r.Metadata.CreationTimestamp, &r.Metadata.DeletionTimestamp, (*[]byte)(&r.Spec), &r.Status.Phase,
		&r.Status.ObservedGeneration, raw[2], &r.Status.Message, (*[]byte)(&r.Status.Outputs), &r.Status.LastReconcileTime,
		&r.Source.Name, &r.Source.Path, &r.Source.Line, &r.Source.Revision, &s.runAt, &s.leased, &s.suspended, &s.blocked, &r.Status.Orphaned)
	return s
}

// scan reads row into *out (and the extra targets). Spec and outputs are scanned as the
// []byte they are: pgx reads a *json.RawMessage through json.Unmarshal, which checks the
// text that PostgreSQL's jsonb wrote and copies it.
func (s *resourceRow) scan(row pgx.Row, out *Resource) error {
	s.r = Resource{}
	if err := row.Scan(s.dest...); err != nil {
		return err
	}
	labels, ann, conds := s.raw[0], s.raw[1], s.raw[2]
	r := &s.r
	r.Status.NextReconcileTime = status.NextReconcile(s.runAt, s.leased, s.suspended, s.blocked)
	if err := decodeStrings(labels, &r.Metadata.Labels); err != nil {
		return err
	}
	r.Source.ResourceSet = r.Metadata.Labels[manifest.LabelResourceSet]
	if err := decodeStrings(ann, &r.Metadata.Annotations); err != nil {
		return err
	}
	if err := decodeConditions(conds, &r.Status.Conditions); err != nil {
		return err
	}
	*out = *r
	return nil
}

// attachEdges fills the DependsOn of items (whose ids are ids; 0: one known to have none)
// with their edges, read in one query in identity order.
func (s *Store) attachEdges(ctx context.Context, items []Resource, ids []int64) error {
	if !slices.ContainsFunc(ids, func(id int64) bool { return id != 0 }) {
		return nil
	}
	rows, err := s.reader().Query(ctx, `SELECT resource_id, dep_kind, dep_namespace, dep_name, explicit, outputs
		FROM resource_edges WHERE resource_id = ANY($1)
		ORDER BY resource_id, dep_namespace, lower(dep_kind), dep_name`, ids)
	if err != nil {
		return err
	}
	byID := make(map[int64][]ResourceEdge)
	var id int64
	var e ResourceEdge
	if _, err := pgx.ForEachRow(rows, []any{&id, &e.Kind, &e.Namespace, &e.Name, &e.Explicit, &e.Outputs}, func() error {
		if e.Outputs == nil {
			e.Outputs = []string{}
		}
		byID[id] = append(byID[id], e)
		e = ResourceEdge{}
		return nil
	}); err != nil {
		return fmt.Errorf("dependsOn: %w", err)
	}
	for i := range items {
		items[i].DependsOn = byID[ids[i]]
	}
	return nil
}

// GetResource returns one resource with its DependsOn; kind is case-insensitive.
func (s *Store) GetResource(ctx context.Context, namespace, kind, name string) (Resource, error) {
	return s.getResource(ctx, Everything, namespace, kind, name, true)
}

// GetResourceIn returns one resource, without its DependsOn, if the scope sees its namespace.
// Out of scope, it returns the very error of a missing resource, without asking the database:
// the caller cannot tell the two apart.
func (s *Store) GetResourceIn(ctx context.Context, sc Scope, namespace, kind, name string) (Resource, error) {
	return s.getResource(ctx, sc, namespace, kind, name, false)
}

func (s *Store) getResource(ctx context.Context, sc Scope, namespace, kind, name string, edges bool) (Resource, error) {
	if !sc.Contains(namespace) {
		return Resource{}, resourceNotFound(namespace, kind, name)
	}
	var id int64
	r, err := scanResource(s.reader().QueryRow(ctx, "SELECT id, "+resourceColumns+
		" FROM resources"+withQueue+" WHERE namespace = $1 AND lower(kind) = lower($2) AND name = $3", namespace, kind, name), &id)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, resourceNotFound(namespace, kind, name)
	}
	if err != nil || !edges {
		return r, err
	}
	items := []Resource{r}
	err = s.attachEdges(ctx, items, []int64{id})
	return items[0], err
}

func resourceNotFound(namespace, kind, name string) error {
	return fmt.Errorf("resource %s/%s/%s: %w", namespace, kind, name, ErrNotFound)
}

// ResourceFilter selects resources; empty fields match everything.
type ResourceFilter struct {
	Kind, Namespace, Source, Phase string
	// Approval selects the resources whose approval request is in this state
	// (ApprovalPending, ApprovalRejected or ApprovalDenied).
	Approval      string
	LabelSelector string
	Limit         int    // default 100, at most 1000
	Continue      string // token from the previous page
}

// ErrBadRequest wraps errors in caller-supplied filters.
var ErrBadRequest = errors.New("bad request")

// ListResources returns one page of the resources in scope ordered by namespace, kind, name,
// and the token of the next page ("" on the last one). Paging is by key, so it stays fast deep
// into large sets.
func (s *Store) ListResources(ctx context.Context, sc Scope, f ResourceFilter) ([]Resource, string, error) {
	q, err := resourcePage(sc, f, "")
	if err != nil {
		return nil, "", err
	}
	// Sized for the page and the row that says whether there is a next one, up to a size
	// that a selective filter on a large page need not pay for; it grows past that.
	n := min(q.limit+1, 128)
	var items []Resource
	var ids []int64
	var deps []bool
	var id int64
	var hasDeps bool
	row := newResourceRow(true, &id, &hasDeps)
	err = s.readPage(ctx, q, "id, has_deps, "+resourceColumns, withQueue, func(rows pgx.Rows) (int, error) {
		items, ids, deps = make([]Resource, 0, n), make([]int64, 0, n), make([]bool, 0, n)
		for rows.Next() {
			items = append(items, Resource{})
			if err := row.scan(rows, &items[len(items)-1]); err != nil {
				rows.Close()
				return 0, err
			}
			ids, deps = append(ids, id), append(deps, hasDeps)
		}
		return len(items), rows.Err()
	})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(items) > q.limit {
		items, ids, deps = items[:q.limit], ids[:q.limit], deps[:q.limit]
		last := items[len(items)-1]
		next = nextToken(last.Metadata.Namespace, last.Kind, last.Metadata.Name)
	}
	if err := s.attachEdges(ctx, items, withDeps(ids, deps)); err != nil {
		return nil, "", err
	}
	return items, next, nil
}

// withDeps is ids with those of resources without edges (has_deps false, as the apply writes
// it beside the edges) set to 0, which no resource has: a page where none has edges reads
// none, a round trip fewer.
func withDeps(ids []int64, deps []bool) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		if deps[i] {
			out[i] = id
		}
	}
	return out
}

// pageQuery is one page of resources (the API's list and the dashboard's table): the scope,
// filters, an optional name search, and keyset paging in the identity index's order so the
// scan stops after the page. It asks for limit+1 rows: one more than the page says whether
// there is a next one.
type pageQuery struct {
	where []string // the conditions on resources, the phase's aside
	// kindFixed and nsFixed: where holds the kind, the namespace to one value (see
	// statement).
	kindFixed, nsFixed bool
	args               params
	phase              string // the phase filter ("": none)
	source             string // the source filter ("": none)
	limit              int
}

// The steps of a page filtered by phase (readPage). The phase's rows are in resource_phases
// (migration 0036), whose statistics lag behind the phases while a drain moves thousands a
// second: a plan picked from them read and sorted every Ready row when a third of 200,000
// were Ready and the statistics said none (310 ms against 1.7 ms), and would walk every row
// for a phase they say most rows are in and none is. The steps do not depend on them.
type phaseStep int

const (
	// phaseWalk checks the first phaseWalkRows rows per row of the page in the list's order
	// (the other filters applied), one by one: enough for a phase that a tenth of those rows
	// are in, and the whole list when it holds no more rows than that.
	phaseWalk phaseStep = iota
	// phaseByID reads the phase's ids first (at most phaseIDCap) and the page among them.
	phaseByID
	// phasePlanned leaves the plan to the planner and its statistics, as for any other
	// filter: a phase holding more than phaseIDCap rows, few of them early in the order (the
	// rows' order through it walked, or the phase's rows read and sorted).
	phasePlanned
	// phaseDone: the page is read.
	phaseDone
)

// phaseWalkRows is how many rows phaseWalk checks for each row of the page, and phaseIDCap
// the most ids phaseByID reads. A row checked along the order costs about 4 µs, a row read by
// id and sorted about 17 µs (200,000 resources, in memory): the page by id costs at most about
// 70 ms. A phase with more rows than the cap and fewer than a tenth of the first rows is left
// to the planner.
const (
	phaseWalkRows = 10
	phaseIDCap    = 4000
)

// phaseIDsSQL reads the ids of the phase of q, at most limit. Ready's are its partial index's
// (resource_phases_ready); another phase's are read source by source, through the leading
// column of resource_phases_unsettled (source, phase), or of the source q filters on.
func phaseIDsSQL(q pageQuery, limit int) (string, []any) {
	var args params
	n := args.add(limit)
	var sql string
	switch {
	case q.phase == "Ready":
		sql = "SELECT p.id FROM resource_phases p WHERE p.phase = 'Ready' LIMIT " + n
	case q.source != "":
		sql = "SELECT p.id FROM resource_phases p WHERE p.source = " + args.add(q.source) + " AND " + q.phaseCond(args.add(q.phase)) + " LIMIT " + n
	default:
		sql = "SELECT x.id FROM (SELECT DISTINCT source FROM resource_counts) s, LATERAL (SELECT p.id FROM resource_phases p WHERE p.source = s.source AND " +
			q.phaseCond(args.add(q.phase)) + " LIMIT " + n + ") x LIMIT " + n
	}
	return sql, args.planned()
}

// idCap is phaseIDCap, or the store's own (tests).
func (s *Store) idCap() int {
	if s.pageIDCap > 0 {
		return s.pageIDCap
	}
	return phaseIDCap
}

// resourcePage builds the page f and nameQuery ask for in scope sc.
func resourcePage(sc Scope, f ResourceFilter, nameQuery string) (q pageQuery, err error) {
	q.limit = f.Limit
	if q.limit <= 0 {
		q.limit = 100
	}
	if q.limit > 1000 {
		q.limit = 1000
	}
	if w := sc.where("namespace", q.args.add); w != "" {
		q.where = append(q.where, w)
	}
	if f.Kind != "" {
		q.where = append(q.where, "lower(kind) = lower("+q.args.add(f.Kind)+")")
		q.kindFixed = true
	}
	if f.Namespace != "" {
		q.where = append(q.where, "namespace = "+q.args.add(f.Namespace))
		q.nsFixed = true
	}
	if f.Source != "" {
		q.where = append(q.where, "source = "+q.args.add(f.Source))
	}
	q.phase, q.source = f.Phase, f.Source
	switch f.Approval {
	case "":
	case ApprovalPending, ApprovalRejected, ApprovalDenied:
		q.where = append(q.where, "EXISTS (SELECT 1 FROM approval_requests a WHERE a.resource_id = resources.id AND a.state = "+q.args.add(f.Approval)+")")
	default:
		return pageQuery{}, fmt.Errorf("%w: approval must be pending, rejected or denied", ErrBadRequest)
	}
	if nameQuery != "" {
		// Served by the trigram index of lower(name) where pg_trgm exists (migrations 0005,
		// 0032).
		q.where = append(q.where, "lower(name) LIKE lower("+q.args.add("%"+escapeLike(nameQuery)+"%")+")")
	}
	if f.LabelSelector != "" {
		reqs, err := ParseLabelSelector(f.LabelSelector)
		if err != nil {
			return pageQuery{}, fmt.Errorf("%w: labelSelector: %v", ErrBadRequest, err)
		}
		for _, rq := range reqs {
			q.where = append(q.where, requirementSQL(rq, q.args.add))
		}
	}
	if f.Continue != "" {
		key, err := decodeContinue(f.Continue)
		if err != nil {
			return pageQuery{}, err
		}
		q.where = append(q.where, fmt.Sprintf("(namespace, lower(kind), name) > (%s, %s, %s)", q.args.add(key[0]), q.args.add(key[1]), q.args.add(key[2])))
	}
	return q, nil
}

// phaseCond is the phase filter's condition on resource_phases p, its value at placeholder
// arg. The literal for a phase other than Ready proves the partial index
// resource_phases_unsettled.
func (q pageQuery) phaseCond(arg string) string {
	cond := "p.phase = " + arg
	if q.phase != "Ready" {
		cond += " AND p.phase <> 'Ready'"
	}
	return cond
}

const pageOrder = " ORDER BY namespace, lower(kind), name"

// whereClause is the WHERE of the conditions on resources, the phase's aside ("" for none).
func (q pageQuery) whereClause() string {
	if len(q.where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(q.where, " AND ")
}

// walkOrder is the order of phaseWalk's rows outside its subquery: the page's, without the
// columns the filters hold to one value, which the planner leaves out of the subquery's order;
// named there, they made it sort every row the walk reads (20 ms instead of 0.8 at a million,
// kind=Widget&phase=Ready). The rows share their values, so the order is the page's.
func (q pageQuery) walkOrder() string {
	keys := []string{"namespace", "kind_key", "name"}
	if q.kindFixed {
		keys = slices.DeleteFunc(keys, func(k string) bool { return k == "kind_key" })
	}
	if q.nsFixed {
		keys = slices.DeleteFunc(keys, func(k string) bool { return k == "namespace" })
	}
	return " ORDER BY " + strings.Join(keys, ", ")
}

// walkRows is how many rows phaseWalk checks.
func (q pageQuery) walkRows() int { return (q.limit + 1) * phaseWalkRows }

// statement is the page's statement and its arguments: cols of resources joined with join
// (withQueue or ""), for step when a phase filters it (ids: phaseByID's). The walk and the page
// by id check the phase row by row (OFFSET 0 keeps the EXISTS a subplan, which the planner
// cannot turn into a join driven by resource_phases).
func (q pageQuery) statement(cols, join string, step phaseStep, ids []int64) (string, []any) {
	args := slices.Clone(q.args)
	where := slices.Clone(q.where)
	from, order := " FROM resources", pageOrder
	if q.phase != "" {
		probe := " OFFSET 0"
		if step == phasePlanned {
			probe = ""
		}
		where = append(where, "EXISTS (SELECT 1 FROM resource_phases p WHERE p.id = resources.id AND "+q.phaseCond(args.add(q.phase))+probe+")")
		switch step {
		case phaseWalk:
			// The walk's rows come out in its order (kind_key, a column of the subquery, keeps
			// it known to the planner): the scan stops once the page is full.
			from = " FROM (SELECT *, lower(kind) AS kind_key FROM resources" + q.whereClause() + pageOrder + " LIMIT " + args.add(q.walkRows()) + ") resources"
			where = where[len(q.where):]
			order = q.walkOrder()
		case phaseByID:
			where = append(where, "resources.id = ANY("+args.add(ids)+"::bigint[])")
		}
	}
	clause := ""
	if len(where) > 0 {
		clause = " WHERE " + strings.Join(where, " AND ")
	}
	return "SELECT " + cols + from + join + clause + order + " LIMIT " + args.add(q.limit+1), args.planned()
}

// readPage runs the page q (see statement) with read, which scans the rows and returns how
// many it read. A page filtered by phase takes the steps of phaseStep in turn until one fills
// it: the walk of the first rows, complete when the list holds no more; then, when the phase
// holds at most phaseIDCap rows, the page among them, which is complete; else the planner's
// plan.
func (s *Store) readPage(ctx context.Context, q pageQuery, cols, join string, read func(pgx.Rows) (int, error)) error {
	db := s.reader()
	run := func(step phaseStep, ids []int64) (bool, error) {
		if s.pageStep != nil {
			s.pageStep(step)
		}
		sql, args := q.statement(cols, join, step, ids)
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return false, err
		}
		defer rows.Close()
		n, err := read(rows)
		return n > q.limit, err
	}
	if q.phase == "" {
		_, err := run(phaseWalk, nil)
		return err
	}
	full, err := run(phaseWalk, nil)
	if err != nil {
		return err
	}
	var ids []int64
	step, err := phaseStepAfterWalk(full, func() (bool, error) {
		rows, err := db.Query(ctx, "SELECT 1 FROM resources"+q.whereClause()+pageOrder+" OFFSET "+strconv.Itoa(q.walkRows())+" LIMIT 1", q.args.planned()...)
		if err != nil {
			return false, err
		}
		more := rows.Next()
		rows.Close()
		return more, rows.Err()
	}, func() (int, error) {
		sql, args := phaseIDsSQL(q, s.idCap()+1)
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return 0, err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return len(ids), err
	}, s.idCap())
	if step == phaseDone || err != nil {
		return err
	}
	if step != phaseByID {
		ids = nil
	}
	_, err = run(step, ids)
	return err
}

// phaseStepAfterWalk is the step a page filtered by phase takes after its walk (full: the
// walk filled the page), asking only what it needs: whether the other filters leave a row
// past the walk's window (pastWalk), then how many ids the phase holds, counted up to
// idCap+1 (ids). phaseDone when the walk's rows are the page: it filled it, or it checked
// every row the other filters leave.
func phaseStepAfterWalk(full bool, pastWalk func() (bool, error), ids func() (int, error), idCap int) (phaseStep, error) {
	if full {
		return phaseDone, nil
	}
	if more, err := pastWalk(); !more || err != nil {
		return phaseDone, err
	}
	n, err := ids()
	switch {
	case err != nil:
		return phaseDone, err
	case n <= idCap:
		return phaseByID, nil
	default:
		return phasePlanned, nil
	}
}

// params are the arguments of a statement built from optional parts.
type params []any

// planned is the arguments of a list whose best plan depends on its values (a label few
// resources carry is read through the labels index, one half of them carry by the identity
// index, stopping after the page): the statement runs unnamed (pgx.QueryExecModeExec), which
// PostgreSQL plans for each execution's values, where a prepared statement from pgx's cache
// may switch to one generic plan after five executions. It works the same through a pooler
// in transaction mode, and changes nothing for the engine's statements.
func (p params) planned() []any {
	return append([]any{pgx.QueryExecModeExec}, p...)
}

// add appends v and returns its placeholder ($1, $2, …).
func (p *params) add(v any) string {
	*p = append(*p, v)
	return fmt.Sprintf("$%d", len(*p))
}

// nextToken is the continue token after the resource (namespace, kind, name).
func nextToken(namespace, kind, name string) string {
	b, _ := json.Marshal([3]string{namespace, strings.ToLower(kind), name})
	return base64.RawURLEncoding.EncodeToString(b)
}

// ResourceType is a type's row.
type ResourceType struct {
	Name     string
	Group    string
	Source   string
	Path     string
	Revision string
	Spec     json.RawMessage
	// Drift is the type's drift policy (nil: remediate, nothing ignored).
	Drift     *manifest.DriftPolicy
	CreatedAt time.Time
	UpdatedAt time.Time
}

const typeColumns = "name, grp, source, file_path, revision, spec, drift, created_at, updated_at"

func scanType(row pgx.Row) (ResourceType, error) {
	var t ResourceType
	err := row.Scan(&t.Name, &t.Group, &t.Source, &t.Path, &t.Revision, &t.Spec, &t.Drift, &t.CreatedAt, &t.UpdatedAt)
	return t, err
}

// ListTypes returns every ResourceType by name.
func (s *Store) ListTypes(ctx context.Context) ([]ResourceType, error) {
	rows, err := s.reader().Query(ctx, "SELECT "+typeColumns+" FROM resource_types ORDER BY lower(name)")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ResourceType, error) { return scanType(r) })
}

// GetType returns one ResourceType; the name is case-insensitive.
func (s *Store) GetType(ctx context.Context, name string) (ResourceType, error) {
	t, err := scanType(s.reader().QueryRow(ctx, "SELECT "+typeColumns+" FROM resource_types WHERE lower(name) = lower($1)", name))
	if errors.Is(err, pgx.ErrNoRows) {
		return t, fmt.Errorf("resource type %s: %w", name, ErrNotFound)
	}
	return t, err
}
