-- Issue 49: a screen's version (its ETag) moves when what it plays changes, not only when an ad is
-- assigned to it or taken off it (schema V34). The browser player reads its screen's ETag every
-- second and its playlist when the ETag moves: an ad switched on or paused, edited, or moved in
-- time, and a promotion switched on or off or moved in time, reach the screens that carry them
-- within that second instead of at the player's slow refresh.
CREATE TRIGGER ad_shown_changed AFTER UPDATE OF status, headline, media_id, promotion_id,
    duration_seconds, starts_at, ends_at ON ads
WHEN OLD.status IS NOT NEW.status OR OLD.headline IS NOT NEW.headline
  OR OLD.media_id IS NOT NEW.media_id OR OLD.promotion_id IS NOT NEW.promotion_id
  OR OLD.duration_seconds IS NOT NEW.duration_seconds OR OLD.starts_at IS NOT NEW.starts_at
  OR OLD.ends_at IS NOT NEW.ends_at
BEGIN
    UPDATE devices SET version = version + 1
    WHERE id IN (SELECT device_id FROM ad_assignments WHERE ad_id = NEW.id);
END;
CREATE TRIGGER promotion_run_moves_screens AFTER UPDATE OF active, starts_at, ends_at ON promotions
WHEN OLD.active IS NOT NEW.active OR OLD.starts_at IS NOT NEW.starts_at OR OLD.ends_at IS NOT NEW.ends_at
BEGIN
    UPDATE devices SET version = version + 1
    WHERE id IN (SELECT x.device_id FROM ads a JOIN ad_assignments x ON x.ad_id = a.id
                 WHERE a.promotion_id = NEW.id);
END;
