//! Domain events, written in the same transaction as the change they describe, and the webhook
//! outbox written with them: one delivery row per event and enabled webhook of the company that
//! subscribes to its type, so a delivery is never lost across a crash and never made for a change
//! that rolled back. The sender ([`crate::webhooks`]) is woken once the transaction commits.
//!
//! [`record`] is the one way to record an event, for every area and layer: a typed resource, a
//! payload builder's `data` or a JSON value alike, of a company or of none. The one exception is
//! [`record_for_webhook`] (see there).

use crate::db::Tx;
use crate::ids::Kind;
use serde::Serialize;

/// Every event type a webhook may subscribe to: each area's, as the area registry declares them.
pub use crate::areas::EVENT_TYPES;

/// Who acts, as the write handle carries it ([`crate::db::Tx::origin`]): every event a write
/// records names its actor and door.
pub use crate::db::Origin;

/// Whose event it is: a company's (a `&str` or `&String`), whose subscribed webhooks get a
/// delivery, or, as `Option<&str>`, possibly no company's (`None`: an account-level key's
/// `api_key.expired`, an MCP confirmation's expiry), which no webhook delivers.
pub trait Owner {
    fn company(&self) -> Option<&str>;
}

impl Owner for str {
    fn company(&self) -> Option<&str> {
        Some(self)
    }
}

impl Owner for String {
    fn company(&self) -> Option<&str> {
        Some(self)
    }
}

impl Owner for Option<&str> {
    fn company(&self) -> Option<&str> {
        *self
    }
}

impl<T: Owner + ?Sized> Owner for &T {
    fn company(&self) -> Option<&str> {
        (**self).company()
    }
}

/// Records an event with `payload` as its `data` (a typed resource is written as it serialises:
/// its field order is the order of the members) and queues its deliveries, in the write's
/// transaction; its actor and door are the write handle's. Returns the event id.
pub fn record(
    tx: &Tx,
    company: impl Owner,
    event_type: &str,
    resource_type: &str,
    resource_id: &str,
    payload: &(impl Serialize + ?Sized),
) -> rusqlite::Result<String> {
    let Some(company_id) = company.company() else {
        return insert_event(tx, None, event_type, resource_type, resource_id, payload);
    };
    let id = insert_event(
        tx,
        Some(company_id),
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
        tx.wake_after_commit();
    }
    Ok(id)
}

/// Records an event meant for one webhook only (`webhook.test`), whatever it subscribes to, with
/// its delivery already claimed by the caller, who sends it at once. Returns the delivery id.
///
/// The one exception to [`record`], for one event type: a test delivery is made to the webhook
/// asked for (not to the company's subscribers, which [`record`] would queue for the worker) and
/// answers with its attempt, so its delivery row must be claimed in the same write.
pub fn record_for_webhook(
    tx: &Tx,
    company_id: &str,
    webhook_id: &str,
    event_type: &str,
    payload: &serde_json::Value,
) -> rusqlite::Result<String> {
    let id = insert_event(
        tx,
        Some(company_id),
        event_type,
        "webhook",
        webhook_id,
        payload,
    )?;
    queue(
        tx,
        company_id,
        webhook_id,
        &id,
        event_type,
        Some(tx.now_millis()),
    )
}

fn insert_event(
    tx: &Tx,
    company_id: Option<&str>,
    event_type: &str,
    resource_type: &str,
    resource_id: &str,
    payload: &(impl Serialize + ?Sized),
) -> rusqlite::Result<String> {
    let id = tx.new_id(Kind::Event);
    // The same compact text as `Display`, written straight into one buffer rather than through
    // the formatter's adapter (half the instructions for an event's data).
    let payload = serde_json::to_string(payload)
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    // Whether the events page may copy the data as it is (V51): asked once here, since an event
    // never changes, instead of on every read of it. Most payloads are; one with a float, a key
    // twice (a flattened struct) or more than 32 members in an object is not.
    let canonical = crate::json_write::is_canonical(&payload);
    tx.prepare_cached(
        // The account named here (V46's trigger would otherwise fill it by an UPDATE per event).
        "INSERT INTO events (id, company_id, type, resource_type, resource_id, payload, created_at, actor, via,
                             account_id, payload_canonical)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, (SELECT account_id FROM companies WHERE id = ?2),
                 ?10)",
    )?
    .execute(rusqlite::params![
        id,
        company_id,
        event_type,
        resource_type,
        resource_id,
        payload,
        tx.now(),
        tx.origin().actor,
        tx.origin().via,
        canonical,
    ])?;
    Ok(id)
}

/// One outbox row: due now (the first attempt is immediate), or claimed already.
fn queue(
    tx: &Tx,
    company_id: &str,
    webhook_id: &str,
    event_id: &str,
    event_type: &str,
    claimed_at: Option<i64>,
) -> rusqlite::Result<String> {
    let id = tx.new_id(Kind::WebhookDelivery);
    let now = tx.now();
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
