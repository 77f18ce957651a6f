//! Administration (scope `admin`): API clients, API keys (create, list, revoke, rotate), the audit
//! log, and the sandbox reset. The key operations are plain functions over the database so that
//! the CLI (`signage keys …`) runs exactly the same code as REST.

use crate::auth::keys;
use crate::auth::reach::{may_manage, Credential, Manager};
use crate::auth::scopes::Scopes;
use crate::auth::Action;
use crate::db::Db;
use crate::http::ctx::list_body;
use crate::http::router::{param, Route, LIST_PARAMS};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{self, Kind};
use crate::time::{now, parse_rfc3339, rfc3339};
use crate::validate::{text_schema, Errors};
use rusqlite::{OptionalExtension, Row};
use serde::Deserialize;
use serde_json::{json, Value};

pub const DEFAULT_GRACE_SECS: i64 = 24 * 3600;
pub const MAX_GRACE_SECS: i64 = 30 * 24 * 3600;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get(
            "/api-clients",
            "listApiClients",
            Action::Admin,
            list_clients,
        )
        .tag("admin")
        .summary("List the account's API clients.")
        .paged()
        .ok("ApiClientList"),
        Route::post(
            "/api-clients",
            "createApiClient",
            Action::Admin,
            create_client_route,
        )
        .tag("admin")
        .summary("Create an API client (one integration).")
        .body("ApiClientCreate")
        .created("ApiClient"),
        Route::get(
            "/api-clients/{id}",
            "getApiClient",
            Action::Admin,
            get_client,
        )
        .tag("admin")
        .summary("Get one API client.")
        .ok("ApiClient"),
        Route::get("/api-keys", "listApiKeys", Action::Admin, list_keys_route)
            .tag("admin")
            .summary("List API keys: prefix and last four only, never the secret.")
            .paged()
            .query(&[param(
                "client_id",
                r#"{"type":"string","pattern":"^cli_[0-9A-Za-z]{1,64}$"}"#,
                "Only keys of this client.",
            )])
            .ok("ApiKeyList"),
        Route::post("/api-keys", "createApiKey", Action::Admin, create_key_route)
            .tag("admin")
            .summary("Create an API key. `rawKey` is in this response only.")
            .body("ApiKeyCreate")
            .created("ApiKeyWithSecret"),
        Route::get("/api-keys/{id}", "getApiKey", Action::Admin, get_key)
            .tag("admin")
            .summary("Get one API key (no secret).")
            .ok("ApiKey"),
        Route::post(
            "/api-keys/{id}/revoke",
            "revokeApiKey",
            Action::Admin,
            revoke_key_route,
        )
        .tag("admin")
        .summary("Revoke a key; it fails from the very next request.")
        .ok("ApiKey"),
        Route::post(
            "/api-keys/{id}/rotate",
            "rotateApiKey",
            Action::Admin,
            rotate_key_route,
        )
        .tag("admin")
        .summary(
            "Rotate a key: a new key now, the old one valid for a grace period (default 24 h).",
        )
        .body("ApiKeyRotate")
        .created("ApiKeyRotation"),
        Route::get("/audit-log", "listAuditLog", Action::Admin, list_audit)
            .tag("admin")
            .summary("The audit log of the account's writes and failures (failures aggregated per minute).")
            // Audit entries have integer ids, so the cursor is a number.
            .query(&[
                LIST_PARAMS[0],
                param(
                    "cursor",
                    r#"{"type":"string","pattern":"^[0-9]{1,18}$"}"#,
                    "The `next_cursor` of the previous page.",
                ),
            ])
            .ok("AuditEntryList"),
        Route::post("/_sandbox/reset", "resetSandbox", Action::Admin, reset)
            .tag("sandbox")
            .summary("Restore the caller's account to the demo fixtures; other accounts are untouched.")
            .ok("ResetResult")
            .not_idempotent()
            .blocking(),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    let ts = json!({"type":"string","format":"date-time"});
    let ts_null = json!({"type":["string","null"],"format":"date-time"});
    let key_props = json!({
        "id":{"type":"string","pattern":"^key_"},"object":{"const":"api_key"},"name":{"type":"string"},
        "client_id":{"type":"string"},"prefix":{"type":"string"},"last_four":{"type":"string"},
        "scopes":{"type":"array","items":{"type":"string"}},"companyScope":{"type":["string","null"]},
        "status":{"type":"string","enum":["active","revoked","expired"]},
        "created_at":ts,"last_used_at":ts_null,"expires_at":ts_null,"revoked_at":ts_null,
        "replaced_by":{"type":["string","null"]}});
    let key_required = json!([
        "id",
        "object",
        "name",
        "client_id",
        "prefix",
        "last_four",
        "scopes",
        "companyScope",
        "status",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
        "replaced_by"
    ]);
    let mut with_secret = key_props.clone();
    with_secret["rawKey"] =
        json!({"type":"string","description":"The secret. Shown once; store it now."});
    let mut with_secret_required = key_required.clone();
    if let Some(a) = with_secret_required.as_array_mut() {
        a.push(json!("rawKey"));
    }
    vec![
        (
            "ApiClient",
            json!({"type":"object","additionalProperties":false,
            "required":["id","object","account_id","name","description","companyScope","created_at"],
            "properties":{"id":{"type":"string","pattern":"^cli_"},"object":{"const":"api_client"},
                "account_id":{"type":"string"},"name":{"type":"string"},"description":{"type":"string"},
                "companyScope":{"type":["string","null"],"description":"The company this client is bound to: its keys are all scoped to it."},
                "created_at":ts}}),
        ),
        (
            "ApiClientCreate",
            json!({"type":"object","additionalProperties":false,"required":["name"],
            "properties":{"name":text_schema(1, 100),
                          "description":text_schema(0, 500),
                          "companyScope":{"type":["string","null"],"pattern":"^cmp_[0-9A-Za-z]{1,64}$"}}}),
        ),
        (
            "ApiKey",
            json!({"type":"object","additionalProperties":false,"required":key_required,"properties":key_props}),
        ),
        (
            "ApiKeyWithSecret",
            json!({"type":"object","additionalProperties":false,"required":with_secret_required,"properties":with_secret}),
        ),
        (
            "ApiKeyCreate",
            json!({"type":"object","additionalProperties":false,"required":["client_id","name","scopes"],
            "properties":{"client_id":{"type":"string","pattern":"^cli_[0-9A-Za-z]{1,64}$"},
                "name":text_schema(1, 100),
                "scopes":{"type":"array","minItems":1,"maxItems":20,"items":{"type":"string","enum":crate::auth::scopes::Scope::all_names()}},
                "companyScope":{"type":["string","null"],"pattern":"^cmp_[0-9A-Za-z]{1,64}$"},
                "expires_at":{"type":["string","null"],"format":"date-time"}}}),
        ),
        (
            "ApiKeyRotate",
            json!({"type":"object","additionalProperties":false,
            "properties":{"grace_period_seconds":{"type":"integer","minimum":0,"maximum":MAX_GRACE_SECS}}}),
        ),
        (
            "ApiKeyRotation",
            json!({"type":"object","additionalProperties":false,"required":["object","new_key","previous_key"],
            "properties":{"object":{"const":"api_key_rotation"},"new_key":{"$ref":"#/components/schemas/ApiKeyWithSecret"},
                "previous_key":{"$ref":"#/components/schemas/ApiKey"}}}),
        ),
        (
            "AuditEntry",
            json!({"type":"object","additionalProperties":false,
            "required":["id","object","at","request_id","actor","client_id","method","route","status","outcome","count"],
            "properties":{"id":{"type":"string"},"object":{"const":"audit_entry"},"at":ts,"request_id":{"type":"string"},
                "actor":{"type":["string","null"]},"client_id":{"type":["string","null"]},"method":{"type":"string"},
                "route":{"type":"string"},"status":{"type":"integer"},"outcome":{"type":"string"},
                "count":{"type":"integer","minimum":1,"description":"Failures are aggregated per minute: how many requests this entry stands for (`at` and `request_id` are the first one's)."}}}),
        ),
        (
            "ResetResult",
            json!({"type":"object","additionalProperties":false,"required":["object","reset"],
            "properties":{"object":{"const":"sandbox_reset"},"reset":{"const":true}}}),
        ),
    ]
}

