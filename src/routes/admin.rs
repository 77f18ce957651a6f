//! Administration (scope `admin`): API clients, API keys (create, list, revoke, rotate), the audit
//! log, and the sandbox reset. The key operations are plain functions over the database so that
//! the CLI (`signage keys …`) runs exactly the same code as REST.

use crate::auth::keys;
use crate::auth::scopes::Scopes;
use crate::auth::Action;
use crate::db::Db;
use crate::http::ctx::list_body;
use crate::http::router::{param, Route, LIMIT_PARAM};
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
        .paged_by(Kind::ApiClient)
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
            .paged_by(Kind::ApiKey)
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
            .summary("The audit log of the account's writes and of authentication failures.")
            // Audit entries have integer ids, so the cursor is a number.
            .query(&[
                LIMIT_PARAM,
                param(
                    "cursor",
                    r#"{"type":"string","pattern":"^[0-9]{1,18}$"}"#,
                    "The `next_cursor` of the previous page.",
                ),
            ])
            .ok("AuditEntryList"),
        Route::post("/_sandbox/reset", "resetSandbox", Action::Admin, reset)
            .tag("sandbox")
            .summary("Restore the demo fixtures (every change is discarded).")
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
            "required":["id","object","account_id","name","description","created_at"],
            "properties":{"id":{"type":"string","pattern":"^cli_"},"object":{"const":"api_client"},
                "account_id":{"type":"string"},"name":{"type":"string"},"description":{"type":"string"},"created_at":ts}}),
        ),
        (
            "ApiClientCreate",
            json!({"type":"object","additionalProperties":false,"required":["name"],
            "properties":{"name":text_schema(1, 100),
                          "description":text_schema(0, 500)}}),
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
            "required":["id","object","at","request_id","actor","client_id","method","route","status","outcome"],
            "properties":{"id":{"type":"string"},"object":{"const":"audit_entry"},"at":ts,"request_id":{"type":"string"},
                "actor":{"type":["string","null"]},"client_id":{"type":["string","null"]},"method":{"type":"string"},
                "route":{"type":"string"},"status":{"type":"integer"},"outcome":{"type":"string"}}}),
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
        "created_at": rfc3339(r.get(4)?),
    }))
}

const CLIENT_COLUMNS: &str = "id, account_id, name, description, created_at";

/// Lists clients, of one account or (CLI) of all.
pub fn list_clients_db(
    db: &Db,
    account: Option<&str>,
    before: &str,
    fetch: i64,
) -> Result<Vec<Value>, ApiError> {
    let conn = db.conn()?;
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {CLIENT_COLUMNS} FROM api_clients WHERE (?1 IS NULL OR account_id = ?1) AND id < ?2 ORDER BY id DESC LIMIT ?3"
    ))?;
    let rows = stmt.query_map(rusqlite::params![account, before, fetch], client_json)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub fn create_client(
    db: &Db,
    account: &str,
    name: &str,
    description: &str,
) -> Result<Value, ApiError> {
    let mut errors = Errors::new();
    errors.text("/name", name, 1, 100);
    if !description.is_empty() {
        errors.text("/description", description, 0, 500);
    }
    errors.finish()?;
    let id = ids::new_id(Kind::ApiClient);
    db.write(|tx| {
        let exists: bool = tx.query_row("SELECT count(*) > 0 FROM accounts WHERE id = ?1", [account], |r| r.get(0))?;
        if !exists {
            return Err(ApiError::not_found("account", account));
        }
        tx.execute(
            "INSERT INTO api_clients (id, account_id, name, description, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![id, account, name.trim(), description.trim(), now()],
        )?;
        Ok(tx.query_row(&format!("SELECT {CLIENT_COLUMNS} FROM api_clients WHERE id = ?1"), [&id], client_json)?)
    })
}

fn list_clients(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let rows = list_clients_db(
        &ctx.app.db,
        Some(&ctx.principal()?.account_id),
        page.bound(),
        page.fetch(),
    )?;
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
}

fn create_client_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: ClientCreate = ctx.json()?;
    let account = ctx.principal()?.account_id.clone();
    Ok(Response::created(&create_client(
        &ctx.app.db,
        &account,
        &input.name,
        &input.description,
    )?))
}

fn get_client(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    let account = ctx.principal()?.account_id.clone();
    let conn = ctx.app.db.conn()?;
    let client = conn
        .prepare_cached(&format!(
            "SELECT {CLIENT_COLUMNS} FROM api_clients WHERE id = ?1 AND account_id = ?2"
        ))?
        .query_row([&id, &account], client_json)
        .optional()?
        .ok_or_else(|| ApiError::not_found("API client", &id))?;
    Ok(Response::ok(&client))
}

