//! API keys: create (the raw key shown once), list, get, revoke, rotate (once per key).

use super::clients::{
    check_company_id, check_company_of_account, check_company_reach, load_client, NAME,
};
use crate::auth::keys;
use crate::auth::reach::{may_manage, Credential, Manager};
use crate::auth::scopes::{Scope, Scopes};
use crate::db::{Scoped, WriteIntent};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{self, ApiKeyId, Kind, TypedId};
use crate::routes::crud::{Columns, Named, Time};
use crate::time::parse_rfc3339;
use crate::validate::{Errors, OneOf};
use rusqlite::OptionalExtension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const DEFAULT_GRACE_SECS: i64 = 24 * 3600;
pub const MAX_GRACE_SECS: i64 = 30 * 24 * 3600;

const KEY_COLUMNS: &str =
    "k.id, k.name, k.client_id, k.prefix, k.last_four, k.scopes, k.company_id, k.created_at,
    k.last_used_at, k.expires_at, k.revoked_at, k.replaced_by, c.account_id";

/// The `status` of a key, derived from its dates (never stored).
pub const KEY_STATUSES: &[&str] = &["active", "revoked", "expired"];

/// A key's status at `now`: revoked wins over expired.
fn key_status(now: i64, revoked_at: Option<i64>, expires_at: Option<i64>) -> &'static str {
    if revoked_at.is_some_and(|x| x <= now) {
        "revoked"
    } else if expires_at.is_some_and(|x| x <= now) {
        "expired"
    } else {
        "active"
    }
}

/// An API key's metadata: prefix and last four characters, never the secret.
// Field order is the order of the JSON members.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ApiKey {
    #[schemars(transform = Kind::ApiKey)]
    pub id: String,
    #[schemars(extend("const" = "api_key"))]
    object: &'static str,
    pub name: String,
    pub client_id: String,
    pub prefix: String,
    pub last_four: String,
    pub scopes: Vec<String>,
    #[serde(rename = "companyScope")]
    pub company_scope: Option<String>,
    #[schemars(transform = &OneOf(KEY_STATUSES))]
    pub status: &'static str,
    pub created_at: Time,
    pub last_used_at: Option<Time>,
    pub expires_at: Option<Time>,
    pub revoked_at: Option<Time>,
    pub replaced_by: Option<String>,
}

impl ApiKey {
    fn from_row(r: &Named<'_, '_>, now: i64) -> rusqlite::Result<ApiKey> {
        let scopes: String = r.get("scopes")?;
        let expires_at: Option<i64> = r.get("expires_at")?;
        let revoked_at: Option<i64> = r.get("revoked_at")?;
        Ok(ApiKey {
            id: r.get("id")?,
            object: "api_key",
            name: r.get("name")?,
            client_id: r.get("client_id")?,
            prefix: r.get("prefix")?,
            last_four: r.get("last_four")?,
            scopes: scopes.split_whitespace().map(String::from).collect(),
            company_scope: r.get("company_id")?,
            status: key_status(now, revoked_at, expires_at),
            created_at: Time(r.get("created_at")?),
            last_used_at: r.get::<Option<i64>>("last_used_at")?.map(Time),
            expires_at: expires_at.map(Time),
            revoked_at: revoked_at.map(Time),
            replaced_by: r.get("replaced_by")?,
        })
    }
}

impl crate::http::response::Listed for ApiKey {
    fn list_key(&self) -> &str {
        &self.id
    }
}

/// A key as created: the only time its secret `rawKey` is shown.
// The secret comes after the key's members.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ApiKeyWithSecret {
    #[serde(flatten)]
    pub key: ApiKey,
    /// The secret. Shown once; store it now.
    #[serde(rename = "rawKey")]
    pub raw_key: String,
}

/// The new key (with its secret, shown once) and the old key with its new expiry.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ApiKeyRotation {
    #[schemars(extend("const" = "api_key_rotation"))]
    object: &'static str,
    /// The new key, with its secret (shown once).
    #[schemars(transform = crate::jsonschema::component::<ApiKeyWithSecret>)]
    pub new_key: ApiKeyWithSecret,
    /// The replaced key, with its new expiry.
    #[schemars(transform = crate::jsonschema::component::<ApiKey>)]
    pub previous_key: ApiKey,
}

/// A key row and whether `m` reaches it (the one rule of [`may_manage`]).
fn key_if_reached(
    m: Option<&Manager<'_>>,
    r: &Named<'_, '_>,
    now: i64,
) -> rusqlite::Result<Option<ApiKey>> {
    let key = ApiKey::from_row(r, now)?;
    let account: String = r.get("account_id")?;
    let scopes = Scopes::parse_list(&key.scopes.join(" ")).unwrap_or_default();
    let target = Credential {
        account: &account,
        scopes: &scopes,
        company: key.company_scope.as_deref(),
    };
    Ok(may_manage(m, &target).then_some(key))
}

