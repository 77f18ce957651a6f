//! A tool call: each becomes an internal REST request through [`crate::http::pipeline::execute`]
//! with the caller's own credential headers, so the same router, scope check and handlers decide
//! what happens. Nothing here decides a permission or holds a credential.
//!
//! What every layer of a call shares: the [`Caller`], REST paths and query values, and a REST
//! answer as a tool's content or failure. Running a call by its tool's kind is `tools/call`'s
//! ([`super::dispatch`]). This file imports no sibling but the leaves [`super::failure`],
//! [`super::protocol`], [`super::sessions`] and [`super::toolsets`].

use super::failure::Failure;
use crate::auth::Principal;
use crate::http::exchange::Exchange;
use crate::http::pipeline::{self, Request};
use crate::http::response::Response;
use crate::http::Ctx;
use crate::random::Seeded;
use crate::time::Clock;
use bytes::Bytes;
use hyper::{HeaderMap, Method};
use serde_json::{Map, Value};
use std::net::IpAddr;

/// Who is calling, and the credential headers every internal request carries.
/// How an internal request writes: the version it must match (`If-Match`), whether it is a
/// preview (a dry run: every check, nothing kept, no webhook sent), and the token balance a
/// confirmed change expects.
#[derive(Debug, Clone, Default)]
pub struct WriteTerms<'a> {
    pub if_match: Option<&'a str>,
    pub dry_run: bool,
    /// A preview made later: its time reads this much after the clock (seconds).
    pub later_secs: i64,
    pub expected_balance: Option<crate::db::ExpectedBalance>,
}

impl<'a> WriteTerms<'a> {
    /// A preview of the write: run as a dry run, matching `if_match`.
    pub fn preview(if_match: Option<&'a str>) -> WriteTerms<'a> {
        WriteTerms {
            if_match,
            dry_run: true,
            later_secs: 0,
            expected_balance: None,
        }
    }
}

pub struct Caller<'x> {
    pub principal: Principal,
    /// `Authorization` / `X-API-KEY` and `X-Service-Client-Id`, copied from the MCP request.
    pub headers: HeaderMap,
    pub request_id: String,
    pub peer: Option<IpAddr>,
    /// The toolsets, read-only mode and schema detail this request asked for.
    pub view: super::toolsets::View,
    /// The protocol version this request speaks (what content it may be sent).
    pub version: &'static str,
    /// What the client can do (its session's, or this request's on 2026-07-28).
    pub features: super::sessions::ClientFeatures,
    /// The `Mcp-Session-Id` this request belongs to, if any.
    pub session: Option<String>,
    /// The client reads an event stream as the answer (`Accept`).
    pub accepts_sse: bool,
    /// The rate-limit token of the next REST request is spent already: a tool call pays for its
    /// first request when it arrives ([`crate::mcp::dispatch`]).
    pub prepaid: std::sync::atomic::AtomicBool,
    /// The state of the HTTP request that carries the calls: each internal request runs with it.
    pub exchange: &'x Exchange,
    /// How the MCP request itself writes (its pending changes, their claims and expiries): the
    /// intent of the MCP request's context. Its tool calls' requests write on their own terms.
    pub intent: crate::db::WriteIntent,
    /// The app's clock: the time of the MCP request (its sessions, pending changes, questions).
    pub clock: &'x Clock,
    /// The app's seeded generator in a seeded sandbox: the MCP request's own draws (confirmation,
    /// question and session ids).
    pub seeded: Option<&'x Seeded>,
    /// The database as the MCP request sees it (its read scope): the MCP request's own reads and
    /// writes, and each internal request, go through it.
    pub db: crate::db::Scoped<'x>,
}

