-- Issue 15: QR codes as a resource with a short code that `GET /q/{code}` resolves, their UTM
-- parameters, and the scans that code records.
--
-- qr_codes is rebuilt (SQLite cannot add a NOT NULL UNIQUE column): codes that existed before get a
-- random 12-hex-digit short code; new codes get 10 base-62 characters (src/routes/promotions).
CREATE TABLE qr_codes_v10 (
    id                    TEXT PRIMARY KEY,
    promotion_id          TEXT NOT NULL REFERENCES promotions(id) ON DELETE CASCADE,
    code                  TEXT NOT NULL UNIQUE,
    label                 TEXT NOT NULL,
    target_url            TEXT NOT NULL,
    utm_source            TEXT,
    utm_medium            TEXT,
    utm_campaign          TEXT,
    utm_term              TEXT,
    utm_content           TEXT,
    -- The target with its UTM parameters: where `GET /q/{code}` redirects.
    redirect_url          TEXT NOT NULL,
    scan_count            INTEGER NOT NULL DEFAULT 0 CHECK (scan_count >= 0),
    last_scanned_at       INTEGER,
    -- The `qr_code.scanned` rate limit: when the last event was recorded, and the scan count then.
    last_event_at         INTEGER,
    last_event_scan_count INTEGER NOT NULL DEFAULT 0,
    created_at            INTEGER NOT NULL,
    version               INTEGER NOT NULL DEFAULT 1
);
INSERT INTO qr_codes_v10 (id, promotion_id, code, label, target_url, redirect_url, scan_count, created_at)
    SELECT id, promotion_id, lower(hex(randomblob(6))), label, target_url, target_url, scan_count, created_at
    FROM qr_codes;
DROP TABLE qr_codes;
ALTER TABLE qr_codes_v10 RENAME TO qr_codes;
CREATE INDEX qr_codes_by_promotion ON qr_codes(promotion_id, id);

-- One row per scan: when (the sandbox clock) and the class of the user agent. No address is stored.
CREATE TABLE qr_scans (
    id           TEXT PRIMARY KEY,
    qr_code_id   TEXT NOT NULL REFERENCES qr_codes(id) ON DELETE CASCADE,
    scanned_at   INTEGER NOT NULL,
    agent_class  TEXT NOT NULL CHECK (agent_class IN ('ios', 'android', 'desktop', 'bot', 'other'))
);
CREATE INDEX qr_scans_by_code ON qr_scans(qr_code_id, id);
CREATE INDEX qr_scans_by_code_time ON qr_scans(qr_code_id, scanned_at);
