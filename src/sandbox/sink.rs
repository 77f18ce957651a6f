//! The built-in webhook receiver, `/_sandbox/sink/{name}`: a demo or a test looks at real
//! deliveries without running a server.
//!
//! `POST` accepts a delivery (no credential: the sender is this sandbox's own outbox, or any
//! client), verifies its Standard Webhooks signature against the webhooks that delivered that event
//! to this sink (the current secret and, during a rotation's grace, the previous one; compared in
//! constant time) and keeps it with the verdict. `GET` (the operator's) lists what a sink received,
//! newest first; `DELETE` empties it. Kept in memory, bounded: the newest [`KEPT_PER_SINK`] per
//! sink, at most [`MAX_SINKS`] sinks (the one written longest ago goes first), bodies up to
//! [`MAX_BODY`] bytes (marked when cut; the signature is checked on the whole body). Like the
//! request journal it observes the world rather than being part of it: a snapshot restore neither
//! brings back nor removes what a sink holds.
//!
//! A webhook reaches the sink at `http://127.0.0.1:0/_sandbox/sink/{name}` (port 0: this sandbox,
//! whatever port it listens on), the only loopback URL allowed when private targets are refused
//! ([`crate::outbound::self_sink`]).

use crate::auth::Action;
use crate::http::router::Route;
use crate::http::{ApiError, App, Ctx, Response};
use crate::outbound::{is_sink_name, SINK_PATH};
use crate::time::rfc3339;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use subtle::ConstantTimeEq;

/// Deliveries one sink keeps (the newest).
pub const KEPT_PER_SINK: usize = 100;
/// Sinks kept at once.
pub const MAX_SINKS: usize = 20;
/// Body bytes kept per delivery (so at most 20 × 100 × 16 KiB are held).
pub const MAX_BODY: usize = 16 * 1024;

/// What every sink holds.
#[derive(Default)]
pub struct Sinks {
    inner: Mutex<State>,
}

#[derive(Default)]
struct State {
    by_name: HashMap<String, VecDeque<Received>>,
    /// Sink names, least recently written first.
    order: VecDeque<String>,
    /// Numbers received deliveries (`rcv_<n>`), per process.
    counter: u64,
}

/// One delivery as a sink received it.
#[derive(Clone, Serialize)]
struct Received {
    id: String,
    object: &'static str,
    sink: String,
    received_at: String,
    webhook_id_header: Option<String>,
    webhook_timestamp: Option<String>,
    event_type: Option<String>,
    verification: Verdict,
    headers: Value,
    body: Value,
    body_truncated: bool,
}

#[derive(Clone, Serialize)]
struct Verdict {
    verified: bool,
    /// The webhook whose secret made a matching signature.
    webhook_id: Option<String>,
    /// Why not, when not verified.
    reason: Option<String>,
}

