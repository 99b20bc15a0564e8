package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/status"
)

// Dependencies (DESIGN §4, Dependencies) are rows of resource_edges, written with the
// desired state. What a resource waits for is kept in resource_queue.blocked, which takes it
// out of the claim's index: the claim never scans waiting rows. blocked is a hint kept fresh by
// RefreshDependencies after every commit that can change it (a revision applied, results
// written, a row removed), and by the maintenance sweep (StaleWaits) for what a crash cut
// short; the claim itself checks the dependencies of the rows it takes, so a stale hint can
// delay work but never run it early.

// readySQL is graph.IsReady in SQL, for the row d.
const readySQL = `(d.phase = 'Ready' AND d.observed_generation = d.generation AND d.observed_generation > 0 AND d.deletion_timestamp IS NULL)`

// claimGateSQL is the claim's exact check for the row r: a reconcile runs only when every
// dependency is Ready; a delete only when no resource depends on r any more.
const claimGateSQL = `
	AND (r.deletion_timestamp IS NOT NULL OR NOT r.has_deps OR NOT EXISTS (
		SELECT 1 FROM resource_edges e LEFT JOIN resources d
		  ON d.namespace = e.dep_namespace AND lower(d.kind) = lower(e.dep_kind) AND d.name = e.dep_name
		WHERE e.resource_id = r.id AND (d.id IS NULL OR NOT ` + readySQL + `)))
	AND (r.deletion_timestamp IS NULL OR NOT EXISTS (
		SELECT 1 FROM resource_edges e
		WHERE e.dep_namespace = r.namespace AND lower(e.dep_kind) = lower(r.kind) AND e.dep_name = r.name AND e.resource_id <> r.id))`

// edgeBatch gathers the edges of a batch of resources for one unnest statement.
type edgeBatch struct {
	ns, kind, name, dns, dkind, dname, outs []string
	explicit                                []bool
}

func (b *edgeBatch) add(r *manifest.Resource) {
	for _, d := range r.DependsOn {
		b.ns = append(b.ns, r.Namespace)
		b.kind = append(b.kind, r.Kind)
		b.name = append(b.name, r.Name)
		b.dns = append(b.dns, d.Target.Namespace)
		b.dkind = append(b.dkind, d.Target.Kind)
		b.dname = append(b.dname, d.Target.Name)
		b.outs = append(b.outs, strings.Join(d.Outputs, "\x1f"))
		b.explicit = append(b.explicit, d.Explicit)
	}
}

// writeEdges replaces the edges of the resources idx of the set (their rows exist: the
// edges name them by identity). replace drops the rows' old edges first.
func (w *applyWriter) writeEdges(ctx context.Context, idx []int, ids []int64) error {
	if len(ids) > 0 {
		if _, err := w.tx.Exec(ctx, `DELETE FROM resource_edges WHERE resource_id = ANY($1::bigint[])`, ids); err != nil {
			return err
		}
	}
	var b edgeBatch
	for _, i := range idx {
		b.add(w.p.Set.At(i))
	}
	if len(b.ns) == 0 {
		return nil
	}
	_, err := w.tx.Exec(ctx, `
		INSERT INTO resource_edges (resource_id, dep_namespace, dep_kind, dep_name, explicit, outputs)
		SELECT r.id, x.dns, x.dkind, x.dname, x.ex, string_to_array(x.outs, chr(31))
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bool[], $8::text[])
		  AS x(ns, kind, name, dns, dkind, dname, ex, outs)
		JOIN resources r ON r.namespace = x.ns AND lower(r.kind) = lower(x.kind) AND r.name = x.name
		ON CONFLICT DO NOTHING`, b.ns, b.kind, b.name, b.dns, b.dkind, b.dname, b.explicit, b.outs)
	return err
}

