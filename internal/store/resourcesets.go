package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trueup-dev/trueup/internal/manifest"
)

// ResourceSet is a ResourceSet's row (table resource_sets) with its members counted.
type ResourceSet struct {
	Namespace string
	Name      string
	Source    string
	Path      string
	Line      int
	Revision  string // the revision that last changed the row
	Inputs    int    // inputs after the matrix product
	Members   int    // resources the set generates in Revision
	// Phases counts the stored resources labelled manifest.LabelResourceSet with the set's
	// name in its namespace, by phase; never nil.
	Phases    map[string]int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ResourceSetFilter selects ResourceSets; empty fields match everything.
type ResourceSetFilter struct{ Namespace, Source string }

// resourceSetSelect reads a set and counts its members by the partial index
// resources_resource_set (the predicate on the label key is the index's own, so the planner
// uses it).
const resourceSetSelect = `SELECT s.namespace, s.name, s.source, s.file_path, s.file_line, s.revision, s.inputs, s.members,
	COALESCE((SELECT jsonb_object_agg(p.phase, p.n) FROM (SELECT r.phase, count(*) AS n FROM resources r
	  WHERE r.labels ? 'trueup.dev/resource-set' AND r.namespace = s.namespace
	    AND r.labels->>'trueup.dev/resource-set' = s.name AND r.source = s.source GROUP BY r.phase) p), '{}'::jsonb),
	s.created_at, s.updated_at
	FROM resource_sets s`

func scanResourceSet(row pgx.Row) (ResourceSet, error) {
	var rs ResourceSet
	err := row.Scan(&rs.Namespace, &rs.Name, &rs.Source, &rs.Path, &rs.Line, &rs.Revision, &rs.Inputs, &rs.Members,
		&rs.Phases, &rs.CreatedAt, &rs.UpdatedAt)
	if rs.Phases == nil {
		rs.Phases = map[string]int{}
	}
	return rs, err
}

// ListResourceSets returns the ResourceSets in scope ordered by namespace and name.
func (s *Store) ListResourceSets(ctx context.Context, sc Scope, f ResourceSetFilter) ([]ResourceSet, error) {
	var args params
	var where []string
	if w := sc.where("s.namespace", args.add); w != "" {
		where = append(where, w)
	}
	if f.Namespace != "" {
		where = append(where, "s.namespace = "+args.add(f.Namespace))
	}
	if f.Source != "" {
		where = append(where, "s.source = "+args.add(f.Source))
	}
	q := resourceSetSelect
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := s.reader().Query(ctx, q+" ORDER BY s.namespace, s.name", args...)
	if err != nil {
		return nil, fmt.Errorf("list resource sets: %w", err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ResourceSet, error) { return scanResourceSet(r) })
	if err != nil {
		return nil, fmt.Errorf("list resource sets: %w", err)
	}
	return items, nil
}

// GetResourceSet returns one ResourceSet if the scope sees its namespace. Out of scope, it
// returns the very error of a missing set, without asking the database.
func (s *Store) GetResourceSet(ctx context.Context, sc Scope, namespace, name string) (ResourceSet, error) {
	notFound := fmt.Errorf("resource set %s/%s: %w", namespace, name, ErrNotFound)
	if !sc.Contains(namespace) {
		return ResourceSet{}, notFound
	}
	rs, err := scanResourceSet(s.reader().QueryRow(ctx, resourceSetSelect+" WHERE s.namespace = $1 AND s.name = $2", namespace, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return rs, notFound
	}
	if err != nil {
		return rs, fmt.Errorf("resource set %s/%s: %w", namespace, name, err)
	}
	return rs, nil
}

// resourceSetConflicts returns a problem at each of the revision's sets that another source
// already declares.
func resourceSetConflicts(ctx context.Context, tx pgx.Tx, p ApplyParams) (manifest.Errors, error) {
	sets := p.Set.ResourceSets
	if len(sets) == 0 {
		return nil, nil
	}
	ns, names := resourceSetKeys(sets)
	rows, err := tx.Query(ctx, `SELECT s.namespace, s.name, s.source, s.file_path FROM resource_sets s
		JOIN unnest($1::text[], $2::text[]) AS x(ns, name) ON s.namespace = x.ns AND s.name = x.name
		WHERE s.source <> $3`, ns, names, p.Source)
	if err != nil {
		return nil, fmt.Errorf("check resource sets: %w", err)
	}
	owners := map[[2]string][2]string{}
	for rows.Next() {
		var n, name, src, file string
		if err := rows.Scan(&n, &name, &src, &file); err != nil {
			rows.Close()
			return nil, err
		}
		owners[[2]string{n, name}] = [2]string{src, file}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check resource sets: %w", err)
	}
	var errs manifest.Errors
	for _, rs := range sets {
		if o, ok := owners[[2]string{rs.Namespace, rs.Name}]; ok {
			errs = append(errs, manifest.ValidationError{File: rs.File, Line: rs.Line, Path: "metadata.name",
				Msg: fmt.Sprintf("ResourceSet %s/%s is already declared by source %s (%s)", rs.Namespace, rs.Name, o[0], o[1])})
		}
	}
	return errs, nil
}

// applyResourceSets writes the revision's sets and removes the source's sets the revision no
// longer declares, inside the revision's transaction. A row is rewritten only when the set's
// file, line or counts changed: its revision is the one that last changed it.
func applyResourceSets(ctx context.Context, tx pgx.Tx, p ApplyParams) error {
	sets := p.Set.ResourceSets
	ns, names := resourceSetKeys(sets)
	files, lines, inputs, members := make([]string, len(sets)), make([]int32, len(sets)), make([]int32, len(sets)), make([]int32, len(sets))
	for i, rs := range sets {
		files[i], lines[i], inputs[i], members[i] = rs.File, int32(rs.Line), int32(rs.Inputs), int32(rs.Members)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM resource_sets s WHERE s.source = $1
		AND NOT EXISTS (SELECT 1 FROM unnest($2::text[], $3::text[]) AS x(ns, name) WHERE x.ns = s.namespace AND x.name = s.name)`,
		p.Source, ns, names); err != nil {
		return fmt.Errorf("remove resource sets: %w", err)
	}
	if len(sets) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO resource_sets (namespace, name, source, file_path, file_line, revision, inputs, members)
		SELECT x.ns, x.name, $3, x.file, x.line, $4, x.inputs, x.members
		FROM unnest($1::text[], $2::text[], $5::text[], $6::int[], $7::int[], $8::int[]) AS x(ns, name, file, line, inputs, members)
		ON CONFLICT (namespace, name) DO UPDATE SET file_path = excluded.file_path, file_line = excluded.file_line,
		  revision = excluded.revision, inputs = excluded.inputs, members = excluded.members, updated_at = now()
		WHERE resource_sets.source = excluded.source
		  AND (resource_sets.file_path, resource_sets.file_line, resource_sets.inputs, resource_sets.members)
		    IS DISTINCT FROM (excluded.file_path, excluded.file_line, excluded.inputs, excluded.members)`,
		ns, names, p.Source, p.Revision, files, lines, inputs, members); err != nil {
		return fmt.Errorf("write resource sets: %w", err)
	}
	// Another source may have declared a set between checkConflicts and the insert: its row
	// stands, ours was not written.
	errs, err := resourceSetConflicts(ctx, tx, p)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return &ConflictError{Errors: errs}
	}
	return nil
}

// resourceSetKeys returns the sets' namespaces and names, as parallel arrays.
func resourceSetKeys(sets []manifest.ResourceSetInfo) (ns, names []string) {
	ns, names = make([]string, len(sets)), make([]string, len(sets))
	for i, rs := range sets {
		ns[i], names[i] = rs.Namespace, rs.Name
	}
	return ns, names
}