pub fn routes() -> Vec<Route> {
    vec![
        Route::post("/_sandbox/sink/{name}", "receiveSandboxSink", Action::Public, receive)
            .tag("sandbox")
            .summary("The built-in webhook receiver: accept a delivery, verify its signature, keep it.")
            .describe("Accepts a webhook delivery (answers 204), verifies its Standard Webhooks signature (`webhook-id`, `webhook-timestamp`, `webhook-signature`) against the webhooks of this sandbox that delivered that event here, and keeps it with the verdict for `GET /_sandbox/sink/{name}`. Point a webhook at `http://127.0.0.1:0/_sandbox/sink/{name}` (port 0 stands for this sandbox's own port). `name`: 1 to 64 of `a-z 0-9 - _`. No credential: it is what a receiver is.")
            .returns(204, None)
            .not_idempotent(),
        Route::get("/_sandbox/sink/{name}", "listSandboxSink", Action::Sandbox, list)
            .tag("sandbox")
            .summary("What a sink received, newest first, each with its signature verdict.")
            .describe("The deliveries the sink `name` received (the newest 100), newest first, each with its headers, body (parsed JSON, or the text; bodies over 16 KiB are cut and marked) and `verification`: `verified`, the `webhook_id` whose secret signed it, or the `reason` it failed. A sink nothing was sent to is empty.")
            .ok("SandboxSinkDeliveries"),
        Route::delete("/_sandbox/sink/{name}", "clearSandboxSink", Action::Sandbox, clear)
            .tag("sandbox")
            .summary("Empty a sink.")
            .describe("Forgets every delivery the sink `name` kept (204), so a test starts from an empty sink."),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    let received = json!({"type":"object","additionalProperties":false,
        "required":["id","object","sink","received_at","webhook_id_header","webhook_timestamp","event_type",
            "verification","headers","body","body_truncated"],
        "properties":{"id":{"type":"string","pattern":"^rcv_"},"object":{"const":"sandbox_sink_delivery"},
            "sink":{"type":"string","description":"The sink's name."},"received_at":{"type":"string","format":"date-time","description":"Sandbox clock."},
            "webhook_id_header":{"type":["string","null"],"description":"The `webhook-id` header: the event id."},
            "webhook_timestamp":{"type":["string","null"],"description":"The `webhook-timestamp` header (Unix seconds)."},
            "event_type":{"type":["string","null"],"description":"The body's `type`."},
            "verification":{"type":"object","additionalProperties":false,"required":["verified","webhook_id","reason"],
                "description":"The signature's verdict.",
                "properties":{"verified":{"type":"boolean","description":"Whether a signature matches the secret of a webhook that delivered this event here."},
                    "webhook_id":{"type":["string","null"],"description":"The webhook whose secret made the matching signature."},
                    "reason":{"type":["string","null"],"description":"Why not verified: missing headers, no webhook of this sandbox delivered the event here, or no signature matches."}}},
            "headers":{"type":"object","description":"The request's `content-type`, `user-agent` and `webhook-*` headers."},
            "body":{"description":"The body: parsed JSON, or the text when it is not JSON."},
            "body_truncated":{"type":"boolean","description":"Whether the body was cut at 16 KiB (the signature was checked on all of it)."}}});
    vec![(
        "SandboxSinkDeliveries",
        json!({"type":"object","additionalProperties":false,"required":["object","sink","data","has_more"],
            "description":"What a sink received, newest first (at most its newest 100 deliveries).",
            "properties":{"object":{"const":"list"},"sink":{"type":"string","description":"The sink's name."},
                "data":{"type":"array","items":received},
                "has_more":{"const":false,"description":"Always false: a sink keeps at most 100 deliveries, all on this page."}}}),
    )]
}

fn sinks(app: &App) -> Result<Arc<Sinks>, ApiError> {
    app.extensions
        .get::<Arc<Sinks>>()
        .cloned()
        .ok_or_else(|| ApiError::Internal("the sinks are not registered".into()))
}

fn name(ctx: &Ctx<'_>) -> Result<String, ApiError> {
    let name = ctx.param("name");
    if !is_sink_name(name) {
        return Err(ApiError::NotFound(
            "A sink name is 1 to 64 of `a-z 0-9 - _`.".into(),
        ));
    }
    Ok(name.to_string())
}

fn receive(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let sink = name(ctx)?;
    let header = |n: &str| ctx.header(n).map(str::to_string);
    let (id, timestamp, signature) = (
        header("webhook-id"),
        header("webhook-timestamp"),
        header("webhook-signature"),
    );
    let verification = verify(
        ctx,
        &sink,
        id.as_deref(),
        timestamp.as_deref(),
        signature.as_deref(),
    )?;
    let cut = ctx.body.len() > MAX_BODY;
    let kept = &ctx.body[..ctx.body.len().min(MAX_BODY)];
    let body: Value = serde_json::from_slice(kept)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(kept).into_owned()));
    let event_type = body["type"].as_str().map(str::to_string);
    let mut headers = serde_json::Map::new();
    for n in [
        "content-type",
        "user-agent",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
    ] {
        if let Some(v) = ctx.header(n) {
            headers.insert(
                n.to_string(),
                json!(v.chars().take(1024).collect::<String>()),
            );
        }
    }
    let sinks = sinks(ctx.app)?;
    let mut state = sinks
        .inner
        .lock()
        .map_err(|_| ApiError::Internal("the sinks' lock is poisoned".into()))?;
    state.counter += 1;
    let received = Received {
        id: format!("rcv_{:012}", state.counter),
        object: "sandbox_sink_delivery",
        sink: sink.clone(),
        received_at: rfc3339(crate::time::now()),
        webhook_id_header: id,
        webhook_timestamp: timestamp,
        event_type,
        verification,
        headers: Value::Object(headers),
        body,
        body_truncated: cut,
    };
    state.order.retain(|n| n != &sink);
    state.order.push_back(sink.clone());
    while state.order.len() > MAX_SINKS {
        if let Some(oldest) = state.order.pop_front() {
            state.by_name.remove(&oldest);
        }
    }
    let kept = state.by_name.entry(sink).or_default();
    kept.push_front(received);
    kept.truncate(KEPT_PER_SINK);
    Ok(Response::no_content())
}

