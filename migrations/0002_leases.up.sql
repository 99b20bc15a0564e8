-- Singleton leases (one syncer per source, one maintenance loop): the term grows on every
-- takeover and is checked inside the fenced transaction, so a holder that lost its lease can
-- never commit.
CREATE TABLE leases (
    name         text PRIMARY KEY,
    holder       text NOT NULL,
    term         bigint NOT NULL,
    expires_at   timestamptz NOT NULL,
    acquired_at  timestamptz NOT NULL DEFAULT now()
);

-- Replicas announce themselves with a heartbeat; the API shows who holds what.
CREATE TABLE replicas (
    name        text PRIMARY KEY,
    hostname    text NOT NULL DEFAULT '',
    pid         integer NOT NULL DEFAULT 0,
    version     text NOT NULL DEFAULT '',
    listen      text NOT NULL DEFAULT '',
    started_at  timestamptz NOT NULL DEFAULT now(),
    last_seen   timestamptz NOT NULL DEFAULT now()
);

-- A resource whose manifest is gone but that pruning kept (prune disabled, annotation, guard).
ALTER TABLE resources ADD COLUMN orphaned boolean NOT NULL DEFAULT false;

CREATE INDEX reconcile_history_finished ON reconcile_history (finished_at);
CREATE INDEX events_created ON events (created_at);
