-- Issue 48: four b-trees for every play row instead of five.
--
-- A play row was written to five b-trees when the fleet added it and again when retention rolled
-- it up: the table by rowid, its text id's unique index, by screen (device_id, id), by ad and
-- screen (ad_id, device_id, id), and by company and start. No reader looks a play up by its id
-- alone: the plays list reads a screen's plays by id (by screen), the fleet adds to the newest row
-- of a screen's ad (by ad and screen), reports and retention read a company's plays by start. So
-- the id is no longer the table's primary key, and its index goes; the index by screen is now
-- unique, so an id stays unique to its screen (a clock draws ids in increasing order: its
-- milliseconds, then a counter that only grows within one).
--
-- Every row, id and rowid is kept; the screen and ad keys are still checked at commit (V38).
CREATE TABLE playbacks_v49 (
    id                TEXT NOT NULL,
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
INSERT INTO playbacks_v49 (rowid, id, company_id, device_id, ad_id, source, started_at,
                           duration_seconds, plays, created_at)
    SELECT rowid, id, company_id, device_id, ad_id, source, started_at, duration_seconds, plays,
           created_at
    FROM playbacks ORDER BY rowid;
DROP TABLE playbacks;
ALTER TABLE playbacks_v49 RENAME TO playbacks;
CREATE UNIQUE INDEX playbacks_by_device ON playbacks(device_id, id);
CREATE INDEX playbacks_by_ad_device ON playbacks(ad_id, device_id, id);
CREATE INDEX playbacks_by_company_started ON playbacks(company_id, started_at);
