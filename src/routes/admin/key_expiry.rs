//! API keys expiring as time passes ([`crate::timeline::Source`]): `api_key.expired` once per key,
//! when its `expires_at` passes, whether that is the expiry it was created with or the end of its
//! rotation grace period (`payload.reason`: `expires_at` or `rotation_grace_ended`). A revoked key
//! does not expire (it is already unusable); a key created already expired records nothing.
//!
//! Keys belong to an account, not to a company: the event is stored with the key's `companyScope`
//! as its company when it has one, and with no company (`company_id` NULL) otherwise. Authentication
//! itself reads `expires_at` against the clock, so a key stops working at that very instant; the
//! stored `expiry_reported_at` only makes the event fire once.

use crate::db::DbError;
use crate::db::WriteIntent;
use crate::timeline::{Env, Report, Source};
use serde_json::json;

pub struct KeyExpiry;

/// A key falling due: id, company, client, name, expires_at, replaced_by.
type DueKey = (String, Option<String>, String, String, i64, Option<String>);

pub const EXPIRED: &str = "api_key.expired";

impl Source for KeyExpiry {
    fn name(&self) -> &'static str {
        "api_key_expiry"
    }

    fn settle(&self, env: &Env<'_>, at: i64) -> Result<(), DbError> {
        env.db.write(&WriteIntent::sandbox(), |tx| {
            tx.execute(
                "UPDATE api_keys SET expiry_reported_at = expires_at
                 WHERE expiry_reported_at IS NULL AND expires_at <= ?1",
                [at],
            )?;
            Ok(())
        })
    }

    fn next_due(&self, env: &Env<'_>, until: i64) -> Result<Option<i64>, DbError> {
        let conn = env.db.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT min(expires_at) FROM api_keys
             WHERE expiry_reported_at IS NULL AND revoked_at IS NULL AND expires_at IS NOT NULL
               AND expires_at <= ?1",
        )?;
        Ok(stmt.query_row([until], |r| r.get(0))?)
    }

    fn run_due(&self, env: &Env<'_>, at: i64, report: &mut Report) -> Result<(), DbError> {
        env.db.write(&WriteIntent::sandbox(), |tx| {
            let due: Vec<DueKey> = tx
                .prepare_cached(
                    "SELECT id, company_id, client_id, name, expires_at, replaced_by FROM api_keys
                     WHERE expiry_reported_at IS NULL AND revoked_at IS NULL
                       AND expires_at IS NOT NULL AND expires_at <= ?1
                     ORDER BY expires_at, id",
                )?
                .query_map([at], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
                })?
                .collect::<Result<_, _>>()?;
            for (id, company, client, name, expires_at, replaced_by) in &due {
                tx.prepare_cached("UPDATE api_keys SET expiry_reported_at = ?2 WHERE id = ?1")?
                    .execute(rusqlite::params![id, at])?;
                let payload = json!({
                    "id": id,
                    "object": "api_key",
                    "name": name,
                    "client_id": client,
                    "companyScope": company,
                    "status": "expired",
                    "expires_at": crate::time::rfc3339(*expires_at),
                    "replaced_by": replaced_by,
                    "reason": if replaced_by.is_some() { "rotation_grace_ended" } else { "expires_at" },
                });
                crate::events::record(tx, company.as_deref(), EXPIRED, "api_key", id, &payload)?;
            }
            report.count(EXPIRED, due.len() as u64);
            Ok(())
        })
    }
}
