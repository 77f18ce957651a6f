-- Issue 33: the fleet's play rows written many to a statement without a statement journal.
--
-- An advance writes its day of hourly play rows (~940) at commit, 64 to an INSERT. A multi-row
-- statement that can abort halfway keeps a statement journal: a copy of every page it first
-- changes, so that it can be undone alone. An immediate foreign key makes every such INSERT one that
-- can abort, and each 64-row statement copied 32 to 86 pages (130-350 KiB), past SQLite's 64 KiB
-- in-memory buffer and into a temporary file: 14 statements, ~730 page copies and ~1,460 writes
-- per simulated day, a fifth of the advance's time, none of which callgrind shows.
--
-- The table is rebuilt (SQLite cannot change a foreign key in place) with:
-- - its device and ad keys DEFERRABLE INITIALLY DEFERRED: checked when the transaction commits
--   instead of after each statement, so a COMMIT with a play of a missing screen or ad still fails
--   and rolls back. ON DELETE CASCADE is unchanged: a screen's or an ad's plays go with it at once;
-- - no key to companies: a play's company is its screen's (every writer copies it from the
--   device row), and a company's deletion already takes its screens and, with them, their plays.
--   The key only cost a lookup per row.
-- The fleet's INSERTs say OR FAIL (a CHECK or UNIQUE failure stops the statement where it is
-- rather than undoing it), so nothing in them can abort and none keeps a journal; a failure fails
-- the whole write transaction, as before. Every row, id and rowid is kept, and every index.
CREATE TABLE playbacks_v38 (
    id                TEXT PRIMARY KEY,
    company_id        TEXT NOT NULL,
    device_id         TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE
                          DEFERRABLE INITIALLY DEFERRED,
    ad_id             TEXT NOT NULL REFERENCES ads(id) ON DELETE CASCADE
                          DEFERRABLE INITIALLY DEFERRED,
    source            TEXT NOT NULL CHECK (source IN ('player', 'simulator')),
    started_at        INTEGER NOT NULL,
    duration_seconds  INTEGER NOT NULL CHECK (duration_seconds >= 0),
    plays             INTEGER NOT NULL CHECK (plays >= 0),
    created_at        INTEGER NOT NULL
);
INSERT INTO playbacks_v38 (rowid, id, company_id, device_id, ad_id, source, started_at,
                           duration_seconds, plays, created_at)
    SELECT rowid, id, company_id, device_id, ad_id, source, started_at, duration_seconds, plays,
           created_at
    FROM playbacks ORDER BY rowid;
DROP TABLE playbacks;
ALTER TABLE playbacks_v38 RENAME TO playbacks;
CREATE INDEX playbacks_by_device ON playbacks(device_id, id);
CREATE INDEX playbacks_by_ad_device ON playbacks(ad_id, device_id, id);
CREATE INDEX playbacks_by_company_started ON playbacks(company_id, started_at);
CREATE UNIQUE INDEX playbacks_simulated_slot ON playbacks(device_id, ad_id, started_at)
    WHERE source = 'simulator';
CREATE INDEX playbacks_by_started ON playbacks(started_at);
