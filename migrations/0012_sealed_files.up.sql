-- An encrypted manifest file is stored once, whatever the number of resources it holds;
-- resources name it by its sha256 (hex). The claim reads the hash only; a replica reads the
-- content when its cache does not have that file yet.
CREATE TABLE sealed_files (
  sha256 text PRIMARY KEY,
  content text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO sealed_files (sha256, content)
  SELECT DISTINCT encode(sha256(convert_to(sealed, 'UTF8')), 'hex'), sealed FROM resources WHERE sealed IS NOT NULL
  ON CONFLICT DO NOTHING;
ALTER TABLE resources ADD COLUMN sealed_sha text;
UPDATE resources SET sealed_sha = encode(sha256(convert_to(sealed, 'UTF8')), 'hex') WHERE sealed IS NOT NULL;
ALTER TABLE resources DROP COLUMN sealed;
CREATE INDEX resources_sealed_sha ON resources (sealed_sha) WHERE sealed_sha IS NOT NULL;
