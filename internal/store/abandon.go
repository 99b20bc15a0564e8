package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/notify"
)

// ErrNotRemoved is returned for an abandon of a resource whose manifest is still in Git: the
// next sync would only bring it back. Remove the manifest first.
var ErrNotRemoved = errors.New("manifest still in Git")

// ReasonAbandoned is the event of an abandoned resource.
const ReasonAbandoned = "Abandoned"

// Result and operation of the history row an abandon writes.
const (
	OperationAbandon = "abandon"
	ResultAbandoned  = "Abandoned"
)

// AbandonParams names the resource to forget, who asks and why.
type AbandonParams struct {
	Namespace, Kind, Name string
	Actor, Reason         string
}

// Abandon forgets a resource without calling its action: for a delete that can never succeed
// (a module gone from every revision, an external system that no longer exists). Only a
// resource whose manifest is gone from Git may be abandoned (being deleted, or orphaned
// because its source does not prune); anything else is ErrNotRemoved. In one transaction it
// writes a history row (operation abandon, result Abandoned, the actor and reason), a Warning
// event and an Abandoned notification, removes the row and tells the changes feed; what depended
// on it, and what it waited for, are refreshed after the commit (dependents see it missing, a
// dependency being deleted no longer waits for it). A call of the resource in flight loses its
// lease: it is stopped and its result discarded. What the action created, and the action's own
// state (a Terraform workspace), are left as they are.
func (s *Store) Abandon(ctx context.Context, p AbandonParams) (ResourceRef, error) {
	ref := ResourceRef{Namespace: p.Namespace, Name: p.Name}
	var refresh []int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// The source's apply lock first, as an apply takes it before it reads the rows it
		// rewrites and locks them: an apply that restores the manifest and read the row before
		// this commits would otherwise update a row that is gone, and lose the resource.
		var source string
		err := tx.QueryRow(ctx, `SELECT source FROM resources WHERE namespace = $1 AND lower(kind) = lower($2) AND name = $3`,
			p.Namespace, p.Kind, p.Name).Scan(&source)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("resource %s/%s/%s: %w", p.Namespace, p.Kind, p.Name, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext('trueup.source:' || $1))", source); err != nil {
			return err
		}
		var id, generation int64
		var uid, revision, phase, file string
		var removed bool
		// The queue row is locked with it: no claim leases the row (and calls its delete)
		// between this read and the row's removal.
		err = tx.QueryRow(ctx, `SELECT r.id, r.uid::text, r.kind, r.source, r.revision, r.generation, r.phase, r.file_path,
			  r.deletion_timestamp IS NOT NULL OR r.orphaned
			FROM resources r JOIN resource_queue q ON q.id = r.id
			WHERE r.namespace = $1 AND lower(r.kind) = lower($2) AND r.name = $3 FOR UPDATE OF r, q`, p.Namespace, p.Kind, p.Name).
			Scan(&id, &uid, &ref.Kind, &ref.Source, &revision, &generation, &phase, &file, &removed)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("resource %s/%s/%s: %w", p.Namespace, p.Kind, p.Name, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if ref.Source != source {
			return fmt.Errorf("resource %s/%s/%s moved from source %s to %s meanwhile: try again", p.Namespace, ref.Kind, p.Name, source, ref.Source)
		}
		if !removed {
			return fmt.Errorf("resource %s/%s/%s: %w (%s of source %s): only a resource whose manifest was removed can be abandoned",
				p.Namespace, ref.Kind, p.Name, ErrNotRemoved, file, ref.Source)
		}
		msg := "abandoned by " + p.Actor + ": " + p.Reason + " (the action was not called; what it created is left as it is)"
		now := time.Now()
		if err := insertHistoryBatch(ctx, tx, []HistoryEntry{{UID: uid, Namespace: p.Namespace, Kind: ref.Kind, Name: p.Name,
			Generation: generation, Revision: revision, Operation: OperationAbandon, Trigger: "manual", Result: ResultAbandoned,
			Message: msg, Actor: p.Actor, StartedAt: now, FinishedAt: now}}); err != nil {
			return fmt.Errorf("insert history: %w", err)
		}
		if err := insertEvent(ctx, tx, Event{Namespace: p.Namespace, Kind: ref.Kind, Name: p.Name, Source: ref.Source,
			Type: EventWarning, Reason: ReasonAbandoned, Message: msg}); err != nil {
			return err
		}
		var outbox []outboxItem
		for _, e := range notify.Events(notify.Snapshot{Phase: phase}, notify.Snapshot{Removed: true, Abandoned: true}) {
			outbox = append(outbox, outboxItem{id: id, event: e, message: msg})
		}
		if err := insertOutboxForResources(ctx, tx, outbox); err != nil {
			return fmt.Errorf("insert outbox: %w", err)
		}
		// Read before the row goes: its edges go with it.
		if refresh, err = dependentsOf(ctx, tx, []int64{id}); err != nil {
			return err
		}
		deps, err := dependenciesOf(ctx, tx, []int64{id})
		if err != nil {
			return err
		}
		refresh = append(refresh, deps...)
		if _, err := tx.Exec(ctx, "DELETE FROM resources WHERE id = $1", id); err != nil {
			return err
		}
		return appendChanges(ctx, tx, []Change{{Object: "resource", Type: ChangeDeleted, Namespace: p.Namespace, Kind: ref.Kind,
			Name: p.Name, Source: ref.Source}})
	})
	if err != nil {
		return ref, fmt.Errorf("abandon: %w", err)
	}
	if err := s.RefreshDependencies(ctx, refresh); err != nil {
		return ref, fmt.Errorf("abandoned, but: %w", err)
	}
	return ref, nil
}
