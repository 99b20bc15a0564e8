package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/changeplan"
)

// applyScope is the part of a revision an apply compares with the source's rows: every
// resource, or only those of the files whose content changed since the source was last
// applied (changeplan.ChangedFiles), so that a one-file change costs that file's resources,
// not the revision's. A resource of an unchanged file is the one applied: were it declared
// again in a changed file, the revision would hold it twice and be rejected; a type of the
// source that changed (its schema's defaults are in the specs) compares everything again.
type applyScope struct {
	all     bool
	changed []string // the changed files (not all)
	idx     []int    // the revision's resources compared (not all), their indexes in p.Set
}

// len is how many of the revision's resources the scope compares.
func (sc *applyScope) len(p ApplyParams) int {
	if sc.all {
		return p.Set.Len()
	}
	return len(sc.idx)
}

// at is the index in p.Set of the scope's k-th resource.
func (sc *applyScope) at(k int) int {
	if sc.all {
		return k
	}
	return sc.idx[k]
}

// scopeOf reads the files recorded at the source's last apply and decides what p compares.
func scopeOf(ctx context.Context, tx pgx.Tx, p ApplyParams) (applyScope, error) {
	if p.Files == nil {
		return applyScope{all: true}, nil
	}
	rows, err := tx.Query(ctx, `SELECT path, hash FROM source_files WHERE source = $1`, p.Source)
	if err != nil {
		return applyScope{}, err
	}
	recorded := map[string]string{}
	for rows.Next() {
		var path, hash string
		if err := rows.Scan(&path, &hash); err != nil {
			rows.Close()
			return applyScope{}, err
		}
		recorded[path] = hash
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return applyScope{}, err
	}
	changed, all := changeplan.ChangedFiles(recorded, p.Files)
	if all {
		return applyScope{all: true}, nil
	}
	in := make(map[string]bool, len(changed))
	for _, f := range changed {
		in[f] = true
	}
	return applyScope{changed: changed, idx: p.Set.InFiles(in)}, nil
}

// appliedInScope reads the source's rows a scoped plan compares: those of the changed files,
// and those the scope's resources name (a resource that moved in from an unchanged file's
// past, or was orphaned or deleted there).
func appliedInScope(ctx context.Context, tx pgx.Tx, p ApplyParams, sc *applyScope) ([]changeplan.Applied, []int64, error) {
	if sc.all {
		return existingResources(ctx, tx, p.Source)
	}
	n := len(sc.idx)
	ns, kinds, names := make([]string, n), make([]string, n), make([]string, n)
	for k, i := range sc.idx {
		r := p.Set.At(i)
		ns[k], kinds[k], names[k] = r.Namespace, lowerASCII(r.Kind), r.Name
	}
	// Two index reads (by file, by identity) joined by UNION: the rows of one WHERE with an
	// OR, which PostgreSQL reads by scanning every row of the source (36 ms at 20,000 rows).
	return scanApplied(tx.Query(ctx, `SELECT `+appliedColumns+` FROM resources WHERE source = $1 AND file_path = ANY($2::text[])
		UNION
		SELECT `+appliedColumns+` FROM resources JOIN unnest($3::text[], $4::text[], $5::text[]) AS x(x_ns, x_kind, x_name)
		  ON namespace = x.x_ns AND lower(kind) = x.x_kind AND name = x.x_name
		WHERE source = $1`,
		p.Source, sc.changed, ns, kinds, names))
}

// scopedGuard decides the prune guard of a scoped plan on the revision's and the source's
// whole numbers (the plan saw only the scope's): it reads how many of the source's rows are
// active only when the plan would delete some. The active rows are the source's total
// (resource_counts, kept by triggers) less those being deleted (few, read through the partial
// index resources_source_deleting): counting the active rows themselves read every row of the
// source (272 ms at 200,000) whenever a one-file change removed a resource or a file.
func scopedGuard(ctx context.Context, tx pgx.Tx, p ApplyParams, sc *applyScope, plan *changeplan.Changes) error {
	if sc.all || len(plan.Gone) == 0 {
		return nil
	}
	var active int
	if err := tx.QueryRow(ctx, `SELECT COALESCE((SELECT sum(n) FROM resource_counts WHERE source = $1), 0)::bigint
		- (SELECT count(*) FROM resources WHERE source = $1 AND deletion_timestamp IS NOT NULL)`, p.Source).Scan(&active); err != nil {
		return fmt.Errorf("count active resources of %s: %w", p.Source, err)
	}
	pr := p.plannedPrune()
	plan.Guard.Reason, plan.Guard.Message = changeplan.PruneGuard(planSubject(p), p.NoManifests, p.Set.Len(), len(plan.Gone), active,
		pr.MaxFraction, pr.AllowEmpty)
	return nil
}

// recordFiles keeps the revision's files as the basis of the next apply's scope. A revision
// applied without them, or whose deletions a guard refused (rows of files gone remain), keeps
// none: the next apply compares everything.
func recordFiles(ctx context.Context, tx pgx.Tx, p ApplyParams, sc *applyScope, res *ApplyResult) error {
	if p.Files == nil || res.PruneSkipped != "" || sc.all {
		if _, err := tx.Exec(ctx, `DELETE FROM source_files WHERE source = $1`, p.Source); err != nil {
			return err
		}
		if p.Files == nil || res.PruneSkipped != "" {
			return nil
		}
	} else if _, err := tx.Exec(ctx, `DELETE FROM source_files WHERE source = $1 AND path = ANY($2::text[])`, p.Source, sc.changed); err != nil {
		return err
	}
	var paths, hashes []string
	add := func(path string) {
		if h, ok := p.Files[path]; ok {
			paths, hashes = append(paths, path), append(hashes, h)
		}
	}
	if sc.all {
		for path := range p.Files {
			add(path)
		}
	} else {
		for _, path := range sc.changed {
			add(path)
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO source_files (source, path, hash) SELECT $1, x.path, x.hash FROM unnest($2::text[], $3::text[]) AS x(path, hash)`,
		p.Source, paths, hashes)
	return err
}
