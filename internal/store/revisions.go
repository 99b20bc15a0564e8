package store

import (
	"context"
	"fmt"
	"github.com/trueup-dev/trueup/internal/clip"
)

// RevisionProgress says how far the resources a revision changed have got.
type RevisionProgress struct {
	Total   int // resources counted (see RevisionProgress)
	Ready   int // phase Ready at their current generation
	Failed  int // phase Failed (retrying or Stalled), or a deletion whose last attempt failed
	Pending int // everything else: waiting, reconciling, being deleted
	// Stalled counts the Failed ones that will not change until their spec does (Stalled=True).
	Stalled int
	// Failures describes the first failing resources, "Kind namespace/name: message", in
	// identity order.
	Failures []string
	// SourceRevision is the source's applied revision now: when it is no longer the revision
	// asked about, a newer one has re-stamped some of its rows and the counts say little.
	SourceRevision string
}

// Settled reports whether no resource is still on its way: each is Ready or Failed.
func (p RevisionProgress) Settled() bool { return p.Pending == 0 }

// maxFailures bounds RevisionProgress.Failures: a commit status has room for a few only.
const maxFailures = 5

// RevisionProgress counts the resources of source whose desired state revision last changed,
// plus every resource of the source being deleted: ApplyRevision marks removed rows for
// deletion without stamping them with the revision, and the state a commit declares is not
// reached until they are gone. Rows already removed are simply absent.
func (s *Store) RevisionProgress(ctx context.Context, source, revision string) (RevisionProgress, error) {
	var p RevisionProgress
	err := s.pool.QueryRow(ctx, `
		WITH r AS (
		  SELECT namespace, kind, name, message, deletion_timestamp IS NOT NULL AS deleting,
		    conditions @> '[{"type":"Stalled","status":"True"}]'::jsonb AS stalled,
		    CASE WHEN deletion_timestamp IS NOT NULL THEN CASE WHEN attempt > 0 THEN 'failed' ELSE 'pending' END
		         WHEN phase = 'Failed' THEN 'failed'
		         WHEN phase = 'Ready' AND observed_generation = generation THEN 'ready'
		         ELSE 'pending' END AS state
		  FROM resources
		  WHERE source = $1 AND (revision = $2 OR deletion_timestamp IS NOT NULL)
		)
		SELECT count(*),
		  count(*) FILTER (WHERE state = 'ready'),
		  count(*) FILTER (WHERE state = 'failed'),
		  count(*) FILTER (WHERE state = 'failed' AND stalled AND NOT deleting),
		  COALESCE((SELECT array_agg(f.line ORDER BY f.namespace, lower(f.kind), f.name)
		            FROM (SELECT namespace, kind, name,
		                    kind || ' ' || namespace || '/' || name || ': ' ||
		                      CASE WHEN message = '' THEN 'failed' ELSE left(message, 300) END AS line
		                  FROM r WHERE state = 'failed'
		                  ORDER BY namespace, lower(kind), name LIMIT $3) f), '{}'),
		  COALESCE((SELECT s.revision FROM sources s WHERE s.name = $1), '')
		FROM r`, source, revision, maxFailures).Scan(&p.Total, &p.Ready, &p.Failed, &p.Stalled, &p.Failures, &p.SourceRevision)
	if err != nil {
		return RevisionProgress{}, fmt.Errorf("progress of %s@%s: %w", source, clip.Rev(revision), err)
	}
	p.Pending = p.Total - p.Ready - p.Failed
	return p, nil
}
