package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// The fixture's clock: everything was written between t0 and cliNow.
var (
	t0     = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cliNow = time.Date(2026, 3, 5, 12, 0, 0, 0, time.UTC)
)

const (
	rev1      = "9fceb02d0ae598e95dc970b74767f19372d61af8"
	rev2      = "3f2a9c1d7e4b5a6c8d9e0f1a2b3c4d5e6f708192"
	revP      = "b7e23ec29af22b0b4e41da31e868d57226121c84"
	revPWrong = "c0ffee2d0ae598e95dc970b74767f19372d61af8"
)

const typesYAML = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata:
  name: DatabaseCluster
spec:
  group: example.com
  description: A managed PostgreSQL or MySQL cluster
  versions:
    - name: v1
      schema:
        type: object
        required: [engine, storage_gb]
        additionalProperties: false
        properties:
          engine: {type: string, enum: [postgres, mysql]}
          version: {type: string, default: "16"}
          storage_gb: {type: integer, minimum: 10, maximum: 10000}
          replicas: {type: integer, minimum: 0, maximum: 5, default: 0}
          backups:
            type: object
            properties:
              enabled: {type: boolean, default: true}
              retention_days: {type: integer, minimum: 1, default: 7}
  action:
    name: provision
    with: {component: database}
  resyncInterval: 10m
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata:
  name: Bucket
spec:
  group: storage.example.com
  description: An object storage bucket
  versions:
    - name: v1
      schema:
        type: object
        required: [region]
        additionalProperties: false
        properties:
          region: {type: string, enum: [eu-west-1, eu-central-1, us-east-1]}
          versioning: {type: boolean, default: false}
          lifecycle_days: {type: integer, minimum: 1}
  action:
    name: provision
    with: {component: storage}
`

const databasesYAML = `apiVersion: example.com/v1
kind: DatabaseCluster
metadata:
  name: orders-pg
  namespace: production
  labels: {team: checkout, tier: critical}
spec:
  engine: postgres
  storage_gb: STORAGE
  replicas: 2
  backups: {retention_days: 30}
---
apiVersion: example.com/v1
kind: DatabaseCluster
metadata:
  name: catalog-mysql
  namespace: production
  labels: {team: catalog}
spec:
  engine: mysql
  version: "8.0"
  storage_gb: 200
  replicas: 1
---
apiVersion: example.com/v1
kind: DatabaseCluster
metadata:
  name: orders-pg
  namespace: staging
  labels: {team: checkout}
spec:
  engine: postgres
  storage_gb: 50
`

const bucketsYAML = `apiVersion: storage.example.com/v1
kind: Bucket
metadata:
  name: invoices
  namespace: production
  labels: {team: billing}
spec:
  region: eu-west-1
  versioning: true
  lifecycle_days: 3650
---
apiVersion: storage.example.com/v1
kind: Bucket
metadata:
  name: build-cache
  labels: {team: platform}
  annotations: {trueup.dev/prune: disabled}
spec:
  region: eu-central-1
  lifecycle_days: 14
`

const platformYAML = `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Queue}
spec:
  group: mq.example.com
  versions:
    - name: v1
      schema: {type: object, properties: {size: {type: integer, default: 10}}}
  action: {name: noop}
