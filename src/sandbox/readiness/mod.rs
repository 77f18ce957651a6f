//! The readiness report: is an integration ready to go live? Computed from the request journal
//! and the webhook drills ([`checks`] holds each rule), served as `GET /readiness` (the caller's
//! account) and `GET /_sandbox/readiness?account_id=` (the operator's), printed by `signage
//! readiness` (JSON or JUnit XML), and shown by the console as a checklist.
//!
//! The verdict: `not_ready` when a required check fails; else `incomplete` when a required check
//! was not observed; else `ready`. Recommended checks never change the verdict.

pub mod checks;
pub mod cli;
mod junit;

use crate::auth::Action;
use crate::http::router::{param, Param, Route};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::Kind;
use crate::sandbox::drills::{self, Drill};
use crate::sandbox::journal::store::{self, Accounts, Entry, Filter};
use rusqlite::Connection;
use serde::Serialize;
use serde_json::{json, Value};

pub use junit::junit;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Fail,
    NotObserved,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub id: &'static str,
    pub title: &'static str,
    pub status: Status,
    pub required: bool,
    /// The rule, as the README documents it.
    pub rule: &'static str,
    /// Request ids (`req_…`), drill ids (`drl_…`) or key ids that show the status.
    pub evidence: Vec<String>,
    /// What to change; empty when the check passes.
    pub advice: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub object: &'static str,
    pub account_id: String,
    pub key_id: Option<String>,
    pub generated_at: String,
    pub verdict: &'static str,
    pub checks: Vec<Check>,
}

/// A rotation of an API key of the account, from the database.
pub struct Rotation {
    pub old_key: String,
    pub new_key: String,
    /// When the old key stops working (sandbox clock, Unix seconds).
    pub grace_end: i64,
}

/// What the checks read.
pub struct Inputs {
    /// The entries the report is about (the key's, when one is given), oldest first.
    pub entries: Vec<Entry>,
    /// Every entry of the account (a rotation involves two keys).
    pub all_entries: Vec<Entry>,
    pub drills: Vec<Drill>,
    pub rotations: Vec<Rotation>,
    pub key: Option<String>,
    /// The sandbox clock now (Unix milliseconds).
    pub now_ms: i64,
}

pub fn compute(account_id: &str, x: &Inputs) -> Report {
    let mut list = vec![
        checks::authenticates_every_request(x),
        checks::retry_after_respected(x),
        checks::backs_off_on_5xx(x),
        checks::idempotency_keys_on_create(x),
        checks::pagination_walked(x),
        checks::conditional_updates(x),
    ];
    list.extend(checks::webhook_checks(x));
    list.push(checks::rotated_key_adopted(x));
    list.push(checks::polling_reasonable(x));
    let required = || list.iter().filter(|c| c.required);
    let verdict = if required().any(|c| c.status == Status::Fail) {
        "not_ready"
    } else if required().any(|c| c.status == Status::NotObserved) {
        "incomplete"
    } else {
        "ready"
    };
    Report {
        object: "readiness_report",
        account_id: account_id.to_string(),
        key_id: x.key.clone(),
        generated_at: crate::time::rfc3339(x.now_ms.div_euclid(1000)),
        verdict,
        checks: list,
    }
}

fn rotations(db: &Connection, account: &str) -> rusqlite::Result<Vec<Rotation>> {
    let mut stmt = db.prepare(
        "SELECT k.id, k.replaced_by, k.expires_at FROM api_keys k
         JOIN api_clients c ON c.id = k.client_id
         WHERE c.account_id = ?1 AND k.replaced_by IS NOT NULL AND k.expires_at IS NOT NULL
         ORDER BY k.id",
    )?;
    let rows = stmt.query_map([account], |r| {
        Ok(Rotation {
            old_key: r.get(0)?,
            new_key: r.get(1)?,
            grace_end: r.get(2)?,
        })
    })?;
    rows.collect()
}

