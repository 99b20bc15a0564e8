package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/changeplan"
	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/notify"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/status"
)

// SourceError is one validation error of a source's last attempted revision.
type SourceError struct {
	File    string
	Line    int
	Path    string
	Message string
	// Origin names the input the error comes from: a ResourceSet's member
	// ("tenant=a, region=eu") or a render ("rendered by overlays/prod/kustomization.yaml").
	Origin string
}

// Source is a source's row.
type Source struct {
	Name                  string
	URL                   string
	Branch                string
	Path                  string
	Revision              string
	LastAttemptedRevision string
	LastSyncTime          *time.Time
	Conditions            []status.Condition
	Errors                []SourceError
	// From the replica holding the source's lease (absent when none holds it).
	Holder       string
	LastPollTime *time.Time
	// LastCompletedSyncTime is when the last completed sync began: a sync requested before it
	// has applied (or held back, rejected, failed to read) the head, or found nothing new.
	LastCompletedSyncTime *time.Time
	LastWebhookTime       *time.Time
	HeadRevision          string // the remote's head at the last poll
	// LagSeconds is how long the remote head has been ahead of the applied revision (0 when
	// they are equal).
	LagSeconds float64
	// Suspended: an operator suspended the source; it polls but applies nothing.
	// PendingRevision is the head it holds back: suspended, the one it would apply; pinned,
	// the head that is not the pinned revision.
	Suspended       bool
	PendingRevision string
	// Prune is the source's prune settings, as the config running says.
	Prune SourcePrune
	// Pin is the revision an operator pinned the source at (nil: not pinned).
	Pin *SourcePin
}

// SourcePrune is a source's prune: block with the defaults applied.
type SourcePrune struct {
	Enabled     bool
	MaxFraction float64 // 1: the share guard is off
	AllowEmpty  bool
}

// SourceResources counts a source's resources: all of them, by phase, those being deleted,
// and those whose manifests are gone but which pruning kept.
type SourceResources struct {
	Total    int
	Phases   map[string]int
	Deleting int
	Orphaned int
}

// SourceConfig is what the controller config says of a source.
type SourceConfig struct {
	Name, URL, Branch, Path string
	// Prune is nil for the defaults (enabled, maxFraction 0.5, allowEmpty false).
	Prune *SourcePrune
}

