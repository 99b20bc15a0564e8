package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/changeplan"
	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/notify"
	"github.com/trueup-dev/trueup/internal/status"
)

// DefaultApplyBatch is how many resources one statement of ApplyRevision writes. A revision
// is applied in one transaction whatever its size, but in statements of bounded size: the
// driver holds a statement's encoded arguments about four times over while it builds and
// sends them, so one statement for 100,000 resources took a few hundred MB for a moment.
// 2,000 rows keep that to a few MB and cost a first sync of 10,000 resources a handful
// more round trips.
const DefaultApplyBatch = 2000

func (p ApplyParams) batchSize() int {
	if p.BatchSize > 0 {
		return p.BatchSize
	}
	return DefaultApplyBatch
}

// chunks calls fn for consecutive ranges [lo, hi) of at most size of n items.
func chunks(n, size int, fn func(lo, hi int) error) error {
	for lo := 0; lo < n; lo += size {
		if err := fn(lo, min(lo+size, n)); err != nil {
			return err
		}
	}
	return nil
}

// AnnotationReconcileRequestedAt is the annotation whose change in Git runs a resource now
// (trigger manual, actor git:<revision>) even when its spec is unchanged.
const AnnotationReconcileRequestedAt = "trueup.dev/reconcile-requested-at"

// rewrite is a resource of the revision whose row exists: its index in the Set.
type rewrite struct {
	i        int
	id       int64
	restored bool // the row was being deleted
}

