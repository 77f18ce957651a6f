//! Reading the journal: `GET /requests` (the caller's own), `GET /requests/failures` and
//! `GET /requests/{request_id}` (with MCP tools `list_recent_failures` and `explain_request`),
//! and the operator's `GET /_sandbox/requests` over every account, with `count=true` to verify.

use super::observer::Journal;
use super::store::{self, Accounts, Filter};
use crate::auth::Action;
use crate::http::router::{param, Param, Route, Tool, LIMIT_PARAM};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::Kind;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

const CURSOR: Param = param(
    "cursor",
    crate::http::router::NUMERIC_CURSOR_SCHEMA,
    "The `next_cursor` of the previous page (a sequence number and the tag of the page's filters): sent with other filters it is refused with 400 `cursor_mismatch`.",
);

const FILTERS: &[Param] = &[
    param("operation_id", r#"{"type":"string","maxLength":100}"#, "Only requests of this operation (an `operationId` of /openapi.json)."),
    param("key_id", r#"{"type":"string","maxLength":100}"#, "Only requests made with this API key (`key_…`) or login (`usr_…`)."),
    param("status", r#"{"type":"string","pattern":"^[1-5]([0-9]{2}|xx)$"}"#, "Only answers with this status (`503`) or class (`5xx`)."),
    param("idempotency_key", r#"{"type":"string","maxLength":255}"#, "Only requests that sent this `Idempotency-Key` (matched by its digest: the journal keeps no key)."),
    param("after", r#"{"type":"string","pattern":"^[0-9]{1,18}$"}"#, "Only entries written after this mark: the `after` of `GET /requests/mark` taken when a test began (or any entry's `id`)."),
    param("test_name", r#"{"type":"string","maxLength":200}"#, "Only requests that carried this `Signage-Test-Name` header (a test harness's tag)."),
    param("via", r#"{"type":"string","enum":["rest","mcp"]}"#, "Only REST requests, or only MCP tool calls."),
    param("tool", r#"{"type":"string","maxLength":100}"#, "Only calls of this MCP tool."),
    param("faulted", r#"{"type":"string","enum":["true","false"]}"#, "Only requests an injected fault answered or delayed (`true`), or none did (`false`)."),
    param("since", r#"{"type":"string","format":"date-time"}"#, "Only requests at or after this instant of the sandbox clock."),
    param("until", r#"{"type":"string","format":"date-time"}"#, "Only requests at or before this instant of the sandbox clock."),
    param("count", r#"{"type":"string","enum":["true","false"]}"#, "`true`: answer only how many requests match (`{\"object\":\"request_count\",\"count\":n}`), to assert in one call."),
];

pub fn routes() -> Vec<Route> {
    let list_params: Vec<Param> = [LIMIT_PARAM, CURSOR]
        .into_iter()
        .chain(FILTERS.iter().copied())
        .collect();
    let mut operator_params = list_params.clone();
    operator_params.push(param(
        "account_id",
        r#"{"type":"string","pattern":"^acct_[0-9a-z]{1,40}$"}"#,
        "Only this account's requests.",
    ));
    vec![
        Route::get("/requests", "listRequests", Action::Authenticated, list)
            .no_tool("list_recent_failures and explain_request answer what an assistant asks of the journal")
            .tag("journal")
            .summary("The request journal: what this credential's account (admin) or this key sent, and how it was answered.")
            .describe("Every REST request and MCP tool call, newest first: sandbox time, method, route and `operation_id`, status and problem code, duration, key and client ids, `Request-Id`, `Idempotency-Key` (and whether it was replayed), the injected fault, `via` (`rest`/`mcp`, with the tool), and a redacted copy of the query and JSON body (8 KiB at most, `body_truncated` when cut). An `admin` key sees its account's entries (a company-scoped admin, its company's); any other credential sees its own. Kept per account: the newest `sandbox.journal_max_entries`, none older than `sandbox.journal_max_age_secs`. `count=true` answers how many match. The journal lives outside the snapshots: a restore never rewinds it.")
            .query(&list_params)
            .ok("RequestEntryListOrCount"),
        Route::get("/requests/mark", "getRequestMark", Action::Authenticated, mark)
            .no_tool("a test harness's mark in the journal, not something an assistant asks about")
            .tag("journal")
            .summary("A mark in the request journal: entries written from now on come after it.")
            .describe("The sequence number of the newest journal entry of this credential's account (of every account for a `sandbox` credential), everything already sent counted; another account's requests never move it. Take it when a test begins and pass it as `after` to `GET /requests`, `GET /_sandbox/requests` or the readiness reports: they then count only what came later, so assertions are scoped to one test although the journal outlives every snapshot restore. Cheap: no entry is read.")
            .ok("RequestMark"),
        Route::get("/requests/failures", "listRecentFailures", Action::Authenticated, failures)
            .tag("journal")
            .summary("The most recent failed requests (status 400 and above) of this very credential.")
            .describe("The calling key's own failed requests and tool calls, newest first, each with its problem code: what to look at when an integration misbehaves.")
            .query(&[LIMIT_PARAM, CURSOR])
            .ok("RequestEntryList")
            .tool(Tool::read(
                "list_recent_failures",
                "List recent failed requests",
                &[],
                "This key's latest failed requests (REST and MCP): status, problem code, operation, Request-Id for explain_request.",
            )),
        Route::get("/requests/{id}", "getRequest", Action::Authenticated, get_one)
            .tag("journal")
            .summary("One journaled request, by its `Request-Id` (or the entry's `id`), with its problem body and advice.")
            .describe("Why did `req_…` fail? The journal entry of that request (`{id}` is its `Request-Id`, or the entry's `id` from a list; for an MCP request carrying several tool calls, the newest), its problem body as it was answered (redacted), and advice on what to change. Visible as `GET /requests` entries are; anything else is 404.")
            .ok("RequestExplained")
            .tool(Tool::read(
                "explain_request",
                "Explain a request",
                &[("request_id", "The `Request-Id` of the request (`req_…`), from a response header or a problem body.")],
                "Why did a request fail? Its journal entry: operation, status, problem body, the fault that fired, and advice.",
            )),
        Route::get("/_sandbox/requests", "listSandboxRequests", Action::Sandbox, operator_list)
            .no_tool("the sandbox operator's view of every account, not account data")
            .tag("sandbox")
            .summary("Every account's request journal (the operator's view), with `account_id` and `count=true`.")
            .describe("The request journal of every account, newest first, with the filters of `GET /requests` plus `account_id`; requests no account could be named for (a failed authentication without a known key or client id) are the operator's, with `account_id: null`. `count=true` answers `{\"object\":\"request_count\",\"count\":n}` so a test asserts in one call, e.g. exactly 3 `createAd` requests with one `Idempotency-Key`, 2 of them answered by an injected 503.")
            .query(&operator_params)
            .ok("RequestEntryListOrCount"),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::named_response;
    use serde_json::json;
    vec![
        named_response::<store::Entry>(),
        (
            "RequestEntryList",
            crate::http::response::list_schema(
                json!({"$ref": "#/components/schemas/RequestEntry"}),
            ),
        ),
        named_response::<Count>(),
        (
            "RequestEntryListOrCount",
            json!({"oneOf":[{"$ref":"#/components/schemas/RequestEntryList"},{"$ref":"#/components/schemas/RequestCount"}]}),
        ),
        named_response::<Explained>(),
        named_response::<Mark>(),
    ]
}

pub fn journal(ctx: &Ctx<'_>) -> Result<Arc<Journal>, ApiError> {
    ctx.app
        .extensions
        .get::<Arc<Journal>>()
        .cloned()
        .ok_or_else(|| ApiError::Internal("the request journal is not installed".into()))
}

fn db_err(e: rusqlite::Error) -> ApiError {
    ApiError::Internal(format!("journal: {e}"))
}

/// The filters of the query string.
fn filter(ctx: &Ctx<'_>, journal: &Journal) -> Result<Filter, ApiError> {
    let text = |name: &str| ctx.query(name).map(str::to_string);
    let status = match ctx.query("status") {
        None => None,
        Some(s) => {
            let class = s.strip_suffix("xx").and_then(|c| c.parse::<u16>().ok());
            match (class, s.parse::<u16>()) {
                (Some(c), _) if (1..=5).contains(&c) => Some((c * 100, c * 100 + 99)),
                (_, Ok(n)) if (100..=599).contains(&n) => Some((n, n)),
                _ => {
                    return Err(ApiError::invalid(
                        "status",
                        "invalid_value",
                        "`status` is a status (`503`) or a class (`5xx`).",
                    ))
                }
            }
        }
    };
    let time = |name: &str| -> Result<Option<i64>, ApiError> {
        match ctx.query(name) {
            None => Ok(None),
            Some(v) => crate::time::parse_rfc3339(v)
                .map(|s| Some(s * 1000))
                .ok_or_else(|| {
                    ApiError::invalid(
                        name,
                        "invalid_datetime",
                        format!("`{name}` must be an RFC 3339 instant."),
                    )
                }),
        }
    };
    Ok(Filter {
        accounts: None,
        company_id: None,
        key_id: text("key_id"),
        operation_id: text("operation_id"),
        status,
        idempotency_key: ctx
            .query("idempotency_key")
            .map(crate::http::idempotency::digest),
        test_name: text("test_name"),
        via: ctx.query_enum("via", store::VIAS)?,
        tool: text("tool"),
        faulted: ctx.query_bool("faulted")?,
        request_id: None,
        since_ms: time("since")?,
        until_ms: time("until")?,
        not_before_wall_ms: journal.not_before_wall_ms(),
        min_seq: after(ctx)?.map(|a| a.saturating_add(1)),
    })
}

/// The `after` mark: a sequence number.
pub fn after(ctx: &Ctx<'_>) -> Result<Option<i64>, ApiError> {
    match ctx.query("after") {
        None => Ok(None),
        Some(v) => v.parse::<i64>().map(Some).map_err(|_| {
            ApiError::invalid(
                "after",
                "invalid_mark",
                "`after` is a journal mark: the `after` of `GET /requests/mark`, or an entry's `id`.",
            )
        }),
    }
}

/// A mark in the request journal: entries written later have greater ids.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "RequestMark")]
struct Mark {
    #[schemars(extend("const" = "request_mark"))]
    object: &'static str,
    /// Pass as `after`: only entries written later match.
    #[schemars(regex(pattern = "^[0-9]{1,18}$"))]
    after: String,
}

fn mark(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let journal = journal(ctx)?;
    // The operator reads every account's entries (`/_sandbox/requests`), so its mark counts them
    // all; any other credential's counts its account's only.
    let p = ctx.principal()?;
    let after = if p.scopes.allows(Action::Sandbox) {
        journal.mark()
    } else {
        journal.mark_of(&p.account_id)
    };
    Ok(Response::ok(&Mark {
        object: "request_mark",
        after: after.to_string(),
    }))
}

/// How many journal entries match (the answer to `count=true`).
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "RequestCount")]
struct Count {
    #[schemars(extend("const" = "request_count"))]
    object: &'static str,
    /// How many journal entries match the filters.
    #[schemars(range(min = 0))]
    count: i64,
}

/// What a credential may read: an admin its account (a company-scoped admin its company's
/// credentials' entries), any other credential its own entries.
pub fn restrict(ctx: &Ctx<'_>, f: &mut Filter) -> Result<(), ApiError> {
    let p = ctx.principal()?;
    f.accounts = Some(Accounts::One(Some(p.account_id.clone())));
    if p.scopes.allows(Action::Admin) {
        f.company_id = p.company_scope.clone();
    } else {
        if f.key_id.as_deref().is_some_and(|k| k != p.actor_id()) {
            // Another key's entries are not this key's to see: nothing matches.
            f.key_id = Some(String::new());
        } else {
            f.key_id = Some(p.actor_id().to_string());
        }
    }
    Ok(())
}

fn answer(ctx: &Ctx<'_>, journal: &Journal, f: &Filter) -> Result<Response, ApiError> {
    if ctx.query_bool("count")? == Some(true) {
        let n = journal.count(f).map_err(db_err)?;
        return Ok(Response::ok(&Count {
            object: "request_count",
            count: n,
        }));
    }
    let page = ctx.page()?;
    let before = match &page.before {
        None => None,
        Some(c) => Some(c.parse::<i64>().map_err(|_| {
            ApiError::invalid("cursor", "invalid_cursor", "Not a cursor of this list.")
        })?),
    };
    let mut rows = journal
        .read(|c| store::page(c, f, before, page.fetch()))
        .map_err(db_err)?;
    hide_durations(ctx, &mut rows);
    Ok(Response::page(rows, &page))
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let journal = journal(ctx)?;
    let mut f = filter(ctx, &journal)?;
    restrict(ctx, &mut f)?;
    answer(ctx, &journal, &f)
}

fn failures(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let journal = journal(ctx)?;
    let p = ctx.principal()?;
    let f = Filter {
        accounts: Some(Accounts::One(Some(p.account_id.clone()))),
        key_id: Some(p.actor_id().to_string()),
        status: Some((400, 599)),
        not_before_wall_ms: journal.not_before_wall_ms(),
        ..Filter::default()
    };
    answer(ctx, &journal, &f)
}

fn operator_list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let journal = journal(ctx)?;
    let mut f = filter(ctx, &journal)?;
    f.accounts = ctx
        .query_id("account_id", Kind::Account)?
        .map(|a| Accounts::One(Some(a)))
        .or(Some(Accounts::All));
    answer(ctx, &journal, &f)
}

/// A seeded sandbox answers byte for byte alike to the same requests: a measured duration is not
/// part of what it shows (`duration_ms` is null there).
fn hide_durations(ctx: &Ctx<'_>, rows: &mut [store::Entry]) {
    if ctx.app.settings.sandbox_seed.is_some() {
        for e in rows {
            e.duration_ms = None;
        }
    }
}

/// A journal entry with its problem body (redacted) and advice.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "RequestExplained")]
struct Explained {
    #[serde(flatten)]
    entry: store::Entry,
    /// What the status and problem mean, and what to change.
    advice: String,
}

fn get_one(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let journal = journal(ctx)?;
    let id = ctx.param("id").to_string();
    let not_found = || ApiError::not_found("request", &id);
    if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return Err(not_found());
    }
    let mut f = Filter {
        not_before_wall_ms: journal.not_before_wall_ms(),
        ..Filter::default()
    };
    restrict(ctx, &mut f)?;
    let entry = journal
        .read(|c| match id.parse::<i64>() {
            Ok(seq) => store::by_seq(c, &f, seq),
            Err(_) => store::by_request_id(c, &f, &id),
        })
        .map_err(db_err)?
        .ok_or_else(not_found)?;
    let mut entry = entry;
    hide_durations(ctx, std::slice::from_mut(&mut entry));
    let advice = advice(&entry);
    Ok(Response::ok(&Explained { entry, advice }))
}

/// What an answer means and what to change, from its status, problem code and fault.
pub fn advice(e: &store::Entry) -> String {
    if let Some(fault) = &e.fault {
        let who = if fault == "prefer" {
            "the request's own `Prefer` header".to_string()
        } else {
            format!("sandbox fault rule {fault}")
        };
        return format!("This answer was injected by {who}, to test how the client copes. A ready client retries a 5xx or 429 after `Retry-After` (or with growing back-off), reusing the same `Idempotency-Key` for a create.");
    }
    let detail = e
        .problem
        .as_ref()
        .and_then(|p| p["detail"].as_str())
        .unwrap_or("");
    let base = match (e.status, e.problem_code.as_deref()) {
        (s, _) if s < 400 => "The request succeeded.".to_string(),
        (401, _) => "The credential was refused (missing, malformed, unknown, revoked or expired: the problem code says which). Send one API key in `X-API-KEY` with its `X-Service-Client-Id`, or a login token in `Authorization: Bearer`; after a rotation, switch to the new key before the grace period ends.".into(),
        (403, _) => "The credential lacks the scope this operation needs (named in the problem); use a key that holds it.".into(),
        (404, _) => "Nothing with that id is visible to this credential: it does not exist, was deleted, or belongs to another company.".into(),
        (405, _) => "The route exists, but not for this method: the `Allow` header lists the methods it takes.".into(),
        (409, Some(c)) if c.contains("idempotency") => "The `Idempotency-Key` was used for a different request or is still in flight: reuse a key only to retry the very same request.".into(),
        (409, _) => "The request conflicts with the object's current state (see the problem).".into(),
        (412, _) => "`If-Match` named an old version: read the object again for its current `ETag`, re-apply the change, and send it with the new `If-Match`.".into(),
        (415, _) | (400, _) => "The request is malformed (see the problem): fix the client, a retry will not help.".into(),
        (422, _) => "A field was refused: the problem's `errors` name each field and why; fix them before sending again.".into(),
        (429, _) => format!("Over the rate limit: wait `Retry-After` ({} s) before the next request.", e.retry_after.unwrap_or(1)),
        (s, _) if s >= 500 => "A server-side failure: retry with growing back-off (and the same `Idempotency-Key` for a create).".into(),
        _ => "The request was refused (see the problem).".into(),
    };
    if detail.is_empty() {
        base
    } else {
        format!("{detail} {base}")
    }
}
