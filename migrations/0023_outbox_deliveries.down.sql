ALTER TABLE notification_outbox DROP COLUMN IF EXISTS deliveries;
