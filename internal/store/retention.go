package store

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"
)

// RetentionRule bounds a table by age and by rows per resource (zero: no bound).
type RetentionRule struct {
	MaxAge         time.Duration
	MaxPerResource int
}

// Retained counts what EnforceRetention removed.
type Retained struct{ History, Events int64 }

// RetentionMarks are, per table, the highest id whose resource a run has already trimmed:
// the next run only looks at resources with rows above it. Zero means every resource.
type RetentionMarks struct{ History, Events int64 }

// RetentionOptions configure one run of Retain.
type RetentionOptions struct {
	History, Events RetentionRule
	// Since skips, for the per-resource bound, resources without rows above these ids.
	Since RetentionMarks
	// Lease, when set, fences the run: it is checked before every batch, and the run stops
	// with ErrLeaseLost once another holder has it.
	Lease *Lease
	// BatchSize caps the rows one DELETE removes (default 10000), so that no statement holds
	// locks or runs long enough to matter.
	BatchSize int
}

const (
	defaultRetentionBatch = 10_000
	// retentionIdentities is how many resources one per-resource DELETE covers. Fewer means
	// more statements; more means that a batch filled before the last resource is redone
	// from the first (re-reading their kept rows): 100 was fastest on a 2M-row backlog.
	retentionIdentities = 100
	// retentionStatementTimeout bounds each statement of a run; a batch takes milliseconds.
	retentionStatementTimeout = time.Minute
	// changesMaxAge: the watch feed only serves resumption after short disconnections.
	changesMaxAge = time.Hour
)

// retainedTable names what differs between the two bounded tables.
type retainedTable struct{ name, tsCol string }

var (
	historyTable = retainedTable{"reconcile_history", "finished_at"}
	eventsTable  = retainedTable{"events", "created_at"}
)

// EnforceRetention deletes history and events past their rules, looking at every resource.
func (s *Store) EnforceRetention(ctx context.Context, history, events RetentionRule) (Retained, error) {
	out, _, err := s.Retain(ctx, RetentionOptions{History: history, Events: events})
	return out, err
}

// Retain deletes history and events past their rules, and changes older than an hour, in
// bounded batches; then the encrypted files and the recorded revisions (with history's max
// age) that nothing names any more. The per-resource bound only visits resources with rows above o.Since;
// next is the marks to pass to the following run (a table's mark moves past a window of new
// rows once the resources it names are trimmed, so a failed run is picked up where it
// stopped).
//
// A row whose id was taken before the new mark but committed after it was read is first
// seen with its resource's next row; until then that resource may exceed its bound by it.
func (s *Store) Retain(ctx context.Context, o RetentionOptions) (out Retained, next RetentionMarks, err error) {
	if o.BatchSize <= 0 {
		o.BatchSize = defaultRetentionBatch
	}
	next = o.Since
	if out.History, next.History, err = s.retainTable(ctx, historyTable, o.History, o.Since.History, o); err != nil {
		return out, next, fmt.Errorf("history retention: %w", err)
	}
	if out.Events, next.Events, err = s.retainTable(ctx, eventsTable, o.Events, o.Since.Events, o); err != nil {
		return out, next, fmt.Errorf("events retention: %w", err)
	}
	if _, err := s.deleteOlder(ctx, retainedTable{"changes", "created_at"}, changesMaxAge, o); err != nil {
		return out, next, fmt.Errorf("changes retention: %w", err)
	}
	// Encrypted files no resource names any more (edited, removed); an hour old at least,
	// so that a reveal that read the old name a moment ago still finds it.
	if _, err := s.pool.Exec(ctx, `DELETE FROM sealed_files f WHERE f.created_at < now() - interval '1 hour'
		AND NOT EXISTS (SELECT 1 FROM resources r WHERE r.sealed_sha = f.sha256)`); err != nil {
		return out, next, fmt.Errorf("encrypted files retention: %w", err)
	}
	if err := s.foldResourceCounts(ctx); err != nil {
		return out, next, err
	}
	if o.History.MaxAge > 0 {
		if _, err := s.retentionBatch(ctx, o, pruneRevisions, o.History.MaxAge.Milliseconds(), KeptRevisions); err != nil {
			return out, next, fmt.Errorf("source revisions retention: %w", err)
		}
	}
	return out, next, nil
}

// KeptRevisions is how many of each source's newest revisions retention keeps whatever their
// age: the history an operator picks a pin from.
const KeptRevisions = 100

