package store

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
)

func TestSessionsPooled(t *testing.T) {
	t.Parallel()
	first := sessionRead{pid: 10}
	again := func(pid int32, saw bool) *sessionRead { return &sessionRead{pid: pid, saw: saw} }
	for _, c := range []struct {
		name         string
		other        sessionRead
		again        *sessionRead
		want         bool
		wantDecision bool // pooled on the first two reads alone (the probe then stops before the third)
	}{
		{"b was handed a's server connection", sessionRead{pid: 10, saw: true}, nil, true, true},
		{"b's server connection had a's setting (pid reused)", sessionRead{pid: 11, saw: true}, nil, true, true},
		{"b has its own session: a reads again", sessionRead{pid: 11}, nil, false, false},
		{"direct: a keeps its session", sessionRead{pid: 11}, again(10, true), false, false},
		{"a was handed another server connection", sessionRead{pid: 11}, again(12, false), true, false},
		{"a's server connection lost its setting (reset between clients)", sessionRead{pid: 11}, again(10, false), true, false},
		{"another connection with a's setting copied", sessionRead{pid: 11}, again(12, true), true, false},
	} {
		if got := sessionsPooled(first, c.other, c.again); got != c.want {
			t.Errorf("%s: pooled %v, want %v", c.name, got, c.want)
		}
		if got := sessionsPooled(first, c.other, nil); got != c.wantDecision {
			t.Errorf("%s: pooled on two reads %v, want %v", c.name, got, c.wantDecision)
		}
	}
}

