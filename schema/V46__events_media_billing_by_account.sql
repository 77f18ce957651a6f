-- Issue 48: the account's pages of events, media, invoices and charges cost the same whether the
-- account has 2 companies or 100, as its screens', ads', promotions' and webhooks' do (V41, V42):
-- each table names its rows' account, the company's, and a list of the whole account walks
-- `(account_id, id)` once. The writers of events and media name it themselves (an event is
-- written with most requests; a media row holds its bytes, which a trigger's UPDATE would copy);
-- the triggers below only fill it for a writer that does not (the fixtures, the ledger).

-- Media: the column goes before the content, which stays last (V31: a trailing zeroblob is never
-- materialised, and reading any other column stops before it). Rebuilt column by column as V31
-- was (`ads.media_id` references `media`).
ALTER TABLE media ADD COLUMN account_id TEXT REFERENCES accounts(id);
ALTER TABLE media ADD COLUMN content_last BLOB NOT NULL DEFAULT x'';
UPDATE media SET account_id = (SELECT account_id FROM companies WHERE id = media.company_id),
                 content_last = content;
ALTER TABLE media DROP COLUMN content;
ALTER TABLE media RENAME COLUMN content_last TO content;
CREATE INDEX media_by_account ON media(account_id, id);
CREATE TRIGGER media_account_on_insert AFTER INSERT ON media
WHEN NEW.account_id IS NOT (SELECT account_id FROM companies WHERE id = NEW.company_id)
BEGIN
    UPDATE media SET account_id = (SELECT account_id FROM companies WHERE id = NEW.company_id)
    WHERE id = NEW.id;
END;
CREATE TRIGGER media_account_on_move AFTER UPDATE OF company_id ON media
WHEN NEW.account_id IS NOT (SELECT account_id FROM companies WHERE id = NEW.company_id)
BEGIN
    UPDATE media SET account_id = (SELECT account_id FROM companies WHERE id = NEW.company_id)
    WHERE id = NEW.id;
END;

-- Events: an event of no company (none is listed) names no account.
ALTER TABLE events ADD COLUMN account_id TEXT REFERENCES accounts(id);
UPDATE events SET account_id = (SELECT account_id FROM companies WHERE id = events.company_id);
CREATE INDEX events_by_account ON events(account_id, id);
CREATE TRIGGER events_account_on_insert AFTER INSERT ON events
WHEN NEW.account_id IS NOT (SELECT account_id FROM companies WHERE id = NEW.company_id)
BEGIN
    UPDATE events SET account_id = (SELECT account_id FROM companies WHERE id = NEW.company_id)
    WHERE id = NEW.id;
END;
CREATE TRIGGER events_account_on_move AFTER UPDATE OF company_id ON events
WHEN NEW.account_id IS NOT (SELECT account_id FROM companies WHERE id = NEW.company_id)
BEGIN
    UPDATE events SET account_id = (SELECT account_id FROM companies WHERE id = NEW.company_id)
    WHERE id = NEW.id;
END;

ALTER TABLE invoices ADD COLUMN account_id TEXT REFERENCES accounts(id);
UPDATE invoices SET account_id = (SELECT account_id FROM companies WHERE id = invoices.company_id);
CREATE INDEX invoices_by_account ON invoices(account_id, id);
CREATE TRIGGER invoices_account_on_insert AFTER INSERT ON invoices
WHEN NEW.account_id IS NOT (SELECT account_id FROM companies WHERE id = NEW.company_id)
BEGIN
    UPDATE invoices SET account_id = (SELECT account_id FROM companies WHERE id = NEW.company_id)
    WHERE id = NEW.id;
END;
CREATE TRIGGER invoices_account_on_move AFTER UPDATE OF company_id ON invoices
WHEN NEW.account_id IS NOT (SELECT account_id FROM companies WHERE id = NEW.company_id)
BEGIN
    UPDATE invoices SET account_id = (SELECT account_id FROM companies WHERE id = NEW.company_id)
    WHERE id = NEW.id;
END;

ALTER TABLE charges ADD COLUMN account_id TEXT REFERENCES accounts(id);
UPDATE charges SET account_id = (SELECT account_id FROM companies WHERE id = charges.company_id);
CREATE INDEX charges_by_account ON charges(account_id, id);
CREATE TRIGGER charges_account_on_insert AFTER INSERT ON charges
WHEN NEW.account_id IS NOT (SELECT account_id FROM companies WHERE id = NEW.company_id)
BEGIN
    UPDATE charges SET account_id = (SELECT account_id FROM companies WHERE id = NEW.company_id)
    WHERE id = NEW.id;
END;
CREATE TRIGGER charges_account_on_move AFTER UPDATE OF company_id ON charges
WHEN NEW.account_id IS NOT (SELECT account_id FROM companies WHERE id = NEW.company_id)
BEGIN
    UPDATE charges SET account_id = (SELECT account_id FROM companies WHERE id = NEW.company_id)
    WHERE id = NEW.id;
END;