impl<'x> Caller<'x> {
    /// The caller of the MCP request `ctx` authenticated as `principal`: its credential headers,
    /// request id, peer, exchange, write intent, and its app's clock and generator.
    pub fn new(principal: Principal, ctx: &Ctx<'x>) -> Caller<'x> {
        let mcp_headers = ctx.headers;
        let mut headers = HeaderMap::with_capacity(4);
        for name in [
            hyper::header::AUTHORIZATION.as_str(),
            crate::auth::authenticate::API_KEY_HEADER,
            crate::auth::authenticate::CLIENT_ID_HEADER,
        ] {
            if let Some(v) = mcp_headers.get(name) {
                if let Ok(n) = hyper::header::HeaderName::from_bytes(name.as_bytes()) {
                    headers.insert(n, v.clone());
                }
            }
        }
        Caller {
            principal,
            headers,
            request_id: ctx.request_id.to_string(),
            peer: ctx.peer,
            view: Default::default(),
            version: super::protocol::DEFAULT_VERSION,
            features: Default::default(),
            session: None,
            accepts_sse: false,
            prepaid: Default::default(),
            exchange: ctx.exchange,
            intent: ctx.intent.clone(),
            clock: ctx.clock(),
            seeded: ctx.seeded(),
            db: ctx.db,
        }
    }

    /// The MCP request's time in Unix seconds: the app's clock, as its context reads it.
    pub fn now(&self) -> i64 {
        (self.clock.now_millis() + self.intent.later_ms).div_euclid(1000)
    }

    /// Runs one REST request through the pipeline as this caller (a body is JSON).
    pub fn rest(
        &self,
        app: &crate::http::App,
        method: Method,
        path: String,
        query: String,
        body: Option<Vec<u8>>,
        if_match: Option<&str>,
    ) -> Response {
        let body = body.map(|b| (b, "application/json"));
        let terms = WriteTerms {
            if_match,
            ..WriteTerms::default()
        };
        self.rest_typed(app, method, path, query, body, terms)
    }

    /// Runs one REST request through the pipeline as this caller, with a body of its own type,
    /// its writes made on `terms`.
    pub fn rest_typed(
        &self,
        app: &crate::http::App,
        method: Method,
        path: String,
        query: String,
        body: Option<(Vec<u8>, &str)>,
        terms: WriteTerms<'_>,
    ) -> Response {
        let WriteTerms {
            if_match,
            dry_run,
            later_secs,
            expected_balance,
        } = terms;
        let mut headers = self.headers.clone();
        let body = body.map(|(bytes, content_type)| {
            if let Ok(v) = hyper::header::HeaderValue::from_str(content_type) {
                headers.insert(hyper::header::CONTENT_TYPE, v);
            }
            bytes
        });
        if let Some(tag) = if_match.and_then(|t| hyper::header::HeaderValue::from_str(t).ok()) {
            headers.insert(hyper::header::IF_MATCH, tag);
        }
        // The MCP request this call belongs to authenticated these very headers as `principal`.
        let prepaid = self
            .prepaid
            .swap(false, std::sync::atomic::Ordering::Relaxed);
        pipeline::execute_as(
            app,
            &Request {
                method,
                path,
                query,
                headers,
                body: body.map(Bytes::from).unwrap_or_default(),
                peer: self.peer,
                request_id: self.request_id.clone(),
                credential: Default::default(),
                spool: None,
                dry_run,
                later_ms: later_secs.saturating_mul(1000),
                expected_balance,
                // A tool call's REST request: the `/mcp` request around it is the one answered.
                hangup: Default::default(),
            },
            &self.principal,
            prepaid,
            self.exchange,
            self.db,
        )
    }
}

/// The query string of a route's parameters found among a tool's arguments (`a=1&b=x`), each
/// scalar encoded; arguments the route takes no parameter for are left out.
pub fn query_of(params: &[crate::http::router::QueryParam], args: &Map<String, Value>) -> String {
    let mut query = String::new();
    for q in params {
        if let Some(v) = args.get(q.name).and_then(scalar) {
            if !query.is_empty() {
                query.push('&');
            }
            query.push_str(q.name);
            query.push('=');
            encode(&v, &mut query);
        }
    }
    query
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub fn encode(s: &str, out: &mut String) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// A scalar argument as a query-string value.
pub(super) fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Some(i.to_string()),
            (_, Some(u), _) => Some(u.to_string()),
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some((f as i64).to_string()),
            (_, _, Some(f)) => Some(f.to_string()),
            _ => None,
        },
        _ => None,
    }
}

/// The REST path with the tool's path arguments substituted.
pub fn fill_path(pattern: &str, values: &[&str]) -> String {
    let mut out = String::with_capacity(pattern.len() + 32);
    let mut next = values.iter();
    for seg in pattern.split('/').filter(|s| !s.is_empty()) {
        out.push('/');
        if seg.starts_with('{') && seg.ends_with('}') {
            encode(next.next().copied().unwrap_or(""), &mut out);
        } else {
            out.push_str(seg);
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// A tool's structured content: a value, or a REST body passed on as it is (a JSON object).
pub enum Content {
    Value(Value),
    Json(Bytes),
}

/// A tool's outcome before framing: structured content, or a message for an `isError` result.
pub type Outcome = Result<Content, Failure>;

/// The failure of a tool whose route this server lacks.
pub(super) fn unavailable() -> Failure {
    Failure::new(
        "tool_unavailable",
        501,
        "This tool is not available on this server.",
    )
}

/// A string argument, or "" when it is missing.
pub(super) fn arg_str<'a>(args: &'a Map<String, Value>, name: &str) -> &'a str {
    args.get(name).and_then(Value::as_str).unwrap_or("")
}

/// A REST answer as a tool outcome: a JSON success body is the structured content; a problem
/// (or any failure) becomes a message naming the status, title and detail.
pub fn from_rest(resp: &Response) -> Result<Value, Failure> {
    if resp.status.is_success() {
        if resp.body.is_empty() {
            return Ok(super::envelope::to_json(&super::envelope::NoBody::of(
                resp.status.as_u16(),
            )));
        }
        return serde_json::from_slice::<Value>(&resp.body)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| {
                Failure::new(
                    "invalid_response",
                    502,
                    "The service returned a body that is not a JSON object.",
                )
            });
    }
    Err(Failure::rest(resp, problem_message(resp)))
}

pub fn problem_message(resp: &Response) -> String {
    let status = resp.status.as_u16();
    let Some(p) = resp.body_json().filter(Value::is_object) else {
        return format!(
            "HTTP {status} {}",
            resp.status.canonical_reason().unwrap_or("error")
        );
    };
    let title = p["title"].as_str().unwrap_or("Error");
    let mut msg = format!("HTTP {status} {title}");
    if let Some(detail) = p["detail"].as_str() {
        msg.push_str(": ");
        msg.push_str(detail);
    }
    if let Some(errors) = p["errors"].as_array() {
        for e in errors {
            msg.push_str(&format!(
                "\n- {} ({}): {}",
                e["field"].as_str().unwrap_or(""),
                e["code"].as_str().unwrap_or(""),
                e["message"].as_str().unwrap_or("")
            ));
        }
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_and_query_values_are_encoded() {
        assert_eq!(
            fill_path("/devices/{id}/ads", &["dev_1"]),
            "/devices/dev_1/ads"
        );
        assert_eq!(fill_path("/x/{id}", &["a/b c"]), "/x/a%2Fb%20c");
        let mut q = String::new();
        encode("a&b=ü", &mut q);
        assert_eq!(q, "a%26b%3D%C3%BC");
        assert_eq!(scalar(&json!(5.0)).as_deref(), Some("5"));
        assert_eq!(scalar(&json!(true)).as_deref(), Some("true"));
    }
}
