//! Draining the outbox: send every delivery due at an instant and wait until each attempt's
//! outcome is recorded, those the worker has on the wire included. What a test calls (through
//! `POST /_sandbox/webhooks/drain`, or an advance with `"drain": true` at each of its stops)
//! instead of sleeping until its receiver's answer shows in the delivery log.

use super::{attempt_blocking, store, Outbox};
use crate::config::Settings;
use crate::db::{DbError, Scoped, WriteIntent};
use std::time::{Duration, Instant};

/// What a drain did.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct Drained {
    /// Attempts the drain sent itself (and recorded).
    pub sent: u64,
    /// Of those, the ones the receiver took (2xx).
    pub succeeded: u64,
    /// Attempts the worker had on the wire, waited for until recorded.
    pub awaited: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum DrainError {
    #[error(transparent)]
    Db(#[from] DbError),
    /// The deadline passed with attempts still unrecorded.
    #[error("{unrecorded} due deliveries still without a recorded outcome")]
    TimedOut { unrecorded: u64, drained: Drained },
}

/// Sends every pending delivery due at or before `at` that nobody has claimed, waits for those
/// claimed by the worker, and repeats (an outcome can make another delivery due: `webhook.disabled`)
/// until none due at `at` is pending without a recorded outcome of an attempt made since, or
/// `deadline` passes (checked between attempts; one attempt is bounded by
/// `webhooks.timeout_millis`). Runs on a blocking thread; the time is `db`'s clock.
pub fn drain(
    outbox: &Outbox,
    db: Scoped<'_>,
    settings: &Settings,
    at: i64,
    deadline: Instant,
) -> Result<Drained, DrainError> {
    // Outside any write transaction: the drain sends, and waits for the worker's own writes.
    db.committed(|| drain_committed(outbox, db, settings, at, deadline))
}

fn drain_committed(
    outbox: &Outbox,
    db: Scoped<'_>,
    settings: &Settings,
    at: i64,
    deadline: Instant,
) -> Result<Drained, DrainError> {
    let mut drained = Drained::default();
    let mut awaited_before: Option<u64> = None;
    loop {
        let jobs = store::claim_due(db, at, false)?;
        if !jobs.is_empty() {
            let outcomes = attempt_blocking(outbox, db, &WriteIntent::sandbox(), settings, jobs)?;
            drained.sent += outcomes.len() as u64;
            drained.succeeded += outcomes.iter().filter(|o| o.succeeded()).count() as u64;
        }
        let in_flight = store::due_in_flight(db, at)?;
        if in_flight == 0 && store::next_due(db)?.is_none_or(|due| due > at) {
            if let Some(n) = awaited_before {
                drained.awaited = n;
            }
            return Ok(drained);
        }
        awaited_before = Some(awaited_before.unwrap_or(0).max(in_flight));
        let now = Instant::now();
        if now >= deadline {
            return Err(DrainError::TimedOut {
                unrecorded: in_flight + store::due_unclaimed(db, at)?,
                drained,
            });
        }
        if in_flight > 0 {
            outbox.wait_recorded((deadline - now).min(Duration::from_millis(50)));
        }
    }
}
