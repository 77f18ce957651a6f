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
use super::call::{from_rest, Caller};
use super::failure::Failure;
use super::preview::{self, version_of};
use crate::http::ApiError;
use crate::http::App;
use crate::time::rfc3339;
use hyper::{Method, StatusCode};
use rusqlite::OptionalExtension;
use serde_json::{json, Value};

pub use super::preview::{ArrayEdit, ChangePlan, PlanKind};

fn hash(s: &str) -> String {
    crate::auth::keys::hash(s)
}

fn storage_error(e: ApiError) -> Failure {
    tracing::warn!(error = %e, "pending change storage failed");
    Failure::new(
        "storage_unavailable",
        503,
        "The change could not be stored or read right now; nothing was applied. Retry shortly.",
    )
}

pub fn prepare(app: &App, caller: &Caller, plan: &ChangePlan) -> Result<Value, Failure> {
    let p = preview::build(app, caller, plan)?;
    let version = &p.version;
    let confirmation_id = format!("chg_{}", crate::random::base62("confirmation", 32));
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

    let cost_note = if p.cost.is_null() {
        String::new()
    } else {
        " and its cost".to_string()
    };
    let lifetime = duration_words(ttl);
    let notes = preview::notes(&p);
    let mut out = json!({
        "object": "pending_change",
        "confirmation_id": confirmation_id,
        "status": "awaiting_confirmation",
        "tool": plan.tool,
        "operation": plan.operation,
        "target": {"type": plan.target_type, "id": plan.target_id, "version": version},
        "current": p.current,
        "after": p.after,
        "set_at_confirmation": p.set_at_confirmation,
        "differences": p.differences,
        "cost": p.cost,
        "redacted_fields": p.redacted_fields,
        "expires_at": rfc3339(expires_at),
        "next_step": format!(
            "Nothing has been changed yet. Show the user this preview (the differences{cost_note}) and ask for explicit confirmation.{notes} Only if the user confirms, call confirm_change with confirmation_id `{confirmation_id}`; if not, call cancel_change. The id works once, only for this API key, for {lifetime}."
        ),
    });
    if let Some(w) = &p.withholds {
        out["withheld"] = preview::withheld_value(w, &p.after);
    }
    Ok(out)
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

/// A stored id as this caller sees it: (used_at, outcome, expires_at); another credential's id
/// reads exactly like an unknown one.
type Stored = (Option<i64>, Option<String>, i64);

fn stored(app: &App, caller: &Caller, id_hash: &str) -> Result<Option<Stored>, ApiError> {
    let p = &caller.principal;
    let conn = app.db.conn()?;
    let row = conn
        .prepare_cached(
            "SELECT used_at, outcome, expires_at FROM mcp_pending_changes
             WHERE id_hash = ?1 AND actor = ?2 AND client_id IS ?3",
        )?
        .query_row(
            rusqlite::params![id_hash, p.actor_id(), p.client_id()],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    Ok(row)
}

/// Why an id could not be claimed.
fn why_not(app: &App, caller: &Caller, id_hash: &str, now: i64) -> Failure {
    let used = |message: String| Failure::new("confirmation_used", 409, message);
    match stored(app, caller, id_hash) {
        Err(e) => storage_error(e),
        Ok(None) => Failure::new("confirmation_not_found", 404, "No pending change with this confirmation_id is available to this API key. Nothing was applied. Prepare the change first."),
        Ok(Some((Some(_), Some(outcome), _))) if outcome == "cancelled" => Failure::new(
            "confirmation_cancelled",
            409,
            "This change was cancelled; nothing was applied. Prepare it again if the user still wants it.",
        ),
        // `confirming`: another call holds it right now; to this one it is simply used.
        Ok(Some((Some(_), Some(outcome), _))) if outcome != "applied" && outcome != "confirming" => used(format!(
            "This confirmation_id was already used, and that confirmation did not apply the change ({outcome}); nothing was applied. Prepare the change again."
        )),
        Ok(Some((Some(_), _, _))) => used("This confirmation_id was already used (it works once); nothing more was applied.".into()),
        Ok(Some((None, _, expires_at))) if expires_at <= now => Failure::new(
            "confirmation_expired",
            410,
            format!(
                "This confirmation_id expired at {}; nothing was applied. Prepare the change again and ask the user to confirm.",
                rfc3339(expires_at)
            ),
        ),
        Ok(Some(_)) => Failure::new("confirmation_unavailable", 409, "This confirmation_id cannot be used now; nothing was applied."),
    }
}

/// Why this confirmation id cannot be confirmed now (used, cancelled, expired or unknown).
pub fn unavailable(app: &App, caller: &Caller, confirmation_id: &str) -> Failure {
    why_not(app, caller, &hash(confirmation_id), crate::time::now())
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

pub fn confirm(app: &App, caller: &Caller, confirmation_id: &str) -> Result<Value, Failure> {
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
        Failure::new(
            "stale_preview",
            412,
            format!(
                "The {} `{}` changed since the preview, so nothing was applied. Prepare the change again, show the user the new preview and ask again.",
                c.target_type, c.target_id
            ),
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
        return Err(Failure::rest(
            &now_state,
            format!(
                "Nothing was applied: {}",
                advice::explain(app, caller, &now_state)
            ),
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
        return Err(Failure::rest(
            &resp,
            format!(
                "Nothing was applied: {}",
                advice::explain(app, caller, &resp)
            ),
        ));
    }
    record(app, &id_hash, "applied");
    let mut result = from_rest(&resp).unwrap_or_else(|_| json!({"ok": true}));
    let withholds = crate::mcp::state(app)
        .catalog(&app.router)
        .get(&c.tool)
        .and_then(|t| t.spec.withholds);
    let mut answer = json!({
        "object": "change_result",
        "status": "applied",
        "confirmation_id": confirmation_id,
        "tool": c.tool,
        "operation": c.operation,
        "target": {"type": c.target_type, "id": c.target_id},
    });
    if let Some(w) = withholds {
        preview::withhold(&mut result, w.field);
        answer["withheld"] = preview::withheld_value(&w, &result);
    }
    answer["result"] = result;
    Ok(answer)
}

pub fn cancel(app: &App, caller: &Caller, confirmation_id: &str) -> Result<Value, Failure> {
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
    // Cancelling again is a no-op with the same answer (the tool is idempotent).
    let again = n == 0
        && matches!(
            stored(app, caller, &id_hash),
            Ok(Some((Some(_), Some(outcome), _))) if outcome == "cancelled"
        );
    if n == 0 && !again {
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
    preview::schema(current, target_schema(true))
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
            "result": result,
            "withheld": preview::withheld_schema()}})
}

pub fn cancel_schema() -> Value {
    json!({"type": "object", "additionalProperties": false,
        "required": ["object", "status", "confirmation_id"],
        "properties": {
            "object": {"const": "change_result"},
            "status": {"const": "cancelled"},
            "confirmation_id": {"type": "string"}}})
}