/// Reads the inputs of one account's report from the journal and the database.
pub fn gather(
    journal: &Connection,
    db: &Connection,
    account: &str,
    key: Option<&str>,
    not_before_wall_ms: i64,
    now_ms: i64,
    min_seq: Option<i64>,
) -> rusqlite::Result<Inputs> {
    let filter = Filter {
        accounts: Some(Accounts::One(Some(account.to_string()))),
        not_before_wall_ms,
        min_seq,
        ..Filter::default()
    };
    let all_entries = store::all(journal, &filter)?;
    let entries = match key {
        Some(k) => all_entries
            .iter()
            .filter(|e| e.key_id.as_deref() == Some(k))
            .cloned()
            .collect(),
        None => all_entries.clone(),
    };
    Ok(Inputs {
        entries,
        all_entries,
        drills: drills::kept(journal, account, None, not_before_wall_ms)?,
        rotations: rotations(db, account)?,
        key: key.map(str::to_string),
        now_ms,
    })
}

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/readiness", "getReadiness", Action::Authenticated, own)
            .tag("journal")
            .summary("Is this integration ready to go live? The readiness report of the caller's account.")
            .describe("Grades the account's integration from what it actually did (the request journal) and how its webhook receivers answered the drills: back-off on 429/503, `Retry-After`, idempotency keys on creates, cursor pagination, `If-Match`, signature and timestamp checks, duplicate tolerance, secret and key rotation, polling. `verdict` is `ready`, `not_ready` (a required check failed) or `incomplete` (a required check was not observed yet); each check gives its rule, status, the request or drill ids that show it, and advice. `key_id` narrows it to one key's requests (a non-admin credential always gets its own). See README \"Going live: the readiness report\".")
            .query(&[param("key_id", r#"{"type":"string","pattern":"^(key|usr)_[0-9A-Za-z]{1,40}$"}"#, "Grade only this key's requests (an admin may name any key of the account).")])
            .ok("ReadinessReport"),
        Route::get("/_sandbox/readiness", "getSandboxReadiness", Action::Sandbox, operator)
            .tag("sandbox")
            .summary("The readiness report of any account (the operator's view).")
            .describe("The readiness report of `GET /readiness` for the named account (and optionally one key). The sandbox operator's (scope `sandbox`).")
            .query(&[
                Param {
                    required: true,
                    ..param("account_id", r#"{"type":"string","pattern":"^acct_[0-9a-z]{1,40}$"}"#, "The account to grade.")
                },
                param("key_id", r#"{"type":"string","pattern":"^(key|usr)_[0-9A-Za-z]{1,40}$"}"#, "Grade only this key's requests."),
            ])
            .ok("ReadinessReport"),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![(
        "ReadinessReport",
        json!({"type":"object","required":["object","account_id","key_id","generated_at","verdict","checks"],
            "description":"Whether an integration is ready to go live, check by check (README: Going live: the readiness report).",
            "properties":{"object":{"const":"readiness_report"},"account_id":{"type":"string"},
                "key_id":{"type":["string","null"]},
                "generated_at":{"type":"string","format":"date-time","description":"The sandbox clock."},
                "verdict":{"type":"string","enum":["ready","not_ready","incomplete"],"description":"`not_ready`: a required check failed; `incomplete`: one was not observed; else `ready`."},
                "checks":{"type":"array","description":"Every check, in a fixed order.","items":{"type":"object",
                    "required":["id","title","status","required","rule","evidence","advice"],
                    "properties":{"id":{"type":"string"},"title":{"type":"string","description":"What the check asks, in a few words."},
                        "status":{"type":"string","enum":["pass","fail","not_observed"],"description":"`not_observed` until what the check judges happened."},
                        "required":{"type":"boolean","description":"A required check decides the verdict; a recommended one does not."},
                        "rule":{"type":"string","description":"The precise rule, as the README documents it."},
                        "evidence":{"type":"array","items":{"type":"string"},"description":"Request ids (`req_…`, see GET /requests/{request_id}), drill ids (`drl_…`) or key ids; at most 20."},
                        "advice":{"type":"string","description":"What to change; empty when the check passes."}}}}}}),
    )]
}

fn report(ctx: &Ctx<'_>, account: &str, key: Option<&str>) -> Result<Response, ApiError> {
    let journal = crate::sandbox::journal::routes::journal(ctx)?;
    let db = ctx.app.db.conn()?;
    let floor = journal.not_before_wall_ms();
    let inputs = journal
        .read(|j| gather(j, &db, account, key, floor, crate::time::now_millis(), None))
        .map_err(|e| ApiError::Internal(format!("readiness: {e}")))?;
    Ok(Response::ok(&compute(account, &inputs)))
}

fn own(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let p = ctx.principal()?;
    let named = key_param(ctx)?;
    let key = if p.scopes.allows(Action::Admin) {
        named
    } else {
        Some(p.actor_id().to_string())
    };
    let account = p.account_id.clone();
    report(ctx, &account, key.as_deref())
}

fn operator(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let account = ctx.query_id("account_id", Kind::Account)?.ok_or_else(|| {
        ApiError::invalid(
            "account_id",
            "required",
            "This query parameter is required.",
        )
    })?;
    let key = key_param(ctx)?;
    report(ctx, &account, key.as_deref())
}

/// The `key_id` query parameter, refused unless it is an API key id (`key_…`) or a login's user id
/// (`usr_…`): a malformed id would otherwise grade nobody's requests and report a hollow verdict.
fn key_param(ctx: &Ctx<'_>) -> Result<Option<String>, ApiError> {
    let Some(k) = ctx.query("key_id") else {
        return Ok(None);
    };
    let well_formed = ["key_", "usr_"].iter().any(|prefix| {
        k.strip_prefix(prefix).is_some_and(|rest| {
            (1..=40).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_alphanumeric())
        })
    });
    if !well_formed {
        return Err(ApiError::invalid(
            "key_id",
            "invalid_id",
            "An API key id (`key_…`) or a login's user id (`usr_…`).",
        ));
    }
    Ok(Some(k.to_string()))
}
