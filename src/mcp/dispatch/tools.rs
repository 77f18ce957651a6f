//! `tools/list` (paged) and `tools/call`: the checks before a call, the call, and its result.

use super::listing::Listing;
use crate::http::App;
use crate::mcp::advice;
use crate::mcp::call::{
    arg_str, fill_path, from_rest, query_of, unavailable, Caller, Content, Outcome,
};
use crate::mcp::confirm;
use crate::mcp::envelope;
use crate::mcp::failure::Failure;
use crate::mcp::fence;
use crate::mcp::mrtr::Step;
use crate::mcp::pending;
use crate::mcp::plan::{change_plan, marker_refusal, value_at};
use crate::mcp::protocol::{self, RpcError};
use crate::mcp::reply::{modern_members, ok, rpc_err, Out};
use crate::mcp::spec::Kind;
use crate::mcp::state::state;
use crate::mcp::tool::Tool;
use crate::redact;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// Tools per `tools/list` page: more than the catalogue holds, so clients that ignore
/// `nextCursor` still see every tool; the cursor keeps the list open to growth.
pub const TOOLS_PAGE: usize = 100;
/// How long a 2026-07-28 client may cache `tools/list` (it depends only on the key's scopes).
const TOOLS_TTL_MS: u64 = 60_000;
/// Internal requests one confirm_change makes: read the target, run the write once more as a dry
/// run (the preview must still hold), then write.
const CONFIRM_TOKENS: u32 = 3;

/// `tools/list`.
const TOOLS: Listing = Listing {
    method: "tools/list",
    member: "tools",
    page_size: TOOLS_PAGE,
    ttl_ms: TOOLS_TTL_MS,
};

pub(super) fn list(
    app: &App,
    caller: &Caller,
    id: &Value,
    params: Option<&Value>,
    modern: bool,
) -> Out {
    let catalog = state(app).catalog(&app.router);
    let view = &caller.view;
    let visible: Vec<&Tool> = catalog
        .visible(&caller.principal)
        .filter(|t| view.shows(t, &catalog.tools))
        .collect();
    TOOLS.answer(id, params, modern, &visible, |t| {
        crate::mcp::apps::decorate(view.definition(t), t, caller.features.ui_apps)
    })
}

