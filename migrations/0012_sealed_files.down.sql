ALTER TABLE resources ADD COLUMN sealed text;
UPDATE resources r SET sealed = f.content FROM sealed_files f WHERE f.sha256 = r.sealed_sha;
DROP INDEX IF EXISTS resources_sealed_sha;
ALTER TABLE resources DROP COLUMN sealed_sha;
DROP TABLE sealed_files;
