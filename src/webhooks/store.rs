//! The outbox in SQLite: claiming due deliveries, the request each one makes, and recording an
//! attempt (the retry schedule, the failing span that disables a webhook).
//!
//! A delivery is claimed (`claimed_at` set) in a write transaction before its attempt is sent,
//! outside any transaction; the attempt is recorded, and the claim cleared, in a second one. A
//! process killed in between leaves the claim, which start-up clears ([`release_claims`]): the
//! attempt is sent again, with the same `webhook-id`, and receivers deduplicate by it.

use crate::config::{Settings, WebhookTimestamps};
use crate::db::{DbError, Scoped, Tx, WriteIntent};
use bytes::Bytes;
use rusqlite::{Connection, OptionalExtension};

/// Deliveries one claim takes at most.
pub const CLAIM_BATCH: i64 = 256;

/// One attempt to make: what to send, where, signed how.
#[derive(Debug, Clone)]
pub struct Job {
    pub delivery_id: String,
    /// The account of the company: delivery slots are shared fairly per account first.
    pub account_id: String,
    pub company_id: String,
    pub webhook_id: String,
    pub url: String,
    /// Secrets to sign with: the current one, then the previous one during a rotation's grace.
    pub secrets: Vec<String>,
    pub event_id: String,
    pub body: Bytes,
    /// The sandbox clock when the attempt was claimed (Unix seconds): the `webhook-timestamp`
    /// header with `webhooks.timestamps = "sandbox"`.
    pub timestamp: i64,
    /// The same instant in milliseconds, for the delivery log.
    pub at_ms: i64,
    /// A retry asked for by hand: its failure does not move the delivery's schedule.
    pub manual: bool,
    /// The database's generation when claimed ([`crate::db::Db::generation`]): an outcome that
    /// comes back after a snapshot restore is not recorded into the restored world. `None`: not
    /// checked.
    pub generation: Option<u64>,
}

impl Job {
    /// The Standard Webhooks headers. `webhook-timestamp` is transport (receivers check it against
    /// their own clock to refuse replays): the wall clock by default, the sandbox clock with
    /// `webhooks.timestamps = "sandbox"`. The body's `timestamp` is the event's sandbox time.
    pub fn headers(&self, clock: WebhookTimestamps) -> Vec<(&'static str, String)> {
        let timestamp = match clock {
            WebhookTimestamps::Wall => crate::time::wall_now(),
            WebhookTimestamps::Sandbox => self.timestamp,
        };
        vec![
            ("webhook-id", self.event_id.clone()),
            ("webhook-timestamp", timestamp.to_string()),
            (
                "webhook-signature",
                super::sign::header(&self.secrets, &self.event_id, timestamp, &self.body),
            ),
        ]
    }
}

/// The body of an event's deliveries: `{"id", "type", "timestamp", "data"}`, `data` being the
/// object as the REST API shows it (the event's payload). The same bytes on every attempt.
pub fn body(id: &str, event_type: &str, created_at: i64, payload: &str) -> Bytes {
    let id = serde_json::Value::from(id);
    let event_type = serde_json::Value::from(event_type);
    let data = if payload.is_empty() { "null" } else { payload };
    Bytes::from(format!(
        r#"{{"id":{id},"type":{event_type},"timestamp":"{}","data":{data}}}"#,
        crate::time::rfc3339(created_at)
    ))
}

/// Clears every claim: called once at start-up, when no attempt of this process is in flight.
pub fn release_claims(db: Scoped<'_>) -> Result<usize, DbError> {
    db.write(&WriteIntent::sandbox(), |tx| {
        Ok(tx.execute(
            "UPDATE webhook_deliveries SET claimed_at = NULL WHERE claimed_at IS NOT NULL",
            [],
        )?)
    })
}

