//! Credential -> principal. Runs on every authenticated request. An API key is resolved from the
//! database once and then from [`Principals`], a cache checked on every request against the
//! database's credentials generation (see [`super::cache`]): a revocation, by this process or
//! any other, takes effect on the very next request.

use super::cache::{Entry, Principals};
use super::failure::{AuthError, AuthFailure};
use super::jwt::{self, JwtKeys, TokenError};
use super::keys;
use super::principal::{Actor, Principal};
use super::scopes::{Scope, Scopes};
use crate::db::Scoped;
use hyper::HeaderMap;
use rusqlite::OptionalExtension;

/// `last_used_at` is written at most once per this many seconds per key.
const LAST_USED_RESOLUTION_SECS: i64 = 60;

pub const API_KEY_HEADER: &str = "x-api-key";
pub const CLIENT_ID_HEADER: &str = "x-service-client-id";

enum Presented<'a> {
    ApiKey(&'a str),
    Jwt(&'a str),
}

/// The one credential of a request. A request carries exactly one: `X-API-KEY`, or
/// `Authorization: Bearer <key or login token>`. Two are refused with 400
/// `conflicting_credentials` rather than letting one silently win: a header repeated
/// (`X-API-KEY`, `Authorization` or `X-Service-Client-Id` twice), or `X-API-KEY` next to an
/// `Authorization` that is not `Bearer` with the very same key (the same key in both is one
/// credential, and is accepted).
fn presented(headers: &HeaderMap) -> Result<Presented<'_>, AuthError> {
    let api_key = single(headers, API_KEY_HEADER)?;
    let auth = single(headers, hyper::header::AUTHORIZATION.as_str())?;
    single(headers, CLIENT_ID_HEADER)?;
    let unauthenticated = AuthError::Unauthenticated;
    // (is it `Bearer`, its value); anything else in `Authorization` is a malformed credential.
    let bearer = auth.map(|auth| {
        auth.to_str()
            .ok()
            .and_then(|a| a.trim().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map_or((false, ""), |(_, v)| (true, v.trim()))
    });
    if let Some(v) = api_key {
        let v = v
            .to_str()
            .map_err(|_| unauthenticated(AuthFailure::MalformedKey))?
            .trim();
        return match bearer {
            None => Ok(Presented::ApiKey(v)),
            Some((true, same)) if same == v => Ok(Presented::ApiKey(v)),
            Some(_) => Err(conflicting(
                "`X-API-KEY` and `Authorization` carry different credentials",
            )),
        };
    }
    match bearer {
        None => Err(unauthenticated(AuthFailure::MissingCredential)),
        Some((false, _)) => Err(unauthenticated(AuthFailure::MalformedKey)),
        Some((true, value)) if jwt::looks_like_jwt(value) => Ok(Presented::Jwt(value)),
        Some((true, value)) => Ok(Presented::ApiKey(value)),
    }
}

/// The value of a credential header sent at most once; a second field line is a second credential.
fn single<'h>(
    headers: &'h HeaderMap,
    name: &str,
) -> Result<Option<&'h hyper::header::HeaderValue>, AuthError> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(conflicting(&format!("`{name}` is sent more than once")));
    }
    Ok(first)
}

fn conflicting(what: &str) -> AuthError {
    AuthError::Conflicting(format!("{what}: send exactly one credential, in `X-API-KEY` or in `Authorization: Bearer`, and one `X-Service-Client-Id`."))
}

/// The key id of the presented API key, if one of the right shape was sent (for the audit log of a
/// failed authentication). Never the secret.
pub fn presented_key_id(headers: &HeaderMap) -> Option<String> {
    match presented(headers) {
        Ok(Presented::ApiKey(raw)) => keys::parse(raw).map(|k| k.key_id()),
        _ => None,
    }
}

/// Whose credential a refused request presented, when the request proves it: an API key whose
/// secret matches (revoked, expired, past its rotation's grace, or sent with another client's id)
/// or a login token this server signed (expired). Only the holder of that credential can send
/// such a request, so it may be filed under the credential's account; a key id or client id on
/// its own proves nothing and names nobody.
pub struct Owner {
    pub account_id: String,
    pub company_id: Option<String>,
    /// `key_…` or `usr_…`.
    pub actor_id: String,
    pub client_id: Option<String>,
}

