//! Streamable HTTP at `/mcp`: `POST` carries one JSON-RPC message (or, on 2025-03-26 only, a
//! batch); `DELETE` ends a session; `GET` is 405 (no server-initiated stream is offered).
//!
//! The order of checks on every request: `Origin` and `Host` (403, against DNS rebinding), the
//! credential (401, the REST rendering with `WWW-Authenticate`; a session never authenticates),
//! `Content-Type` (415), `Accept` (406), then the protocol version and session (400/404), and only
//! then the message. A notification or response is answered `202` with no body; a request gets
//! `application/json`, or a one-event `text/event-stream` when the client prefers that.
//!
//! Decisions left open by the specifications:
//! - A session is optional: a handshake-era request without `Mcp-Session-Id` is served statelessly
//!   (its version from `MCP-Protocol-Version`, else 2025-03-26). Sessions only fix the negotiated
//!   version; all state that matters (pending changes) is bound to the credential instead.
//! - Batches are served for 2025-03-26 (which requires receiving them) and refused with -32600 for
//!   2025-06-18 and later, and for 2026-07-28, which removed them. `initialize` is never batched.
//!   A batch holds at most `mcp.max_batch_messages` (counted before it is parsed), and the replies
//!   of one POST stay within `mcp.max_response_bytes` (see `batch`).
//! - Every authenticated answer carries the caller's `RateLimit` headers, read without spending: the
//!   envelope is not a credential operation, each tool call inside it is (and spends a token).
//! - The 2026-07-28 envelope errors use that revision's HTTP statuses (400 for header mismatch,
//!   unsupported version and invalid params, 404 for an unknown method); handshake-era JSON-RPC
//!   errors to well-formed requests are 200, malformed messages 400.

use super::call::Caller;
use super::dispatch;
use super::protocol::{self, RpcError};
use super::reply::Out;
use super::sessions::Lookup;
use super::state::state;
use crate::auth::authenticate::authenticate;
use crate::http::{ApiError, Ctx, Response};
use hyper::{HeaderMap, StatusCode};
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Sse,
}

/// The response format the client prefers: the highest `q`, then the first listed. No `Accept`
/// (or `*/*`) means JSON; `None` when neither JSON nor an event stream is acceptable.
pub fn negotiate(accept: Option<&str>) -> Option<Format> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Some(Format::Json);
    };
    let mut best: Option<(f32, Format)> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        if q <= 0.0 {
            continue;
        }
        let format = match media.as_str() {
            "application/json" | "application/*" | "*/*" => Format::Json,
            "text/event-stream" | "text/*" => Format::Sse,
            _ => continue,
        };
        if best.is_none_or(|(bq, _)| q > bq) {
            best = Some((q, format));
        }
    }
    best.map(|(_, f)| f)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn json_response(status: u16, body: String) -> Response {
    Response::new(
        StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
        "application/json",
        body,
    )
    .with_header("cache-control", "no-store")
}

fn refusal(status: u16, id: Option<&Value>, code: i64, message: String) -> Response {
    json_response(
        status,
        protocol::error_response(id, &RpcError::new(code, message)).to_string(),
    )
}

/// A browser page on another site, or a DNS-rebound name pointing at our loopback address, must
/// not reach the server: the rule every route keeps ([`crate::http::site`]), with the origins of
/// `mcp.allowed_origins` allowed besides, answered in JSON-RPC's shape.
fn guard(ctx: &Ctx<'_>) -> Option<Response> {
    let settings = &ctx.app.settings;
    let refused =
        crate::http::site::check(settings, ctx.headers, &settings.mcp_allowed_origins).err()?;
    let message = match &refused {
        crate::http::site::Refusal::Origin(origin) => format!(
            "Origin `{}` is not allowed to use this MCP server (see `mcp.allowed_origins`).",
            protocol::shorten(origin)
        ),
        crate::http::site::Refusal::Host(_) => refused.detail(),
    };
    Some(refusal(403, None, protocol::SERVER_REFUSED, message))
}

