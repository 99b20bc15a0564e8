-- deliveries maps a "rule/provider" target to the delivery id of the message about this entry
-- that was sent (or tried) to it and not yet recorded as delivered: written before the
-- message's first send, so that every retry rebuilds the same message (the same entries)
-- under the same id, whatever entries arrived meanwhile (internal/notify Plan).
ALTER TABLE notification_outbox ADD COLUMN deliveries jsonb NOT NULL DEFAULT '{}';