/// The [`Owner`] of the credential of a request refused with `failure`; `None` for every failure
/// a stranger can cause (no credential, a malformed, unknown or forged key, a bad signature).
pub fn proven_owner(
    db: Scoped<'_>,
    jwt: &JwtKeys,
    headers: &HeaderMap,
    failure: AuthFailure,
) -> Option<Owner> {
    use AuthFailure::*;
    if !matches!(
        failure,
        RevokedKey | ExpiredKey | ClientMismatch | ExpiredToken
    ) {
        return None;
    }
    let conn = db.conn().ok()?;
    match presented(headers).ok()? {
        Presented::ApiKey(raw) => {
            let parsed = keys::parse(raw)?;
            let key_id = parsed.key_id();
            let (hash, company, client, account) = conn
                .prepare_cached(
                    "SELECT k.secret_hash, k.company_id, k.client_id, c.account_id
                     FROM api_keys k JOIN api_clients c ON c.id = k.client_id WHERE k.id = ?1",
                )
                .ok()?
                .query_row([&key_id], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, Option<String>>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                })
                .ok()?;
            keys::verify(parsed.raw, &hash).then_some(Owner {
                account_id: account,
                company_id: company,
                actor_id: key_id,
                client_id: Some(client),
            })
        }
        Presented::Jwt(token) => {
            let user = jwt.signed_subject(token)?;
            let (company, account) = conn
                .prepare_cached("SELECT company_id, account_id FROM users WHERE id = ?1")
                .ok()?
                .query_row([&user], |r| {
                    Ok((r.get::<_, Option<String>>(0)?, r.get::<_, String>(1)?))
                })
                .ok()?;
            Some(Owner {
                account_id: account,
                company_id: company,
                actor_id: user,
                client_id: None,
            })
        }
    }
}

/// The principal behind the one credential of `headers`: an API key (from `cache` when it holds
/// the key at the database's generation, else looked up in `db`) or a login token (checked with
/// `jwt`, its user looked up in `db`). Records the key's use.
pub fn authenticate(
    db: Scoped<'_>,
    jwt: &JwtKeys,
    cache: &Principals,
    headers: &HeaderMap,
) -> Result<Principal, AuthError> {
    let verified = verify(db, jwt, cache, headers)?;
    verified.record_use(db);
    Ok(verified.principal)
}

/// A credential checked by [`verify`]: its principal, and whether the key's `last_used_at` is due
/// to be written ([`Verified::record_use`]).
#[derive(Clone, Debug)]
pub struct Verified {
    pub principal: Principal,
    /// The key id and the instant to record, when the stored one is older than the resolution.
    last_used: Option<(String, i64)>,
}

impl Verified {
    /// Writes the key's `last_used_at` when due. Best effort: a busy database must not fail (or
    /// hold up) the request over a usage timestamp. A write, so it runs where the request may block (the server
    /// verifies from the headers on its async workers, and the pipeline records afterwards).
    pub fn record_use(&self, db: Scoped<'_>) {
        if let Some((key_id, now)) = &self.last_used {
            // Only a request that came over the wire is verified before it runs: never a preview.
            let intent = crate::db::WriteIntent::by(crate::db::Origin {
                actor: Some(self.principal.actor_id().to_string()),
                via: "rest",
            });
            // Never waits for another writer: a request sent while a long run holds the write lock
            // (a clock advance) is answered at once, and the stamp is written by a later request.
            let _ = db.write_unless_busy(&intent, |tx| -> Result<(), crate::db::DbError> {
                tx.prepare_cached("UPDATE api_keys SET last_used_at = ?1 WHERE id = ?2")?
                    .execute(rusqlite::params![now, key_id])?;
                Ok(())
            });
        }
    }
}

/// [`authenticate`] without writing anything: reads only, so the server can check the credential
/// of a request from its headers before it reads any of its body. A key's reads are the
/// generation first, then the key's rows when the cache does not hold them under it.
pub fn verify(
    db: Scoped<'_>,
    jwt: &JwtKeys,
    cache: &Principals,
    headers: &HeaderMap,
) -> Result<Verified, AuthError> {
    match presented(headers)? {
        Presented::ApiKey(raw) => authenticate_key(db, cache, headers, raw),
        Presented::Jwt(token) => authenticate_jwt(db, jwt, token).map(|principal| Verified {
            principal,
            last_used: None,
        }),
    }
}

/// The companies a credential sees: `company`'s alone when it is limited to one (and it is one of
/// the account's), else all of `list` (the account's, space-separated), ascending by id.
fn visible_companies(list: Option<String>, company: Option<&str>) -> std::sync::Arc<[String]> {
    let account = parse_companies(list);
    match company {
        Some(c) => account.into_iter().filter(|x| x == c).collect(),
        None => account.into(),
    }
}

fn parse_companies(list: Option<String>) -> Vec<String> {
    let mut v: Vec<String> = list
        .unwrap_or_default()
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    v.sort();
    v
}