// pruneRevisions deletes the recorded revisions (and their authors) older than history's
// max age ($1, milliseconds) that nothing reads any more: no resource's desired state or
// applied state comes from it, no approval request names it, it is not its source's applied
// or pinned revision, nor one of its $2 (KeptRevisions) newest. One per synced revision, they are
// few: one statement.
const pruneRevisions = `DELETE FROM source_revisions v WHERE v.applied_at < now() - $1 * interval '1 millisecond'
	AND v.revision NOT IN (SELECT w.revision FROM source_revisions w WHERE w.source = v.source
		ORDER BY w.applied_at DESC LIMIT $2)
	AND NOT EXISTS (SELECT 1 FROM resources r WHERE r.source = v.source AND r.revision = v.revision)
	AND NOT EXISTS (SELECT 1 FROM resources r WHERE r.source = v.source AND r.applied_revision = v.revision)
	AND NOT EXISTS (SELECT 1 FROM approval_requests q JOIN resources r ON r.id = q.resource_id
		WHERE r.source = v.source AND q.revision = v.revision)
	AND NOT EXISTS (SELECT 1 FROM sources s WHERE s.name = v.source AND (s.revision = v.revision OR s.pinned_revision = v.revision))`

// LeaseHeld reports whether l is still held: same holder, same term, not expired.
func (s *Store) LeaseHeld(ctx context.Context, l Lease) (bool, error) {
	var held bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM leases
		WHERE name = $1 AND holder = $2 AND term = $3 AND expires_at > now())`, l.Name, l.Holder, l.Term).Scan(&held)
	if err != nil {
		return false, fmt.Errorf("check lease %s: %w", l.Name, err)
	}
	return held, nil
}

// fence stops a run whose lease moved on. Checking between batches (rather than locking the
// lease row for each) never makes a takeover wait; at worst two holders overlap by one
// batch, which deletes nothing the rules did not already condemn.
func (s *Store) fence(ctx context.Context, o RetentionOptions) error {
	if o.Lease == nil {
		return nil
	}
	held, err := s.LeaseHeld(ctx, *o.Lease)
	if err != nil {
		return err
	}
	if !held {
		return fmt.Errorf("lease %s (term %d): %w", o.Lease.Name, o.Lease.Term, ErrLeaseLost)
	}
	return nil
}

func (s *Store) retainTable(ctx context.Context, t retainedTable, r RetentionRule, since int64, o RetentionOptions) (n, mark int64, err error) {
	mark = since
	if r.MaxAge > 0 {
		if n, err = s.deleteOlder(ctx, t, r.MaxAge, o); err != nil {
			return n, mark, err
		}
	}
	if r.MaxPerResource > 0 {
		m, newMark, err := s.trimPerResource(ctx, t, r.MaxPerResource, since, o)
		n, mark = n+m, newMark // the windows done, also when a later one failed
		if err != nil {
			return n, mark, err
		}
	}
	return n, mark, nil
}

// Batched deletes take their ids as `id = ANY(ARRAY(subquery))` rather than `id IN
// (subquery)`: the latter lets the planner hash the batch and scan the whole table for it
// (300 ms a batch at 2M rows, so an O(n²) purge) where the array makes it probe the primary key.

// deleteOlder deletes rows older than maxAge, oldest first, one batch per statement, walking
// the timestamp index so that each batch stops as soon as it is full.
func (s *Store) deleteOlder(ctx context.Context, t retainedTable, maxAge time.Duration, o RetentionOptions) (int64, error) {
	q := `DELETE FROM ` + t.name + ` WHERE id = ANY(ARRAY(SELECT id FROM ` + t.name + `
		WHERE ` + t.tsCol + ` < now() - $1 * interval '1 millisecond' ORDER BY ` + t.tsCol + ` LIMIT $2))`
	var n int64
	for {
		k, err := s.retentionBatch(ctx, o, q, maxAge.Milliseconds(), o.BatchSize)
		n += k
		if err != nil || k < int64(o.BatchSize) {
			return n, err
		}
	}
}

