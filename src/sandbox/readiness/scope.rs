//! What one readiness report grades, derived in one place ([`Scope::of`]) for every view: the
//! key's own `GET /readiness`, an admin's `?key_id=`, the operator's `/_sandbox/readiness` and
//! `signage readiness --key`. One integration gets one verdict whoever asks.
//!
//! The unit graded is the integration, not the key that asks: a key's report grades its API
//! client, every key of that client with the same company scope (a rotation's successor inherits
//! its predecessor's, so the new key's report holds what the old key did), and the webhooks and
//! drills of that company scope (the whole account for an account-wide key). Without a key, the
//! account (or the caller's company).
//!
//! The console's own traffic is its own integration: a request made under a console session of
//! a key (signed in by a sign-in link: the console, a screen's player) is never graded with that
//! key's requests, and `console` grades those sessions alone. Only a sign-in link makes a session
//! for a key, so a bearer credential with a key id is exactly such a session. Plain data and SQL:
//! this file imports no other file of `readiness`.

use crate::sandbox::journal::store::Entry;
use rusqlite::{Connection, OptionalExtension};

/// What a report is about.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub account: String,
    /// The company whose requests, webhooks and drills are graded; `None`: the whole account.
    pub company: Option<String>,
    /// The key (or login's user) asked about, as the report names it.
    pub key: Option<String>,
    /// The API client graded, when `key` is one of its keys.
    pub client: Option<String>,
    /// The credentials whose requests are graded (the client's keys in `company`, or the user);
    /// `None`: every credential of the account or company.
    pub keys: Option<Vec<String>>,
    /// Grade the console's sessions instead of the integration.
    pub console: bool,
    /// The journal mark the report counts from.
    pub after: Option<i64>,
}

impl Scope {
    /// The scope of a report of `account`: of `key`'s integration when one is named, else of the
    /// account, narrowed to `reach` (the company of a company-scoped caller, or `--company`). A key
    /// that is not the account's grades that id alone (nothing of it is in the journal).
    pub fn of(
        db: &Connection,
        account: &str,
        reach: Option<&str>,
        key: Option<&str>,
        console: bool,
        after: Option<i64>,
    ) -> rusqlite::Result<Scope> {
        let mut scope = Scope {
            account: account.to_string(),
            company: reach.map(str::to_string),
            key: key.map(str::to_string),
            client: None,
            keys: key.map(|k| vec![k.to_string()]),
            console,
            after,
        };
        let Some(key) = key else {
            return Ok(scope);
        };
        if key.starts_with("usr_") {
            let company: Option<Option<String>> = db
                .query_row(
                    "SELECT company_id FROM users WHERE id = ?1 AND account_id = ?2",
                    [key, account],
                    |r| r.get(0),
                )
                .optional()?;
            if let Some(company) = company {
                scope.company = company;
            }
            return Ok(scope);
        }
        let found: Option<(String, Option<String>)> = db
            .query_row(
                "SELECT k.client_id, k.company_id FROM api_keys k
                 JOIN api_clients c ON c.id = k.client_id
                 WHERE k.id = ?1 AND c.account_id = ?2",
                [key, account],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let Some((client, company)) = found else {
            return Ok(scope);
        };
        let mut stmt = db.prepare(
            "SELECT id FROM api_keys WHERE client_id = ?1 AND company_id IS ?2 ORDER BY id",
        )?;
        let keys = stmt
            .query_map(rusqlite::params![client, company], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        scope.company = company;
        scope.client = Some(client);
        scope.keys = Some(keys);
        Ok(scope)
    }

    /// Whether `id` is one of the credentials graded.
    pub fn covers_key(&self, id: &str) -> bool {
        self.keys
            .as_ref()
            .is_none_or(|keys| keys.iter().any(|k| k == id))
    }

    /// Whether an entry of credential `id` (none: a request of no credential) is graded.
    pub fn covers(&self, id: Option<&str>) -> bool {
        match id {
            Some(id) => self.covers_key(id),
            None => self.keys.is_none(),
        }
    }

    /// Whether entry `e` is one this report grades (its account and company already matched):
    /// of the console's sessions exactly when the report is the console's, and of a credential
    /// graded.
    pub fn grades(&self, e: &Entry) -> bool {
        console_session(e) == self.console && self.covers(e.key_id.as_deref())
    }
}

/// A request made under a console session of a key: a bearer credential that acts as a key,
/// which only a sign-in link makes (the console's, a screen player's).
pub fn console_session(e: &Entry) -> bool {
    is_console_session(&e.credentials, e.key_id.as_deref())
}

/// [`console_session`] of a request that presented `credentials` as `key_id`.
pub fn is_console_session(credentials: &str, key_id: Option<&str>) -> bool {
    credentials == "bearer" && key_id.is_some_and(|k| k.starts_with("key_"))
}
