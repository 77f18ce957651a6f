-- Issue 48: a page of an account's screens costs the same whether the account has 2 companies or
-- 100. A list of the whole account walks one index, `(account_id, id)`, instead of one range per
-- company (or a sorted `IN` list of every company).
--
-- The account is the company's (`companies.account_id`, which never changes): this column is
-- only the index's key, written by the trigger below on every insert, whoever inserts (the API,
-- the fixtures, a restored snapshot's rows carry theirs).
ALTER TABLE devices ADD COLUMN account_id TEXT REFERENCES accounts(id);
UPDATE devices SET account_id = (SELECT account_id FROM companies WHERE id = devices.company_id);
CREATE INDEX devices_by_account ON devices(account_id, id);

CREATE TRIGGER devices_account_on_insert AFTER INSERT ON devices
WHEN NEW.account_id IS NOT (SELECT account_id FROM companies WHERE id = NEW.company_id)
BEGIN
    UPDATE devices SET account_id = (SELECT account_id FROM companies WHERE id = NEW.company_id)
    WHERE id = NEW.id;
END;

-- A screen moved to another company (no route does it; the operator's SQL might) takes that
-- company's account with it.
CREATE TRIGGER devices_account_on_move AFTER UPDATE OF company_id ON devices
WHEN NEW.account_id IS NOT (SELECT account_id FROM companies WHERE id = NEW.company_id)
BEGIN
    UPDATE devices SET account_id = (SELECT account_id FROM companies WHERE id = NEW.company_id)
    WHERE id = NEW.id;
END;
