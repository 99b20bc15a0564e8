package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// ChangesChannel is notified (once per transaction) when changes were appended.
const ChangesChannel = "trueup_changes"

// Change is one entry of the changes feed.
type Change struct {
	ID         int64
	Object     string // resource | source
	Type       string // ADDED | MODIFIED | DELETED | RELIST
	Namespace  string
	Kind       string
	Name       string
	Source     string
	Phase      string
	Generation int64
	At         time.Time
}

// Change types.
const (
	ChangeAdded    = "ADDED"
	ChangeModified = "MODIFIED"
	ChangeDeleted  = "DELETED"
	// ChangeRelist stands for the resources a revision created past ApplyParams.BulkCreate in
	// one namespace (object "source", one per namespace): a watcher lists again rather than
	// receiving them one by one.
	ChangeRelist = "RELIST"
)

// appendChanges writes changes and one NOTIFY for the transaction.
func appendChanges(ctx context.Context, db DB, cs []Change) error {
	if len(cs) == 0 {
		return nil
	}
	n := len(cs)
	obj, typ, ns, kind, name, src, phase := make([]string, n), make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n)
	gen := make([]int64, n)
	for i, c := range cs {
		obj[i], typ[i], ns[i], kind[i], name[i], src[i], phase[i], gen[i] = c.Object, c.Type, c.Namespace, c.Kind, c.Name, c.Source, c.Phase, c.Generation
	}
	if _, err := db.Exec(ctx, `INSERT INTO changes (object, type, namespace, kind, name, source, phase, generation)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[])`,
		obj, typ, ns, kind, name, src, phase, gen); err != nil {
		return err
	}
	_, err := db.Exec(ctx, "SELECT pg_notify($1, '')", ChangesChannel)
	return err
}

// ChangesSince returns up to limit changes with id > after, oldest first.
func (s *Store) ChangesSince(ctx context.Context, after int64, limit int) ([]Change, error) {
	if limit <= 0 || limit > 10000 {
		limit = 1000
	}
	rows, err := s.pool.Query(ctx, `SELECT id, object, type, namespace, kind, name, source, phase, generation, created_at
		FROM changes WHERE id > $1 ORDER BY id LIMIT $2`, after, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Change, error) {
		var c Change
		err := r.Scan(&c.ID, &c.Object, &c.Type, &c.Namespace, &c.Kind, &c.Name, &c.Source, &c.Phase, &c.Generation, &c.At)
		return c, err
	})
}

// LatestChange returns the newest change id (0 when none), where a new watcher starts.
func (s *Store) LatestChange(ctx context.Context) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, "SELECT COALESCE(max(id), 0) FROM changes").Scan(&id)
	return id, err
}

// OldestChange returns the oldest retained change id (0 when none): a watcher resuming from
// before it has missed changes and must re-list.
func (s *Store) OldestChange(ctx context.Context) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, "SELECT COALESCE(min(id), 0) FROM changes").Scan(&id)
	return id, err
}
