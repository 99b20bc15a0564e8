package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// seedHistory gives each of resources resources (r0, r1, …) perResource history rows, in
// rounds so that ids interleave as they do in production; a resource's first old rows
// finished two days ago, the rest within the last hours.
func seedHistory(t *testing.T, st *Store, resources, perResource, old int) {
	t.Helper()
	_, err := st.pool.Exec(context.Background(), `
		INSERT INTO reconcile_history (resource_uid, namespace, kind, name, generation, operation, trigger, result, started_at, finished_at)
		SELECT gen_random_uuid(), 'ns', 'Database', 'r' || r, g, 'reconcile', 'resync', 'Succeeded', ts, ts
		FROM generate_series(1, $2::int) g, generate_series(0, $1::int - 1) r,
		     LATERAL (SELECT CASE WHEN g <= $3 THEN now() - interval '48 hours' ELSE now() - ($2 - g) * interval '1 minute' END AS ts) x
		ORDER BY g, r`, resources, perResource, old)
	if err != nil {
		t.Fatal(err)
	}
}

// historyCounts returns, per resource name, how many rows it has and its lowest generation.
func historyCounts(t *testing.T, st *Store) map[string][2]int64 {
	t.Helper()
	rows, err := st.pool.Query(context.Background(), `SELECT name, count(*), min(generation) FROM reconcile_history GROUP BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][2]int64{}
	for rows.Next() {
		var name string
		var n, g int64
		if err := rows.Scan(&name, &n, &g); err != nil {
			t.Fatal(err)
		}
		out[name] = [2]int64{n, g}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func maxID(t *testing.T, st *Store, table string) int64 {
	t.Helper()
	var id int64
	if err := st.pool.QueryRow(context.Background(), `SELECT COALESCE(max(id), 0) FROM `+table).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestRetentionIncremental: 50k history rows over 500 resources, then new rows for 100 of them.
// The incremental run trims exactly those 100 to their newest rows, leaves the other 400
// alone, and applies the age bound to every resource.
func TestRetentionIncremental(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	st.trimRows = 150 // the new rows' resources read back in several windows, each named in more than one
	ctx := context.Background()
	const resources, perResource, old, keep = 500, 100, 10, 20
	seedHistory(t, st, resources, perResource, old)
	// A previous run saw everything so far; source events have no resource to be trimmed by.
	since := RetentionMarks{History: maxID(t, st, "reconcile_history")}
	_, err := st.pool.Exec(ctx, `
		INSERT INTO reconcile_history (resource_uid, namespace, kind, name, generation, operation, trigger, result, started_at, finished_at)
		SELECT gen_random_uuid(), 'ns', 'DATABASE', 'r' || r, $1 + g, 'reconcile', 'spec-changed', 'Succeeded', now(), now()
		FROM generate_series(1, 5) g, generate_series(0, 99) r ORDER BY g, r`, perResource)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.pool.Exec(ctx, `INSERT INTO events (namespace, kind, name, source, type, reason, message)
		SELECT '', '', '', 'infra', 'Normal', 'Synced', 'm' FROM generate_series(1, 30)`)
	if err != nil {
		t.Fatal(err)
	}
	history := RetentionRule{MaxAge: 24 * time.Hour, MaxPerResource: keep}
	events := RetentionRule{MaxPerResource: 5}
	n, next, err := st.Retain(ctx, RetentionOptions{History: history, Events: events, Since: since, BatchSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	got := historyCounts(t, st)
	if len(got) != resources {
		t.Fatalf("%d resources have history, want %d", len(got), resources)
	}
	for r := range resources {
		name := "r" + strconv.Itoa(r)
		// Touched (kind spelt differently: identity is case-insensitive): the 20 newest are
		// generations 86..105. Untouched: all but the old rows, generations 11..100.
		want := [2]int64{keep, perResource + 5 - keep + 1}
		if r >= 100 {
			want = [2]int64{perResource - old, old + 1}
		}
		if got[name] != want {
			t.Errorf("%s: %d rows from generation %d, want %d from %d", name, got[name][0], got[name][1], want[0], want[1])
		}
	}
	wantRemoved := int64(resources*old + 100*(perResource-old+5-keep))
	if n.History != wantRemoved || n.Events != 0 {
		t.Errorf("removed %+v, want %d history rows and no events", n, wantRemoved)
	}
	if want := (RetentionMarks{History: maxID(t, st, "reconcile_history"), Events: maxID(t, st, "events")}); next != want {
		t.Errorf("next marks %+v, want %+v", next, want)
	}

	// Nothing new since: nothing to do, the marks stay.
	n, again, err := st.Retain(ctx, RetentionOptions{History: history, Events: events, Since: next})
	if err != nil || n != (Retained{}) || again != next {
		t.Errorf("second run removed %+v, marks %+v (want %+v), err %v", n, again, next, err)
	}
}

func TestLeaseHeld(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	l, ok, err := st.AcquireLease(ctx, "maintenance", "a", time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	for _, tc := range []struct {
		name string
		l    Lease
		want bool
	}{
		{"held", l, true},
		{"other holder", Lease{Name: l.Name, Holder: "b", Term: l.Term}, false},
		{"older term", Lease{Name: l.Name, Holder: l.Holder, Term: l.Term - 1}, false},
		{"other lease", Lease{Name: "source:infra", Holder: l.Holder, Term: l.Term}, false},
	} {
		if got, err := st.LeaseHeld(ctx, tc.l); err != nil || got != tc.want {
			t.Errorf("%s: LeaseHeld = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if err := st.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got, err := st.LeaseHeld(ctx, l); err != nil || got {
		t.Errorf("after release: LeaseHeld = %v, %v; want false", got, err)
	}
}

// takeOver expires the maintenance lease and gives it to holder, as happens when its holder
// stops renewing.
func takeOver(t *testing.T, st *Store, holder string) Lease {
	t.Helper()
	ctx := context.Background()
	if _, err := st.pool.Exec(ctx, `UPDATE leases SET expires_at = now() - interval '1 second' WHERE name = 'maintenance'`); err != nil {
		t.Error(err)
		return Lease{}
	}
	l, ok, err := st.AcquireLease(ctx, "maintenance", holder, time.Minute)
	if err != nil || !ok {
		t.Errorf("take over: %v %v", ok, err)
	}
	return l
}

// TestRetentionLeaseLost: a run fenced by a lease that moved on deletes nothing, and one whose
// lease moves on while it runs stops at the next batch.
func TestRetentionLeaseLost(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	const resources, perResource = 500, 100
	seedHistory(t, st, resources, perResource, 0)
	count := func() int64 {
		var n int64
		if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_history`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	rule := RetentionRule{MaxPerResource: 1}

	l, ok, err := st.AcquireLease(ctx, "maintenance", "me", time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	takeOver(t, st, "other")
	n, next, err := st.Retain(ctx, RetentionOptions{History: rule, Lease: &l})
	if !errors.Is(err, ErrLeaseLost) || n != (Retained{}) || next != (RetentionMarks{}) {
		t.Fatalf("with a lost lease: removed %+v, marks %+v, err %v; want ErrLeaseLost and nothing", n, next, err)
	}
	if c := count(); c != resources*perResource {
		t.Fatalf("%d rows left, want all %d", c, resources*perResource)
	}

	// Small batches make the run long enough to lose the lease in the middle of it.
	l = takeOver(t, st, "me")
	type result struct {
		n    Retained
		next RetentionMarks
		err  error
	}
	done := make(chan result, 1)
	go func() {
		n, next, err := st.Retain(ctx, RetentionOptions{History: rule, Lease: &l, BatchSize: 5})
		done <- result{n, next, err}
	}()
	for deadline := time.Now().Add(30 * time.Second); count() == resources*perResource; {
		if time.Now().After(deadline) {
			t.Fatal("retention deleted nothing within 30s")
		}
	}
	takeOver(t, st, "other")
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("retention still running 30s after losing its lease")
	}
	if !errors.Is(r.err, ErrLeaseLost) || r.next != (RetentionMarks{}) {
		t.Fatalf("lease lost mid-run: marks %+v, err %v; want ErrLeaseLost and unmoved marks", r.next, r.err)
	}
	left := count()
	if left <= resources || r.n.History != resources*perResource-left {
		t.Errorf("lease lost mid-run: %d rows left (the run would leave %d), removed %+v", left, resources, r.n)
	}
}

// Retention forgets a recorded revision (and its author) once it is older than history's max
// age and nothing reads it: not a resource's revision nor its applied one, not named by an
// approval request, not its source's applied revision.
func TestRetentionPrunesSourceRevisions(t *testing.T) {
	t.Parallel()
	st := openTest(t, "s")
	ctx := context.Background()
	// w00 changes at r2 and r3; w01 stays at r1 (applied at r0); r4 changes nothing (the
	// source's revision).
	for i, size := range []int{1, 2, 3, 3} {
		set := widgets(2, func(w int) int { return []int{size, 1}[w] })
		if _, err := st.ApplyRevision(ctx, ApplyParams{Source: "s", Revision: "r" + strconv.Itoa(i+1), Set: set}); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := st.pool.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE resources SET applied_revision = 'r0' WHERE name = 'w01'`)
	exec(`INSERT INTO source_revisions (source, revision) VALUES ('s', 'r0'), ('s', 'gone'), ('other', 'r1'), ('s', 'fresh')`)
	exec(`INSERT INTO approval_requests (resource_id, generation, change_type, revision, plan_hash, plan, decision, policy)
		SELECT id, generation, 'update', 'r2', 'h', '{}', 'requireApproval', 'p' FROM resources WHERE name = 'w00'`)
	exec(`UPDATE source_revisions SET applied_at = now() - interval '48 hours' WHERE revision <> 'fresh'`)
	// Each source's newest KeptRevisions stay whatever their age: these are newer.
	exec(`INSERT INTO source_revisions (source, revision, applied_at) SELECT s, 'newer' || g, now() - interval '30 hours'
		FROM unnest(ARRAY['s', 'other']) s, generate_series(1, $1::int) g`, KeptRevisions)
	left := func() []string {
		t.Helper()
		rows, err := st.pool.Query(ctx, `SELECT source || '@' || revision FROM source_revisions WHERE revision NOT LIKE 'newer%' ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	day := RetentionRule{MaxAge: 24 * time.Hour}
	if _, err := st.EnforceRetention(ctx, RetentionRule{}, day); err != nil {
		t.Fatal(err)
	}
	if got := len(left()); got != 8 {
		t.Errorf("without a history max age, revisions went: %v", left())
	}
	if _, err := st.EnforceRetention(ctx, day, day); err != nil {
		t.Fatal(err)
	}
	if got, want := left(), []string{"s@fresh", "s@r0", "s@r1", "s@r2", "s@r3", "s@r4"}; !slices.Equal(got, want) {
		t.Errorf("revisions kept %v, want %v", got, want)
	}
	exec(`DELETE FROM approval_requests`)
	if _, err := st.EnforceRetention(ctx, day, day); err != nil {
		t.Fatal(err)
	}
	if got, want := left(), []string{"s@fresh", "s@r0", "s@r1", "s@r3", "s@r4"}; !slices.Equal(got, want) {
		t.Errorf("revisions kept once the request went %v, want %v", got, want)
	}
}

// Retention keeps each source's newest KeptRevisions revisions, and the revision it is
// pinned at, whatever their age.
func TestRetentionKeepsNewestAndPinnedRevisions(t *testing.T) {
	t.Parallel()
	st := openTest(t, "k")
	ctx := context.Background()
	if _, err := st.pool.Exec(ctx, `INSERT INTO source_revisions (source, revision, applied_at)
		SELECT 'k', 'r' || g, now() - interval '48 hours' + g * interval '1 second' FROM generate_series(1, $1::int + 2) g`, KeptRevisions); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, `UPDATE sources SET pinned_revision = 'r1' WHERE name = 'k'`); err != nil {
		t.Fatal(err)
	}
	day := RetentionRule{MaxAge: 24 * time.Hour}
	if _, err := st.EnforceRetention(ctx, day, day); err != nil {
		t.Fatal(err)
	}
	hist, err := st.SourceHistory(ctx, "k", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != KeptRevisions+1 || hist[0].Revision != fmt.Sprint("r", KeptRevisions+2) || hist[len(hist)-1].Revision != "r1" || !hist[len(hist)-1].Pinned {
		t.Errorf("kept %d revisions, newest %s, oldest %+v; want %d: the newest %d and the pinned r1", len(hist), hist[0].Revision, hist[len(hist)-1], KeptRevisions+1, KeptRevisions)
	}
}

// TestTrimCandidates: the resources a per-resource trim reads back are those named by the rows
// past the mark that hold more rows than the bound, the kind matched in any case; from zero,
// every resource over the bound. Resources named by new rows within their bound (a drain's one
// attempt each) are not read back.
func TestTrimCandidates(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	seedHistory(t, st, 4, 30, 0) // r0..r3: 30 rows each
	mark := maxID(t, st, "reconcile_history")
	// New rows: r0 and r1 (over the bound), and the new resources n0..n9 (one row each).
	if _, err := st.pool.Exec(ctx, `
		INSERT INTO reconcile_history (resource_uid, namespace, kind, name, generation, operation, trigger, result, started_at, finished_at)
		SELECT gen_random_uuid(), 'ns', k, n, 100, 'reconcile', 'resync', 'Succeeded', now(), now()
		FROM (VALUES ('DATABASE', 'r0'), ('Database', 'r1')) v(k, n)
		UNION ALL
		SELECT gen_random_uuid(), 'ns', 'Database', 'n' || i, 1, 'reconcile', 'resync', 'Succeeded', now(), now() FROM generate_series(0, 9) i`); err != nil {
		t.Fatal(err)
	}
	top := maxID(t, st, "reconcile_history")
	read := func(since int64, keep int) []string {
		t.Helper()
		rows, err := st.pool.Query(ctx, trimCandidatesSQL(historyTable, since), since, top, keep)
		if err != nil {
			t.Fatal(err)
		}
		names, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			var ns, kind, name string
			err := r.Scan(&ns, &kind, &name)
			return ns + "/" + kind + "/" + name, err
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		return names
	}
	for _, c := range []struct {
		since int64
		keep  int
		want  []string
	}{
		{mark, 20, []string{"ns/database/r0", "ns/database/r1"}},
		{mark, 31, nil}, // 31 rows each: none over
		{mark, 30, []string{"ns/database/r0", "ns/database/r1"}},
		{0, 20, []string{"ns/database/r0", "ns/database/r1", "ns/database/r2", "ns/database/r3"}},
		{0, 0, append([]string{"ns/database/n0", "ns/database/n1", "ns/database/n2", "ns/database/n3", "ns/database/n4",
			"ns/database/n5", "ns/database/n6", "ns/database/n7", "ns/database/n8", "ns/database/n9"},
			"ns/database/r0", "ns/database/r1", "ns/database/r2", "ns/database/r3")},
	} {
		if got := read(c.since, c.keep); !slices.Equal(got, c.want) {
			t.Errorf("since %d, keep %d: read %v; want %v", c.since, c.keep, got, c.want)
		}
	}
}

// TestTrimWindows: a trim from zero reads back in one counting pass; from a mark, in windows
// of new ids, the last one short.
func TestTrimWindows(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		since, mark, size int64
		want              [][2]int64
	}{
		{0, 25, 10, [][2]int64{{0, 25}}},
		{5, 5, 10, nil},
		{5, 25, 10, [][2]int64{{5, 15}, {15, 25}}},
		{5, 26, 10, [][2]int64{{5, 15}, {15, 25}, {25, 26}}},
		{5, 6, 10, [][2]int64{{5, 6}}},
	} {
		var got [][2]int64
		for lo, hi := range trimWindows(c.since, c.mark, c.size) {
			got = append(got, [2]int64{lo, hi})
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("trimWindows(%d, %d, %d) = %v; want %v", c.since, c.mark, c.size, got, c.want)
		}
	}
}

// TestRetentionEveryWindow: resources each named once by the new rows, their rows on both
// sides of every window's edge, are all trimmed to their bound, and the mark moves to the
// last new row.
func TestRetentionEveryWindow(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	st.trimRows = 7 // 30 new rows: windows of 7, 7, 7, 7 and 2
	ctx := context.Background()
	seedHistory(t, st, 30, 10, 0)
	since := RetentionMarks{History: maxID(t, st, "reconcile_history"), Events: maxID(t, st, "events")}
	if _, err := st.pool.Exec(ctx, `
		INSERT INTO reconcile_history (resource_uid, namespace, kind, name, generation, operation, trigger, result, started_at, finished_at)
		SELECT gen_random_uuid(), 'ns', 'Database', 'r' || r, 11, 'reconcile', 'resync', 'Succeeded', now(), now()
		FROM generate_series(0, 29) r ORDER BY r`); err != nil {
		t.Fatal(err)
	}
	n, next, err := st.Retain(ctx, RetentionOptions{History: RetentionRule{MaxPerResource: 5}, Since: since})
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range historyCounts(t, st) {
		if got != [2]int64{5, 7} { // generations 7..11
			t.Errorf("%s: %d rows from generation %d, want 5 from 7", name, got[0], got[1])
		}
	}
	if n.History != 30*6 || next.History != maxID(t, st, "reconcile_history") {
		t.Errorf("removed %d history rows (want %d), next mark %d (want %d)", n.History, 30*6, next.History, maxID(t, st, "reconcile_history"))
	}
}