---
apiVersion: mq.example.com/v1
kind: Queue
metadata: {name: jobs}
spec: {size: 100}
`

// infraFiles is the infra source at rev1 (storage 200) or rev2 (storage 500).
func infraFiles(storage string) map[string]string {
	return map[string]string{
		"types/all.yaml":          typesYAML,
		"databases/clusters.yaml": strings.Replace(databasesYAML, "STORAGE", storage, 1),
		"storage/buckets.yaml":    bucketsYAML,
	}
}

// api is a seeded database served by the real API handler.
type api struct {
	url   string
	store *store.Store
}

// setup seeds a fresh database through the real apply path, writes statuses, history and
// events with fixed times, and serves the API on it.
func setup(t *testing.T) *api {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDatabase(t, store.MigrateURL), store.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.RegisterSource(ctx, store.SourceConfig{Name: "infra", URL: "https://github.com/acme/infra.git", Branch: "main", Path: "manifests"}))
	must(st.RegisterSource(ctx, store.SourceConfig{Name: "platform", URL: "dir:///srv/platform"}))
	db := st.Pool()
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := db.Exec(ctx, sql, args...)
		must(err)
	}
	// The store stamps events with the wall clock: each step of the timeline below pins the
	// events it wrote to the fixture's clock, so ids and times run in the same order.
	var lastEvent int64
	stamp := func(at time.Time) {
		t.Helper()
		exec(`UPDATE events SET created_at = $1 WHERE id > $2`, at, lastEvent)
		must(db.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM events`).Scan(&lastEvent))
	}
	apply := func(source, rev string, files map[string]string, at time.Time) {
		t.Helper()
		var fs []sources.File
		for p, data := range files {
			fs = append(fs, sources.File{Path: p, Data: []byte(data)})
		}
		set, err := manifest.NewLoader().Load(fs, manifest.Options{})
		must(err)
		_, err = st.ApplyRevision(ctx, store.ApplyParams{Source: source, Revision: rev, Set: set, Prune: true})
		must(err)
		stamp(at)
	}
	event := func(ns, kind, name, typ, reason, msg string, at time.Time) {
		t.Helper()
		must(st.AddEvent(ctx, store.Event{Namespace: ns, Kind: kind, Name: name, Source: "infra", Type: typ, Reason: reason, Message: msg}))
		stamp(at)
	}

	apply("infra", rev1, infraFiles("200"), t0)
	event("production", "DatabaseCluster", "catalog-mysql", "Warning", "ActionRejected", "mysql 8.0 is not offered in eu-west-1: choose 8.4", t0.Add(3*time.Minute))
	apply("platform", revP, map[string]string{"queues.yaml": platformYAML}, t0.Add(48*time.Hour))
	must(st.RecordSyncFailure(ctx, store.SyncFailure{Source: "platform", Revision: revPWrong, Reason: "ValidationFailed",
		Message: "revision c0ffee2d0ae5 rejected, 1 error; the last good revision stays applied:\nqueues.yaml:12: spec.size: expected integer, but got string",
		Errors:  []store.SourceError{{File: "queues.yaml", Line: 12, Path: "spec.size", Message: "expected integer, but got string"}}}))
	stamp(cliNow.Add(-3 * time.Hour))
	apply("infra", rev2, infraFiles("500"), cliNow.Add(-41*time.Minute))
	event("production", "DatabaseCluster", "orders-pg", "Warning", "ActionFailed", "exit status 1: terraform apply: timeout waiting for the volume resize", cliNow.Add(-38*time.Minute))
	event("production", "DatabaseCluster", "orders-pg", "Normal", "Reconciled", "resized to 500 GB", cliNow.Add(-25*time.Minute))
	event("staging", "DatabaseCluster", "orders-pg", "Normal", "Progressing", "waiting for workflow run 4712", cliNow.Add(-45*time.Second))

	// Everything else the store stamped with the wall clock, pinned to the fixture's clock.
	exec(`UPDATE resources SET created_at = CASE source WHEN 'infra' THEN $1::timestamptz ELSE $1::timestamptz + interval '2 days' END,
		updated_at = $1, uid = md5(namespace || '/' || kind || '/' || name)::uuid,
		conditions = (SELECT jsonb_agg(c || jsonb_build_object('lastTransitionTime', $1::timestamptz)) FROM jsonb_array_elements(conditions) c)`, t0)
	exec(`UPDATE resource_queue SET run_at = $1 WHERE run_at IS NOT NULL`, t0) // due since the first apply
	exec(`UPDATE resource_types SET created_at = CASE source WHEN 'infra' THEN $1::timestamptz ELSE $1::timestamptz + interval '2 days' END`, t0)
	exec(`UPDATE resource_types SET updated_at = created_at`)
	exec(`UPDATE sources SET last_sync_time = CASE name WHEN 'infra' THEN $1::timestamptz - interval '41 minutes' ELSE $2::timestamptz + interval '2 days' END,
		conditions = (SELECT jsonb_agg(c || jsonb_build_object('lastTransitionTime',
		  CASE name WHEN 'infra' THEN $2::timestamptz ELSE $1::timestamptz - interval '3 hours' END)) FROM jsonb_array_elements(conditions) c)`, cliNow, t0)

	// Statuses as the reconciler would have written them.
	setStatus := func(ns, kind, name string, outcome status.Outcome, at time.Time, outputs string, prevAt time.Time) {
		t.Helper()
		var gen int64
		must(db.QueryRow(ctx, `SELECT generation FROM resources WHERE namespace = $1 AND kind = $2 AND name = $3`, ns, kind, name).Scan(&gen))
		outcome.Generation, outcome.CurrentGeneration = gen, gen
		phase, conds, observed := status.Apply(status.Initial(prevAt), 0, outcome, at)
		cj, _ := json.Marshal(conds)
		exec(`WITH r AS (UPDATE resources SET phase = $4, observed_generation = $5, conditions = $6, outputs = $7, message = $8
			WHERE namespace = $1 AND kind = $2 AND name = $3 RETURNING id)
			UPDATE resource_queue q SET run_at = NULL, last_reconcile_time = $9 FROM r WHERE q.id = r.id`,
			ns, kind, name, phase, observed, cj, outputs, outcome.Message, at)
	}
	setStatus("production", "DatabaseCluster", "orders-pg", status.Outcome{Done: true, Message: "resized to 500 GB"},
		cliNow.Add(-25*time.Minute), `{"endpoint": "orders-pg.production.db.example.com:5432", "version": "16.4"}`, t0)
	setStatus("production", "DatabaseCluster", "catalog-mysql", status.Outcome{Err: "mysql 8.0 is not offered in eu-west-1: choose 8.4\n(from provision.sh, exit status 3)", Terminal: true,
		Message: "mysql 8.0 is not offered in eu-west-1: choose 8.4\n(from provision.sh, exit status 3)"}, t0.Add(3*time.Minute), `{}`, t0)
	setStatus("staging", "DatabaseCluster", "orders-pg", status.Outcome{InProgress: true, Message: "waiting for workflow run 4712"},
		cliNow.Add(-45*time.Second), `{}`, t0)
	setStatus("production", "Bucket", "invoices", status.Outcome{Done: true}, t0.Add(2*time.Minute),
		`{"arn": "arn:aws:s3:::acme-invoices", "region": "eu-west-1"}`, t0)
	setStatus("default", "Queue", "jobs", status.Outcome{Done: true}, t0.Add(48*time.Hour+time.Minute), `{}`, t0.Add(48*time.Hour))

	history := []struct {
		ns, kind, name    string
		gen               int64
		rev, trigger, res string
		op, msg           string
		start             time.Time
		dur               time.Duration
		outputs           any
	}{
		{"production", "DatabaseCluster", "orders-pg", 1, rev1, "created", "InProgress", "reconcile", "workflow run 4711 started", t0.Add(time.Minute), 1200 * time.Millisecond, nil},
		{"production", "Bucket", "invoices", 1, rev1, "created", "Succeeded", "reconcile", "", t0.Add(2 * time.Minute), 95 * time.Millisecond, `{"arn": "arn:aws:s3:::acme-invoices", "region": "eu-west-1"}`},
		{"production", "DatabaseCluster", "catalog-mysql", 1, rev1, "created", "Stalled", "reconcile", "mysql 8.0 is not offered in eu-west-1: choose 8.4", t0.Add(3 * time.Minute), 800 * time.Millisecond, nil},
		{"production", "DatabaseCluster", "orders-pg", 1, rev1, "requeue", "Succeeded", "reconcile", "provisioned", t0.Add(13 * time.Minute), 350 * time.Millisecond, `{"endpoint": "orders-pg.production.db.example.com:5432"}`},
		{"production", "DatabaseCluster", "orders-pg", 2, rev2, "spec-changed", "Failed", "reconcile", "exit status 1: terraform apply: timeout waiting for the volume resize\n(stderr tail follows)", cliNow.Add(-40 * time.Minute), 2*time.Minute + 3*time.Second, nil},
		{"production", "DatabaseCluster", "orders-pg", 2, rev2, "retry", "Succeeded", "reconcile", "resized to 500 GB", cliNow.Add(-25 * time.Minute), 4500 * time.Millisecond, `{"endpoint": "orders-pg.production.db.example.com:5432", "version": "16.4"}`},
	}
	for _, h := range history {
		exec(`INSERT INTO reconcile_history (resource_uid, namespace, kind, name, generation, revision, operation, trigger, result,
			message, started_at, finished_at, outputs)
			VALUES (md5($1 || '/' || $2 || '/' || $3)::uuid, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb)`,
			h.ns, h.kind, h.name, h.gen, h.rev, h.op, h.trigger, h.res, h.msg, h.start, h.start.Add(h.dur), h.outputs)
	}

	srv := httptest.NewServer(server.New(st, server.Options{Replica: "test"}, slog.New(slog.NewTextHandler(io.Discard, nil))).Handler())
	t.Cleanup(srv.Close)
	return &api{url: srv.URL, store: st}
}

// run runs the CLI against the fixture's API.
func (a *api) run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runCLI(t, append([]string{"--server", a.url}, args...)...)
}

// golden compares got with testdata/golden/name, or rewrites the file with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/trueup -run '%s' -update to write it)", err, t.Name())
	}
	if got != string(want) {
		d := unifiedDiff(splitLines(string(want)), splitLines(got), 2)
		t.Errorf("output differs from %s (-want +got; -update rewrites it):\n%s", path, strings.Join(d, "\n"))
	}
}
