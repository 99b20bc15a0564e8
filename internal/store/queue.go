package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/notify"
	"github.com/trueup-dev/trueup/internal/status"
)

// Claimed is one resource leased to a worker, with what the worker needs from its type.
type Claimed struct {
	ID                 int64
	UID                string
	Namespace          string
	Kind               string
	Name               string
	APIVersion         string
	Source             string
	Revision           string
	Labels             map[string]string
	Annotations        map[string]string
	Spec               json.RawMessage
	Generation         int64
	ObservedGeneration int64
	Phase              string
	Conditions         []status.Condition
	ActionState        json.RawMessage
	Attempt            int
	Deleting           bool
	LeaseToken         string

	TypeKnown        bool
	ActionName       string
	ActionWith       json.RawMessage
	ResyncIntervalMs *int64
	// SealedSHA names the SOPS-encrypted file the spec's markers come from (sealed_files;
	// "" when none), File the resource's file (its extension tells the format).
	SealedSHA string
	File      string
	// ManualBy is who asked for this run now (RequestReconcile, or git:<revision> for the
	// reconcile-requested-at annotation); "" for the engine's own work.
	ManualBy string
	// HasDeps: the resource has dependencies (its spec may reference their outputs);
	// TypeSpec is then its type's spec, to validate the resolved spec against.
	HasDeps  bool
	TypeSpec json.RawMessage
	// Deps, when DepsRead, are its dependencies with their state and the outputs it
	// references, read once the claim committed (for a resource with dependencies that is
	// not being deleted): one query for the claim, not one per call.
	Deps     []graph.Dep
	DepsRead bool
	// ResolvedSpec, for a delete, is the spec as last called with references resolved
	// (nil when none): the delete gets what the reconcile got.
	ResolvedSpec json.RawMessage
	// ResolvedOrigins, with ResolvedSpec, are the paths of it whose value came from other
	// namespaces (Resolved.Origins): the delete's messages are scrubbed of those values.
	ResolvedOrigins map[string][]string
	// DependencyBy names the dependencies whose referenced outputs changed, when that is why
	// the resource runs now.
	DependencyBy string
	// AppliedRevision is the revision of the last successful reconcile ("" when never
	// applied): what a delete is called at (reconciler.callRevision). For a delete of a row
	// applied before applied revisions were recorded, it is the revision of the newest
	// successful reconcile in the resource's history.
	AppliedRevision string
	// AppliedSpec, for a delete, is the spec the last successful reconcile was called with
	// (references resolved, secrets not revealed; nil when unknown): the delete gets what
	// applied the resource, not a later desired state that never applied.
	AppliedSpec json.RawMessage
	// AppliedOrigins, with AppliedSpec, are the paths of it whose value came from other
	// namespaces: the delete's messages are scrubbed of those values too.
	AppliedOrigins map[string][]string
	// SourceRevision, for a delete, is the newest revision its source applied: where a
	// plugin falls back when AppliedRevision can no longer be read.
	SourceRevision string
	// WindowOverride is an operator's override of the change windows for this call (nil:
	// none): the windows do not hold it, and the write of its result clears it.
	WindowOverride *WindowOverride
	// Drift is its type's drift policy (nil: remediate, nothing ignored).
	Drift *manifest.DriftPolicy
	// DBNow is the database's clock when the claim was made (the now() that found the row
	// due): whatever decides at a time whether due work may run reads no earlier than it,
	// so that a controller clock behind the database's does not hold the work again at a
	// time the database has already passed.
	DBNow time.Time
	// QueueAt is where the leased version of the resource's queue row lies (ctid): the
	// result's locking read finds the row there (Completion.QueueAt).
	QueueAt string
}

