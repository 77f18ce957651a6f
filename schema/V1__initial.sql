-- The whole data model of the sandbox. Times are Unix seconds (UTC); the API renders them as RFC 3339.
-- Public identifiers are prefixed strings (cmp_, dev_, ...). Every list is ordered by id and paged by keyset,
-- so every list query has an index whose last column is id.

CREATE TABLE accounts (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);

CREATE TABLE plans (
    id                      TEXT PRIMARY KEY,
    code                    TEXT NOT NULL UNIQUE,
    name                    TEXT NOT NULL,
    description             TEXT NOT NULL,
    monthly_price_cents     INTEGER NOT NULL CHECK (monthly_price_cents >= 0),
    currency                TEXT NOT NULL,
    max_devices             INTEGER NOT NULL CHECK (max_devices > 0),
    included_tokens_monthly INTEGER NOT NULL CHECK (included_tokens_monthly >= 0),
    features                TEXT NOT NULL, -- JSON array of strings
    created_at              INTEGER NOT NULL
);

CREATE TABLE companies (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts(id),
    plan_id     TEXT NOT NULL REFERENCES plans(id),
    name        TEXT NOT NULL,
    slug        TEXT NOT NULL UNIQUE,
    industry    TEXT NOT NULL,
    country     TEXT NOT NULL,
    timezone    TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    version     INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX companies_by_account ON companies(account_id, id);

-- Brand tokens of a company (one row per company) and its logos.
CREATE TABLE brandings (
    company_id       TEXT PRIMARY KEY REFERENCES companies(id) ON DELETE CASCADE,
    primary_color    TEXT NOT NULL,
    secondary_color  TEXT NOT NULL,
    accent_color     TEXT NOT NULL,
    background_color TEXT NOT NULL,
    text_color       TEXT NOT NULL,
    heading_font     TEXT NOT NULL,
    body_font        TEXT NOT NULL,
    corner_radius_px INTEGER NOT NULL CHECK (corner_radius_px BETWEEN 0 AND 64),
    tagline          TEXT,
    updated_at       INTEGER NOT NULL,
    version          INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE brand_logos (
    id          TEXT PRIMARY KEY,
    company_id  TEXT NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
    variant     TEXT NOT NULL CHECK (variant IN ('primary', 'dark', 'icon')),
    url         TEXT NOT NULL,
    format      TEXT NOT NULL,
    width       INTEGER NOT NULL,
    height      INTEGER NOT NULL,
    UNIQUE (company_id, variant)
);
CREATE INDEX brand_logos_by_company ON brand_logos(company_id, id);

CREATE TABLE media (
    id            TEXT PRIMARY KEY,
    company_id    TEXT NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
    filename      TEXT NOT NULL,
    content_type  TEXT NOT NULL,
    size_bytes    INTEGER NOT NULL CHECK (size_bytes >= 0),
    sha256        TEXT NOT NULL,
    width         INTEGER,
    height        INTEGER,
    duration_ms   INTEGER,
    content       BLOB NOT NULL,
    created_at    INTEGER NOT NULL
);
CREATE INDEX media_by_company ON media(company_id, id);

CREATE TABLE promotions (
    id                     TEXT PRIMARY KEY,
    company_id             TEXT NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
    name                   TEXT NOT NULL,
    description            TEXT NOT NULL,
    landing_url            TEXT NOT NULL,
    discount_percent       INTEGER CHECK (discount_percent BETWEEN 1 AND 100),
    activation_cost_tokens INTEGER NOT NULL CHECK (activation_cost_tokens >= 0),
    active                 INTEGER NOT NULL CHECK (active IN (0, 1)),
    starts_at              INTEGER NOT NULL,
    ends_at                INTEGER NOT NULL CHECK (ends_at > starts_at),
    activated_at           INTEGER,
    deactivated_at         INTEGER,
    created_at             INTEGER NOT NULL,
    updated_at             INTEGER NOT NULL,
    version                INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX promotions_by_company ON promotions(company_id, id);
CREATE INDEX promotions_by_company_active ON promotions(company_id, active, id);

CREATE TABLE qr_codes (
    id            TEXT PRIMARY KEY,
    promotion_id  TEXT NOT NULL REFERENCES promotions(id) ON DELETE CASCADE,
    label         TEXT NOT NULL,
    target_url    TEXT NOT NULL,
    scan_count    INTEGER NOT NULL DEFAULT 0 CHECK (scan_count >= 0),
    created_at    INTEGER NOT NULL
);
CREATE INDEX qr_codes_by_promotion ON qr_codes(promotion_id, id);

CREATE TABLE ads (
    id                TEXT PRIMARY KEY,
    company_id        TEXT NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('draft', 'active', 'paused', 'archived')),
    headline          TEXT NOT NULL,
    media_id          TEXT REFERENCES media(id) ON DELETE RESTRICT,
    promotion_id      TEXT REFERENCES promotions(id) ON DELETE SET NULL,
    duration_seconds  INTEGER NOT NULL CHECK (duration_seconds BETWEEN 1 AND 3600),
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    version           INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX ads_by_company ON ads(company_id, id);
CREATE INDEX ads_by_company_status ON ads(company_id, status, id);
CREATE INDEX ads_by_media ON ads(media_id);
CREATE INDEX ads_by_promotion ON ads(promotion_id, id);

CREATE TABLE devices (
    id                 TEXT PRIMARY KEY,
    company_id         TEXT NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
    name               TEXT NOT NULL,
    location           TEXT NOT NULL,
    platform           TEXT NOT NULL CHECK (platform IN ('android', 'tizen', 'webos', 'brightsign', 'windows', 'linux')),
    orientation        TEXT NOT NULL CHECK (orientation IN ('landscape', 'portrait')),
    resolution         TEXT NOT NULL,
    app_version        TEXT,
    last_heartbeat_at  INTEGER,
    current_ad_id      TEXT REFERENCES ads(id) ON DELETE SET NULL,
    storage_used_mb    INTEGER CHECK (storage_used_mb >= 0),
    storage_total_mb   INTEGER CHECK (storage_total_mb > 0),
    uptime_seconds     INTEGER CHECK (uptime_seconds >= 0),
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    version            INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX devices_by_company ON devices(company_id, id);

CREATE TABLE ad_assignments (
    device_id    TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    ad_id        TEXT NOT NULL REFERENCES ads(id) ON DELETE CASCADE,
    assigned_at  INTEGER NOT NULL,
    PRIMARY KEY (device_id, ad_id)
) WITHOUT ROWID;
CREATE INDEX ad_assignments_by_ad ON ad_assignments(ad_id, device_id);

CREATE TABLE playback_errors (
    id           TEXT PRIMARY KEY,
    device_id    TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    ad_id        TEXT REFERENCES ads(id) ON DELETE SET NULL,
    code         TEXT NOT NULL,
    message      TEXT NOT NULL,
    occurred_at  INTEGER NOT NULL
);
CREATE INDEX playback_errors_by_device ON playback_errors(device_id, id);

CREATE TABLE token_packs (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    tokens       INTEGER NOT NULL CHECK (tokens > 0),
    price_cents  INTEGER NOT NULL CHECK (price_cents >= 0),
    currency     TEXT NOT NULL,
    created_at   INTEGER NOT NULL
);

-- The balance is a cache of the ledger: it always equals the sum of the company's transactions.
CREATE TABLE token_balances (
    company_id  TEXT PRIMARY KEY REFERENCES companies(id) ON DELETE CASCADE,
    balance     INTEGER NOT NULL CHECK (balance >= 0),
    updated_at  INTEGER NOT NULL
);

CREATE TABLE invoices (
    id             TEXT PRIMARY KEY,
    company_id     TEXT NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
    number         TEXT NOT NULL UNIQUE,
    status         TEXT NOT NULL CHECK (status IN ('draft', 'open', 'paid', 'void')),
    currency       TEXT NOT NULL,
    period_start   INTEGER NOT NULL,
    period_end     INTEGER NOT NULL,
    issued_at      INTEGER NOT NULL,
    due_at         INTEGER NOT NULL,
    paid_at        INTEGER,
    created_at     INTEGER NOT NULL
);
CREATE INDEX invoices_by_company ON invoices(company_id, id);

CREATE TABLE charges (
    id            TEXT PRIMARY KEY,
    company_id    TEXT NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
    invoice_id    TEXT NOT NULL REFERENCES invoices(id) ON DELETE CASCADE,
    kind          TEXT NOT NULL CHECK (kind IN ('subscription', 'token_pack', 'overage', 'credit')),
    description   TEXT NOT NULL,
    amount_cents  INTEGER NOT NULL,
    currency      TEXT NOT NULL,
    created_at    INTEGER NOT NULL
);
CREATE INDEX charges_by_company ON charges(company_id, id);
CREATE INDEX charges_by_invoice ON charges(invoice_id, id);

CREATE TABLE token_transactions (
    id             TEXT PRIMARY KEY,
    company_id     TEXT NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
    kind           TEXT NOT NULL CHECK (kind IN ('grant', 'purchase', 'spend', 'refund')),
    amount         INTEGER NOT NULL CHECK (amount <> 0),
    balance_after  INTEGER NOT NULL CHECK (balance_after >= 0),
    description    TEXT NOT NULL,
    token_pack_id  TEXT REFERENCES token_packs(id),
    promotion_id   TEXT REFERENCES promotions(id) ON DELETE SET NULL,
    charge_id      TEXT REFERENCES charges(id) ON DELETE SET NULL,
    created_at     INTEGER NOT NULL
);
CREATE INDEX token_transactions_by_company ON token_transactions(company_id, id);

CREATE TABLE webhooks (
    id           TEXT PRIMARY KEY,
    company_id   TEXT NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
    url          TEXT NOT NULL,
    description  TEXT NOT NULL,
    event_types  TEXT NOT NULL, -- JSON array of event type names
    enabled      INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    -- The signing secret must be kept to sign deliveries; the API shows it once, then only its last four.
    secret       TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    version      INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX webhooks_by_company ON webhooks(company_id, id);

CREATE TABLE api_clients (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    description  TEXT NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL
);
CREATE INDEX api_clients_by_account ON api_clients(account_id, id);

-- Only the SHA-256 of a key is stored; the raw key is shown once at creation.
CREATE TABLE api_keys (
    id            TEXT PRIMARY KEY,          -- key_<key id>, the key id is embedded in the raw key
    client_id     TEXT NOT NULL REFERENCES api_clients(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    prefix        TEXT NOT NULL,
    last_four     TEXT NOT NULL,
    secret_hash   TEXT NOT NULL,             -- hex SHA-256 of the whole raw key
    scopes        TEXT NOT NULL,             -- space-separated
    company_id    TEXT REFERENCES companies(id) ON DELETE CASCADE,
    created_at    INTEGER NOT NULL,
    last_used_at  INTEGER,
    expires_at    INTEGER,
    revoked_at    INTEGER,
    replaced_by   TEXT REFERENCES api_keys(id) ON DELETE SET NULL
);
CREATE INDEX api_keys_by_client ON api_keys(client_id, id);

CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    username       TEXT NOT NULL UNIQUE,
    password_hash  TEXT NOT NULL,            -- argon2id PHC string
    role           TEXT NOT NULL CHECK (role IN ('admin', 'editor', 'viewer')),
    company_id     TEXT REFERENCES companies(id) ON DELETE CASCADE,
    created_at     INTEGER NOT NULL
);
CREATE INDEX users_by_account ON users(account_id, id);

-- Every write and every authentication failure. Never holds a secret.
CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          INTEGER NOT NULL,
    request_id  TEXT NOT NULL,
    actor       TEXT,                        -- key_... or usr_..., NULL when unauthenticated
    client_id   TEXT,
    method      TEXT NOT NULL,
    route       TEXT NOT NULL,
    status      INTEGER NOT NULL,
    outcome     TEXT NOT NULL
);

-- Domain events, written in the same transaction as the change they describe (webhook deliveries read them).
CREATE TABLE events (
    id             TEXT PRIMARY KEY,
    company_id     TEXT REFERENCES companies(id) ON DELETE CASCADE,
    type           TEXT NOT NULL,
    resource_type  TEXT NOT NULL,
    resource_id    TEXT NOT NULL,
    payload        TEXT NOT NULL,
    created_at     INTEGER NOT NULL
);
CREATE INDEX events_by_company ON events(company_id, id);

CREATE TABLE idempotency_keys (
    actor         TEXT NOT NULL,
    key           TEXT NOT NULL,
    method        TEXT NOT NULL,
    path          TEXT NOT NULL,
    request_hash  TEXT NOT NULL,
    status        INTEGER,                   -- NULL while the first request is in flight
    headers       TEXT,
    body          BLOB,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (actor, key)
) WITHOUT ROWID;

-- Server-side secrets generated once per database (the JWT signing key). Kept across resets.
CREATE TABLE server_secrets (
    name   TEXT PRIMARY KEY,
    value  TEXT NOT NULL
) WITHOUT ROWID;
