//! The delivery log of a webhook and its control: list and read deliveries with their attempts,
//! retry one now, send a `webhook.test` event now. The log never shows the secret or signatures.
//!
//! A retry and a test send from the request (a blocking route) and answer with the delivery as
//! recorded after the attempt. Over MCP each is a two-step write (`prepare_webhook_redelivery`,
//! `prepare_webhook_test`): it makes the server send a request to a URL at once, so the person
//! decides first. Inside a dry run (the MCP preview) nothing is sent: the answer is the delivery
//! as the attempt will leave it, with the receiver's part unknown.

use super::access::{READ, WRITE};
use super::webhook::load_visible;
use crate::db::Tx;
use crate::http::response::UNKNOWN_UNTIL_APPLIED;
use crate::http::router::{Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{Kind, TypedId, WebhookDeliveryId, WebhookId};
use crate::routes::crud::Time;
use crate::webhooks::{self, store, Outbox};
use rusqlite::{Connection, OptionalExtension};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};
use std::sync::Arc;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/webhooks/{id}/deliveries", "listWebhookDeliveries", READ, list)
        .describe("A webhook's deliveries, newest first by cursor, each with its status (pending, succeeded, failed), next attempt and every attempt (time, HTTP status, latency, the first bytes of the answer or the error). Never the secret or a signature. Needs `webhooks:read`.")
            .tool(Tool::read(
                "list_webhook_deliveries",
                "List webhook deliveries",
                &[("webhook_id", "The webhook (`wh_…`).")],
                "A webhook's delivery log: each event, its status and every attempt (time, HTTP status, latency, start of the response).",
            ))
            .tag("webhooks")
            .summary("A webhook's deliveries, newest first, each with its attempts.")
            .paged_by(Kind::WebhookDelivery)
            .query(&[status_param()])
            .ok("WebhookDeliveryList"),
        Route::get(
            "/webhooks/{id}/deliveries/{delivery_id}",
            "getWebhookDelivery",
            READ,
            get,
        )
        .no_tool("list_webhook_deliveries returns the same fields, attempts included")
        .describe("One delivery of a webhook with all its attempts. Needs `webhooks:read`.")
        .tag("webhooks")
        .summary("One delivery with its attempts.")
        .ok("WebhookDelivery"),
        Route::post(
            "/webhooks/{id}/deliveries/{delivery_id}/retry",
            "retryWebhookDelivery",
            WRITE,
            retry,
        )
        .describe("Send a delivery again now (one attempt, whatever its status) and answer with the delivery after it. Needs `webhooks:write`. 409 `delivery_in_flight` while an attempt is on the wire.")
        .tool(super::tools::REDELIVER)
        .tag("webhooks")
        .summary("Send a delivery again now (one attempt, whatever its status); returns it with the new attempt.")
        .ok("WebhookDelivery")
        .not_idempotent()
        .blocking(),
        Route::post("/webhooks/{id}/test", "testWebhook", WRITE, test)
        .describe("Send a `webhook.test` event to this webhook now, whatever types it subscribes to (even when disabled), and answer with the delivery after the attempt. Needs `webhooks:write`.")
            .tool(super::tools::TEST)
            .tag("webhooks")
            .summary("Send a `webhook.test` event to this webhook now, whatever it subscribes to; returns the delivery.")
            .ok("WebhookDelivery")
            .not_idempotent()
            .blocking(),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![crate::jsonschema::named_response::<Delivery>()]
}

#[derive(Serialize, JsonSchema)]
struct Attempt {
    #[schemars(range(min = 1))]
    n: i64,
    #[schemars(extend("format" = "date-time"))]
    at: String,
    /// The receiver's status; null when no response came.
    http_status: Option<i64>,
    #[schemars(range(min = 0))]
    latency_ms: i64,
    /// The first bytes of the response body.
    #[schemars(length(max = webhooks::send::RESPONSE_PREFIX))]
    response: String,
    /// Why no response came (refused address, connection, TLS, timeout).
    error: Option<String>,
}

/// The delivery statuses, as `status` filters take them.
pub const STATUSES: &[&str] = &["pending", "succeeded", "failed"];

/// The `status` filter of delivery lists.
pub fn status_param() -> crate::http::router::Param {
    crate::http::router::one_of_param(
        "status",
        crate::validate::OneOf(STATUSES),
        "`pending`: not settled (an attempt may be in flight); `failed`: retries exhausted, or the webhook disabled.",
    )
}

/// What a delivery list keeps (each filter optional).
#[derive(Default)]
pub struct Filter {
    pub webhook_id: Option<String>,
    pub status: Option<String>,
    pub event_type: Option<String>,
}