// WindowOverride is an operator's request that one resource's next call proceed although a
// change window holds it (trueup reconcile --override-window --reason).
type WindowOverride struct {
	Actor  string    `json:"actor"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// historyAppliedSQL is, for a claimed resource row u applied before applied_revision was recorded
// (NULL), the revision of its newest successful reconcile in reconcile_history (NULL when
// history has none left): a delete of it is called there rather than at the removing commit.
const historyAppliedSQL = `(SELECT NULLIF(h.revision, '') FROM reconcile_history h
	WHERE h.namespace = u.namespace AND lower(h.kind) = lower(u.kind) AND h.name = u.name AND h.resource_uid = u.uid
	  AND h.operation = 'reconcile' AND h.result IN ('Succeeded', 'Drifted', 'InSync')
	ORDER BY h.id DESC LIMIT 1)`

// claimLockSQL is the first statement of a claim: $1 the limit, $2 the floor (see ClaimFrom). It picks the due rows that
// pass the gate in its snapshot and locks their queue rows (rows locked by another claimer are
// skipped, so replicas never wait on each other). It returns where each locked version lies
// (ctid) and why it runs, which the lease clears.
const claimLockSQL = `SELECT q.id, q.run_at, q.ctid::text, COALESCE(q.manual_requested_by, ''), COALESCE(q.dependency_by, '') FROM resource_queue q
		WHERE q.run_at <= now() AND q.run_at >= $2 AND q.lease_owner IS NULL AND NOT q.suspended AND NOT q.blocked
		  AND (SELECT true FROM resources r WHERE r.id = q.id ` + claimGateSQL + `)
		ORDER BY q.run_at LIMIT $1 FOR UPDATE OF q SKIP LOCKED`

// claimLeaseSQL is the second: $1 the ids locked by the first, $2 the owner, $3 the lease's
// time to live in milliseconds, $4 where their locked versions lie, $5 and $6 why they run
// (as locked). The queue rows are found by their versions' places (a TID scan where the
// planner finds it cheaper than the key: a key lookup visits every version a row left while a
// long transaction elsewhere keeps vacuum from them). A locked version stays where it is
// until this transaction updates it; a place that no longer holds the row leases nothing (the
// row waits for the next claim). Its snapshot is taken with those queue rows locked, so it
// reads every resources row as last committed: the gate is checked again on it (a row that
// fails it now is left unleased) and the row leased is the row returned. The resources row comes from
// the UPDATE's own join (one primary-key lookup per id), not from a second join of the result.
const claimLeaseSQL = `
		WITH u AS (
		  UPDATE resource_queue q SET lease_owner = $2, lease_token = gen_random_uuid(),
		    lease_expires_at = now() + $3 * interval '1 millisecond', claimed_at = now(), started_at = NULL, dirty = false,
		    manual_requested_by = NULL, dependency_by = NULL
		  FROM unnest($1::bigint[], $4::text[]::tid[], $5::text[], $6::text[]) AS x(id, at, manual_by, dep_by), resources r
		  WHERE q.ctid = ANY($4::text[]::tid[]) AND q.id = x.id AND r.id = x.id
		    AND q.run_at <= now() AND q.lease_owner IS NULL AND NOT q.suspended AND NOT q.blocked ` + claimGateSQL + `
		  RETURNING r.*, q.lease_token AS lease_token, q.run_at AS run_at, NULLIF(x.manual_by, '') AS manual_by, NULLIF(x.dep_by, '') AS dep_by,
		    q.ctid::text AS queue_at)
		SELECT u.id, u.uid::text, u.namespace, u.kind, u.name, u.api_version, u.source, u.revision, u.labels,
		  u.annotations, u.spec, u.generation, u.observed_generation, u.phase, u.conditions, u.action_state, u.attempt,
		  u.deletion_timestamp IS NOT NULL, u.lease_token::text,
		  t.name IS NOT NULL, COALESCE(t.action_name, ''), t.action_with, t.resync_interval_ms,
		  COALESCE(u.sealed_sha, ''), u.file_path, COALESCE(u.manual_by, ''),
		  u.has_deps, COALESCE(u.dep_by, ''), CASE WHEN u.has_deps THEN t.spec END,
		  CASE WHEN u.has_deps AND u.deletion_timestamp IS NOT NULL THEN u.resolved_spec END,
		  CASE WHEN u.has_deps AND u.deletion_timestamp IS NOT NULL THEN u.resolved_origins END,
		  COALESCE(u.applied_revision, CASE WHEN u.deletion_timestamp IS NOT NULL THEN ` + historyAppliedSQL + ` END, ''),
		  COALESCE(CASE WHEN u.deletion_timestamp IS NOT NULL THEN (SELECT s.revision FROM sources s WHERE s.name = u.source) END, ''),
		  CASE WHEN u.deletion_timestamp IS NOT NULL THEN u.applied_spec END,
		  CASE WHEN u.deletion_timestamp IS NOT NULL THEN u.applied_origins END,
		  u.window_override, t.drift, now(), u.queue_at
		FROM u LEFT JOIN resource_types t ON lower(t.name) = lower(u.kind)
		ORDER BY u.run_at`

// Claim leases up to n due resources to owner for ttl, in one transaction of two statements:
// the first locks the due queue rows, the second leases them and reads their resources rows in
// a snapshot taken after the locks. One statement would lock the newest queue row but join the
// resources row of its older snapshot: a deletion mark, labels or a spec committed between
// the two would be leased unseen, with dirty cleared. A write committed before the second
// statement is in what the claim returns; one committing after it waits on the queue row and
// finds it leased (dirty). A claim leaves phase and conditions alone: it may wait in the
// replica's memory behind other calls, and shows what it showed until its call starts
// (Started).
func (s *Store) Claim(ctx context.Context, owner string, n int, ttl time.Duration) ([]Claimed, error) {
	claimed, _, err := s.ClaimFrom(ctx, owner, n, ttl, time.Time{})
	return claimed, err
}

// ClaimFrom is Claim of the due rows whose run_at is floor or later (the zero time: all), and
// returns the run_at of the oldest row it locked (zero when none). The scan of
// resource_queue_due starts at floor: below it lie the entries of every version that was due
// and has been claimed since, which a transaction held open elsewhere keeps from vacuum, and
// which a scan from the start visits one heap page each before it reaches a live row.
func (s *Store) ClaimFrom(ctx context.Context, owner string, n int, ttl time.Duration, floor time.Time) ([]Claimed, time.Time, error) {
	var claimed []Claimed
	var oldest time.Time
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, claimLockSQL, n, floor)
		if err != nil {
			return err
		}
		var ids []int64
		var places, manualBy, depBy []string
		for rows.Next() {
			var id int64
			var at time.Time
			var place, manual, dep string
			if err := rows.Scan(&id, &at, &place, &manual, &dep); err != nil {
				rows.Close()
				return err
			}
			if oldest.IsZero() || at.Before(oldest) {
				oldest = at // the first row but for a version committed during the scan
			}
			ids, places = append(ids, id), append(places, place)
			manualBy, depBy = append(manualBy, manual), append(depBy, dep)
		}
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		rows, err = tx.Query(ctx, claimLeaseSQL, ids, owner, ttl.Milliseconds(), places, manualBy, depBy)
		if err != nil {
			return err
		}
		// Sized once: a Claimed is large, and a slice grown by doubling copies it over.
		claimed, err = pgx.AppendRows(make([]Claimed, 0, len(ids)), rows, scanClaimed)
		return err
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("claim: %w", err)
	}
	s.readClaimedDeps(ctx, claimed)
	return claimed, oldest, nil
}

// Start is a claimed item whose call is starting.
type Start struct {
	ID    int64
	Token string
	// What was claimed: the call runs this generation, a delete or not.
	Generation int64
	Deleting   bool
	// Identity, for the changes feed.
	Namespace, Kind, Name, Source string
}

// Started records that the calls of items started, in ONE transaction fenced by their lease
// tokens (an item whose result was written meanwhile, or whose lease moved on, is skipped):
// started_at is set and the status of a call starting (status.CallStarted, from the row as it
// is now) stored, with a change for each row whose phase or conditions changed. It returns
// where each started item's queue row lies now, by lease token (Completion.QueueAt).
func (s *Store) Started(ctx context.Context, items []Start) (map[string]string, error) {
	if len(items) == 0 {
		return nil, nil
	}
	var placed map[string]string
	ids, toks := make([]int64, len(items)), make([]string, len(items))
	// Keyed by row and token: a batch may hold a retaken row's old start beside its current
	// one, and only the current one's claim (generation, deleting, identity) is the row's.
	type key struct {
		id  int64
		tok string
	}
	byKey := make(map[key]Start, len(items))
	for i, it := range items {
		ids[i], toks[i] = it.ID, it.Token
		byKey[key{it.ID, it.Token}] = it
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// Locked in id order, as results are: the two never deadlock.
		rows, err := tx.Query(ctx, `SELECT r.id, q.lease_token::text, r.phase, r.conditions, r.observed_generation, r.generation, r.deletion_timestamp IS NOT NULL
			FROM resources r JOIN resource_queue q ON q.id = r.id JOIN unnest($1::bigint[], $2::text[]::uuid[]) AS x(id, tok) ON q.id = x.id AND q.lease_token = x.tok
			ORDER BY r.id FOR NO KEY UPDATE OF r, q`, ids, toks)
		if err != nil {
			return err
		}
		now := time.Now()
		var (
			startIDs []int64
			upIDs    []int64
			phases   []string
			conds    []*string
			cs       []Change
		)
		for rows.Next() {
			var id, gen int64
			var tok string
			var prev status.State
			var deleting bool
			var cj []byte
			if err := rows.Scan(&id, &tok, &prev.Phase, &cj, &prev.ObservedGeneration, &gen, &deleting); err != nil {
				rows.Close()
				return err
			}
			if err := decodeConditions(cj, &prev.Conditions); err != nil {
				rows.Close()
				return err
			}
			it := byKey[key{id, tok}]
			st, changed := status.CallStarted(prev, it.Generation, it.Deleting, gen, deleting, now)
			startIDs = append(startIDs, id)
			if !changed && st.Phase == prev.Phase {
				// A resync of a settled row: only the queue says the call started.
				continue
			}
			var js *string
			if changed {
				str, err := storableConditions(st.Conditions)
				if err != nil {
					rows.Close()
					return err
				}
				js = &str
				cs = append(cs, Change{Object: "resource", Type: ChangeModified, Namespace: it.Namespace, Kind: it.Kind, Name: it.Name,
					Source: it.Source, Phase: st.Phase, Generation: gen})
			}
			upIDs, phases, conds = append(upIDs, id), append(phases, st.Phase), append(conds, js)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(startIDs) == 0 {
			return err
		}
		if len(upIDs) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE resources r SET phase = x.phase,
				  conditions = COALESCE(x.conds::jsonb, r.conditions), status_updated_at = CASE WHEN x.conds IS NULL THEN r.status_updated_at ELSE now() END
				FROM unnest($1::bigint[], $2::text[], $3::text[]) AS x(id, phase, conds) WHERE r.id = x.id`, upIDs, phases, conds); err != nil {
				return err
			}
		}
		// The update moves the rows: their new places go back to the reconciler for the result.
		rows, err = tx.Query(ctx, `UPDATE resource_queue SET started_at = now() WHERE id = ANY($1::bigint[])
			RETURNING lease_token::text, ctid::text`, startIDs)
		if err != nil {
			return err
		}
		if placed, err = scanPlaces(rows, len(startIDs)); err != nil {
			return err
		}
		return appendChanges(ctx, tx, cs)
	})
	if err != nil {
		return nil, fmt.Errorf("record calls started: %w", err)
	}
	return placed, nil
}