// RegisterSource creates or updates a source's configured fields (at start, not per poll).
func (s *Store) RegisterSource(ctx context.Context, c SourceConfig) error {
	now := time.Now()
	conds, _ := json.Marshal(status.Initial(now))
	pr := SourcePrune{Enabled: true}
	if c.Prune != nil {
		pr = *c.Prune
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO sources (name, url, branch, path, conditions, prune_enabled, prune_max_fraction, prune_allow_empty)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (name) DO UPDATE SET url = excluded.url, branch = excluded.branch, path = excluded.path,
		  prune_enabled = excluded.prune_enabled, prune_max_fraction = excluded.prune_max_fraction,
		  prune_allow_empty = excluded.prune_allow_empty, updated_at = now()
		WHERE (sources.url, sources.branch, sources.path, sources.prune_enabled, sources.prune_max_fraction, sources.prune_allow_empty)
		  IS DISTINCT FROM (excluded.url, excluded.branch, excluded.path, excluded.prune_enabled, excluded.prune_max_fraction, excluded.prune_allow_empty)`,
		c.Name, c.URL, c.Branch, c.Path, conds, pr.Enabled, pr.MaxFraction, pr.AllowEmpty)
	if err != nil {
		return fmt.Errorf("register source %s: %w", c.Name, err)
	}
	return nil
}

const sourceColumns = `name, url, branch, path, revision, last_attempted_revision, last_sync_time, conditions, errors,
	suspended, pending_revision, prune_enabled, prune_max_fraction, prune_allow_empty,
	pinned_revision, pinned_by, pin_reason, pinned_at`

// sourceRuntime joins what the lease holder published in its heartbeat.
const sourceRuntime = `, COALESCE((SELECT l.holder FROM leases l WHERE l.name = 'source:' || sources.name AND l.expires_at > now()), ''),
	(SELECT r.sources -> sources.name FROM leases l JOIN replicas r ON r.name = l.holder
	 WHERE l.name = 'source:' || sources.name AND l.expires_at > now())`

func scanSource(row pgx.Row) (Source, error) {
	var src Source
	var conds, errs []byte
	var pin SourcePin
	var pinnedAt *time.Time
	if err := row.Scan(&src.Name, &src.URL, &src.Branch, &src.Path, &src.Revision, &src.LastAttemptedRevision,
		&src.LastSyncTime, &conds, &errs, &src.Suspended, &src.PendingRevision, &src.Prune.Enabled, &src.Prune.MaxFraction, &src.Prune.AllowEmpty,
		&pin.Revision, &pin.Actor, &pin.Reason, &pinnedAt); err != nil {
		return src, err
	}
	setPin(&src, pin, pinnedAt)
	return src, decodeSource(&src, conds, errs)
}

// scanSourceRuntime scans sourceColumns + sourceRuntime.
func scanSourceRuntime(row pgx.Row) (Source, error) {
	var src Source
	var conds, errs, rt []byte
	var pin SourcePin
	var pinnedAt *time.Time
	if err := row.Scan(&src.Name, &src.URL, &src.Branch, &src.Path, &src.Revision, &src.LastAttemptedRevision,
		&src.LastSyncTime, &conds, &errs, &src.Suspended, &src.PendingRevision, &src.Prune.Enabled, &src.Prune.MaxFraction, &src.Prune.AllowEmpty,
		&pin.Revision, &pin.Actor, &pin.Reason, &pinnedAt, &src.Holder, &rt); err != nil {
		return src, err
	}
	setPin(&src, pin, pinnedAt)
	if len(rt) > 0 {
		var r struct {
			LastPoll, LastWebhook, HeadSeen, Completed *time.Time
			Head                                       string
		}
		if err := json.Unmarshal(rt, &r); err == nil {
			src.LastPollTime, src.LastWebhookTime, src.HeadRevision = r.LastPoll, r.LastWebhook, r.Head
			src.LastCompletedSyncTime = r.Completed
			if r.Head != "" && r.Head != src.Revision && r.HeadSeen != nil {
				src.LagSeconds = time.Since(*r.HeadSeen).Seconds()
			}
		}
	}
	return src, decodeSource(&src, conds, errs)
}

// setPin sets src.Pin from the pinned_* columns (an empty revision: not pinned).
func setPin(src *Source, pin SourcePin, at *time.Time) {
	if pin.Revision == "" {
		return
	}
	if at != nil {
		pin.At = *at
	}
	src.Pin = &pin
}

func decodeSource(src *Source, conds, errs []byte) error {
	src.Prune.MaxFraction = changeplan.MaxFraction(src.Prune.MaxFraction)
	if err := json.Unmarshal(conds, &src.Conditions); err != nil {
		return err
	}
	var err error
	src.Errors, err = decodeSourceErrors(errs)
	return err
}

// GetSource returns one source, or ErrNotFound.
func (s *Store) GetSource(ctx context.Context, name string) (Source, error) {
	return s.GetSourceIn(ctx, Everything, name)
}

// GetSourceIn returns one source if the scope sees it (Scope.sourceWhere); one it does not see
// gives the very error of a missing source.
func (s *Store) GetSourceIn(ctx context.Context, sc Scope, name string) (Source, error) {
	args := params{name}
	q := "SELECT " + sourceColumns + sourceRuntime + " FROM sources WHERE name = $1"
	if w := sc.sourceWhere("sources.name", args.add); w != "" {
		q += " AND " + w
	}
	src, err := scanSourceRuntime(s.reader().QueryRow(ctx, q, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return src, fmt.Errorf("source %s: %w", name, ErrNotFound)
	}
	return src, err
}

// SourceResourceCounts counts the resources of source name in the scope's namespaces.
func (s *Store) SourceResourceCounts(ctx context.Context, sc Scope, name string) (SourceResources, error) {
	if sc.All() {
		return s.sourceResourceTotals(ctx, name)
	}
	args := params{name}
	q := `SELECT phase, count(*), count(*) FILTER (WHERE deletion_timestamp IS NOT NULL), count(*) FILTER (WHERE orphaned)
		FROM resources WHERE source = $1`
	if !sc.All() {
		q += " AND namespace = ANY(" + args.add(sc.Namespaces()) + "::text[])"
	}
	rows, err := s.reader().Query(ctx, q+" GROUP BY phase", args...)
	if err != nil {
		return SourceResources{}, fmt.Errorf("count resources of source %s: %w", name, err)
	}
	defer rows.Close()
	out := SourceResources{Phases: map[string]int{}}
	for rows.Next() {
		var phase string
		var n, deleting, orphaned int
		if err := rows.Scan(&phase, &n, &deleting, &orphaned); err != nil {
			return SourceResources{}, err
		}
		out.Phases[phase] = n
		out.Total += n
		out.Deleting += deleting
		out.Orphaned += orphaned
	}
	return out, rows.Err()
}

// sourceTotalsSQL is sourceResourceTotals' statement ($1: the source).
const sourceTotalsSQL = `
		SELECT 'total', '', COALESCE((SELECT sum(n) FROM resource_counts WHERE source = $1), 0)::bigint
		UNION ALL SELECT 'phase', phase, count(*) FROM resource_phases WHERE source = $1 AND phase <> 'Ready' GROUP BY phase
		UNION ALL SELECT 'deleting', '', count(*) FROM resources WHERE source = $1 AND deletion_timestamp IS NOT NULL
		UNION ALL SELECT 'orphaned', '', count(*) FROM resources WHERE source = $1 AND orphaned`

// sourceResourceTotals counts a source's resources in every namespace without reading its
// rows (a million rows took seconds): the total from resource_counts, the phases other than
// Ready from resource_phases_unsettled, Ready the rest, and the deleting and orphaned ones
// through their partial indexes.
func (s *Store) sourceResourceTotals(ctx context.Context, name string) (SourceResources, error) {
	rows, err := s.reader().Query(ctx, sourceTotalsSQL, name)
	if err != nil {
		return SourceResources{}, fmt.Errorf("count resources of source %s: %w", name, err)
	}
	out := SourceResources{Phases: map[string]int{}}
	var what, phase string
	var n int
	unsettled := 0
	_, err = pgx.ForEachRow(rows, []any{&what, &phase, &n}, func() error {
		switch what {
		case "total":
			out.Total = n
		case "phase":
			out.Phases[phase] = n
			unsettled += n
		case "deleting":
			out.Deleting = n
		case "orphaned":
			out.Orphaned = n
		}
		return nil
	})
	if err != nil {
		return SourceResources{}, fmt.Errorf("count resources of source %s: %w", name, err)
	}
	if ready := out.Total - unsettled; ready > 0 {
		out.Phases[status.PhaseReady] = ready
	}
	return out, nil
}

// ListSources returns the sources the scope sees (Scope.sourceWhere), by name.
func (s *Store) ListSources(ctx context.Context, sc Scope) ([]Source, error) {
	var args params
	q := "SELECT " + sourceColumns + sourceRuntime + " FROM sources"
	if w := sc.sourceWhere("sources.name", args.add); w != "" {
		q += " WHERE " + w
	}
	rows, err := s.reader().Query(ctx, q+" ORDER BY name", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Source
	for rows.Next() {
		src, err := scanSourceRuntime(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, src)
	}
	return out, rows.Err()
}

// SyncFailure records that revision could not be applied; nothing else changes.
type SyncFailure struct {
	Source   string
	Revision string // may be "" when the head could not even be read
	Reason   string // CamelCase: FetchFailed, ValidationFailed, …
	Message  string
	Errors   []SourceError
	Lease    *Lease
}

// RecordSyncFailure sets the source's Ready=False with every error, and an event.
func (s *Store) RecordSyncFailure(ctx context.Context, f SyncFailure) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		src, err := scanSource(tx.QueryRow(ctx, "SELECT "+sourceColumns+" FROM sources WHERE name = $1 FOR UPDATE", f.Source))
		if err != nil {
			return fmt.Errorf("record sync failure of %s: %w", f.Source, err)
		}
		conds := status.SourceFailed(src.Conditions, f.Reason, f.Message, time.Now())
		if f.Errors == nil {
			f.Errors = []SourceError{}
		}
		cj, _ := json.Marshal(conds)
		ej := encodeSourceErrors(f.Errors)
		attempted := f.Revision
		if attempted == "" {
			attempted = src.LastAttemptedRevision
		}
		if _, err := tx.Exec(ctx, `UPDATE sources SET last_attempted_revision = $2, conditions = $3, errors = $4, updated_at = now() WHERE name = $1`,
			f.Source, attempted, cj, ej); err != nil {
			return err
		}
		if err := checkLease(ctx, tx, f.Lease); err != nil {
			return err
		}
		// One Warning (and one watch change) per distinct failure, not one per poll.
		if status.NewSourceFailure(src.Conditions, src.LastAttemptedRevision, f.Message, attempted) {
			if err := appendChanges(ctx, tx, []Change{{Object: "source", Type: ChangeModified, Name: f.Source, Source: f.Source}}); err != nil {
				return err
			}
			for _, ev := range notify.SourceEvents(notify.Source{Revision: src.Revision, Attempted: src.LastAttemptedRevision, Conditions: src.Conditions},
				notify.Source{Revision: src.Revision, Attempted: attempted, Conditions: conds}) {
				if err := insertOutbox(ctx, tx, []OutboxEntry{{Event: ev, Kind: "Source", Name: f.Source, Source: f.Source, Revision: attempted,
					Phase: "Rejected", Message: syncFailureText(f)}}); err != nil {
					return err
				}
			}
			return insertEvent(ctx, tx, Event{Source: f.Source, Type: EventWarning, Reason: f.Reason, Message: clip.Storable(f.Message, 4000)})
		}
		return nil
	})
}

// syncFailureText is the failure's message with its file:line errors, one a line.
func syncFailureText(f SyncFailure) string {
	var b strings.Builder
	b.WriteString(f.Message)
	for _, e := range f.Errors {
		b.WriteString("\n")
		if e.File != "" {
			fmt.Fprintf(&b, "%s:%d", e.File, e.Line)
			if e.Origin != "" {
				fmt.Fprintf(&b, " (%s)", e.Origin)
			}
			b.WriteString(": ")
		}
		b.WriteString(e.Message)
	}
	return b.String()
}

// ApplyParams is one validated revision of one source.
type ApplyParams struct {
	Source   string
	Revision string
	// Author is the revision's commit author (zero when the source has none), recorded once
	// per revision in source_revisions for policies (RevisionAuthor).
	Author policy.Author
	Set    *manifest.Set
	Prune  bool
	// AllowEmpty lets a revision without resources delete every resource of the source
	// (prune.allowEmpty; the share guard does not apply to it).
	AllowEmpty bool
	// NoManifests says the revision's snapshot holds no manifest file: it never prunes,
	// whatever AllowEmpty says (changeplan.PruneGuard).
	NoManifests bool
	// MaxPruneFraction refuses to delete more than this share of the source's resources in
	// one revision (0 means the default 0.5; 1 turns the guard off).
	MaxPruneFraction float64
	Replica          string
	// Lease, when set, must still be held at commit (the source's singleton lease).
	Lease *Lease
	// BatchSize is how many resources one statement writes (0 means DefaultApplyBatch).
	// The revision is still applied in one transaction.
	BatchSize int
	// BulkCreate is how many created resources a revision records one by one (0 means
	// DefaultBulkCreate); beyond it, one event and one re-list change stand for them all.
	BulkCreate int
	// Pinned is the pin the sync applies under ("" unpinned): when the source's pin is
	// another by the time the revision is written, nothing is applied (ErrPinChanged).
	Pinned string
	// Files are the revision's files, path → content hash (manifest.Set.Files), and, at
	// changeplan.FilesBasis, what else its resources were judged with: the apply compares
	// only the resources of files changed since the last apply that had them. nil compares
	// every resource.
	Files map[string]string
}

// ApplyResult counts what a revision changed.
type ApplyResult struct {
	Created, Updated, Relabelled, Deleted, Unchanged int
	TypesChanged, TypesRemoved                       int
	// Orphaned counts resources whose manifests are gone but which pruning kept.
	Orphaned int
	// TypeRequeued reports that a changed type put its resources back in the queue.
	TypeRequeued bool
	// PruneSkipped names the guard that stopped pruning this revision ("" when none did).
	PruneSkipped, PruneMessage string
	// Held: the source is suspended; nothing was applied, the revision is its pendingRevision.
	Held bool
	// Requested counts resources whose trueup.dev/reconcile-requested-at annotation changed
	// (a meta-only change that runs them now).
	Requested int
	// Refresh lists the rows whose wait for dependencies (or, deleting, for dependents) may
	// have changed: pass it to RefreshDependencies once the revision is committed.
	Refresh []int64
	// Settle: the revision created many rows; call SettleAfterBulk once the refresh is done.
	Settle bool
}

// Changed reports whether anything but the source row was written.
func (r ApplyResult) Changed() bool {
	return r.Created+r.Updated+r.Relabelled+r.Deleted+r.TypesChanged+r.TypesRemoved > 0
}

// ConflictError reports identities that another source already declares; it carries
// manifest.Errors so the source shows file:line like any validation error.
type ConflictError struct{ Errors manifest.Errors }

func (e *ConflictError) Error() string { return e.Errors.Error() }

// ApplyRevision writes a validated revision in ONE transaction: types, resources (generation+1
// only where the spec changed), removals marked for deletion, its ResourceSets, the source's
// revision and conditions, events, and one NOTIFY when work was created. Unchanged rows are not written.
func (s *Store) ApplyRevision(ctx context.Context, p ApplyParams) (ApplyResult, error) {
	var res ApplyResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		res = ApplyResult{}
		// Serialise syncs of one source across replicas, and refuse a holder that lost its lease.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('trueup.source:' || $1))", p.Source); err != nil {
			return err
		}
		if err := leaseCurrent(ctx, tx, p.Lease); err != nil {
			return err
		}
		if err := applyRevision(ctx, tx, p, &res); err != nil {
			return err
		}
		// The fence, last: an apply may last many leaseTTLs, renewed meanwhile by the lease
		// loop; a takeover while it worked makes it fail here, and none can commit between
		// this check and the commit.
		return checkLease(ctx, tx, p.Lease)
	})
	if err != nil {
		return ApplyResult{}, fmt.Errorf("apply %s@%s: %w", p.Source, clip.Rev(p.Revision), err)
	}
	if res.Created >= analyzeAfterCreated {
		// The claim's plan needs the queue's statistics: without them the planner takes the
		// due rows for a handful and checks the dependencies of every one of them before
		// sorting, a pass over the whole table per claim until autovacuum's first analyze.
		// Best effort (48 ms at 50,000): the apply has committed, and autovacuum analyzes the
		// table in time. The rest waits for SettleAfterBulk.
		_, _ = s.pool.Exec(ctx, "ANALYZE (SKIP_LOCKED) resource_queue")
		res.Settle = true
	}
	return res, nil
}

// analyzeAfterCreated is how many rows an apply creates before it asks for SettleAfterBulk.
const analyzeAfterCreated = 5000

// SettleAfterBulk prepares the planner and the GIN indexes of resources for the rows a
// large apply created (ApplyResult.Settle; the apply itself analyzed resource_queue), at
// once rather than at autovacuum's first pass a minute or more later; the syncer calls it
// after the revision's dependency refresh, which must not wait for it (ANALYZE resources
// takes about a second at 50,000 rows). Best effort: autovacuum does the same in time, so a
// table another session holds (an anti-wraparound vacuum) is skipped rather than waited for.
//   - The claim's plan needs the queue's statistics: without them the planner takes the due
//     rows for a handful and checks the dependencies of every one of them before sorting, a
//     pass over the whole table per claim.
//   - A list with a label selector needs those of resources: without them the planner
//     expects one row in fifty to match and walks the list's order through the identity
//     index, every row of it for a selector that matches nothing (110 ms at 50,000), where
//     the labels index answers at once.
//   - The list's phase filters, the overview's counts and the recent failures need those of
//     resource_phases: whether a phase holds few rows (read through its partial indexes) or
//     most of them (checked row by row along the list's order).
//   - Every index scan of a GIN index reads its whole pending list (up to 4 MB of entries
//     not yet merged, 8 ms for a label selector at 50,000); merged, it reads what matches.
func (s *Store) SettleAfterBulk(ctx context.Context) error {
	for _, q := range []string{"ANALYZE (SKIP_LOCKED) resources, resource_phases",
		`SELECT gin_clean_pending_list(i.indexrelid) FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
		WHERE i.indrelid = 'resources'::regclass AND a.amname = 'gin'`} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("settle after a bulk apply: %w", err)
		}
	}
	return nil
}

// applyRevision is ApplyRevision's work inside its transaction, between the lease checks.
func applyRevision(ctx context.Context, tx pgx.Tx, p ApplyParams, res *ApplyResult) error {
	var suspended bool
	var pinned string
	err := tx.QueryRow(ctx, "SELECT suspended, pinned_revision FROM sources WHERE name = $1 FOR UPDATE", p.Source).Scan(&suspended, &pinned)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if pinned != p.Pinned {
		return fmt.Errorf("%w: pinned at %q, applying under %q", ErrPinChanged, clip.Rev(pinned), clip.Rev(p.Pinned))
	}
	if suspended {
		res.Held = true
		return holdRevision(ctx, tx, p)
	}
	// The apply finds rows by identity (namespace, kind, name) and by id, which the btree
	// indexes serve. With a list of identities joined in, the planner estimated a probe of
	// the name's trigram index (a GIN index, read only through bitmap scans) as cheaper than
	// one of the identity index, 5–8 ms per identity at 100,000 rows; migration 0032 puts
	// that index on lower(name), which no equality names, and the apply's statements need no
	// bitmap scan either way.
	if _, err := tx.Exec(ctx, "SET LOCAL enable_bitmapscan = off"); err != nil {
		return err
	}
	sc, err := scopeOf(ctx, tx, p)
	if err != nil {
		return err
	}
	if err := checkConflicts(ctx, tx, p, &sc); err != nil {
		return err
	}
	if err := checkCycles(ctx, tx, p, true); err != nil {
		return err
	}
	if err := applyTypes(ctx, tx, p, res); err != nil {
		return err
	}
	if err := applyResources(ctx, tx, p, sc, res); err != nil {
		return err
	}
	if err := applyResourceSets(ctx, tx, p); err != nil {
		return err
	}
	if err := finishSource(ctx, tx, p, *res); err != nil {
		return err
	}
	if res.Created+res.Updated+res.Relabelled+res.Deleted+res.Requested > 0 || res.TypeRequeued {
		if _, err := tx.Exec(ctx, "SELECT pg_notify($1, '')", WorkChannel); err != nil {
			return err
		}
	}
	return nil
}

// requeueKind gives every live resource of kind a new generation (its type's action changed).
// It returns the ids of the rows it requeued: their dependents wait again.
func requeueKind(ctx context.Context, tx pgx.Tx, kind, revision string) ([]int64, error) {
	rows, err := tx.Query(ctx, `SELECT id FROM resources WHERE lower(kind) = lower($1) AND deletion_timestamp IS NULL ORDER BY id FOR UPDATE`, kind)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	return ids, chunks(len(ids), DefaultApplyBatch, func(lo, hi int) error {
		phases, conds, err := newGenerations(ctx, tx, ids[lo:hi])
		if err != nil {
			return err
		}
		if _, err = tx.Exec(ctx, `UPDATE resources r SET generation = r.generation + 1, updated_at = now(), revision = $1,
			attempt = 0, phase = x.phase, conditions = x.conds::jsonb
			FROM unnest($2::bigint[], $3::text[], $4::text[]) AS x(id, phase, conds)
			WHERE r.id = x.id AND x.phase IS NOT NULL`, revision, ids[lo:hi], phases, conds); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE resource_queue q SET run_at = now(), dirty = q.lease_owner IS NOT NULL
			FROM unnest($1::bigint[], $2::text[]) AS x(id, phase) WHERE q.id = x.id AND x.phase IS NOT NULL`, ids[lo:hi], phases)
		return err
	})
}