fn is_json_content_type(headers: &HeaderMap) -> bool {
    match header(headers, "content-type") {
        None => true,
        Some(ct) => {
            let essence = ct
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            essence == "application/json" || essence.ends_with("+json")
        }
    }
}

/// True when the body holds at least one request (something that needs an answer).
fn has_request(body: &Value) -> bool {
    let is_request = |m: &Value| m.get("method").is_some() && m.get("id").is_some();
    match body {
        Value::Array(items) => items.iter().any(is_request),
        other => is_request(other),
    }
}

fn frame(out: Option<Out>, format: Format, request_id: &str) -> Response {
    let Some(out) = out else {
        return Response {
            status: StatusCode::ACCEPTED,
            headers: HeaderMap::new(),
            body: bytes::Bytes::new(),
            delivery: Default::default(),
        };
    };
    let mut resp = if let Some(stream) = out.stream {
        let mut r = Response::new(StatusCode::OK, "text/event-stream", bytes::Bytes::new())
            .with_header("cache-control", "no-cache")
            .with_header("x-accel-buffering", "no");
        r.delivery.stream = Some(stream);
        r
    } else if out.status == 200 && format == Format::Sse {
        let mut body = super::sse::priming(request_id);
        body.push_str(&super::sse::message(request_id, 1, &out.body));
        Response::new(StatusCode::OK, "text/event-stream", body)
            .with_header("cache-control", "no-cache")
            .with_header("x-accel-buffering", "no")
    } else {
        json_response(out.status, out.body)
    };
    if let Some(session) = out.session {
        resp.set_header("mcp-session-id", &session);
    }
    resp
}

/// The modern era is chosen by a 2026-07-28 version header, the per-request `_meta` version, or
/// `server/discover`. An `initialize` is the handshake era's unless it carries one of the first
/// two: then it is a modern request for a method 2026-07-28 removed (404, Method not found, as
/// the conformance suite's `sep-2575` checks), never a session opened on an older version.
/// A plain `initialize` asking for 2026-07-28 is negotiated down to 2025-11-25 (lifecycle:
/// the server answers a version it speaks in that era).
fn is_modern(body: &Value, header_version: Option<&str>) -> bool {
    let method = body.get("method").and_then(Value::as_str);
    header_version.is_some_and(|v| protocol::known_modern(v).is_some())
        || method == Some("server/discover")
        || body
            .get("params")
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(protocol::META_PROTOCOL_VERSION))
            .is_some()
}

pub fn post(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    if let Some(refused) = guard(ctx) {
        return Ok(refused);
    }
    let app = ctx.app;
    let principal = match ctx.credential.take() {
        Some(p) => p,
        None => authenticate(ctx.db, &app.jwt, &app.principals, ctx.headers)?,
    };
    crate::http::observe::authenticated(app, ctx.exchange, &principal);
    let actor = principal.actor_id().to_string();
    let mut resp = answer(ctx, principal);
    // The envelope spends no token (each tool call did, as its own request); the headers show
    // what the calls left.
    if let Some(q) = app.rate_limiter.peek(&actor) {
        app.rate_limiter.set_headers(&q, &mut resp);
    }
    Ok(resp)
}