// ---- API clients ----------------------------------------------------------------------------

fn client_json(r: &Row<'_>) -> rusqlite::Result<Value> {
    Ok(json!({
        "id": r.get::<_, String>(0)?,
        "object": "api_client",
        "account_id": r.get::<_, String>(1)?,
        "name": r.get::<_, String>(2)?,
        "description": r.get::<_, String>(3)?,
        "companyScope": r.get::<_, Option<String>>(5)?,
        "created_at": rfc3339(r.get(4)?),
    }))
}

const CLIENT_COLUMNS: &str = "id, account_id, name, description, created_at, company_id";

/// A client, if it exists and `m` reaches it (an account-wide admin: every client of its account; a
/// company-scoped one: the clients bound to its company).
fn load_client(
    conn: &rusqlite::Connection,
    m: Option<&Manager<'_>>,
    id: &str,
) -> Result<(Value, Option<String>), ApiError> {
    let row = conn
        .prepare_cached(&format!(
            "SELECT {CLIENT_COLUMNS} FROM api_clients WHERE id = ?1"
        ))?
        .query_row([id], |r| {
            Ok((
                client_json(r)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(5)?,
            ))
        })
        .optional()?;
    let no_scopes = Scopes::default();
    match row {
        Some((client, account, company))
            if may_manage(
                m,
                &Credential {
                    account: &account,
                    scopes: &no_scopes,
                    company: company.as_deref(),
                },
            ) =>
        {
            Ok((client, company))
        }
        _ => Err(ApiError::not_found("API client", id)),
    }
}

