//! A tool call: each becomes an internal REST request through [`crate::http::pipeline::execute`]
//! with the caller's own credential headers, so the same router, scope check and handlers decide
//! what happens. Nothing here decides a permission or holds a credential.

use super::catalogue::Tool;
use super::failure::Failure;
use super::pending::{self, ArrayEdit, Body, ChangePlan, PlanKind};
use super::spec::{self, Kind};
use crate::auth::Principal;
use crate::http::pipeline::{self, Request};
use crate::http::response::Response;
use crate::http::router::{Change, RequestBody};
use bytes::Bytes;
use hyper::{HeaderMap, Method};
use serde_json::{json, Map, Value};
use std::net::IpAddr;

/// Who is calling, and the credential headers every internal request carries.
pub struct Caller {
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
}

impl Caller {
    pub fn new(
        principal: Principal,
        mcp_headers: &HeaderMap,
        request_id: &str,
        peer: Option<IpAddr>,
    ) -> Caller {
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
            request_id: request_id.to_string(),
            peer,
            view: Default::default(),
            version: super::protocol::DEFAULT_VERSION,
            features: Default::default(),
            session: None,
            accepts_sse: false,
            prepaid: Default::default(),
        }
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
        self.rest_typed(app, method, path, query, body, if_match)
    }

    /// Runs one REST request through the pipeline as this caller, with a body of its own type.
    pub fn rest_typed(
        &self,
        app: &crate::http::App,
        method: Method,
        path: String,
        query: String,
        body: Option<(Vec<u8>, &str)>,
        if_match: Option<&str>,
    ) -> Response {
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
            },
            &self.principal,
            prepaid,
        )
    }
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
fn scalar(v: &Value) -> Option<String> {
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

/// Runs a tool call. Arguments have been validated against the input schema.
pub fn call(
    app: &crate::http::App,
    caller: &Caller,
    tool: &Tool,
    args: &Map<String, Value>,
) -> Outcome {
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
            let mut query = String::new();
            for q in &route.query {
                if let Some(v) = args.get(q.name).and_then(scalar) {
                    if !query.is_empty() {
                        query.push('&');
                    }
                    query.push_str(q.name);
                    query.push('=');
                    encode(&v, &mut query);
                }
            }
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
                return Err(Failure::rest(
                    &resp,
                    super::advice::explain(app, caller, &resp),
                ));
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
            pending::prepare(app, caller, tool, &plan).map(Content::Value)
        }
        Kind::Confirm => {
            pending::confirm(app, caller, arg_str(args, "confirmation_id")).map(Content::Value)
        }
        Kind::Cancel => {
            pending::cancel(app, caller, arg_str(args, "confirmation_id")).map(Content::Value)
        }
    }
}

/// A write argument holding the redaction marker ([`crate::redact::marker`]): text copied from a
/// redacted answer. Stored, it would replace the real value with the marker, so it is refused,
/// naming the argument. `written` is the argument's text; `where_secret` says the marker was
/// found by the rule for a field whose stored value holds a secret.
pub fn marker_refusal(path: &str, written: &str, where_secret: bool) -> Failure {
    let field = path.rsplit('.').next().unwrap_or(path);
    let marker = crate::redact::REDACTED;
    let literal = written.to_ascii_uppercase().contains(marker);
    let how = match (literal, where_secret) {
        (true, _) => String::new(),
        (false, false) => " (once decoded: another spelling, encoding or look-alike letters)".into(),
        (false, true) => format!(
            " (once decoded, as the word REDACTED) where the stored value holds a secret shown as `{marker}`"
        ),
    };
    let message = format!(
        "`{path}` contains `{marker}`{how}, the marker this server shows in place of text that looks like a secret; it is not the stored value, and storing it would destroy that value. Nothing was prepared. To keep the stored value, leave `{field}` out; to change it, send the complete new text."
    );
    Failure::new("redaction_marker_in_arguments", 422, message)
}

/// The string at a path of [`crate::redact::marker`] (`changes.tags[1]`) in `v`, or "".
pub fn value_at<'a>(v: &'a Value, path: &str) -> &'a str {
    let mut at = v;
    for step in path.split('.') {
        let (name, indexes) = step.split_once('[').unwrap_or((step, ""));
        if !name.is_empty() {
            at = &at[name];
        }
        for index in indexes.split('[') {
            if let Ok(i) = index.trim_end_matches(']').parse::<usize>() {
                at = &at[i];
            }
        }
    }
    at.as_str().unwrap_or("")
}

fn unavailable() -> Failure {
    Failure::new(
        "tool_unavailable",
        501,
        "This tool is not available on this server.",
    )
}

fn arg_str<'a>(args: &'a Map<String, Value>, name: &str) -> &'a str {
    args.get(name).and_then(Value::as_str).unwrap_or("")
}

