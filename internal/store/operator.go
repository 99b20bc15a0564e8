package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/plural"
	"github.com/trueup-dev/trueup/internal/status"
)

// Operator commands (issue 11): the only writes people make through trueup. Each writes its
// event, with the actor, in the transaction that makes the change.

// ErrSuspended is returned for a manual reconcile of a suspended resource: resume it first.
var ErrSuspended = errors.New("suspended")

// Event reasons of operator commands.
const (
	ReasonManualReconcile = "ManualReconcile"
	ReasonSyncRequested   = "SyncRequested"
	ReasonSuspended       = "Suspended"
	ReasonResumed         = "Resumed"
	ReasonRevisionHeld    = "RevisionHeld"
	ReasonWindowOverride  = "WindowOverridden"
)

// ResourceRef names one resource a command acted on.
type ResourceRef struct {
	Namespace, Kind, Name, Source string
}

// RequestReconcile makes a resource due now, skipping any backoff (a Stalled resource runs
// too), and records actor as who asked: the claim that takes it hands ManualBy to the worker,
// whose history row says trigger manual. The attempt count is kept (it is status: how many
// failures in a row). A resource in flight runs again once its current attempt is written.
// Every replica's claimer is woken.
func (s *Store) RequestReconcile(ctx context.Context, namespace, kind, name, actor string) (ResourceRef, error) {
	return s.requestReconcile(ctx, namespace, kind, name, actor, nil)
}

// RequestReconcileOverride is RequestReconcile that also lets the call proceed although a
// change window holds it: it records window_override {actor, reason, at} (the call that uses
// it clears it) and an Event WindowOverridden.
func (s *Store) RequestReconcileOverride(ctx context.Context, namespace, kind, name, actor, reason string) (ResourceRef, error) {
	return s.requestReconcile(ctx, namespace, kind, name, actor, &WindowOverride{Actor: actor, Reason: reason, At: time.Now().UTC()})
}

