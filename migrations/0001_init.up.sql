-- Sources: one row per configured source, written by its syncer.
CREATE TABLE sources (
    name                    text PRIMARY KEY,
    url                     text NOT NULL DEFAULT '',
    branch                  text NOT NULL DEFAULT '',
    path                    text NOT NULL DEFAULT '',
    revision                text NOT NULL DEFAULT '',   -- last applied
    last_attempted_revision text NOT NULL DEFAULT '',
    last_sync_time          timestamptz,
    conditions              jsonb NOT NULL DEFAULT '[]',
    errors                  jsonb NOT NULL DEFAULT '[]',
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now()
);

-- ResourceTypes: the schemas resources are validated against, and their action.
CREATE TABLE resource_types (
    name            text PRIMARY KEY,              -- the kind, as declared
    grp             text NOT NULL,
    source          text NOT NULL,
    file_path       text NOT NULL DEFAULT '',
    file_line       integer NOT NULL DEFAULT 0,
    revision        text NOT NULL DEFAULT '',
    spec            jsonb NOT NULL,
    hash            text NOT NULL,
    action_name     text NOT NULL,
    action_with     jsonb,
    resync_interval_ms bigint,                     -- NULL: the controller's default; 0: off
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX resource_types_lower_name ON resource_types (lower(name));

-- Resources: desired state (from Git), status (from the reconciler) and the work queue.
CREATE TABLE resources (
    id                    bigserial PRIMARY KEY,
    uid                   uuid NOT NULL DEFAULT gen_random_uuid(),
    namespace             text NOT NULL,
    kind                  text NOT NULL,
    name                  text NOT NULL,
    api_version           text NOT NULL,
    source                text NOT NULL,
    file_path             text NOT NULL DEFAULT '',
    file_line             integer NOT NULL DEFAULT 0,
    revision              text NOT NULL DEFAULT '',   -- the revision that last changed this row's desired state
    labels                jsonb NOT NULL DEFAULT '{}',
    annotations           jsonb NOT NULL DEFAULT '{}',
    spec                  jsonb NOT NULL DEFAULT '{}',
    spec_hash             text NOT NULL,
    meta_hash             text NOT NULL,
    generation            bigint NOT NULL DEFAULT 1,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),  -- desired state last written
    deletion_timestamp    timestamptz,

    phase                 text NOT NULL DEFAULT 'Pending',
    observed_generation   bigint NOT NULL DEFAULT 0,
    conditions            jsonb NOT NULL DEFAULT '[]',
    outputs               jsonb NOT NULL DEFAULT '{}',
    action_state          jsonb,
    message               text NOT NULL DEFAULT '',
    last_reconcile_time   timestamptz,
    status_updated_at     timestamptz,

    run_at                timestamptz,                -- NULL: nothing due
    attempt               integer NOT NULL DEFAULT 0,  -- consecutive failures
    lease_owner           text,
    lease_token           uuid,
    lease_expires_at      timestamptz,
    dirty                 boolean NOT NULL DEFAULT false -- desired state changed while leased
);
CREATE UNIQUE INDEX resources_identity ON resources (namespace, lower(kind), name);
CREATE INDEX resources_due ON resources (run_at) WHERE lease_owner IS NULL AND run_at IS NOT NULL;
CREATE INDEX resources_lease ON resources (lease_expires_at) WHERE lease_owner IS NOT NULL;
CREATE INDEX resources_source ON resources (source);
CREATE INDEX resources_phase ON resources (phase);

-- Every reconcile attempt; keyed by identity so it outlives the resource row.
CREATE TABLE reconcile_history (
    id            bigserial PRIMARY KEY,
    resource_uid  uuid NOT NULL,
    namespace     text NOT NULL,
    kind          text NOT NULL,
    name          text NOT NULL,
    generation    bigint NOT NULL,
    revision      text NOT NULL DEFAULT '',
    operation     text NOT NULL,      -- reconcile | delete | observe
    trigger       text NOT NULL,      -- created | spec-changed | retry | requeue | resync | deleted
    result        text NOT NULL,      -- Succeeded | InProgress | Failed | Stalled | InSync | Drifted
    message       text NOT NULL DEFAULT '',
    replica       text NOT NULL DEFAULT '',
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz NOT NULL,
    outputs       jsonb
);
CREATE INDEX reconcile_history_identity ON reconcile_history (namespace, lower(kind), name, id DESC);

CREATE TABLE events (
    id          bigserial PRIMARY KEY,
    namespace   text NOT NULL DEFAULT '',
    kind        text NOT NULL DEFAULT '',
    name        text NOT NULL DEFAULT '',
    source      text NOT NULL DEFAULT '',
    type        text NOT NULL,        -- Normal | Warning
    reason      text NOT NULL,
    message     text NOT NULL DEFAULT '',
    replica     text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_identity ON events (namespace, lower(kind), name, id DESC);

CREATE TABLE webhook_deliveries (
    source       text NOT NULL,
    delivery_id  text NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, delivery_id)
);