// newGenerations derives, with status.NewGeneration, the phase and conditions of the rows ids
// after their generation grows by one; the results are aligned with ids (nil for a row that
// is gone). The rows must be locked by the caller's transaction.
func newGenerations(ctx context.Context, tx pgx.Tx, ids []int64) (phases []*string, conds []*string, err error) {
	return deriveStatus(ctx, tx, ids, func(s status.State, gen int64, now time.Time) status.State {
		return status.NewGeneration(s, gen+1, now)
	})
}

// deriveStatus reads the status of the rows ids and returns what rule makes of it, aligned
// with ids (nil for a row that is gone).
func deriveStatus(ctx context.Context, tx pgx.Tx, ids []int64, rule func(s status.State, gen int64, now time.Time) status.State) (phases []*string, conds []*string, err error) {
	rows, err := tx.Query(ctx, `SELECT id, phase, generation, observed_generation, conditions FROM resources WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, nil, err
	}
	type st struct {
		s   status.State
		gen int64
	}
	cur := make(map[int64]st, len(ids))
	for rows.Next() {
		var id int64
		var x st
		var cj []byte
		if err := rows.Scan(&id, &x.s.Phase, &x.gen, &x.s.ObservedGeneration, &cj); err != nil {
			rows.Close()
			return nil, nil, err
		}
		if err := json.Unmarshal(cj, &x.s.Conditions); err != nil {
			rows.Close()
			return nil, nil, err
		}
		cur[id] = x
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	now := time.Now()
	phases, conds = make([]*string, len(ids)), make([]*string, len(ids))
	for i, id := range ids {
		x, ok := cur[id]
		if !ok {
			continue
		}
		n := rule(x.s, x.gen, now)
		b, err := json.Marshal(n.Conditions)
		if err != nil {
			return nil, nil, err
		}
		ph, cs := n.Phase, string(b)
		phases[i], conds[i] = &ph, &cs
	}
	return phases, conds, nil
}

// WorkChannel is the NOTIFY channel announcing due work.
const WorkChannel = "trueup_work"

func checkConflicts(ctx context.Context, tx pgx.Tx, p ApplyParams, sc *applyScope) error {
	var errs manifest.Errors
	typeNames := make([]string, len(p.Set.Types))
	for i, t := range p.Set.Types {
		typeNames[i] = t.Name
	}
	rows, err := tx.Query(ctx, `SELECT name, source, file_path FROM resource_types
		WHERE lower(name) = ANY(SELECT lower(x) FROM unnest($1::text[]) x) AND source <> $2`, typeNames, p.Source)
	if err != nil {
		return err
	}
	owners := map[string][2]string{}
	for rows.Next() {
		var n, src, file string
		if err := rows.Scan(&n, &src, &file); err != nil {
			rows.Close()
			return err
		}
		owners[lowerASCII(n)] = [2]string{src, file}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range p.Set.Types {
		if o, ok := owners[lowerASCII(t.Name)]; ok {
			errs = append(errs, manifest.ValidationError{File: t.File, Line: t.Line, Path: "metadata.name",
				Msg: fmt.Sprintf("ResourceType %s is already declared by source %s (%s)", t.Name, o[0], o[1])})
		}
	}

	// In pieces, like the writes: one statement naming every resource of a large revision
	// would hold all their identities several times over while the driver encodes them.
	// A resource of a file unchanged since the last apply was checked then, and no source
	// has declared it since: that source's apply would have met it here.
	taken := map[string][2]string{}
	err = chunks(sc.len(p), p.batchSize(), func(lo, hi int) error {
		n := hi - lo
		ns, kinds, names := make([]string, n), make([]string, n), make([]string, n)
		for k := range n {
			r := p.Set.At(sc.at(lo + k))
			ns[k], kinds[k], names[k] = r.Namespace, lowerASCII(r.Kind), r.Name
		}
		rows, err := tx.Query(ctx, `SELECT r.namespace, lower(r.kind), r.name, r.source, r.file_path
			FROM resources r JOIN unnest($1::text[], $2::text[], $3::text[]) AS x(ns, kind, name)
			  ON r.namespace = x.ns AND lower(r.kind) = x.kind AND r.name = x.name
			WHERE r.source <> $4`, ns, kinds, names, p.Source)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var a, b, c, src, file string
			if err := rows.Scan(&a, &b, &c, &src, &file); err != nil {
				return err
			}
			taken[a+"/"+b+"/"+c] = [2]string{src, file}
		}
		return rows.Err()
	})
	if err != nil {
		return err
	}
	if len(taken) > 0 {
		for _, r := range p.Set.All() {
			if o, ok := taken[r.Namespace+"/"+lowerASCII(r.Kind)+"/"+r.Name]; ok {
				errs = append(errs, manifest.ValidationError{File: r.File, Line: r.Line, Path: "metadata.name",
					Msg: fmt.Sprintf("%s %s/%s is already declared by source %s (%s)", r.Kind, r.Namespace, r.Name, o[0], o[1])})
			}
		}
	}
	setErrs, err := resourceSetConflicts(ctx, tx, p)
	if err != nil {
		return err
	}
	if errs = append(errs, setErrs...); len(errs) > 0 {
		return &ConflictError{Errors: errs}
	}
	return nil
}

// applyTypes writes the revision's types as their change plan (changeplan.PlanTypes) says.
func applyTypes(ctx context.Context, tx pgx.Tx, p ApplyParams, res *ApplyResult) error {
	rows, err := tx.Query(ctx, "SELECT name, hash FROM resource_types WHERE source = $1", p.Source)
	if err != nil {
		return err
	}
	applied, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (changeplan.Type, error) {
		var t changeplan.Type
		err := row.Scan(&t.Name, &t.Spec)
		return t, err
	})
	if err != nil {
		return err
	}
	desired := make([]changeplan.Type, len(p.Set.Types))
	for i, t := range p.Set.Types {
		desired[i] = changeplan.Type{Name: t.Name, Spec: t.Hash}
	}
	plan := changeplan.PlanTypes(desired, applied)
	for i, t := range p.Set.Types {
		if plan.Steps[i].Op == changeplan.Unchanged {
			continue
		}
		var resync *int64
		if t.ResyncInterval != nil {
			ms := t.ResyncInterval.Milliseconds()
			resync = &ms
		}
		var with, drift any
		if len(t.Action.With) > 0 {
			with = string(t.Action.With)
		}
		if t.Drift != nil {
			b, err := json.Marshal(t.Drift)
			if err != nil {
				return fmt.Errorf("encode drift of type %s: %w", t.Name, err)
			}
			drift = string(b)
		}
		// What changes for the type's resources: a new action or with: is a new desired
		// state (a new generation); a new resync interval reschedules resync.
		var actionChanged, resyncChanged bool
		if plan.Steps[i].Op == changeplan.Update {
			if err := tx.QueryRow(ctx, `SELECT action_name <> $2 OR action_with IS DISTINCT FROM $3::jsonb,
				resync_interval_ms IS DISTINCT FROM $4 FROM resource_types WHERE name = $1`,
				t.Name, t.Action.Name, with, resync).Scan(&actionChanged, &resyncChanged); err != nil {
				return fmt.Errorf("compare type %s: %w", t.Name, err)
			}
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO resource_types (name, grp, source, file_path, file_line, revision, spec, hash, action_name, action_with, resync_interval_ms, drift)
			VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10::jsonb, $11, $12::jsonb)
			ON CONFLICT ((lower(name))) DO UPDATE SET name = excluded.name, grp = excluded.grp, source = excluded.source,
			  file_path = excluded.file_path, file_line = excluded.file_line, revision = excluded.revision, spec = excluded.spec,
			  hash = excluded.hash, action_name = excluded.action_name, action_with = excluded.action_with,
			  resync_interval_ms = excluded.resync_interval_ms, drift = excluded.drift, updated_at = now()
			WHERE resource_types.source = excluded.source`,
			t.Name, t.Group, p.Source, t.File, t.Line, p.Revision, string(t.Spec), t.Hash, t.Action.Name, with, resync, drift)
		if err != nil {
			return fmt.Errorf("upsert type %s: %w", t.Name, err)
		}
		if tag.RowsAffected() == 0 {
			// Another source declared it between our conflict check and now.
			return &ConflictError{Errors: manifest.Errors{{File: t.File, Line: t.Line, Path: "metadata.name",
				Msg: fmt.Sprintf("ResourceType %s is already declared by another source", t.Name)}}}
		}
		res.TypesChanged++
		switch {
		case actionChanged:
			ids, err := requeueKind(ctx, tx, t.Name, p.Revision)
			if err != nil {
				return fmt.Errorf("requeue resources of %s: %w", t.Name, err)
			}
			// A new generation: their dependents wait again (RefreshDependencies after the commit).
			deps, err := dependentsOf(ctx, tx, ids)
			if err != nil {
				return fmt.Errorf("requeue resources of %s: %w", t.Name, err)
			}
			res.Refresh = append(res.Refresh, deps...)
			res.TypeRequeued = true
		case resyncChanged:
			if _, err := tx.Exec(ctx, `UPDATE resource_queue q SET run_at = now() FROM resources r
				WHERE r.id = q.id AND lower(r.kind) = lower($1) AND q.run_at IS NULL AND r.phase = 'Ready' AND q.lease_owner IS NULL`, t.Name); err != nil {
				return fmt.Errorf("reschedule resources of %s: %w", t.Name, err)
			}
			res.TypeRequeued = true
		}
	}
	// A removed type goes once no resource of its kind is left (their deletes need its action).
	removed := make([]string, len(plan.Removed))
	for k, j := range plan.Removed {
		removed[k] = applied[j].Name
	}
	tag, err := tx.Exec(ctx, `DELETE FROM resource_types t WHERE t.source = $1 AND t.name = ANY($2::text[])
		AND NOT EXISTS (SELECT 1 FROM resources r WHERE lower(r.kind) = lower(t.name))`, p.Source, removed)
	if err != nil {
		return err
	}
	res.TypesRemoved = int(tag.RowsAffected())
	return nil
}