fn authenticate_key(
    db: Scoped<'_>,
    cache: &Principals,
    headers: &HeaderMap,
    raw: &str,
) -> Result<Verified, AuthError> {
    let fail = AuthError::Unauthenticated;
    // Shape and checksum first: a malformed key never reaches the database.
    let parsed = keys::parse(raw).ok_or(fail(AuthFailure::MalformedKey))?;
    let client_header = headers
        .get(CLIENT_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or(fail(AuthFailure::MissingClientId))?;
    // Read before the key's rows: rows never older than the generation they are kept under (a
    // newer row under an older generation is only refreshed once more). One statement, its own
    // read: a hit reads nothing else, so a transaction around it would only add two statements.
    let generations = db.generations()?;
    let now = db.clock().now();
    let entry = match cache
        .get(parsed.kid, generations)
        .filter(|e| e.same_key(parsed.raw))
    {
        Some(entry) => entry,
        None => {
            let entry = resolve_key(db, &parsed, generations)?;
            let entry = std::sync::Arc::new(entry);
            cache.insert(parsed.kid, std::sync::Arc::clone(&entry));
            entry
        }
    };
    if entry.revoked_at.is_some_and(|t| t <= now) {
        return Err(fail(AuthFailure::RevokedKey));
    }
    if entry.expires_at.is_some_and(|t| t <= now) {
        return Err(fail(AuthFailure::ExpiredKey));
    }
    if !entry.same_client(client_header) {
        return Err(fail(AuthFailure::ClientMismatch));
    }
    // `last_used_at` at most once a [`LAST_USED_RESOLUTION_SECS`] per key: this request claims the
    // stamp (the entry remembers it), `Verified::record_use` writes it.
    let last_used = entry
        .last_used()
        .is_none_or(|t| now - t >= LAST_USED_RESOLUTION_SECS)
        .then(|| {
            entry
                .last_used
                .store(now, std::sync::atomic::Ordering::Relaxed);
            (entry.principal.actor_id().to_string(), now)
        });
    Ok(Verified {
        principal: entry.principal.clone(),
        last_used,
    })
}

/// The key's rows, verified against the presented key (its SHA-256, compared in constant time).
/// Revocation, expiry and client are the caller's checks, on every request.
fn resolve_key(
    db: Scoped<'_>,
    parsed: &keys::ParsedKey<'_>,
    generations: crate::db::Generations,
) -> Result<Entry, AuthError> {
    let fail = AuthError::Unauthenticated;
    let key_id = parsed.key_id();
    let conn = db.conn()?;
    let row = conn
        .prepare_cached(
            "SELECT k.secret_hash, k.scopes, k.company_id, k.expires_at, k.revoked_at,
                    k.last_used_at, k.client_id, c.account_id,
                    (SELECT group_concat(id, ' ') FROM companies WHERE account_id = c.account_id)
             FROM api_keys k JOIN api_clients c ON c.id = k.client_id
             WHERE k.id = ?1",
        )?
        .query_row([&key_id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<i64>>(3)?,
                r.get::<_, Option<i64>>(4)?,
                r.get::<_, Option<i64>>(5)?,
                r.get::<_, String>(6)?,
                r.get::<_, String>(7)?,
                r.get::<_, Option<String>>(8)?,
            ))
        })
        .optional()?;
    drop(conn);
    let Some((
        hash,
        scopes,
        company,
        expires_at,
        revoked_at,
        last_used,
        client_id,
        account,
        companies,
    )) = row
    else {
        return Err(fail(AuthFailure::UnknownKey));
    };
    if !keys::verify(parsed.raw, &hash) {
        return Err(fail(AuthFailure::UnknownKey));
    }
    let scopes = Scopes::parse_list(&scopes).unwrap_or_default();
    let visible_companies = visible_companies(companies, company.as_deref());
    let principal = Principal {
        actor: Actor::ApiKey {
            key_id,
            client_id: client_id.clone(),
        },
        account_id: account,
        scopes,
        company_scope: company,
        visible_companies,
        expires_at,
        device: None,
    };
    Ok(Entry::new(
        generations,
        parsed.raw,
        client_id,
        revoked_at,
        expires_at,
        last_used,
        principal,
    ))
}

