-- Pull-request previews (DESIGN §4, Previews): the latest preview of each pull request (or
-- merge request) of a source. Written only by the preview runner; nothing here is desired
-- state.
CREATE TABLE previews (
  source        text NOT NULL,
  number        integer NOT NULL,              -- the pull/merge request number
  provider      text NOT NULL,                 -- github | gitea | gitlab
  title         text NOT NULL DEFAULT '',
  url           text NOT NULL DEFAULT '',      -- the pull request's page
  head_sha      text NOT NULL,                 -- the commit previewed (or being previewed)
  base_revision text NOT NULL DEFAULT '',      -- the source's applied revision it was compared with
  state         text NOT NULL,                 -- Pending | Running | Succeeded | Failed | Error
  message       text NOT NULL DEFAULT '',      -- one line: counts, or why it failed
  result        jsonb NOT NULL DEFAULT '{}',   -- preview.Result
  comment_id    text NOT NULL DEFAULT '',      -- the forge's comment (note) id, edited in place
  comment_url   text NOT NULL DEFAULT '',
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source, number)
);
CREATE INDEX previews_updated ON previews (source, updated_at DESC);
