//! A change to make: the plan a prepare tool's arguments describe (what the preview shows, what
//! the confirmation runs), built again from the stored arguments when the change is confirmed,
//! and the refusal of arguments that hold the redaction marker. Data and its building only: the
//! preview, pending changes and confirmation all build on it, so it imports no sibling but
//! [`super::call`], [`super::tool`], [`super::failure`] and [`super::spec`].

use super::call::{arg_str, fill_path, query_of, unavailable, Caller, WriteTerms};
use super::failure::Failure;
use super::spec;
use super::tool::Tool;
use crate::http::router::{Change, RequestBody, Withheld};
use crate::http::App;
use hyper::Method;
use serde_json::{json, Map, Value};

/// A change ready to be previewed and stored: what to show and what to run.
pub struct ChangePlan {
    pub tool: &'static str,
    pub operation: &'static str,
    pub target_type: &'static str,
    pub target_id: String,
    /// GET path of the target's current state.
    pub read_path: String,
    pub method: Method,
    pub path: String,
    /// Query string of the change request (`company_id=…&filename=…` for an upload).
    pub query: String,
    /// Body of the change request, if the route takes one.
    pub body: Option<Body>,
    /// The fields of the target the change sets, for the preview.
    pub changes: Map<String, Value>,
    /// A value added to or removed from an array field of the target; `changes` is then
    /// computed from the current state.
    pub array_edit: Option<ArrayEdit>,
    /// What the preview compares.
    pub kind: PlanKind,
    /// A field of the write's answer never shown through MCP.
    pub withholds: Option<Withheld>,
    /// Show the token cost (`activation_cost_tokens`) and the company's balance.
    pub with_cost: bool,
    /// The exact tool arguments.
    pub arguments: Value,
}

/// The body of a change request.
pub enum Body {
    Json(Value),
    /// Bytes sent as they are, with their type (a media upload).
    Raw {
        content_type: String,
        bytes: Vec<u8>,
    },
}

impl ChangePlan {
    /// Runs the write as the caller, on `terms` (for real, or as a dry run).
    pub fn run(&self, app: &App, caller: &Caller, terms: WriteTerms<'_>) -> crate::http::Response {
        let body = self.body.as_ref().map(|b| match b {
            Body::Json(v) => (v.to_string().into_bytes(), "application/json"),
            Body::Raw {
                content_type,
                bytes,
            } => (bytes.clone(), content_type.as_str()),
        });
        caller.rest_typed(
            app,
            self.method.clone(),
            self.path.clone(),
            self.query.clone(),
            body,
            terms,
        )
    }

    /// The JSON body, as stored with the change (a raw body is kept in the arguments only).
    pub fn json_body(&self) -> Option<String> {
        match &self.body {
            Some(Body::Json(v)) => Some(v.to_string()),
            _ => None,
        }
    }
}

/// How a preview finds the differences.
pub enum PlanKind {
    /// The write changes fields of the target.
    Fields,
    /// The write makes something (or acts on the target): the difference is what it returns.
    Creates,
    /// The write deletes the target.
    Deletes,
    /// The write changes many items; see [`crate::http::router::Change::Batch`].
    Batch {
        items: &'static str,
        key: &'static str,
        flag: &'static str,
    },
}

/// See [`ChangePlan::array_edit`].
pub struct ArrayEdit {
    pub field: &'static str,
    pub value: String,
    pub add: bool,
}

impl ArrayEdit {
    /// The field's new value: the current array with the value added (kept sorted) or removed.
    pub(super) fn apply(&self, current: &Value) -> (String, Value) {
        let mut items: Vec<Value> = current
            .get(self.field)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let value = Value::String(self.value.clone());
        if self.add {
            if !items.contains(&value) {
                items.push(value);
                items.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
            }
        } else {
            items.retain(|v| *v != value);
        }
        (self.field.to_string(), Value::Array(items))
    }
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
            query = query_of(&write.query, args);
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
