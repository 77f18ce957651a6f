-- Delivery lists filtered by status, webhook and status, or event type, newest first
-- (GET /webhooks/{id}/deliveries?status=, GET /_sandbox/deliveries): each walks one index in id
-- order instead of scanning the outbox.
CREATE INDEX webhook_deliveries_by_status ON webhook_deliveries(status, id);
CREATE INDEX webhook_deliveries_by_webhook_status ON webhook_deliveries(webhook_id, status, id);
CREATE INDEX webhook_deliveries_by_type ON webhook_deliveries(event_type, id);
