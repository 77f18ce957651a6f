//! The built-in webhook receiver, `/_sandbox/sink/{name}`: a demo or a test looks at real
//! deliveries without running a server.
//!
//! **A sink belongs to the accounts whose webhooks deliver to it.** `POST` (no credential: it is
//! a receiver) answers like a careful receiver: a delivery is kept only when its Standard
//! Webhooks signature verifies with the secret of a webhook of this sandbox whose URL is this sink
//! (its current secret, or its previous one during a rotation's grace; compared in constant time)
//! and its `webhook-timestamp` is within 5 minutes of the wall clock or of the sandbox clock
//! (whichever the sandbox signs with). It is then kept for that webhook's account, answered 204;
//! the same `webhook-id` again is answered 204 too (marked `duplicate`). A delivery without the
//! three headers, with a stale or future timestamp, or signed by nobody's secret is refused
//! (400, with a `code`) and kept nowhere: a stranger can neither fill nor flush a tenant's sink.
//!
//! `GET` lists what a sink kept for the caller's account (a company-scoped credential: its
//! company's webhooks only; scope `webhooks:read`), newest first; the operator (scope
//! `sandbox`) sees every account's. `DELETE` empties the caller's part (scope `webhooks:write`),
//! or, for the operator, all of it. Kept in memory, bounded: the newest [`KEPT_PER_SINK`] per
//! account and sink, at most [`MAX_SINKS`] sinks per account (the one written longest ago goes
//! first), bodies up to [`MAX_BODY`] bytes (marked when cut; the signature is checked on the
//! whole body). Like the request journal it observes the world rather than being part of it: a
//! snapshot restore neither brings back nor removes what a sink holds.
//!
//! A webhook reaches the sink at `http://127.0.0.1:0/_sandbox/sink/{name}` (port 0: this sandbox,
//! whatever port it listens on), the only loopback URL allowed when private targets are refused
//! ([`crate::outbound::self_sink`]).

use crate::auth::{authorize, Action, Area, Level, Target};
use crate::http::router::Route;
use crate::http::{ApiError, App, Ctx, Response};
use crate::outbound::{is_sink_name, SINK_PATH};
use crate::time::rfc3339;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use subtle::ConstantTimeEq;

/// Deliveries one account's sink keeps (the newest).
pub const KEPT_PER_SINK: usize = 100;
/// Sinks kept at once per account.
pub const MAX_SINKS: usize = 20;
/// Body bytes kept per delivery.
pub const MAX_BODY: usize = 16 * 1024;
/// How far a `webhook-timestamp` may be from the clock (seconds), as Standard Webhooks verifiers.
pub const TOLERANCE_SECS: i64 = 300;

/// What every sink holds, per account.
#[derive(Default)]
pub struct Sinks {
    inner: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// (account, sink name) → deliveries, newest first.
    by_sink: HashMap<(String, String), VecDeque<Received>>,
    /// Per account, its sink names, least recently written first.
    order: HashMap<String, VecDeque<String>>,
    /// Numbers received deliveries (`rcv_<n>`), per process.
    counter: u64,
}

// One delivery as a sink received it.
#[derive(Clone, Serialize, JsonSchema)]
struct Received {
    #[schemars(regex(pattern = "^rcv_"))]
    id: String,
    #[schemars(extend("const" = "sandbox_sink_delivery"))]
    object: &'static str,
    /// The sink's name.
    sink: String,
    /// The account of the webhook that signed it.
    account_id: String,
    /// The company of that webhook.
    company_id: String,
    /// Sandbox clock.
    #[schemars(extend("format" = "date-time"))]
    received_at: String,
    /// The `webhook-id` header: the event id.
    webhook_id_header: Option<String>,
    /// The `webhook-timestamp` header (Unix seconds).
    webhook_timestamp: Option<String>,
    /// The body's `type`.
    event_type: Option<String>,
    /// This `webhook-id` was received before (answered 204 again, as a careful receiver does).
    // By this account's sink.
    duplicate: bool,
    /// The signature's verdict: only verified deliveries are kept.
    verification: Verdict,
    /// The request's `content-type`, `user-agent` and `webhook-*` headers.
    #[schemars(extend("type" = "object"))]
    headers: Value,
    /// The body: parsed JSON, or the text when it is not JSON.
    body: Value,
    /// Whether the body was cut at 16 KiB (the signature was checked on all of it).
    body_truncated: bool,
}

#[derive(Clone, Serialize, JsonSchema)]
struct Verdict {
    /// Always true.
    verified: bool,
    /// The webhook whose secret made the matching signature.
    webhook_id: Option<String>,
    /// Always null.
    // What is kept is verified.
    reason: Option<String>,
}