// dependentsOf returns the ids of the resources that depend on the rows ids.
func dependentsOf(ctx context.Context, tx DB, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT DISTINCT e.resource_id FROM resources d
		JOIN resource_edges e ON e.dep_namespace = d.namespace AND lower(e.dep_kind) = lower(d.kind) AND e.dep_name = d.name
		WHERE d.id = ANY($1::bigint[]) AND e.resource_id <> d.id`, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// dependenciesOf returns the ids of the existing resources the rows ids depend on.
func dependenciesOf(ctx context.Context, tx DB, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT DISTINCT d.id FROM resource_edges e
		JOIN resources d ON d.namespace = e.dep_namespace AND lower(d.kind) = lower(e.dep_kind) AND d.name = e.dep_name
		WHERE e.resource_id = ANY($1::bigint[])`, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// anyEdges reports whether any dependency exists at all: a store without any skips every
// query about them.
func anyEdges(ctx context.Context, tx DB) (bool, error) {
	var ok bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM resource_edges)`).Scan(&ok)
	return ok, err
}

// loadDeps reads the dependencies of the rows ids with their targets' state; outputs only
// where the edge references some.
func loadDeps(ctx context.Context, tx DB, ids []int64) (map[int64][]graph.Dep, error) {
	rows, err := tx.Query(ctx, `
		SELECT e.resource_id, e.dep_namespace, e.dep_kind, e.dep_name, e.outputs, d.id IS NOT NULL,
		  COALESCE(`+readySQL+`, false), COALESCE(d.phase, ''), COALESCE(d.message, ''),
		  CASE WHEN cardinality(e.outputs) > 0 THEN d.outputs END
		FROM resource_edges e LEFT JOIN resources d
		  ON d.namespace = e.dep_namespace AND lower(d.kind) = lower(e.dep_kind) AND d.name = e.dep_name
		WHERE e.resource_id = ANY($1::bigint[])
		ORDER BY e.resource_id, e.dep_kind, e.dep_namespace, e.dep_name`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64][]graph.Dep{}
	for rows.Next() {
		var id int64
		var d graph.Dep
		var vals []byte
		if err := rows.Scan(&id, &d.Target.Namespace, &d.Target.Kind, &d.Target.Name, &d.Outputs, &d.Exists, &d.Ready,
			&d.Phase, &d.Message, &vals); err != nil {
			return nil, err
		}
		if len(vals) > 0 {
			if err := json.Unmarshal(vals, &d.Values); err != nil {
				return nil, fmt.Errorf("outputs of %s: %w", d.Target, err)
			}
		}
		out[id] = append(out[id], d)
	}
	return out, rows.Err()
}

// readClaimedDeps reads, in one query once their claim committed, the dependencies of the
// claimed resources that have some and are not being deleted (a delete resolves nothing).
// A read that fails leaves them unread: each worker then reads its own (DependencyStates),
// and a dependency whose stored outputs cannot be read fails that dependent alone, never the
// claim.
func (s *Store) readClaimedDeps(ctx context.Context, claimed []Claimed) {
	var ids []int64
	for _, c := range claimed {
		if c.HasDeps && !c.Deleting {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	deps, err := loadDeps(ctx, s.pool, ids)
	if err != nil {
		return
	}
	for i := range claimed {
		if c := &claimed[i]; c.HasDeps && !c.Deleting {
			c.Deps, c.DepsRead = deps[c.ID], true
		}
	}
}

// DependencyStates returns what the resource id depends on, with each target's state and,
// where referenced, outputs: what the reconciler resolves a spec's references from.
func (s *Store) DependencyStates(ctx context.Context, id int64) ([]graph.Dep, error) {
	m, err := loadDeps(ctx, s.pool, []int64{id})
	if err != nil {
		return nil, fmt.Errorf("read dependencies: %w", err)
	}
	return m[id], nil
}

// waitRow is what RefreshDependencies reads of a resource it refreshes.
type waitRow struct {
	id                  int64
	kind, ns, name, src string
	st                  status.State
	gen                 int64
	deleting, hasDeps   bool
	blocked, leased     bool
	due                 bool
	inputs              string
}

// WaitDecision is what RefreshDependencies writes for one resource.
type WaitDecision struct {
	Blocked bool
	State   status.State
	// Rerun names the dependencies whose referenced outputs changed since the resource last
	// ran: it runs again (trigger dependency).
	Rerun []string
}

// WaitInput is what DecideWait decides from: one resource and what it waits for.
type WaitInput struct {
	State      status.State
	Generation int64
	Namespace  string
	Deleting   bool
	Running    bool // leased: a call is under way
	// Deps are its dependencies with their state and outputs (not read when deleting).
	Deps []graph.Dep
	// Dependents (read only when deleting): some of those in its namespace, how many there
	// are there (Same), and in all (Total).
	Dependents  []graph.ID
	Same, Total int
	// Inputs is what its last call took from its dependencies (graph.Inputs.Encode).
	Inputs string
}

// DecideWait is the pure decision behind RefreshDependencies.
func DecideWait(in WaitInput, now time.Time) WaitDecision {
	st := in.State
	if in.Deleting {
		msg := graph.WaitingForDependents(in.Dependents, in.Same, in.Total)
		return WaitDecision{Blocked: msg != "", State: status.Dependents(st, msg, now)}
	}
	// Not being deleted (any more: a restored manifest): nothing waits for dependents.
	st.Conditions = status.Remove(slices.Clone(st.Conditions), status.DependentsDeleted)
	if len(in.Deps) == 0 {
		// No dependency (any more): nothing to wait for, nothing to show.
		st.Conditions = status.Remove(st.Conditions, status.DependenciesReady)
		return WaitDecision{State: st}
	}
	msg := graph.Waiting(in.Namespace, in.Deps)
	next := status.Dependencies(st, in.Generation, false, msg, now)
	if in.Running {
		// A call is under way: its result sets phase and Reconciling; only say what the
		// dependencies are now.
		c, _ := status.Get(next.Conditions, status.DependenciesReady)
		next = st
		next.Conditions = status.Set(slices.Clone(st.Conditions), c, now)
	}
	d := WaitDecision{Blocked: msg != "", State: next}
	if !d.Blocked && st.ObservedGeneration == in.Generation {
		// Only a resource at its generation re-runs for its dependencies: one with a new
		// generation pending runs anyway, as a spec change.
		d.Rerun = graph.Changed(graph.DecodeInputs(in.Inputs), graph.InputsOf(in.Deps))
	}
	return d
}

// refreshBatch bounds how many rows one refresh transaction locks.
const refreshBatch = 1000

// RefreshDependencies recomputes, for the rows ids, whether they wait (blocked), the
// conditions that say why (DependenciesReady, DependentsDeleted), and whether referenced
// outputs changed since they last ran (they then run again with trigger dependency). Call it
// after the commit that changed what they depend on: each batch locks its rows first and reads
// their dependencies after, so of two concurrent refreshes of a row the later one reads what
// both commits wrote.
func (s *Store) RefreshDependencies(ctx context.Context, ids []int64) error {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	return chunks(len(ids), refreshBatch, func(lo, hi int) error {
		var err error
		for try := 0; try < 3; try++ {
			if err = s.inTx(ctx, func(tx pgx.Tx) error { return refresh(ctx, tx, ids[lo:hi]) }); !IsRetryable(err) {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("refresh dependencies: %w", err)
		}
		return nil
	})
}

func refresh(ctx context.Context, tx pgx.Tx, ids []int64) error {
	rows, err := tx.Query(ctx, `SELECT r.id, kind, namespace, name, source, phase, conditions, generation, observed_generation,
		  deletion_timestamp IS NOT NULL, has_deps, blocked, lease_owner IS NOT NULL, run_at IS NOT NULL AND run_at <= now(),
		  COALESCE(inputs_hash, '')
		FROM resources r JOIN resource_queue q ON q.id = r.id WHERE r.id = ANY($1::bigint[]) ORDER BY r.id FOR UPDATE OF r, q`, ids)
	if err != nil {
		return err
	}
	var rs []waitRow
	for rows.Next() {
		var w waitRow
		var cj []byte
		if err := rows.Scan(&w.id, &w.kind, &w.ns, &w.name, &w.src, &w.st.Phase, &cj, &w.gen, &w.st.ObservedGeneration,
			&w.deleting, &w.hasDeps, &w.blocked, &w.leased, &w.due, &w.inputs); err != nil {
			rows.Close()
			return err
		}
		if err := json.Unmarshal(cj, &w.st.Conditions); err != nil {
			rows.Close()
			return err
		}
		rs = append(rs, w)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(rs) == 0 {
		return err
	}
	// Read after the lock (a statement of its own): see RefreshDependencies.
	var withDeps, deleting []int64
	for _, w := range rs {
		if w.deleting {
			deleting = append(deleting, w.id)
		} else if w.hasDeps {
			withDeps = append(withDeps, w.id)
		}
	}
	deps := map[int64][]graph.Dep{}
	if len(withDeps) > 0 {
		if deps, err = loadDeps(ctx, tx, withDeps); err != nil {
			return err
		}
	}
	dependents, err := liveDependents(ctx, tx, deleting)
	if err != nil {
		return err
	}
	now := time.Now()
	var (
		upIDs                  []int64
		upBlocked              []bool
		upPhase, upConds, upBy []string
		upRerun                []bool
		changes                []Change
		events                 []Event
		unblocked              bool
	)
	for _, w := range rs {
		dd := dependents[w.id]
		d := DecideWait(WaitInput{State: w.st, Generation: w.gen, Namespace: w.ns, Deleting: w.deleting, Running: w.leased,
			Deps: deps[w.id], Dependents: dd.names, Same: dd.same, Total: dd.total, Inputs: w.inputs}, now)
		changed := status.Differ(w.st, d.State)
		if !changed && d.Blocked == w.blocked && len(d.Rerun) == 0 {
			continue
		}
		cj, err := json.Marshal(d.State.Conditions)
		if err != nil {
			return err
		}
		upIDs = append(upIDs, w.id)
		upBlocked = append(upBlocked, d.Blocked)
		upPhase = append(upPhase, d.State.Phase)
		upConds = append(upConds, string(cj))
		upRerun = append(upRerun, len(d.Rerun) > 0)
		upBy = append(upBy, strings.Join(d.Rerun, ", "))
		if w.blocked && !d.Blocked {
			unblocked = true
		}
		if len(d.Rerun) > 0 {
			unblocked = true
			events = append(events, Event{Namespace: w.ns, Kind: w.kind, Name: w.name, Source: w.src, Type: EventNormal,
				Reason: "DependencyChanged", Message: "outputs it references changed: " + strings.Join(d.Rerun, ", ")})
		}
		if changed {
			changes = append(changes, Change{Object: "resource", Type: ChangeModified, Namespace: w.ns, Kind: w.kind, Name: w.name,
				Source: w.src, Phase: d.State.Phase, Generation: w.gen})
		}
		if was, _ := status.Get(w.st.Conditions, status.DependenciesReady); was.Status != status.False && d.Blocked && !w.deleting {
			if c, ok := status.Get(d.State.Conditions, status.DependenciesReady); ok {
				events = append(events, Event{Namespace: w.ns, Kind: w.kind, Name: w.name, Source: w.src, Type: EventNormal,
					Reason: status.ReasonWaitingForDependency, Message: c.Message})
			}
		}
	}
	if len(upIDs) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE resources r SET phase = x.phase, conditions = x.conds::jsonb
		FROM unnest($1::bigint[], $2::text[], $3::text[]) AS x(id, phase, conds)
		WHERE r.id = x.id AND (r.phase IS DISTINCT FROM x.phase OR r.conditions IS DISTINCT FROM x.conds::jsonb)`, upIDs, upPhase, upConds); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE resource_queue q SET blocked = x.blocked,
		  run_at = CASE WHEN x.rerun AND q.lease_owner IS NULL THEN now() ELSE q.run_at END,
		  dirty = q.dirty OR (x.rerun AND q.lease_owner IS NOT NULL),
		  dependency_by = CASE WHEN x.rerun THEN x.by ELSE q.dependency_by END
		FROM unnest($1::bigint[], $2::bool[], $3::bool[], $4::text[]) AS x(id, blocked, rerun, by)
		WHERE q.id = x.id`, upIDs, upBlocked, upRerun, upBy); err != nil {
		return err
	}
	if err := insertEvents(ctx, tx, events); err != nil {
		return err
	}
	if unblocked {
		if _, err := tx.Exec(ctx, "SELECT pg_notify($1, '')", WorkChannel); err != nil {
			return err
		}
	}
	return appendChanges(ctx, tx, changes)
}

// maxNamedDependents bounds how many dependents are read per deleting resource.
const maxNamedDependents = 5

// dependentsOfRow is what a deleting row waits for: the first dependents in its namespace
// (by identity), how many there are there, and in all.
type dependentsOfRow struct {
	names       []graph.ID
	same, total int
}

// liveDependents reads, per resource id being deleted, the dependents that still exist.
func liveDependents(ctx context.Context, tx DB, ids []int64) (map[int64]dependentsOfRow, error) {
	out := map[int64]dependentsOfRow{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `SELECT d.id, x.kind, x.namespace, x.name, x.namespace = d.namespace FROM resources d
		JOIN resource_edges e ON e.dep_namespace = d.namespace AND lower(e.dep_kind) = lower(d.kind) AND e.dep_name = d.name
		JOIN resources x ON x.id = e.resource_id
		WHERE d.id = ANY($1::bigint[]) AND x.id <> d.id
		ORDER BY d.id, x.kind, x.namespace, x.name`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var x graph.ID
		var same bool
		if err := rows.Scan(&id, &x.Kind, &x.Namespace, &x.Name, &same); err != nil {
			return nil, err
		}
		d := out[id]
		d.total++
		if same {
			d.same++
			if len(d.names) < maxNamedDependents {
				d.names = append(d.names, x)
			}
		}
		out[id] = d
	}
	return out, rows.Err()
}

// StaleWaits returns rows whose wait is out of date because a refresh was cut short (a
// replica died between a commit and its refresh): rows marked as waiting although the
// claim's check would take them, and rows due but not marked although it would skip them. The maintenance sweep refreshes
// them; normally the list is short.
//
// The claim's check skips only a row with edges of its own (it also asks has_deps, so the
// rows with edges are a superset whatever has_deps says) or one being deleted: the rows due
// but not marked are looked for among those alone, found through resource_edges' key and
// resources_source_deleting, not among every due row (at a million rows due, a first
// sync's, reading every due row takes 2.2 s a sweep).
func (s *Store) StaleWaits(ctx context.Context, limit int) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `
		(SELECT r.id FROM resource_queue q JOIN resources r ON r.id = q.id WHERE q.blocked AND (true `+claimGateSQL+`) LIMIT $1)
		UNION
		(SELECT r.id FROM (SELECT resource_id AS id FROM resource_edges
		                   UNION SELECT id FROM resources WHERE deletion_timestamp IS NOT NULL) c
		   JOIN resources r ON r.id = c.id JOIN resource_queue q ON q.id = r.id
		 WHERE q.lease_owner IS NULL AND q.run_at IS NOT NULL AND q.run_at <= now() AND NOT q.suspended AND NOT q.blocked
		   AND NOT (true `+claimGateSQL+`)
		 LIMIT $1)`, limit)
	if err != nil {
		return nil, fmt.Errorf("read stale waits: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("read stale waits: %w", err)
	}
	return ids, nil
}

// checkCycles refuses a revision that closes a dependency cycle through other sources'
// resources (cycles within the revision were refused by the loader). Only a revision with an
// edge leaving its own resources can close one: it takes the graph lock (held to the commit,
// so two sources cannot each add half of a cycle) and reads the other sources' edges. A
// preview (lock false) reads them without the lock: it decides nothing, and must not make an
// apply wait.
func checkCycles(ctx context.Context, tx pgx.Tx, p ApplyParams, lock bool) error {
	if !p.Set.HasDependencies() {
		return nil // no dependency at all: no identity need be gathered
	}
	own := make(map[graph.ID]bool, p.Set.Len())
	for _, r := range p.Set.All() {
		own[graph.ID{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}.Key()] = true
	}
	external := false
	for _, r := range p.Set.All() {
		for _, d := range r.DependsOn {
			external = external || !own[d.Target.Key()]
		}
	}
	if !external {
		return nil
	}
	if lock {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('trueup.graph'))"); err != nil {
			return err
		}
	}
	nodes := make([]manifest.GraphNode, 0, p.Set.Len())
	for _, r := range p.Set.All() {
		n := manifest.GraphNode{ID: graph.ID{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}, File: r.File, Line: r.Line, Source: p.Source}
		for _, d := range r.DependsOn {
			n.Deps = append(n.Deps, d.Target)
		}
		nodes = append(nodes, n)
	}
	rows, err := tx.Query(ctx, `SELECT r.id, r.kind, r.namespace, r.name, r.source, r.file_path, r.file_line, e.dep_kind, e.dep_namespace, e.dep_name
		FROM resource_edges e JOIN resources r ON r.id = e.resource_id WHERE r.source <> $1 ORDER BY r.id`, p.Source)
	if err != nil {
		return err
	}
	last := int64(-1)
	for rows.Next() {
		var id int64
		var n manifest.GraphNode
		var d graph.ID
		if err := rows.Scan(&id, &n.ID.Kind, &n.ID.Namespace, &n.ID.Name, &n.Source, &n.File, &n.Line, &d.Kind, &d.Namespace, &d.Name); err != nil {
			rows.Close()
			return err
		}
		if id != last {
			nodes = append(nodes, n)
			last = id
		}
		nodes[len(nodes)-1].Deps = append(nodes[len(nodes)-1].Deps, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// Each cycle is reported at its members in this revision (the message names all).
	if errs := manifest.CycleErrorsOf(nodes, p.Source); len(errs) > 0 {
		return &ConflictError{Errors: errs}
	}
	return nil
}

// RequeueCrossNamespace makes every resource with a dependency in another namespace due now
// (not suspended, not being deleted) and wakes the claimers: the reference grants changed
// (a reload), and each is judged again at its next call — a removed grant stalls it, an added
// one lets a stalled one run. It returns how many it made due.
func (s *Store) RequeueCrossNamespace(ctx context.Context) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE resource_queue q SET run_at = now(), dirty = q.dirty OR q.lease_owner IS NOT NULL
			FROM resources r WHERE r.id = q.id AND NOT q.suspended AND r.deletion_timestamp IS NULL
			  AND EXISTS (SELECT 1 FROM resource_edges e WHERE e.resource_id = r.id AND e.dep_namespace <> r.namespace)`)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, '')", WorkChannel)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("requeue cross-namespace dependents: %w", err)
	}
	return n, nil
}
