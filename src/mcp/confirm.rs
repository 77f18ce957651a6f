//! `confirm_change`: runs a prepared change once, only while everything its preview showed holds.
//!
//! 1. The confirmation id is claimed atomically (used or not, it cannot run twice).
//! 2. The change is built again from the stored arguments, and [`preview::recheck`] reads the
//!    target and runs the write once more as a dry run: what comes out must have the fingerprint
//!    the preview stored (the target's version and state, and the outcome with what only the
//!    confirmation sets blanked). An ad assigned to another screen, a promotion that became active
//!    by the clock, a purchase whose balance or invoice moved: the change is stale.
//! 3. The write runs through the pipeline as the caller (authorized again, as of now) with
//!    `If-Match` on the previewed version and, when the preview showed a balance, bound to that
//!    balance inside the write's own transaction ([`crate::db::WriteIntent::expected_balance`]): nothing can slip
//!    in between the check and the write.
//!
//! A stale change applies nothing; the refusal (`stale_preview`) carries a fresh preview, stored
//! under a new confirmation id, for the assistant to show the person again.

use super::advice;
use super::call::{from_rest, Caller, WriteTerms};
use super::envelope::{
    self, AppliedWithheld, ChangeApplied, Cost, Target, WithheldNote, CHANGE_RESULT,
};
use super::failure::Failure;
use super::handover;
use super::pending::{self, hash, record, storage_error, why_not};
use super::plan::{change_plan, ChangePlan};
use super::preview::{self, Recheck};
use super::spec::Kind;
use super::state::state;
use super::tool::Tool;
use crate::db::ExpectedBalance;
use crate::http::reveals::Subject;
use crate::http::{ApiError, App};
use hyper::StatusCode;
use rusqlite::OptionalExtension;
use serde_json::{json, Map, Value};

/// A claimed change, as stored by [`pending::prepare`].
struct Claimed {
    tool: String,
    operation: String,
    target_type: String,
    target_id: String,
    arguments: String,
    /// The previewed target's version (ETag or fingerprint).
    version: String,
    /// `None` for a change stored before previews were fingerprinted: prepared again.
    shown: Option<String>,
    set_paths: Vec<String>,
    cost: Cost,
    balance: Option<(String, i64)>,
}

fn claim(caller: &Caller, id_hash: &str, now: i64) -> Result<Option<Claimed>, Failure> {
    let p = &caller.principal;
    caller
        .db
        .write(&caller.intent, |tx| -> Result<Option<Claimed>, ApiError> {
            Ok(tx
                .prepare_cached(
                    "UPDATE mcp_pending_changes SET used_at = ?1, outcome = 'confirming'
                     WHERE id_hash = ?2 AND actor = ?3 AND client_id IS ?4
                       AND used_at IS NULL AND expires_at > ?1
                     RETURNING tool, operation, target_type, target_id, arguments, shown, set_paths,
                       cost, balance_company, balance, version",
                )?
                .query_row(
                    rusqlite::params![now, id_hash, p.actor_id(), p.client_id()],
                    |r| {
                        let set_paths: Option<String> = r.get(6)?;
                        let cost: Option<String> = r.get(7)?;
                        let company: Option<String> = r.get(8)?;
                        let balance: Option<i64> = r.get(9)?;
                        Ok(Claimed {
                            tool: r.get(0)?,
                            operation: r.get(1)?,
                            target_type: r.get(2)?,
                            target_id: r.get(3)?,
                            arguments: r.get(4)?,
                            shown: r.get(5)?,
                            set_paths: set_paths
                                .and_then(|s| serde_json::from_str(&s).ok())
                                .unwrap_or_default(),
                            cost: cost
                                .and_then(|s| serde_json::from_str(&s).ok())
                                .unwrap_or_default(),
                            balance: company.zip(balance),
                            version: r.get(10)?,
                        })
                    },
                )
                .optional()?)
        })
        .map_err(storage_error)
}

/// The prepare tool of a change waiting for this caller, if one does.
fn waiting_tool(caller: &Caller, id_hash: &str, now: i64) -> Result<Option<String>, Failure> {
    let p = &caller.principal;
    let read = || -> Result<Option<String>, ApiError> {
        Ok(caller
            .db
            .conn()?
            .prepare_cached(
                "SELECT tool FROM mcp_pending_changes
                 WHERE id_hash = ?1 AND actor = ?2 AND client_id IS ?3
                   AND used_at IS NULL AND expires_at > ?4",
            )?
            .query_row(
                rusqlite::params![id_hash, p.actor_id(), p.client_id(), now],
                |r| r.get(0),
            )
            .optional()?)
    };
    read().map_err(storage_error)
}

