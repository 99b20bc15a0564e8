ALTER TABLE notification_outbox DROP COLUMN deliveries;