/// Lists the clients `m` reaches (the CLI: of one account or of all).
pub fn list_clients_db(
    db: &Db,
    m: Option<&Manager<'_>>,
    account: Option<&str>,
    before: &str,
    fetch: i64,
) -> Result<Vec<Value>, ApiError> {
    let account = m.map(|m| m.account).or(account);
    let company = m.and_then(|m| m.company);
    let conn = db.conn()?;
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {CLIENT_COLUMNS} FROM api_clients
         WHERE (?1 IS NULL OR account_id = ?1) AND (?2 IS NULL OR company_id = ?2) AND id < ?3
         ORDER BY id DESC LIMIT ?4"
    ))?;
    let rows = stmt.query_map(
        rusqlite::params![account, company, before, fetch],
        client_json,
    )?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Creates a client in `account`, bound to `company` if given. A company-scoped manager must bind
/// it to its own company.
pub fn create_client(
    db: &Db,
    m: Option<&Manager<'_>>,
    account: &str,
    name: &str,
    description: &str,
    company: Option<&str>,
) -> Result<Value, ApiError> {
    let mut errors = Errors::new();
    errors.text("/name", name, 1, 100);
    if !description.is_empty() {
        errors.text("/description", description, 0, 500);
    }
    errors.finish()?;
    check_company_reach(m, company)?;
    let id = ids::new_id(Kind::ApiClient);
    db.write(|tx| {
        let exists: bool = tx.query_row(
            "SELECT count(*) > 0 FROM accounts WHERE id = ?1",
            [account],
            |r| r.get(0),
        )?;
        if !exists {
            return Err(ApiError::not_found("account", account));
        }
        if let Some(c) = company {
            check_company_of_account(tx, account, c)?;
        }
        tx.execute(
            "INSERT INTO api_clients (id, account_id, name, description, created_at, company_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            rusqlite::params![id, account, name.trim(), description.trim(), now(), company],
        )?;
        Ok(tx.query_row(
            &format!("SELECT {CLIENT_COLUMNS} FROM api_clients WHERE id = ?1"),
            [&id],
            client_json,
        )?)
    })
}

