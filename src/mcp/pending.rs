//! Two-step writes: a `prepare_*` tool stores the exact change and returns a preview and a
//! confirmation id; `confirm_change` executes it once, later, with the caller's credential.
//!
//! - Prepare executes nothing. It reads the target through the REST pipeline (so it sees exactly
//!   what the caller may see) and remembers the target's version (its ETag).
//! - A confirmation id is bound to the actor and client that prepared it, single-use, and expires
//!   (`pending_change_ttl_secs`). Only its SHA-256 is stored (table `mcp_pending_changes`).
//! - Confirm ([`super::confirm`]) claims the id atomically (used or not, it cannot run twice),
//!   checks that everything the preview showed still holds, then runs the change through the
//!   pipeline, where it is authorized again as of now, bound to the previewed version and balance.

use super::call::Caller;
use super::envelope::{self, ChangeCancelled, PendingChange, PreviewedTarget, WithheldNote};
use super::failure::Failure;
use super::plan::ChangePlan;
use super::preview::{self, Preview};
use super::summary;
use super::tool::Tool;
use crate::http::ApiError;
use crate::http::App;
use crate::time::rfc3339;
use rusqlite::OptionalExtension;
use serde_json::Value;

pub(super) fn hash(s: &str) -> String {
    crate::auth::keys::hash(s)
}

pub(super) fn storage_error(e: ApiError) -> Failure {
    tracing::warn!(error = %e, "pending change storage failed");
    Failure::new(
        "storage_unavailable",
        503,
        "The change could not be stored or read right now; nothing was applied. Retry shortly.",
    )
}

pub fn prepare(
    app: &App,
    caller: &Caller,
    tool: &Tool,
    plan: &ChangePlan,
) -> Result<PendingChange, Failure> {
    let p = preview::build(app, caller, plan)?;
    let summary = summary::words(app, caller, &tool.spec, plan, &p);
    let (confirmation_id, expires_at) = store(app, caller, plan, &p, &summary)?;
    Ok(shown(app, plan, &p, &summary, &confirmation_id, expires_at))
}

/// The bytes of arguments one credential may hold in changes waiting for confirmation (an inline
/// upload carries its file): more is refused until some are confirmed, cancelled or expired.
const PENDING_BYTES_MAX: i64 = 8 * 1024 * 1024;

/// Stores a previewed change under a new confirmation id (only its SHA-256), with what it is bound
/// to: the fingerprint of what the preview showed, the paths only the confirmation sets, the cost
/// and the balance shown.
fn store(
    app: &App,
    caller: &Caller,
    plan: &ChangePlan,
    p: &Preview,
    summary: &str,
) -> Result<(String, i64), Failure> {
    let confirmation_id = format!(
        "chg_{}",
        crate::random::base62(caller.seeded, "confirmation", 32)
    );
    let now = caller.now();
    let expires_at = now + app.settings.pending_change_ttl_secs as i64;
    let principal = &caller.principal;
    let set_paths = serde_json::to_string(&p.set_at_confirmation).unwrap_or_default();
    let cost = (!p.cost.is_none())
        .then(|| serde_json::to_string(&p.cost).ok())
        .flatten();
    let (balance_company, balance) = p.balance.clone().unzip();
    let arguments = plan.arguments.to_string();
    let held = caller
        .db
        .write(&caller.intent, |tx| -> Result<Option<i64>, ApiError> {
            // Old rows go here, a day after expiry (kept that long to explain a late confirmation).
            tx.prepare_cached("DELETE FROM mcp_pending_changes WHERE expires_at < ?1")?
                .execute([now - 86_400])?;
            let held: i64 = tx
                .prepare_cached(
                    "SELECT coalesce(sum(length(arguments)), 0) FROM mcp_pending_changes
                     WHERE actor = ?1 AND used_at IS NULL AND expires_at > ?2",
                )?
                .query_row(rusqlite::params![principal.actor_id(), now], |r| r.get(0))?;
            if held + arguments.len() as i64 > PENDING_BYTES_MAX {
                return Ok(Some(held));
            }
            tx.prepare_cached(
                "INSERT INTO mcp_pending_changes (id_hash, actor, client_id, tool, arguments, operation,
                    target_type, target_id, read_path, method, path, body, version, created_at, expires_at,
                    shown, set_paths, summary, cost, balance_company, balance)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                    ?18, ?19, ?20, ?21)",
            )?
            .execute(rusqlite::params![
                hash(&confirmation_id),
                principal.actor_id(),
                principal.client_id(),
                plan.tool,
                arguments,
                plan.operation,
                plan.target_type,
                plan.target_id,
                plan.read_path,
                plan.method.as_str(),
                plan.path,
                plan.json_body(),
                p.version,
                now,
                expires_at,
                p.shown,
                set_paths,
                summary,
                cost,
                balance_company,
                balance,
            ])?;
            Ok(None)
        })
        .map_err(storage_error)?;
    if let Some(held) = held {
        return Err(Failure::new(
            "too_many_pending_changes",
            409,
            format!(
                "This API key already holds {held} bytes of changes waiting for confirmation, and this one would pass the {PENDING_BYTES_MAX} it may hold; nothing was prepared. Confirm or cancel the pending ones (or let them expire), then prepare this again."
            ),
        ));
    }
    Ok((confirmation_id, expires_at))
}

