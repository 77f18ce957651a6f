-- Issue 22: no tenant can exhaust what the others share, and the database stays bounded.

-- Scans past a code's detail cap (`scans.detail_per_code`), and scan detail past its age, are
-- counted here: one row per code, UTC minute and user-agent class. Counts stay exact; the
-- promotion report reads both tables.
CREATE TABLE qr_scan_counts (
    qr_code_id   TEXT NOT NULL REFERENCES qr_codes(id) ON DELETE CASCADE,
    minute       INTEGER NOT NULL,           -- scanned_at / 60 (sandbox clock)
    agent_class  TEXT NOT NULL CHECK (agent_class IN ('ios', 'android', 'desktop', 'bot', 'other')),
    scans        INTEGER NOT NULL CHECK (scans > 0),
    PRIMARY KEY (qr_code_id, minute, agent_class)
) WITHOUT ROWID;
CREATE INDEX qr_scan_counts_by_minute ON qr_scan_counts(minute);
CREATE INDEX qr_scans_by_time ON qr_scans(scanned_at);

-- Plays older than `retention.playback_rollup_days` are rolled up into one row per company, UTC
-- day, device and ad; proof-of-play reports read both tables.
CREATE TABLE playback_daily_totals (
    company_id  TEXT NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
    day         INTEGER NOT NULL,            -- started_at / 86400
    device_id   TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    ad_id       TEXT NOT NULL REFERENCES ads(id) ON DELETE CASCADE,
    plays       INTEGER NOT NULL CHECK (plays >= 0),
    seconds     INTEGER NOT NULL CHECK (seconds >= 0),
    -- How many playback rows the total stands for.
    rows        INTEGER NOT NULL CHECK (rows > 0),
    PRIMARY KEY (company_id, day, device_id, ad_id)
) WITHOUT ROWID;
CREATE INDEX playback_daily_totals_by_day ON playback_daily_totals(day);
CREATE INDEX playback_daily_totals_by_device ON playback_daily_totals(device_id);
CREATE INDEX playback_daily_totals_by_ad ON playback_daily_totals(ad_id);
CREATE INDEX playbacks_by_started ON playbacks(started_at);

-- Retention walks each history table by age, oldest first.
CREATE INDEX events_by_created ON events(created_at);
CREATE INDEX audit_log_by_at ON audit_log(at);
CREATE INDEX idempotency_keys_by_created ON idempotency_keys(created_at);
CREATE INDEX idempotency_keys_by_actor_created ON idempotency_keys(actor, created_at);
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries(company_id, updated_at)
    WHERE status <> 'pending';

-- The hosts a company's promotions may send scanners to: a JSON array of domains (a host matches a
-- domain it equals or ends with after a dot). NULL or `[]`: any https URL.
ALTER TABLE companies ADD COLUMN allowed_landing_domains TEXT;
