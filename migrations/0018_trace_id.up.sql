-- The OpenTelemetry trace of the attempt (32 hex digits), when tracing: is configured and the
-- attempt was sampled; NULL otherwise (and for rows written before). The dashboard links it.
ALTER TABLE reconcile_history ADD COLUMN trace_id text;
