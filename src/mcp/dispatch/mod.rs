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

mod handshake;
mod listing;
mod prompts;
mod tools;

use super::call::Caller;
use super::protocol::{self, Message, RpcError};
use super::{completion, resources};
use crate::http::App;
use handshake::{discover, envelope, initialize};
use hyper::HeaderMap;
use serde_json::{json, Value};
use std::sync::OnceLock;

pub use handshake::{capabilities, instructions};
pub use listing::page;
pub use tools::TOOLS_PAGE;

/// One JSON-RPC reply: its HTTP status and serialized message; a new session id for `initialize`.
pub struct Out {
    pub status: u16,
    pub body: String,
    pub session: Option<String>,
    /// An event stream written later instead of `body` (confirmation by elicitation).
    pub stream: Option<crate::http::stream::Streamed>,
}

impl Out {
    pub(super) fn new(status: u16, body: String) -> Out {
        Out {
            status,
            body,
            session: None,
            stream: None,
        }
    }
}

/// The fields every 2026-07-28 result carries, as JSON members to append to a result object.
pub(super) fn modern_members() -> &'static str {
    static S: OnceLock<String> = OnceLock::new();
    S.get_or_init(|| {
        format!(
            r#","resultType":"complete","_meta":{{"{}":{}}}"#,
            protocol::META_SERVER_INFO,
            protocol::server_info()
        )
    })
}

fn with_modern(mut result: Value, modern: bool) -> Value {
    if modern {
        result["resultType"] = json!("complete");
        result["_meta"] = json!({ protocol::META_SERVER_INFO: protocol::server_info() });
    }
    result
}

pub(super) fn ok(id: &Value, result: Value, modern: bool) -> Out {
    Out::new(
        200,
        protocol::result_response(id, with_modern(result, modern)).to_string(),
    )
}

pub fn err(id: Option<&Value>, e: RpcError, status: u16) -> Out {
    Out::new(status, protocol::error_response(id, &e).to_string())
}

pub(super) fn rpc_err(id: &Value, e: RpcError, modern: bool) -> Out {
    let status = if modern { e.modern_status() } else { 200 };
    err(Some(id), e, status)
}

/// A message of the handshake era. `None`: nothing to answer (notification or response).
pub fn legacy(
    app: &App,
    caller: &Caller,
    msg: &Value,
    version: &'static str,
    in_batch: bool,
) -> Option<Out> {
    match protocol::classify(msg) {
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
            "resources/list" => resources::list(app, caller, id, params, false),
            "resources/templates/list" => resources::templates_list(id, false),
            "resources/read" => resources::read(app, caller, id, params, false),
            "completion/complete" => completion::complete(app, caller, id, params, false),
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
            crate::mcp::elicitation::answer(app, caller, msg);
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
            if let Err(e) = envelope(method, params, headers) {
                return Some(rpc_err(id, e, true));
            }
            Some(match method {
                "server/discover" => ok(id, discover(app), true),
                "tools/list" => tools::list(app, caller, id, params, true),
                "tools/call" => tools::call(app, caller, id, params, true),
                "prompts/list" => prompts::list(app, caller, id, params, true),
                "prompts/get" => prompts::get(app, caller, id, params, true),
                "resources/list" => resources::list(app, caller, id, params, true),
                "resources/templates/list" => resources::templates_list(id, true),
                "resources/read" => resources::read(app, caller, id, params, true),
                "completion/complete" => completion::complete(app, caller, id, params, true),
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
        Message::Notification { .. } | Message::Response => None,
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
