-- Issue 48: the proof-of-play report reads whole days from one row per company, UTC day, screen
-- and ad, instead of summing every play row of them.
--
-- A row is the sum of everything the report counts for its day: the play rows that started in it
-- (`playbacks`, `started_at / 86400 = day`) and its daily total (`playback_daily_totals`), and
-- `rows` the number of play rows it stands for (a total's `rows` counts the play rows rolled into
-- it). A key has a row exactly when one of those has one, so the report lists the same days,
-- screens and ads from it.
--
-- Kept in the transaction that writes the plays, by their writers: the fleet's plays (one upsert
-- per day, screen and ad of what a transaction writes, not one per hourly row), a player's
-- report, the demo history's totals. Retention moving play rows into a total changes no sum and
-- no count here; a total retention deletes by age is taken out by the trigger below. A screen's,
-- an ad's or a company's deletion takes its rows (the keys). A snapshot and its restore copy it
-- with the rest; a reset empties it with the rest.
CREATE TABLE playback_days (
    company_id  TEXT NOT NULL,
    day         INTEGER NOT NULL,
    device_id   TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE
                    DEFERRABLE INITIALLY DEFERRED,
    ad_id       TEXT NOT NULL REFERENCES ads(id) ON DELETE CASCADE
                    DEFERRABLE INITIALLY DEFERRED,
    plays       INTEGER NOT NULL,
    seconds     INTEGER NOT NULL,
    rows        INTEGER NOT NULL,
    PRIMARY KEY (company_id, day, device_id, ad_id)
) WITHOUT ROWID;
CREATE INDEX playback_days_by_device ON playback_days(device_id);
CREATE INDEX playback_days_by_ad ON playback_days(ad_id);

INSERT INTO playback_days (company_id, day, device_id, ad_id, plays, seconds, rows)
    SELECT company_id, day, device_id, ad_id, sum(plays), sum(seconds), sum(rows)
    FROM (SELECT company_id, started_at / 86400 AS day, device_id, ad_id, plays,
                 duration_seconds AS seconds, 1 AS rows
          FROM playbacks
          UNION ALL
          SELECT company_id, day, device_id, ad_id, plays, seconds, rows FROM playback_daily_totals)
    GROUP BY company_id, day, device_id, ad_id;

-- A daily total deleted (retention by age) leaves what else its day holds.
CREATE TRIGGER playback_days_total_deleted AFTER DELETE ON playback_daily_totals
BEGIN
    UPDATE playback_days SET plays = plays - OLD.plays, seconds = seconds - OLD.seconds,
                             rows = rows - OLD.rows
    WHERE company_id = OLD.company_id AND day = OLD.day AND device_id = OLD.device_id
      AND ad_id = OLD.ad_id;
    DELETE FROM playback_days
    WHERE company_id = OLD.company_id AND day = OLD.day AND device_id = OLD.device_id
      AND ad_id = OLD.ad_id AND rows <= 0;
END;