/// The earliest due instant of an unclaimed pending delivery.
pub fn next_due(db: Scoped<'_>) -> Result<Option<i64>, DbError> {
    let conn = db.conn()?;
    let mut stmt = conn.prepare_cached(
        "SELECT min(next_attempt_at) FROM webhook_deliveries
         WHERE status = 'pending' AND claimed_at IS NULL",
    )?;
    Ok(stmt.query_row([], |r| r.get(0))?)
}

/// Pending deliveries due at or before `at` with an attempt on the wire (claimed).
pub fn due_in_flight(db: Scoped<'_>, at: i64) -> Result<u64, DbError> {
    let conn = db.conn()?;
    let mut stmt = conn.prepare_cached(
        "SELECT count(*) FROM webhook_deliveries
         WHERE status = 'pending' AND claimed_at IS NOT NULL AND next_attempt_at <= ?1",
    )?;
    Ok(stmt.query_row([at], |r| r.get::<_, i64>(0))?.max(0) as u64)
}

/// Pending deliveries due at or before `at` that nobody has claimed yet.
pub fn due_unclaimed(db: Scoped<'_>, at: i64) -> Result<u64, DbError> {
    let conn = db.conn()?;
    let mut stmt = conn.prepare_cached(
        "SELECT count(*) FROM webhook_deliveries
         WHERE status = 'pending' AND claimed_at IS NULL AND next_attempt_at <= ?1",
    )?;
    Ok(stmt.query_row([at], |r| r.get::<_, i64>(0))?.max(0) as u64)
}

/// Claims the pending deliveries due at or before `at` (only first attempts when `first_only`),
/// oldest due first, and returns their jobs. Deliveries of a disabled webhook are marked failed.
pub fn claim_due(db: Scoped<'_>, at: i64, first_only: bool) -> Result<Vec<Job>, DbError> {
    db.write(&WriteIntent::sandbox(), |tx| {
        let ids: Vec<String> = {
            let mut stmt = tx.prepare_cached(
                "SELECT id FROM webhook_deliveries
                 WHERE status = 'pending' AND claimed_at IS NULL AND next_attempt_at <= ?1
                   AND (?3 = 0 OR attempts = 0)
                 ORDER BY next_attempt_at LIMIT ?2",
            )?;
            let rows = stmt.query_map(
                rusqlite::params![at, CLAIM_BATCH, i64::from(first_only)],
                |r| r.get::<_, String>(0),
            )?;
            rows.collect::<rusqlite::Result<Vec<String>>>()?
        };
        let generation = Some(db.db().generation());
        let mut jobs = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(mut job) = claim(tx, &id, false)? {
                job.generation = generation;
                jobs.push(job);
            }
        }
        Ok(jobs)
    })
}

/// Claims one delivery (`force`: even a settled one, or one of a disabled webhook: a retry or a
/// test asked for by hand). `None` when it is claimed already, or not sendable.
pub fn claim(tx: &Tx, delivery_id: &str, force: bool) -> Result<Option<Job>, DbError> {
    let now_ms = tx.now_millis();
    let changed = tx
        .prepare_cached(
            "UPDATE webhook_deliveries SET claimed_at = ?2 WHERE id = ?1 AND claimed_at IS NULL",
        )?
        .execute(rusqlite::params![delivery_id, now_ms])?;
    if changed == 0 {
        return Ok(None);
    }
    load_claimed(tx, delivery_id, force)
}