// scanPlaces reads rows of (lease token, ctid) into a map of places by token.
func scanPlaces(rows pgx.Rows, n int) (map[string]string, error) {
	placed := make(map[string]string, n)
	var tok, at string
	_, err := pgx.ForEachRow(rows, []any{&tok, &at}, func() error {
		placed[tok] = at
		return nil
	})
	return placed, err
}

func scanClaimed(r pgx.CollectableRow) (Claimed, error) {
	var c Claimed
	var labels, ann, conds []byte
	err := r.Scan(&c.ID, &c.UID, &c.Namespace, &c.Kind, &c.Name, &c.APIVersion, &c.Source, &c.Revision, &labels,
		&ann, &c.Spec, &c.Generation, &c.ObservedGeneration, &c.Phase, &conds, &c.ActionState, &c.Attempt,
		&c.Deleting, &c.LeaseToken, &c.TypeKnown, &c.ActionName, &c.ActionWith, &c.ResyncIntervalMs, &c.SealedSHA, &c.File, &c.ManualBy,
		&c.HasDeps, &c.DependencyBy, &c.TypeSpec, &c.ResolvedSpec, &c.ResolvedOrigins, &c.AppliedRevision, &c.SourceRevision, &c.AppliedSpec, &c.AppliedOrigins, &c.WindowOverride, &c.Drift, &c.DBNow, &c.QueueAt)
	if err != nil {
		return c, err
	}
	if err := decodeStrings(labels, &c.Labels); err != nil {
		return c, err
	}
	if err := decodeStrings(ann, &c.Annotations); err != nil {
		return c, err
	}
	return c, decodeConditions(conds, &c.Conditions)
}

// Current is the row as it is when a worker completes, which may differ from what it claimed
// (the syncer may have changed the spec or asked for deletion meanwhile).
type Current struct {
	Phase              string
	Generation         int64
	ObservedGeneration int64
	Conditions         []status.Condition
	Deleting           bool
	Dirty              bool

	hasDeps, hasDependents bool
	outputs                []byte // read only when it has dependents
	// Where the locked versions of the row lie (ctid): the result's updates find them there.
	resourceAt, queueAt string
}

// Update is what a worker writes when it completes.
type Update struct {
	Phase              string
	ObservedGeneration int64
	Conditions         []status.Condition
	Outputs            map[string]any // nil keeps the stored outputs
	ActionState        json.RawMessage
	KeepActionState    bool // leave action_state as stored (a failed call may have checkpointed an intent)
	Message            string
	Attempt            int
	RunAt              *time.Time // nil: nothing due (resync off)
	Remove             bool       // deletion finished: the row goes (history and events stay)
	History            *HistoryEntry
	Events             []Event
	// Resolved, when set, records what the call took from the resource's dependencies: the
	// spec with references resolved and the inputs hash (graph.Inputs.Encode). nil keeps them.
	Resolved *Resolved
	// Drifted: the call found drift and corrected it, or (drift mode notify) found drift that
	// is new and left it (a notify.Drifted notification).
	Drifted bool
	// AppliedRevision, when set, records the revision the resource was just applied at (a
	// successful reconcile), and AppliedSpec the spec it was called with (references
	// resolved, secrets not revealed; nil: the row's spec): a later delete is called with
	// both. "" keeps the stored ones.
	AppliedRevision string
	AppliedSpec     json.RawMessage
	// AppliedOrigins are the paths of AppliedSpec whose value came from other namespaces
	// (Resolved.Origins of the call; stored as {} when none).
	AppliedOrigins map[string][]string
	// Approval, when set, is the resource's approval request as the gate of policies just
	// decided it (upserted; ResourceID is ignored). ClearApproval removes the stored one
	// (the change was allowed, or no policy selects the resource any more); both may be set.
	Approval      *ApprovalRequest
	ClearApproval bool
	// ClearWindowOverride, when set, is the override the call was claimed with: the write
	// removes the stored one when it is still that one (the same actor, reason and time), so
	// that an override asked for while the call ran survives it.
	ClearWindowOverride *WindowOverride
	// ManualBy and DependencyBy, when set, are the claim's request (Claimed.ManualBy,
	// Claimed.DependencyBy), which the claim cleared: the write puts them back unless a newer
	// request is stored, so that work held without a call (a change window) runs, when due,
	// as what was asked for and names who asked.
	ManualBy, DependencyBy string
}

