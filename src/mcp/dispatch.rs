//! JSON-RPC methods: `initialize`, `ping`, `tools/list`, `tools/call` (legacy era) and
//! `server/discover`, `tools/list`, `tools/call` (modern era, 2026-07-28).
//!
//! Errors follow the tools specification: an unknown tool or malformed `tools/call` params are
//! JSON-RPC errors (-32602); anything that goes wrong running a tool (invalid arguments, a refusal
//! of the REST API, a stale confirmation) is a tool result with `isError: true`, so the assistant
//! can read it and correct itself. Everything returned passes the redactor.

use super::call::{self, Caller, Content};
use super::catalogue::Tool;
use super::protocol::{self, Message, RpcError};
use super::spec::Kind;
use crate::http::App;
use crate::redact;
use base64::Engine;
use hyper::HeaderMap;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::sync::OnceLock;

/// Tools per `tools/list` page: more than the catalogue holds, so clients that ignore
/// `nextCursor` still see every tool; the cursor keeps the list open to growth.
pub const TOOLS_PAGE: usize = 50;
/// How long a 2026-07-28 client may cache `tools/list` (it depends only on the key's scopes).
const TOOLS_TTL_MS: u64 = 60_000;
const DISCOVER_TTL_MS: u64 = 3_600_000;
/// Internal requests one confirm_change makes (read the target, then write it).
const CONFIRM_TOKENS: u32 = 2;

/// One JSON-RPC reply: its HTTP status and serialized message; a new session id for `initialize`.
pub struct Out {
    pub status: u16,
    pub body: String,
    pub session: Option<String>,
}

impl Out {
    fn new(status: u16, body: String) -> Out {
        Out {
            status,
            body,
            session: None,
        }
    }
}

/// The fields every 2026-07-28 result carries, as JSON members to append to a result object.
fn modern_members() -> &'static str {
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

fn ok(id: &Value, result: Value, modern: bool) -> Out {
    Out::new(
        200,
        protocol::result_response(id, with_modern(result, modern)).to_string(),
    )
}

pub fn err(id: Option<&Value>, e: RpcError, status: u16) -> Out {
    Out::new(status, protocol::error_response(id, &e).to_string())
}

fn rpc_err(id: &Value, e: RpcError, modern: bool) -> Out {
    let status = if modern { e.modern_status() } else { 200 };
    err(Some(id), e, status)
}

pub fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}})
}

