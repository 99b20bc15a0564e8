package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
)

func TestReplicationLag(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	samples := []walSample{{t0, 100}, {t0.Add(time.Second), 200}, {t0.Add(2 * time.Second), 300}}
	for _, c := range []struct {
		name     string
		replayed int64
		want     time.Duration
		left     int
	}{
		{"replayed nothing: the oldest sample's age", 50, 3 * time.Second, 3},
		{"replayed up to the first", 100, 2 * time.Second, 2},
		{"between two samples", 250, time.Second, 1},
		{"replayed all", 300, 0, 0},
		{"replayed past the last", 400, 0, 0},
	} {
		lag, left := replicationLag(append([]walSample(nil), samples...), c.replayed, t0.Add(3*time.Second))
		if lag != c.want || len(left) != c.left {
			t.Errorf("%s: lag %s with %d samples left, want %s with %d", c.name, lag, len(left), c.want, c.left)
		}
	}
}

// TestReplicationLagPastTheCap keeps a standby stuck for two hours, past maxLagSamples one a
// second, then lets it replay the primary's position of the first hour within one tick: it
// is still an hour behind, and the lag reads 0 only once it replays the current position.
func TestReplicationLagPastTheCap(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	lsnAt := func(s int) int64 { return int64(s) * 1000 } // the primary writes steadily
	var samples []walSample
	var lag time.Duration
	s := 0
	tick := func(replayed int64) {
		now := t0.Add(time.Duration(s) * time.Second)
		samples = addSample(samples, walSample{at: now, lsn: lsnAt(s)})
		lag, samples = replicationLag(samples, replayed, now)
		s++
	}
	for s <= 7200 { // replays nothing for two hours
		tick(0)
	}
	if lag < 2*time.Hour-time.Second || len(samples) > maxLagSamples {
		t.Fatalf("stuck two hours: lag %s with %d samples", lag, len(samples))
	}
	tick(lsnAt(3600)) // caught up to the position of an hour ago only
	if want := 3600 * time.Second; lag < want || lag > want+10*time.Second {
		t.Errorf("an hour behind: lag %s, want %s to within the samples' spacing", lag, want)
	}
	tick(lsnAt(3700))
	if want := 3501 * time.Second; lag < want || lag > want+10*time.Second {
		t.Errorf("replayed 100 s more within one tick: lag %s, want %s", lag, want)
	}
	tick(lsnAt(s)) // replays the current position
	if lag != 0 || len(samples) != 0 {
		t.Errorf("caught up: lag %s with %d samples left", lag, len(samples))
	}
}

