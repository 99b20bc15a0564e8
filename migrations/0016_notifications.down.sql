DROP TABLE IF EXISTS notification_outbox;
