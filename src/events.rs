//! Domain events, written in the same transaction as the change they describe. Webhook deliveries
//! and the audit trail read them.

use crate::ids::{self, Kind};
use rusqlite::Transaction;

/// Every event type a webhook may subscribe to: each area's, as the area registry declares them.
pub use crate::areas::EVENT_TYPES;

pub fn record(
    tx: &Transaction<'_>,
    company_id: &str,
    event_type: &str,
    resource_type: &str,
    resource_id: &str,
    payload: &serde_json::Value,
) -> rusqlite::Result<()> {
    record_for(
        tx,
        Some(company_id),
        event_type,
        resource_type,
        resource_id,
        payload,
    )
}

/// Records an event that may belong to no company (`company_id` NULL): an account-level key's
/// `api_key.expired`, an MCP confirmation's expiry. No company's webhook delivers those.
pub fn record_for(
    tx: &Transaction<'_>,
    company_id: Option<&str>,
    event_type: &str,
    resource_type: &str,
    resource_id: &str,
    payload: &serde_json::Value,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO events (id, company_id, type, resource_type, resource_id, payload, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(rusqlite::params![
        ids::new_id(Kind::Event),
        company_id,
        event_type,
        resource_type,
        resource_id,
        payload.to_string(),
        crate::time::now()
    ])?;
    Ok(())
}