/// A company-scoped manager must name its own company in what it creates (422 when it names none,
/// 404 when it names another).
fn check_company_reach(m: Option<&Manager<'_>>, company: Option<&str>) -> Result<(), ApiError> {
    match (m.and_then(|m| m.company), company) {
        (Some(_), None) => Err(ApiError::invalid(
            "/companyScope",
            "required",
            "A company-scoped admin must give companyScope (its own company): it cannot create a credential wider than itself.",
        )),
        (Some(mine), Some(c)) if mine != c => Err(ApiError::not_found("company", c)),
        _ => Ok(()),
    }
}

fn check_company_of_account(
    tx: &rusqlite::Connection,
    account: &str,
    company: &str,
) -> Result<(), ApiError> {
    let owner: Option<String> = tx
        .query_row(
            "SELECT account_id FROM companies WHERE id = ?1",
            [company],
            |r| r.get(0),
        )
        .optional()?;
    if owner.as_deref() == Some(account) {
        Ok(())
    } else {
        Err(ApiError::not_found("company", company))
    }
}

fn list_clients(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let m = Manager::of(ctx.principal()?);
    let rows = list_clients_db(&ctx.app.db, Some(&m), None, page.bound(), page.fetch())?;
    Ok(Response::ok(&list_body(rows, &page, |v| {
        v["id"].as_str().unwrap_or("")
    })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientCreate {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default, rename = "companyScope")]
    company_scope: Option<String>,
}

fn create_client_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: ClientCreate = ctx.json()?;
    check_company_id(input.company_scope.as_deref())?;
    let p = ctx.principal()?;
    let m = Manager::of(p);
    Ok(Response::created(&create_client(
        &ctx.app.db,
        Some(&m),
        &p.account_id,
        &input.name,
        &input.description,
        input.company_scope.as_deref(),
    )?))
}

fn get_client(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    let m = Manager::of(ctx.principal()?);
    let conn = ctx.app.db.conn()?;
    Ok(Response::ok(&load_client(&conn, Some(&m), &id)?.0))
}

fn check_company_id(company: Option<&str>) -> Result<(), ApiError> {
    match company {
        Some(c) if !ids::is_valid(Kind::Company, c) => Err(ApiError::invalid(
            "/companyScope",
            "invalid_id",
            "Must be a company id (`cmp_…`).",
        )),
        _ => Ok(()),
    }
}

// ---- API keys -------------------------------------------------------------------------------

const KEY_COLUMNS: &str =
    "k.id, k.name, k.client_id, k.prefix, k.last_four, k.scopes, k.company_id, k.created_at,
    k.last_used_at, k.expires_at, k.revoked_at, k.replaced_by, c.account_id";

fn key_json(r: &Row<'_>) -> rusqlite::Result<Value> {
    let t = now();
    let expires_at: Option<i64> = r.get(9)?;
    let revoked_at: Option<i64> = r.get(10)?;
    let status = if revoked_at.is_some_and(|x| x <= t) {
        "revoked"
    } else if expires_at.is_some_and(|x| x <= t) {
        "expired"
    } else {
        "active"
    };
    let scopes: String = r.get(5)?;
    Ok(json!({
        "id": r.get::<_, String>(0)?,
        "object": "api_key",
        "name": r.get::<_, String>(1)?,
        "client_id": r.get::<_, String>(2)?,
        "prefix": r.get::<_, String>(3)?,
        "last_four": r.get::<_, String>(4)?,
        "scopes": scopes.split_whitespace().collect::<Vec<_>>(),
        "companyScope": r.get::<_, Option<String>>(6)?,
        "status": status,
        "created_at": rfc3339(r.get(7)?),
        "last_used_at": r.get::<_, Option<i64>>(8)?.map(rfc3339),
        "expires_at": expires_at.map(rfc3339),
        "revoked_at": revoked_at.map(rfc3339),
        "replaced_by": r.get::<_, Option<String>>(11)?,
    }))
}

/// A key row and whether `m` reaches it (the one rule of [`may_manage`]).
fn key_if_reached(m: Option<&Manager<'_>>, r: &Row<'_>) -> rusqlite::Result<Option<Value>> {
    let scopes = Scopes::parse_list(&r.get::<_, String>(5)?).unwrap_or_default();
    let company: Option<String> = r.get(6)?;
    let account: String = r.get(12)?;
    let target = Credential {
        account: &account,
        scopes: &scopes,
        company: company.as_deref(),
    };
    if may_manage(m, &target) {
        key_json(r).map(Some)
    } else {
        Ok(None)
    }
}