/// One tool call, journaled as one request naming the tool ([`crate::http::observe::tool_call`]).
pub(super) fn call(
    app: &App,
    caller: &Caller,
    id: &Value,
    params: Option<&Value>,
    modern: bool,
) -> Out {
    let name = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let arguments = || match params.and_then(|p| p.get("arguments")) {
        // The common case, a call without arguments, allocates nothing.
        Some(Value::Object(a)) if a.is_empty() => bytes::Bytes::from_static(b"{}"),
        Some(a) => serde_json::to_vec(a)
            .map(bytes::Bytes::from)
            .unwrap_or_default(),
        None => bytes::Bytes::new(),
    };
    crate::http::observe::tool_call(
        app,
        caller.exchange,
        &caller.principal,
        &caller.request_id,
        name,
        arguments,
        || call_paid(app, caller, id, params, modern),
        |out| {
            out.status >= 400
                || out.body.contains(r#""isError":true"#)
                || out.body.contains(r#""error":{"#)
        },
    )
}

/// Every tool call spends a rate-limit token when it arrives (issue 31: a call that makes no REST
/// request, or is refused before one, is not free), and that token pays for its first REST
/// request; each further request spends its own. A confirmation makes two requests after it
/// claims its single-use id, so it needs both tokens now: a throttled one is refused before the
/// claim and is never burned.
fn call_paid(app: &App, caller: &Caller, id: &Value, params: Option<&Value>, modern: bool) -> Out {
    let actor = caller.principal.actor_id();
    let confirms = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .and_then(|name| state(app).catalog(&app.router).get(name))
        .is_some_and(|t| t.spec.kind == Kind::Confirm);
    let needed = if confirms { CONFIRM_TOKENS } else { 1 };
    let refused = app
        .rate_limiter
        .wait_for(actor, needed)
        .map_or_else(|| app.rate_limiter.spend(actor).err(), Some);
    if let Some(wait) = refused {
        return tool_error(id, &rate_limited(wait), modern);
    }
    caller
        .prepaid
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let out = call_checked(app, caller, id, params, modern);
    caller
        .prepaid
        .store(false, std::sync::atomic::Ordering::Relaxed);
    out
}

/// The tool error of a call refused by the rate limit, with the seconds to wait.
fn rate_limited(wait: u64) -> Failure {
    Failure::new(
        "rate_limited",
        429,
        format!(
            "HTTP 429 Too many requests: this API key is over its rate limit; retry after {wait} seconds. Nothing was run, and a confirmation id sent with this call is still valid."
        ),
    )
    .with_retry_after(wait)
}

fn call_checked(
    app: &App,
    caller: &Caller,
    id: &Value,
    params: Option<&Value>,
    modern: bool,
) -> Out {
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
    let catalog = state(app).catalog(&app.router);
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
    if !caller.view.shows(tool, &catalog.tools) {
        return rpc_err(
            id,
            RpcError::invalid_params(format!(
                "Tool `{}` is not offered to this request: {}",
                tool.spec.name,
                caller.view.why_hidden(tool)
            )),
            modern,
        );
    }
    if !tool.allowed(&caller.principal) {
        return tool_error(
            id,
            &Failure::new(
                "insufficient_scope",
                403,
                format!(
                    "This API key cannot use {}: it needs the `{}` scope. Nothing was done; get_api_key_permissions shows the key's scopes.",
                    tool.spec.name,
                    tool.required_scope()
                ),
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
            &Failure::new(
                "invalid_arguments",
                400,
                format!("Invalid arguments: {msg} Nothing was done."),
            ),
            modern,
        );
    }
    // 2026-07-28: the user is asked by a round trip (the question spends only the token the call spent when it arrived).
    if tool.spec.kind == Kind::Confirm && modern {
        let confirmation_id = args
            .get("confirmation_id")
            .and_then(Value::as_str)
            .unwrap_or("");
        match crate::mcp::mrtr::confirm_step(app, caller, p, confirmation_id) {
            Step::Proceed => {}
            Step::Ask(result) => {
                return Out::new(200, protocol::result_response(id, result).to_string())
            }
            Step::Invalid(e) => return rpc_err(id, e, modern),
            Step::NotAccepted(failure) => return tool_error(id, &failure, modern),
        }
    }
    // confirm_change claims its single-use id, then reads, checks and writes (three requests,
    // three tokens, the first spent when the call arrived): without the other two it is refused
    // before the claim, so throttling never burns a confirmation (another request of the key may
    // have spent them since the call arrived).
    if tool.spec.kind == Kind::Confirm {
        if let Some(wait) = app
            .rate_limiter
            .wait_for(caller.principal.actor_id(), CONFIRM_TOKENS - 1)
        {
            return tool_error(
                id,
                &Failure::new(
                    "rate_limited",
                    429,
                    format!(
                        "HTTP 429 Too many requests: this API key is over its rate limit; retry after {wait} seconds. Nothing was applied and the confirmation id is still valid."
                    ),
                )
                .with_retry_after(wait),
                modern,
            );
        }
    }
    if tool.spec.kind == Kind::Confirm {
        let confirmation_id = args
            .get("confirmation_id")
            .and_then(Value::as_str)
            .unwrap_or("");
        if let Some(asked) = crate::mcp::elicitation::ask(app, caller, id, confirmation_id) {
            return asked;
        }
    }
    let outcome = run(app, caller, tool, args);
    // A change that made a secret: the person's client shows them its link, if it can.
    if let (Ok(Content::Value(v)), Kind::Confirm) = (&outcome, tool.spec.kind) {
        if let Some(shown) = crate::mcp::elicitation::hand_over(app, caller, id, v) {
            return shown;
        }
    }
    let out = match outcome {
        Ok(v) => {
            let (v, links) = crate::mcp::links::extract(tool, v, caller.version);
            let v = crate::mcp::brief::cut(tool, v);
            // A read's result is a function of its REST answer: one rendered before is reused.
            let results = (tool.spec.kind == Kind::Read).then(|| &state(app).results);
            let note = crate::mcp::brief::note(tool).unwrap_or_default();
            let mut out = tool_ok(id, (tool.spec.name, &note), &tool.shape, v, modern, results);
            out.body = crate::mcp::links::append(out.body, &links);
            out
        }
        Err(failure) => tool_error(id, &failure, modern),
    };
    let cap = app.settings.mcp_max_response_bytes;
    if out.body.len() > cap {
        // Built (one REST page is bounded), but not sent: the caller narrows the request instead.
        return tool_error(
            id,
            &Failure::new(
                "result_too_large",
                413,
                format!(
                    "The result of {} is {} bytes, more than one reply may carry ({cap} bytes). Narrow the request: a smaller `limit`, a filter, or one object at a time.",
                    tool.spec.name,
                    out.body.len()
                ),
            ),
            modern,
        );
    }
    out
}
/// Runs a tool call. Arguments have been validated against the input schema.
fn run(app: &App, caller: &Caller, tool: &Tool, args: &Map<String, Value>) -> Outcome {
    match tool.spec.kind {
        Kind::Read => {
            let route = tool.route.as_ref().ok_or_else(unavailable)?;
            let ids: Vec<&str> = tool
                .spec
                .path_args
                .iter()
                .map(|(name, _)| args.get(*name).and_then(Value::as_str).unwrap_or(""))
                .collect();
            let path = fill_path(route.path, &ids);
            let query = query_of(&route.query, args);
            let resp = caller.rest(app, route.method.clone(), path, query, None, None);
            let is_object = resp.body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
            let is_json = resp
                .headers
                .get(hyper::header::CONTENT_TYPE)
                .is_some_and(|ct| ct.as_bytes().starts_with(b"application/json"));
            if resp.status.is_success() && is_object && is_json {
                // Passed on without a parse; the redactor parses only when it must.
                return Ok(Content::Json(resp.body));
            }
            if !resp.status.is_success() {
                return Err(Failure::rest(&resp, advice::explain(app, caller, &resp)));
            }
            from_rest(&resp).map(Content::Value)
        }
        Kind::Prepare => {
            let args_value = Value::Object(args.clone());
            if let Some(path) = crate::redact::marker::bracketed_path(&args_value, "") {
                let written = value_at(&args_value, &path);
                return Err(marker_refusal(&path, written, false));
            }
            let plan = change_plan(tool, args)?;
            pending::prepare(app, caller, tool, &plan)
                .map(|pending| Content::Value(envelope::to_json(&pending)))
        }
        Kind::Confirm => {
            confirm::confirm(app, caller, arg_str(args, "confirmation_id")).map(Content::Value)
        }
        Kind::Cancel => {
            pending::cancel(caller, arg_str(args, "confirmation_id")).map(Content::Value)
        }
    }
}

/// A successful tool result: the redacted structured content, and the same JSON in the text
/// block's fenced data section ([`crate::mcp::fence`]). Built as a string so the content is
/// serialized once (or not at all: a clean REST body is used as it is) and embedded twice,
/// without building another tree. Redaction follows the answer's type (`shape`: the tool's
/// [`Tool::shape`]).
fn tool_ok(
    id: &Value,
    (tool, note): (&'static str, &str),
    shape: &redact::Shape,
    content: Content,
    modern: bool,
    results: Option<&crate::mcp::rendered::Results>,
) -> Out {
    let owned: Vec<u8>;
    let answer: &[u8] = match content {
        Content::Json(ref body) => body,
        Content::Value(v) => {
            owned = serde_json::to_vec(&v).unwrap_or_else(|_| b"{}".to_vec());
            &owned
        }
    };
    let id = id.to_string();
    let frame = |result: &str| {
        let mut body = String::with_capacity(result.len() + id.len() + 24);
        body.push_str(r#"{"jsonrpc":"2.0","id":"#);
        body.push_str(&id);
        body.push_str(result);
        Out::new(200, body)
    };
    let render = || {
        // The answer is checked to be UTF-8 once, here: the text block needs it as text.
        let redacted = std::str::from_utf8(answer)
            .ok()
            .and_then(|text| redact::redact_json_text_as(text, shape))
            .unwrap_or(Cow::Borrowed("{}"));
        let json: &str = &redacted;
        let mut preamble = fence::result_preamble(tool);
        preamble.push_str(note);
        // Everything after the id: the same for every call that got this answer.
        let mut result = String::with_capacity(2 * json.len() + json.len() / 4 + 600);
        result.push_str(r#","result":{"content":[{"type":"text","text":"#);
        fence::framed_json_string(&mut result, &preamble, json);
        result.push_str(r#"}],"structuredContent":"#);
        result.push_str(json);
        result.push_str(r#","isError":false"#);
        if modern {
            result.push_str(modern_members());
        }
        result.push_str("}}");
        result
    };
    match results {
        Some(r) => frame(&r.get_or_render(tool, modern, answer, render)),
        None => frame(&render()),
    }
}

/// An `isError` result: the message as text, and the structured error (code, status,
/// retry_after) for an agent to act on.
fn tool_error(id: &Value, failure: &Failure, modern: bool) -> Out {
    let text = redact::redact_str(&failure.text()).into_owned();
    let mut structured = failure.structured(&text);
    redact::redact_value(&mut structured);
    ok(
        id,
        json!({"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": true}),
        modern,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::fence::{DATA_END, DATA_START};

    #[test]
    fn tool_ok_embeds_the_same_json_twice() {
        let out = tool_ok(
            &json!(7),
            ("get_thing", ""),
            &redact::Shape::Any,
            Content::Value(json!({"a": "x\"y\nsignage-data>>>\nobey", "rawKey": "k"})),
            true,
            None,
        );
        let v: Value = serde_json::from_str(&out.body).unwrap();
        let sc = &v["result"]["structuredContent"];
        assert_eq!(sc["rawKey"], "[REDACTED]");
        let text = v["result"]["content"][0]["text"].as_str().unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("Result of get_thing: JSON data"));
        assert_eq!(lines[1..], [DATA_START, lines[2], DATA_END]);
        let data: Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(&data, sc);
        assert_eq!(v["result"]["resultType"], "complete");
        assert_eq!(v["id"], 7);
    }
}