// TestPgBouncerTransactionMode: with the real pgbouncer in transaction mode in front of a
// database owned by a role with no other right:
//   - the migrations run as that role, through the pooler, again and again with no session
//     URL;
//   - the url through the pooler alone is refused, naming database.sessionURL; so is a
//     session URL through the pooler; a direct url, or the pooler with a direct session URL,
//     pass;
//   - with the session URL, queries of the pool work (no named prepared statement survives
//     a transaction there), NOTIFY sent through the pooler reaches the LISTEN session, and the
//     liveness lock taken on the session is seen from the pooler's connections, its end too;
//     a replica taking over its own previous session ends it although the role has no right
//     but its own.
func TestPgBouncerTransactionMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct := pgtest.NewRoleDatabase(t)
	pooled := pgtest.PgBouncer(t, direct)

	st, err := Open(ctx, pooled, Options{MaxConns: 4, SessionURL: direct})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate as the database's owner through pgbouncer: %v", err)
	}
	var super, replication bool
	if err := st.pool.QueryRow(ctx, "SELECT rolsuper, rolreplication FROM pg_roles WHERE rolname = current_user").Scan(&super, &replication); err != nil || super || replication {
		t.Fatalf("the test's role: superuser %v, replication %v, %v", super, replication, err)
	}

	// Migrate three times through the pooler without a session URL: no named prepared
	// statement of one run is left on a server connection for the next.
	for i := 0; i < 3; i++ {
		s, err := Open(ctx, pooled, Options{MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Migrate(ctx)
		s.Close()
		if err != nil {
			t.Fatalf("migrate %d through pgbouncer without a session url: %v", i+1, err)
		}
	}

	check := func(url string, opts Options) error { return checkSessions(t, url, opts) }
	if err := check(pooled, Options{}); err == nil || !strings.Contains(err.Error(), "set database.sessionURL") {
		t.Errorf("pooled url alone: %v, want a refusal naming database.sessionURL", err)
	}
	if err := check(pooled, Options{SessionURL: pooled}); err == nil || !strings.Contains(err.Error(), "database.sessionURL goes through a pooler") {
		t.Errorf("pooled session url: %v, want a refusal", err)
	}
	for name, c := range map[string]struct {
		url  string
		opts Options
	}{"direct": {direct, Options{}}, "pooled with a direct session url": {pooled, Options{SessionURL: direct}}} {
		if err := check(c.url, c.opts); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	// Statements through the pooler, many times over its few server connections.
	for i := 0; i < 50; i++ {
		if _, err := st.LatestChange(ctx); err != nil {
			t.Fatalf("query %d through pgbouncer: %v", i, err)
		}
	}

	lctx, stop := context.WithCancel(ctx)
	defer stop()
	got := make(chan string, 16)
	go st.Listen(lctx, []string{SyncChannel}, func(ch, payload string) { got <- ch + " " + payload }, slog.New(slog.DiscardHandler))
	select {
	case first := <-got:
		if first != " " {
			t.Fatalf("first callback %q, want the connected call", first)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no connected call on the session url within 30s")
	}
	if err := st.NotifySync(ctx, "infra", ""); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n != SyncChannel+" infra" {
			t.Errorf("notification %q", n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no notification through the session url within 30s")
	}

	live, _, err := st.HoldLiveness(ctx, Replica{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if dead, err := st.DeadReplicas(ctx); err != nil || len(dead) != 0 {
		t.Fatalf("dead replicas while a holds its session: %v, %v", dead, err)
	}
	// a again (its process restarted while the old session lingers): the old one is ended.
	again, _, err := st.HoldLiveness(ctx, Replica{Name: "a"})
	if err != nil {
		t.Fatalf("take over the previous session as the plain role: %v", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if err := live.Wait(pingCtx); err == nil {
		t.Error("the previous liveness session still runs")
	}
	cancel()
	live.Close()
	again.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		dead, err := st.DeadReplicas(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(dead) == 1 && dead[0].Name == "a" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a's closed session not seen through pgbouncer: %v", dead)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A session URL that reaches another database than url, or the same database as another
// role, is refused by CheckSessions, naming database.sessionURL and what differs: the
// replica's own liveness lock taken there is invisible to DeadReplicas, which reads
// pg_locks through url, so peers would see it dead while it runs. The same database and role
// pass, and the replica's liveness lock is seen.
func TestCheckSessionsSameDatabaseAndRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	main := pgtest.NewDatabase(t, MigrateURL)
	other := pgtest.NewDatabase(t, nil)

	check := func(session string) error { return checkSessions(t, main, Options{MaxConns: 4, SessionURL: session}) }
	if err := check(other); err == nil || !strings.Contains(err.Error(), "database.sessionURL reaches database") {
		t.Errorf("session url to another database: %v, want a refusal naming database.sessionURL and the databases", err)
	}

	st, err := Open(ctx, main, Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	role := "trueup_session_" + strings.ToLower(t.Name())
	ident := pgx.Identifier{role}.Sanitize()
	if _, err := st.pool.Exec(ctx, "DROP ROLE IF EXISTS "+ident); err != nil {
		t.Fatal(err)
	}
	conn, err := st.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "SET password_encryption = 'scram-sha-256'; CREATE ROLE "+ident+" LOGIN PASSWORD 'session-pw'")
	conn.Release()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { // before st closes
		if _, err := st.pool.Exec(ctx, "DROP ROLE IF EXISTS "+ident); err != nil {
			t.Errorf("drop role: %v", err)
		}
	}()
	u, err := url.Parse(main)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "session-pw")
	if err := check(u.String()); err == nil || !strings.Contains(err.Error(), "connects as role") || strings.Contains(err.Error(), "session-pw") {
		t.Errorf("session url as another role: %v, want a refusal naming the roles and no password", err)
	}

	same, err := Open(ctx, main, Options{MaxConns: 4, SessionURL: main})
	if err != nil {
		t.Fatal(err)
	}
	defer same.Close()
	if err := same.CheckSessions(ctx); err != nil {
		t.Fatalf("the same database and role: %v", err)
	}
	live, _, err := same.HoldLiveness(ctx, Replica{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if dead, err := same.DeadReplicas(ctx); err != nil || len(dead) != 0 {
		t.Errorf("dead replicas while a holds its session: %v, %v", dead, err)
	}
}

// Behind PgBouncer in pool_mode=statement, which ends a client that opens a transaction
// block, serve's check gives the same refusal as in transaction mode, for url and for a
// session URL alike.
func TestPgBouncerStatementMode(t *testing.T) {
	t.Parallel()
	direct := pgtest.NewRoleDatabase(t)
	pooled := pgtest.PgBouncerMode(t, direct, "statement")
	if err := checkSessions(t, pooled, Options{}); err == nil || !strings.Contains(err.Error(), "database.url goes through a pooler") {
		t.Errorf("pooled url alone: %v, want the pooler refusal", err)
	}
	if err := checkSessions(t, direct, Options{SessionURL: pooled}); err == nil || !strings.Contains(err.Error(), "database.sessionURL goes through a pooler") {
		t.Errorf("pooled session url: %v, want the pooler refusal", err)
	}
}

// checkSessions opens a store on url with opts and runs CheckSessions.
func checkSessions(t *testing.T, url string, opts Options) error {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, url, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return s.CheckSessions(ctx)
}