// PruneSettings are the prune settings p applies under, the defaults applied.
func (p ApplyParams) PruneSettings() SourcePrune {
	return SourcePrune{Enabled: p.Prune, MaxFraction: changeplan.MaxFraction(p.MaxPruneFraction), AllowEmpty: p.AllowEmpty}
}

// plannedPrune are p's prune settings as the change plan takes them.
func (p ApplyParams) plannedPrune() changeplan.Prune {
	return changeplan.Prune{Enabled: p.Prune, MaxFraction: p.MaxPruneFraction, AllowEmpty: p.AllowEmpty}
}

// PruneRefusal returns the prune settings the source's standing PruneSkipped refusal was made
// under, or nil when none stands (or it was recorded before they were).
func (s *Store) PruneRefusal(ctx context.Context, source string) (*SourcePrune, error) {
	var under []byte
	if err := s.pool.QueryRow(ctx, `SELECT prune_refused_under FROM sources WHERE name = $1`, source).Scan(&under); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("read prune refusal of source %s: %w", source, err)
	}
	if under == nil {
		return nil, nil
	}
	pr, err := decodePrune(under)
	if err != nil {
		return nil, fmt.Errorf("read prune refusal of source %s: %w", source, err)
	}
	return &pr, nil
}

func finishSource(ctx context.Context, tx pgx.Tx, p ApplyParams, res ApplyResult) error {
	src, err := scanSource(tx.QueryRow(ctx, "SELECT "+sourceColumns+" FROM sources WHERE name = $1 FOR UPDATE", p.Source))
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("source %s is not registered", p.Source)
	}
	if err != nil {
		return err
	}
	cj, _ := json.Marshal(status.SourceApplied(src.Conditions, sourceApply(p, res), time.Now()))
	var under []byte // NULL: no refusal stands
	if res.PruneSkipped != "" {
		under = encodePrune(p.PruneSettings())
	}
	// The revision's author and namespaces ride on the same statement: a sync costs no extra
	// round trip. A revision applied again (a pin, a revert) counts as applied from now in the
	// history.
	_, err = tx.Exec(ctx, `WITH rev AS (INSERT INTO source_revisions (source, revision, author_name, author_email, namespaces)
		  VALUES ($1, $2, $5, $6, $7) ON CONFLICT (source, revision) DO UPDATE SET applied_at = now(), namespaces = EXCLUDED.namespaces)
		UPDATE sources SET revision = $2, last_attempted_revision = $2, last_sync_time = now(),
		conditions = $3, errors = '[]', prune_refused_under = $4, updated_at = now() WHERE name = $1`,
		p.Source, p.Revision, cj, under, p.Author.Name, p.Author.Email, setNamespaces(p.Set))
	return err
}

