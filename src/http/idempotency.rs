//! `Idempotency-Key` on POST, as Stripe defines it: the same key with the same request replays the
//! first response; the same key with a different request is a 409; a key still in flight is a 409.
//! Keys are per credential and kept for 24 hours.
//!
//! The key itself is never stored: only its digest ([`digest`]), here and in the request
//! journal, so a secret a client sends as its key (a raw API key, by mistake) reaches no disk.
//!
//! A response marked `Cache-Control: no-store` carries a secret shown once (a new API key's
//! `rawKey`, a webhook's signing secret). Its body and headers are never written: the record keeps
//! only the status and the id of what was created, and a replay is a 409 `secret_not_replayable`
//! naming that id, so the cache never holds a secret on disk.

use super::error::ApiError;
use super::response::Response;
use crate::db::{Scoped, WriteIntent};
use hyper::header::{HeaderName, HeaderValue};
use hyper::StatusCode;
use rusqlite::OptionalExtension;
use sha2::{Digest, Sha256};

const RETENTION_SECS: i64 = 24 * 3600;

pub enum Begin {
    /// First use: run the request, then [`finish`].
    Proceed,
    Replay(Response),
}

fn request_hash(method: &str, path: &str, query: &str, body: &[u8]) -> String {
    let mut h = Sha256::new();
    for part in [
        method.as_bytes(),
        b"\n",
        path.as_bytes(),
        b"\n",
        query.as_bytes(),
        b"\n",
        body,
    ] {
        h.update(part);
    }
    format!("{:x}", h.finalize())
}

/// What is stored of an `Idempotency-Key`: `sha256:` and 32 hex digits of the SHA-256 of
/// `signage idempotency-key\0` and the key (a digest of its own, never equal to a stored key hash).
pub fn digest(key: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"signage idempotency-key\0");
    h.update(key.as_bytes());
    let d = h.finalize();
    let mut out = String::with_capacity(7 + 32);
    out.push_str("sha256:");
    for b in &d[..16] {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

pub fn validate_key(key: &str) -> Result<(), ApiError> {
    if key.is_empty() || key.len() > 255 || !key.bytes().all(|c| c.is_ascii_graphic()) {
        return Err(ApiError::invalid(
            "Idempotency-Key",
            "invalid_header",
            "`Idempotency-Key` must be 1–255 visible ASCII characters.",
        ));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub fn begin(
    db: Scoped<'_>,
    intent: &WriteIntent,
    actor: &str,
    key: &str,
    method: &str,
    path: &str,
    query: &str,
    body: &[u8],
) -> Result<Begin, ApiError> {
    let hash = request_hash(method, path, query, body);
    let key = &digest(key);
    db.write(intent, |tx| {
        let now = tx.now();
        tx.prepare_cached("DELETE FROM idempotency_keys WHERE created_at < ?1")?
            .execute([now - RETENTION_SECS])?;
        let existing = tx
            .prepare_cached(
                "SELECT request_hash, status, headers, body, withheld_id FROM idempotency_keys
                 WHERE actor = ?1 AND key = ?2",
            )?
            .query_row([actor, key], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<u16>>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<Vec<u8>>>(3)?,
                    r.get::<_, Option<String>>(4)?,
                ))
            })
            .optional()?;
        match existing {
            None => {
                tx.prepare_cached(
                    "INSERT INTO idempotency_keys (actor, key, method, path, request_hash, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?
                .execute(rusqlite::params![actor, key, method, path, hash, now])?;
                Ok(Begin::Proceed)
            }
            Some((stored, ..)) if stored != hash => Err(ApiError::IdempotencyMismatch),
            Some((_, None, ..)) => Err(ApiError::IdempotencyInFlight),
            Some((_, Some(_), _, _, Some(withheld))) => Err(ApiError::SecretNotReplayable {
                resource_id: (!withheld.is_empty()).then_some(withheld),
            }),
            Some((_, Some(status), headers, body, None)) => {
                let mut resp = Response {
                    status: StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
                    headers: Default::default(),
                    body: body.unwrap_or_default().into(),
                    delivery: Default::default(),
                };
                let pairs: Vec<(String, String)> =
                    serde_json::from_str(&headers.unwrap_or_default()).unwrap_or_default();
                for (k, v) in pairs {
                    if let (Ok(k), Ok(v)) = (HeaderName::try_from(k), HeaderValue::try_from(v)) {
                        resp.headers.insert(k, v);
                    }
                }
                resp.set_header("idempotent-replayed", "true");
                Ok(Begin::Replay(resp))
            }
        }
    })
}

/// True when the response holds a secret that must not be stored anywhere.
fn carries_secret(resp: &Response) -> bool {
    resp.headers
        .get_all(hyper::header::CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| {
            v.split(',')
                .any(|d| d.trim().eq_ignore_ascii_case("no-store"))
        })
}

/// The id of what a secret-bearing response created: its `id`, or a rotation's `new_key.id`.
fn created_id(resp: &Response) -> String {
    resp.body_json()
        .and_then(|b| {
            b["id"]
                .as_str()
                .or_else(|| b["new_key"]["id"].as_str())
                .map(String::from)
        })
        .unwrap_or_default()
}

/// Stores the response for replay. A 5xx is not stored (the key is released), so a retry can succeed.
/// A response carrying a secret is not stored either: only its status and the created id are.
pub fn finish(db: Scoped<'_>, intent: &WriteIntent, actor: &str, key: &str, resp: &Response) {
    let key = &digest(key);
    let result = db.write(intent, |tx| -> Result<(), crate::db::DbError> {
        if resp.status.is_server_error() {
            tx.execute(
                "DELETE FROM idempotency_keys WHERE actor = ?1 AND key = ?2",
                [actor, key],
            )?;
            return Ok(());
        }
        if carries_secret(resp) {
            tx.prepare_cached(
                "UPDATE idempotency_keys SET status = ?3, headers = NULL, body = NULL, withheld_id = ?4
                 WHERE actor = ?1 AND key = ?2",
            )?
            .execute(rusqlite::params![
                actor,
                key,
                resp.status.as_u16(),
                created_id(resp)
            ])?;
            return Ok(());
        }
        let headers: Vec<(String, String)> = resp
            .headers
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
            .collect();
        tx.prepare_cached(
            "UPDATE idempotency_keys SET status = ?3, headers = ?4, body = ?5 WHERE actor = ?1 AND key = ?2",
        )?
        .execute(rusqlite::params![
            actor,
            key,
            resp.status.as_u16(),
            serde_json::to_string(&headers).unwrap_or_default(),
            resp.body.as_ref()
        ])?;
        Ok(())
    });
    if let Err(err) = result {
        tracing::warn!(error = %err, "storing idempotent response failed");
    }
}
