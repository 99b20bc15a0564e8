package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/changewindow"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/store"
)

// openWithStandby migrates a fresh cluster, starts a streaming standby of it and opens the
// database with readURL on the standby and maxReadLag; it returns the standby's url.
func openWithStandby(t *testing.T, maxReadLag string) (*Database, *config.Config, string) {
	t.Helper()
	ctx := context.Background()
	primary := pgtest.StartCluster(t)
	if err := store.MigrateURL(ctx, primary.URL("trueup")); err != nil {
		t.Fatal(err)
	}
	standby := pgtest.StartStandby(t, primary)
	cfg, err := config.Parse([]byte("database: {maxReadLag: "+maxReadLag+"}\n"), ".", func(k string) string {
		return map[string]string{"TRUEUP_DATABASE_URL": primary.URL("trueup"), "TRUEUP_DATABASE_READ_URL": standby.URL("trueup")}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	db, err := OpenDatabase(ctx, cfg, NewLogger(cfg, io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db, cfg, standby.URL("trueup")
}

// TestReadStandby wires database.readURL end to end: the API served on the database's read
// store answers from a real streaming standby (a row the paused standby has not replayed is
// a 404), /metrics shows the lag and, past maxReadLag, reads_on_primary 1 while the API
// answers from the primary.
func TestReadStandby(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, cfg, standbyURL := openWithStandby(t, "1s")
	api := httptest.NewServer(server.New(db.Read, server.Options{}, NewLogger(cfg, io.Discard)).Handler())
	defer api.Close()
	met := httptest.NewServer(metrics.New(metrics.Options{ReadLag: db.Read.ReadLag}).Handler())
	defer met.Close()
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitMetric := func(line string) string {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			_, body := get(met.URL)
			if strings.Contains(body, "\n"+line+"\n") {
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %q in /metrics after a minute:\n%s", line, body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitMetric("trueup_database_reads_on_primary 0")

	sb, err := store.Open(ctx, standbyURL, store.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if _, err := sb.Pool().Exec(ctx, "SELECT pg_wal_replay_pause()"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Store.Pool().Exec(ctx, `INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash)
		VALUES ('default', 'Thing', 'late', 'v1', 'src', 'h', 'h')`); err != nil {
		t.Fatal(err)
	}
	const path = "/api/v1/resources/default/Thing/late"
	if code, body := get(api.URL + path); code != http.StatusNotFound {
		t.Fatalf("a row the standby has not replayed: %d %s, want 404 (read from the standby)", code, body)
	}
	body := waitMetric("trueup_database_reads_on_primary 1")
	if !strings.Contains(body, "trueup_database_replication_lag_seconds ") || strings.Contains(body, "trueup_database_replication_lag_seconds 0\n") {
		t.Errorf("no lag while reads are on the primary:\n%s", body)
	}
	if code, body := get(api.URL + path); code != http.StatusOK {
		t.Fatalf("reads on the primary: %d %s, want 200", code, body)
	}
	if _, err := sb.Pool().Exec(ctx, "SELECT pg_wal_replay_resume()"); err != nil {
		t.Fatal(err)
	}
	waitMetric("trueup_database_reads_on_primary 0")
}

// TestWindowCheckReadsThePrimary: an operator command's change-window check reads the
// resource from the primary. A label that puts the resource in a window operators may not
// override is set while the standby's replay is paused: the API's reads still show the
// resource without it, and the command is refused all the same.
func TestWindowCheckReadsThePrimary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, cfg, standbyURL := openWithStandby(t, "1h")
	at := time.Now().UTC().Add(-time.Minute) // a yearly window that opened a minute ago
	windows, err := changewindow.Compile([]changewindow.Window{{Name: "lockdown", Kind: changewindow.Deny,
		Schedule: fmt.Sprintf("%d %d %d %d *", at.Minute(), at.Hour(), at.Day(), int(at.Month())), Duration: 2 * time.Hour,
		Match: policy.Match{Selector: "frozen=yes"}}})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(server.New(db.Read, server.Options{Windows: func() *changewindow.Set { return windows }}, NewLogger(cfg, io.Discard)).Handler())
	defer api.Close()

	if _, err := db.Store.Pool().Exec(ctx, `INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash)
		VALUES ('default', 'Thing', 'held', 'v1', 'src', 'h', 'h')`); err != nil {
		t.Fatal(err)
	}
	sb, err := store.Open(ctx, standbyURL, store.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	// The standby has the resource and the API reads from it.
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := sb.GetResource(ctx, "default", "Thing", "held")
		_, onPrimary := db.Read.ReadLag()
		if err == nil && !onPrimary {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: standby's resource %v, reads on the primary %v", err, onPrimary)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := sb.Pool().Exec(ctx, "SELECT pg_wal_replay_pause()"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Store.Pool().Exec(ctx, `UPDATE resources SET labels = '{"frozen": "yes"}' WHERE name = 'held'`); err != nil {
		t.Fatal(err)
	}
	const path = "/api/v1/resources/default/Thing/held"
	resp, err := http.Get(api.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Contains(string(b), "frozen") {
		t.Fatalf("the API's read: %d %s, want the standby's resource without the label", resp.StatusCode, b)
	}
	resp, err = http.Post(api.URL+path+"/reconcile", "application/json", strings.NewReader(`{"overrideWindow": true, "reason": "hotfix"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), "change window lockdown does not allow operators") {
		t.Errorf("command on a resource the primary shows in lockdown: %d %s, want 409 naming lockdown", resp.StatusCode, b)
	}
	if _, err := sb.Pool().Exec(ctx, "SELECT pg_wal_replay_resume()"); err != nil {
		t.Fatal(err)
	}
}
