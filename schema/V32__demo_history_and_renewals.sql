-- Issue 32: a demo world with a history, and billing that follows the clock.

-- The fixture accounts whose 30 days of history (the simulated fleet's plays and the simulated
-- phones' scans before the world was loaded) are still to be written: the fixture loader adds a
-- row per account it loads, the sandbox writes the history when it settles and stamps `written_at`.
CREATE TABLE world_history (
    account_id  TEXT PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
    loaded_at   INTEGER NOT NULL,
    written_at  INTEGER
) WITHOUT ROWID;

-- The first second of the UTC month up to which each company's subscription was renewed (its
-- plan's monthly price charged, its included tokens granted). A company without a row counts as
-- renewed through the month it was created in, or the month the row was settled in.
CREATE TABLE subscription_renewals (
    company_id  TEXT PRIMARY KEY REFERENCES companies(id) ON DELETE CASCADE,
    renewed_at  INTEGER NOT NULL
) WITHOUT ROWID;

-- An ad's own dates (both optional): it plays only from `starts_at` and until `ends_at`, and, with
-- a promotion, only while the promotion runs.
ALTER TABLE ads ADD COLUMN starts_at INTEGER;
ALTER TABLE ads ADD COLUMN ends_at INTEGER;
