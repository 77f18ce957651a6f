//! Domain events, written in the same transaction as the change they describe, and the webhook
//! outbox written with them: one delivery row per event and enabled webhook of the company that
//! subscribes to its type, so a delivery is never lost across a crash and never made for a change
//! that rolled back. The sender ([`crate::webhooks`]) is woken once the transaction commits.

use crate::ids::{self, Kind};
use rusqlite::Transaction;

/// Every event type a webhook may subscribe to: each area's, as the area registry declares them.
pub use crate::areas::EVENT_TYPES;

/// Records an event and queues its deliveries. Returns the event id.
pub fn record(
    tx: &Transaction<'_>,
    company_id: &str,
    event_type: &str,
    resource_type: &str,
    resource_id: &str,
    payload: &serde_json::Value,
) -> rusqlite::Result<String> {
    let id = insert_event(
        tx,
        company_id,
        event_type,
        resource_type,
        resource_id,
        payload,
    )?;
    let hooks: Vec<String> = {
        let mut stmt = tx.prepare_cached(
            "SELECT w.id FROM webhooks w WHERE w.company_id = ?1 AND w.enabled = 1
             AND EXISTS (SELECT 1 FROM json_each(w.event_types) t WHERE t.value = ?2)",
        )?;
        let rows = stmt.query_map([company_id, event_type], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for hook in &hooks {
        queue(tx, company_id, hook, &id, event_type, None)?;
    }
    if !hooks.is_empty() {
        crate::db::wake_after_commit();
    }
    Ok(id)
}

/// Records an event meant for one webhook only (`webhook.test`), whatever it subscribes to, with
/// its delivery already claimed by the caller, who sends it at once. Returns the delivery id.
pub fn record_for_webhook(
    tx: &Transaction<'_>,
    company_id: &str,
    webhook_id: &str,
    event_type: &str,
    payload: &serde_json::Value,
) -> rusqlite::Result<String> {
    let id = insert_event(tx, company_id, event_type, "webhook", webhook_id, payload)?;
    queue(
        tx,
        company_id,
        webhook_id,
        &id,
        event_type,
        Some(crate::time::now_millis()),
    )
}

fn insert_event(
    tx: &Transaction<'_>,
    company_id: &str,
    event_type: &str,
    resource_type: &str,
    resource_id: &str,
    payload: &serde_json::Value,
) -> rusqlite::Result<String> {
    let id = ids::new_id(Kind::Event);
    tx.prepare_cached(
        "INSERT INTO events (id, company_id, type, resource_type, resource_id, payload, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(rusqlite::params![
        id,
        company_id,
        event_type,
        resource_type,
        resource_id,
        payload.to_string(),
        crate::time::now()
    ])?;
    Ok(id)
}

/// One outbox row: due now (the first attempt is immediate), or claimed already.
fn queue(
    tx: &Transaction<'_>,
    company_id: &str,
    webhook_id: &str,
    event_id: &str,
    event_type: &str,
    claimed_at: Option<i64>,
) -> rusqlite::Result<String> {
    let id = ids::new_id(Kind::WebhookDelivery);
    let now = crate::time::now();
    tx.prepare_cached(
        "INSERT INTO webhook_deliveries (id, company_id, webhook_id, event_id, event_type, status,
             attempts, next_attempt_at, claimed_at, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, 'pending', 0, ?6, ?7, ?6, ?6)",
    )?
    .execute(rusqlite::params![
        id, company_id, webhook_id, event_id, event_type, now, claimed_at
    ])?;
    Ok(id)
}
