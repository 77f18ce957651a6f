//! JSON-RPC methods: `initialize`, `ping`, `tools/list`, `tools/call` (legacy era) and
//! `server/discover`, `tools/list`, `tools/call` (modern era, 2026-07-28).
//!
//! Errors follow the tools specification: an unknown tool or malformed `tools/call` params are
//! JSON-RPC errors (-32602); anything that goes wrong running a tool (invalid arguments, a refusal
//! of the REST API, a stale confirmation) is a tool result with `isError: true`, so the assistant
//! can read it and correct itself. Everything returned passes the redactor.
//!
//! - `handshake`: `initialize`, `server/discover`, and the 2026-07-28 per-request envelope.
//! - `tools`: `tools/list` (paged) and `tools/call` (checks, then the call and its result).
//! - `prompts`: `prompts/list` (paged) and `prompts/get`.
//!
//! Every message spends one rate-limit token of the caller's bucket, the same bucket as its REST
//! requests (issue 31: 905 full `tools/list` answers in 20 s cost nothing): a request refused so
//! is a JSON-RPC error `RATE_LIMITED` (-32029, `data.status` 429, `data.retry_after`); a
//! notification or response refused so is not processed, and a POST of one is answered HTTP 429.
//! `tools/call` spends its token in [`tools`] (it pays for the call's first REST request), so a
//! refused call is a tool error like any REST refusal it would have met. The token of
//! `resources/list`, `resources/read` and `completion/complete` pays for their first REST request
//! the same way.

mod handshake;
mod listing;
mod prompts;
mod tools;

use super::call::Caller;
use super::protocol::{self, Message, RpcError};
use super::reply::{err, ok, rpc_err, Out};
use super::{completion, elicitation, resources};
use crate::http::App;
use handshake::{discover, envelope, initialize};
use hyper::HeaderMap;
use serde_json::{json, Value};

pub use handshake::{capabilities, instructions};
pub use listing::page;
pub use tools::TOOLS_PAGE;

/// Spends one token of the caller's bucket: `Err(seconds to wait)` when it is empty.
fn spend(app: &App, caller: &Caller) -> Result<(), u64> {
    app.rate_limiter.spend(caller.principal.actor_id())
}

/// The answer to a request refused by the rate limit.
fn rate_limited(id: Option<&Value>, wait: u64, modern: bool) -> Out {
    let e = RpcError::new(
        protocol::RATE_LIMITED,
        format!("HTTP 429 Too many requests: this API key is over its rate limit; retry after {wait} seconds. Nothing was run."),
    )
    .with_data(json!({"reason": "rate_limited", "status": 429, "retry_after": wait}));
    let status = if modern || id.is_none() { 429 } else { 200 };
    err(id, e, status)
}

/// Runs a request whose token, spent when it arrived, pays for its first REST request (a
/// resource read, a completion's lookup), as a tool call's does: a request costs what its REST
/// requests cost, and one token when it makes none, so the `retry_after` of a refusal is when it
/// can run.
fn paid(caller: &Caller, f: impl FnOnce() -> Out) -> Out {
    caller
        .prepaid
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let out = f();
    caller
        .prepaid
        .store(false, std::sync::atomic::Ordering::Relaxed);
    out
}

/// A request spends its token here, except `tools/call` (in [`tools::call`]); `Some` is the
/// refusal to answer instead of running it.
fn refused_request(
    app: &App,
    caller: &Caller,
    id: &Value,
    method: &str,
    modern: bool,
) -> Option<Out> {
    if method == "tools/call" {
        return None;
    }
    spend(app, caller)
        .err()
        .map(|wait| rate_limited(Some(id), wait, modern))
}

/// A notification or response spends its token: `Err` is the answer when it is refused (HTTP 429
/// for a POST of one message; nothing inside a batch, where there is no place for it).
fn refused_message(app: &App, caller: &Caller, in_batch: bool) -> Result<(), Option<Out>> {
    match spend(app, caller) {
        Ok(()) => Ok(()),
        Err(_) if in_batch => Err(None),
        Err(wait) => Err(Some(rate_limited(None, wait, false))),
    }
}

