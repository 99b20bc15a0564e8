package store

import (
	"context"
	"strings"
	"testing"
)

// byPlace updates each locked row once: by its place when the row is still there, by key
// when an earlier write of the transaction moved it.
func TestByPlace(t *testing.T) {
	st := openTest(t, "s")
	ctx := context.Background()
	applyRefreshed(t, st, "s", "r1", chainSet())
	tx, err := st.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, "SELECT id, ctid::text FROM resource_queue ORDER BY id FOR UPDATE")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	var places []string
	for rows.Next() {
		var id int64
		var at string
		if err := rows.Scan(&id, &at); err != nil {
			t.Fatal(err)
		}
		ids, places = append(ids, id), append(places, at)
	}
	if rows.Err() != nil || len(ids) != 3 {
		t.Fatalf("locked %d rows: %v", len(ids), rows.Err())
	}
	// The first row moves: its locked place no longer holds it.
	if _, err := tx.Exec(ctx, "UPDATE resource_queue SET claimed_at = now() WHERE id = $1", ids[0]); err != nil {
		t.Fatal(err)
	}
	const flip = `UPDATE resource_queue q SET dirty = NOT q.dirty FROM unnest($1::bigint[], $2::tid[]) AS x(id, at)
		WHERE q.id = x.id AND %s RETURNING q.id`
	if err := byPlace(ctx, tx, flip, "q", ids, ids, places); err != nil {
		t.Fatal(err)
	}
	var flipped int
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM resource_queue WHERE dirty").Scan(&flipped); err != nil {
		t.Fatal(err)
	}
	if flipped != 3 {
		t.Fatalf("%d rows updated once, want 3", flipped)
	}
	// Found by place: a TID scan, not the key.
	for _, sql := range []string{resultQueueSQL, resultResourcesSQL} {
		alias := map[bool]string{true: "q", false: "r"}[sql == resultQueueSQL]
		plan := explain(t, tx, strings.Replace(sql, "%s", alias+".ctid = x.at", 1), make([]any, strings.Count(sql, "[]"))...)
		if !strings.Contains(plan, "Tid Scan") {
			t.Fatalf("plan without a TID scan:\n%s", plan)
		}
	}
}
