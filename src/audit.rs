//! The audit log: every write and every failure, never with a secret in it. This module writes
//! it; `routes::admin::audit` reads it for `GET /audit-log`.
//!
//! Each entry belongs to an account (the actor's; for a failed authentication, the account of the
//! presented key when its id exists, else none: the operator's, shown to no account admin) and to a
//! company when the actor is company-scoped. Successful writes are one row each. Failures are
//! aggregated: one row per minute, method, route, status, outcome, actor and account, with a
//! `count`, so a flood of bad credentials grows one counter instead of the database.

use crate::db::{Scoped, WriteIntent};
use rusqlite::OptionalExtension;

/// Seconds per aggregation window of failures.
pub const FAILURE_WINDOW_SECS: i64 = 60;

pub struct Entry<'a> {
    pub request_id: &'a str,
    pub actor: Option<&'a str>,
    pub client_id: Option<&'a str>,
    /// The account the entry belongs to; `None`: the operator's.
    pub account_id: Option<&'a str>,
    /// The actor's company scope, if any.
    pub company_id: Option<&'a str>,
    pub method: &'a str,
    /// The route pattern (`/devices/{id}`), not the raw path, so no pasted secret lands here.
    pub route: &'a str,
    pub status: u16,
    pub outcome: &'a str,
}

/// Best effort: the audit write never turns a served request into an error, but a failure is logged.
pub fn record(db: Scoped<'_>, intent: &WriteIntent, e: &Entry<'_>) {
    let result = db.write(intent, |tx| write(tx, e));
    if let Err(err) = result {
        tracing::warn!(request_id = e.request_id, error = %err, "audit write failed");
    }
}

/// Records a failed authentication. `presented_key` is the key id parsed from the presented raw key
/// (never the secret); the entry is the key's account's only when a key with that id exists.
#[allow(clippy::too_many_arguments)]
pub fn record_unauthenticated(
    db: Scoped<'_>,
    intent: &WriteIntent,
    presented_key: Option<&str>,
    request_id: &str,
    method: &str,
    route: &str,
    status: u16,
    outcome: &str,
) {
    let result = db.write(intent, |tx| -> Result<(), crate::db::DbError> {
        let owner = match presented_key {
            None => None,
            Some(key_id) => tx
                .prepare_cached(
                    "SELECT k.client_id, c.account_id, k.company_id
                     FROM api_keys k JOIN api_clients c ON c.id = k.client_id WHERE k.id = ?1",
                )?
                .query_row([key_id], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Option<String>>(2)?,
                    ))
                })
                .optional()?,
        };
        let (actor, client, account, company) = match &owner {
            Some((client, account, company)) => (
                presented_key,
                Some(client.as_str()),
                Some(account.as_str()),
                company.as_deref(),
            ),
            None => (None, None, None, None),
        };
        write(
            tx,
            &Entry {
                request_id,
                actor,
                client_id: client,
                account_id: account,
                company_id: company,
                method,
                route,
                status,
                outcome,
            },
        )
    });
    if let Err(err) = result {
        tracing::warn!(request_id, error = %err, "audit write failed");
    }
}

fn write(tx: &crate::db::Tx, e: &Entry<'_>) -> Result<(), crate::db::DbError> {
    let now = tx.now();
    let bucket = (e.status >= 400).then_some(now.div_euclid(FAILURE_WINDOW_SECS));
    if let Some(bucket) = bucket {
        let merged = tx
            .prepare_cached(
                "UPDATE audit_log SET count = count + 1
                 WHERE bucket = ?1 AND route = ?2 AND outcome = ?3 AND method = ?4 AND status = ?5
                   AND actor IS ?6 AND client_id IS ?7 AND account_id IS ?8",
            )?
            .execute(rusqlite::params![
                bucket,
                e.route,
                e.outcome,
                e.method,
                e.status,
                e.actor,
                e.client_id,
                e.account_id
            ])?;
        if merged > 0 {
            return Ok(());
        }
    }
    tx.prepare_cached(
        "INSERT INTO audit_log (at, request_id, actor, client_id, account_id, company_id, method, route,
                                status, outcome, count, bucket)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 1, ?11)",
    )?
    .execute(rusqlite::params![
        now,
        e.request_id,
        e.actor,
        e.client_id,
        e.account_id,
        e.company_id,
        e.method,
        e.route,
        e.status,
        e.outcome,
        bucket
    ])?;
    Ok(())
}
