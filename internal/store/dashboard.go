package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/status"
)

// The dashboard's read queries. They select only what a page shows (never spec or action
// state for a list), filter and page in SQL, and count with one GROUP BY, so a page stays
// quick with 100,000 resources.

// PhaseCount is how many resources of one source are in one phase.
type PhaseCount struct {
	Source string
	Phase  string
	Count  int
}

// countAllSQL counts every resource by source and phase (CountResources).
const countAllSQL = `
		WITH total AS (SELECT source, sum(n)::bigint AS n FROM resource_counts GROUP BY source),
		     unsettled AS (SELECT source, phase, count(*) AS n FROM resource_phases WHERE phase <> 'Ready' GROUP BY source, phase)
		SELECT source, phase, n FROM unsettled
		UNION ALL
		SELECT t.source, 'Ready', t.n - COALESCE((SELECT sum(u.n) FROM unsettled u WHERE u.source = t.source), 0) FROM total t
		ORDER BY 1, 2`

// CountResources counts the resources in scope by source and phase in one statement.
//
// For Everything it never reads the whole table: the total per source comes from
// resource_counts (kept by triggers on insert and delete, migration 0029), the other phases
// from the partial index resource_phases_unsettled alone (few rows are in them at a time; the
// predicate is a literal so that the plan uses it), and Ready is the rest. A GROUP BY over the rows took 100–200 ms at 100,000 resources, and counting the
// source index 150–500 ms at a million. A narrower scope counts the rows of its namespaces
// through the identity index instead (the totals would include what the caller may not see).
func (s *Store) CountResources(ctx context.Context, sc Scope) ([]PhaseCount, error) {
	var rows pgx.Rows
	var err error
	if sc.All() {
		rows, err = s.reader().Query(ctx, countAllSQL)
	} else {
		rows, err = s.reader().Query(ctx, `SELECT source, phase, count(*) FROM resources WHERE namespace = ANY($1::text[])
		GROUP BY source, phase ORDER BY 1, 2`, sc.Namespaces())
	}
	if err != nil {
		return nil, fmt.Errorf("count resources: %w", err)
	}
	counts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PhaseCount, error) {
		var c PhaseCount
		err := r.Scan(&c.Source, &c.Phase, &c.Count)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("count resources: %w", err)
	}
	out := counts[:0]
	for _, c := range counts {
		if c.Count > 0 {
			out = append(out, c)
		}
	}
	return out, nil
}

// foldCountsSQL replaces the rows of resource_counts by one per source. Rows appended
// meanwhile stay (the DELETE sees only what its snapshot holds), so the sums do not change.
const foldCountsSQL = `WITH gone AS (DELETE FROM resource_counts RETURNING source, n)
	INSERT INTO resource_counts (source, n) SELECT source, sum(n) FROM gone GROUP BY source HAVING sum(n) <> 0`

// foldResourceCounts folds resource_counts (foldCountsSQL).
func (s *Store) foldResourceCounts(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, foldCountsSQL)
	if err != nil {
		return fmt.Errorf("fold resource counts: %w", err)
	}
	return nil
}

// ResourceSummary is one row of a resource table: status without spec.
type ResourceSummary struct {
	Namespace, Kind, Name string
	Source                string
	FilePath              string
	FileLine              int
	Revision              string
	Labels                map[string]string
	Generation            int64
	ObservedGeneration    int64
	Phase                 string
	Message               string
	// Ready is the Ready condition (zero when absent).
	Ready status.Condition
	// Attempt counts consecutive failures.
	Attempt int
	// StatusTime is when the reconciler last wrote status (nil: never).
	StatusTime *time.Time
	Deleting   bool
	Orphaned   bool
	Suspended  bool // an operator suspended it
}

// summaryColumns reads the queue row's columns by subqueries of the select list, which run
// for the rows of the page alone: a join reads the queue row of every row matching before
// the sort and limit (the Failed filter with 10,000 failing of a million: 130 ms against 31).
const summaryColumns = `namespace, kind, name, source, file_path, file_line, revision, labels, generation, observed_generation,
	phase, message, COALESCE((SELECT c FROM jsonb_array_elements(conditions) c WHERE c->>'type' = 'Ready' LIMIT 1), 'null'),
	attempt, GREATEST(status_updated_at, (SELECT q.last_reconcile_time FROM resource_queue q WHERE q.id = resources.id)), deletion_timestamp IS NOT NULL, orphaned,
	(SELECT q.suspended FROM resource_queue q WHERE q.id = resources.id)`