/// A page of deliveries, newest first, each with its attempts: the per-webhook log and the
/// sandbox's list across webhooks. Index-backed for every filter (`V17`): by id, status, webhook
/// (and status) and event type.
pub fn page_of(
    conn: &Connection,
    filter: &Filter,
    page: &crate::http::ctx::PageRequest,
) -> Result<Vec<Delivery>, ApiError> {
    let mut sql = format!("{SELECT} WHERE id < ?1");
    let mut params: Vec<rusqlite::types::Value> = vec![page.bound().to_string().into()];
    for (column, value) in [
        ("webhook_id", &filter.webhook_id),
        ("status", &filter.status),
        ("event_type", &filter.event_type),
    ] {
        if let Some(v) = value {
            params.push(v.clone().into());
            sql.push_str(&format!(" AND {column} = ?{}", params.len()));
        }
    }
    params.push(page.fetch().into());
    sql.push_str(&format!(" ORDER BY id DESC LIMIT ?{}", params.len()));
    let rows: Vec<Delivery> = {
        let mut stmt = conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(params), from_row)?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    Ok(rows
        .into_iter()
        .map(|d| with_attempts(conn, d))
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// One event sent (or to be sent) to one webhook, with every attempt. Never the secret or a
/// signature.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "WebhookDelivery")]
pub struct Delivery {
    #[schemars(transform = Kind::WebhookDelivery)]
    id: String,
    #[schemars(extend("const" = "webhook_delivery"))]
    object: &'static str,
    #[schemars(transform = Kind::Webhook)]
    webhook_id: String,
    /// Also the `webhook-id` header of every attempt.
    #[schemars(transform = Kind::Event)]
    event_id: String,
    event_type: String,
    #[schemars(transform = &crate::validate::OneOf(STATUSES))]
    status: String,
    #[schemars(range(min = 0))]
    attempt_count: i64,
    next_attempt_at: Option<Time>,
    attempts: Vec<Attempt>,
    created_at: Time,
    updated_at: Time,
}

impl crate::http::response::Listed for Delivery {
    fn list_key(&self) -> &str {
        &self.id
    }
}

const SELECT: &str =
    "SELECT id, webhook_id, event_id, event_type, status, attempts, next_attempt_at,
    created_at, updated_at FROM webhook_deliveries";

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Delivery> {
    Ok(Delivery {
        id: r.get(0)?,
        object: "webhook_delivery",
        webhook_id: r.get(1)?,
        event_id: r.get(2)?,
        event_type: r.get(3)?,
        status: r.get(4)?,
        attempt_count: r.get(5)?,
        next_attempt_at: r.get::<_, Option<i64>>(6)?.map(Time),
        attempts: Vec::new(),
        created_at: Time(r.get(7)?),
        updated_at: Time(r.get(8)?),
    })
}

fn with_attempts(conn: &Connection, mut d: Delivery) -> rusqlite::Result<Delivery> {
    let mut stmt = conn.prepare_cached(
        "SELECT n, at_ms, http_status, latency_ms, response, error FROM webhook_attempts
         WHERE delivery_id = ?1 ORDER BY n",
    )?;
    let rows = stmt.query_map([&d.id], |r| {
        let at_ms: i64 = r.get(1)?;
        Ok(Attempt {
            n: r.get(0)?,
            at: rfc3339_millis(at_ms),
            http_status: r.get(2)?,
            latency_ms: r.get(3)?,
            response: r.get(4)?,
            error: r.get(5)?,
        })
    })?;
    d.attempts = rows.collect::<rusqlite::Result<_>>()?;
    Ok(d)
}

fn load(conn: &Connection, hook: &WebhookId, id: &WebhookDeliveryId) -> Result<Delivery, ApiError> {
    let d = conn
        .prepare_cached(&format!("{SELECT} WHERE id = ?1 AND webhook_id = ?2"))?
        .query_row([id.as_str(), hook.as_str()], from_row)
        .optional()?
        .ok_or_else(|| ApiError::not_found("webhook delivery", id.as_str()))?;
    Ok(with_attempts(conn, d)?)
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let hook: WebhookId = ctx.path()?;
    let page = ctx.page()?;
    let conn = ctx.conn()?;
    load_visible(ctx, &conn, &hook)?;
    let filter = Filter {
        webhook_id: Some(hook.to_string()),
        status: ctx.query_enum("status", STATUSES)?,
        event_type: None,
    };
    Ok(Response::page(page_of(&conn, &filter, &page)?, &page))
}

fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let hook: WebhookId = ctx.path()?;
    let id: WebhookDeliveryId = ctx.path_param("delivery_id")?;
    let conn = ctx.conn()?;
    load_visible(ctx, &conn, &hook)?;
    Ok(Response::ok(&load(&conn, &hook, &id)?))
}

fn outbox(ctx: &Ctx<'_>) -> Result<Arc<Outbox>, ApiError> {
    ctx.app
        .extensions
        .get::<Arc<Outbox>>()
        .cloned()
        .ok_or_else(|| ApiError::Internal("the webhook outbox is not registered".into()))
}

/// Sends a claimed job and answers with its delivery as recorded.
fn send_and_show(ctx: &Ctx<'_>, hook: &WebhookId, job: store::Job) -> Result<Response, ApiError> {
    let outbox = outbox(ctx)?;
    let id = WebhookDeliveryId::parse(&job.delivery_id)
        .ok_or_else(|| ApiError::Internal("malformed delivery id".into()))?;
    webhooks::attempt_blocking(&outbox, ctx.db, ctx.intent, &ctx.app.settings, vec![job])?;
    let conn = ctx.conn()?;
    Ok(Response::ok(&load(&conn, hook, &id)?))
}

/// What a send route does once its delivery is claimed.
enum Next {
    Send(store::Job),
    /// A dry run: nothing is sent ([`unsent`]).
    Preview(Response),
}

impl Next {
    fn of(tx: &Tx, hook: &WebhookId, job: store::Job) -> Result<Next, ApiError> {
        if !tx.dry_run() {
            return Ok(Next::Send(job));
        }
        let id = WebhookDeliveryId::parse(&job.delivery_id)
            .ok_or_else(|| ApiError::Internal("malformed delivery id".into()))?;
        Ok(Next::Preview(unsent(tx, hook, &id)?))
    }

    fn run(self, ctx: &Ctx<'_>, hook: &WebhookId) -> Result<Response, ApiError> {
        match self {
            Next::Send(job) => send_and_show(ctx, hook, job),
            Next::Preview(resp) => Ok(resp),
        }
    }
}

/// The delivery as one more attempt will leave it, without making the attempt: what only the
/// receiver's answer decides is `null` and named in [`UNKNOWN_UNTIL_APPLIED`].
fn unsent(
    conn: &Connection,
    hook: &WebhookId,
    id: &WebhookDeliveryId,
) -> Result<Response, ApiError> {
    let d = load(conn, hook, id)?;
    let i = d.attempts.len();
    let n = d.attempt_count + 1;
    let mut v = serde_json::to_value(&d).map_err(|e| ApiError::Internal(e.to_string()))?;
    v["attempt_count"] = json!(n);
    let mut unknown = Vec::new();
    for k in ["status", "next_attempt_at", "updated_at"] {
        v[k] = Value::Null;
        unknown.push(k.to_string());
    }
    let mut attempt = serde_json::Map::new();
    attempt.insert("n".into(), json!(n));
    for k in ["at", "http_status", "latency_ms", "response", "error"] {
        attempt.insert(k.into(), Value::Null);
        unknown.push(format!("attempts[{i}].{k}"));
    }
    if let Some(list) = v["attempts"].as_array_mut() {
        list.push(Value::Object(attempt));
    }
    Ok(Response::ok(&v).with_header(UNKNOWN_UNTIL_APPLIED, &unknown.join(",")))
}

fn retry(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let hook: WebhookId = ctx.path()?;
    let id: WebhookDeliveryId = ctx.path_param("delivery_id")?;
    let next = ctx.db.write(ctx.intent, |tx| {
        load_visible(ctx, tx, &hook)?;
        load(tx, &hook, &id)?;
        let job = store::claim(tx, id.as_str(), true)?.ok_or_else(|| ApiError::ConflictCode {
            code: "delivery_in_flight",
            detail:
                "An attempt of this delivery is being sent right now; read it again in a moment."
                    .into(),
        })?;
        Next::of(tx, &hook, job)
    })?;
    next.run(ctx, &hook)
}

fn test(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let hook: WebhookId = ctx.path()?;
    let next = ctx.db.write(ctx.intent, |tx| {
        let current = load_visible(ctx, tx, &hook)?;
        let payload = super::payloads::test(&crate::routes::payload::Subject {
            conn: tx,
            now: tx.now(),
            settings: &ctx.app.settings,
            company: &current.company_id,
            id: hook.as_str(),
            hints: &serde_json::Map::new(),
        })?;
        let delivery = crate::events::record_for_webhook(
            tx,
            &current.company_id,
            hook.as_str(),
            "webhook.test",
            &payload,
        )?;
        let job = store::load_claimed(tx, &delivery, true)?
            .ok_or_else(|| ApiError::Internal("the test delivery vanished".into()))?;
        Next::of(tx, &hook, job)
    })?;
    next.run(ctx, &hook)
}

/// An instant with milliseconds: `2026-03-02T09:00:00.123Z`.
fn rfc3339_millis(ms: i64) -> String {
    let whole = crate::time::rfc3339(ms.div_euclid(1000));
    let stem = whole.strip_suffix('Z').unwrap_or(&whole);
    format!("{stem}.{:03}Z", ms.rem_euclid(1000))
}