pub fn routes() -> Vec<Route> {
    vec![
        Route::post("/_sandbox/sink/{name}", "receiveSandboxSink", Action::Public, receive)
            .tag("sandbox")
            .summary("The built-in webhook receiver: verify a delivery like a careful receiver, keep it for its account.")
            .describe("Accepts a webhook delivery (204) when its Standard Webhooks signature (`webhook-id`, `webhook-timestamp`, `webhook-signature`) verifies with the secret of a webhook of this sandbox that points here (the current secret, or the previous one during a rotation's grace) and its timestamp is within 5 minutes of the wall clock or the sandbox clock; it is kept for that webhook's account (`GET /_sandbox/sink/{name}`). The same `webhook-id` again is 204 too. Anything else is refused with 400 and kept nowhere: `missing_signature` (a header missing), `invalid_timestamp`, `timestamp_out_of_tolerance` (stale or future), `signature_mismatch` (no webhook's secret signed it). Point a webhook at `http://127.0.0.1:0/_sandbox/sink/{name}` (port 0 stands for this sandbox's own port). `name`: 1 to 64 of `a-z 0-9 - _`. No credential: it is what a receiver is.")
            .returns(204, None)
            .may_return(&[400])
            .not_idempotent(),
        Route::get("/_sandbox/sink/{name}", "listSandboxSink", Action::Authenticated, list)
            .no_tool("the sandbox operator's built-in receiver, not account data")
            .tag("sandbox")
            .summary("What a sink kept for the caller's account, newest first.")
            .describe("The deliveries the sink `name` kept for the caller's account (the newest 100), newest first: a company-scoped credential sees its company's webhooks' only; the operator (scope `sandbox`) sees every account's. Each with its account, company, headers, body (parsed JSON, or the text; bodies over 16 KiB are cut and marked), `duplicate`, and `verification` (always verified: nothing else is kept). Needs `webhooks:read` (or `sandbox`). A sink nothing was kept in is empty.")
            .ok("SandboxSinkDeliveries"),
        Route::delete("/_sandbox/sink/{name}", "clearSandboxSink", Action::Authenticated, clear)
            .tag("sandbox")
            .summary("Empty a sink (the caller's part of it).")
            .describe("Forgets what the sink `name` kept for the caller's account (a company-scoped credential: its company's), 204, so a test starts from an empty sink; the operator (scope `sandbox`) empties it for every account. Needs `webhooks:write` (or `sandbox`)."),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![crate::jsonschema::named_response::<Listing>()]
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

fn refuse(code: &'static str, detail: &str) -> ApiError {
    ApiError::Malformed {
        code,
        detail: detail.to_string(),
    }
}

/// A webhook of this sandbox that delivers to this sink.
struct Sender {
    id: String,
    company_id: String,
    account_id: String,
    secret: String,
    previous: Option<String>,
    until: Option<i64>,
}

/// The webhooks whose URL is this sink.
fn senders(ctx: &Ctx<'_>, sink: &str) -> Result<Vec<Sender>, ApiError> {
    let own_port = ctx
        .app
        .extensions
        .get::<Arc<crate::webhooks::Outbox>>()
        .and_then(|o| o.client.own_port());
    let conn = ctx.conn()?;
    let mut stmt = conn.prepare_cached(
        "SELECT w.id, w.company_id, c.account_id, w.url, w.secret, w.previous_secret,
                w.previous_secret_expires_at
         FROM webhooks w JOIN companies c ON c.id = w.company_id
         WHERE w.url LIKE '%' || ?1 ORDER BY w.id",
    )?;
    let rows = stmt.query_map([format!("{SINK_PATH}{sink}")], |r| {
        Ok((
            r.get::<_, String>(3)?,
            Sender {
                id: r.get(0)?,
                company_id: r.get(1)?,
                account_id: r.get(2)?,
                secret: r.get(4)?,
                previous: r.get(5)?,
                until: r.get(6)?,
            },
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (url, sender) = row?;
        if crate::outbound::self_sink(&url, own_port) == Some(sink) {
            out.push(sender);
        }
    }
    Ok(out)
}

/// The webhook whose secret signed this delivery, checked like a careful receiver checks.
fn verify(ctx: &Ctx<'_>, sink: &str) -> Result<Sender, ApiError> {
    let header = |n: &str| ctx.header(n);
    let (Some(id), Some(timestamp), Some(signature)) = (
        header("webhook-id"),
        header("webhook-timestamp"),
        header("webhook-signature"),
    ) else {
        return Err(refuse(
            "missing_signature",
            "A delivery carries `webhook-id`, `webhook-timestamp` and `webhook-signature`; one is missing. Nothing was kept.",
        ));
    };
    let ts = timestamp.trim().parse::<i64>().map_err(|_| {
        refuse(
            "invalid_timestamp",
            "`webhook-timestamp` is not Unix seconds. Nothing was kept.",
        )
    })?;
    let wall = crate::http::observe::wall_millis() / 1000;
    let sandbox = ctx.now();
    if (ts - wall).abs() > TOLERANCE_SECS && (ts - sandbox).abs() > TOLERANCE_SECS {
        return Err(refuse(
            "timestamp_out_of_tolerance",
            "`webhook-timestamp` is more than 5 minutes from the wall clock and from the sandbox clock (a stale, replayed or future delivery). Nothing was kept.",
        ));
    }
    let given: Vec<&str> = signature.split(' ').collect();
    for hook in senders(ctx, sink)? {
        let mut secrets = vec![hook.secret.as_str()];
        if let (Some(p), Some(u)) = (&hook.previous, hook.until) {
            if u > sandbox {
                secrets.push(p);
            }
        }
        let matches = secrets.iter().any(|s| {
            let expected = crate::webhooks::sign::signature(s, id, ts, &ctx.body);
            given
                .iter()
                .any(|g| bool::from(g.as_bytes().ct_eq(expected.as_bytes())))
        });
        if matches {
            return Ok(hook);
        }
    }
    Err(refuse(
        "signature_mismatch",
        "No signature matches the secret of a webhook of this sandbox that delivers to this sink. Nothing was kept.",
    ))
}

fn lock(sinks: &Sinks) -> Result<std::sync::MutexGuard<'_, State>, ApiError> {
    sinks
        .inner
        .lock()
        .map_err(|_| ApiError::Internal("the sinks' lock is poisoned".into()))
}

fn receive(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let sink = name(ctx)?;
    let hook = verify(ctx, &sink)?;
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
    let id = ctx.header("webhook-id").map(str::to_string);
    let sinks = sinks(ctx.app)?;
    let mut state = lock(&sinks)?;
    state.counter += 1;
    let key = (hook.account_id.clone(), sink.clone());
    let duplicate = state
        .by_sink
        .get(&key)
        .is_some_and(|kept| kept.iter().any(|r| r.webhook_id_header == id));
    let received = Received {
        id: format!("rcv_{:012}", state.counter),
        object: "sandbox_sink_delivery",
        sink: sink.clone(),
        account_id: hook.account_id.clone(),
        company_id: hook.company_id.clone(),
        received_at: rfc3339(ctx.now()),
        webhook_id_header: id,
        webhook_timestamp: ctx.header("webhook-timestamp").map(str::to_string),
        event_type,
        duplicate,
        verification: Verdict {
            verified: true,
            webhook_id: Some(hook.id.clone()),
            reason: None,
        },
        headers: Value::Object(headers),
        body,
        body_truncated: cut,
    };
    let order = state.order.entry(hook.account_id.clone()).or_default();
    order.retain(|n| n != &sink);
    order.push_back(sink.clone());
    let mut evicted = Vec::new();
    while order.len() > MAX_SINKS {
        if let Some(oldest) = order.pop_front() {
            evicted.push(oldest);
        }
    }
    for oldest in evicted {
        state.by_sink.remove(&(hook.account_id.clone(), oldest));
    }
    let kept = state.by_sink.entry(key).or_default();
    kept.push_front(received);
    kept.truncate(KEPT_PER_SINK);
    Ok(Response::no_content())
}

/// Whose deliveries the caller reaches: every account's (the operator), else its account's, of
/// its company only when it is company-scoped.
enum Reach {
    All,
    Account {
        account: String,
        company: Option<String>,
    },
}

impl Reach {
    fn of(ctx: &Ctx<'_>, level: Level) -> Result<Reach, ApiError> {
        let p = ctx.principal()?;
        if p.scopes.allows(Action::Sandbox) {
            return Ok(Reach::All);
        }
        authorize(p, Action::Use(Area::Webhooks, level), Target::Service)
            .map_err(|d| ApiError::denied(d, "sink", ""))?;
        Ok(Reach::Account {
            account: p.account_id.clone(),
            company: p.company_scope.clone(),
        })
    }

    fn reaches(&self, r: &Received) -> bool {
        match self {
            Reach::All => true,
            Reach::Account { account, company } => {
                &r.account_id == account && company.as_ref().is_none_or(|c| &r.company_id == c)
            }
        }
    }
}

/// What a sink kept for the caller, newest first (at most 100 per account).
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SandboxSinkDeliveries")]
struct Listing {
    #[schemars(extend("const" = "list"))]
    object: &'static str,
    /// The sink's name.
    sink: String,
    data: Vec<Received>,
    /// Always false: everything kept is on this page.
    #[schemars(extend("const" = false))]
    has_more: bool,
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let sink = name(ctx)?;
    let reach = Reach::of(ctx, Level::Read)?;
    let sinks = sinks(ctx.app)?;
    let state = lock(&sinks)?;
    let mut data: Vec<Received> = state
        .by_sink
        .iter()
        .filter(|((_, n), _)| n == &sink)
        .flat_map(|(_, kept)| kept.iter())
        .filter(|r| reach.reaches(r))
        .cloned()
        .collect();
    // Newest first across accounts: ids are numbered in arrival order.
    data.sort_by(|a, b| b.id.cmp(&a.id));
    Ok(Response::ok(&Listing {
        object: "list",
        sink,
        data,
        has_more: false,
    }))
}

fn clear(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let sink = name(ctx)?;
    let reach = Reach::of(ctx, Level::Write)?;
    let sinks = sinks(ctx.app)?;
    let mut state = lock(&sinks)?;
    for ((_, n), kept) in state.by_sink.iter_mut() {
        if n == &sink {
            kept.retain(|r| !reach.reaches(r));
        }
    }
    state.by_sink.retain(|_, kept| !kept.is_empty());
    Ok(Response::no_content())
}