/// Everything after authentication.
fn answer(ctx: &mut Ctx<'_>, principal: crate::auth::Principal) -> Response {
    let app = ctx.app;
    if !is_json_content_type(ctx.headers) {
        return refusal(
            415,
            None,
            protocol::INVALID_REQUEST,
            "Send the JSON-RPC message with `Content-Type: application/json`.".into(),
        );
    }
    let max_batch = app.settings.mcp_max_batch_messages;
    if let Some(n) = protocol::batch_len(&ctx.body).filter(|n| *n > max_batch) {
        return refusal(
            400,
            None,
            protocol::INVALID_REQUEST,
            format!("This batch holds {n} messages; a batch may hold at most {max_batch} (mcp.max_batch_messages). Nothing was run: split it into smaller batches."),
        );
    }
    // The same strict parse as REST bodies: a member named twice is refused, never "last wins".
    let body: Value = match crate::http::json::from_slice(&ctx.body) {
        Ok(v) => v,
        Err(crate::http::json::JsonError::Syntax(e)) => {
            return refusal(
                400,
                None,
                protocol::PARSE_ERROR,
                format!("Parse error: the body is not JSON ({e})."),
            )
        }
        Err(dup) => return refusal(400, None, protocol::INVALID_REQUEST, dup.to_string()),
    };
    let first_id = body.get("id");
    // Several Accept lines are one list (RFC 9110, 5.3).
    let accept: Vec<&str> = ctx
        .headers
        .get_all(hyper::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let accept = accept.join(",");
    let Some(format) = negotiate(Some(&accept)) else {
        if has_request(&body) {
            return refusal(
                406,
                first_id,
                protocol::INVALID_REQUEST,
                "Accept must allow application/json or text/event-stream.".into(),
            );
        }
        return frame(None, Format::Json, ctx.request_id);
    };
    let header_version = header(ctx.headers, "mcp-protocol-version");
    if let Some(v) = header_version {
        if protocol::known_legacy(v).is_none() && protocol::known_modern(v).is_none() {
            let e = RpcError::unsupported_version(v);
            return json_response(400, protocol::error_response(first_id, &e).to_string());
        }
    }
    let mut caller = Caller::new(principal, ctx);
    caller.accepts_sse = accept.to_ascii_lowercase().contains("text/event-stream");
    caller.view = match super::toolsets::View::from_headers(ctx.headers) {
        Ok(view) => view,
        Err(msg) => return refusal(400, first_id, protocol::INVALID_PARAMS, msg),
    };

    if is_modern(&body, header_version) {
        if body.is_array() {
            return refusal(
                400,
                None,
                protocol::INVALID_REQUEST,
                "Protocol 2026-07-28 takes one JSON-RPC message per POST; batches are not part of it.".into(),
            );
        }
        caller.version = protocol::MODERN_VERSIONS[0];
        caller.features = super::sessions::ClientFeatures::from_capabilities(
            &body["params"]["_meta"][protocol::META_CLIENT_CAPABILITIES],
        );
        return frame(
            dispatch::modern(app, &caller, &body, ctx.headers),
            format,
            ctx.request_id,
        );
    }

    let is_initialize = body.get("method").and_then(Value::as_str) == Some("initialize");
    let version = match header(ctx.headers, "mcp-session-id").filter(|_| !is_initialize) {
        Some(sid) => {
            let p = &caller.principal;
            match state(app)
                .sessions
                .touch(sid, p.actor_id(), p.client_id(), ctx.now())
            {
                // A supported version header that differs from the negotiated one is tolerated (the
                // conformance suite sends 2025-03-26 inside a 2025-11-25 session); the session keeps
                // its negotiated version. Unsupported versions were refused above.
                Lookup::Found(v) => {
                    caller.features = state(app).sessions.features(sid);
                    caller.session = Some(sid.to_string());
                    v
                }
                Lookup::NotFound => {
                    return refusal(
                        404,
                        first_id,
                        protocol::SESSION_NOT_FOUND,
                        "Session not found: it ended, expired, or belongs to another credential. Start a new one with initialize.".into(),
                    )
                }
            }
        }
        None => header_version
            .and_then(protocol::known_legacy)
            .unwrap_or(protocol::DEFAULT_VERSION),
    };

    caller.version = version;
    let out = match &body {
        Value::Array(items) => {
            if !protocol::allows_batches(version) {
                return refusal(
                    400,
                    None,
                    protocol::INVALID_REQUEST,
                    format!("JSON-RPC batches were removed in protocol 2025-06-18 and this request speaks {version}: send one message per POST."),
                );
            }
            if items.is_empty() {
                return refusal(
                    400,
                    None,
                    protocol::INVALID_REQUEST,
                    "An empty batch is not a valid request.".into(),
                );
            }
            batch(app, &caller, items, version)
        }
        single => dispatch::legacy(app, &caller, single, version, false),
    };
    frame(out, format, ctx.request_id)
}

/// Runs a batch in order within the response budget of one POST (`mcp.max_response_bytes`): a
/// reply that does not fit in what is left is replaced by a short error, and once the budget is
/// spent every remaining request is answered with a short error without being run. The body is
/// built as it goes, so it never holds more than the budget plus one short error per message.
fn batch(
    app: &crate::http::App,
    caller: &Caller,
    items: &[Value],
    version: &'static str,
) -> Option<Out> {
    let cap = app.settings.mcp_max_response_bytes;
    let mut body = String::from("[");
    let mut spent = false;
    for m in items {
        let id = match protocol::classify(m) {
            protocol::Message::Request { id, .. } => Some(id),
            _ => None,
        };
        let reply = match id {
            Some(id) if spent => Some(dispatch::over_budget(id, cap, false).body),
            _ => dispatch::legacy(app, caller, m, version, true).map(|o| o.body),
        };
        let Some(mut reply) = reply else { continue };
        // The reply, a comma and the closing bracket must fit.
        if !spent && body.len() + reply.len() + 2 > cap {
            spent = true;
            if let Some(id) = id {
                reply = dispatch::over_budget(id, cap, true).body;
            }
        }
        if body.len() > 1 {
            body.push(',');
        }
        body.push_str(&reply);
    }
    body.push(']');
    (body.len() > 2).then_some(Out {
        status: 200,
        body,
        session: None,
        stream: None,
    })
}

pub fn delete(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    if let Some(refused) = guard(ctx) {
        return Ok(refused);
    }
    let principal = match ctx.credential.take() {
        Some(p) => p,
        None => authenticate(ctx.db, &ctx.app.jwt, &ctx.app.principals, ctx.headers)?,
    };
    let mut resp = end_session(ctx, &principal);
    if let Some(q) = ctx.app.rate_limiter.peek(principal.actor_id()) {
        ctx.app.rate_limiter.set_headers(&q, &mut resp);
    }
    Ok(resp)
}

/// Ends the caller's session named by `Mcp-Session-Id`.
fn end_session(ctx: &Ctx<'_>, principal: &crate::auth::Principal) -> Response {
    let Some(sid) = header(ctx.headers, "mcp-session-id") else {
        return refusal(
            400,
            None,
            protocol::INVALID_REQUEST,
            "Send the `Mcp-Session-Id` of the session to end.".into(),
        );
    };
    if state(ctx.app)
        .sessions
        .end(sid, principal.actor_id(), principal.client_id())
    {
        Response::no_content()
    } else {
        refusal(
            404,
            None,
            protocol::SESSION_NOT_FOUND,
            "Session not found: it ended, expired, or belongs to another credential.".into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_negotiation() {
        assert_eq!(negotiate(None), Some(Format::Json));
        assert_eq!(
            negotiate(Some("application/json, text/event-stream")),
            Some(Format::Json)
        );
        assert_eq!(
            negotiate(Some("text/event-stream, application/json")),
            Some(Format::Sse)
        );
        assert_eq!(negotiate(Some("text/event-stream")), Some(Format::Sse));
        assert_eq!(
            negotiate(Some("application/json;q=0.5, text/event-stream")),
            Some(Format::Sse)
        );
        assert_eq!(negotiate(Some("*/*")), Some(Format::Json));
        assert_eq!(negotiate(Some("text/html")), None);
        assert_eq!(negotiate(Some("application/json;q=0")), None);
    }
}
