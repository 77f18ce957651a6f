//! What the pipeline tells an observer about every request it served: the hook through which
//! the sandbox's request journal (`crate::sandbox::journal`, above http) sees the traffic without
//! the platform importing it. `app::App::build` installs the observer in [`App::extensions`]
//! ([`Observers`]); with none installed, nothing here costs more than one map lookup.
//!
//! The observation is raw (the query string, the body bytes, the problem body): it is handed over
//! as it is, cheaply (`Bytes` are reference-counted), and the observer redacts it off the
//! request's thread. A REST request is one observation. An MCP tool call is one observation naming
//! the tool ([`tool_call`]): the REST requests it makes inside are folded into it, and the `/mcp`
//! HTTP request that carried tool calls adds none of its own.

use super::exchange::Exchange;
use super::faults::Via;
use super::observation::Who;
use super::response::Response;
use super::router::Route;
use super::state::App;
use crate::auth::authenticate::Owner;
use crate::auth::Principal;
use bytes::Bytes;
use hyper::header::HeaderName;
use hyper::{HeaderMap, Method};
use std::sync::Arc;
use std::time::Instant;

pub use super::observation::{Observation, Text};

/// Receives every observation; must return at once (hand the work to another thread).
pub trait Observer: Send + Sync {
    fn observe(&self, observation: Observation);

    /// Writes what is still queued: the server is stopping.
    fn flush(&self) {}
}

/// Tells the installed observer the server is stopping (a graceful stop loses nothing queued).
pub fn stopping(app: &App) {
    if let Some(obs) = observer(app) {
        obs.0.flush();
    }
}

/// The installed observer, kept in [`App::extensions`].
#[derive(Clone)]
pub struct Observers(pub Arc<dyn Observer>);

fn observer(app: &App) -> Option<&Observers> {
    app.extensions.get::<Observers>()
}

/// A route that authenticates for itself (`/mcp`) says who the caller is, so its envelope is
/// journaled for that account.
pub fn authenticated(app: &App, exchange: &Exchange, principal: &Principal) {
    if observer(app).is_some() {
        *exchange.endpoint_caller.borrow_mut() = Some(Who::of(principal));
    }
}

// Named once: a lookup by `&str` parses the name on every request.
const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");
const FAULT: HeaderName = HeaderName::from_static(super::faults::HEADER);
const API_KEY: HeaderName = HeaderName::from_static(crate::auth::authenticate::API_KEY_HEADER);
/// The header a test harness tags its requests with, journaled as `test_name`.
pub const TEST_NAME_HEADER: &str = "signage-test-name";
const TEST_NAME: HeaderName = HeaderName::from_static(TEST_NAME_HEADER);

/// A header's value, its first 255 bytes (`to_str` admits visible ASCII only, so any cut falls
/// between characters).
fn header_text(value: &hyper::header::HeaderValue) -> Option<Text> {
    value
        .to_str()
        .ok()
        .map(|s| Text::new(&s[..s.len().min(255)]))
}

/// What the journal reads of a request's headers. Read in one pass over the handful a request
/// carries: a lookup by name hashes the name, and four of them cost more than the walk.
struct RequestHeaders {
    idempotency_key: Option<Text>,
    /// Which credential was presented: `none`, `api_key` or `bearer`.
    credentials: &'static str,
    if_match: bool,
    if_match_any: bool,
    content_type: Option<Text>,
    test_name: Option<Text>,
}