pub fn instructions(app: &App) -> String {
    let minutes = (app.settings.pending_change_ttl_secs / 60).max(1);
    format!(
        "Signage sandbox: {}. Every tool acts with the user's own API key and sees only what that key may see; get_api_key_permissions explains its scopes. Lists are newest first: pass `next_cursor` as `cursor` for more. Writes take two steps: a prepare_* tool changes nothing and returns a preview with a confirmation_id. Show the preview to the user and ask for explicit confirmation; only if the user confirms, call confirm_change with that id (single use, about {minutes} minute(s)). If the user declines, call cancel_change. Never confirm on your own. Secrets appear as {}.",
        crate::areas::summary(),
        redact::REDACTED
    )
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
            "tools/list" => list(app, caller, id, params, false),
            "tools/call" => call(app, caller, id, params, false),
            _ => rpc_err(
                id,
                RpcError::new(
                    protocol::METHOD_NOT_FOUND,
                    format!(
                        "Method `{}` is not offered (protocol {version}); this server offers initialize, ping, tools/list and tools/call.",
                        protocol::shorten(method)
                    ),
                ),
                false,
            ),
        }),
        Message::Notification { .. } | Message::Response => None,
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
                "tools/list" => list(app, caller, id, params, true),
                "tools/call" => call(app, caller, id, params, true),
                _ => rpc_err(
                    id,
                    RpcError::new(
                        protocol::METHOD_NOT_FOUND,
                        format!(
                            "Method `{}` is not offered in protocol 2026-07-28; this server offers server/discover, tools/list and tools/call.",
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

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// `=?base64?…?=` header values (2026-07-28 "Value Encoding"); anything else is taken verbatim.
fn decode_header_value(v: &str) -> Option<String> {
    match v
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(payload) => base64::engine::general_purpose::STANDARD
            .decode(payload)
            .ok()
            .and_then(|b| String::from_utf8(b).ok()),
        None => Some(v.to_string()),
    }
}

/// The per-request envelope of 2026-07-28: `_meta` carries the version and client capabilities,
/// and the mirrored headers must agree with the body.
fn envelope(method: &str, params: Option<&Value>, headers: &HeaderMap) -> Result<(), RpcError> {
    let meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
        .ok_or_else(|| {
            RpcError::invalid_params(format!(
                "Protocol 2026-07-28 requests carry `params._meta` with `{}` and `{}`.",
                protocol::META_PROTOCOL_VERSION,
                protocol::META_CLIENT_CAPABILITIES
            ))
        })?;
    let missing: Vec<&str> = [
        protocol::META_PROTOCOL_VERSION,
        protocol::META_CLIENT_CAPABILITIES,
    ]
    .into_iter()
    .filter(|k| !meta.contains_key(*k))
    .collect();
    if !missing.is_empty() {
        return Err(RpcError::invalid_params(format!(
            "`params._meta` lacks {}.",
            missing.join(" and ")
        )));
    }
    let version = &meta[protocol::META_PROTOCOL_VERSION];
    let mismatch = |what: &str| {
        RpcError::new(
            protocol::HEADER_MISMATCH,
            format!("Header mismatch: {what}."),
        )
    };
    if header(headers, "mcp-protocol-version") != version.as_str() || version.as_str().is_none() {
        return Err(mismatch(
            "MCP-Protocol-Version must be present and equal params._meta's protocol version",
        ));
    }
    if header(headers, "mcp-method") != Some(method) {
        return Err(mismatch("Mcp-Method must be present and equal the method"));
    }
    if method == "tools/call" {
        if let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str) {
            let sent = header(headers, "mcp-name").and_then(decode_header_value);
            if sent.as_deref() != Some(name) {
                return Err(mismatch("Mcp-Name must be present and equal params.name"));
            }
        }
    }
    let version = version.as_str().unwrap_or("");
    if protocol::known_modern(version).is_none() {
        return Err(RpcError::unsupported_version(version));
    }
    Ok(())
}

fn discover(app: &App) -> Value {
    json!({
        "supportedVersions": protocol::supported_versions(),
        "capabilities": capabilities(),
        "instructions": instructions(app),
        "ttlMs": DISCOVER_TTL_MS,
        "cacheScope": "public",
    })
}

fn initialize(app: &App, caller: &Caller, id: &Value, params: Option<&Value>) -> Out {
    let Some(requested) = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
    else {
        return rpc_err(
            id,
            RpcError::invalid_params("initialize needs `params.protocolVersion` (a string)."),
            false,
        );
    };
    if params
        .and_then(|p| p.get("capabilities"))
        .is_some_and(|c| !c.is_object())
    {
        return rpc_err(
            id,
            RpcError::invalid_params("`params.capabilities` must be an object."),
            false,
        );
    }
    // The requested version if we speak it, else our latest (lifecycle: version negotiation).
    let version = protocol::known_legacy(requested).unwrap_or(protocol::LATEST_LEGACY);
    let p = &caller.principal;
    let session =
        super::state(app)
            .sessions
            .open(p.actor_id(), p.client_id(), version, crate::time::now());
    let mut out = ok(
        id,
        json!({
            "protocolVersion": version,
            "capabilities": capabilities(),
            "serverInfo": protocol::server_info(),
            "instructions": instructions(app),
        }),
        false,
    );
    out.session = Some(session);
    out
}

fn encode_cursor(offset: usize) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("tools:{offset}"))
}

