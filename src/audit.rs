//! The audit log: every write and every authentication failure, never with a secret in it.

use crate::db::Db;

pub struct Entry<'a> {
    pub request_id: &'a str,
    pub actor: Option<&'a str>,
    pub client_id: Option<&'a str>,
    pub method: &'a str,
    /// The route pattern (`/devices/{id}`), not the raw path, so no pasted secret lands here.
    pub route: &'a str,
    pub status: u16,
    pub outcome: &'a str,
}

/// Best effort: the audit write never turns a served request into an error, but a failure is logged.
pub fn record(db: &Db, e: &Entry<'_>) {
    let result = db.write(|tx| -> Result<(), crate::db::DbError> {
        tx.prepare_cached(
            "INSERT INTO audit_log (at, request_id, actor, client_id, method, route, status, outcome)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(rusqlite::params![
            crate::time::now(),
            e.request_id,
            e.actor,
            e.client_id,
            e.method,
            e.route,
            e.status,
            e.outcome
        ])?;
        Ok(())
    });
    if let Err(err) = result {
        tracing::warn!(request_id = e.request_id, error = %err, "audit write failed");
    }
}