/// The key, if it exists and `m` reaches it; otherwise 404, whether it exists or not.
fn load_key(
    conn: &rusqlite::Connection,
    m: Option<&Manager<'_>>,
    key_id: &str,
    t: i64,
) -> Result<ApiKey, ApiError> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {KEY_COLUMNS} FROM api_keys k JOIN api_clients c ON c.id = k.client_id WHERE k.id = ?1"
    ))?;
    let columns = Columns::of(&stmt);
    stmt.query_row([key_id], |r| key_if_reached(m, &Named::new(r, &columns), t))
        .optional()?
        .flatten()
        .ok_or_else(|| ApiError::not_found("API key", key_id))
}

/// Lists the keys `m` reaches, newest first, their status judged at `t`. The account and company
/// parts of the rule are in the SQL (so pages are full); the same rule then runs on each row.
pub fn list_keys_db(
    db: Scoped<'_>,
    m: Option<&Manager<'_>>,
    client: Option<&str>,
    before: &str,
    fetch: i64,
    t: i64,
) -> Result<Vec<ApiKey>, ApiError> {
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
    let columns = Columns::of(&stmt);
    let rows = stmt.query_map(
        rusqlite::params![
            m.map(|m| m.account),
            m.and_then(|m| m.company),
            client,
            before,
            fetch
        ],
        |r| key_if_reached(m, &Named::new(r, &columns), t),
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
pub fn create_key(
    db: Scoped<'_>,
    intent: &WriteIntent,
    m: Option<&Manager<'_>>,
    spec: &KeySpec,
) -> Result<ApiKeyWithSecret, ApiError> {
    let mut errors = Errors::new();
    NAME.check(&mut errors, "/name", &spec.name);
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
    let new = keys::generate(db.seeded());
    db.write(intent, |tx| {
        let t = tx.now();
        let client = load_client(tx, m, &spec.client_id)?;
        let account = client.account_id;
        match (client.company_scope.as_deref(), company) {
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
            // A key created already expired was never valid: nothing expires later, so its expiry
            // counts as reported (no `api_key.expired`).
            "INSERT INTO api_keys (id, client_id, name, prefix, last_four, secret_hash, scopes, company_id, created_at, expires_at,
                    expiry_reported_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, CASE WHEN ?10 <= ?9 THEN ?10 END)",
            rusqlite::params![
                new.key_id, spec.client_id, spec.name.trim(), new.prefix, new.last_four, new.secret_hash,
                scopes.to_db(), company, t, spec.expires_at
            ],
        )?;
        Ok(ApiKeyWithSecret {
            key: load_key(tx, None, &new.key_id, t)?,
            raw_key: new.raw,
        })
    })
}

pub fn revoke_key(
    db: Scoped<'_>,
    intent: &WriteIntent,
    m: Option<&Manager<'_>>,
    key_id: &str,
) -> Result<ApiKey, ApiError> {
    db.write(intent, |tx| {
        let t = tx.now();
        load_key(tx, m, key_id, t)?;
        tx.execute(
            "UPDATE api_keys SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
            rusqlite::params![key_id, t],
        )?;
        load_key(tx, m, key_id, t)
    })
}

/// Rotates an active key that has not been rotated yet: a successor with the same client, name,
/// scopes, company and expiry, and the old key expiring at the end of the grace period. Rotating a
/// key that was already rotated, revoked or expired is 409, so a chain has one successor per key.
pub fn rotate_key(
    db: Scoped<'_>,
    intent: &WriteIntent,
    m: Option<&Manager<'_>>,
    key_id: &str,
    grace_secs: i64,
) -> Result<ApiKeyRotation, ApiError> {
    if !(0..=MAX_GRACE_SECS).contains(&grace_secs) {
        return Err(ApiError::invalid(
            "/grace_period_seconds",
            "out_of_range",
            format!("Must be 0 to {MAX_GRACE_SECS}."),
        ));
    }
    let new = keys::generate(db.seeded());
    db.write(intent, |tx| {
        let t = tx.now();
        let old = load_key(tx, m, key_id, t)?;
        if let Some(successor) = &old.replaced_by {
            return Err(ApiError::Conflict(format!(
                "Key `{key_id}` was already rotated: its successor is `{successor}`. Rotate the successor instead; a key is rotated only once."
            )));
        }
        if old.status != "active" {
            return Err(ApiError::Conflict(format!("Key `{key_id}` is {} and cannot be rotated.", old.status)));
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
        let new_key = ApiKeyWithSecret { key: load_key(tx, None, &new.key_id, t)?, raw_key: new.raw };
        Ok(ApiKeyRotation { object: "api_key_rotation", new_key, previous_key: load_key(tx, None, key_id, t)? })
    })
}

pub(super) fn list_keys_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let client = ctx.query_id("client_id", Kind::ApiClient)?;
    let m = Manager::of(ctx.principal()?);
    let rows = list_keys_db(
        ctx.db,
        Some(&m),
        client.as_deref(),
        page.bound(),
        page.fetch(),
        ctx.now(),
    )?;
    Ok(Response::page(rows, &page))
}

/// A key to create for a client.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ApiKeyCreate")]
pub(super) struct KeyCreate {
    #[schemars(transform = Kind::ApiClient)]
    client_id: String,
    #[schemars(transform = &NAME)]
    name: String,
    #[schemars(length(min = 1, max = 20), transform = scope_names)]
    scopes: Vec<String>,
    #[serde(default, rename = "companyScope")]
    #[schemars(transform = Kind::Company, transform = crate::jsonschema::or_null)]
    company_scope: Option<String>,
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    expires_at: Option<String>,
}

/// `scopes`: each one of the scope names a key can hold.
fn scope_names(schema: &mut schemars::Schema) {
    if let Some(items) = schema.get_mut("items").and_then(|i| i.as_object_mut()) {
        items.insert("enum".into(), Scope::all_names().into());
    }
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
    let key = create_key(ctx.db, ctx.intent, Some(&m), &spec)?;
    Ok(Response::created(&key).with_header("cache-control", "no-store"))
}

pub(super) fn get_key(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: ApiKeyId = ctx.path()?;
    let m = Manager::of(ctx.principal()?);
    let conn = ctx.conn()?;
    Ok(Response::ok(&load_key(
        &conn,
        Some(&m),
        id.as_str(),
        ctx.now(),
    )?))
}

pub(super) fn revoke_key_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: ApiKeyId = ctx.path()?;
    let m = Manager::of(ctx.principal()?);
    Ok(Response::ok(&revoke_key(
        ctx.db,
        ctx.intent,
        Some(&m),
        id.as_str(),
    )?))
}