// Resolved is a spec with its output references resolved, and what it took from which
// dependency.
type Resolved struct {
	Spec   json.RawMessage
	Inputs string
	// Origins are the paths of Spec (spec.a.b[0]) whose value came from other namespaces,
	// with those namespaces: who shows Spec masks them for a caller who may not read one.
	// Stored as {} when none; NULL (a spec stored before they were recorded) is not known.
	Origins map[string][]string
}

// Completion is one worker's result, computed from the row as it is at write time.
type Completion struct {
	ID    int64
	Token string
	// QueueAt is the last place of the queue row its holder knows ("" when unknown):
	// Claimed.QueueAt, or what Started or RenewLeases returned since. The locking read finds
	// the row there, and by key when it has moved since.
	QueueAt string
	Fn      func(Current) Update
	// Identity, for the changes feed.
	Namespace, Kind, Name, Source string
	// Quiet leaves the changes feed alone (a resync that found nothing to do).
	Quiet bool
}

// Complete writes one result; see CompleteBatch.
func (s *Store) Complete(ctx context.Context, id int64, token string, fn func(Current) Update) error {
	lost, err := s.CompleteBatch(ctx, []Completion{{ID: id, Token: token, Fn: fn}})
	if err != nil {
		return err
	}
	if len(lost) > 0 {
		return ErrLeaseLost
	}
	return nil
}

// leasedRow keys the rows a result batch holds: an item holding a token the row no longer
// has (a batch with a retaken row's old attempt and its current one) finds nothing and is
// lost.
type leasedRow struct {
	id    int64
	token string
}

// resultLockSQL is the locking read of a result batch: the resources and queue rows of the
// items (%s: the join that finds the queue rows, $1 the ids, $2 the tokens), locked in id
// order as every writer of both locks them, with what the result decides on.
const resultLockSQL = `SELECT r.id, q.lease_token::text, r.phase, r.generation, r.observed_generation, r.conditions, r.deletion_timestamp IS NOT NULL, q.dirty,
	  r.has_deps, hd.yes, CASE WHEN hd.yes THEN r.outputs END, r.ctid::text, q.ctid::text
	FROM %s JOIN resources r ON r.id = q.id,
	  LATERAL (SELECT EXISTS (SELECT 1 FROM resource_edges e
	    WHERE e.dep_namespace = r.namespace AND lower(e.dep_kind) = lower(r.kind) AND e.dep_name = r.name) AS yes) hd
	ORDER BY r.id FOR UPDATE OF r, q`

// The queue rows of resultLockSQL found at their places ($3), or by key.
var (
	resultLockByPlace = `unnest($1::bigint[], $2::text[]::uuid[], ` + placesParam(3) + `) AS x(id, tok, at)
	JOIN resource_queue q ON q.ctid = x.at AND q.id = x.id AND q.lease_token = x.tok`
	resultLockByKey = `unnest($1::bigint[], $2::text[]::uuid[]) AS x(id, tok) JOIN resource_queue q ON q.id = x.id AND q.lease_token = x.tok`
)

// lockResultRows locks and reads the rows of a result batch, and says how many it found by
// place: first the queue rows at the last places their holder knows (Completion.QueueAt: a
// TID scan; resource_queue.id's index is not unique, and a lookup by it visits every version
// a row left while a long transaction elsewhere keeps vacuum from them), then by key the
// items not found there (a row moved since that place, by a start, a renewal or another write;
// no place known; a lease lost). A row moved between the first statement's snapshot
// and its lock is either returned by it as it is now (with its new place) or found by the
// second, as the server's recheck of a TID condition decides. Both lock in id order; when an
// item not found lies below one locked, the first statement's locks are rolled back and the
// whole batch is locked by key in one statement.
func lockResultRows(ctx context.Context, tx pgx.Tx, items []Completion, ids []int64, toks []string) (cur map[leasedRow]Current, byPlace int, err error) {
	cur = make(map[leasedRow]Current, len(items))
	read := func(sql string, args ...any) error {
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k leasedRow
			var c Current
			var conds []byte
			if err := rows.Scan(&k.id, &k.token, &c.Phase, &c.Generation, &c.ObservedGeneration, &conds, &c.Deleting, &c.Dirty, &c.hasDeps, &c.hasDependents, &c.outputs,
				&c.resourceAt, &c.queueAt); err != nil {
				return err
			}
			if err := decodeConditions(conds, &c.Conditions); err != nil {
				return err
			}
			cur[k] = c
		}
		return rows.Err()
	}
	if !slices.ContainsFunc(items, func(it Completion) bool { return it.QueueAt != "" }) {
		return cur, 0, read(fmt.Sprintf(resultLockSQL, resultLockByKey), ids, toks)
	}
	placed := make([]string, len(items))
	for i, it := range items {
		placed[i] = it.QueueAt
		if placed[i] == "" {
			placed[i] = "(0,0)" // no row lies there: found by key
		}
	}
	// The locks of the first statement are given back when the rest cannot follow them in id order.
	if _, err := tx.Exec(ctx, "SAVEPOINT result_lock"); err != nil {
		return nil, 0, err
	}
	if err := read(fmt.Sprintf(resultLockSQL, resultLockByPlace), ids, toks, placed); err != nil {
		return nil, 0, err
	}
	found := len(cur)
	if found == len(items) {
		return cur, found, nil
	}
	rest, inOrder := leftToLock(items, cur)
	if !inOrder {
		// A row to lock below one locked: every writer locks these rows in id order, and one
		// holding the lower row while it waits for a higher one would deadlock with this.
		if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT result_lock"); err != nil {
			return nil, 0, err
		}
		clear(cur)
		return cur, 0, read(fmt.Sprintf(resultLockSQL, resultLockByKey), ids, toks)
	}
	restIDs, restToks := make([]int64, len(rest)), make([]string, len(rest))
	for j, i := range rest {
		restIDs[j], restToks[j] = ids[i], toks[i]
	}
	return cur, found, read(fmt.Sprintf(resultLockSQL, resultLockByKey), restIDs, restToks)
}

// leftToLock returns the indexes of the items a locking read did not find (found), and whether
// locking them next keeps id order: each lies above every row found, or is a row found
// already (under another token: a retaken row's old attempt), which waits on nothing.
func leftToLock(items []Completion, found map[leasedRow]Current) (rest []int, inOrder bool) {
	var top int64
	locked := make(map[int64]bool, len(found))
	for k := range found {
		top, locked[k.id] = max(top, k.id), true
	}
	inOrder = true
	for i, it := range items {
		if _, ok := found[leasedRow{it.ID, it.Token}]; !ok {
			rest = append(rest, i)
			inOrder = inOrder && (it.ID > top || locked[it.ID])
		}
	}
	return rest, inOrder
}