/// The change a prepare tool's arguments describe, ready to preview, store and run. Built again
/// from the stored arguments when the change is confirmed.
pub fn change_plan(tool: &Tool, args: &Map<String, Value>) -> Result<ChangePlan, Failure> {
    let write = tool.route.as_ref().ok_or_else(unavailable)?;
    let read = tool.read_route.as_ref().ok_or_else(unavailable)?;
    let change = tool.spec.change.ok_or_else(unavailable)?;
    let ids: Vec<&str> = tool
        .spec
        .path_args
        .iter()
        .map(|(name, _)| arg_str(args, name))
        .collect();
    // The target is what the read route reads: the ad of `/ads/{id}`, the delivery of
    // `/webhooks/{id}/deliveries/{delivery_id}`.
    let read_params = read.path.matches('{').count().max(1);
    let target = read_params.min(ids.len()).saturating_sub(1);
    let id = ids.get(target).copied().ok_or_else(unavailable)?;
    let target_type = tool
        .spec
        .path_args
        .get(target)
        .map_or("", |(name, _)| *name);
    let target_type = target_type.strip_suffix("_id").unwrap_or(target_type);
    let mut array_edit = None;
    let changes: Map<String, Value> = match change {
        Change::Fields(_) => args
            .get("changes")
            .and_then(Value::as_object)
            .cloned()
            .ok_or_else(unavailable)?,
        Change::Sets(field, value) => [(field.to_string(), Value::Bool(value))]
            .into_iter()
            .collect(),
        Change::Creates(_)
        | Change::Body(_)
        | Change::Batch { .. }
        | Change::Deletes
        | Change::Upload { .. } => Map::new(),
        Change::Adds(field, arg) | Change::Removes(field, arg) => {
            array_edit = Some(ArrayEdit {
                field,
                value: arg_str(args, arg).to_string(),
                add: matches!(change, Change::Adds(..)),
            });
            Map::new()
        }
    };
    let mut query = String::new();
    let body = match (write.request, change) {
        (RequestBody::Json(_), Change::Adds(_, arg) | Change::Creates(arg)) => {
            Some(Body::Json(json!({ arg: arg_str(args, arg) })))
        }
        (RequestBody::Json(_), Change::Body(fields) | Change::Batch { fields, .. }) => {
            Some(Body::Json(
                fields
                    .iter()
                    .filter_map(|f| Some((f.to_string(), args.get(*f)?.clone())))
                    .collect::<Map<String, Value>>()
                    .into(),
            ))
        }
        (RequestBody::Raw(_), Change::Upload { max_bytes }) => {
            for q in &write.query {
                if let Some(v) = args.get(q.name).and_then(scalar) {
                    if !query.is_empty() {
                        query.push('&');
                    }
                    query.push_str(q.name);
                    query.push('=');
                    encode(&v, &mut query);
                }
            }
            Some(Body::Raw {
                content_type: arg_str(args, "content_type").to_string(),
                bytes: inline_file(args, max_bytes)?,
            })
        }
        (RequestBody::Json(_), _) => Some(Body::Json(Value::Object(changes.clone()))),
        _ => None,
    };
    Ok(ChangePlan {
        tool: tool.spec.name,
        operation: write.operation_id,
        target_type,
        target_id: id.to_string(),
        read_path: fill_path(read.path, &ids),
        method: write.method.clone(),
        path: fill_path(write.path, &ids),
        query,
        body,
        changes,
        array_edit,
        kind: match change {
            Change::Creates(_) | Change::Body(_) | Change::Upload { .. } => PlanKind::Creates,
            Change::Deletes => PlanKind::Deletes,
            Change::Batch {
                items, key, flag, ..
            } => PlanKind::Batch { items, key, flag },
            _ => PlanKind::Fields,
        },
        withholds: tool.spec.withholds,
        with_cost: spec::costs_tokens(write),
        arguments: Value::Object(args.clone()),
    })
}

/// The bytes of a file given inline: `content` decoded as its `encoding` says (`base64`, the
/// default, or `utf-8` for a text format such as SVG), at most `max_bytes`.
fn inline_file(args: &Map<String, Value>, max_bytes: usize) -> Result<Vec<u8>, Failure> {
    use base64::Engine;
    let content = arg_str(args, "content");
    let bytes = match args.get("encoding").and_then(Value::as_str) {
        Some("utf-8") => content.as_bytes().to_vec(),
        _ => {
            let compact: String = content.split_ascii_whitespace().collect();
            base64::engine::general_purpose::STANDARD
                .decode(compact.as_bytes())
                .map_err(|e| {
                    Failure::new(
                        "invalid_arguments",
                        400,
                        format!("Invalid arguments: `content` is not base64 ({e}); send the file's bytes base64-encoded (standard alphabet, padded), or set `encoding` to `utf-8` for a text format such as SVG. Nothing was done."),
                    )
                })?
        }
    };
    if bytes.len() > max_bytes {
        return Err(Failure::new(
            "content_too_large",
            413,
            format!(
                "The file is {} bytes; a file given inline through MCP may have at most {max_bytes} bytes. Nothing was done. Upload a larger file with REST `POST /media`.",
                bytes.len()
            ),
        ));
    }
    Ok(bytes)
}

/// A REST answer as a tool outcome: a JSON success body is the structured content; a problem
/// (or any failure) becomes a message naming the status, title and detail.
pub fn from_rest(resp: &Response) -> Result<Value, Failure> {
    if resp.status.is_success() {
        if resp.body.is_empty() {
            return Ok(json!({"ok": true, "status": resp.status.as_u16()}));
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
