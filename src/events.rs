//! Domain events, written in the same transaction as the change they describe. Webhook deliveries
//! and the audit trail read them.

use crate::ids::{self, Kind};
use rusqlite::Transaction;

/// Every event type a webhook may subscribe to.
pub const EVENT_TYPES: &[&str] = &[
    "device.created",
    "device.updated",
    "device.deleted",
    "device.heartbeat",
    "ad.created",
    "ad.updated",
    "ad.deleted",
    "ad.assigned",
    "ad.unassigned",
    "promotion.created",
    "promotion.updated",
    "promotion.activated",
    "promotion.deactivated",
    "media.created",
    "media.deleted",
    "tokens.purchased",
    "tokens.spent",
    "branding.updated",
    "webhook.created",
    "webhook.updated",
    "webhook.deleted",
];

pub fn record(
    tx: &Transaction<'_>,
    company_id: &str,
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
