ALTER TABLE previews DROP COLUMN replica;