fn decode_cursor(c: &str) -> Option<usize> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(c)
        .ok()?;
    std::str::from_utf8(&bytes)
        .ok()?
        .strip_prefix("tools:")?
        .parse()
        .ok()
}

/// The page of `len` items starting at `offset`, and the offset of the next page if any.
pub fn page(len: usize, offset: usize, size: usize) -> (std::ops::Range<usize>, Option<usize>) {
    let end = (offset + size).min(len);
    (offset.min(len)..end, (end < len).then_some(end))
}

fn list(app: &App, caller: &Caller, id: &Value, params: Option<&Value>, modern: bool) -> Out {
    let offset = match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => Some(0),
        Some(Value::String(c)) => decode_cursor(c),
        Some(_) => None,
    };
    let catalog = super::state(app).catalog(&app.router);
    let visible: Vec<&Tool> = catalog.visible(&caller.principal).collect();
    let Some(offset) = offset.filter(|o| *o <= visible.len()) else {
        return rpc_err(
            id,
            RpcError::invalid_params("Invalid cursor: pass a `nextCursor` from tools/list."),
            modern,
        );
    };
    let (range, next) = page(visible.len(), offset, TOOLS_PAGE);
    let mut result = json!({
        "tools": visible[range].iter().map(|t| &t.definition).collect::<Vec<_>>(),
    });
    if let Some(n) = next {
        result["nextCursor"] = json!(encode_cursor(n));
    }
    if modern {
        result["ttlMs"] = json!(TOOLS_TTL_MS);
        result["cacheScope"] = json!("private");
    }
    ok(id, result, modern)
}

fn call(app: &App, caller: &Caller, id: &Value, params: Option<&Value>, modern: bool) -> Out {
    let Some(p) = params.and_then(Value::as_object) else {
        return rpc_err(
            id,
            RpcError::invalid_params("tools/call needs `params` with `name` and `arguments`."),
            modern,
        );
    };
    let Some(name) = p.get("name").and_then(Value::as_str) else {
        return rpc_err(
            id,
            RpcError::invalid_params("tools/call needs `params.name` (a string)."),
            modern,
        );
    };
    let empty = Map::new();
    let given = match p.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(m)) => m,
        Some(_) => {
            return rpc_err(
                id,
                RpcError::invalid_params("`params.arguments` must be an object."),
                modern,
            )
        }
    };
    let catalog = super::state(app).catalog(&app.router);
    let Some(tool) = catalog.get(name).filter(|t| t.available()) else {
        return rpc_err(
            id,
            RpcError::invalid_params(format!(
                "Unknown tool `{}`; call tools/list for the tools available to this API key.",
                protocol::shorten(name)
            )),
            modern,
        );
    };
    if !tool.allowed(&caller.principal) {
        return tool_error(
            id,
            &format!(
                "This API key cannot use {}: it needs the `{}` scope. Nothing was done; get_api_key_permissions shows the key's scopes.",
                tool.spec.name,
                tool.required_scope()
            ),
            modern,
        );
    }
    // An assistant often sends `null` for an optional filter it does not use.
    let stripped: Map<String, Value>;
    let args = if tool.spec.kind == Kind::Read && given.values().any(Value::is_null) {
        stripped = given
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        &stripped
    } else {
        given
    };
    if let Err(msg) = crate::jsonschema::validate_arguments(args, &tool.input_schema) {
        return tool_error(
            id,
            &format!("Invalid arguments: {msg} Nothing was done."),
            modern,
        );
    }
    // confirm_change claims its single-use id, then reads and writes (two requests, two tokens):
    // without both tokens it is refused before the claim, so throttling never burns a confirmation.
    if tool.spec.kind == Kind::Confirm {
        if let Some(wait) = app
            .rate_limiter
            .wait_for(caller.principal.actor_id(), CONFIRM_TOKENS)
        {
            return tool_error(
                id,
                &format!(
                    "HTTP 429 Too many requests: this API key is over its rate limit; retry after {wait} seconds. Nothing was applied and the confirmation id is still valid."
                ),
                modern,
            );
        }
    }
    let out = match call::call(app, caller, tool, args) {
        Ok(v) => tool_ok(id, v, modern),
        Err(msg) => tool_error(id, &msg, modern),
    };
    let cap = app.settings.mcp_max_response_bytes;
    if out.body.len() > cap {
        // Built (one REST page is bounded), but not sent: the caller narrows the request instead.
        return tool_error(
            id,
            &format!(
                "The result of {} is {} bytes, more than one reply may carry ({cap} bytes). Narrow the request: a smaller `limit`, a filter, or one object at a time.",
                tool.spec.name,
                out.body.len()
            ),
            modern,
        );
    }
    out
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

