//! API keys: create (the raw key shown once), list, get, revoke, rotate (once per key).

use super::clients::{
    check_company_id, check_company_of_account, check_company_reach, load_client,
};
use crate::auth::keys;
use crate::auth::reach::{may_manage, Credential, Manager};
use crate::auth::scopes::Scopes;
use crate::db::Db;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{self, Kind};
use crate::time::{now, parse_rfc3339, rfc3339};
use crate::validate::Errors;
use rusqlite::{OptionalExtension, Row};
use serde::Deserialize;
use serde_json::{json, Value};

pub const DEFAULT_GRACE_SECS: i64 = 24 * 3600;
pub const MAX_GRACE_SECS: i64 = 30 * 24 * 3600;

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

pub(super) fn list_keys_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
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
    Ok(Response::page(rows, &page))
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

pub(super) fn create_key_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
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

pub(super) fn get_key(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    let m = Manager::of(ctx.principal()?);
    let conn = ctx.app.db.conn()?;
    Ok(Response::ok(&load_key(&conn, Some(&m), &id)?))
}

pub(super) fn revoke_key_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
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

pub(super) fn rotate_key_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
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