pub fn confirm(app: &App, caller: &Caller, confirmation_id: &str) -> Result<Value, Failure> {
    let id_hash = hash(confirmation_id);
    let now = caller.now();
    // A session narrowed to some toolsets, or to reads, confirms only what it could have
    // prepared: another session's change stays waiting for a session that may.
    let catalog = state(app).catalog(&app.router);
    if let Some(name) = waiting_tool(caller, &id_hash, now)? {
        if let Some(tool) = catalog.get(&name) {
            if !caller.view.shows(tool, &catalog.tools) {
                return Err(Failure::new(
                    "not_in_this_view",
                    403,
                    format!(
                        "This change was prepared with {name}, which this session could not have called: {} Nothing was applied; the change still waits for a session that selects it.",
                        caller.view.why_hidden(tool)
                    ),
                ));
            }
        }
    }
    let Some(c) = claim(caller, &id_hash, now)? else {
        return Err(why_not(caller, &id_hash, now));
    };
    let tool = catalog
        .get(&c.tool)
        .filter(|t| t.spec.kind == Kind::Prepare);
    let args: Option<Map<String, Value>> = serde_json::from_str(&c.arguments).ok();
    let plan = match (tool, args) {
        (Some(tool), Some(args)) => change_plan(tool, &args).map(|plan| (tool, plan)),
        _ => Err(Failure::new(
            "tool_unavailable",
            501,
            "The tool that prepared this change is not available on this server; nothing was applied.",
        )),
    };
    let (tool, plan) = match plan {
        Ok(x) => x,
        Err(f) => {
            record(caller, &id_hash, "refused");
            return Err(f);
        }
    };
    let version = match &c.shown {
        Some(shown) => {
            match preview::recheck(app, caller, &plan, (&c.version, shown), &c.set_paths) {
                Recheck::Same { version } => version,
                Recheck::Moved => return Err(stale(app, caller, &id_hash, &c, tool, &plan)),
                Recheck::Refused(f) => {
                    record(caller, &id_hash, "refused");
                    return Err(f);
                }
            }
        }
        None => return Err(stale(app, caller, &id_hash, &c, tool, &plan)),
    };
    let if_match = (!version.starts_with("sha256:")).then_some(version.as_str());
    let terms = WriteTerms {
        if_match,
        dry_run: false,
        later_secs: 0,
        expected_balance: c
            .balance
            .as_ref()
            .map(|(company, balance)| ExpectedBalance {
                company_id: company.clone(),
                balance: *balance,
            }),
    };
    let resp = plan.run(app, caller, terms);
    let balance_moved = resp.status == StatusCode::CONFLICT
        && resp
            .body_json()
            .is_some_and(|p| p["code"] == "balance_changed");
    if resp.status == StatusCode::PRECONDITION_FAILED || balance_moved {
        return Err(stale(app, caller, &id_hash, &c, tool, &plan));
    }
    if !resp.status.is_success() {
        record(caller, &id_hash, "refused");
        return Err(Failure::rest(
            &resp,
            format!(
                "Nothing was applied: {}",
                advice::explain(app, caller, &resp)
            ),
        ));
    }
    record(caller, &id_hash, "applied");
    let mut result = from_rest(&resp).unwrap_or_else(|_| json!({"ok": true}));
    let withheld = tool.spec.withholds.map(|w| {
        let secret = result[w.field].as_str().map(String::from);
        preview::withhold(&mut result, w.field);
        let note = WithheldNote::of(&w, &result);
        let reveal = secret.and_then(|secret| {
            let subject =
                Subject {
                    kind: c.target_type.clone(),
                    id: result["id"].as_str().unwrap_or(&c.target_id).to_string(),
                    field: w.field.to_string(),
                    // A change whose question states a grace (a rotation) keeps the old secret
                    // working that long: the person reads it beside the new one.
                    grace: tool.spec.ask.filter(|a| a.contains("{grace}")).map(|_| {
                        crate::time::duration_words(app.settings.webhook_rotation_grace_secs)
                    }),
                };
            handover::hold(app, secret, subject)
        });
        AppliedWithheld {
            field: note.field,
            note: note.note,
            reveal,
        }
    });
    Ok(envelope::to_json(&ChangeApplied {
        object: CHANGE_RESULT,
        status: ChangeApplied::STATUS,
        confirmation_id: confirmation_id.to_string(),
        tool: c.tool,
        operation: c.operation,
        target: Target {
            kind: c.target_type,
            id: c.target_id,
        },
        withheld,
        result,
        // What it cost, as previewed: the write ran bound to that balance.
        cost: c.cost,
    }))
}

/// The refusal of a change whose preview no longer holds: nothing was applied, and a fresh
/// preview (under a new confirmation id) is attached for the person to decide on again.
fn stale(
    app: &App,
    caller: &Caller,
    id_hash: &str,
    c: &Claimed,
    tool: &Tool,
    plan: &ChangePlan,
) -> Failure {
    record(caller, id_hash, "stale");
    let what = format!(
        "The {} `{}`, or what its preview showed (the outcome, the cost, the balance), changed since the preview, so nothing was applied.",
        c.target_type.replace('_', " "),
        c.target_id
    );
    match pending::prepare(app, caller, tool, plan) {
        Ok(fresh) => {
            let message = format!(
                "{what} Here is what the change would do now (a fresh preview, in `preview`): {} Show it to the user and ask again; only if they agree, call confirm_change with the new confirmation_id `{}`, else cancel_change with it.",
                fresh.summary, fresh.confirmation_id
            );
            Failure::new("stale_preview", 412, message).with_preview(envelope::to_json(&fresh))
        }
        Err(why) => Failure::new(
            "stale_preview",
            412,
            format!(
                "{what} It cannot be prepared again as it stands: {} Tell the user.",
                why.message
            ),
        ),
    }
}
