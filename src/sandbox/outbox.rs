//! Outbox control for tests: `POST /_sandbox/webhooks/drain` (send what is due and wait until every
//! outcome is recorded), the drain an advance runs at each stop (`"drain": true`), and `GET
//! /_sandbox/deliveries` (deliveries across every webhook, filtered by status, webhook, type).

use crate::auth::Action;
use crate::db::Scoped;
use crate::http::router::{one_of_param, param, Route};
use crate::http::{ApiError, App, Ctx, Response};
use crate::ids::Kind;
use crate::routes::webhooks::deliveries::{page_of, status_param, Filter, STATUSES};
use crate::time::rfc3339;
use crate::validate::OneOf;
use crate::webhooks::drain::{drain, DrainError, Drained};
use crate::webhooks::Outbox;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a drain waits by default, and at most.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
pub const MAX_TIMEOUT_MS: u64 = 120_000;

pub fn routes() -> Vec<Route> {
    vec![
        Route::post("/_sandbox/webhooks/drain", "drainSandboxWebhooks", Action::Sandbox, drain_now)
            .tag("sandbox")
            .summary("Send every webhook delivery due now and answer once each attempt's outcome is recorded.")
            .describe("Sends every pending delivery due at the sandbox clock's now (first attempts and due retries) and waits for those already on the wire, answering only when each has an attempt recorded in the delivery log: call it after a write instead of sleeping or polling until a receiver's answer shows. Failed attempts are rescheduled as usual (their retries fall due later, on the sandbox clock). `timeout_ms` (default 10000, at most 120000) bounds the wait, checked between attempts (one attempt takes at most `webhooks.timeout_millis`); when it passes the answer is 408 `drain_timeout` and nothing is undone.")
            .body("SandboxWebhookDrain")
            .ok("SandboxWebhookDrained")
            .not_idempotent()
            .blocking(),
        Route::get("/_sandbox/deliveries", "listSandboxDeliveries", Action::Sandbox, list)
            .no_tool("the sandbox operator's view of every account's outbox, not account data")
            .tag("sandbox")
            .summary("Webhook deliveries across every webhook and account, newest first, filtered.")
            .describe("Every webhook delivery of the sandbox, newest first by cursor, each with its attempts, as `GET /webhooks/{id}/deliveries` shows them; filter by `status`, `webhook_id` and `event_type` (every filter is index-backed). `status=pending` lists what is still to be settled: the deliveries a drain would send or wait for, and retries scheduled later.")
            .paged_by(Kind::WebhookDelivery)
            .query(&[
                status_param(),
                param("webhook_id", Kind::Webhook.schema(), "Only deliveries to this webhook."),
                one_of_param("event_type", OneOf(crate::events::EVENT_TYPES), "Only deliveries of events of this type."),
            ])
            .ok("WebhookDeliveryList"),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::{named_body, named_response};
    vec![named_body::<Drain>(), named_response::<DrainView>()]
}

pub fn outbox(app: &App) -> Result<Arc<Outbox>, ApiError> {
    app.extensions
        .get::<Arc<Outbox>>()
        .cloned()
        .ok_or_else(|| ApiError::Internal("the webhook outbox is not registered".into()))
}

/// Drains the outbox at the clock's instant `at` until `deadline`: the 408 names what was left.
/// `db` is the database as the caller sees it (inside a run's write scope, a stop of the run).
pub fn drain_at(
    app: &App,
    db: Scoped<'_>,
    at: i64,
    deadline: Instant,
) -> Result<Drained, ApiError> {
    let outbox = outbox(app)?;
    drain(&outbox, db, &app.settings, at, deadline).map_err(|e| match e {
        DrainError::Db(e) => ApiError::from(e),
        DrainError::TimedOut { unrecorded, drained } => ApiError::TimedOut {
            code: "drain_timeout",
            detail: format!(
                "The drain's timeout passed with {unrecorded} deliveries due at {} still without a recorded attempt ({} attempts sent and recorded meanwhile). Nothing was undone; drain again, or give a longer `timeout_ms`.",
                rfc3339(at),
                drained.sent
            ),
        },
    })
}

/// The drain's timeout: `timeout_ms` checked, or the default.
pub fn deadline(timeout_ms: Option<u64>, field: &str) -> Result<Instant, ApiError> {
    let ms = timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if !(1..=MAX_TIMEOUT_MS).contains(&ms) {
        return Err(ApiError::invalid(
            field,
            "out_of_range",
            format!("must be between 1 and {MAX_TIMEOUT_MS} milliseconds"),
        ));
    }
    Ok(Instant::now() + Duration::from_millis(ms))
}

/// How long a drain may wait; the body may be empty.
#[derive(Deserialize, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SandboxWebhookDrain")]
struct Drain {
    /// How long to wait at most (default 10000).
    #[serde(default, deserialize_with = "crate::routes::present")]
    #[schemars(with = "u64", range(min = 1, max = MAX_TIMEOUT_MS))]
    timeout_ms: Option<u64>,
}

/// What a drain did: every delivery due at `now` has an attempt recorded.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SandboxWebhookDrained")]
struct DrainView {
    #[schemars(extend("const" = "sandbox_webhook_drain"))]
    object: &'static str,
    #[schemars(extend("format" = "date-time"))]
    now: String,
    /// Attempts the drain sent (and recorded).
    sent: u64,
    /// Of those, the ones answered with a 2xx.
    succeeded: u64,
    /// Attempts already on the wire, waited for until recorded.
    awaited: u64,
    /// Deliveries still pending after the drain: retries scheduled later.
    pending: u64,
    /// When the next pending delivery falls due (a retry), if any.
    #[schemars(extend("format" = "date-time"))]
    next_attempt_at: Option<String>,
}

fn drain_now(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    // An empty body is allowed: every member is optional.
    let input: Drain = if ctx.body.is_empty() {
        Drain::default()
    } else {
        ctx.json()?
    };
    let deadline = deadline(input.timeout_ms, "/timeout_ms")?;
    let app = ctx.app;
    let now = app.clock().now();
    let drained = drain_at(app, ctx.db, now, deadline)?;
    let (pending, next): (i64, Option<i64>) = {
        let conn = ctx.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT count(*), min(next_attempt_at) FROM webhook_deliveries WHERE status = 'pending'",
        )?;
        stmt.query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?
    };
    Ok(Response::ok(&DrainView {
        object: "sandbox_webhook_drain",
        now: rfc3339(now),
        sent: drained.sent,
        succeeded: drained.succeeded,
        awaited: drained.awaited,
        pending: pending.max(0) as u64,
        next_attempt_at: next.map(rfc3339),
    }))
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let filter = Filter {
        webhook_id: ctx.query_id("webhook_id", Kind::Webhook)?,
        status: ctx.query_enum("status", STATUSES)?,
        event_type: ctx.query_enum("event_type", crate::events::EVENT_TYPES)?,
    };
    let conn = ctx.conn()?;
    Ok(Response::page(page_of(&conn, &filter, &page)?, &page))
}
