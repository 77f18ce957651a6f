-- Issue 10, items 4 and 5: the simulated fleet and proof-of-play.

-- Each device's behaviour profile in the simulated fleet. The fixtures' devices get one derived
-- from their rows when the fixtures load (db::fixtures); a device without a row is not simulated.
-- `next_due_at` is the next profile-driven transition (a flaky screen dropping out or coming
-- back, a failing screen's playback error); steady, offline and never-seen screens have none.
CREATE TABLE device_simulations (
    device_id    TEXT PRIMARY KEY REFERENCES devices(id) ON DELETE CASCADE,
    profile      TEXT NOT NULL CHECK (profile IN ('steady', 'flaky', 'offline', 'never_seen', 'failing_playback')),
    since_at     INTEGER NOT NULL,
    next_due_at  INTEGER
) WITHOUT ROWID;
CREATE INDEX device_simulations_due ON device_simulations(next_due_at) WHERE next_due_at IS NOT NULL;
CREATE INDEX device_simulations_by_profile ON device_simulations(profile, device_id);

-- The grid beat (a multiple of 60 s) up to which the fleet's heartbeats and plays are written.
CREATE TABLE fleet_simulation (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    beat_at  INTEGER NOT NULL
);

-- Proof-of-play. A player's report (`source = 'player'`) is one play; the simulator writes one row
-- per ad, screen and clock hour (`source = 'simulator'`): `plays` plays that started in that hour,
-- `duration_seconds` seconds played in it, `started_at` the hour's start.
CREATE TABLE playbacks (
    id                TEXT PRIMARY KEY,
    company_id        TEXT NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
    device_id         TEXT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    ad_id             TEXT NOT NULL REFERENCES ads(id) ON DELETE CASCADE,
    source            TEXT NOT NULL CHECK (source IN ('player', 'simulator')),
    started_at        INTEGER NOT NULL,
    duration_seconds  INTEGER NOT NULL CHECK (duration_seconds >= 0),
    plays             INTEGER NOT NULL CHECK (plays >= 0),
    created_at        INTEGER NOT NULL
);
CREATE INDEX playbacks_by_device ON playbacks(device_id, id);
CREATE INDEX playbacks_by_device_ad ON playbacks(device_id, ad_id, id);
CREATE INDEX playbacks_by_ad ON playbacks(ad_id);
CREATE INDEX playbacks_by_company_started ON playbacks(company_id, started_at);
CREATE UNIQUE INDEX playbacks_simulated_slot ON playbacks(device_id, ad_id, started_at)
    WHERE source = 'simulator';