func TestReadsOnPrimary(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		lag          time.Duration
		err          error
		wasOnPrimary bool
		want         bool
	}{
		{"caught up", 0, nil, false, false},
		{"at the bound", 10 * time.Second, nil, false, false},
		{"past the bound", 10*time.Second + 1, nil, false, true},
		{"standby does not answer", 0, errors.New("connection refused"), false, true},
		{"on the primary, back under the bound", 9 * time.Second, nil, true, true},
		{"on the primary, at half the bound", 5 * time.Second, nil, true, true},
		{"on the primary, under half the bound", 5*time.Second - 1, nil, true, false},
		{"on the primary, standby does not answer", 0, errors.New("connection refused"), true, true},
		{"on the standby, between half and the bound", 7 * time.Second, nil, false, false},
	} {
		if got := readsOnPrimary(c.lag, 10*time.Second, c.err, c.wasOnPrimary); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestStandbyRecordLogsSwitches feeds record a lag hovering about maxLag: the reads move to
// the primary once, come back once under maxLag/2, and each move logs one line.
func TestStandbyRecordLogsSwitches(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	sb := &standby{maxLag: 10 * time.Second, onPrimary: true, log: slog.New(slog.NewTextHandler(&logs, nil))}
	var where []bool
	for _, lag := range []time.Duration{2, 11, 9, 11, 9, 6, 4, 9, 11} {
		sb.record(lag*time.Second, nil)
		_, on := (&Store{standby: sb}).ReadLag()
		where = append(where, on)
	}
	if got, want := fmt.Sprint(where), "[false true true true true true false false true]"; got != want {
		t.Errorf("on the primary %s, want %s", got, want)
	}
	if n := strings.Count(logs.String(), "\n"); n != 4 {
		t.Errorf("%d log lines, want 4 (the first measurement and three moves):\n%s", n, logs.String())
	}
}

// TestStandbyNotInRecovery gives a read url that is no standby (the primary itself, as a
// promoted standby would be): the reads stay on the primary, and the warning names the read
// url's host and database, not its password.
func TestStandbyNotInRecovery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t, MigrateURL)
	var logs lockedBuffer
	st, err := Open(ctx, url, Options{MaxConns: 2, ReadURL: url, MaxReadLag: time.Hour, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	deadline := time.Now().Add(time.Minute)
	for {
		st.standby.mu.Lock()
		measured := st.standby.measured
		st.standby.mu.Unlock()
		if measured {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no measurement after a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, on := st.ReadLag(); !on {
		t.Error("reads go to a server not in recovery")
	}
	if st.reader() != st.pool {
		t.Error("reader is not the primary's pool")
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, "not in recovery") || !strings.Contains(out, cfg.Database) || !strings.Contains(out, cfg.Host) {
		t.Errorf("warning does not name the read url's server: %s", out)
	}
	if cfg.Password != "" && strings.Contains(out, cfg.Password) {
		t.Errorf("warning shows the password: %s", out)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStandbyReads runs a real streaming standby (pg_basebackup -R): reads are served by it
// (a row written while its replay is paused is not seen until replay resumes, and its
// pg_stat_activity shows the store's sessions), the lag grows while replay is paused, and past
// MaxReadLag reads go to the primary until the standby catches up.
func TestStandbyReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := pgtest.StartCluster(t)
	url := primary.URL("trueup")
	if err := MigrateURL(ctx, url); err != nil {
		t.Fatal(err)
	}
	standby := pgtest.StartStandby(t, primary)
	open := func(maxLag time.Duration) *Store {
		st, err := Open(ctx, url, Options{MaxConns: 4, ReadURL: standby.URL("trueup"), MaxReadLag: maxLag})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return st
	}
	patient, strict := open(time.Hour), open(time.Second)
	waitReads := func(st *Store, onPrimary bool) time.Duration {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			lag, on := st.ReadLag()
			st.standby.mu.Lock()
			measured := st.standby.measured
			st.standby.mu.Unlock()
			if measured && on == onPrimary {
				return lag
			}
			if time.Now().After(deadline) {
				t.Fatalf("reads on the primary: %v after a minute (lag %s), want %v", on, lag, onPrimary)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitReads(patient, false)
	waitReads(strict, false)

	// The store's read sessions are the standby's.
	sbPool, err := Open(ctx, standby.URL("trueup"), Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sbPool.Close()
	if _, _, err := patient.ListResources(ctx, Everything, ResourceFilter{}); err != nil {
		t.Fatal(err)
	}
	var sessions int
	if err := sbPool.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = 'trueup' AND pid <> pg_backend_pid()`).Scan(&sessions); err != nil {
		t.Fatal(err)
	}
	if sessions == 0 {
		t.Error("no session of the store on the standby")
	}

	if _, err := sbPool.pool.Exec(ctx, "SELECT pg_wal_replay_pause()"); err != nil {
		t.Fatal(err)
	}
	if _, err := patient.pool.Exec(ctx, `INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash)
		VALUES ('default', 'Thing', 'late', 'v1', 'src', 'h', 'h')`); err != nil {
		t.Fatal(err)
	}
	// Not replayed: the standby does not have the row, and the store reads the standby.
	if _, err := patient.GetResource(ctx, "default", "Thing", "late"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a row the standby has not replayed: %v, want not found", err)
	}
	if _, err := patient.Primary().GetResource(ctx, "default", "Thing", "late"); err != nil {
		t.Fatalf("the store's primary: %v", err)
	}
	// Writes keep going to the primary: the lag grows past a second and strict reads there.
	lag := waitReads(strict, true)
	if lag <= time.Second {
		t.Errorf("lag %s when reads moved to the primary, want over 1s", lag)
	}
	if _, err := strict.GetResource(ctx, "default", "Thing", "late"); err != nil {
		t.Fatalf("reads fell back to the primary, which has the row: %v", err)
	}

	if _, err := sbPool.pool.Exec(ctx, "SELECT pg_wal_replay_resume()"); err != nil {
		t.Fatal(err)
	}
	waitReads(strict, false)
	if _, err := patient.GetResource(ctx, "default", "Thing", "late"); err != nil {
		t.Fatalf("after replay: %v", err)
	}
}

// TestStandbyExecMode opens the read standby's pool beside a session url: it runs without
// named prepared statements as the primary's pools do, unless its url chose a mode itself;
// without a session url it keeps pgx's default.
func TestStandbyExecMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t, MigrateURL)
	withParam := func(u, p string) string {
		if strings.Contains(u, "?") {
			return u + "&" + p
		}
		return u + "?" + p
	}
	for _, c := range []struct {
		name, session, read string
		want                pgx.QueryExecMode
	}{
		{"pooled", url, url, pgx.QueryExecModeCacheDescribe},
		{"chosen in the url", url, withParam(url, "default_query_exec_mode=exec"), pgx.QueryExecModeExec},
		{"direct", "", url, pgx.QueryExecModeCacheStatement},
	} {
		st, err := Open(ctx, url, Options{MaxConns: 2, SessionURL: c.session, ReadURL: c.read, MaxReadLag: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if got := st.standby.pool.Config().ConnConfig.DefaultQueryExecMode; got != c.want {
			t.Errorf("%s: the standby's pool runs %v, want %v", c.name, got, c.want)
		}
		st.Close()
	}
}