// ---- API keys -------------------------------------------------------------------------------

const KEY_COLUMNS: &str =
    "k.id, k.name, k.client_id, k.prefix, k.last_four, k.scopes, k.company_id, k.created_at,
    k.last_used_at, k.expires_at, k.revoked_at, k.replaced_by";

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

fn load_key(
    conn: &rusqlite::Connection,
    account: Option<&str>,
    key_id: &str,
) -> Result<Value, ApiError> {
    conn.prepare_cached(&format!(
        "SELECT {KEY_COLUMNS} FROM api_keys k JOIN api_clients c ON c.id = k.client_id
         WHERE k.id = ?1 AND (?2 IS NULL OR c.account_id = ?2)"
    ))?
    .query_row(rusqlite::params![key_id, account], key_json)
    .optional()?
    .ok_or_else(|| ApiError::not_found("API key", key_id))
}

pub fn list_keys_db(
    db: &Db,
    account: Option<&str>,
    client: Option<&str>,
    before: &str,
    fetch: i64,
) -> Result<Vec<Value>, ApiError> {
    let conn = db.conn()?;
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {KEY_COLUMNS} FROM api_keys k JOIN api_clients c ON c.id = k.client_id
         WHERE (?1 IS NULL OR c.account_id = ?1) AND (?2 IS NULL OR k.client_id = ?2) AND k.id < ?3
         ORDER BY k.id DESC LIMIT ?4"
    ))?;
    let rows = stmt.query_map(rusqlite::params![account, client, before, fetch], key_json)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// What a new key may be. `limits` is the creator's reach (REST: the admin principal; CLI: none).
pub struct KeySpec {
    pub client_id: String,
    pub name: String,
    pub scopes: Vec<String>,
    pub company_scope: Option<String>,
    pub expires_at: Option<i64>,
}

pub struct CreatorLimits<'a> {
    pub account: &'a str,
    pub scopes: &'a Scopes,
    pub visible_companies: &'a [String],
}

pub fn create_key(
    db: &Db,
    limits: Option<&CreatorLimits<'_>>,
    spec: &KeySpec,
) -> Result<Value, ApiError> {
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
    if let Some(l) = limits {
        if !l.scopes.covers(&scopes) {
            return Err(ApiError::invalid(
                "/scopes",
                "exceeds_creator",
                "A key cannot grant scopes its creator lacks.",
            ));
        }
        if let Some(c) = &spec.company_scope {
            if !l.visible_companies.iter().any(|v| v == c) {
                return Err(ApiError::not_found("company", c));
            }
        } else if l.visible_companies.len() == 1
            && !l
                .scopes
                .covers(&Scopes::parse_list("admin").unwrap_or_default())
        {
            return Err(ApiError::invalid(
                "/companyScope",
                "required",
                "A company-scoped creator must give companyScope.",
            ));
        }
    }
    let new = keys::generate();
    db.write(|tx| {
        let account: Option<String> = tx
            .query_row("SELECT account_id FROM api_clients WHERE id = ?1", [&spec.client_id], |r| r.get(0))
            .optional()?;
        let account = match (account, limits) {
            (Some(a), Some(l)) if a == l.account => a,
            (Some(a), None) => a,
            _ => return Err(ApiError::not_found("API client", &spec.client_id)),
        };
        if let Some(c) = &spec.company_scope {
            let owner: Option<String> = tx
                .query_row("SELECT account_id FROM companies WHERE id = ?1", [c], |r| r.get(0))
                .optional()?;
            if owner.as_deref() != Some(account.as_str()) {
                return Err(ApiError::not_found("company", c));
            }
        }
        tx.execute(
            "INSERT INTO api_keys (id, client_id, name, prefix, last_four, secret_hash, scopes, company_id, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            rusqlite::params![
                new.key_id, spec.client_id, spec.name.trim(), new.prefix, new.last_four, new.secret_hash,
                scopes.to_db(), spec.company_scope, t, spec.expires_at
            ],
        )?;
        let mut key = load_key(tx, None, &new.key_id)?;
        key["rawKey"] = json!(new.raw);
        Ok(key)
    })
}

pub fn revoke_key(db: &Db, account: Option<&str>, key_id: &str) -> Result<Value, ApiError> {
    db.write(|tx| {
        load_key(tx, account, key_id)?;
        tx.execute(
            "UPDATE api_keys SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
            rusqlite::params![key_id, now()],
        )?;
        load_key(tx, account, key_id)
    })
}

