package store

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/clip"
)

// Event types.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)

// Event is a Normal or Warning event about a resource or a source.
type Event struct {
	ID        int64
	Namespace string
	Kind      string
	Name      string
	Source    string
	Type      string
	Reason    string
	Message   string
	Replica   string
	CreatedAt time.Time
}

func insertEvent(ctx context.Context, db DB, e Event) error {
	return insertEvents(ctx, db, []Event{e})
}

func insertEvents(ctx context.Context, db DB, evs []Event) error {
	if len(evs) == 0 {
		return nil
	}
	n := len(evs)
	ns, kind, name, src, typ, reason, msg, rep := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, e := range evs {
		ns[i], kind[i], name[i], src[i], typ[i], reason[i], msg[i], rep[i] = e.Namespace, e.Kind, e.Name, e.Source, e.Type, e.Reason, clip.Storable(e.Message, 4000), e.Replica
	}
	_, err := db.Exec(ctx, `INSERT INTO events (namespace, kind, name, source, type, reason, message, replica)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])`,
		ns, kind, name, src, typ, reason, msg, rep)
	return err
}

// AddEvent records one event outside any other transaction.
func (s *Store) AddEvent(ctx context.Context, e Event) error { return insertEvent(ctx, s.pool, e) }

// EventFilter selects events; empty fields match everything.
type EventFilter struct {
	Namespace, Kind, Name, Source string
	Limit                         int
}

// ListEvents returns the events in scope newest first: those about resources of its
// namespaces, and those about the sources it sees (DESIGN §9, authorization). Events about
// neither a resource nor a source are seen by Everything only.
func (s *Store) ListEvents(ctx context.Context, sc Scope, f EventFilter) ([]Event, error) {
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	// The WHERE clause names only the filters given: a generic plan shared by every
	// combination ("$1 = '' OR …") walks the whole table for selective filters.
	var where []string
	var args params
	if !sc.All() {
		// The visible sources are computed once (an InitPlan: a probe per source), not per
		// event: correlated, the planner hashed every resource of the scope's namespaces. The
		// subquery reuses the namespaces' parameter.
		ns := args.add(sc.Namespaces())
		where = append(where, "(namespace = ANY("+ns+"::text[]) OR (namespace = '' AND source = ANY(ARRAY(SELECT s.name FROM sources s WHERE "+
			sc.sourceWhere("s.name", func(any) string { return ns })+"))))")
	}
	if f.Namespace != "" {
		where = append(where, "namespace = "+args.add(f.Namespace))
	}
	if f.Kind != "" {
		where = append(where, "lower(kind) = lower("+args.add(f.Kind)+")")
	}
	if f.Name != "" {
		where = append(where, "name = "+args.add(f.Name))
	}
	if f.Source != "" {
		where = append(where, "source = "+args.add(f.Source))
	}
	const cols = "id, namespace, kind, name, source, type, reason, message, replica, created_at"
	q := "SELECT " + cols + " FROM events"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	limit := args.add(f.Limit)
	q += " ORDER BY id DESC LIMIT " + limit
	if f.Namespace != "" && f.Kind != "" && f.Name != "" {
		q = "(" + q + ") UNION ALL (" + bulkCreatedEventOf(sc, f, &args) + ") ORDER BY id DESC LIMIT " + limit
	}
	rows, err := s.reader().Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Event, error) {
		var e Event
		err := r.Scan(&e.ID, &e.Namespace, &e.Kind, &e.Name, &e.Source, &e.Type, &e.Reason, &e.Message, &e.Replica, &e.CreatedAt)
		return e, err
	})
}

// bulkCreatedEventOf selects the source's Created event that stands for the resource of f
// when its revision created it in bulk (DefaultBulkCreate): the event of its source, naming
// nothing (name ”), of its transaction (its created_at), as the timeline finds it
// (events_source_created). A resource created alone matches none: its own event is listed.
func bulkCreatedEventOf(sc Scope, f EventFilter, args *params) string {
	where := []string{"r.namespace = " + args.add(f.Namespace), "lower(r.kind) = lower(" + args.add(f.Kind) + ")", "r.name = " + args.add(f.Name)}
	if w := sc.where("r.namespace", args.add); w != "" {
		where = append(where, w)
	}
	if f.Source != "" {
		where = append(where, "r.source = "+args.add(f.Source))
	}
	return `SELECT e.id, e.namespace, e.kind, e.name, e.source, e.type, e.reason, e.message, e.replica, e.created_at
		FROM resources r JOIN events e ON e.created_at = r.created_at AND e.source = r.source AND e.name = '' AND e.reason = 'Created'
		WHERE ` + strings.Join(where, " AND ") + " LIMIT 1"
}