/// The preview as the prepare tool answers it.
fn shown(
    app: &App,
    plan: &ChangePlan,
    p: &Preview,
    summary: &str,
    confirmation_id: &str,
    expires_at: i64,
) -> PendingChange {
    let cost_note = if p.cost.is_none() {
        String::new()
    } else {
        " and its cost".to_string()
    };
    let lifetime = crate::time::duration_words(app.settings.pending_change_ttl_secs as i64);
    let notes = preview::notes(p);
    PendingChange {
        object: PendingChange::OBJECT,
        confirmation_id: confirmation_id.to_string(),
        status: PendingChange::STATUS,
        tool: plan.tool.to_string(),
        operation: plan.operation.to_string(),
        target: PreviewedTarget {
            kind: plan.target_type.to_string(),
            id: plan.target_id.to_string(),
            version: p.version.clone(),
        },
        summary: summary.to_string(),
        current: p.current.clone(),
        after: p.after.clone(),
        set_at_confirmation: p.set_at_confirmation.clone(),
        differences: p.differences.clone(),
        cost: p.cost.clone(),
        redacted_fields: p.redacted_fields.clone(),
        expires_at: rfc3339(expires_at),
        next_step: format!(
            "Nothing has been changed yet. Show the user this preview (the summary, the differences{cost_note}) and ask for explicit confirmation.{notes} Only if the user confirms, call confirm_change with confirmation_id `{confirmation_id}`; if not, call cancel_change. The id works once, only for this API key, for {lifetime}, and only while everything this preview shows stays as it is."
        ),
        withheld: p.withholds.as_ref().map(|w| WithheldNote::of(w, &p.after)),
    }
}

/// A stored id as this caller sees it: (used_at, outcome, expires_at); another credential's id
/// reads exactly like an unknown one.
type Stored = (Option<i64>, Option<String>, i64);

fn stored(caller: &Caller, id_hash: &str) -> Result<Option<Stored>, ApiError> {
    let p = &caller.principal;
    let conn = caller.db.conn()?;
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
pub(super) fn why_not(caller: &Caller, id_hash: &str, now: i64) -> Failure {
    let used = |message: String| Failure::new("confirmation_used", 409, message);
    match stored(caller, id_hash) {
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
pub fn unavailable(caller: &Caller, confirmation_id: &str) -> Failure {
    why_not(caller, &hash(confirmation_id), caller.now())
}

pub(super) fn record(caller: &Caller, id_hash: &str, outcome: &str) {
    let result = caller
        .db
        .write(&caller.intent, |tx| -> Result<(), ApiError> {
            tx.prepare_cached("UPDATE mcp_pending_changes SET outcome = ?1 WHERE id_hash = ?2")?
                .execute(rusqlite::params![outcome, id_hash])?;
            Ok(())
        });
    if let Err(e) = result {
        tracing::warn!(error = %e, "recording a pending change outcome failed");
    }
}

pub fn cancel(caller: &Caller, confirmation_id: &str) -> Result<Value, Failure> {
    let id_hash = hash(confirmation_id);
    let now = caller.now();
    let p = &caller.principal;
    let n = caller
        .db
        .write(&caller.intent, |tx| -> Result<usize, ApiError> {
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
            stored(caller, &id_hash),
            Ok(Some((Some(_), Some(outcome), _))) if outcome == "cancelled"
        );
    if n == 0 && !again {
        return Err(why_not(caller, &id_hash, now));
    }
    Ok(envelope::to_json(&ChangeCancelled::of(confirmation_id)))
}
