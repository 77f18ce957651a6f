-- Issue 8: credentials stay within their creator's reach, the idempotency cache never keeps a secret,
-- and the audit log is attributed to an account and aggregates failures.

-- An API client may be bound to one company: a company-scoped admin creates (and sees) only clients
-- of its company, and every key of a bound client carries that company as its companyScope.
ALTER TABLE api_clients ADD COLUMN company_id TEXT REFERENCES companies(id) ON DELETE CASCADE;
CREATE INDEX api_clients_by_company ON api_clients(company_id, id);
CREATE INDEX api_keys_by_company ON api_keys(company_id, id);

-- A response that carried a secret (`Cache-Control: no-store`: a new API key, a webhook secret) is
-- never stored. Its record keeps the status and the id of what was created, so a replay can say so.
ALTER TABLE idempotency_keys ADD COLUMN withheld_id TEXT;

-- Whose entry this is: the actor's account and company scope, or, for a failed authentication, those
-- of the presented key when its id exists. NULL account: the operator's (no account admin sees it).
ALTER TABLE audit_log ADD COLUMN account_id TEXT;
ALTER TABLE audit_log ADD COLUMN company_id TEXT;
-- Failures are aggregated: one row per minute (`bucket` = at / 60), method, route, status, outcome,
-- actor and account, whose `count` grows. Successful writes keep one row each (bucket NULL).
ALTER TABLE audit_log ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
ALTER TABLE audit_log ADD COLUMN bucket INTEGER;

UPDATE audit_log SET
    account_id = coalesce(
        (SELECT c.account_id FROM api_keys k JOIN api_clients c ON c.id = k.client_id WHERE k.id = audit_log.actor),
        (SELECT u.account_id FROM users u WHERE u.id = audit_log.actor)),
    company_id = coalesce(
        (SELECT k.company_id FROM api_keys k WHERE k.id = audit_log.actor),
        (SELECT u.company_id FROM users u WHERE u.id = audit_log.actor))
WHERE actor IS NOT NULL;

CREATE INDEX audit_log_by_account ON audit_log(account_id, id);
CREATE INDEX audit_log_failures ON audit_log(bucket, route, outcome) WHERE bucket IS NOT NULL;
