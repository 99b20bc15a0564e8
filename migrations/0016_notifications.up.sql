-- The notifications outbox: one row per event worth telling (internal/notify Events), written in
-- the transaction that changes the status, delivered by the replica holding the
-- "notifications" lease (internal/notifier). done lists the "rule/provider" pairs already
-- delivered, so a retry after a partial failure sends only what is missing.
CREATE TABLE notification_outbox (
    id              bigserial PRIMARY KEY,
    created_at      timestamptz NOT NULL DEFAULT now(),
    event           text        NOT NULL,
    namespace       text        NOT NULL DEFAULT '',
    kind            text        NOT NULL DEFAULT '',
    name            text        NOT NULL DEFAULT '',
    source          text        NOT NULL DEFAULT '',
    revision        text        NOT NULL DEFAULT '',
    labels          jsonb       NOT NULL DEFAULT '{}',
    phase           text        NOT NULL DEFAULT '',
    message         text        NOT NULL DEFAULT '',
    state           text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'dead')),
    attempts        int         NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text        NOT NULL DEFAULT '',
    done            text[]      NOT NULL DEFAULT '{}',
    finished_at     timestamptz
);
CREATE INDEX notification_outbox_due ON notification_outbox (next_attempt_at, id) WHERE state = 'pending';
CREATE INDEX notification_outbox_state ON notification_outbox (state, id);
