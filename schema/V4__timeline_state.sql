-- Issue 10: what the timeline last reported, so each time-driven transition fires (and records its
-- domain event) exactly once. Every marker is "the state last announced", not a cache of a derived
-- value: the API still derives `state`/`status` from the clock on read.

-- A promotion's window as last announced: NULL (not judged yet: fixtures just loaded, or created and
-- never switched on), `idle` (not running), `running` (`promotion.started` recorded), `ended`
-- (`promotion.ended` recorded, or the window closed by an edit).
ALTER TABLE promotions ADD COLUMN phase TEXT CHECK (phase IN ('idle', 'running', 'ended'));
CREATE INDEX promotions_start_due ON promotions(starts_at) WHERE phase = 'idle' AND active = 1;
CREATE INDEX promotions_end_due ON promotions(ends_at) WHERE phase = 'running';

-- When `api_key.expired` was recorded for a key (NULL: not yet).
ALTER TABLE api_keys ADD COLUMN expiry_reported_at INTEGER;
CREATE INDEX api_keys_expiry_due ON api_keys(expires_at)
    WHERE expiry_reported_at IS NULL AND revoked_at IS NULL AND expires_at IS NOT NULL;

-- A device's presence as last reported: NULL (not judged yet: never seen, or just loaded), `online`,
-- `offline` (`device.offline` recorded; the next heartbeat records `device.online`).
ALTER TABLE devices ADD COLUMN presence TEXT CHECK (presence IN ('online', 'offline'));
CREATE INDEX devices_offline_due ON devices(last_heartbeat_at) WHERE presence = 'online';

-- Pending MCP confirmations that expire unused are marked (outcome `expired`, used_at still NULL)
-- by the timeline, which records `mcp.confirmation_expired`.
CREATE INDEX mcp_pending_changes_unused_expiry ON mcp_pending_changes(expires_at)
    WHERE used_at IS NULL AND outcome IS NULL;

-- Invoices gain the status `overdue` (an `open` invoice past its `due_at`). SQLite cannot change a
-- CHECK in place: the table is rebuilt. Dropping it cascades to its charges (foreign keys are on
-- during migrations), so charges and the ledger's links to them are set aside and put back.
CREATE TEMP TABLE v4_charges AS SELECT * FROM charges;
CREATE TEMP TABLE v4_charge_links AS
    SELECT id, charge_id FROM token_transactions WHERE charge_id IS NOT NULL;

CREATE TABLE invoices_v4 (
    id             TEXT PRIMARY KEY,
    company_id     TEXT NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
    number         TEXT NOT NULL UNIQUE,
    status         TEXT NOT NULL CHECK (status IN ('draft', 'open', 'paid', 'void', 'overdue')),
    currency       TEXT NOT NULL,
    period_start   INTEGER NOT NULL,
    period_end     INTEGER NOT NULL,
    issued_at      INTEGER NOT NULL,
    due_at         INTEGER NOT NULL,
    paid_at        INTEGER,
    created_at     INTEGER NOT NULL
);
INSERT INTO invoices_v4 (id, company_id, number, status, currency, period_start, period_end,
        issued_at, due_at, paid_at, created_at)
    SELECT id, company_id, number, status, currency, period_start, period_end,
        issued_at, due_at, paid_at, created_at FROM invoices;
DROP TABLE invoices;
ALTER TABLE invoices_v4 RENAME TO invoices;
CREATE INDEX invoices_by_company ON invoices(company_id, id);
CREATE INDEX invoices_overdue_due ON invoices(due_at) WHERE status = 'open';

INSERT INTO charges SELECT * FROM v4_charges WHERE id NOT IN (SELECT id FROM charges);
UPDATE token_transactions
    SET charge_id = (SELECT l.charge_id FROM v4_charge_links l WHERE l.id = token_transactions.id)
    WHERE id IN (SELECT id FROM v4_charge_links);
DROP TABLE v4_charges;
DROP TABLE v4_charge_links;
