-- A version (ETag) covers everything its representation shows (issue 30).
--
-- An ad shows the screens it is assigned to (`device_ids`, `device_count`), a device how many ads
-- it carries (`assigned_ad_count`), a promotion how many QR codes it has (`qr_code_count`). These
-- live in other tables, so every row added to or removed from them moves the version of what shows
-- them, whichever path made the change (one assignment, a batch, a deleted device or ad, an MCP
-- confirmation, the sandbox): an `If-Match` or an MCP preview taken before it no longer matches.
CREATE TRIGGER ad_assignments_added AFTER INSERT ON ad_assignments BEGIN
    UPDATE ads SET version = version + 1 WHERE id = NEW.ad_id;
    UPDATE devices SET version = version + 1 WHERE id = NEW.device_id;
END;
CREATE TRIGGER ad_assignments_removed AFTER DELETE ON ad_assignments BEGIN
    UPDATE ads SET version = version + 1 WHERE id = OLD.ad_id;
    UPDATE devices SET version = version + 1 WHERE id = OLD.device_id;
END;
CREATE TRIGGER qr_codes_added AFTER INSERT ON qr_codes BEGIN
    UPDATE promotions SET version = version + 1 WHERE id = NEW.promotion_id;
END;
CREATE TRIGGER qr_codes_removed AFTER DELETE ON qr_codes BEGIN
    UPDATE promotions SET version = version + 1 WHERE id = OLD.promotion_id;
END;
-- An ad shows whether it is on air (`on_air`), which needs its promotion, when it has one, to be
-- switched on and within its window: switching the promotion or moving its window moves the
-- version of every ad linked to it. (A world built at a fixed instant and shifted to now keeps the
-- versions it states: `db::world::shift`.)
CREATE TRIGGER promotion_run_changed AFTER UPDATE OF active, starts_at, ends_at ON promotions
WHEN OLD.active IS NOT NEW.active OR OLD.starts_at IS NOT NEW.starts_at OR OLD.ends_at IS NOT NEW.ends_at
BEGIN
    UPDATE ads SET version = version + 1 WHERE promotion_id = NEW.id;
END;

-- What a prepared change was bound to, and what the person is asked.
ALTER TABLE mcp_pending_changes ADD COLUMN shown TEXT;          -- SHA-256 of what the preview showed
ALTER TABLE mcp_pending_changes ADD COLUMN set_paths TEXT;      -- JSON: paths only the confirmation sets
ALTER TABLE mcp_pending_changes ADD COLUMN summary TEXT;        -- the change in words (as shown, redacted)
ALTER TABLE mcp_pending_changes ADD COLUMN cost TEXT;           -- JSON: the cost shown, repeated at confirmation
ALTER TABLE mcp_pending_changes ADD COLUMN balance_company TEXT; -- the company whose balance was shown
ALTER TABLE mcp_pending_changes ADD COLUMN balance INTEGER;     -- that balance, as previewed
-- What one credential holds in changes waiting for confirmation is bounded (an inline upload
-- carries its file): summed over its live rows.
CREATE INDEX mcp_pending_changes_by_actor ON mcp_pending_changes(actor, expires_at);
