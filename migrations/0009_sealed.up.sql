-- A resource whose spec has SOPS-encrypted fields keeps the encrypted file it came from; its
-- spec holds markers in their place (internal/sealed).
ALTER TABLE resources ADD COLUMN sealed text;
