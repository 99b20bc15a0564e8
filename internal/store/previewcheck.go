package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
)

// AppliedResource is one of a source's resources as applied: what a preview compares a pull
// request's revision with. Spec holds the markers of encrypted fields, never their values.
type AppliedResource struct {
	Kind, Namespace, Name string
	APIVersion            string
	Labels, Annotations   map[string]string
	Spec                  json.RawMessage
	SpecHash, MetaHash    string
	File                  string
	Line                  int
	Generation            int64
	Deleting              bool // being deleted
	Keep                  bool // annotation trueup.dev/prune: disabled
	Orphaned              bool
	Outputs               json.RawMessage // status.outputs
}

// RevisionCheck is what CheckRevision found.
type RevisionCheck struct {
	// Revision is the source's applied revision.
	Revision string
	// Applied are the source's resources, sorted by namespace, kind and name.
	Applied []AppliedResource
	// Conflicts are the problems ApplyRevision would refuse the revision for: identities
	// another source declares, dependency cycles through other sources' resources.
	Conflicts manifest.Errors
}

// CheckRevision reads what a preview needs to judge p as ApplyRevision would, in one
// read-only transaction that takes no lock an apply could wait for: the source's applied
// resources and the conflicts and cross-source cycles p would be refused for. It writes
// nothing; p.Lease, p.Prune and p.Replica are not used.
func (s *Store) CheckRevision(ctx context.Context, p ApplyParams) (RevisionCheck, error) {
	var out RevisionCheck
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		out = RevisionCheck{}
		err := tx.QueryRow(ctx, `SELECT revision FROM sources WHERE name = $1`, p.Source).Scan(&out.Revision)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT kind, namespace, name, api_version, labels, annotations, spec, spec_hash, meta_hash,
			  file_path, file_line, generation, deletion_timestamp IS NOT NULL,
			  COALESCE(annotations->>'trueup.dev/prune', '') = 'disabled', orphaned, outputs
			FROM resources WHERE source = $1 ORDER BY namespace, lower(kind), name`, p.Source)
		if err != nil {
			return err
		}
		out.Applied, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (AppliedResource, error) {
			var a AppliedResource
			err := row.Scan(&a.Kind, &a.Namespace, &a.Name, &a.APIVersion, &a.Labels, &a.Annotations, &a.Spec, &a.SpecHash, &a.MetaHash,
				&a.File, &a.Line, &a.Generation, &a.Deleting, &a.Keep, &a.Orphaned, &a.Outputs)
			return a, err
		})
		if err != nil {
			return err
		}
		if p.Set == nil {
			return nil
		}
		for _, check := range []func() error{
			func() error { return checkConflicts(ctx, tx, p, &applyScope{all: true}) },
			func() error { return checkCycles(ctx, tx, p, false) },
		} {
			err := check()
			var conflict *ConflictError
			switch {
			case errors.As(err, &conflict):
				out.Conflicts = append(out.Conflicts, conflict.Errors...)
			case err != nil:
				return err
			}
		}
		return nil
	})
	if err != nil {
		return RevisionCheck{}, fmt.Errorf("check revision of %s: %w", p.Source, err)
	}
	return out, nil
}

// CurrentOutputs returns the status.outputs of the resources ids that exist and are not
// being deleted, by ID.Key(), whatever their source: what a preview resolves a pull
// request's output references with. One query.
func (s *Store) CurrentOutputs(ctx context.Context, ids []graph.ID) (map[graph.ID]map[string]any, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ns, kind, name := make([]string, len(ids)), make([]string, len(ids)), make([]string, len(ids))
	for i, id := range ids {
		ns[i], kind[i], name[i] = id.Namespace, lowerASCII(id.Kind), id.Name
	}
	rows, err := s.pool.Query(ctx, `SELECT r.namespace, lower(r.kind), r.name, r.outputs
		FROM unnest($1::text[], $2::text[], $3::text[]) AS x(ns, kind, name)
		JOIN resources r ON r.namespace = x.ns AND lower(r.kind) = x.kind AND r.name = x.name
		WHERE r.deletion_timestamp IS NULL`, ns, kind, name)
	if err != nil {
		return nil, fmt.Errorf("read outputs: %w", err)
	}
	out := map[graph.ID]map[string]any{}
	for rows.Next() {
		var id graph.ID
		var v map[string]any
		if err := rows.Scan(&id.Namespace, &id.Kind, &id.Name, &v); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read outputs: %w", err)
		}
		out[id] = v
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read outputs: %w", err)
	}
	return out, nil
}

// BeingReconciled reports whether a reconcile holds the resource: it is claimed and its lease
// has not expired (a claim whose holder stopped renewing is not counted; it is released and
// claimed again). A preview asks before each plan, on whichever replica it runs, so that a
// plan does not run beside a reconcile of the same resource on another host, where the
// plugin's own lock cannot see it.
func (s *Store) BeingReconciled(ctx context.Context, namespace, kind, name string) (bool, error) {
	var held bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM resources r JOIN resource_queue q ON q.id = r.id
		WHERE r.namespace = $1 AND lower(r.kind) = $2 AND r.name = $3 AND q.lease_owner IS NOT NULL AND q.lease_expires_at > now())`,
		namespace, lowerASCII(kind), name).Scan(&held)
	if err != nil {
		return false, fmt.Errorf("read the claim of %s/%s/%s: %w", namespace, kind, name, err)
	}
	return held, nil
}
