-- The revisions each source applied, with their commit's author: policies read the author
-- (change.author) and notAuthor refuses the author's approval.
CREATE TABLE source_revisions (
    source        text NOT NULL,
    revision      text NOT NULL,
    author_name   text NOT NULL DEFAULT '',
    author_email  text NOT NULL DEFAULT '',
    applied_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, revision)
);

-- What a resource gated by a requireApproval (or denied) decision waits for: one row per
-- resource, replaced by each decision, removed once its change is allowed and applied.
CREATE TABLE approval_requests (
    resource_id   bigint PRIMARY KEY REFERENCES resources (id) ON DELETE CASCADE,
    generation    bigint NOT NULL,
    deleting      boolean NOT NULL DEFAULT false,
    change_type   text NOT NULL,            -- create | update | delete | drift
    revision      text NOT NULL DEFAULT '',
    plan_hash     text NOT NULL,
    plan          jsonb NOT NULL,           -- {available, changes, add, change, destroy, replace, summary, text}
    decision      text NOT NULL,            -- requireApproval | deny
    policy        text NOT NULL,
    message       text NOT NULL DEFAULT '',
    requirements  jsonb NOT NULL DEFAULT '[]', -- [policy.Requirement]
    author_name   text NOT NULL DEFAULT '',
    author_email  text NOT NULL DEFAULT '',
    state         text NOT NULL DEFAULT 'pending', -- pending | rejected | denied
    requested_at  timestamptz NOT NULL DEFAULT now()
);

-- Approvals and rejections, each bound to the generation, the operation (a delete does not
-- raise the generation: an approval of its apply is not one of its delete) and the plan hash
-- it was given for.
CREATE TABLE approvals (
    id            bigserial PRIMARY KEY,
    resource_id   bigint NOT NULL REFERENCES resources (id) ON DELETE CASCADE,
    generation    bigint NOT NULL,
    deleting      boolean NOT NULL,         -- given for the resource's delete
    plan_hash     text NOT NULL,
    verdict       text NOT NULL CHECK (verdict IN ('approve', 'reject')),
    actor         text NOT NULL,            -- token:NAME | user:SUBJECT (auth.Identity.Actor)
    approver      jsonb NOT NULL,           -- policy.Approver: token, user, email, groups
    reason        text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX approvals_bound ON approvals (resource_id, generation, deleting, plan_hash);
