//! The readiness report: is an integration ready to go live? Computed from the request journal
//! and the webhook drills ([`checks`] lists the checks; their rules are in [`retries`],
//! [`lists`], [`hooks`] and [`checks`]; what one report grades is [`Scope::of`]'s, for every
//! view), served as `GET /readiness` (the caller's account, or
//! company for a company-scoped credential) and `GET /_sandbox/readiness?account_id=` (the
//! operator's), as JSON or JUnit XML, printed by `signage readiness`, and shown by the console.
//!
//! The verdict: `not_ready` when a required check fails; else `incomplete` when a required check
//! was not observed; else `ready`. Recommended checks never change the verdict.

pub mod checks;
pub mod cli;
mod finding;
mod grade;
pub mod hooks;
mod inputs;
mod junit;
pub mod lists;
mod report;
pub mod retries;
mod scope;

use crate::auth::Action;
use crate::http::router::{param, Param, Route};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::Kind;
use rusqlite::Connection;
use serde_json::Value;

pub use grade::{compute, gather, Scope};
pub use inputs::{Hook, Inputs, Rotation};
pub use junit::junit;
pub use report::{Check, Report, Status};

const FORMAT: Param = param(
    "format",
    r#"{"type":"string","enum":["json","junit"],"default":"json"}"#,
    "`junit`: the report as JUnit XML (`application/xml`), one test case per check, a `<failure>` exactly for each check that keeps the verdict from `ready` (as `signage readiness --format junit`). An `Accept: application/xml` header asks for it too.",
);

const CONSOLE: Param = param(
    "console",
    r#"{"type":"string","enum":["true","false"],"default":"false"}"#,
    "`true`: grade the console's own sessions (signed in by a sign-in link as the key, or as any key of the account without `key_id`) instead of the integration. The console is an integration of its own: its requests are never graded with the key's.",
);