pub fn rotate_key(
    db: &Db,
    account: Option<&str>,
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
        let old = load_key(tx, account, key_id)?;
        if old["status"] != "active" {
            return Err(ApiError::Conflict(format!("Key `{key_id}` is {} and cannot be rotated.", old["status"].as_str().unwrap_or(""))));
        }
        tx.execute(
            "INSERT INTO api_keys (id, client_id, name, prefix, last_four, secret_hash, scopes, company_id, created_at, expires_at)
             SELECT ?2, client_id, name, ?3, ?4, ?5, scopes, company_id, ?6, expires_at FROM api_keys WHERE id = ?1",
            rusqlite::params![key_id, new.key_id, new.prefix, new.last_four, new.secret_hash, t],
        )?;
        let grace_end = t + grace_secs;
        tx.execute(
            "UPDATE api_keys SET replaced_by = ?2,
                    expires_at = CASE WHEN expires_at IS NULL OR expires_at > ?3 THEN ?3 ELSE expires_at END
             WHERE id = ?1",
            rusqlite::params![key_id, new.key_id, grace_end],
        )?;
        let mut new_key = load_key(tx, None, &new.key_id)?;
        new_key["rawKey"] = json!(new.raw);
        Ok(json!({"object": "api_key_rotation", "new_key": new_key, "previous_key": load_key(tx, None, key_id)?}))
    })
}

fn list_keys_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let client = ctx.query_id("client_id", Kind::ApiClient)?;
    let rows = list_keys_db(
        &ctx.app.db,
        Some(&ctx.principal()?.account_id),
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
    if let Some(c) = &input.company_scope {
        if !ids::is_valid(Kind::Company, c) {
            return Err(ApiError::invalid(
                "/companyScope",
                "invalid_id",
                "Must be a company id (`cmp_…`).",
            ));
        }
    }
    let p = ctx.principal()?;
    let limits = CreatorLimits {
        account: &p.account_id,
        scopes: &p.scopes,
        visible_companies: &p.visible_companies,
    };
    let spec = KeySpec {
        client_id: input.client_id,
        name: input.name,
        scopes: input.scopes,
        company_scope: input.company_scope,
        expires_at,
    };
    let key = create_key(&ctx.app.db, Some(&limits), &spec)?;
    Ok(Response::created(&key).with_header("cache-control", "no-store"))
}

fn get_key(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    let conn = ctx.app.db.conn()?;
    Ok(Response::ok(&load_key(
        &conn,
        Some(&ctx.principal()?.account_id),
        &id,
    )?))
}

fn revoke_key_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    Ok(Response::ok(&revoke_key(
        &ctx.app.db,
        Some(&ctx.principal()?.account_id),
        &id,
    )?))
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
    let out = rotate_key(&ctx.app.db, Some(&ctx.principal()?.account_id), &id, grace)?;
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
    let account = ctx.principal()?.account_id.clone();
    let conn = ctx.app.db.conn()?;
    // Entries of this account's keys and users, plus unauthenticated failures (no actor).
    let mut stmt = conn.prepare_cached(
        "SELECT a.id, a.at, a.request_id, a.actor, a.client_id, a.method, a.route, a.status, a.outcome
         FROM audit_log a
         WHERE a.id < ?1 AND (a.actor IS NULL
            OR a.actor IN (SELECT k.id FROM api_keys k JOIN api_clients c ON c.id = k.client_id WHERE c.account_id = ?2)
            OR a.actor IN (SELECT id FROM users WHERE account_id = ?2))
         ORDER BY a.id DESC LIMIT ?3",
    )?;
    let rows = stmt
        .query_map(rusqlite::params![before, account, page.fetch()], |r| {
            Ok(json!({
                "id": r.get::<_, i64>(0)?.to_string(),
                "object": "audit_entry",
                "at": rfc3339(r.get(1)?),
                "request_id": r.get::<_, String>(2)?,
                "actor": r.get::<_, Option<String>>(3)?,
                "client_id": r.get::<_, Option<String>>(4)?,
                "method": r.get::<_, String>(5)?,
                "route": r.get::<_, String>(6)?,
                "status": r.get::<_, i64>(7)?,
                "outcome": r.get::<_, String>(8)?,
            }))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Response::ok(&list_body(rows, &page, |v| {
        v["id"].as_str().unwrap_or("")
    })))
}

fn reset(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    ctx.app.db.reset()?;
    ctx.app.mcp.clear();
    Ok(Response::ok(
        &json!({"object": "sandbox_reset", "reset": true}),
    ))
}
