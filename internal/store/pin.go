package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/clip"
)

// A pinned source applies the revision an operator chose and keeps every other head as its
// pendingRevision until it is unpinned (incidents: hold a known-good state without a push).

// Event reasons of pinning, on the source.
const (
	ReasonPinned          = "Pinned"
	ReasonUnpinned        = "Unpinned"
	ReasonRevisionPending = "RevisionPending"
)

var (
	// ErrAmbiguous is returned when a revision prefix names more than one revision.
	ErrAmbiguous = errors.New("ambiguous")
	// ErrPinChanged is returned by ApplyRevision when the source's pin is no longer the one
	// the sync applied under (ApplyParams.Pinned): nothing was applied; sync again.
	ErrPinChanged = errors.New("the source's pin changed")
	// ErrNotPinned is returned by UnpinSource for a source that is not pinned.
	ErrNotPinned = errors.New("not pinned")
)

// minRevisionPrefix is the shortest prefix of a revision PinSource resolves.
const minRevisionPrefix = 7

// SourcePin is who pinned a source at which revision, and why.
type SourcePin struct {
	Revision, Actor, Reason string
	At                      time.Time
}

// SourceRevision is one revision a source applied, as its history lists it.
type SourceRevision struct {
	Revision                string
	AuthorName, AuthorEmail string
	AppliedAt               time.Time
	Current                 bool // the source's applied revision
	Pinned                  bool // the revision the source is pinned at
}

// PinSource pins source at revision: one of the source's history, or a prefix (at least 7
// characters) of exactly one revision in it (ErrNotFound when none, ErrAmbiguous when
// several). The holder of the source's lease is asked to sync: it applies the pinned
// revision at once.
func (s *Store) PinSource(ctx context.Context, source, revision, actor, reason string) (SourcePin, error) {
	pin := SourcePin{Actor: actor, Reason: reason}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if pin.Revision, err = resolveRevision(ctx, tx, source, revision); err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `UPDATE sources SET pinned_revision = $2, pinned_by = $3, pin_reason = $4, pinned_at = now(),
			updated_at = now() WHERE name = $1 RETURNING pinned_at`, source, pin.Revision, actor, reason).Scan(&pin.At)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("source %s: %w", source, ErrNotFound)
		}
		if err != nil {
			return err
		}
		msg := "source pinned at " + clip.Rev(pin.Revision) + " by " + actor
		if reason != "" {
			msg += ": " + reason
		}
		return sourceCommand(ctx, tx, source, ReasonPinned, msg)
	})
	if err != nil {
		return SourcePin{}, fmt.Errorf("pin source: %w", err)
	}
	return pin, nil
}

// PinNamespaces returns the revision of source that revision names (as PinSource resolves
// it) and the namespaces pinning it touches: those the source has resources in and those the
// revision had when it was applied, sorted. ErrNotFound: no such source, or no such revision
// in its history.
func (s *Store) PinNamespaces(ctx context.Context, source, revision string) (string, []string, error) {
	nss, err := s.SourceNamespaces(ctx, source)
	if err != nil {
		return "", nil, err
	}
	rev, err := resolveRevision(ctx, s.pool, source, revision)
	if err != nil {
		return "", nil, err
	}
	var then []string
	if err := s.pool.QueryRow(ctx, `SELECT namespaces FROM source_revisions WHERE source = $1 AND revision = $2`, source, rev).
		Scan(&then); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return "", nil, notApplied(source, rev)
		}
		return "", nil, fmt.Errorf("namespaces of %s@%s: %w", source, clip.Rev(rev), err)
	}
	nss = append(nss, then...)
	slices.Sort(nss)
	return rev, slices.Compact(nss), nil
}

func notApplied(source, rev string) error {
	return fmt.Errorf("revision %s is not one the source %s applied; see trueup source history %s: %w", rev, source, source, ErrNotFound)
}