fn authenticate_jwt(db: Scoped<'_>, jwt: &JwtKeys, token: &str) -> Result<Principal, AuthError> {
    let claims = jwt.verify(token).map_err(|e| {
        AuthError::Unauthenticated(match e {
            TokenError::Expired => AuthFailure::ExpiredToken,
            TokenError::Invalid => AuthFailure::InvalidToken,
        })
    })?;
    let session = claims.scope.clone();
    let mut principal = if claims.sub.starts_with("key_") && session.is_some() {
        key_session(db, &claims.sub)?
    } else {
        user_principal(db, claims.sub)?
    };
    if let Some(device) = claims.device {
        // A player's session sees the company of its one screen, and only while the screen is
        // there to see (a deleted screen leaves it nothing).
        let company: Option<String> = db
            .conn()?
            .prepare_cached("SELECT company_id FROM devices WHERE id = ?1")?
            .query_row([&device], |r| r.get(0))
            .optional()?;
        principal.visible_companies = principal
            .visible_companies
            .iter()
            .filter(|c| company.as_deref() == Some(c.as_str()))
            .cloned()
            .collect();
        principal.device = Some(device);
    }
    if let Some(scope) = session {
        principal.scopes = session_scopes(&scope, &principal.scopes);
        principal.expires_at = Some(
            principal
                .expires_at
                .map_or(claims.exp, |t| t.min(claims.exp)),
        );
    } else {
        principal.expires_at = Some(claims.exp);
    }
    Ok(principal)
}

/// A session's scopes: those of its `scope` claim that the credential it was made for still holds
/// (a key narrowed or a user demoted narrows its sessions at once), and `sandbox` when the claim
/// has it (only `signage demo`'s link, and sessions opened from such a session, carry it).
pub fn session_scopes(claim: &str, credential: &Scopes) -> Scopes {
    let granted = Scopes::parse_list(claim).unwrap_or_default();
    Scopes::from_vec(
        granted
            .iter()
            .copied()
            .filter(|s| *s == Scope::Sandbox || credential.covers(&Scopes::from_vec(vec![*s])))
            .collect(),
    )
}

/// The principal of a key's console session: the key as it stands now (revoked or expired ends
/// the session on its next request), without the raw key (the session token stands for it).
fn key_session(db: Scoped<'_>, key_id: &str) -> Result<Principal, AuthError> {
    let fail = AuthError::Unauthenticated;
    let conn = db.conn()?;
    let row = conn
        .prepare_cached(
            "SELECT k.scopes, k.company_id, k.expires_at, k.revoked_at, k.client_id, c.account_id,
                    (SELECT group_concat(id, ' ') FROM companies WHERE account_id = c.account_id)
             FROM api_keys k JOIN api_clients c ON c.id = k.client_id
             WHERE k.id = ?1",
        )?
        .query_row([key_id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<i64>>(2)?,
                r.get::<_, Option<i64>>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, Option<String>>(6)?,
            ))
        })
        .optional()?;
    let Some((scopes, company, expires_at, revoked_at, client_id, account, companies)) = row else {
        return Err(fail(AuthFailure::UnknownKey));
    };
    let now = db.clock().now();
    if revoked_at.is_some_and(|t| t <= now) {
        return Err(fail(AuthFailure::RevokedKey));
    }
    if expires_at.is_some_and(|t| t <= now) {
        return Err(fail(AuthFailure::ExpiredKey));
    }
    let visible_companies = visible_companies(companies, company.as_deref());
    Ok(Principal {
        actor: Actor::ApiKey {
            key_id: key_id.to_string(),
            client_id,
        },
        account_id: account,
        scopes: Scopes::parse_list(&scopes).unwrap_or_default(),
        company_scope: company,
        visible_companies,
        expires_at,
        device: None,
    })
}

/// A user as their login token or session stands for them.
fn user_principal(db: Scoped<'_>, user_id: String) -> Result<Principal, AuthError> {
    let claims_sub = user_id;
    let conn = db.conn()?;
    let row = conn
        .prepare_cached(
            "SELECT u.username, u.role, u.company_id, u.account_id,
                    (SELECT group_concat(id, ' ') FROM companies WHERE account_id = u.account_id)
             FROM users u WHERE u.id = ?1",
        )?
        .query_row([&claims_sub], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
            ))
        })
        .optional()?;
    let Some((username, role, company, account, companies)) = row else {
        return Err(AuthError::Unauthenticated(AuthFailure::UnknownUser));
    };
    let visible_companies = visible_companies(companies, company.as_deref());
    Ok(Principal {
        actor: Actor::User {
            user_id: claims_sub,
            username,
        },
        account_id: account,
        scopes: role_scopes(&role),
        company_scope: company,
        visible_companies,
        expires_at: None,
        device: None,
    })
}

/// A user acts with the scopes of their role.
pub fn role_scopes(role: &str) -> Scopes {
    Scopes::from_vec(match role {
        "admin" => vec![Scope::Admin],
        "editor" => vec![Scope::Read, Scope::Write],
        _ => vec![Scope::Read],
    })
}
