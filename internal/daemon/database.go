package daemon

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/pgembed"
	"github.com/trueup-dev/trueup/internal/plural"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/store"
)

// Database is the store plus, when database.url is empty, the private cluster behind it.
type Database struct {
	URL   string // for actions.Env.DatabaseURL: database.sessionURL when set (terraform's pg backend locks per session), else what the store connected to
	Store *store.Store
	API   *store.Store // the same database through the API's own pool
	// Read is the store the API, the dashboard and MCP read and write through: API itself,
	// which sends its reads to database.readURL while that standby keeps up (store.Options.ReadURL).
	Read    *store.Store
	cluster *pgembed.Cluster
}

// Close closes the pools, then stops the private cluster.
func (d *Database) Close() {
	if d.API != nil {
		d.API.Close()
	}
	if d.Store != nil {
		d.Store.Close()
	}
	if d.cluster != nil {
		_ = d.cluster.Stop()
	}
}

// OpenDatabase opens cfg's database, starting the private cluster when database.url is empty.
func OpenDatabase(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*Database, error) {
	d := &Database{}
	url := cfg.Database.URL
	if url == "" {
		dir := filepath.Join(cfg.DataDir, "postgres")
		logger.Info("starting private PostgreSQL", "dir", dir)
		c, err := pgembed.Start(ctx, pgembed.Options{Dir: dir, Logger: logger.With("component", "postgres")})
		if err != nil {
			return nil, err
		}
		d.cluster = c
		url = c.URL("trueup")
		logger.Info("private PostgreSQL started; open it with the psql command", "psql", c.PsqlCommand("trueup"))
	}
	session := cfg.Database.SessionURL
	st, err := store.Open(ctx, url, store.Options{MaxConns: int32(cfg.Reconcile.Workers + 8), SessionURL: session})
	if err != nil {
		d.Close()
		return nil, err
	}
	d.Store, d.URL = st, cmp.Or(session, url)
	// API and dashboard requests read through a pool of their own: no number of clients can
	// take the connections the reconciler writes results with.
	api, err := store.Open(ctx, url, store.Options{MaxConns: server.PoolSize(0), SessionURL: session,
		ReadURL: cfg.Database.ReadURL, MaxReadLag: cfg.Database.MaxReadLag, Logger: logger.With("component", "read-standby")})
	if err != nil {
		d.Close()
		return nil, err
	}
	d.API, d.Read = api, api
	return d, nil
}

// Repairs says what Migrate's repairs did: the queue rows it removed (store.RepairQueue)
// and what it found and repaired of the trigger-kept tables (store.RepairSummaries).
type Repairs struct {
	QueueRemoved int64
	Summaries    store.Summaries
}

// Messages says what the repairs did, one line each; none when they did nothing.
func (r Repairs) Messages() []string {
	var out []string
	if r.QueueRemoved > 0 {
		out = append(out, fmt.Sprintf("removed %s written twice for one resource (rows written with triggers off, as by a data-only restore over existing rows)",
			plural.Count(int(r.QueueRemoved), "resource_queue row", "resource_queue rows")))
	}
	if s := r.Summaries; len(s.Repaired) > 0 {
		names := strings.Join(s.Repaired, ", ")
		if n := len(s.Repaired); n > 1 {
			names = strings.Join(s.Repaired[:n-1], ", ") + " and " + s.Repaired[n-1]
		}
		out = append(out, fmt.Sprintf("repaired %s from resources, which holds %d rows: resource_phases held %d, resource_counts counted %d and resource_queue held %d (rows written with triggers off, as by a data-only restore)",
			names, s.Resources, s.Phases, s.Counted, s.Queued))
	}
	return out
}

// Migrate applies the pending migrations, keeps one resource_queue row per resource
// (store.RepairQueue) and repairs the trigger-kept tables that do not account for every
// resource (store.RepairSummaries): what every start does, and `trueup migrate`. It returns
// the migrations applied and what the repairs did.
func (d *Database) Migrate(ctx context.Context) (applied []string, r Repairs, err error) {
	if applied, err = d.Store.Migrate(ctx); err != nil {
		return nil, r, err
	}
	if r.QueueRemoved, err = d.Store.RepairQueue(ctx); err != nil {
		return applied, r, err
	}
	r.Summaries, err = d.Store.RepairSummaries(ctx)
	return applied, r, err
}