/// A webhook that delivered an event: where, and the secrets it signs with.
struct Sender {
    id: String,
    url: String,
    secret: String,
    previous: Option<String>,
    until: Option<i64>,
}

/// Checks the signature against every webhook that delivered this event to this sink.
fn verify(
    ctx: &Ctx<'_>,
    sink: &str,
    id: Option<&str>,
    timestamp: Option<&str>,
    signature: Option<&str>,
) -> Result<Verdict, ApiError> {
    let fail = |reason: String| Verdict {
        verified: false,
        webhook_id: None,
        reason: Some(reason),
    };
    let (Some(id), Some(timestamp), Some(signature)) = (id, timestamp, signature) else {
        return Ok(fail(
            "missing webhook-id, webhook-timestamp or webhook-signature".into(),
        ));
    };
    let Ok(ts) = timestamp.parse::<i64>() else {
        return Ok(fail("webhook-timestamp is not Unix seconds".into()));
    };
    let conn = ctx.app.db.conn()?;
    let hooks: Vec<Sender> = conn
        .prepare_cached(
            "SELECT DISTINCT w.id, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at
             FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
             WHERE d.event_id = ?1 ORDER BY w.id",
        )?
        .query_map([id], |r| {
            Ok(Sender {
                id: r.get(0)?,
                url: r.get(1)?,
                secret: r.get(2)?,
                previous: r.get(3)?,
                until: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let here: Vec<Sender> = hooks
        .into_iter()
        .filter(|h| h.url.ends_with(&format!("{SINK_PATH}{sink}")))
        .collect();
    if here.is_empty() {
        return Ok(fail(format!(
            "no webhook of this sandbox delivered event `{}` to this sink",
            id.chars().take(64).collect::<String>()
        )));
    }
    let now = crate::time::now();
    let given: Vec<&str> = signature.split(' ').collect();
    for hook in &here {
        let mut secrets = vec![hook.secret.as_str()];
        if let (Some(p), Some(u)) = (&hook.previous, hook.until) {
            if u > now {
                secrets.push(p);
            }
        }
        for s in secrets {
            let expected = crate::webhooks::sign::signature(s, id, ts, &ctx.body);
            if given
                .iter()
                .any(|g| bool::from(g.as_bytes().ct_eq(expected.as_bytes())))
            {
                return Ok(Verdict {
                    verified: true,
                    webhook_id: Some(hook.id.clone()),
                    reason: None,
                });
            }
        }
    }
    Ok(fail(
        "no signature matches the secret of the webhook that sent it".into(),
    ))
}

#[derive(Serialize)]
struct Listing {
    object: &'static str,
    sink: String,
    data: Vec<Received>,
    has_more: bool,
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let sink = name(ctx)?;
    let sinks = sinks(ctx.app)?;
    let state = sinks
        .inner
        .lock()
        .map_err(|_| ApiError::Internal("the sinks' lock is poisoned".into()))?;
    let data = state
        .by_name
        .get(&sink)
        .map(|d| d.iter().cloned().collect())
        .unwrap_or_default();
    Ok(Response::ok(&Listing {
        object: "list",
        sink,
        data,
        has_more: false,
    }))
}

fn clear(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let sink = name(ctx)?;
    let sinks = sinks(ctx.app)?;
    let mut state = sinks
        .inner
        .lock()
        .map_err(|_| ApiError::Internal("the sinks' lock is poisoned".into()))?;
    state.by_name.remove(&sink);
    state.order.retain(|n| n != &sink);
    Ok(Response::no_content())
}