const AFTER: Param = param(
    "after",
    r#"{"type":"string","pattern":"^[0-9]{1,18}$"}"#,
    "Grade only what came after this journal mark (`GET /requests/mark`): one test's requests and drills.",
);

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/readiness", "getReadiness", Action::Authenticated, own)
            .no_tool("graded over REST and in CI (signage readiness); explain_request opens its evidence")
            .tag("journal")
            .summary("Is this integration ready to go live? The readiness report of the caller's account (or company).")
            .describe("Grades the integration from what it actually did (the request journal) and how its webhook receivers answered the drills: `Retry-After`, back-off on 5xx, idempotency keys on creates, cursor walks, `If-Match`, signature and timestamp checks, duplicate and out-of-order tolerance, secret and key rotation, receiver speed, polling. `verdict` is `ready`, `not_ready` (a required check failed) or `incomplete` (a required check was not observed yet); each check gives its rule, status, the request or drill ids that show it, and advice (for a check not observed: what is missing). The unit graded is the integration, not the key that asks: a key's report grades its API client through every key of it with the key's company scope (a rotated key's predecessor and successor alike), and that scope's webhooks and drills, the same in every view (this one, `key_id`, the operator's, `signage readiness --key`). An admin's report covers its account, a company-scoped admin's its company (its keys, webhooks and drills only); `key_id` names a key's integration (a key the caller may not manage is 404); any other credential always gets its own key's. The console's own sessions (signed in by a sign-in link) are an integration of their own, never graded with the key's: `console=true` grades them. `after` counts only what came after a journal mark; `format=junit` answers JUnit XML. See the book's \"Going live: the readiness report\".")
            .query(&[
                param("key_id", r#"{"type":"string","pattern":"^(key|usr)_[0-9A-Za-z]{1,40}$"}"#, "Grade this key's integration: its API client's requests through any of its keys with the key's company scope (a rotated key's and its successor's alike), and that scope's webhooks and drills (an admin may name any key it may manage)."),
                CONSOLE,
                AFTER,
                FORMAT,
            ])
            .ok("ReadinessReport")
            .produces("application/xml"),
        Route::get("/_sandbox/readiness", "getSandboxReadiness", Action::Sandbox, operator)
            .no_tool("the sandbox operator's view of every account, not account data")
            .tag("sandbox")
            .summary("The readiness report of any account (the operator's view).")
            .describe("The readiness report of `GET /readiness` for the named account (and optionally one key), with `after` and `format` as there. The sandbox operator's (scope `sandbox`).")
            .query(&[
                Param {
                    required: true,
                    ..param("account_id", r#"{"type":"string","pattern":"^acct_[0-9a-z]{1,40}$"}"#, "The account to grade.")
                },
                param("key_id", r#"{"type":"string","pattern":"^(key|usr)_[0-9A-Za-z]{1,40}$"}"#, "Grade this key's integration, as `GET /readiness?key_id=` does."),
                CONSOLE,
                AFTER,
                FORMAT,
            ])
            .ok("ReadinessReport")
            .produces("application/xml"),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![crate::jsonschema::named_response::<Report>()]
}

/// Whether the caller asked for JUnit XML (`format=junit`, or `Accept: application/xml`).
fn wants_junit(ctx: &Ctx<'_>) -> Result<bool, ApiError> {
    if let Some(f) = ctx.query_enum("format", &["json", "junit"])? {
        return Ok(f == "junit");
    }
    Ok(ctx
        .header("accept")
        .is_some_and(|a| a.contains("application/xml") || a.contains("text/xml")))
}

/// The report of `account`'s integration of `key` (else of the account, within `reach`), as
/// [`Scope::of`] derives it for every view.
fn report(
    ctx: &Ctx<'_>,
    account: &str,
    reach: Option<&str>,
    key: Option<&str>,
) -> Result<Response, ApiError> {
    let console = ctx.query_bool("console")?.unwrap_or(false);
    let after = crate::sandbox::journal::routes::after(ctx)?;
    let journal = crate::sandbox::journal::routes::journal(ctx)?;
    let db = ctx.conn()?;
    let scope = Scope::of(&db, account, reach, key, console, after)?;
    let floor = journal.not_before_wall_ms();
    let inputs = journal
        .read_indexed(|j, index| gather(j, index, &db, &scope, floor, ctx.now_millis(), None))
        .map_err(|e| ApiError::Internal(format!("readiness: {e}")))?;
    let report = compute(&scope.account, &inputs);
    if wants_junit(ctx)? {
        return Ok(Response::new(
            hyper::StatusCode::OK,
            "application/xml; charset=utf-8",
            junit(&report),
        ));
    }
    Ok(Response::ok(&report))
}

fn own(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let p = ctx.principal()?;
    let named = key_param(ctx)?;
    let key = if p.scopes.allows(Action::Admin) {
        if let Some(k) = &named {
            let conn = ctx.conn()?;
            if !may_grade(&conn, p, k)? {
                return Err(ApiError::not_found("API key", k));
            }
        }
        named
    } else {
        Some(p.actor_id().to_string())
    };
    report(
        ctx,
        &p.account_id,
        p.company_scope.as_deref(),
        key.as_deref(),
    )
}

/// Whether an admin may read the report of key (or user) `id`: one it may manage, as under
/// `/api-keys` (a company-scoped admin, only its company's).
fn may_grade(db: &Connection, p: &crate::auth::Principal, id: &str) -> Result<bool, ApiError> {
    use crate::auth::reach::{may_manage, Credential, Manager};
    use rusqlite::OptionalExtension;
    let row: Option<(String, crate::auth::Scopes, Option<String>)> = if id.starts_with("usr_") {
        db.query_row(
            "SELECT account_id, role, company_id FROM users WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?
        .map(|(a, role, c): (String, String, Option<String>)| {
            (a, crate::auth::authenticate::role_scopes(&role), c)
        })
    } else {
        db.query_row(
            "SELECT c.account_id, k.scopes, k.company_id FROM api_keys k
             JOIN api_clients c ON c.id = k.client_id WHERE k.id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?
        .map(|(a, scopes, c): (String, String, Option<String>)| {
            (
                a,
                crate::auth::Scopes::parse_list(&scopes).unwrap_or_default(),
                c,
            )
        })
    };
    let Some((account, scopes, company)) = row else {
        return Ok(false);
    };
    Ok(may_manage(
        Some(&Manager::of(p)),
        &Credential {
            account: &account,
            scopes: &scopes,
            company: company.as_deref(),
        },
    ))
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
    report(ctx, &account, None, key.as_deref())
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