// CompleteBatch writes results (CompleteResults) and then refreshes the dependencies they
// affect (RefreshDependencies). An error after the results committed says so.
func (s *Store) CompleteBatch(ctx context.Context, items []Completion) ([]int64, error) {
	lost, refresh, err := s.CompleteResults(ctx, items)
	if err != nil {
		return lost, err
	}
	if err := s.RefreshDependencies(ctx, refresh); err != nil {
		return lost, fmt.Errorf("results written, but: %w", err)
	}
	return lost, nil
}

// CompleteResults writes many workers' results in ONE transaction, each fenced by its lease
// token: items whose lease moved on (expired and retaken) are skipped and returned in lost.
// Statements are batched with unnest, so the cost per item is a few rows, not round trips.
// refresh lists the rows whose wait the results may have changed (dependents of a resource
// that became Ready or not, or whose outputs were written; dependencies and dependents of a
// row removed): pass it to RefreshDependencies.
func (s *Store) CompleteResults(ctx context.Context, items []Completion) (lost, refresh []int64, err error) {
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		lost, refresh = lost[:0], refresh[:0]
		ids := make([]int64, len(items))
		toks := make([]string, len(items))
		for i, it := range items {
			ids[i], toks[i] = it.ID, it.Token
		}
		cur, _, err := lockResultRows(ctx, tx, items, ids, toks)
		if err != nil {
			return err
		}
		var (
			upd        updateBatch
			approvals  approvalBatch
			removes    []int64
			events     = make([]Event, 0, len(items))
			history    = make([]HistoryEntry, 0, len(items))
			changes    = make([]Change, 0, len(items))
			moved      []int64 // readiness or outputs changed, with dependents
			outbox     []outboxItem
			removedDep []int64 // removed, with dependencies
			dueNow     bool    // a row put due at once (changed during its call, or its RunAt passed)
		)
		for _, it := range items {
			c, ok := cur[leasedRow{it.ID, it.Token}]
			if !ok {
				lost = append(lost, it.ID)
				continue
			}
			u := it.Fn(c)
			for _, e := range notify.Events(notify.Snapshot{Phase: c.Phase, Conditions: c.Conditions},
				notify.Snapshot{Phase: u.Phase, Conditions: u.Conditions, Removed: u.Remove, Drift: u.Drifted}) {
				outbox = append(outbox, outboxItem{id: it.ID, event: e, phase: u.Phase, message: u.Message})
			}
			if c.hasDependents && (u.Remove || (u.Outputs != nil && !sameOutputs(c.outputs, u.Outputs)) || u.Phase != c.Phase ||
				graph.IsReady(c.Phase, c.Generation, c.ObservedGeneration, c.Deleting) != graph.IsReady(u.Phase, c.Generation, u.ObservedGeneration, c.Deleting)) {
				moved = append(moved, it.ID)
			}
			if u.Remove && c.hasDeps {
				removedDep = append(removedDep, it.ID)
			}
			if u.History != nil {
				history = append(history, *u.History)
			}
			events = append(events, u.Events...)
			ch := Change{Object: "resource", Type: ChangeModified, Namespace: it.Namespace, Kind: it.Kind, Name: it.Name,
				Source: it.Source, Phase: u.Phase, Generation: c.Generation}
			if u.Remove {
				ch.Type, ch.Phase = ChangeDeleted, ""
				changes = append(changes, ch)
				removes = append(removes, it.ID)
				continue
			}
			if !it.Quiet {
				changes = append(changes, ch)
			}
			// The clock read after Fn: a RunAt of "now" is Fn's own reading.
			if c.Dirty || u.RunAt != nil && !u.RunAt.After(time.Now()) {
				dueNow = true
			}
			if err := upd.add(it.ID, c, u); err != nil {
				return err
			}
			if err := approvals.add(it.ID, u); err != nil {
				return err
			}
		}
		if err := insertHistoryBatch(ctx, tx, history); err != nil {
			return fmt.Errorf("insert history: %w", err)
		}
		if err := insertEvents(ctx, tx, events); err != nil {
			return fmt.Errorf("insert events: %w", err)
		}
		// Before the rows go: the outbox reads their identity.
		if err := insertOutboxForResources(ctx, tx, outbox); err != nil {
			return fmt.Errorf("insert outbox: %w", err)
		}
		// Read before the rows go: their edges go with them.
		if refresh, err = dependentsOf(ctx, tx, moved); err != nil {
			return err
		}
		deps, err := dependenciesOf(ctx, tx, removedDep)
		if err != nil {
			return err
		}
		refresh = append(refresh, deps...)
		if len(removes) > 0 {
			if _, err := tx.Exec(ctx, "DELETE FROM resources WHERE id = ANY($1::bigint[])", removes); err != nil {
				return err
			}
		}
		if len(upd.ids) > 0 {
			if err := updateResults(ctx, tx, &upd); err != nil {
				return err
			}
		}
		if err := approvals.write(ctx, tx); err != nil {
			return err
		}
		if dueNow {
			// A row due at once, below where the replicas' claims may scan: they look from
			// the start once this commits (reconciler.dueFloor).
			if _, err := tx.Exec(ctx, "SELECT pg_notify($1, '')", WorkChannel); err != nil {
				return err
			}
		}
		// Last: a change id taken early commits late, and the watch hub waits for a missing
		// id only so long.
		return appendChanges(ctx, tx, changes)
	})
	return lost, refresh, err
}