func (s *Store) requestReconcile(ctx context.Context, namespace, kind, name, actor string, override *WindowOverride) (ResourceRef, error) {
	ref := ResourceRef{Namespace: namespace, Name: name}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var id int64
		var suspended bool
		err := tx.QueryRow(ctx, `SELECT r.id, r.kind, r.source, q.suspended FROM resources r JOIN resource_queue q ON q.id = r.id
			WHERE r.namespace = $1 AND lower(r.kind) = lower($2) AND r.name = $3 FOR UPDATE OF r, q`, namespace, kind, name).
			Scan(&id, &ref.Kind, &ref.Source, &suspended)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("resource %s/%s/%s: %w", namespace, kind, name, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if suspended {
			return fmt.Errorf("resource %s/%s/%s is %w: resume it first", namespace, ref.Kind, name, ErrSuspended)
		}
		if override != nil {
			if _, err := tx.Exec(ctx, `UPDATE resources SET window_override = $2::jsonb WHERE id = $1`, id, override); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE resource_queue SET run_at = now(), manual_requested_by = $2,
			dirty = dirty OR lease_owner IS NOT NULL WHERE id = $1`, id, actor); err != nil {
			return err
		}
		if err := insertEvent(ctx, tx, Event{Namespace: namespace, Kind: ref.Kind, Name: name, Source: ref.Source, Type: EventNormal,
			Reason: ReasonManualReconcile, Message: "reconcile requested by " + actor}); err != nil {
			return err
		}
		if override != nil {
			if err := insertEvent(ctx, tx, Event{Namespace: namespace, Kind: ref.Kind, Name: name, Source: ref.Source, Type: EventNormal,
				Reason: ReasonWindowOverride, Message: "change windows overridden by " + actor + ": " + override.Reason}); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, '')", WorkChannel)
		return err
	})
	if err != nil {
		return ref, fmt.Errorf("request reconcile: %w", err)
	}
	return ref, nil
}

// SuspendParams selects the resources a suspend or resume acts on: one resource by identity,
// or every resource matching Selector (in Namespaces when not nil).
type SuspendParams struct {
	Namespace, Kind, Name string
	Selector              string
	Namespaces            []string
	Suspend               bool // false: resume
	Actor, Reason         string
}

// SetSuspended suspends or resumes resources and returns those it changed, in one
// transaction: the flag (the claim skips suspended rows), the Suspended condition
// (status.Suspend, status.Resume), an event each and the changes feed. A resume wakes the
// claimers: whatever became due meanwhile runs at once. A single resource that does not
// exist is ErrNotFound; a selector matching nothing changes nothing.
func (s *Store) SetSuspended(ctx context.Context, p SuspendParams) ([]ResourceRef, error) {
	var where string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	single := p.Selector == ""
	if single {
		where = "namespace = " + arg(p.Namespace) + " AND lower(kind) = lower(" + arg(p.Kind) + ") AND name = " + arg(p.Name)
	} else {
		reqs, err := ParseLabelSelector(p.Selector)
		if err != nil {
			return nil, fmt.Errorf("%w: selector: %v", ErrBadRequest, err)
		}
		terms := make([]string, 0, len(reqs)+1)
		for _, r := range reqs {
			terms = append(terms, requirementSQL(r, arg))
		}
		if p.Namespaces != nil {
			terms = append(terms, "namespace = ANY("+arg(p.Namespaces)+"::text[])")
		}
		where = strings.Join(terms, " AND ")
	}
	var refs []ResourceRef
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		refs = refs[:0]
		// The queue rows are locked with the resources rows (in that order, as every writer of
		// both): a claim cannot lease a row between this read and the write of suspended.
		rows, err := tx.Query(ctx, `SELECT r.id, r.namespace, r.kind, r.name, r.source, r.phase, r.observed_generation, r.conditions
			FROM resources r JOIN resource_queue q ON q.id = r.id WHERE `+where+` ORDER BY r.id FOR UPDATE OF r, q`, args...)
		if err != nil {
			return err
		}
		var ids []int64
		var phases, conds []string
		now := time.Now()
		for rows.Next() {
			var id int64
			var ref ResourceRef
			var st status.State
			var cj []byte
			if err := rows.Scan(&id, &ref.Namespace, &ref.Kind, &ref.Name, &ref.Source, &st.Phase, &st.ObservedGeneration, &cj); err != nil {
				rows.Close()
				return err
			}
			if err := json.Unmarshal(cj, &st.Conditions); err != nil {
				rows.Close()
				return err
			}
			if !single && status.IsSuspended(st.Conditions) == p.Suspend {
				continue // a selector leaves alone what is already so (and keeps who suspended it)
			}
			if p.Suspend {
				st = status.Suspend(st, p.Actor, p.Reason, now)
			} else {
				st = status.Resume(st)
			}
			b, err := json.Marshal(st.Conditions)
			if err != nil {
				rows.Close()
				return err
			}
			ids, phases, conds = append(ids, id), append(phases, st.Phase), append(conds, string(b))
			refs = append(refs, ref)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if single && len(refs) == 0 {
			return fmt.Errorf("resource %s/%s/%s: %w", p.Namespace, p.Kind, p.Name, ErrNotFound)
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE resources r SET phase = x.phase, conditions = x.conds::jsonb,
			status_updated_at = now() FROM unnest($1::bigint[], $2::text[], $3::text[]) AS x(id, phase, conds) WHERE r.id = x.id`,
			ids, phases, conds); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE resource_queue SET suspended = $1 WHERE id = ANY($2::bigint[])`, p.Suspend, ids); err != nil {
			return err
		}
		reason, msg := ReasonResumed, "resumed by "+p.Actor
		if p.Suspend {
			reason, msg = ReasonSuspended, "suspended by "+p.Actor
			if p.Reason != "" {
				msg += ": " + p.Reason
			}
		}
		evs := make([]Event, len(refs))
		cs := make([]Change, len(refs))
		for i, r := range refs {
			evs[i] = Event{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name, Source: r.Source, Type: EventNormal, Reason: reason, Message: msg}
			cs[i] = Change{Object: "resource", Type: ChangeModified, Namespace: r.Namespace, Kind: r.Kind, Name: r.Name, Source: r.Source, Phase: phases[i]}
		}
		if err := insertEvents(ctx, tx, evs); err != nil {
			return err
		}
		if !p.Suspend {
			if _, err := tx.Exec(ctx, "SELECT pg_notify($1, '')", WorkChannel); err != nil {
				return err
			}
		}
		return appendChanges(ctx, tx, cs)
	})
	if err != nil {
		return nil, fmt.Errorf("set suspended: %w", err)
	}
	return refs, nil
}

// SourceNamespaces returns the namespaces a source has resources in (sorted), or ErrNotFound
// when the source is not registered. Source commands need operator rights over each.
func (s *Store) SourceNamespaces(ctx context.Context, source string) ([]string, error) {
	var exists bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM sources WHERE name = $1)", source).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, fmt.Errorf("source %s: %w", source, ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, "SELECT DISTINCT namespace FROM resources WHERE source = $1 ORDER BY namespace", source)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// RequestSync records that actor asked for a sync of source and asks the replica holding its
// lease to sync now (NOTIFY on SyncChannel, as a webhook received by another replica does).
func (s *Store) RequestSync(ctx context.Context, source, actor string) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "UPDATE sources SET updated_at = updated_at WHERE name = $1", source)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("source %s: %w", source, ErrNotFound)
		}
		if err := insertEvent(ctx, tx, Event{Source: source, Type: EventNormal, Reason: ReasonSyncRequested,
			Message: "sync requested by " + actor}); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", SyncChannel, source)
		return err
	})
	if err != nil {
		return fmt.Errorf("request sync: %w", err)
	}
	return nil
}

// SetSourceSuspended suspends or resumes a source. A suspended source keeps polling and
// validating, but ApplyRevision applies nothing and records the revision it held back
// (pendingRevision); a resume clears that (unless the source is pinned: it still holds its
// head back) and asks the holder to sync at once, which applies the head (the pinned revision).
func (s *Store) SetSourceSuspended(ctx context.Context, source string, suspend bool, actor, reason string) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var cj []byte
		err := tx.QueryRow(ctx, "SELECT conditions FROM sources WHERE name = $1 FOR UPDATE", source).Scan(&cj)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("source %s: %w", source, ErrNotFound)
		}
		if err != nil {
			return err
		}
		var st status.State
		if err := json.Unmarshal(cj, &st.Conditions); err != nil {
			return err
		}
		ev := Event{Source: source, Type: EventNormal, Reason: ReasonResumed, Message: "source resumed by " + actor}
		if suspend {
			st = status.Suspend(st, actor, reason, time.Now())
			ev.Reason, ev.Message = ReasonSuspended, "source suspended by "+actor
			if reason != "" {
				ev.Message += ": " + reason
			}
		} else {
			st = status.Resume(st)
		}
		b, err := json.Marshal(st.Conditions)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE sources SET suspended = $2, conditions = $3,
			pending_revision = CASE WHEN $2 OR pinned_revision <> '' THEN pending_revision ELSE '' END, updated_at = now() WHERE name = $1`,
			source, suspend, b); err != nil {
			return err
		}
		if err := insertEvent(ctx, tx, ev); err != nil {
			return err
		}
		if !suspend {
			if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", SyncChannel, source); err != nil {
				return err
			}
		}
		return appendChanges(ctx, tx, []Change{{Object: "source", Type: ChangeModified, Name: source, Source: source}})
	})
	if err != nil {
		return fmt.Errorf("set source suspended: %w", err)
	}
	return nil
}