// trimPerResource keeps the keep newest rows of every resource with rows above since, window
// by window of new rows (trimWindows): it reads back those of the resources the window's rows
// name that hold more (trimCandidatesSQL), then, a hundred resources per statement, skips each
// one's newest rows on the identity index and deletes the rest. The mark moves past each
// window once it is done: a run stopped midway (a timeout, the lease lost) leaves the next
// run the windows it did not finish, and a resource still over its bound has a row in them.
func (s *Store) trimPerResource(ctx context.Context, t retainedTable, keep int, since int64, o RetentionOptions) (n, mark int64, err error) {
	if err := s.fence(ctx, o); err != nil {
		return 0, since, err
	}
	qctx, cancel := context.WithTimeout(ctx, retentionStatementTimeout)
	// Reading the mark first leaves rows inserted meanwhile to the next run.
	var top int64
	err = s.pool.QueryRow(qctx, `SELECT COALESCE(max(id), 0) FROM `+t.name).Scan(&top)
	cancel()
	if err != nil || top <= since {
		return 0, since, err
	}
	window := int64(trimProbeRows)
	if s.trimRows > 0 {
		window = int64(s.trimRows)
	}
	mark = since
	q := `DELETE FROM ` + t.name + ` WHERE id = ANY(ARRAY(
		SELECT x.id FROM unnest($1::text[], $2::text[], $3::text[]) AS r(namespace, kind, name)
		CROSS JOIN LATERAL (SELECT id FROM ` + t.name + ` t
			WHERE t.namespace = r.namespace AND lower(t.kind) = r.kind AND t.name = r.name
			ORDER BY t.id DESC OFFSET $4) x
		LIMIT $5))`
	for lo, hi := range trimWindows(since, top, window) {
		if err := s.fence(ctx, o); err != nil {
			return n, mark, err
		}
		nss, kinds, names, err := s.trimCandidates(ctx, t, since, lo, hi, keep)
		if err != nil {
			return n, mark, err
		}
		for i := 0; i < len(names); i += retentionIdentities {
			j := min(i+retentionIdentities, len(names))
			for {
				k, err := s.retentionBatch(ctx, o, q, nss[i:j], kinds[i:j], names[i:j], keep, o.BatchSize)
				n += k
				if err != nil {
					return n, mark, err
				}
				if k < int64(o.BatchSize) {
					break
				}
			}
		}
		mark = hi
	}
	return n, mark, nil
}

// trimCandidates reads back the resources over their bound among those the rows of t in
// (lo, hi] name (trimCandidatesSQL: the counting form when since is zero).
func (s *Store) trimCandidates(ctx context.Context, t retainedTable, since, lo, hi int64, keep int) (nss, kinds, names []string, err error) {
	qctx, cancel := context.WithTimeout(ctx, retentionStatementTimeout)
	defer cancel()
	rows, err := s.pool.Query(qctx, trimCandidatesSQL(t, since), lo, hi, keep)
	if err != nil {
		return nil, nil, nil, err
	}
	var ns, kind, name string
	_, err = pgx.ForEachRow(rows, []any{&ns, &kind, &name}, func() error {
		nss, kinds, names = append(nss, ns), append(kinds, kind), append(names, name)
		return nil
	})
	return nss, kinds, names, err
}

// trimProbeRows is how many ids of new rows one statement of a trim's read-back covers: each
// resource they name is probed on the identity index (up to keep+1 entries and their rows),
// and a statement must end within retentionStatementTimeout whatever the backlog.
const trimProbeRows = 10_000

// trimWindows are the id ranges (lo, hi] a trim from since up to mark reads back resources
// in: the whole range at once from zero (one counting pass), else windows of size ids.
func trimWindows(since, mark, size int64) iter.Seq2[int64, int64] {
	return func(yield func(int64, int64) bool) {
		if since == 0 {
			yield(0, mark)
			return
		}
		for lo := since; lo < mark; lo += size {
			if !yield(lo, min(lo+size, mark)) {
				return
			}
		}
	}
}

// trimCandidatesSQL reads the resources named by the rows of t in ($1, $2] that hold more than
// $3 rows: only those have rows to delete. Rows without a name (source events) belong to no
// resource and have no per-resource bound. From zero, counting (one pass over the table)
// rules out every resource within its bound. From a mark, each resource named by the new rows
// is probed on the identity index for a row past its newest $3 (OFFSET keeps the probe a
// subplan, which reads at most $3+1 entries): after a drain that named every resource once,
// the run reads back only the few to trim, not an identity per resource.
func trimCandidatesSQL(t retainedTable, since int64) string {
	named := `SELECT namespace, lower(kind) AS kind, name FROM ` + t.name + `
		WHERE id > $1 AND id <= $2 AND name <> '' GROUP BY 1, 2, 3`
	if since == 0 {
		return named + ` HAVING count(*) > $3`
	}
	return `SELECT r.namespace, r.kind, r.name FROM (` + named + `) r
		WHERE EXISTS (SELECT 1 FROM ` + t.name + ` x WHERE x.namespace = r.namespace AND lower(x.kind) = r.kind AND x.name = r.name
			ORDER BY x.id DESC OFFSET $3 LIMIT 1)`
}

// retentionBatch runs one fenced, time-bounded DELETE and returns the rows it removed.
func (s *Store) retentionBatch(ctx context.Context, o RetentionOptions, q string, args ...any) (int64, error) {
	if err := s.fence(ctx, o); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, retentionStatementTimeout)
	defer cancel()
	tag, err := s.pool.Exec(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