// sameOutputs reports whether stored (jsonb) and outputs hold the same values.
func sameOutputs(stored []byte, outputs map[string]any) bool {
	b, err := json.Marshal(outputs)
	if err != nil {
		return false
	}
	var x, y any
	if json.Unmarshal(stored, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// updateResults writes the status part of completed results and frees their leases (two
// unnest statements). The status write skips a row it would leave as it is (a resync that
// finds the resource as it was writes no version of the wide row) and otherwise changes no
// indexed column of resources unless the phase moves (a HOT update); the lease, the next run
// and the time of the reconcile are the narrow queue row's. Both find the rows where the
// result's lock found them (byPlace).
func updateResults(ctx context.Context, tx pgx.Tx, upd *updateBatch) error {
	if err := byPlace(ctx, tx, resultResourcesSQL, "resources", "r",
		upd.ids, upd.phase, upd.observed, upd.conds, upd.outputs, upd.state, upd.keep, upd.message, upd.attempt,
		upd.setRes, upd.resolved, upd.inputs, upd.origins, upd.applied, upd.appliedSpec, upd.appliedOrigins, upd.woActor, upd.woReason, upd.woAt,
		upd.resourceAt); err != nil {
		return err
	}
	return byPlace(ctx, tx, resultQueueSQL, "resource_queue", "q", upd.ids, upd.runAt, upd.manualBy, upd.depBy, upd.queueAt)
}

// resultStatus is what a result writes into its resources row: each column and its new
// value (x is the result, r the row).
var resultStatus = []struct{ column, value string }{
	{"phase", "x.phase"},
	{"observed_generation", "x.observed"},
	{"conditions", "x.conds::jsonb"},
	{"outputs", "COALESCE(x.outputs::jsonb, r.outputs)"},
	{"action_state", "CASE WHEN x.keep THEN r.action_state ELSE x.state::jsonb END"},
	{"message", "x.message"},
	{"attempt", "x.attempt"},
	{"resolved_spec", "CASE WHEN x.setres THEN x.resolved::jsonb ELSE r.resolved_spec END"},
	{"resolved_origins", "CASE WHEN x.setres THEN x.origins::jsonb ELSE r.resolved_origins END"},
	{"inputs_hash", "CASE WHEN x.setres THEN NULLIF(x.inputs, '') ELSE r.inputs_hash END"},
	{"applied_revision", "COALESCE(NULLIF(x.applied, ''), r.applied_revision)"},
	{"applied_spec", "CASE WHEN x.applied <> '' THEN COALESCE(x.aspec::jsonb, r.spec) ELSE r.applied_spec END"},
	{"applied_origins", "CASE WHEN x.applied <> '' THEN x.aorigins::jsonb ELSE r.applied_origins END"},
	{"window_override", `CASE WHEN x.wo_at IS NOT NULL AND r.window_override->>'actor' = x.wo_actor
			  AND r.window_override->>'reason' = x.wo_reason AND ` + sameOverrideTimeSQL + ` THEN NULL ELSE r.window_override END`},
}

// resultResourcesSQL writes resultStatus, and the time the status changed, into the rows it
// changes (jsonb compared as values).
var resultResourcesSQL = func() string {
	var set, cols, vals []string
	for _, c := range resultStatus {
		set = append(set, c.column+" = "+c.value)
		cols, vals = append(cols, "r."+c.column), append(vals, c.value)
	}
	return `UPDATE resources r SET ` + strings.Join(set, ", ") + `, status_updated_at = now()
			FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bool[], $8::text[], $9::int[],
			  $10::bool[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[], $19::timestamptz[],
			  $20::text[]::tid[])
			  AS x(id, phase, observed, conds, outputs, state, keep, message, attempt, setres, resolved, inputs, origins, applied, aspec, aorigins,
			    wo_actor, wo_reason, wo_at, at)
			WHERE r.id = x.id AND %s AND (` + strings.Join(cols, ", ") + `) IS DISTINCT FROM (` + strings.Join(vals, ", ") + `)`
}()

const resultQueueSQL = `UPDATE resource_queue q SET run_at = CASE WHEN q.dirty THEN now() ELSE x.run_at END,
			lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, started_at = NULL, dirty = false,
			manual_requested_by = COALESCE(q.manual_requested_by, NULLIF(x.manual_by, '')),
			dependency_by = COALESCE(q.dependency_by, NULLIF(x.dep_by, '')), last_reconcile_time = now()
			FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::text[]::tid[]) AS x(id, run_at, manual_by, dep_by, at)
			WHERE q.id = x.id AND %s`

// placesParam is parameter n as row places (tid[]), sent as text: pgx encodes a string as tid
// only in text format, and finds that out by failing the binary encoding first (a formatted
// error per statement). Lease tokens are sent as text[]::uuid[] for the same reason.
func placesParam(n int) string { return fmt.Sprintf("$%d::text[]::tid[]", n) }

// byPlace runs an update of rows of table the transaction holds locked (sql: the table
// aliased as alias, a %s for the condition that finds the row; args: its parameters, the ids
// first, the place of each row's locked version last) by the rows' places (a TID scan where
// the planner finds it cheaper than reading the table: a lookup by key visits every version
// a row left while a long transaction elsewhere keeps vacuum from them), then by key for any
// row no longer at its place (an earlier write of the transaction moved it). The update may
// leave out rows by conditions of its own.
func byPlace(ctx context.Context, tx pgx.Tx, sql, table, alias string, args ...any) error {
	places := placesParam(len(args))
	rows, err := tx.Query(ctx, `WITH u AS (`+strings.Replace(sql, "%s", alias+".ctid = ANY("+places+")", 1)+`)
		SELECT x.id FROM unnest($1::bigint[], `+places+`) AS x(id, at)
		WHERE NOT EXISTS (SELECT 1 FROM `+table+` t WHERE t.ctid = x.at AND t.id = x.id)`, args...)
	if err != nil {
		return err
	}
	moved, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(moved) == 0 {
		return err
	}
	_, err = tx.Exec(ctx, strings.Replace(sql, "%s", fmt.Sprintf("x.id = ANY($%d::bigint[])", len(args)+1), 1), append(args, moved)...)
	return err
}

type updateBatch struct {
	ids, observed         []int64
	resourceAt, queueAt   []string
	phase, conds, message []string
	outputs, state        []*string
	keep                  []bool
	attempt               []int32
	runAt                 []*time.Time
	setRes                []bool
	resolved, origins     []*string
	inputs                []string
	applied               []string
	appliedSpec           []*string
	appliedOrigins        []string
	woActor, woReason     []string
	woAt                  []*time.Time
	manualBy, depBy       []string
}

func (b *updateBatch) add(id int64, c Current, u Update) error {
	cj, err := storableConditions(u.Conditions)
	if err != nil {
		return err
	}
	var outputs, state *string
	if u.Outputs != nil {
		o, err := json.Marshal(u.Outputs)
		if err != nil {
			o = []byte(`{"error":"outputs could not be encoded"}`)
		}
		os := string(storableJSON(o))
		outputs = &os
	}
	if st := storableJSON(u.ActionState); len(st) > 0 {
		sts := string(st)
		state = &sts
	}
	b.ids = append(b.ids, id)
	b.resourceAt, b.queueAt = append(b.resourceAt, c.resourceAt), append(b.queueAt, c.queueAt)
	b.phase = append(b.phase, u.Phase)
	b.observed = append(b.observed, u.ObservedGeneration)
	b.conds = append(b.conds, cj)
	b.outputs = append(b.outputs, outputs)
	b.state = append(b.state, state)
	b.keep = append(b.keep, u.KeepActionState)
	b.message = append(b.message, clip.Storable(u.Message, 8000))
	b.attempt = append(b.attempt, int32(u.Attempt))
	b.runAt = append(b.runAt, u.RunAt)
	var resolved, origins *string
	inputs := ""
	if u.Resolved != nil {
		if rs := storableJSON(u.Resolved.Spec); len(rs) > 0 {
			str := string(rs)
			resolved = &str
			// {} when none: NULL is "not known" (a spec stored before origins were recorded).
			os, err := originsJSON(u.Resolved.Origins)
			if err != nil {
				return err
			}
			origins = &os
		}
		inputs = u.Resolved.Inputs
	}
	b.setRes = append(b.setRes, u.Resolved != nil)
	b.resolved = append(b.resolved, resolved)
	b.origins = append(b.origins, origins)
	b.inputs = append(b.inputs, inputs)
	b.applied = append(b.applied, u.AppliedRevision)
	var aspec *string
	if as := storableJSON(u.AppliedSpec); u.AppliedRevision != "" && len(as) > 0 {
		str := string(as)
		aspec = &str
	}
	b.appliedSpec = append(b.appliedSpec, aspec)
	aorigins := "{}" // the row's own spec when no applied spec is given: nothing from elsewhere
	if aspec != nil {
		var err error
		if aorigins, err = originsJSON(u.AppliedOrigins); err != nil {
			return err
		}
	}
	b.appliedOrigins = append(b.appliedOrigins, aorigins)
	var wo WindowOverride
	var woAt *time.Time
	if u.ClearWindowOverride != nil {
		wo, woAt = *u.ClearWindowOverride, &u.ClearWindowOverride.At
	}
	b.woActor = append(b.woActor, wo.Actor)
	b.woReason = append(b.woReason, wo.Reason)
	b.woAt = append(b.woAt, woAt)
	b.manualBy = append(b.manualBy, u.ManualBy)
	b.depBy = append(b.depBy, u.DependencyBy)
	return nil
}

// sameOverrideTimeSQL compares the stored override's time with the claimed one (x.wo_at) to
// the millisecond: the claim decoded it into a Go time, which jsonb text written by SQL or
// by Go does not give back byte for byte. A stored time that is not one matches nothing.
const sameOverrideTimeSQL = `CASE WHEN r.window_override->>'at' ~ '^\d{4}-\d\d-\d\dT'
	THEN abs(extract(epoch FROM (r.window_override->>'at')::timestamptz - x.wo_at)) < 0.001 ELSE false END`

// originsJSON encodes origins as stored: {} when there are none (NULL means "not known").
func originsJSON(origins map[string][]string) (string, error) {
	if len(origins) == 0 {
		return "{}", nil
	}
	o, err := json.Marshal(origins)
	return string(o), err
}

// RenewLeases extends owner's leases on the given rows (ids, with the tokens they were
// claimed with) in one statement and returns where each renewed row lies now, by token
// (Completion.QueueAt), and the tokens whose lease is gone (expired and released, or retaken
// by another replica): their calls must stop. Rows locked right now (a result being written,
// a spec being applied) are skipped rather than waited for, in id order, so renewal never
// deadlocks with those writes; they are renewed at the next tick. Rows are found through the
// id's index: a renewal costs its own rows whatever the table's size and
// whether or not it was analyzed since a large apply (a filter on the owner alone needs table
// statistics the planner lacks until the first analyze, and without them scans every row).
// The statements run unnamed (pgx.QueryExecModeExec), planned for each renewal's arrays: the
// generic plan a prepared statement switches to after five executions read the whole queue
// (500–950 ms a renewal of 1,000 leases at a million rows, 12–16 ms planned each time). The
// locked rows go to the update as an array (an InitPlan), which it reads by key too.
func (s *Store) RenewLeases(ctx context.Context, owner string, ids []int64, tokens []string, ttl time.Duration) (placed map[string]string, lost []string, err error) {
	if len(tokens) == 0 {
		return nil, nil, nil
	}
	rows, err := s.leases.Query(ctx, `UPDATE resource_queue SET lease_expires_at = now() + $4 * interval '1 millisecond'
		WHERE id = ANY(ARRAY(SELECT id FROM resource_queue WHERE id = ANY($2::bigint[]) AND lease_owner = $1 AND lease_token = ANY($3::text[]::uuid[])
		  ORDER BY id FOR UPDATE SKIP LOCKED)) AND lease_owner = $1 AND lease_token = ANY($3::text[]::uuid[])
		RETURNING lease_token::text, ctid::text`, pgx.QueryExecModeExec, owner, ids, tokens, ttl.Milliseconds())
	if err != nil {
		return nil, nil, fmt.Errorf("renew leases: %w", err)
	}
	if placed, err = scanPlaces(rows, len(tokens)); err != nil {
		return nil, nil, fmt.Errorf("renew leases: %w", err)
	}
	if len(placed) == len(tokens) {
		return placed, nil, nil
	}
	var missing []string
	for _, t := range tokens {
		if _, ok := placed[t]; !ok {
			missing = append(missing, t)
		}
	}
	// Skipped because locked, or gone? A plain read tells.
	rows, err = s.leases.Query(ctx, `SELECT lease_token::text FROM resource_queue WHERE id = ANY($2::bigint[]) AND lease_owner = $1
		AND lease_token = ANY($3::text[]::uuid[])`, pgx.QueryExecModeExec, owner, ids, missing)
	if err != nil {
		return nil, nil, fmt.Errorf("renew leases: %w", err)
	}
	held, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, nil, fmt.Errorf("renew leases: %w", err)
	}
	still := make(map[string]bool, len(held))
	for _, t := range held {
		still[t] = true
	}
	for _, t := range missing {
		if !still[t] {
			lost = append(lost, t)
		}
	}
	return placed, lost, nil
}

// ReleaseExpiredLeases frees leases whose holder stopped renewing (a replica cut off from the
// database; a dead one is normally found at once through its session, see liveness.go), so
// the work is claimed again; each attempt cut short is recorded as Interrupted. The old
// holder's writes fail on the token fence.
func (s *Store) ReleaseExpiredLeases(ctx context.Context, by string) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		n, err = releaseLeased(ctx, tx, `lease_owner IS NOT NULL AND lease_expires_at < now()`, nil, true, by,
			"its lease expired (the replica stopped renewing it)")
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("release expired leases: %w", err)
	}
	return n, nil
}