// SourceSuspended reports whether source is suspended (the syncer asks only while it holds a
// revision back, to learn of a resume).
func (s *Store) SourceSuspended(ctx context.Context, source string) (bool, error) {
	var suspended bool
	err := s.pool.QueryRow(ctx, "SELECT suspended FROM sources WHERE name = $1", source).Scan(&suspended)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("source %s: %w", source, ErrNotFound)
	}
	return suspended, err
}

// holdRevision is ApplyRevision's answer for a suspended source: nothing is applied; the
// revision it would have applied is recorded (with an event the first time), unless the
// source is pinned.
func holdRevision(ctx context.Context, tx pgx.Tx, p ApplyParams) error {
	if p.Pinned != "" {
		return nil // a pinned source's pendingRevision is the head it does not apply (RecordPending)
	}
	tag, err := tx.Exec(ctx, `UPDATE sources SET pending_revision = $2, updated_at = now()
		WHERE name = $1 AND pending_revision <> $2`, p.Source, p.Revision)
	if err != nil || tag.RowsAffected() == 0 {
		return err
	}
	if err := insertEvent(ctx, tx, Event{Source: p.Source, Type: EventNormal, Reason: ReasonRevisionHeld, Replica: p.Replica,
		Message: fmt.Sprintf("revision %s (%s) is not applied: the source is suspended", clip.Rev(p.Revision), plural.Count(p.Set.Len(), "resource", "resources"))}); err != nil {
		return err
	}
	return appendChanges(ctx, tx, []Change{{Object: "source", Type: ChangeModified, Name: p.Source, Source: p.Source}})
}
