//! `prompts/list` (paged) and `prompts/get`. An unknown prompt, one this key may not use, and a
//! missing or malformed argument are JSON-RPC errors -32602, as the prompts specification says.

use super::tools::page;
use super::{ok, rpc_err, Out};
use crate::http::App;
use crate::mcp::call::Caller;
use crate::mcp::prompts::{self, Prompt};
use crate::mcp::protocol::{self, RpcError};
use crate::redact;
use base64::Engine;
use serde_json::{json, Map, Value};

const PROMPTS_PAGE: usize = 50;
/// How long a 2026-07-28 client may cache `prompts/list` (it depends only on the key's scopes).
const PROMPTS_TTL_MS: u64 = 60_000;

fn encode_cursor(offset: usize) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("prompts:{offset}"))
}

fn decode_cursor(c: &str) -> Option<usize> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(c)
        .ok()?;
    std::str::from_utf8(&bytes)
        .ok()?
        .strip_prefix("prompts:")?
        .parse()
        .ok()
}

pub(super) fn list(
    app: &App,
    caller: &Caller,
    id: &Value,
    params: Option<&Value>,
    modern: bool,
) -> Out {
    let offset = match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => Some(0),
        Some(Value::String(c)) => decode_cursor(c),
        Some(_) => None,
    };
    let visible: Vec<&Prompt> = prompts::visible(app, caller).collect();
    let Some(offset) = offset.filter(|o| *o <= visible.len()) else {
        return rpc_err(
            id,
            RpcError::invalid_params("Invalid cursor: pass a `nextCursor` from prompts/list."),
            modern,
        );
    };
    let (range, next) = page(visible.len(), offset, PROMPTS_PAGE);
    let mut result = json!({
        "prompts": visible[range].iter().map(|p| prompts::definition(p)).collect::<Vec<_>>(),
    });
    if let Some(n) = next {
        result["nextCursor"] = json!(encode_cursor(n));
    }
    if modern {
        // Required on the 2026-07-28 wire; the list depends on the key's scopes.
        result["ttlMs"] = json!(PROMPTS_TTL_MS);
        result["cacheScope"] = json!("private");
    }
    ok(id, result, modern)
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