#[inline(never)]
fn request_headers(headers: &HeaderMap) -> RequestHeaders {
    let mut out = RequestHeaders {
        idempotency_key: None,
        credentials: "none",
        if_match: false,
        if_match_any: false,
        content_type: None,
        test_name: None,
    };
    let (mut api_key, mut bearer) = (false, false);
    // A repeated header: its first value counts, as `HeaderMap::get` would give it.
    for (name, value) in headers {
        if name == IDEMPOTENCY_KEY {
            if out.idempotency_key.is_none() {
                out.idempotency_key = header_text(value);
            }
        } else if name == hyper::header::CONTENT_TYPE {
            if out.content_type.is_none() {
                out.content_type = header_text(value);
            }
        } else if name == hyper::header::IF_MATCH {
            out.if_match = true;
            out.if_match_any |= value.as_bytes().trim_ascii() == b"*";
        } else if name == TEST_NAME {
            if out.test_name.is_none() {
                out.test_name = header_text(value);
            }
        } else if name == API_KEY {
            api_key = true;
        } else if name == hyper::header::AUTHORIZATION {
            bearer = true;
        }
    }
    out.credentials = if api_key {
        "api_key"
    } else if bearer {
        "bearer"
    } else {
        "none"
    };
    out
}

/// What the journal reads of an answer's headers, in one pass.
struct ResponseHeaders {
    replayed: bool,
    fault: Option<Text>,
    retry_after: Option<u32>,
}

#[inline(never)]
fn response_headers(headers: &HeaderMap) -> ResponseHeaders {
    let mut out = ResponseHeaders {
        replayed: false,
        fault: None,
        retry_after: None,
    };
    for (name, value) in headers {
        if name == hyper::header::RETRY_AFTER {
            if out.retry_after.is_none() {
                out.retry_after = value.to_str().ok().and_then(|v| v.trim().parse().ok());
            }
        } else if name == FAULT {
            if out.fault.is_none() {
                out.fault = header_text(value);
            }
        } else if name == IDEMPOTENT_REPLAYED {
            out.replayed = true;
        }
    }
    out
}

/// Tells the observer about a request the pipeline served. `via` is [`Via::Mcp`] for the REST
/// requests of a tool call: those are folded into the tool call's one observation. `owner` names
/// the holder of a refused credential that proved itself; any other request that did not
/// authenticate is nobody's (no account's ring, no verdict).
#[allow(clippy::too_many_arguments)]
pub fn request(
    app: &App,
    req: &super::request::Request,
    route: Option<&Route>,
    principal: Option<&Principal>,
    owner: Option<&Owner>,
    resp: &Response,
    started: Instant,
    via: Via,
    exchange: &Exchange,
) {
    let Some(obs) = observer(app) else { return };
    if via == Via::Rest && exchange.tool_entries.replace(0) > 0 {
        // The `/mcp` envelope of tool calls: each call is its own entry.
        exchange.endpoint_caller.borrow_mut().take();
        return;
    }
    let endpoint = if principal.is_none() && via == Via::Rest {
        exchange.endpoint_caller.borrow_mut().take()
    } else {
        None
    };
    let status = resp.status.as_u16();
    // A tool call's REST request: [`tool_call`] replaces who, when and what was sent with the
    // call's own, so none of it is copied here.
    let inner = via == Via::Mcp;
    let Who {
        account_id,
        company_id,
        key_id,
        client_id,
    } = match (principal, endpoint) {
        (Some(_), _) if inner => Who::default(),
        (Some(p), _) => Who::of(p),
        (None, Some(who)) => who,
        // A public route that served its purpose (health, the document, a scan) is nobody's.
        (None, None) if status < 400 => return,
        (None, None) => owner.map(Who::of_owner).unwrap_or_default(),
    };
    let list = route.is_some_and(is_list);
    let sent = request_headers(&req.headers);
    let answered = response_headers(&resp.headers);
    let observation = Observation {
        account_id,
        company_id,
        key_id,
        client_id,
        // A tool call's clocks are its own: three clock reads saved on every call.
        at_ms: if inner { 0 } else { app.clock().now_millis() },
        duration_us: if inner { 0 } else { elapsed_us(started) },
        // When it started: the wait of a client is from one request's start to the next's.
        wall_ms: if inner {
            0
        } else {
            wall_millis().saturating_sub(i64::try_from(started.elapsed().as_millis()).unwrap_or(0))
        },
        path: Text::new(&req.path),
        method: req.method.clone(),
        route: route.map(|r| r.path),
        operation_id: route.map(|r| r.operation_id),
        // A create the readiness report asks an `Idempotency-Key` of: it answers 201, honours the
        // key, and could happen twice.
        creates: route.is_some_and(|r| r.success.0 == 201 && r.idempotent && r.once_only.is_none()),
        list,
        status,
        request_id: Text::new(&req.request_id),
        idempotency_key: sent.idempotency_key,
        replayed: answered.replayed,
        fault: answered.fault,
        retry_after: answered.retry_after,
        // The `/mcp` endpoint's own messages (initialize, tools/list, ...) came through MCP too.
        via: if route.is_some_and(|r| r.path.starts_with("/mcp")) {
            "mcp"
        } else {
            "rest"
        },
        tool: None,
        // A tool call's REST request carries no credential of its own: [`tool_call`] names the
        // call's.
        credentials: if inner { "none" } else { sent.credentials },
        if_match: sent.if_match,
        if_match_any: sent.if_match_any,
        // A tool call's REST request carries its `/mcp` request's headers: the tag is the call's.
        test_name: sent.test_name,
        hangup: req.hangup.clone(),
        query: if inner {
            Text::new("")
        } else {
            Text::new(&req.query)
        },
        body: req.body.clone(),
        body_sent: req
            .spool
            .as_ref()
            .map_or(req.body.len(), |s| s.len() as usize),
        body_type: if inner { None } else { sent.content_type },
        response: if status >= 400 {
            resp.body.clone()
        } else {
            Bytes::new()
        },
        next_cursor: if list && status == 200 {
            next_cursor(&resp.body)
        } else {
            None
        },
    };
    if via == Via::Mcp {
        if let Some(call) = exchange.tool_call.borrow_mut().as_mut() {
            *call = Some(observation);
        }
        return;
    }
    obs.0.observe(observation);
}