func scanSummary(row pgx.Row) (ResourceSummary, error) {
	var r ResourceSummary
	var labels, ready []byte
	err := row.Scan(&r.Namespace, &r.Kind, &r.Name, &r.Source, &r.FilePath, &r.FileLine, &r.Revision, &labels,
		&r.Generation, &r.ObservedGeneration, &r.Phase, &r.Message, &ready, &r.Attempt, &r.StatusTime, &r.Deleting, &r.Orphaned, &r.Suspended)
	if err != nil {
		return r, err
	}
	if err := decodeStrings(labels, &r.Labels); err != nil {
		return r, err
	}
	if string(ready) != "null" {
		if err := json.Unmarshal(ready, &r.Ready); err != nil {
			return r, err
		}
	}
	return r, nil
}

// SummaryFilter selects resources for the dashboard's table; empty fields match everything.
type SummaryFilter struct {
	Kind, Namespace, Source, Phase string
	Approval                       string // as ResourceFilter.Approval
	LabelSelector                  string
	// Query matches a substring of the name, case-insensitively.
	Query    string
	Limit    int    // default 100, at most 1000
	Continue string // token from the previous page (the API's format)
}

// ListResourceSummaries returns one page of the resources in scope ordered by namespace,
// kind, name (the identity index's order, so the scan stops after the page) and the token of
// the next page.
func (s *Store) ListResourceSummaries(ctx context.Context, sc Scope, f SummaryFilter) ([]ResourceSummary, string, error) {
	q, err := resourcePage(sc, ResourceFilter{Kind: f.Kind, Namespace: f.Namespace, Source: f.Source, Phase: f.Phase,
		Approval: f.Approval, LabelSelector: f.LabelSelector, Limit: f.Limit, Continue: f.Continue}, f.Query)
	if err != nil {
		return nil, "", err
	}
	var items []ResourceSummary
	err = s.readPage(ctx, q, summaryColumns, "", func(rows pgx.Rows) (int, error) {
		var err error
		items, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ResourceSummary, error) { return scanSummary(r) })
		return len(items), err
	})
	if err != nil {
		return nil, "", fmt.Errorf("list resources: %w", err)
	}
	limit := q.limit
	next := ""
	if len(items) > limit {
		items = items[:limit]
		last := items[len(items)-1]
		next = nextToken(last.Namespace, last.Kind, last.Name)
	}
	return items, next, nil
}

func decodeContinue(tok string) ([3]string, error) {
	var key [3]string
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err == nil {
		err = json.Unmarshal(b, &key)
	}
	if err != nil {
		return key, fmt.Errorf("%w: invalid continue token", ErrBadRequest)
	}
	return key, nil
}

// escapeLike makes s match literally inside a LIKE pattern (backslash is the default escape).
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// RecentFailures returns up to limit resources in scope in the Failed phase, the most
// recently written first.
func (s *Store) RecentFailures(ctx context.Context, sc Scope, limit int) ([]ResourceSummary, error) {
	if limit <= 0 || limit > 1000 {
		limit = 10
	}
	args := params{limit}
	cond := ""
	if w := sc.where("namespace", args.add); w != "" {
		cond = " AND " + w
	}
	rows, err := s.reader().Query(ctx, recentFailuresSQL(cond), args...)
	if err != nil {
		return nil, fmt.Errorf("recent failures: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ResourceSummary, error) { return scanSummary(r) })
}

// recentFailuresSQL is RecentFailures' statement, with cond (" AND …" or "") added to its
// condition.
func recentFailuresSQL(cond string) string {
	return "SELECT " + summaryColumns + ` FROM resources
		WHERE id IN (SELECT p.id FROM resource_phases p WHERE p.phase = 'Failed')` + cond + `
		ORDER BY COALESCE(GREATEST(status_updated_at, (SELECT q.last_reconcile_time FROM resource_queue q WHERE q.id = resources.id)), updated_at) DESC, id DESC LIMIT $1`
}

// ListNamespaces returns up to limit distinct namespaces in scope that have resources, in
// order. For Everything it skips along the identity index (one probe per namespace) instead
// of reading every row; a narrower scope probes its own namespaces.
func (s *Store) ListNamespaces(ctx context.Context, sc Scope, limit int) ([]string, error) {
	if limit <= 0 || limit > 10000 {
		limit = 1000
	}
	var rows pgx.Rows
	var err error
	if sc.All() {
		rows, err = s.reader().Query(ctx, `WITH RECURSIVE ns(n) AS (
		  (SELECT namespace FROM resources ORDER BY namespace LIMIT 1)
		  UNION ALL
		  SELECT (SELECT namespace FROM resources WHERE namespace > ns.n ORDER BY namespace LIMIT 1) FROM ns WHERE ns.n IS NOT NULL
		) SELECT n FROM ns WHERE n IS NOT NULL LIMIT $1`, limit)
	} else {
		rows, err = s.reader().Query(ctx, `SELECT n FROM unnest($1::text[]) n
		WHERE EXISTS (SELECT 1 FROM resources WHERE namespace = n) ORDER BY n LIMIT $2`, sc.Namespaces(), limit)
	}
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
