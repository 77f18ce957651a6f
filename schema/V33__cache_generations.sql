-- Issue 33: what the server keeps in memory between requests (the principal behind an API key, a
-- device's rendered JSON) is checked on every request against a generation that every write to
-- the rows it was made from changes, in the same transaction as the write. Another process's write
-- (`signage keys revoke`) changes it too, so a cache can never outlive the rows it stands for.
--
-- Each bump is a fresh random value rather than `+ 1`: a snapshot restore puts an older value back
-- together with the older rows, and a counter would then meet, after a few more writes, a value a
-- cache had already seen for other rows. A random value stands for one state of the rows only.
CREATE TABLE cache_generations (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    -- api_keys (every column but last_used_at), api_clients, companies.
    credentials  INTEGER NOT NULL,
    -- devices, ad_assignments.
    devices      INTEGER NOT NULL
);
INSERT INTO cache_generations (id, credentials, devices) VALUES (1, random(), random());

CREATE TRIGGER api_keys_insert_bumps AFTER INSERT ON api_keys
BEGIN UPDATE cache_generations SET credentials = random(); END;
CREATE TRIGGER api_keys_delete_bumps AFTER DELETE ON api_keys
BEGIN UPDATE cache_generations SET credentials = random(); END;
-- Authentication stamps `last_used_at` at most once a minute per key; that alone keeps the caches.
-- Every other column is listed (a test holds this list to the table's columns).
CREATE TRIGGER api_keys_update_bumps AFTER UPDATE ON api_keys
WHEN OLD.id IS NOT NEW.id OR OLD.client_id IS NOT NEW.client_id OR OLD.name IS NOT NEW.name
  OR OLD.prefix IS NOT NEW.prefix OR OLD.last_four IS NOT NEW.last_four
  OR OLD.secret_hash IS NOT NEW.secret_hash OR OLD.scopes IS NOT NEW.scopes
  OR OLD.company_id IS NOT NEW.company_id OR OLD.created_at IS NOT NEW.created_at
  OR OLD.expires_at IS NOT NEW.expires_at OR OLD.revoked_at IS NOT NEW.revoked_at
  OR OLD.replaced_by IS NOT NEW.replaced_by OR OLD.expiry_reported_at IS NOT NEW.expiry_reported_at
BEGIN UPDATE cache_generations SET credentials = random(); END;

CREATE TRIGGER api_clients_insert_bumps AFTER INSERT ON api_clients
BEGIN UPDATE cache_generations SET credentials = random(); END;
CREATE TRIGGER api_clients_update_bumps AFTER UPDATE ON api_clients
BEGIN UPDATE cache_generations SET credentials = random(); END;
CREATE TRIGGER api_clients_delete_bumps AFTER DELETE ON api_clients
BEGIN UPDATE cache_generations SET credentials = random(); END;

CREATE TRIGGER companies_insert_bumps AFTER INSERT ON companies
BEGIN UPDATE cache_generations SET credentials = random(); END;
CREATE TRIGGER companies_update_bumps AFTER UPDATE ON companies
BEGIN UPDATE cache_generations SET credentials = random(); END;
CREATE TRIGGER companies_delete_bumps AFTER DELETE ON companies
BEGIN UPDATE cache_generations SET credentials = random(); END;

CREATE TRIGGER devices_insert_bumps AFTER INSERT ON devices
BEGIN UPDATE cache_generations SET devices = random(); END;
CREATE TRIGGER devices_update_bumps AFTER UPDATE ON devices
BEGIN UPDATE cache_generations SET devices = random(); END;
CREATE TRIGGER devices_delete_bumps AFTER DELETE ON devices
BEGIN UPDATE cache_generations SET devices = random(); END;

CREATE TRIGGER ad_assignments_insert_bumps AFTER INSERT ON ad_assignments
BEGIN UPDATE cache_generations SET devices = random(); END;
CREATE TRIGGER ad_assignments_update_bumps AFTER UPDATE ON ad_assignments
BEGIN UPDATE cache_generations SET devices = random(); END;
CREATE TRIGGER ad_assignments_delete_bumps AFTER DELETE ON ad_assignments
BEGIN UPDATE cache_generations SET devices = random(); END;
