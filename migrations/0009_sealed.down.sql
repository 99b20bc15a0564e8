ALTER TABLE resources DROP COLUMN sealed;