/// How long the key being replaced stays valid.
#[derive(Deserialize, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ApiKeyRotate")]
pub(super) struct Rotate {
    #[serde(default, deserialize_with = "crate::routes::optional::present")]
    #[schemars(with = "i64", range(min = 0, max = MAX_GRACE_SECS))]
    grace_period_seconds: Option<i64>,
}

pub(super) fn rotate_key_route(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: ApiKeyId = ctx.path()?;
    let input: Rotate = if ctx.body.is_empty() {
        Rotate::default()
    } else {
        ctx.json()?
    };
    let grace = input.grace_period_seconds.unwrap_or(DEFAULT_GRACE_SECS);
    let m = Manager::of(ctx.principal()?);
    let out = rotate_key(ctx.db, ctx.intent, Some(&m), id.as_str(), grace)?;
    Ok(Response::created(&out).with_header("cache-control", "no-store"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rawKey` comes after every member of the key, as when it was appended to a JSON object.
    #[test]
    fn a_key_with_its_secret_ends_with_raw_key() {
        let key = ApiKey {
            id: "key_1".into(),
            object: "api_key",
            name: "n".into(),
            client_id: "cli_1".into(),
            prefix: "sk_".into(),
            last_four: "abcd".into(),
            scopes: vec!["read".into(), "write".into()],
            company_scope: None,
            status: "active",
            created_at: Time(0),
            last_used_at: None,
            expires_at: Some(Time(60)),
            revoked_at: None,
            replaced_by: None,
        };
        let json = serde_json::to_string(&ApiKeyWithSecret {
            key,
            raw_key: "secret".into(),
        })
        .unwrap();
        assert_eq!(
            json,
            r#"{"id":"key_1","object":"api_key","name":"n","client_id":"cli_1","prefix":"sk_","last_four":"abcd","scopes":["read","write"],"companyScope":null,"status":"active","created_at":"1970-01-01T00:00:00Z","last_used_at":null,"expires_at":"1970-01-01T00:01:00Z","revoked_at":null,"replaced_by":null,"rawKey":"secret"}"#
        );
    }

    #[test]
    fn a_key_is_revoked_before_expired_and_active_until_the_second_itself() {
        assert_eq!(key_status(10, None, None), "active");
        assert_eq!(key_status(10, None, Some(11)), "active");
        assert_eq!(key_status(10, None, Some(10)), "expired");
        assert_eq!(key_status(10, Some(10), Some(5)), "revoked");
        assert_eq!(key_status(10, Some(11), Some(5)), "expired");
        for s in ["active", "revoked", "expired"] {
            assert!(KEY_STATUSES.contains(&s));
        }
    }
}