// applyResources writes the revision's resources: new rows, new specs (a new generation),
// new labels, and the rows whose manifests are gone (marked for deletion, or orphaned), with
// their changes and events, as the change plan (changeplan.Plan) of the revision against the
// source's rows says. Every write goes in statements of at most p.batchSize() rows, each
// followed by its changes and events, so that what is held at once does not grow with the
// revision.
func applyResources(ctx context.Context, tx pgx.Tx, p ApplyParams, sc applyScope, res *ApplyResult) error {
	if res.TypesChanged+res.TypesRemoved > 0 {
		sc = applyScope{all: true} // a type's schema (its defaults) may change specs of every file
	}
	applied, ids, err := appliedInScope(ctx, tx, p, &sc)
	if err != nil {
		return err
	}
	// The plan reads the Set's resources in scope as it goes: a copy of each one's identity
	// and hashes would be about 100 MB at a million resources, at the apply's start.
	inScope := sc.len(p)
	desired := func(k int) changeplan.Resource {
		r := p.Set.At(sc.at(k))
		return changeplan.Resource{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name, Spec: r.SpecHash, Meta: r.MetaHash,
			RequestedAt: r.Annotations[AnnotationReconcileRequestedAt]}
	}
	plan := changeplan.Plan(changeplan.Revision{Subject: planSubject(p), NoManifests: p.NoManifests, Len: inScope, At: desired},
		applied, p.plannedPrune())
	if err := scopedGuard(ctx, tx, p, &sc, &plan); err != nil {
		return err
	}
	var ins []int
	var upd, meta []rewrite
	var requested []int64
	for k, st := range plan.Steps {
		i := sc.at(k)
		switch st.Op {
		case changeplan.Create:
			ins = append(ins, i)
		case changeplan.Update:
			upd = append(upd, rewrite{i, ids[st.Applied], st.Restored})
		case changeplan.Relabel:
			meta = append(meta, rewrite{i, ids[st.Applied], false})
			if st.Requested {
				requested = append(requested, ids[st.Applied])
			}
		}
	}
	res.Unchanged = plan.Counts.Unchanged + p.Set.Len() - inScope
	gone, orphans := make([]int64, 0, len(plan.Deleted())), make([]int64, 0, len(plan.Orphan))
	for _, j := range plan.Deleted() {
		gone = append(gone, ids[j])
	}
	for _, j := range plan.Orphan {
		orphans = append(orphans, ids[j])
	}
	res.PruneSkipped, res.PruneMessage = plan.Guard.Reason, plan.Guard.Message

	w := &applyWriter{tx: tx, p: p, size: p.batchSize(), bulk: bulkCreate(len(ins), p.BulkCreate), deps: p.Set.HasDependencies()}
	// Lock every row this revision rewrites in id order first: the bulk updates below lock in
	// whatever order their plan takes, and reconciler writes lock in id order. Ascending
	// pieces of the sorted ids keep that order.
	touched := make([]int64, 0, len(upd)+len(meta)+len(gone)+len(orphans))
	for _, u := range upd {
		touched = append(touched, u.id)
	}
	for _, m := range meta {
		touched = append(touched, m.id)
	}
	touched = append(append(touched, gone...), orphans...)
	slices.Sort(touched)
	if err := chunks(len(touched), w.size, func(lo, hi int) error {
		_, err := tx.Exec(ctx, "SELECT 1 FROM resources WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE", touched[lo:hi])
		return err
	}); err != nil {
		return fmt.Errorf("lock resources: %w", err)
	}

	if err := storeSealedFiles(ctx, tx, p, &sc); err != nil {
		return fmt.Errorf("store encrypted files: %w", err)
	}
	if err := chunks(len(ins), w.size, func(lo, hi int) error { return w.insert(ctx, ins[lo:hi]) }); err != nil {
		return fmt.Errorf("insert resources: %w", err)
	}
	res.Created = len(ins)
	if w.bulk {
		w.events, w.changes = append(w.events, bulkCreatedEvent(p, len(ins))), append(w.changes, relistChanges(p, ins)...)
	}
	if err := chunks(len(upd), w.size, func(lo, hi int) error { return w.update(ctx, upd[lo:hi]) }); err != nil {
		return fmt.Errorf("update resources: %w", err)
	}
	res.Updated = len(upd)
	if err := chunks(len(meta), w.size, func(lo, hi int) error { return w.relabel(ctx, meta[lo:hi]) }); err != nil {
		return fmt.Errorf("relabel resources: %w", err)
	}
	res.Relabelled = len(meta)
	if err := chunks(len(requested), w.size, func(lo, hi int) error { return w.requestReconcile(ctx, requested[lo:hi]) }); err != nil {
		return fmt.Errorf("request reconciles: %w", err)
	}
	res.Requested = len(requested)
	if res.PruneSkipped != "" {
		// A refusal already shown for the same revision records no new event or notification.
		var rev string
		var conds []status.Condition
		if err := tx.QueryRow(ctx, `SELECT revision, conditions FROM sources WHERE name = $1`, p.Source).Scan(&rev, &conds); err != nil &&
			!errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("read source %s: %w", p.Source, err)
		}
		after := status.SourceApplied(conds, sourceApply(p, *res), time.Now())
		if slices.Contains(notify.SourceEvents(notify.Source{Revision: rev, Conditions: conds}, notify.Source{Revision: p.Revision, Conditions: after}), notify.PruneSkipped) {
			w.events = append(w.events, Event{Type: EventWarning, Reason: "PruneSkipped", Message: res.PruneMessage})
			if err := insertOutbox(ctx, tx, []OutboxEntry{{Event: notify.PruneSkipped, Kind: "Source", Name: p.Source, Source: p.Source,
				Revision: p.Revision, Phase: res.PruneSkipped, Message: res.PruneMessage}}); err != nil {
				return err
			}
		}
	}
	if err := chunks(len(gone), w.size, func(lo, hi int) error { return w.markGone(ctx, gone[lo:hi]) }); err != nil {
		return fmt.Errorf("mark removed resources: %w", err)
	}
	res.Deleted = len(gone)
	if err := chunks(len(orphans), w.size, func(lo, hi int) error { return w.markOrphaned(ctx, orphans[lo:hi]) }); err != nil {
		return fmt.Errorf("mark orphaned resources: %w", err)
	}
	res.Orphaned = len(orphans)
	w.changes = append(w.changes, Change{Object: "source", Type: ChangeModified, Name: p.Source, Source: p.Source})
	if err := w.flush(ctx); err != nil {
		return err
	}
	if err := recordFiles(ctx, tx, p, &sc, res); err != nil {
		return fmt.Errorf("record files: %w", err)
	}
	return w.toRefresh(ctx, ins, res)
}

