-- Changes feed behind GET /api/v1/watch: one row per resource or source change, written in
-- the same transaction as the change, so a watcher resuming with Last-Event-ID misses
-- nothing that is still retained.
CREATE TABLE changes (
    id          bigserial PRIMARY KEY,
    object      text NOT NULL,            -- resource | source
    type        text NOT NULL,            -- ADDED | MODIFIED | DELETED
    namespace   text NOT NULL DEFAULT '',
    kind        text NOT NULL DEFAULT '',
    name        text NOT NULL DEFAULT '',
    source      text NOT NULL DEFAULT '',
    phase       text NOT NULL DEFAULT '',
    generation  bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX changes_created ON changes (created_at);
