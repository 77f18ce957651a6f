-- Webhook delivery (issue 11): a durable outbox. `events::record` writes one delivery per event and
-- subscribed, enabled webhook in the same transaction as the event, so a crash never loses one.
CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,
    company_id       TEXT NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
    webhook_id       TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    event_id         TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
    event_type       TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    -- When the next attempt is due (Unix seconds, sandbox clock); NULL once succeeded or failed.
    next_attempt_at  INTEGER,
    -- Set while an attempt is being sent by this process (Unix ms); cleared when it is recorded and,
    -- after a crash, at start-up (the attempt is then sent again: receivers deduplicate by webhook-id).
    claimed_at       INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries(webhook_id, id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at)
    WHERE status = 'pending' AND claimed_at IS NULL;
CREATE INDEX webhook_deliveries_claimed ON webhook_deliveries(claimed_at)
    WHERE claimed_at IS NOT NULL;
CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries(event_id);

-- One row per attempt: when, the HTTP status (NULL: no response), the time to the response, the
-- first bytes of the response body or the error. Never the secret or the signature.
CREATE TABLE webhook_attempts (
    delivery_id  TEXT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
    company_id   TEXT NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
    n            INTEGER NOT NULL,
    at_ms        INTEGER NOT NULL,
    http_status  INTEGER,
    latency_ms   INTEGER NOT NULL,
    error        TEXT,
    response     TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (delivery_id, n)
) WITHOUT ROWID;

-- Secret rotation: the previous secret keeps signing (as a second signature) until it expires.
-- Failing since: the first failed attempt after the last success; a webhook failing for
-- `webhooks.disable_after_secs` is disabled.
ALTER TABLE webhooks ADD COLUMN previous_secret TEXT;
ALTER TABLE webhooks ADD COLUMN previous_secret_expires_at INTEGER;
ALTER TABLE webhooks ADD COLUMN failing_since INTEGER;
