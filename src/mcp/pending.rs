//! Two-step writes: a `prepare_*` tool stores the exact change and returns a preview and a
//! confirmation id; `confirm_change` executes it once, later, with the caller's credential.
//!
//! - Prepare executes nothing. It reads the target through the REST pipeline (so it sees exactly
//!   what the caller may see) and remembers the target's version (its ETag).
//! - A confirmation id is bound to the actor and client that prepared it, single-use, and expires
//!   (`pending_change_ttl_secs`). Only its SHA-256 is stored (table `mcp_pending_changes`).
//! - Confirm claims the id atomically (used or not, it cannot run twice), then runs the change
//!   through the pipeline, where it is authorized again as of now, with `If-Match` on the
//!   previewed version: a target that changed since the preview is left untouched.

use super::advice;
use super::call::{self, from_rest, Caller};
use crate::http::ApiError;
use crate::http::App;
use crate::time::rfc3339;
use hyper::{Method, StatusCode};
use rusqlite::OptionalExtension;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// A change ready to be stored: what to show and what to run.
pub struct ChangePlan {
    pub tool: &'static str,
    pub operation: &'static str,
    pub target_type: &'static str,
    pub target_id: String,
    /// GET path of the target's current state.
    pub read_path: String,
    pub method: Method,
    pub path: String,
    /// JSON body of the change request, if the route takes one.
    pub body: Option<Value>,
    /// The fields of the target the change sets, for the preview.
    pub changes: Map<String, Value>,
    /// A value added to or removed from an array field of the target; `changes` is then
    /// computed from the current state.
    pub array_edit: Option<ArrayEdit>,
    /// The write creates something: the difference is what it would return.
    pub creates: bool,
    /// Show the token cost (`activation_cost_tokens`) and the company's balance.
    pub with_cost: bool,
    /// The exact tool arguments.
    pub arguments: Value,
}

/// See [`ChangePlan::array_edit`].
pub struct ArrayEdit {
    pub field: &'static str,
    pub value: String,
    pub add: bool,
}