// setNamespaces returns the namespaces set has resources in, sorted.
func setNamespaces(set *manifest.Set) []string {
	if set == nil {
		return []string{}
	}
	return set.Namespaces()
}

// RevisionAuthor is the commit author that source's sync recorded for revision: zero, and no
// error, when none was recorded (a folder source, a revision applied before authors were).
func (s *Store) RevisionAuthor(ctx context.Context, source, revision string) (policy.Author, error) {
	var a policy.Author
	err := s.pool.QueryRow(ctx, `SELECT author_name, author_email FROM source_revisions WHERE source = $1 AND revision = $2`,
		source, revision).Scan(&a.Name, &a.Email)
	if errors.Is(err, pgx.ErrNoRows) {
		return policy.Author{}, nil
	}
	if err != nil {
		return policy.Author{}, fmt.Errorf("author of %s@%s: %w", source, clip.Rev(revision), err)
	}
	return a, nil
}

// sourceApply is what applying p did (res), as the source's conditions tell it.
func sourceApply(p ApplyParams, res ApplyResult) status.SourceApply {
	return status.SourceApply{Revision: p.Revision, Types: len(p.Set.Types), Resources: p.Set.Len(),
		PruneSkipped: res.PruneSkipped, PruneMessage: res.PruneMessage, Deleted: res.Deleted}
}