/// The key, if it exists and `m` reaches it; otherwise 404, whether it exists or not.
fn load_key(
    conn: &rusqlite::Connection,
    m: Option<&Manager<'_>>,
    key_id: &str,
) -> Result<Value, ApiError> {
    conn.prepare_cached(&format!(
        "SELECT {KEY_COLUMNS} FROM api_keys k JOIN api_clients c ON c.id = k.client_id WHERE k.id = ?1"
    ))?
    .query_row([key_id], |r| key_if_reached(m, r))
    .optional()?
    .flatten()
    .ok_or_else(|| ApiError::not_found("API key", key_id))
}

/// Lists the keys `m` reaches, newest first. The account and company parts of the rule are in the
/// SQL (so pages are full); the same rule then runs on each row.
pub fn list_keys_db(
    db: &Db,
    m: Option<&Manager<'_>>,
    client: Option<&str>,
    before: &str,
    fetch: i64,
) -> Result<Vec<Value>, ApiError> {
    let conn = db.conn()?;
    if let Some(c) = client {
        load_client(&conn, m, c)?;
    }
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {KEY_COLUMNS} FROM api_keys k JOIN api_clients c ON c.id = k.client_id
         WHERE (?1 IS NULL OR c.account_id = ?1) AND (?2 IS NULL OR k.company_id = ?2)
           AND (?3 IS NULL OR k.client_id = ?3) AND k.id < ?4
         ORDER BY k.id DESC LIMIT ?5"
    ))?;
    let rows = stmt.query_map(
        rusqlite::params![
            m.map(|m| m.account),
            m.and_then(|m| m.company),
            client,
            before,
            fetch
        ],
        |r| key_if_reached(m, r),
    )?;
    let mut out = Vec::new();
    for row in rows {
        out.extend(row?);
    }
    Ok(out)
}

/// What a new key may be.
pub struct KeySpec {
    pub client_id: String,
    pub name: String,
    pub scopes: Vec<String>,
    pub company_scope: Option<String>,
    pub expires_at: Option<i64>,
}

/// Creates a key. `m` is the creator's reach (REST: the admin principal; CLI: `None`, the operator).
/// The new key must be one `m` reaches: scopes within its own (422 `exceeds_creator`), and, for a
/// company-scoped creator, its own company (422 `required` without one, 404 for another). A client
/// bound to a company only holds keys scoped to it.
pub fn create_key(db: &Db, m: Option<&Manager<'_>>, spec: &KeySpec) -> Result<Value, ApiError> {
    let mut errors = Errors::new();
    errors.text("/name", &spec.name, 1, 100);
    let scopes = match Scopes::parse_list(&spec.scopes.join(" ")) {
        Ok(s) if !s.is_empty() => Some(s),
        Ok(_) => {
            errors.push("/scopes", "empty", "Give at least one scope.");
            None
        }
        Err(bad) => {
            errors.push(
                "/scopes",
                "unknown_scope",
                format!("Unknown scope `{bad}`."),
            );
            None
        }
    };
    if spec.scopes.iter().any(|s| s.contains(char::is_whitespace)) {
        errors.push("/scopes", "unknown_scope", "Scope names contain no spaces.");
    }
    // A past `expires_at` is allowed: an already-expired key lets an integration test its handling
    // of expiry.
    let t = now();
    errors.finish()?;
    let scopes = scopes.unwrap_or_default();
    if let Some(m) = m {
        if !m.scopes.covers(&scopes) {
            return Err(ApiError::invalid(
                "/scopes",
                "exceeds_creator",
                "A key cannot grant scopes its creator lacks.",
            ));
        }
    }
    let company = spec.company_scope.as_deref();
    check_company_reach(m, company)?;
    let new = keys::generate();
    db.write(|tx| {
        let (client, client_company) = load_client(tx, m, &spec.client_id)?;
        let account = client["account_id"].as_str().unwrap_or_default().to_string();
        match (client_company.as_deref(), company) {
            (Some(_), None) => {
                return Err(ApiError::invalid(
                    "/companyScope",
                    "required",
                    "This API client is bound to a company: its keys must give that company as companyScope.",
                ))
            }
            (Some(bound), Some(c)) if bound != c => {
                return Err(ApiError::invalid(
                    "/companyScope",
                    "not_client_company",
                    format!("This API client is bound to `{bound}`: its keys can only be scoped to it."),
                ))
            }
            _ => {}
        }
        if let Some(c) = company {
            check_company_of_account(tx, &account, c)?;
        }
        let target = Credential { account: &account, scopes: &scopes, company };
        if !may_manage(m, &target) {
            // Unreachable after the checks above; kept so that the rule is the last word.
            return Err(ApiError::invalid("/companyScope", "exceeds_creator", "A key cannot reach further than its creator."));
        }
        tx.execute(
            "INSERT INTO api_keys (id, client_id, name, prefix, last_four, secret_hash, scopes, company_id, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            rusqlite::params![
                new.key_id, spec.client_id, spec.name.trim(), new.prefix, new.last_four, new.secret_hash,
                scopes.to_db(), company, t, spec.expires_at
            ],
        )?;
        let mut key = load_key(tx, None, &new.key_id)?;
        key["rawKey"] = json!(new.raw);
        Ok(key)
    })
}

