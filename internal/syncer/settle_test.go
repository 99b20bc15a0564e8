package syncer

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A revision that creates many resources leaves the tables analyzed once it is applied: the
// claims and lists that follow are planned with the rows' statistics.
func TestSyncAnalyzesAfterABulkCreate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var docs strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&docs, "---\napiVersion: infra.example.com/v1\nkind: Database\nmetadata: {name: db%04d}\nspec: {size: 1}\n", i)
	}
	r := &repo{}
	r.set(rev(1), map[string]string{"t.yaml": dbType, "dbs.yaml": docs.String()})
	s := b.syncer(r.source(), "r1", time.Minute)
	if _, err := s.SyncOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	var analyzed int
	if err := b.db.QueryRow(b.ctx, `SELECT count(*) FROM pg_stat_user_tables
		WHERE relname IN ('resources', 'resource_queue') AND last_analyze IS NOT NULL`).Scan(&analyzed); err != nil || analyzed != 2 {
		t.Errorf("tables analyzed after a sync creating 5,000 resources: %d of 2, %v", analyzed, err)
	}
}
