-- Issue 48: the account's pages of ads, promotions and webhooks cost the same whether the account
-- has 2 companies or 100, as its screens' do (V41): each table names its rows' account, the
-- company's, written by a trigger on insert, and a list of the whole account walks
-- `(account_id, id)` once. Not media: its content stays its last column (V31).

ALTER TABLE ads ADD COLUMN account_id TEXT REFERENCES accounts(id);
UPDATE ads SET account_id = (SELECT account_id FROM companies WHERE id = ads.company_id);
CREATE INDEX ads_by_account ON ads(account_id, id);
-- The `status` filter of an account's ads, in id order (as `ads_by_company_status` per company).
CREATE INDEX ads_by_account_status ON ads(account_id, status, id);
CREATE TRIGGER ads_account_on_insert AFTER INSERT ON ads
WHEN NEW.account_id IS NOT (SELECT account_id FROM companies WHERE id = NEW.company_id)
BEGIN
    UPDATE ads SET account_id = (SELECT account_id FROM companies WHERE id = NEW.company_id)
    WHERE id = NEW.id;
END;
CREATE TRIGGER ads_account_on_move AFTER UPDATE OF company_id ON ads
WHEN NEW.account_id IS NOT (SELECT account_id FROM companies WHERE id = NEW.company_id)
BEGIN
    UPDATE ads SET account_id = (SELECT account_id FROM companies WHERE id = NEW.company_id)
    WHERE id = NEW.id;
END;

ALTER TABLE promotions ADD COLUMN account_id TEXT REFERENCES accounts(id);
UPDATE promotions SET account_id = (SELECT account_id FROM companies WHERE id = promotions.company_id);
CREATE INDEX promotions_by_account ON promotions(account_id, id);
CREATE TRIGGER promotions_account_on_insert AFTER INSERT ON promotions
WHEN NEW.account_id IS NOT (SELECT account_id FROM companies WHERE id = NEW.company_id)
BEGIN
    UPDATE promotions SET account_id = (SELECT account_id FROM companies WHERE id = NEW.company_id)
    WHERE id = NEW.id;
END;
CREATE TRIGGER promotions_account_on_move AFTER UPDATE OF company_id ON promotions
WHEN NEW.account_id IS NOT (SELECT account_id FROM companies WHERE id = NEW.company_id)
BEGIN
    UPDATE promotions SET account_id = (SELECT account_id FROM companies WHERE id = NEW.company_id)
    WHERE id = NEW.id;
END;

ALTER TABLE webhooks ADD COLUMN account_id TEXT REFERENCES accounts(id);
UPDATE webhooks SET account_id = (SELECT account_id FROM companies WHERE id = webhooks.company_id);
CREATE INDEX webhooks_by_account ON webhooks(account_id, id);
CREATE TRIGGER webhooks_account_on_insert AFTER INSERT ON webhooks
WHEN NEW.account_id IS NOT (SELECT account_id FROM companies WHERE id = NEW.company_id)
BEGIN
    UPDATE webhooks SET account_id = (SELECT account_id FROM companies WHERE id = NEW.company_id)
    WHERE id = NEW.id;
END;
CREATE TRIGGER webhooks_account_on_move AFTER UPDATE OF company_id ON webhooks
WHEN NEW.account_id IS NOT (SELECT account_id FROM companies WHERE id = NEW.company_id)
BEGIN
    UPDATE webhooks SET account_id = (SELECT account_id FROM companies WHERE id = NEW.company_id)
    WHERE id = NEW.id;
END;