// planSubject names p's revision in the prune guard's message.
func planSubject(p ApplyParams) string { return "revision " + clip.Rev(p.Revision) }

// toRefresh lists, in res.Refresh, the rows whose wait may have changed with this revision:
// rows written with dependencies, rows being deleted (they wait for their dependents), and
// the dependents of rows created, changed or marked for deletion. Without any dependency in
// the store this costs one query.
func (w *applyWriter) toRefresh(ctx context.Context, ins []int, res *ApplyResult) error {
	ok, err := anyEdges(ctx, w.tx)
	if err != nil {
		return err
	}
	if !ok {
		// The last edge may have gone with this revision: what it left still needs telling.
		res.Refresh = append(res.Refresh, w.refresh...)
		return nil
	}
	affected := w.affected
	if len(ins) > 0 {
		// New rows may be what others waited for (a dependency that did not exist): their
		// identities, not their specs and labels (a first sync's million).
		ns, kinds, names := make([]string, len(ins)), make([]string, len(ins)), make([]string, len(ins))
		for k, i := range ins {
			r := w.p.Set.At(i)
			ns[k], kinds[k], names[k] = r.Namespace, r.Kind, r.Name
		}
		rows, err := w.tx.Query(ctx, `SELECT r.id FROM unnest($1::text[], $2::text[], $3::text[]) AS x(ns, kind, name)
			JOIN resources r ON r.namespace = x.ns AND lower(r.kind) = lower(x.kind) AND r.name = x.name
			WHERE EXISTS (SELECT 1 FROM resource_edges e WHERE e.dep_namespace = r.namespace AND lower(e.dep_kind) = lower(r.kind) AND e.dep_name = r.name)`,
			ns, kinds, names)
		if err != nil {
			return err
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		affected = append(slices.Clip(affected), got...)
	}
	deps, err := dependentsOf(ctx, w.tx, affected)
	if err != nil {
		return err
	}
	rows, err := w.tx.Query(ctx, `SELECT id FROM resources WHERE id = ANY($1::bigint[]) AND deletion_timestamp IS NOT NULL`, w.affected)
	if err != nil {
		return err
	}
	gone, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	res.Refresh = append(append(append(res.Refresh, w.refresh...), deps...), gone...)
	return nil
}

// existingResources reads the source's rows as the change plan compares them, and their ids
// (aligned).
func existingResources(ctx context.Context, tx pgx.Tx, source string) ([]changeplan.Applied, []int64, error) {
	return scanApplied(tx.Query(ctx, `SELECT `+appliedColumns+` FROM resources WHERE source = $1`, source))
}

// appliedColumns are what scanApplied reads of a row.
const appliedColumns = `id, namespace, lower(kind), name, spec_hash, meta_hash, deletion_timestamp IS NOT NULL,
	COALESCE(annotations->>'trueup.dev/prune', '') = 'disabled', orphaned,
	COALESCE(annotations->>'trueup.dev/reconcile-requested-at', '')`

// scanApplied reads rows of appliedColumns as the change plan compares them, and their ids.
func scanApplied(rows pgx.Rows, err error) ([]changeplan.Applied, []int64, error) {
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var applied []changeplan.Applied
	var ids []int64
	for rows.Next() {
		var id int64
		var a changeplan.Applied
		if err := rows.Scan(&id, &a.Namespace, &a.Kind, &a.Name, &a.Spec, &a.Meta, &a.Deleting, &a.Keep, &a.Orphaned, &a.RequestedAt); err != nil {
			return nil, nil, err
		}
		applied, ids = append(applied, a), append(ids, id)
	}
	return applied, ids, rows.Err()
}

// applyWriter writes one revision's resources a batch at a time, each batch's changes and
// events right after it.
type applyWriter struct {
	tx      pgx.Tx
	p       ApplyParams
	size    int
	bulk    bool  // the created rows get one event and change for all (bulkCreate)
	deps    bool  // a resource of the revision has dependencies
	b       batch // reused from batch to batch
	changes []Change
	events  []Event
	// refresh: rows whose wait must be recomputed after the commit; affected: rows whose
	// readiness changed (created, new generation, deletion requested), whose dependents must.
	refresh, affected []int64
}

// build fills w.b with the new rows idx and appends their changes and events
// (BenchmarkApplyBuild100k: its cost, the driver's encoding excluded).
func (w *applyWriter) build(idx []int) {
	w.b.reset()
	for _, i := range idx {
		r := w.p.Set.At(i)
		w.b.add(0, r)
		if w.bulk {
			continue
		}
		w.events = append(w.events, resourceEvent(r, EventNormal, "Created", "created from "+r.File+" at "+clip.Rev(w.p.Revision)))
		w.changes = append(w.changes, Change{Object: "resource", Type: ChangeAdded, Namespace: r.Namespace, Kind: r.Kind, Name: r.Name,
			Source: w.p.Source, Phase: "Pending", Generation: 1})
	}
}

func (w *applyWriter) insert(ctx context.Context, idx []int) error {
	w.build(idx)
	b := &w.b
	if _, err := w.tx.Exec(ctx, `
		INSERT INTO resources (namespace, kind, name, api_version, source, file_path, file_line, revision,
		  labels, annotations, spec, spec_hash, meta_hash, conditions, sealed_sha, has_deps)
		SELECT ns, kind, name, av, $1, fp, fl, $2, lb::jsonb, an::jsonb, sp::jsonb, sh, mh, $3::jsonb, NULLIF(se, ''), hd
		FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::bool[])
		  AS x(ns, kind, name, av, fp, fl, lb, an, sp, sh, mh, se, hd)`,
		w.p.Source, w.p.Revision, initialConditions(), b.ns, b.kind, b.name, b.av, b.fp, b.fl, b.lb, b.an, b.sp, b.sh, b.mh, b.se, b.hd); err != nil {
		return err
	}
	if err := w.edges(ctx, idx, nil); err != nil {
		return err
	}
	return w.flush(ctx)
}

// edges writes the edges of the resources idx (their rows written, ids the rows rewritten,
// whose old edges go) and notes which rows to refresh after the commit. The ids of new rows
// are read back only when some edge exists.
func (w *applyWriter) edges(ctx context.Context, idx []int, ids []int64) error {
	// Without any dependency in the revision the batch is not read again.
	deps := false
	for k := 0; w.deps && k < len(idx) && !deps; k++ {
		deps = len(w.p.Set.At(idx[k]).DependsOn) > 0
	}
	if len(ids) > 0 {
		// Rewritten rows may drop edges: their old targets (a delete waiting for them) and
		// the rows themselves (their conditions) are refreshed after the commit.
		old, err := dependenciesOf(ctx, w.tx, ids)
		if err != nil {
			return err
		}
		w.refresh = append(w.refresh, old...)
		if !deps {
			tag, err := w.tx.Exec(ctx, `DELETE FROM resource_edges WHERE resource_id = ANY($1::bigint[])`, ids)
			if err != nil {
				return err
			}
			if tag.RowsAffected() > 0 {
				w.refresh = append(w.refresh, ids...)
			}
			return nil
		}
	}
	if !deps {
		return nil
	}
	if err := w.writeEdges(ctx, idx, ids); err != nil {
		return err
	}
	if len(ids) > 0 {
		w.refresh = append(w.refresh, ids...)
		return nil
	}
	b := &w.b
	rows, err := w.tx.Query(ctx, `SELECT r.id FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[]) AS x(ns, kind, name, hd)
		JOIN resources r ON r.namespace = x.ns AND lower(r.kind) = lower(x.kind) AND r.name = x.name WHERE x.hd`, b.ns, b.kind, b.name, b.hd)
	if err != nil {
		return err
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	w.refresh = append(w.refresh, got...)
	return err
}

func (w *applyWriter) update(ctx context.Context, rs []rewrite) error {
	w.b.reset()
	for _, u := range rs {
		r := w.p.Set.At(u.i)
		w.b.add(u.id, r)
		msg := "spec changed in " + r.File + " at " + clip.Rev(w.p.Revision)
		if u.restored {
			msg = "manifest restored in " + r.File + " at " + clip.Rev(w.p.Revision)
		}
		w.events = append(w.events, resourceEvent(r, EventNormal, "SpecChanged", msg))
	}
	b := &w.b
	// Phase and conditions of a new generation are the status model's (status.NewGeneration).
	phases, conds, err := newGenerations(ctx, w.tx, b.ids)
	if err != nil {
		return err
	}
	rows, err := w.tx.Query(ctx, `
		UPDATE resources r SET api_version = x.av, file_path = x.fp, file_line = x.fl, revision = $1,
		  labels = x.lb::jsonb, annotations = x.an::jsonb, spec = x.sp::jsonb, spec_hash = x.sh, meta_hash = x.mh,
		  sealed_sha = NULLIF(x.se, ''), kind = x.kind, generation = r.generation + 1, updated_at = now(), deletion_timestamp = NULL,
		  attempt = 0, orphaned = false,
		  phase = COALESCE(x.phase, r.phase), conditions = COALESCE(x.conds::jsonb, r.conditions),
		  has_deps = x.hd,
		  resolved_spec = CASE WHEN x.hd THEN r.resolved_spec END, resolved_origins = CASE WHEN x.hd THEN r.resolved_origins END, inputs_hash = CASE WHEN x.hd THEN r.inputs_hash END
		FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[],
		  $12::text[], $13::text[], $14::text[], $15::bool[])
		  AS x(id, kind, av, fp, fl, lb, an, sp, sh, mh, phase, conds, se, hd)
		WHERE r.id = x.id
		RETURNING r.namespace, r.kind, r.name, r.phase, r.generation`,
		w.p.Revision, b.ids, b.kind, b.av, b.fp, b.fl, b.lb, b.an, b.sp, b.sh, b.mh, phases, conds, b.se, b.hd)
	if err != nil {
		return err
	}
	if w.changes, err = collectChanges(rows, w.p.Source, w.changes); err != nil {
		return err
	}
	// Due at once; a row with dependencies waits until they are looked at.
	if _, err := w.tx.Exec(ctx, `UPDATE resource_queue q SET run_at = now(), dirty = q.lease_owner IS NOT NULL, blocked = x.hd
		FROM unnest($1::bigint[], $2::bool[]) AS x(id, hd) WHERE q.id = x.id`, b.ids, b.hd); err != nil {
		return err
	}
	w.affected = append(w.affected, b.ids...)
	idx := make([]int, len(rs))
	for k, u := range rs {
		idx[k] = u.i
		if u.restored {
			// It may have waited for dependents: that condition goes (RefreshDependencies).
			w.refresh = append(w.refresh, u.id)
		}
	}
	if err := w.edges(ctx, idx, b.ids); err != nil {
		return err
	}
	return w.flush(ctx)
}

func (w *applyWriter) relabel(ctx context.Context, rs []rewrite) error {
	w.b.reset()
	for _, m := range rs {
		w.b.add(m.id, w.p.Set.At(m.i))
	}
	b := &w.b
	_, err := w.tx.Exec(ctx, `
		UPDATE resources r SET api_version = x.av, file_path = x.fp, file_line = x.fl, revision = $1,
		  labels = x.lb::jsonb, annotations = x.an::jsonb, meta_hash = x.mh, kind = x.kind, updated_at = now(), orphaned = false,
		  sealed_sha = NULLIF(x.se, ''), has_deps = x.hd,
		  resolved_spec = CASE WHEN x.hd THEN r.resolved_spec END, resolved_origins = CASE WHEN x.hd THEN r.resolved_origins END, inputs_hash = CASE WHEN x.hd THEN r.inputs_hash END
		FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[], $9::text[], $10::text[], $11::bool[])
		  AS x(id, kind, av, fp, fl, lb, an, mh, se, hd)
		WHERE r.id = x.id`,
		w.p.Revision, b.ids, b.kind, b.av, b.fp, b.fl, b.lb, b.an, b.mh, b.se, b.hd)
	if err != nil {
		return err
	}
	// A row without dependencies any more waits for none.
	if _, err := w.tx.Exec(ctx, `UPDATE resource_queue q SET blocked = false
		FROM unnest($1::bigint[], $2::bool[]) AS x(id, hd) WHERE q.id = x.id AND q.blocked AND NOT x.hd`, b.ids, b.hd); err != nil {
		return err
	}
	idx := make([]int, len(rs))
	for k, m := range rs {
		idx[k] = m.i
	}
	return w.edges(ctx, idx, b.ids)
}

// requestReconcile runs the rows ids now as a manual reconcile by git:<revision> (their
// reconcile-requested-at annotation changed; the relabel wrote the annotation).
func (w *applyWriter) requestReconcile(ctx context.Context, ids []int64) error {
	rows, err := w.tx.Query(ctx, `UPDATE resource_queue q SET run_at = now(), manual_requested_by = $2,
		dirty = q.dirty OR q.lease_owner IS NOT NULL FROM resources r WHERE r.id = q.id AND q.id = ANY($1::bigint[])
		RETURNING r.namespace, r.kind, r.name`,
		ids, "git:"+clip.Rev(w.p.Revision))
	if err != nil {
		return err
	}
	if w.events, err = collectIdentityEvents(rows, EventNormal, ReasonManualReconcile,
		"reconcile requested by git:"+clip.Rev(w.p.Revision)+" (annotation "+AnnotationReconcileRequestedAt+" changed)", w.events); err != nil {
		return err
	}
	return w.flush(ctx)
}

func (w *applyWriter) markGone(ctx context.Context, ids []int64) error {
	phases, conds, err := deriveStatus(ctx, w.tx, ids, func(s status.State, _ int64, now time.Time) status.State {
		return status.DeletionRequested(s, now)
	})
	if err != nil {
		return err
	}
	rows, err := w.tx.Query(ctx, `
		UPDATE resources r SET deletion_timestamp = now(), attempt = 0, phase = x.phase, conditions = x.conds::jsonb,
		  revision = $2
		FROM unnest($1::bigint[], $3::text[], $4::text[]) AS x(id, phase, conds)
		WHERE r.id = x.id AND x.phase IS NOT NULL RETURNING r.namespace, r.kind, r.name, r.phase, r.generation`, ids, w.p.Revision, phases, conds)
	if err != nil {
		return err
	}
	n := len(w.changes)
	if w.changes, err = collectChanges(rows, w.p.Source, w.changes); err != nil {
		return err
	}
	if _, err := w.tx.Exec(ctx, `UPDATE resource_queue q SET run_at = now(), dirty = q.lease_owner IS NOT NULL
		FROM unnest($1::bigint[], $2::text[]) AS x(id, phase) WHERE q.id = x.id AND x.phase IS NOT NULL`, ids, phases); err != nil {
		return err
	}
	w.affected = append(w.affected, ids...)
	for _, c := range w.changes[n:] {
		w.events = append(w.events, Event{Namespace: c.Namespace, Kind: c.Kind, Name: c.Name, Type: EventNormal,
			Reason: "DeletionRequested", Message: "manifest removed at " + clip.Rev(w.p.Revision)})
	}
	return w.flush(ctx)
}

func (w *applyWriter) markOrphaned(ctx context.Context, ids []int64) error {
	rows, err := w.tx.Query(ctx, `UPDATE resources SET orphaned = true WHERE id = ANY($1::bigint[]) RETURNING namespace, kind, name`, ids)
	if err != nil {
		return err
	}
	why := "pruning is disabled for this source"
	if w.p.Prune {
		why = "annotation trueup.dev/prune: disabled"
	}
	if w.events, err = collectIdentityEvents(rows, EventWarning, "PruneSkipped",
		"manifest removed at "+clip.Rev(w.p.Revision)+" but the resource is kept: "+why, w.events); err != nil {
		return err
	}
	return w.flush(ctx)
}

// flush writes the changes and events gathered so far.
func (w *applyWriter) flush(ctx context.Context) error {
	for i := range w.events {
		w.events[i].Source, w.events[i].Replica = w.p.Source, w.p.Replica
	}
	if err := appendChanges(ctx, w.tx, w.changes); err != nil {
		return err
	}
	if err := insertEvents(ctx, w.tx, w.events); err != nil {
		return err
	}
	clear(w.changes) // drop the strings they point to
	clear(w.events)
	w.changes, w.events = w.changes[:0], w.events[:0]
	return nil
}

// collectChanges appends (namespace, kind, name, phase, generation) rows to out as MODIFIED
// changes.
func collectChanges(rows pgx.Rows, source string, out []Change) ([]Change, error) {
	defer rows.Close()
	for rows.Next() {
		c := Change{Object: "resource", Type: ChangeModified, Source: source}
		if err := rows.Scan(&c.Namespace, &c.Kind, &c.Name, &c.Phase, &c.Generation); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func collectIdentityEvents(rows pgx.Rows, typ, reason, msg string, out []Event) ([]Event, error) {
	defer rows.Close()
	for rows.Next() {
		ev := Event{Type: typ, Reason: reason, Message: msg}
		if err := rows.Scan(&ev.Namespace, &ev.Kind, &ev.Name); err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}

// batch gathers column arrays for one unnest statement.
type batch struct {
	ids                                            []int64
	ns, kind, name, av, fp, lb, an, sp, sh, mh, se []string
	fl                                             []int32
	hd                                             []bool // has dependencies
}

func (b *batch) reset() {
	for _, col := range []*[]string{&b.ns, &b.kind, &b.name, &b.av, &b.fp, &b.lb, &b.an, &b.sp, &b.sh, &b.mh, &b.se} {
		clear(*col)
		*col = (*col)[:0]
	}
	b.ids, b.fl, b.hd = b.ids[:0], b.fl[:0], b.hd[:0]
}

func (b *batch) add(id int64, r *manifest.Resource) {
	b.ids = append(b.ids, id)
	b.ns = append(b.ns, r.Namespace)
	b.kind = append(b.kind, r.Kind)
	b.name = append(b.name, r.Name)
	b.av = append(b.av, r.APIVersion)
	b.fp = append(b.fp, r.File)
	b.fl = append(b.fl, int32(r.Line))
	b.lb = append(b.lb, stringsJSON(r.Labels))
	b.an = append(b.an, stringsJSON(r.Annotations))
	b.sp = append(b.sp, string(storableJSON(r.Spec)))
	b.sh = append(b.sh, r.SpecHash)
	b.mh = append(b.mh, r.MetaHash)
	b.se = append(b.se, sealedSHA(r.Sealed))
	b.hd = append(b.hd, len(r.DependsOn) > 0)
}

// sealedSHA names an encrypted manifest file in sealed_files ("" for none).
func sealedSHA(content string) string {
	if content == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}

// storeSealedFiles writes the encrypted files of the scope's resources, once each, before
// the resources that name them. A packed Set has none (manifest.Options.Packed).
func storeSealedFiles(ctx context.Context, tx pgx.Tx, p ApplyParams, sc *applyScope) error {
	if p.Set.Packed() {
		return nil
	}
	seen := map[string]bool{}
	var shas, contents []string
	for k := range sc.len(p) {
		if c := p.Set.At(sc.at(k)).Sealed; c != "" {
			if sha := sealedSHA(c); !seen[sha] {
				seen[sha] = true
				shas, contents = append(shas, sha), append(contents, c)
			}
		}
	}
	if len(shas) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO sealed_files (sha256, content) SELECT * FROM unnest($1::text[], $2::text[])
		ON CONFLICT (sha256) DO NOTHING`, shas, contents)
	return err
}

// stringsJSON spells labels or annotations for a jsonb column.
func resourceEvent(r *manifest.Resource, typ, reason, msg string) Event {
	return Event{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name, Type: typ, Reason: reason, Message: msg}
}