// NextDue returns when the earliest unleased work is due (nil when nothing is scheduled). It
// reads the first entry of the partial index resource_queue_due, nothing else.
func (s *Store) NextDue(ctx context.Context) (*time.Time, error) {
	return s.NextDueFrom(ctx, time.Time{})
}

// NextDueFrom is NextDue among the rows whose run_at is floor or later (see ClaimFrom).
func (s *Store) NextDueFrom(ctx context.Context, floor time.Time) (*time.Time, error) {
	var t time.Time
	err := s.pool.QueryRow(ctx, `SELECT run_at FROM resource_queue WHERE lease_owner IS NULL AND run_at IS NOT NULL AND NOT suspended AND NOT blocked
		AND run_at >= $1 ORDER BY run_at LIMIT 1`, floor).Scan(&t)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// Release gives owner's leases back without a result (shutdown, or work claimed but not
// started): the items are due again at once, and every replica is told. An item whose call
// had started (a shutdown that cut it short) shows the attempt interrupted (status.Released);
// the others show what they showed before their claim.
func (s *Store) Release(ctx context.Context, owner string, ids []int64, tokens []string) error {
	if len(ids) == 0 {
		return nil
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		// Every given row is locked, in id order, and started_at read from the locked row: a
		// filter on started_at would be evaluated before the lock, skipping a row whose start
		// (Started, holding the lock) commits just after, and the release below would then
		// clear that start with the status still showing the call running.
		rows, err := tx.Query(ctx, `SELECT r.id, r.namespace, r.kind, r.name, r.source, r.generation, r.observed_generation, r.phase,
			  r.conditions, r.deletion_timestamp IS NOT NULL, q.started_at IS NOT NULL
			FROM resources r JOIN resource_queue q ON q.id = r.id JOIN unnest($1::bigint[], $2::text[]::uuid[]) AS x(id, tok) ON q.id = x.id AND q.lease_token = x.tok
			ORDER BY r.id FOR UPDATE OF r, q`, ids, tokens)
		if err != nil {
			return err
		}
		now := time.Now()
		var (
			upIDs         []int64
			phases, conds []string
			cs            []Change
		)
		for rows.Next() {
			var id, gen int64
			var ns, kind, name, src string
			var prev status.State
			var cj []byte
			var deleting, started bool
			if err := rows.Scan(&id, &ns, &kind, &name, &src, &gen, &prev.ObservedGeneration, &prev.Phase, &cj, &deleting, &started); err != nil {
				rows.Close()
				return err
			}
			if !started {
				// Claimed, its call never started: it shows what it showed before.
				continue
			}
			if err := decodeConditions(cj, &prev.Conditions); err != nil {
				rows.Close()
				return err
			}
			st, _ := status.Released(prev, gen, deleting, true, owner, now)
			b, err := storableConditions(st.Conditions)
			if err != nil {
				rows.Close()
				return err
			}
			upIDs, phases, conds = append(upIDs, id), append(phases, st.Phase), append(conds, b)
			cs = append(cs, Change{Object: "resource", Type: ChangeModified, Namespace: ns, Kind: kind, Name: name, Source: src,
				Phase: st.Phase, Generation: gen})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(upIDs) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE resources r SET phase = x.phase, conditions = x.conds::jsonb, status_updated_at = now()
				FROM unnest($1::bigint[], $2::text[], $3::text[]) AS x(id, phase, conds) WHERE r.id = x.id`, upIDs, phases, conds); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE resource_queue q SET lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, started_at = NULL,
			run_at = now(), dirty = false FROM unnest($1::bigint[], $2::text[]::uuid[]) AS x(id, tok)
			WHERE q.id = x.id AND q.lease_token = x.tok`, ids, tokens); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT pg_notify($1, '')", WorkChannel); err != nil {
			return err
		}
		return appendChanges(ctx, tx, cs)
	})
}