/// A message of the handshake era. `None`: nothing to answer (notification or response).
pub fn legacy(
    app: &App,
    caller: &Caller,
    msg: &Value,
    version: &'static str,
    in_batch: bool,
) -> Option<Out> {
    let classified = protocol::classify(msg);
    match &classified {
        Message::Request { id, method, .. } => {
            if let Some(refused) = refused_request(app, caller, id, method, false) {
                return Some(refused);
            }
        }
        Message::Response | Message::Notification { .. } => {
            if let Err(answer) = refused_message(app, caller, in_batch) {
                return answer;
            }
        }
        Message::Invalid { .. } => {}
    }
    match classified {
        Message::Request { id, method, params } => Some(match method {
            "initialize" if in_batch => rpc_err(
                id,
                RpcError::new(
                    protocol::INVALID_REQUEST,
                    "initialize must not be part of a batch.",
                ),
                false,
            ),
            "initialize" => initialize(app, caller, id, params),
            "ping" => ok(id, json!({}), false),
            "tools/list" => tools::list(app, caller, id, params, false),
            "tools/call" => tools::call(app, caller, id, params, false),
            "prompts/list" => prompts::list(app, caller, id, params, false),
            "prompts/get" => prompts::get(app, caller, id, params, false),
            "resources/list" => paid(caller, || resources::list(app, caller, id, params, false)),
            "resources/templates/list" => resources::templates_list(id, false),
            "resources/read" => paid(caller, || resources::read(app, caller, id, params, false)),
            "completion/complete" => paid(caller, || completion::complete(app, caller, id, params, false)),
            _ => rpc_err(
                id,
                RpcError::new(
                    protocol::METHOD_NOT_FOUND,
                    format!(
                        "Method `{}` is not offered (protocol {version}); this server offers initialize, ping, tools/list, tools/call, prompts/list, prompts/get, resources/list, resources/templates/list, resources/read and completion/complete.",
                        protocol::shorten(method)
                    ),
                ),
                false,
            ),
        }),
        Message::Response => {
            elicitation::answer(app, caller, msg);
            None
        }
        Message::Notification { .. } => None,
        Message::Invalid { id, reason } => Some(err(
            id,
            RpcError::new(protocol::INVALID_REQUEST, reason),
            400,
        )),
    }
}

/// A message of the stateless era (2026-07-28).
pub fn modern(app: &App, caller: &Caller, msg: &Value, headers: &HeaderMap) -> Option<Out> {
    match protocol::classify(msg) {
        Message::Request { id, method, params } => {
            if let Some(refused) = refused_request(app, caller, id, method, true) {
                return Some(refused);
            }
            if let Err(e) = envelope(method, params, headers) {
                return Some(rpc_err(id, e, true));
            }
            Some(match method {
                "server/discover" => ok(id, discover(app), true),
                "tools/list" => tools::list(app, caller, id, params, true),
                "tools/call" => tools::call(app, caller, id, params, true),
                "prompts/list" => prompts::list(app, caller, id, params, true),
                "prompts/get" => prompts::get(app, caller, id, params, true),
                "resources/list" => paid(caller, || resources::list(app, caller, id, params, true)),
                "resources/templates/list" => resources::templates_list(id, true),
                "resources/read" => paid(caller, || resources::read(app, caller, id, params, true)),
                "completion/complete" => paid(caller, || completion::complete(app, caller, id, params, true)),
                "initialize" => rpc_err(
                    id,
                    RpcError::new(
                        protocol::METHOD_NOT_FOUND,
                        "Protocol 2026-07-28 has no `initialize`: every request carries its version in `params._meta`, and `server/discover` lists what this server speaks. To open a 2025-11-25 session instead, send `initialize` without the 2026-07-28 `MCP-Protocol-Version` header and `_meta` version.",
                    ),
                    true,
                ),
                _ => rpc_err(
                    id,
                    RpcError::new(
                        protocol::METHOD_NOT_FOUND,
                        format!(
                            "Method `{}` is not offered in protocol 2026-07-28; this server offers server/discover, tools/list, tools/call, prompts/list, prompts/get, resources/list, resources/templates/list, resources/read and completion/complete.",
                            protocol::shorten(method)
                        ),
                    ),
                    true,
                ),
            })
        }
        Message::Notification { .. } | Message::Response => {
            refused_message(app, caller, false).err().flatten()
        }
        Message::Invalid { id, reason } => Some(err(
            id,
            RpcError::new(protocol::INVALID_REQUEST, reason),
            400,
        )),
    }
}
/// The short error that stands for a batch message once the POST's response budget is spent:
/// `ran` says whether the message was run (its reply did not fit) or not run at all.
pub fn over_budget(id: &Value, cap: usize, ran: bool) -> Out {
    let message = if ran {
        format!("The reply to this message did not fit in the {cap} bytes one POST may return (mcp.max_response_bytes) and was dropped. Send it again in a smaller batch.")
    } else {
        format!("Not run: the replies of this batch reached the {cap} bytes one POST may return (mcp.max_response_bytes). Send this message again in another request.")
    };
    err(
        Some(id),
        RpcError::new(protocol::SERVER_REFUSED, message)
            .with_data(json!({"reason": "response_too_large", "limit": cap, "ran": ran})),
        200,
    )
}
