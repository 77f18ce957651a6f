//! Domain events, written in the same transaction as the change they describe. Webhook deliveries
//! and the audit trail read them.

use crate::ids::{self, Kind};
use rusqlite::Transaction;

/// Every event type a webhook may subscribe to: each area's, as the area registry declares them.
pub use crate::areas::EVENT_TYPES;

/// Who is acting on this thread: the pipeline sets it for each request ([`recorded_as`]), so that
/// every event a handler records names its actor and door without passing them down.
#[derive(Clone, Debug)]
pub struct Origin {
    /// The key or user id (`key_…`, `usr_…`); never a secret.
    pub actor: Option<String>,
    /// `rest`, `mcp` or `sandbox`.
    pub via: &'static str,
}

thread_local! {
    static ORIGIN: std::cell::RefCell<Option<Origin>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with `origin` as the origin of the events it records (restored afterwards, also on
/// panic; nested calls, such as an MCP tool call inside the MCP request, see the inner origin).
pub fn recorded_as<R>(origin: Origin, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Origin>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            ORIGIN.with(|o| *o.borrow_mut() = previous);
        }
    }
    let previous = ORIGIN.with(|o| o.borrow_mut().replace(origin));
    let _restore = Restore(previous);
    f()
}

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
        "INSERT INTO events (id, company_id, type, resource_type, resource_id, payload, created_at, actor, via)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(rusqlite::params![
        ids::new_id(Kind::Event),
        company_id,
        event_type,
        resource_type,
        resource_id,
        payload.to_string(),
        crate::time::now(),
        ORIGIN.with(|o| o.borrow().as_ref().and_then(|o| o.actor.clone())),
        // Outside any request: the sandbox itself (the clock's transitions, the simulated fleet).
        ORIGIN.with(|o| o.borrow().as_ref().map_or("sandbox", |o| o.via)),
    ])?;
    Ok(())
}