// resolveRevision returns the revision of source that rev names (see PinSource): one of its
// history as it is, or a prefix of one of its history. A commit the source never applied,
// whatever its repository holds, is not one.
func resolveRevision(ctx context.Context, db DB, source, rev string) (string, error) {
	var known bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM source_revisions WHERE source = $1 AND revision = $2)`, source, rev).Scan(&known); err != nil || known {
		return rev, err
	}
	rev = strings.ToLower(rev)
	// A digest (an OCI artifact's, a folder's) is abbreviated as sha256:<hex prefix>.
	if digits := strings.TrimPrefix(rev, "sha256:"); strings.Trim(digits, "0123456789abcdef") != "" || len(digits) < minRevisionPrefix {
		return "", fmt.Errorf("%w: revision %q is not a commit hash or a digest, or a prefix of at least %d characters of one", ErrBadRequest, rev, minRevisionPrefix)
	}
	rows, err := db.Query(ctx, `SELECT revision FROM source_revisions WHERE source = $1 AND starts_with(revision, $2) LIMIT 2`, source, rev)
	if err != nil {
		return "", err
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	switch {
	case err != nil:
		return "", err
	case len(found) == 0:
		return "", notApplied(source, rev)
	case len(found) > 1:
		return "", fmt.Errorf("revision %s is %w in the history of source %s: give more characters", rev, ErrAmbiguous, source)
	}
	return found[0], nil
}

// UnpinSource unpins source: its pendingRevision is cleared (unless the source is suspended,
// which holds it back) and the holder of its lease applies the head at once. A source that is
// not pinned gives ErrNotPinned, and nothing is recorded.
func (s *Store) UnpinSource(ctx context.Context, source, actor, reason string) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var pinned string
		err := tx.QueryRow(ctx, `SELECT pinned_revision FROM sources WHERE name = $1 FOR UPDATE`, source).Scan(&pinned)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("source %s: %w", source, ErrNotFound)
		case err != nil:
			return err
		case pinned == "":
			return fmt.Errorf("source %s is %w", source, ErrNotPinned)
		}
		if _, err := tx.Exec(ctx, `UPDATE sources SET pinned_revision = '', pinned_by = '', pin_reason = '', pinned_at = NULL,
			pending_revision = CASE WHEN suspended THEN pending_revision ELSE '' END, updated_at = now() WHERE name = $1`, source); err != nil {
			return err
		}
		msg := "source unpinned by " + actor
		if reason != "" {
			msg += ": " + reason
		}
		return sourceCommand(ctx, tx, source, ReasonUnpinned, msg)
	})
	if err != nil {
		return fmt.Errorf("unpin source: %w", err)
	}
	return nil
}

// sourceCommand records an operator's command on source (an event and a change) and asks
// the holder of its lease to sync.
func sourceCommand(ctx context.Context, tx pgx.Tx, source, reason, msg string) error {
	if err := insertEvent(ctx, tx, Event{Source: source, Type: EventNormal, Reason: reason, Message: clip.Storable(msg, 4000)}); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", SyncChannel, source); err != nil {
		return err
	}
	return appendChanges(ctx, tx, []Change{{Object: "source", Type: ChangeModified, Name: source, Source: source}})
}

// SourcePin returns source's pin, nil when it is not pinned (ErrNotFound: no such source).
func (s *Store) SourcePin(ctx context.Context, source string) (*SourcePin, error) {
	var p SourcePin
	var at *time.Time
	err := s.pool.QueryRow(ctx, `SELECT pinned_revision, pinned_by, pin_reason, pinned_at FROM sources WHERE name = $1`, source).
		Scan(&p.Revision, &p.Actor, &p.Reason, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("source %s: %w", source, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read pin of source %s: %w", source, err)
	}
	if p.Revision == "" {
		return nil, nil
	}
	if at != nil {
		p.At = *at
	}
	return &p, nil
}

// RecordPending records, while source is pinned, the head it does not apply as its
// pendingRevision ("" when the head is the pinned revision), with an event for each
// revision. It writes nothing when the source already shows it.
func (s *Store) RecordPending(ctx context.Context, source, pinned, revision string, lease *Lease) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE sources SET pending_revision = $2, updated_at = now()
			WHERE name = $1 AND pending_revision <> $2`, source, revision)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if err := checkLease(ctx, tx, lease); err != nil {
			return err
		}
		if revision != "" {
			if err := insertEvent(ctx, tx, Event{Source: source, Type: EventNormal, Reason: ReasonRevisionPending,
				Message: fmt.Sprintf("revision %s is not applied: the source is pinned at %s", clip.Rev(revision), clip.Rev(pinned))}); err != nil {
				return err
			}
		}
		return appendChanges(ctx, tx, []Change{{Object: "source", Type: ChangeModified, Name: source, Source: source}})
	})
}

// SourceHistory returns the revisions source applied, the last applied first (a revision
// applied again counts from then), at most limit (default 100).
func (s *Store) SourceHistory(ctx context.Context, source string, limit int) ([]SourceRevision, error) {
	if limit <= 0 {
		limit = KeptRevisions
	}
	rows, err := s.pool.Query(ctx, `SELECT v.revision, v.author_name, v.author_email, v.applied_at,
		v.revision = s.revision, v.revision = s.pinned_revision
		FROM source_revisions v JOIN sources s ON s.name = v.source
		WHERE v.source = $1 ORDER BY v.applied_at DESC, v.revision LIMIT $2`, source, limit)
	if err != nil {
		return nil, fmt.Errorf("history of source %s: %w", source, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SourceRevision, error) {
		var r SourceRevision
		err := row.Scan(&r.Revision, &r.AuthorName, &r.AuthorEmail, &r.AppliedAt, &r.Current, &r.Pinned)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("history of source %s: %w", source, err)
	}
	return out, nil
}