/// The job of a delivery this caller has claimed (`claimed_at` set by it).
pub fn load_claimed(tx: &Tx, delivery_id: &str, force: bool) -> Result<Option<Job>, DbError> {
    let now = tx.now();
    let row = tx
        .prepare_cached(
            "SELECT d.company_id, d.webhook_id, w.url, w.secret, w.previous_secret,
                    w.previous_secret_expires_at, w.enabled, e.id, e.type, e.created_at, e.payload,
                    c.account_id
             FROM webhook_deliveries d
             JOIN webhooks w ON w.id = d.webhook_id
             JOIN events e ON e.id = d.event_id
             JOIN companies c ON c.id = d.company_id
             WHERE d.id = ?1",
        )?
        .query_row([delivery_id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<i64>>(5)?,
                r.get::<_, i64>(6)? == 1,
                r.get::<_, String>(7)?,
                r.get::<_, String>(8)?,
                r.get::<_, i64>(9)?,
                r.get::<_, String>(10)?,
                r.get::<_, String>(11)?,
            ))
        })
        .optional()?;
    let Some((
        company,
        hook,
        url,
        secret,
        previous,
        expires,
        enabled,
        event,
        kind,
        created,
        payload,
        account,
    )) = row
    else {
        return Ok(None);
    };
    if !enabled && !force {
        tx.prepare_cached(
            "UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL,
                 claimed_at = NULL, updated_at = ?2 WHERE id = ?1",
        )?
        .execute(rusqlite::params![delivery_id, now])?;
        return Ok(None);
    }
    let mut secrets = vec![secret];
    if let (Some(p), Some(until)) = (previous, expires) {
        if until > now {
            secrets.push(p);
        }
    }
    Ok(Some(Job {
        delivery_id: delivery_id.to_string(),
        account_id: account,
        company_id: company,
        webhook_id: hook,
        url,
        secrets,
        body: body(&event, &kind, created, &payload),
        event_id: event,
        timestamp: now,
        at_ms: tx.now_millis(),
        manual: force,
        generation: None,
    }))
}

/// Records an attempt and settles or reschedules its delivery, in one transaction: success ends
/// the delivery and the webhook's failing span; a failure schedules the next retry (or fails the
/// delivery after the last), and disables a webhook that has failed for the configured span.
pub fn record(
    db: Scoped<'_>,
    intent: &WriteIntent,
    settings: &Settings,
    job: &Job,
    outcome: &super::send::Outcome,
) -> Result<(), DbError> {
    db.write(intent, |tx| {
        if stale(db, job) {
            return Ok(());
        }
        record_in(tx, settings, job, outcome)
    })
}

/// Claimed before a snapshot restore: the delivery it belongs to is the restored one's now.
fn stale(db: Scoped<'_>, job: &Job) -> bool {
    job.generation.is_some_and(|g| g != db.db().generation())
}

/// Records many attempts in one transaction (the worker's outcomes, batched under load).
pub fn record_all(
    db: Scoped<'_>,
    intent: &WriteIntent,
    settings: &Settings,
    done: &[(Job, super::send::Outcome)],
) -> Result<(), DbError> {
    db.write(intent, |tx| {
        for (job, outcome) in done {
            if !stale(db, job) {
                record_in(tx, settings, job, outcome)?;
            }
        }
        Ok(())
    })
}