// initialConditions are a created resource's (status.Created: its first reconcile pending).
func initialConditions() string {
	b, _ := json.Marshal(status.Created(time.Now()).Conditions)
	return string(b)
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

// storableJSON returns valid JSON b as PostgreSQL's jsonb accepts it: what jsonb refuses,
// the \u0000 escape, a surrogate escape that is not half of a pair and each byte of invalid
// UTF-8, is replaced by \ufffd in a copy (what encoding/json reads them as, NUL aside); the
// text \u0000 (an escaped backslash before it) is kept. Invalid JSON gives nil. Numbers
// beyond PostgreSQL's numeric are left as they are (UnstorableNumber finds them).
func storableJSON(b []byte) []byte {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	if !bytes.Contains(b, []byte(`\u0000`)) && !bytes.Contains(b, []byte(`\ud`)) && !bytes.Contains(b, []byte(`\uD`)) && utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if c := b[i]; c >= utf8.RuneSelf {
			// Inside a string: valid JSON has no other bytes above ASCII.
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, `\ufffd`...)
				continue
			}
			out = append(out, b[i:i+size]...)
			i += size - 1
			continue
		}
		if b[i] != '\\' {
			out = append(out, b[i])
			continue
		}
		// An escape (valid JSON: a backslash is always one). \\ and the others are copied
		// whole, so the next backslash seen starts an escape of its own.
		if b[i+1] != 'u' {
			out = append(out, b[i], b[i+1])
			i++
			continue
		}
		r := hex4(b[i+2 : i+6])
		switch {
		case r == 0, 0xdc00 <= r && r <= 0xdfff:
			out = append(out, `\ufffd`...)
		case 0xd800 <= r && r <= 0xdbff:
			if i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
				if lo := hex4(b[i+8 : i+12]); 0xdc00 <= lo && lo <= 0xdfff {
					out = append(out, b[i:i+12]...)
					i += 11
					continue
				}
			}
			out = append(out, `\ufffd`...)
		default:
			out = append(out, b[i:i+6]...)
		}
		i += 5
	}
	return out
}