pub fn revoke_key(db: &Db, m: Option<&Manager<'_>>, key_id: &str) -> Result<Value, ApiError> {
    db.write(|tx| {
        load_key(tx, m, key_id)?;
        tx.execute(
            "UPDATE api_keys SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
            rusqlite::params![key_id, now()],
        )?;
        load_key(tx, m, key_id)
    })
}

/// Rotates an active key that has not been rotated yet: a successor with the same client, name,
/// scopes, company and expiry, and the old key expiring at the end of the grace period. Rotating a
/// key that was already rotated, revoked or expired is 409, so a chain has one successor per key.
pub fn rotate_key(
    db: &Db,
    m: Option<&Manager<'_>>,
    key_id: &str,
    grace_secs: i64,
) -> Result<Value, ApiError> {
    if !(0..=MAX_GRACE_SECS).contains(&grace_secs) {
        return Err(ApiError::invalid(
            "/grace_period_seconds",
            "out_of_range",
            format!("Must be 0 to {MAX_GRACE_SECS}."),
        ));
    }
    let new = keys::generate();
    let t = now();
    db.write(|tx| {
        let old = load_key(tx, m, key_id)?;
        if let Some(successor) = old["replaced_by"].as_str() {
            return Err(ApiError::Conflict(format!(
                "Key `{key_id}` was already rotated: its successor is `{successor}`. Rotate the successor instead; a key is rotated only once."
            )));
        }
        if old["status"] != "active" {
            return Err(ApiError::Conflict(format!("Key `{key_id}` is {} and cannot be rotated.", old["status"].as_str().unwrap_or(""))));
        }
        tx.execute(
            "INSERT INTO api_keys (id, client_id, name, prefix, last_four, secret_hash, scopes, company_id, created_at, expires_at)
             SELECT ?2, client_id, name, ?3, ?4, ?5, scopes, company_id, ?6, expires_at FROM api_keys WHERE id = ?1",
            rusqlite::params![key_id, new.key_id, new.prefix, new.last_four, new.secret_hash, t],
        )?;
        let grace_end = t + grace_secs;
        let changed = tx.execute(
            "UPDATE api_keys SET replaced_by = ?2,
                    expires_at = CASE WHEN expires_at IS NULL OR expires_at > ?3 THEN ?3 ELSE expires_at END
             WHERE id = ?1 AND replaced_by IS NULL",
            rusqlite::params![key_id, new.key_id, grace_end],
        )?;
        if changed != 1 {
            return Err(ApiError::Conflict(format!("Key `{key_id}` was already rotated.")));
        }
        let mut new_key = load_key(tx, None, &new.key_id)?;
        new_key["rawKey"] = json!(new.raw);
        Ok(json!({"object": "api_key_rotation", "new_key": new_key, "previous_key": load_key(tx, None, key_id)?}))
    })
}