fn record_in(
    tx: &Tx,
    settings: &Settings,
    job: &Job,
    outcome: &super::send::Outcome,
) -> Result<(), DbError> {
    let now = tx.now();
    let Some((attempts, status)) = tx
        .prepare_cached("SELECT attempts, status FROM webhook_deliveries WHERE id = ?1")?
        .query_row([&job.delivery_id], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })
        .optional()?
    else {
        // Deleted meanwhile (its webhook was): nothing to record.
        return Ok(());
    };
    let n = attempts + 1;
    tx.prepare_cached(
        "INSERT INTO webhook_attempts (delivery_id, company_id, n, at_ms, http_status, latency_ms, error, response)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(rusqlite::params![
        job.delivery_id,
        job.company_id,
        n,
        job.at_ms,
        outcome.status,
        outcome.latency_ms,
        outcome.error,
        outcome.response
    ])?;
    if outcome.succeeded() {
        tx.prepare_cached(
            "UPDATE webhook_deliveries SET status = 'succeeded', attempts = ?2, next_attempt_at = NULL,
                 claimed_at = NULL, updated_at = ?3 WHERE id = ?1",
        )?
        .execute(rusqlite::params![job.delivery_id, n, now])?;
        tx.prepare_cached(
            "UPDATE webhooks SET failing_since = NULL WHERE id = ?1 AND failing_since IS NOT NULL",
        )?
        .execute([&job.webhook_id])?;
        return Ok(());
    }
    // Retries count the automatic attempts: a manual retry of a failed delivery leaves it failed.
    let next = if job.manual && status != "pending" {
        None
    } else {
        usize::try_from(attempts)
            .ok()
            .and_then(|i| settings.webhook_retry_schedule.get(i))
            .map(|&delay| now + i64::try_from(delay).unwrap_or(i64::MAX / 2))
    };
    let new_status = if next.is_some() { "pending" } else { "failed" };
    tx.prepare_cached(
        "UPDATE webhook_deliveries SET status = ?2, attempts = ?3, next_attempt_at = ?4,
             claimed_at = NULL, updated_at = ?5 WHERE id = ?1",
    )?
    .execute(rusqlite::params![job.delivery_id, new_status, n, next, now])?;
    tx.prepare_cached(
        "UPDATE webhooks SET failing_since = ?2 WHERE id = ?1 AND failing_since IS NULL",
    )?
    .execute(rusqlite::params![job.webhook_id, now])?;
    let since: Option<(i64, i64)> = tx
        .prepare_cached("SELECT failing_since, enabled FROM webhooks WHERE id = ?1")?
        .query_row([&job.webhook_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    if let Some((since, 1)) = since {
        if now - since >= settings.webhook_disable_after_secs {
            disable(tx, &job.company_id, &job.webhook_id, since)?;
        }
    }
    Ok(())
}

/// Disables a webhook that kept failing: its pending deliveries fail, and `webhook.disabled` is
/// recorded (delivered to the company's other webhooks that subscribe to it).
fn disable(tx: &Tx, company: &str, webhook: &str, since: i64) -> Result<(), DbError> {
    let now = tx.now();
    tx.execute(
        "UPDATE webhooks SET enabled = 0, updated_at = ?2, version = version + 1 WHERE id = ?1",
        rusqlite::params![webhook, now],
    )?;
    tx.execute(
        "UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, updated_at = ?2
         WHERE webhook_id = ?1 AND status = 'pending' AND claimed_at IS NULL",
        rusqlite::params![webhook, now],
    )?;
    let mut payload = webhook_json(tx, webhook)?;
    payload["disabled_reason"] = serde_json::json!(disabled_reason(since));
    crate::events::record(
        tx,
        company,
        "webhook.disabled",
        "webhook",
        webhook,
        &payload,
    )?;
    Ok(())
}

/// The `disabled_reason` of `webhook.disabled`: every attempt since `since` failed.
pub fn disabled_reason(since: i64) -> String {
    format!(
        "Every delivery attempt since {} failed.",
        crate::time::rfc3339(since)
    )
}

/// A webhook as the REST API shows it (the secret reduced to its last four characters).
fn webhook_json(tx: &Connection, webhook: &str) -> Result<serde_json::Value, DbError> {
    Ok(tx.query_row(
        "SELECT id, company_id, url, description, event_types, enabled, secret, created_at, updated_at
         FROM webhooks WHERE id = ?1",
        [webhook],
        |r| {
            let types: String = r.get(4)?;
            let secret: String = r.get(6)?;
            let last4: String = secret
                .chars()
                .rev()
                .take(4)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            Ok(serde_json::json!({
                "id": r.get::<_, String>(0)?,
                "object": "webhook",
                "company_id": r.get::<_, String>(1)?,
                "url": r.get::<_, String>(2)?,
                "description": r.get::<_, String>(3)?,
                "event_types": serde_json::from_str::<serde_json::Value>(&types).unwrap_or_default(),
                "enabled": r.get::<_, i64>(5)? == 1,
                "secret_last4": last4,
                "created_at": crate::time::rfc3339(r.get(7)?),
                "updated_at": crate::time::rfc3339(r.get(8)?),
            }))
        },
    )?)
}