/// The `next_cursor` of a list page: the body ends with it (`Response::page` writes it last), so
/// only its last bytes are read: the closing quote of the cursor, the opening one, and the member
/// name before it.
fn next_cursor(page: &[u8]) -> Option<Text> {
    let marker = br#""next_cursor":""#;
    let end = page.iter().rposition(|&b| b == b'"')?;
    let start = page[..end].iter().rposition(|&b| b == b'"')? + 1;
    if !page[..start].ends_with(marker) {
        return None;
    }
    let cursor = std::str::from_utf8(&page[start..end]).ok()?;
    (cursor.len() <= 100
        && cursor
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.'))
    .then(|| Text::new(cursor))
}

/// The longest prefix of `s` of at most `cap` bytes that ends on a character boundary.
pub fn cut(s: &str, cap: usize) -> &str {
    if s.len() <= cap {
        return s;
    }
    let mut end = cap;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn elapsed_us(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

fn is_list(route: &Route) -> bool {
    route.method == Method::GET && route.query.iter().any(|q| q.name == "cursor")
}

/// Unix milliseconds of the wall clock (not the sandbox's).
pub fn wall_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Runs one MCP tool call `f` as one observation naming `tool`: the REST requests it makes are
/// folded into it (the last one gives the route, status and problem), `arguments` is its body.
/// `failed` tells a refused call (a JSON-RPC error or an `isError` result) from a success when
/// the call made no REST request. `exchange` is the HTTP request's that carries the call: its
/// REST requests run with it.
#[allow(clippy::too_many_arguments)]
pub fn tool_call<R>(
    app: &App,
    exchange: &Exchange,
    principal: &Principal,
    request_id: &str,
    tool: &str,
    arguments: impl FnOnce() -> Bytes,
    f: impl FnOnce() -> R,
    failed: impl FnOnce(&R) -> bool,
) -> R {
    let Some(obs) = observer(app) else {
        return f();
    };
    let started = Instant::now();
    let at_ms = app.clock().now_millis();
    let wall_ms = wall_millis();
    let previous = exchange.tool_call.borrow_mut().replace(None);
    let out = f();
    let call = std::mem::replace(&mut *exchange.tool_call.borrow_mut(), previous);
    let inner = call.flatten();
    // Only a call that made no REST request is judged by its answer (a scan of the body).
    let mut o = inner.unwrap_or_else(|| Observation {
        account_id: None,
        company_id: None,
        key_id: None,
        client_id: None,
        at_ms,
        wall_ms,
        path: Text::new("/mcp"),
        duration_us: 0,
        method: Method::POST,
        route: Some("/mcp"),
        operation_id: None,
        creates: false,
        list: false,
        status: if failed(&out) { 400 } else { 200 },
        request_id: Text::new(request_id),
        idempotency_key: None,
        replayed: false,
        fault: None,
        retry_after: None,
        via: "mcp",
        tool: None,
        credentials: "none",
        if_match: false,
        if_match_any: false,
        test_name: None,
        hangup: Default::default(),
        query: Text::new(""),
        body: Bytes::new(),
        body_sent: 0,
        body_type: None,
        response: Bytes::new(),
        next_cursor: None,
    });
    // The `/mcp` request that carries the call authenticated this very principal: its ids are
    // taken, not built again (its envelope adds no entry once a call is journaled).
    let who = exchange
        .endpoint_caller
        .borrow_mut()
        .take()
        .unwrap_or_else(|| Who::of(principal));
    o.account_id = who.account_id;
    o.company_id = who.company_id;
    o.key_id = who.key_id;
    o.client_id = who.client_id;
    o.at_ms = at_ms;
    o.wall_ms = wall_ms;
    o.duration_us = elapsed_us(started);
    if o.credentials == "none" {
        o.credentials = match principal.actor {
            crate::auth::principal::Actor::User { .. } => "bearer",
            crate::auth::principal::Actor::ApiKey { .. } => "api_key",
        };
    }
    o.via = "mcp";
    o.tool = Some(Text::new(cut(tool, 100)));
    o.query = Text::new("");
    o.body = arguments();
    o.body_sent = o.body.len();
    o.body_type = Some(Text::new("application/json"));
    exchange.tool_entries.set(exchange.tool_entries.get() + 1);
    obs.0.observe(o);
    out
}

#[cfg(test)]
mod tests {
    use super::{cut, next_cursor, Text};

    #[test]
    fn a_cut_ends_on_a_character_boundary() {
        assert_eq!(cut("aé", 2), "a");
        assert_eq!(cut("abc", 5), "abc");
    }

    #[test]
    fn text_is_inline_up_to_its_bound_and_whole_beyond() {
        assert_eq!(std::mem::size_of::<Text>(), 48);
        let id = "req_0123456789abcdef01234567";
        assert!(matches!(Text::new(id), Text::Inline { .. }));
        assert_eq!(Text::new(id).as_str(), id);
        let exact = "é".repeat(Text::INLINE / 2);
        assert!(matches!(Text::new(&exact), Text::Inline { .. }));
        assert_eq!(&*Text::new(&exact), exact);
        let long = "x".repeat(Text::INLINE + 1);
        assert!(matches!(Text::new(&long), Text::Heap(_)));
        assert_eq!(Text::new(&long).as_str(), long);
        assert_eq!(Text::new(""), Text::new(""));
    }

    #[test]
    fn no_cursor_is_read_from_what_is_not_a_page_ending_with_one() {
        assert_eq!(next_cursor(b""), None);
        assert_eq!(next_cursor(br#"""#), None);
        assert_eq!(next_cursor(br#"{"next_cursor":"a b"}"#), None);
        assert_eq!(next_cursor(br#"{"other":"dev_1"}"#), None);
        assert_eq!(
            next_cursor(br#"{"next_cursor":"dev_1"}"#).as_deref(),
            Some("dev_1")
        );
    }

    #[test]
    fn the_cursor_is_read_from_the_end_of_a_page() {
        assert_eq!(
            next_cursor(br#"{"object":"list","data":[],"has_more":true,"next_cursor":"dev_12"}"#)
                .as_deref(),
            Some("dev_12")
        );
        assert_eq!(
            next_cursor(br#"{"object":"list","data":[],"has_more":false,"next_cursor":null}"#),
            None
        );
    }
}