// HistoryEntry is one reconcile attempt.
type HistoryEntry struct {
	ID         int64
	UID        string
	Namespace  string
	Kind       string
	Name       string
	Generation int64
	Revision   string
	Operation  string
	Trigger    string
	Result     string
	Message    string
	Replica    string
	// Actor is who asked for the attempt (trigger manual): "token:NAME", "user:NAME",
	// "git:REVISION"; empty for the engine's own work.
	Actor      string
	StartedAt  time.Time
	FinishedAt time.Time
	DurationMs int64
	Outputs    json.RawMessage
	// TraceID names the attempt's OpenTelemetry trace when it was sampled ("": none).
	TraceID string
}

func insertHistoryBatch(ctx context.Context, db DB, hs []HistoryEntry) error {
	if len(hs) == 0 {
		return nil
	}
	n := len(hs)
	uid, ns, kind, name, rev, op, trig, res, msg, rep := make([]string, n), make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	actor := make([]string, n)
	gen := make([]int64, n)
	started, finished := make([]time.Time, n), make([]time.Time, n)
	outputs := make([]*string, n)
	var traces []*string // nil while no row has a trace id (tracing off): the column stays NULL
	for i, h := range hs {
		if h.TraceID != "" {
			if traces == nil {
				traces = make([]*string, n)
			}
			traces[i] = &hs[i].TraceID
		}
		uid[i], ns[i], kind[i], name[i], rev[i], op[i], trig[i], res[i], msg[i], rep[i] =
			h.UID, h.Namespace, h.Kind, h.Name, h.Revision, h.Operation, h.Trigger, h.Result, clip.Storable(h.Message, 8000), h.Replica
		gen[i], started[i], finished[i], actor[i] = h.Generation, h.StartedAt, h.FinishedAt, h.Actor
		if o := storableJSON(h.Outputs); len(o) > 0 {
			os := string(o)
			outputs[i] = &os
		}
	}
	args := []any{uid, ns, kind, name, gen, rev, op, trig, res, msg, rep, started, finished, outputs, actor}
	query := insertHistory
	if traces != nil {
		args, query = append(args, traces), insertHistoryTraced
	}
	_, err := db.Exec(ctx, query, args...)
	return err
}

// insertHistory writes history rows from unnest arrays; insertHistoryTraced also their trace
// ids (a 16th array). Without tracing the statement stays the one before trace ids existed.
const (
	insertHistory = `INSERT INTO reconcile_history (resource_uid, namespace, kind, name, generation, revision,
		operation, trigger, result, message, replica, started_at, finished_at, outputs, actor)
		SELECT uid::uuid, ns, kind, name, gen, rev, op, trig, res, msg, rep, st, fin, out::jsonb, act
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::text[],
		            $10::text[], $11::text[], $12::timestamptz[], $13::timestamptz[], $14::text[], $15::text[])
		  AS x(uid, ns, kind, name, gen, rev, op, trig, res, msg, rep, st, fin, out, act)`
	insertHistoryTraced = `INSERT INTO reconcile_history (resource_uid, namespace, kind, name, generation, revision,
		operation, trigger, result, message, replica, started_at, finished_at, outputs, actor, trace_id)
		SELECT uid::uuid, ns, kind, name, gen, rev, op, trig, res, msg, rep, st, fin, out::jsonb, act, tid
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::text[],
		            $10::text[], $11::text[], $12::timestamptz[], $13::timestamptz[], $14::text[], $15::text[], $16::text[])
		  AS x(uid, ns, kind, name, gen, rev, op, trig, res, msg, rep, st, fin, out, act, tid)`
)

// ListHistory returns a resource's reconcile attempts newest first; it outlives the resource.
func (s *Store) ListHistory(ctx context.Context, namespace, kind, name string, limit int) ([]HistoryEntry, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	rows, err := s.reader().Query(ctx, `SELECT id, resource_uid::text, namespace, kind, name, generation, revision, operation, trigger,
		result, message, replica, started_at, finished_at, outputs, actor, coalesce(trace_id, '')
		FROM reconcile_history WHERE namespace = $1 AND lower(kind) = lower($2) AND name = $3
		ORDER BY id DESC LIMIT $4`, namespace, kind, name, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (HistoryEntry, error) {
		var h HistoryEntry
		var out []byte
		err := r.Scan(&h.ID, &h.UID, &h.Namespace, &h.Kind, &h.Name, &h.Generation, &h.Revision, &h.Operation, &h.Trigger,
			&h.Result, &h.Message, &h.Replica, &h.StartedAt, &h.FinishedAt, &out, &h.Actor, &h.TraceID)
		h.DurationMs = h.FinishedAt.Sub(h.StartedAt).Milliseconds()
		if len(out) > 0 {
			h.Outputs = out
		}
		return h, err
	})
}
