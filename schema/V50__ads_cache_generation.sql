-- The ads list keeps each ad's JSON rendered between requests, like the devices list (schema V33).
-- An ad's JSON reads its own row, its run through the view `ad_runs` (its promotion's switch and
-- window) and its screens (`ad_assignments`): every write to those rows gives the `ads` generation
-- a new random value in the same transaction, whichever path or process makes it. A snapshot
-- restore gives it one too.
ALTER TABLE cache_generations ADD COLUMN ads INTEGER NOT NULL DEFAULT 0;
UPDATE cache_generations SET ads = random();

CREATE TRIGGER ads_insert_bumps AFTER INSERT ON ads
BEGIN UPDATE cache_generations SET ads = random(); END;
CREATE TRIGGER ads_update_bumps AFTER UPDATE ON ads
BEGIN UPDATE cache_generations SET ads = random(); END;
CREATE TRIGGER ads_delete_bumps AFTER DELETE ON ads
BEGIN UPDATE cache_generations SET ads = random(); END;

-- A promotion shows in an ad only through `ad_runs`, which reads its switch and its window: the
-- timeline's `phase` (stamped as the clock passes a window's edge) and the rest of its columns
-- keep the ads' rows.
CREATE TRIGGER promotions_insert_bumps_ads AFTER INSERT ON promotions
BEGIN UPDATE cache_generations SET ads = random(); END;
CREATE TRIGGER promotions_update_bumps_ads AFTER UPDATE ON promotions
WHEN OLD.id IS NOT NEW.id OR OLD.active IS NOT NEW.active
  OR OLD.starts_at IS NOT NEW.starts_at OR OLD.ends_at IS NOT NEW.ends_at
BEGIN UPDATE cache_generations SET ads = random(); END;
CREATE TRIGGER promotions_delete_bumps_ads AFTER DELETE ON promotions
BEGIN UPDATE cache_generations SET ads = random(); END;

CREATE TRIGGER ad_assignments_insert_bumps_ads AFTER INSERT ON ad_assignments
BEGIN UPDATE cache_generations SET ads = random(); END;
CREATE TRIGGER ad_assignments_update_bumps_ads AFTER UPDATE ON ad_assignments
BEGIN UPDATE cache_generations SET ads = random(); END;
CREATE TRIGGER ad_assignments_delete_bumps_ads AFTER DELETE ON ad_assignments
BEGIN UPDATE cache_generations SET ads = random(); END;