impl ArrayEdit {
    /// The field's new value: the current array with the value added (kept sorted) or removed.
    fn apply(&self, current: &Value) -> (String, Value) {
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

fn hash(s: &str) -> String {
    crate::auth::keys::hash(s)
}

/// The ETag of a response, or a fingerprint of its body when the route sends none.
fn version_of(resp: &crate::http::Response) -> String {
    match resp.headers.get("etag").and_then(|v| v.to_str().ok()) {
        Some(tag) => tag.to_string(),
        None => {
            let digest = Sha256::digest(&resp.body);
            let mut s = String::from("sha256:");
            for b in digest {
                s.push_str(&format!("{b:02x}"));
            }
            s
        }
    }
}

fn storage_error(e: ApiError) -> String {
    tracing::warn!(error = %e, "pending change storage failed");
    "The change could not be stored or read right now; nothing was applied. Retry shortly.".into()
}

pub fn prepare(app: &App, caller: &Caller, plan: &ChangePlan) -> Result<Value, String> {
    let resp = caller.rest(
        app,
        Method::GET,
        plan.read_path.clone(),
        String::new(),
        None,
        None,
    );
    let current = from_rest(&resp)?;
    let version = version_of(&resp);
    let mut changes = plan.changes.clone();
    if let Some(edit) = &plan.array_edit {
        let (field, value) = edit.apply(&current);
        changes.insert(field, value);
    }
    let differences: Vec<Value> = changes
        .iter()
        .filter(|(k, v)| current.get(k.as_str()) != Some(*v))
        .map(|(k, v)| {
            json!({"field": k, "current": current.get(k.as_str()).cloned().unwrap_or(Value::Null), "proposed": v})
        })
        .collect();
    let mut differences = differences;
    if differences.is_empty() && !plan.creates {
        return Err(format!(
            "Nothing to change: the {} `{}` already has these values. Nothing was prepared.",
            plan.target_type, plan.target_id
        ));
    }
    let mut proposed = current.clone();
    if let Value::Object(p) = &mut proposed {
        for (k, v) in &changes {
            p.insert(k.clone(), v.clone());
        }
    }
    // The write itself, run with every check it makes (state rules, balance, plan limits,
    // validation, If-Match) and rolled back: a change that cannot succeed gets no confirmation id.
    let if_match = (!version.starts_with("sha256:")).then_some(version.as_str());
    let trial = crate::db::Db::dry_run(|| {
        caller.rest(
            app,
            plan.method.clone(),
            plan.path.clone(),
            String::new(),
            plan.body.as_ref().map(|b| b.to_string().into_bytes()),
            if_match,
        )
    });
    if !trial.status.is_success() {
        return Err(format!(
            "This change cannot be made as it stands, so nothing was prepared and no confirmation_id was issued. Tell the user why: {}",
            advice::explain(app, caller, &trial)
        ));
    }
    if plan.creates {
        // What the write returned when tried (its ids and times will differ when it runs).
        let created = from_rest(&trial).unwrap_or(Value::Null);
        let field = created["object"].as_str().unwrap_or("result").to_string();
        differences.push(json!({"field": field, "current": null, "proposed": created}));
    }
    let cost = if plan.with_cost {
        cost(app, caller, &current)
    } else {
        Value::Null
    };

    let confirmation_id = format!("chg_{}", crate::random::base62(32));
    let now = crate::time::now();
    let ttl = app.settings.pending_change_ttl_secs as i64;
    let expires_at = now + ttl;
    let principal = &caller.principal;
    let body = plan.body.as_ref().map(Value::to_string);
    app.db
        .write(|tx| -> Result<(), ApiError> {
            // Old rows go here, a day after expiry (kept that long to explain a late confirmation).
            tx.prepare_cached("DELETE FROM mcp_pending_changes WHERE expires_at < ?1")?
                .execute([now - 86_400])?;
            tx.prepare_cached(
                "INSERT INTO mcp_pending_changes (id_hash, actor, client_id, tool, arguments, operation,
                    target_type, target_id, read_path, method, path, body, version, created_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            )?
            .execute(rusqlite::params![
                hash(&confirmation_id),
                principal.actor_id(),
                principal.client_id(),
                plan.tool,
                plan.arguments.to_string(),
                plan.operation,
                plan.target_type,
                plan.target_id,
                plan.read_path,
                plan.method.as_str(),
                plan.path,
                body,
                version,
                now,
                expires_at,
            ])?;
            Ok(())
        })
        .map_err(storage_error)?;

    let redacted = redacted_fields(&differences);
    let cost_note = if cost.is_null() {
        String::new()
    } else {
        " and its token cost".to_string()
    };
    let lifetime = duration_words(ttl);
    Ok(json!({
        "object": "pending_change",
        "confirmation_id": confirmation_id,
        "status": "awaiting_confirmation",
        "tool": plan.tool,
        "operation": plan.operation,
        "target": {"type": plan.target_type, "id": plan.target_id, "version": version},
        "current": current,
        "proposed": proposed,
        "differences": differences,
        "cost": cost,
        "redacted_fields": redacted,
        "expires_at": rfc3339(expires_at),
        "next_step": format!(
            "Nothing has been changed yet. Show the user this preview (the differences{cost_note}) and ask for explicit confirmation.{} Only if the user confirms, call confirm_change with confirmation_id `{confirmation_id}`; if not, call cancel_change. The id works once, only for this API key, for {lifetime}.",
            redaction_note(&redacted)
        ),
    }))
}

/// The fields whose shown value (now or proposed) the redactor will replace: the user cannot see
/// what they confirm there, so the preview says so.
fn redacted_fields(differences: &[Value]) -> Vec<String> {
    let mut fields = Vec::new();
    for d in differences {
        let hidden = ["current", "proposed"].iter().any(|side| {
            let mut shown = d[*side].clone();
            crate::redact::redact_value(&mut shown);
            shown != d[*side]
        });
        if let (true, Some(field)) = (hidden, d["field"].as_str()) {
            fields.push(field.to_string());
        }
    }
    fields
}

fn redaction_note(fields: &[String]) -> String {
    if fields.is_empty() {
        return String::new();
    }
    let list = fields
        .iter()
        .map(|f| format!("`{f}`"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        " Part of {list} is shown as {marker} because it looks like a secret: tell the user so. What will be stored is exactly the text you sent, not {marker}.",
        marker = crate::redact::REDACTED
    )
}

/// A lifetime in words an assistant can repeat exactly: "45 seconds", "1 minute", "15 minutes",
/// "2 hours", "1 hour 30 minutes" (seconds are dropped from two minutes on).
pub fn duration_words(secs: i64) -> String {
    fn unit(n: i64, one: &str) -> String {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {one}s")
        }
    }
    let secs = secs.max(0);
    if secs < 120 && secs % 60 != 0 {
        return unit(secs, "second");
    }
    let minutes = secs / 60;
    let (hours, rest) = (minutes / 60, minutes % 60);
    match (hours, rest) {
        (0, m) => unit(m, "minute"),
        (h, 0) => unit(h, "hour"),
        (h, m) => format!("{} {}", unit(h, "hour"), unit(m, "minute")),
    }
}

/// The activation cost and the company's balance, read through the pipeline (so a key without
/// `tokens:read` sees the cost but not the balance).
fn cost(app: &App, caller: &Caller, current: &Value) -> Value {
    let tokens = current
        .get("activation_cost_tokens")
        .and_then(Value::as_i64);
    let balance = current
        .get("company_id")
        .and_then(Value::as_str)
        .and_then(|company| {
            let route = app.router.by_operation("getTokenBalance")?;
            let mut query = String::from("company_id=");
            call::encode(company, &mut query);
            let resp = caller.rest(
                app,
                route.method.clone(),
                route.path.to_string(),
                query,
                None,
                None,
            );
            if !resp.status.is_success() {
                return None;
            }
            resp.body_json()?.get("balance")?.as_i64()
        });
    let after = tokens.zip(balance).map(|(t, b)| b - t);
    json!({"tokens": tokens, "balance": balance, "balance_after": after, "sufficient": after.map(|a| a >= 0)})
}

struct Claimed {
    tool: String,
    operation: String,
    target_type: String,
    target_id: String,
    read_path: String,
    method: String,
    path: String,
    body: Option<String>,
    version: String,
}

/// Why an id could not be claimed. Another credential's id reads exactly like an unknown one.
fn why_not(app: &App, caller: &Caller, id_hash: &str, now: i64) -> String {
    let p = &caller.principal;
    let row = app.db.conn().map_err(ApiError::from).and_then(|conn| {
        conn.prepare_cached(
            "SELECT used_at, outcome, expires_at FROM mcp_pending_changes
             WHERE id_hash = ?1 AND actor = ?2 AND client_id IS ?3",
        )?
        .query_row(
            rusqlite::params![id_hash, p.actor_id(), p.client_id()],
            |r| {
                Ok((
                    r.get::<_, Option<i64>>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            },
        )
        .optional()
        .map_err(ApiError::from)
    });
    match row {
        Err(e) => storage_error(e),
        Ok(None) => "No pending change with this confirmation_id is available to this API key. Nothing was applied. Prepare the change first.".into(),
        Ok(Some((Some(_), Some(outcome), _))) if outcome == "cancelled" => {
            "This change was cancelled; nothing was applied. Prepare it again if the user still wants it.".into()
        }
        Ok(Some((Some(_), Some(outcome), _))) if outcome != "applied" => format!(
            "This confirmation_id was already used, and that confirmation did not apply the change ({outcome}); nothing was applied. Prepare the change again."
        ),
        Ok(Some((Some(_), _, _))) => "This confirmation_id was already used (it works once); nothing more was applied.".into(),
        Ok(Some((None, _, expires_at))) if expires_at <= now => format!(
            "This confirmation_id expired at {}; nothing was applied. Prepare the change again and ask the user to confirm.",
            rfc3339(expires_at)
        ),
        Ok(Some(_)) => "This confirmation_id cannot be used now; nothing was applied.".into(),
    }
}

fn record(app: &App, id_hash: &str, outcome: &str) {
    let result = app.db.write(|tx| -> Result<(), ApiError> {
        tx.prepare_cached("UPDATE mcp_pending_changes SET outcome = ?1 WHERE id_hash = ?2")?
            .execute(rusqlite::params![outcome, id_hash])?;
        Ok(())
    });
    if let Err(e) = result {
        tracing::warn!(error = %e, "recording a pending change outcome failed");
    }
}

pub fn confirm(app: &App, caller: &Caller, confirmation_id: &str) -> Result<Value, String> {
    let id_hash = hash(confirmation_id);
    let now = crate::time::now();
    let p = &caller.principal;
    let claimed = app
        .db
        .write(|tx| -> Result<Option<Claimed>, ApiError> {
            Ok(tx
                .prepare_cached(
                    "UPDATE mcp_pending_changes SET used_at = ?1, outcome = 'confirming'
                     WHERE id_hash = ?2 AND actor = ?3 AND client_id IS ?4
                       AND used_at IS NULL AND expires_at > ?1
                     RETURNING tool, operation, target_type, target_id, read_path, method, path, body, version",
                )?
                .query_row(
                    rusqlite::params![now, id_hash, p.actor_id(), p.client_id()],
                    |r| {
                        Ok(Claimed {
                            tool: r.get(0)?,
                            operation: r.get(1)?,
                            target_type: r.get(2)?,
                            target_id: r.get(3)?,
                            read_path: r.get(4)?,
                            method: r.get(5)?,
                            path: r.get(6)?,
                            body: r.get(7)?,
                            version: r.get(8)?,
                        })
                    },
                )
                .optional()?)
        })
        .map_err(storage_error)?;
    let Some(c) = claimed else {
        return Err(why_not(app, caller, &id_hash, now));
    };
    let stale = || {
        format!(
            "The {} `{}` changed since the preview, so nothing was applied. Prepare the change again, show the user the new preview and ask again.",
            c.target_type, c.target_id
        )
    };

    // The version check is made here too, so routes that do not honour If-Match are covered; the
    // If-Match below closes the gap between this read and the write on routes that do.
    let now_state = caller.rest(
        app,
        Method::GET,
        c.read_path.clone(),
        String::new(),
        None,
        None,
    );
    if !now_state.status.is_success() {
        record(app, &id_hash, "refused");
        return Err(format!(
            "Nothing was applied: {}",
            advice::explain(app, caller, &now_state)
        ));
    }
    if version_of(&now_state) != c.version {
        record(app, &id_hash, "stale");
        return Err(stale());
    }
    let method = Method::from_bytes(c.method.as_bytes()).unwrap_or(Method::POST);
    let if_match = (!c.version.starts_with("sha256:")).then_some(c.version.as_str());
    let resp = caller.rest(
        app,
        method,
        c.path.clone(),
        String::new(),
        c.body.map(String::into_bytes),
        if_match,
    );
    if resp.status == StatusCode::PRECONDITION_FAILED {
        record(app, &id_hash, "stale");
        return Err(stale());
    }
    if !resp.status.is_success() {
        record(app, &id_hash, "refused");
        return Err(format!(
            "Nothing was applied: {}",
            advice::explain(app, caller, &resp)
        ));
    }
    record(app, &id_hash, "applied");
    let result = from_rest(&resp).unwrap_or_else(|_| json!({"ok": true}));
    Ok(json!({
        "object": "change_result",
        "status": "applied",
        "confirmation_id": confirmation_id,
        "tool": c.tool,
        "operation": c.operation,
        "target": {"type": c.target_type, "id": c.target_id},
        "result": result,
    }))
}

pub fn cancel(app: &App, caller: &Caller, confirmation_id: &str) -> Result<Value, String> {
    let id_hash = hash(confirmation_id);
    let now = crate::time::now();
    let p = &caller.principal;
    let n = app
        .db
        .write(|tx| -> Result<usize, ApiError> {
            Ok(tx
                .prepare_cached(
                    "UPDATE mcp_pending_changes SET used_at = ?1, outcome = 'cancelled'
                     WHERE id_hash = ?2 AND actor = ?3 AND client_id IS ?4
                       AND used_at IS NULL AND expires_at > ?1",
                )?
                .execute(rusqlite::params![now, id_hash, p.actor_id(), p.client_id()])?)
        })
        .map_err(storage_error)?;
    if n == 0 {
        return Err(why_not(app, caller, &id_hash, now));
    }
    Ok(
        json!({"object": "change_result", "status": "cancelled", "confirmation_id": confirmation_id}),
    )
}

fn target_schema(with_version: bool) -> Value {
    let mut s = json!({"type": "object", "additionalProperties": false, "required": ["type", "id"],
        "properties": {"type": {"type": "string"}, "id": {"type": "string"}}});
    if with_version {
        s["required"] = json!(["type", "id", "version"]);
        s["properties"]["version"] =
            json!({"type": "string", "description": "The ETag of the previewed state."});
    }
    s
}

/// The output of the prepare tools; `current` is the REST schema of the target.
pub fn preview_schema(current: Value) -> Value {
    json!({"type": "object", "additionalProperties": false,
        "required": ["object", "confirmation_id", "status", "tool", "operation", "target", "current",
            "proposed", "differences", "cost", "redacted_fields", "expires_at", "next_step"],
        "properties": {
            "object": {"const": "pending_change"},
            "confirmation_id": {"type": "string", "description": "Pass to confirm_change after the user confirms, or to cancel_change."},
            "status": {"const": "awaiting_confirmation"},
            "tool": {"type": "string"},
            "operation": {"type": "string", "description": "The REST operation the change will run."},
            "target": target_schema(true),
            "current": current,
            "proposed": {"type": "object", "description": "The target as it will be after the change."},
            "differences": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                "required": ["field", "current", "proposed"],
                "properties": {"field": {"type": "string"}, "current": {}, "proposed": {}}}},
            "cost": {"anyOf": [{"type": "null"}, {"type": "object", "additionalProperties": false,
                "required": ["tokens", "balance", "balance_after", "sufficient"],
                "properties": {"tokens": {"type": ["integer", "null"]}, "balance": {"type": ["integer", "null"]},
                    "balance_after": {"type": ["integer", "null"]}, "sufficient": {"type": ["boolean", "null"]}}}]},
            "redacted_fields": {"type": "array", "items": {"type": "string"},
                "description": "Fields whose shown value hides text that looks like a secret; the value stored is the one sent."},
            "expires_at": {"type": "string", "format": "date-time"},
            "next_step": {"type": "string"}}})
}

pub fn confirm_schema(result: Value) -> Value {
    json!({"type": "object", "additionalProperties": false,
        "required": ["object", "status", "confirmation_id", "tool", "operation", "target", "result"],
        "properties": {
            "object": {"const": "change_result"},
            "status": {"const": "applied"},
            "confirmation_id": {"type": "string"},
            "tool": {"type": "string"},
            "operation": {"type": "string"},
            "target": target_schema(false),
            "result": result}})
}

pub fn cancel_schema() -> Value {
    json!({"type": "object", "additionalProperties": false,
        "required": ["object", "status", "confirmation_id"],
        "properties": {
            "object": {"const": "change_result"},
            "status": {"const": "cancelled"},
            "confirmation_id": {"type": "string"}}})
}