/// A successful tool result: the redacted structured content, and the same JSON as text. Built as
/// a string so the content is serialized once (or not at all: a clean REST body is used as it is)
/// and embedded twice, without building another tree.
fn tool_ok(id: &Value, content: Content, modern: bool) -> Out {
    let redacted: Cow<'_, [u8]>;
    let owned: Vec<u8>;
    let bytes: &[u8] = match content {
        Content::Json(ref body) => {
            redacted = redact::redact_json(body).unwrap_or(Cow::Borrowed(b"{}"));
            &redacted
        }
        Content::Value(mut v) => {
            redact::redact_value(&mut v);
            owned = serde_json::to_vec(&v).unwrap_or_else(|_| b"{}".to_vec());
            &owned
        }
    };
    let json = std::str::from_utf8(bytes).unwrap_or("{}");
    // Serializing a `&str` only escapes it; it cannot fail.
    let text = serde_json::to_string(json).unwrap_or_else(|_| "\"\"".into());
    let id = id.to_string();
    let mut body = String::with_capacity(json.len() + text.len() + id.len() + 200);
    body.push_str(r#"{"jsonrpc":"2.0","id":"#);
    body.push_str(&id);
    body.push_str(r#","result":{"content":[{"type":"text","text":"#);
    body.push_str(&text);
    body.push_str(r#"}],"structuredContent":"#);
    body.push_str(json);
    body.push_str(r#","isError":false"#);
    if modern {
        body.push_str(modern_members());
    }
    body.push_str("}}");
    Out::new(200, body)
}

fn tool_error(id: &Value, message: &str, modern: bool) -> Out {
    let text = redact::redact_str(message);
    ok(
        id,
        json!({"content": [{"type": "text", "text": text}], "isError": true}),
        modern,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_pages_split() {
        assert_eq!(decode_cursor(&encode_cursor(50)), Some(50));
        assert_eq!(decode_cursor("bm9wZQ"), None);
        assert_eq!(page(28, 0, 50), (0..28, None));
        assert_eq!(page(28, 0, 20), (0..20, Some(20)));
        assert_eq!(page(28, 20, 20), (20..28, None));
        assert_eq!(page(0, 0, 20), (0..0, None));
    }

    #[test]
    fn header_values_decode() {
        assert_eq!(
            decode_header_value("=?base64?bGlzdF9hZHM=?=").as_deref(),
            Some("list_ads")
        );
        assert_eq!(decode_header_value("list_ads").as_deref(), Some("list_ads"));
        assert_eq!(decode_header_value("=?base64?!!?="), None);
    }

    #[test]
    fn tool_ok_embeds_the_same_json_twice() {
        let out = tool_ok(
            &json!(7),
            Content::Value(json!({"a": "x\"y", "rawKey": "k"})),
            true,
        );
        let v: Value = serde_json::from_str(&out.body).unwrap();
        let sc = &v["result"]["structuredContent"];
        assert_eq!(sc["rawKey"], "[REDACTED]");
        let text: Value =
            serde_json::from_str(v["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(&text, sc);
        assert_eq!(v["result"]["resultType"], "complete");
        assert_eq!(v["id"], 7);
    }
}
