CREATE INDEX IF NOT EXISTS resources_phase ON resources (phase);