// SaveActionState commits a plugin's checkpoint (its intent, before an external side effect),
// fenced by the lease token: it fails with ErrLeaseLost when the lease moved on.
func (s *Store) SaveActionState(ctx context.Context, id int64, token string, state json.RawMessage) error {
	var v any
	if len(state) > 0 {
		if why := UnstorableNumber(state); why != "" {
			return fmt.Errorf("save action state: %s", why)
		}
		v = string(state)
		if st := storableJSON(state); st != nil {
			v = string(st) // what jsonb refuses (a NUL, a lone surrogate, bad UTF-8) as U+FFFD
		}
	}
	// The resources row is locked first (as every writer that ends a lease locks it before
	// the queue row), then the token read by a statement of its own, whose snapshot is taken
	// with the row locked: a release has committed, or has not begun and waits. A join in
	// one statement would check the token of that statement's snapshot, and a release
	// committing meanwhile would not stop the checkpoint.
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM resources WHERE id = $1 FOR NO KEY UPDATE`, id); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE resources r SET action_state = $3::jsonb
			WHERE r.id = $1 AND EXISTS (SELECT 1 FROM resource_queue q WHERE q.id = r.id AND q.lease_token = $2)`, id, token, v)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrLeaseLost
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		return fmt.Errorf("save action state: %w", err)
	}
	return err
}

// QueueStats counts the work queue for metrics.
func (s *Store) QueueStats(ctx context.Context) (due, inFlight, scheduled int, oldestDue time.Duration, err error) {
	var oldest float64
	// Each count reads one partial index (resource_queue_due, resource_queue_lease), not the table.
	err = s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM resource_queue WHERE lease_owner IS NULL AND run_at IS NOT NULL AND NOT suspended AND NOT blocked AND run_at <= now()),
		(SELECT count(*) FROM resource_queue WHERE lease_owner IS NOT NULL),
		(SELECT count(*) FROM resource_queue WHERE lease_owner IS NULL AND run_at IS NOT NULL AND NOT suspended AND NOT blocked AND run_at > now()),
		COALESCE(EXTRACT(EPOCH FROM now() - (SELECT min(run_at) FROM resource_queue
		  WHERE lease_owner IS NULL AND run_at IS NOT NULL AND NOT suspended AND NOT blocked AND run_at <= now())), 0)::float8`).Scan(&due, &inFlight, &scheduled, &oldest)
	return due, inFlight, scheduled, time.Duration(oldest * float64(time.Second)), err
}

// EngineBusy reports whether the engine has work: a lease held, or work due. It reads at most
// the first entry of resource_queue_lease and of resource_queue_due: each is the first row in the
// index's order, which the planner takes from the index whatever the table's statistics say
// (an EXISTS drops the order and needs statistics the planner lacks until the first analyze
// after a large apply; without them it scans every row when nothing is leased).
func (s *Store) EngineBusy(ctx context.Context) (bool, error) {
	var busy bool
	err := s.pool.QueryRow(ctx, `SELECT COALESCE((SELECT true FROM resource_queue WHERE lease_owner IS NOT NULL ORDER BY lease_expires_at LIMIT 1), false)
		OR COALESCE((SELECT true FROM resource_queue WHERE lease_owner IS NULL AND run_at IS NOT NULL AND NOT suspended AND NOT blocked AND run_at <= now()
		  ORDER BY run_at LIMIT 1), false)`).Scan(&busy)
	if err != nil {
		return false, fmt.Errorf("engine busy: %w", err)
	}
	return busy, nil
}
