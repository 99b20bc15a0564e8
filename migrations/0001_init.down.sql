DROP TABLE IF EXISTS webhook_deliveries, events, reconcile_history, resources, resource_types, sources;
