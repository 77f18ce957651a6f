//! `prompts/list` (paged) and `prompts/get`. An unknown prompt, one this key may not use, and a
//! missing or malformed argument are JSON-RPC errors -32602, as the prompts specification says.

use super::listing::Listing;
use crate::http::App;
use crate::mcp::call::Caller;
use crate::mcp::prompts::{self, Prompt};
use crate::mcp::protocol::{self, RpcError};
use crate::mcp::reply::{ok, rpc_err, Out};
use crate::redact;
use serde_json::{Map, Value};

const PROMPTS_PAGE: usize = 50;
/// How long a 2026-07-28 client may cache `prompts/list` (it depends only on the key's scopes).
const PROMPTS_TTL_MS: u64 = 60_000;

/// `prompts/list`.
const PROMPTS: Listing = Listing {
    method: "prompts/list",
    member: "prompts",
    page_size: PROMPTS_PAGE,
    ttl_ms: PROMPTS_TTL_MS,
};

pub(super) fn list(
    app: &App,
    caller: &Caller,
    id: &Value,
    params: Option<&Value>,
    modern: bool,
) -> Out {
    let visible: Vec<&Prompt> = prompts::visible(app, caller).collect();
    PROMPTS.answer(id, params, modern, &visible, |p| prompts::definition(p))
}

pub(super) fn get(
    app: &App,
    caller: &Caller,
    id: &Value,
    params: Option<&Value>,
    modern: bool,
) -> Out {
    let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else {
        return rpc_err(
            id,
            RpcError::invalid_params("prompts/get needs `params.name` (a string)."),
            modern,
        );
    };
    let empty = Map::new();
    let args = match params.and_then(|p| p.get("arguments")) {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(m)) => m,
        Some(_) => {
            return rpc_err(
                id,
                RpcError::invalid_params("`params.arguments` must be an object of strings."),
                modern,
            )
        }
    };
    let Some(prompt) = prompts::visible(app, caller).find(|p| p.name == name) else {
        return rpc_err(
            id,
            RpcError::invalid_params(format!(
                "Unknown prompt `{}`; call prompts/list for the prompts available to this API key.",
                protocol::shorten(name)
            )),
            modern,
        );
    };
    let can = |tool: &str| crate::mcp::advice::can_call(app, caller, tool);
    match prompts::render(prompt, args, &can) {
        Ok(mut result) => {
            redact::redact_value(&mut result);
            ok(id, result, modern)
        }
        Err(msg) => rpc_err(id, RpcError::invalid_params(msg), modern),
    }
}