fn list_keys_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let client = ctx.query_id("client_id", Kind::ApiClient)?;
    let m = Manager::of(ctx.principal()?);
    let rows = list_keys_db(
        &ctx.app.db,
        Some(&m),
        client.as_deref(),
        page.bound(),
        page.fetch(),
    )?;
    Ok(Response::ok(&list_body(rows, &page, |v| {
        v["id"].as_str().unwrap_or("")
    })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyCreate {
    client_id: String,
    name: String,
    scopes: Vec<String>,
    #[serde(default, rename = "companyScope")]
    company_scope: Option<String>,
    #[serde(default)]
    expires_at: Option<String>,
}

fn create_key_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: KeyCreate = ctx.json()?;
    let expires_at = match &input.expires_at {
        None => None,
        Some(s) => Some(parse_rfc3339(s).ok_or_else(|| {
            ApiError::invalid(
                "/expires_at",
                "invalid_datetime",
                "Must be an RFC 3339 date-time.",
            )
        })?),
    };
    if !ids::is_valid(Kind::ApiClient, &input.client_id) {
        return Err(ApiError::invalid(
            "/client_id",
            "invalid_id",
            "Must be an API client id (`cli_…`).",
        ));
    }
    check_company_id(input.company_scope.as_deref())?;
    let m = Manager::of(ctx.principal()?);
    let spec = KeySpec {
        client_id: input.client_id,
        name: input.name,
        scopes: input.scopes,
        company_scope: input.company_scope,
        expires_at,
    };
    let key = create_key(&ctx.app.db, Some(&m), &spec)?;
    Ok(Response::created(&key).with_header("cache-control", "no-store"))
}

fn get_key(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    let m = Manager::of(ctx.principal()?);
    let conn = ctx.app.db.conn()?;
    Ok(Response::ok(&load_key(&conn, Some(&m), &id)?))
}

fn revoke_key_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    let m = Manager::of(ctx.principal()?);
    Ok(Response::ok(&revoke_key(&ctx.app.db, Some(&m), &id)?))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Rotate {
    #[serde(default, deserialize_with = "crate::routes::present")]
    grace_period_seconds: Option<i64>,
}

fn rotate_key_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    let input: Rotate = if ctx.body.is_empty() {
        Rotate::default()
    } else {
        ctx.json()?
    };
    let grace = input.grace_period_seconds.unwrap_or(DEFAULT_GRACE_SECS);
    let m = Manager::of(ctx.principal()?);
    let out = rotate_key(&ctx.app.db, Some(&m), &id, grace)?;
    Ok(Response::created(&out).with_header("cache-control", "no-store"))
}

// ---- Audit log and sandbox --------------------------------------------------------------------

fn list_audit(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let before: i64 = match &page.before {
        None => i64::MAX,
        Some(c) => c.parse().map_err(|_| {
            ApiError::invalid("cursor", "invalid_cursor", "Not a cursor of this list.")
        })?,
    };
    let m = Manager::of(ctx.principal()?);
    let rows = crate::audit::list(&ctx.app.db, m.account, m.company, before, page.fetch())?;
    Ok(Response::ok(&list_body(rows, &page, |v| {
        v["id"].as_str().unwrap_or("")
    })))
}

/// Restores the caller's account (and nothing else) to the fixtures. A full reset of the sandbox is
/// the operator's (`signage reset`).
fn reset(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let p = ctx.principal()?;
    if p.company_scope.is_some() {
        return Err(ApiError::AccountAdminRequired);
    }
    let account = p.account_id.clone();
    if !ctx.app.db.reset_account(&account)? {
        return Err(ApiError::Conflict(format!(
            "Account `{account}` is not part of the demo fixtures, so there is nothing to reset it to."
        )));
    }
    Ok(Response::ok(
        &json!({"object": "sandbox_reset", "reset": true}),
    ))
}