// hex4 reads the four hex digits of a \u escape of valid JSON.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// RecordSyncRecovered marks the source Ready again when the revision it has applied is the
// head once more after a failure (the remote came back, or a bad commit was reverted). It
// writes only when the source shows a failure.
func (s *Store) RecordSyncRecovered(ctx context.Context, source string, lease *Lease) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := checkLease(ctx, tx, lease); err != nil {
			return err
		}
		src, err := scanSource(tx.QueryRow(ctx, "SELECT "+sourceColumns+" FROM sources WHERE name = $1 FOR UPDATE", source))
		if err != nil {
			return err
		}
		conds, changed := status.SourceRecovered(src.Conditions, src.Revision, time.Now())
		if !changed {
			return nil
		}
		cj, _ := json.Marshal(conds)
		if _, err := tx.Exec(ctx, `UPDATE sources SET conditions = $2, errors = '[]', last_attempted_revision = revision,
			last_sync_time = now(), updated_at = now() WHERE name = $1`, source, cj); err != nil {
			return err
		}
		if err := appendChanges(ctx, tx, []Change{{Object: "source", Type: ChangeModified, Name: source, Source: source}}); err != nil {
			return err
		}
		return insertEvent(ctx, tx, Event{Source: source, Type: EventNormal, Reason: "Recovered", Message: "revision " + clip.Rev(src.Revision) + " is the head again"})
	})
}
