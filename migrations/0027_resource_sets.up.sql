-- A source's ResourceSets as of the revision it applied last: the set's page shows them, and
-- a set that another source already declares is a conflict.
CREATE TABLE resource_sets (
    namespace  text        NOT NULL,
    name       text        NOT NULL,
    source     text        NOT NULL,
    file_path  text        NOT NULL,
    file_line  integer     NOT NULL DEFAULT 0,
    revision   text        NOT NULL,
    inputs     integer     NOT NULL DEFAULT 0,
    members    integer     NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, name)
);
CREATE INDEX resource_sets_source ON resource_sets (source);

-- A set's members are the resources labelled with its name in its namespace.
CREATE INDEX resources_resource_set ON resources (namespace, (labels->>'trueup.dev/resource-set'))
    WHERE labels ? 'trueup.dev/resource-set';
