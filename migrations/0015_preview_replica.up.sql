-- The replica running a preview, so that a preview left Running by a replica that died can be
-- told from one a live replica is running (internal/store InterruptPreviews).
ALTER TABLE previews ADD COLUMN replica text NOT NULL DEFAULT '';
