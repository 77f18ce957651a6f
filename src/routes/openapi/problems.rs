//! The error catalogue: every problem `type` (its page at `/problems/{slug}`) and every problem
//! `code`, each with the text the OpenAPI document and the page show.

use crate::auth::AuthFailure;
use std::borrow::Cow;

/// A problem type: the last segment of its `type` URI, its HTTP status and what it means.
pub struct ProblemType {
    pub slug: &'static str,
    pub status: u16,
    pub title: &'static str,
    pub description: &'static str,
}

const fn t(
    slug: &'static str,
    status: u16,
    title: &'static str,
    description: &'static str,
) -> ProblemType {
    ProblemType {
        slug,
        status,
        title,
        description,
    }
}

/// Every problem type the server answers with ([`crate::http::ApiError::slug`]); a unit test
/// checks each variant of `ApiError` has its entry.
pub const TYPES: &[ProblemType] = &[
    t("bad-request", 400, "Bad request", "The request is malformed: JSON that does not parse, a duplicate member, an invalid `If-Match`, or two credentials that disagree. `code` says which when it is one of the fixed cases. Fix the request; retrying it unchanged fails again."),
    t("unauthenticated", 401, "Unauthenticated", "No credential, or one that is unknown, revoked, expired or paired with the wrong client id. `code` says which, and `WWW-Authenticate` names the accepted schemes. Send `X-API-KEY` (or `Authorization: Bearer <key>`) together with `X-Service-Client-Id`."),
    t("insufficient-tokens", 402, "Insufficient tokens", "The operation costs more tokens than the company holds. `balance` and `required` give both numbers; buy a token pack (`POST /token-packs/{id}/purchase`) and retry."),
    t("missing-scope", 403, "Missing scope", "The credential is valid but lacks the scope the operation needs; `missing_scope` names it. Objects of companies the credential cannot see are 404, never 403."),
    t("foreign-site", 403, "Request from another site", "A browser sent the request from a page of another site (`Origin`), or under a name that is not this server's (`Host`, as a rebound DNS name would): `code` is `origin_not_allowed` or `host_not_allowed`. Nothing was run; `server.allowed_hosts` adds a name of your own."),
    t("screen-credential", 403, "A screen's credential", "A player's session (from a `/player/{device_id}` sign-in link) acts for its one screen: it reads the screen, its company and branding, the ads it plays with their media and QR codes (media and QR codes by id, company-wide), and reports the screen's heartbeats and plays. Anything else is 403; another screen is 404."),
    t("account-admin-required", 403, "Account-wide admin required", "The operation acts on the whole account and needs an admin credential without a company scope; a company-scoped admin cannot perform it."),
    t("not-found", 404, "Not found", "No such path, or no object with this id visible to the credential. Another company's object is reported exactly like a missing one."),
    t("method-not-allowed", 405, "Method not allowed", "The path exists but not with this method; the `Allow` header lists the methods it takes."),
    t("not-acceptable", 406, "Not acceptable", "The `Accept` header asks for a media type this operation cannot produce."),
    t("timed-out", 408, "Timed out", "A wait the request asked for (a webhook drain) outlasted its timeout. Nothing was undone: what was done is recorded, and the request may be sent again."),
    t("request-timeout", 408, "Request timeout", "The request body did not arrive within the body read timeout; the connection is closed."),
    t("conflict", 409, "Conflict", "The request conflicts with the current state: a duplicate name, a plan limit, an object still in use, an invalid state transition. `detail` says which."),
    t("idempotency-key-reused", 409, "Idempotency key reused", "This `Idempotency-Key` was already used with a different method, path or body. Use a new key for a new request."),
    t("idempotency-key-in-flight", 409, "Idempotent request in flight", "A request with this `Idempotency-Key` is still being processed; retry shortly to receive its response."),
    t("secret-not-replayable", 409, "Secret not replayable", "The first request with this `Idempotency-Key` created an object whose response carried a one-time secret, which is never stored and so cannot be replayed. `resource_id` names what was created."),
    t("gone", 410, "Gone", "What the request names existed once and is gone for good: a one-time link already used or expired. `code` says which."),
    t("precondition-failed", 412, "Precondition failed", "`If-Match` did not match: the resource changed since you read it. `current_etag` (and the `ETag` header) give its current version; read it again and retry."),
    t("payload-too-large", 413, "Payload too large", "The request body is over the limit for this operation."),
    t("unsupported-media-type", 415, "Unsupported media type", "The `Content-Type` of the body is not one this operation accepts (JSON operations take `application/json`)."),
    t("validation-failed", 422, "Validation failed", "The request parsed but some fields or query parameters are invalid. `errors` lists each one: `field` (a JSON Pointer or the parameter name), a `code` and a message."),
    t("too-many-requests", 429, "Too many requests", "Too many failed logins from this client; wait `Retry-After` seconds."),
    t("too-many-delayed-requests", 429, "Too many delayed requests", "The credential's account (all its keys and login users together) already has the most requests held back by an injected delay (`Prefer: delay=` or a delay fault rule) that it may (`sandbox.max_delayed_per_account`, 8 by default), or the sandbox as a whole holds half its connection budget in delays. The request was not run and the connection is closed; retry after `Retry-After` seconds. `limit` and `scope` (`account` or `sandbox`) say which bound."),
    t("too-many-failed-authentications", 429, "Too many failed authentications", "Requests from this client address failed to authenticate `server.auth_failures_per_minute` times within the last minute (300 by default). This one was refused before its credential was looked up or its body read, nothing was recorded, and the connection is closed; retry after `Retry-After` seconds with a valid credential."),
    t("too-many-connections", 503, "Too many connections", "Every connection slot is held by a request that is running, so none could be freed for this connection; it is closed. Retry after `Retry-After` seconds."),
    t("quota-exceeded", 422, "Quota exceeded", "The change would pass a per-company bound on what is stored (media bytes, webhooks). `code` names the bound; `limit`, `used` and `requested` give the numbers. Nothing was stored; delete something first, or ask the operator to raise the bound."),
    t("rate-limited", 429, "Too many requests", "The credential is over its rate limit. Wait `Retry-After` seconds; `RateLimit` and `RateLimit-Policy` describe the quota."),
    t("internal", 500, "Internal server error", "An unexpected error. The `request_id` identifies it in the server log."),
    t("unavailable", 503, "Service unavailable", "The database is busy or the service is shutting down; retry shortly."),
];

/// One value of the problem `code` member.
pub struct ProblemCode {
    pub code: Cow<'static, str>,
    pub description: Cow<'static, str>,
}

/// A fixed case of [`OTHER_CODES`], written out.
struct FixedCode {
    code: &'static str,
    description: &'static str,
}

const fn c(code: &'static str, description: &'static str) -> FixedCode {
    FixedCode { code, description }
}

/// Every credential failure, in the order of [`AuthFailure`].
const AUTH_FAILURES: [AuthFailure; 12] = [
    AuthFailure::MissingCredential,
    AuthFailure::MissingClientId,
    AuthFailure::MalformedKey,
    AuthFailure::UnknownKey,
    AuthFailure::RevokedKey,
    AuthFailure::ExpiredKey,
    AuthFailure::ClientMismatch,
    AuthFailure::InvalidToken,
    AuthFailure::ExpiredToken,
    AuthFailure::UnknownUser,
    AuthFailure::InvalidCredentials,
    AuthFailure::InvalidSignInLink,
];

/// The problem codes that are not credential failures (those take their text from
/// [`AuthFailure::message`]).
const OTHER_CODES: &[FixedCode] = &[
    c("duplicate_member", "400: a JSON object of the body has the same member twice."),
    c("conflicting_credentials", "400: two credentials were sent (for example `X-API-KEY` and a bearer token) and they name different keys."),
    c("invalid_if_match", "400: `If-Match` is neither `*` nor a comma-separated list of entity tags."),
    c("cursor_mismatch", "400: a list's `cursor` was sent with other filters (query parameters other than `limit`, or another path) than the page whose `next_cursor` it is; send the same filters, or start again without `cursor`."),
    c("missing_signature", "400 (the built-in sink): a delivery without `webhook-id`, `webhook-timestamp` or `webhook-signature`; nothing was kept."),
    c("invalid_timestamp", "400 (the built-in sink): `webhook-timestamp` is not Unix seconds; nothing was kept."),
    c("timestamp_out_of_tolerance", "400 (the built-in sink): `webhook-timestamp` is more than 5 minutes from the wall clock and from the sandbox clock; nothing was kept."),
    c("signature_mismatch", "400 (the built-in sink): no signature matches the secret of a webhook of this sandbox that delivers to this sink; nothing was kept."),
    c("clock_backwards", "409: the clock cannot move back; `to` is before its current instant."),
    c("secret_not_replayable", "409: see the `secret-not-replayable` problem type."),
    c("secret_reveal_gone", "410: the one-time link to a secret was already opened, or expired (`mcp.secret_reveal_ttl_secs`); the secret is no longer held. Rotate the secret again for a new one."),
    c("account_admin_required", "403: see the `account-admin-required` problem type."),
    c("ad_not_assigned", "409: a reported play names an ad that is not assigned to the device."),
    c("ad_not_on_air", "409: a reported play names an ad the device did not play when the play started: not active, outside its dates, or its promotion switched off or outside its window (the ad's `on_air` rule)."),
    c("qr_code_limit", "409: the promotion already has the most QR codes it may hold (100)."),
    c("balance_changed", "409: the token balance is not the one an MCP confirmation was prepared against (its preview showed another); nothing was written. Only an MCP `confirm_change` binds a posting to a balance; it answers `stale_preview` with a fresh preview."),
    c("delivery_in_flight", "409: an attempt of this webhook delivery is being sent right now; retry when it is recorded."),
    c("no_rotation_in_progress", "409: a `rotation` webhook drill needs a secret rotation in its grace period; rotate the webhook's secret first."),
    c("fault_limit", "409: the sandbox holds the most fault rules it may (100); delete some first."),
    c("snapshot_exists", "409: a snapshot with this name exists; delete it first or choose another name."),
    c("snapshot_limit", "409: the sandbox holds the most snapshots it may (100); delete some first."),
    c("snapshot_budget_exceeded", "409: the snapshots would take more bytes together than `sandbox.snapshot_budget_bytes` (512 MiB by default); delete some first."),
    c("snapshot_version_mismatch", "409: the snapshot was taken by another binary version; delete it and take a new one."),
    c("snapshot_incompatible", "409: the snapshot was taken on another clock mode or seed setting; restart the sandbox with the same settings to restore it."),
    c("drain_timeout", "408: a webhook drain's timeout passed before every due delivery's attempt was recorded; `detail` says how many were left."),
    c("too_many_delayed_requests", "429: see the `too-many-delayed-requests` problem type."),
    c("too_many_failed_authentications", "429: see the `too-many-failed-authentications` problem type."),
    c("too_many_connections", "503: see the `too-many-connections` problem type."),
    c("media_quota_exceeded", "422: the upload would take the company's stored media past `media.quota_bytes_per_company`; `limit`, `used` and `requested` are in bytes."),
    c("webhook_limit", "422: the company already has the most webhooks it may (`webhooks.max_per_company`, 16 by default)."),
    c("host_not_allowed", "403: see the `foreign-site` problem type: `Host` is not a name of this server."),
    c("origin_not_allowed", "403: see the `foreign-site` problem type: `Origin` is a page of another site."),
    c("injected_fault", "Any status: the sandbox operator injected this answer (a fault rule, or `Prefer: code=`); `Signage-Fault` names the rule."),
];

/// Every value of `code`, each with its description.
pub fn codes() -> Vec<ProblemCode> {
    let fixed = |code: &'static str, description: &'static str| ProblemCode {
        code: Cow::Borrowed(code),
        description: Cow::Borrowed(description),
    };
    let mut out: Vec<ProblemCode> = AUTH_FAILURES
        .iter()
        .map(|f| fixed(f.code(), f.message()))
        .collect();
    out.extend(OTHER_CODES.iter().map(|x| fixed(x.code, x.description)));
    // Every problem carries a `code`: a type without a more specific case answers its own slug
    // with underscores (`not-found` -> `not_found`; [`crate::http::ApiError`]).
    for t in TYPES {
        let code = default_code(t.slug);
        if !out.iter().any(|known| known.code == code) {
            out.push(ProblemCode {
                description: Cow::Owned(format!(
                    "{}: the `{}` problem type, when no more specific code applies.",
                    t.status, t.slug
                )),
                code: Cow::Owned(code),
            });
        }
    }
    out
}

/// The code a problem of type `slug` carries when nothing more specific applies (what
/// `ApiError`'s body writes; the layers keep it there, this mirrors it for the catalogue).
pub fn default_code(slug: &str) -> String {
    slug.replace('-', "_")
}

pub fn by_slug(slug: &str) -> Option<&'static ProblemType> {
    TYPES.iter().find(|t| t.slug == slug)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::ApiError;

    /// Fails to compile when a credential failure is added without its place in the catalogue.
    fn _every_auth_failure_is_listed(f: AuthFailure) -> usize {
        match f {
            AuthFailure::MissingCredential
            | AuthFailure::MissingClientId
            | AuthFailure::MalformedKey
            | AuthFailure::UnknownKey
            | AuthFailure::RevokedKey
            | AuthFailure::ExpiredKey
            | AuthFailure::ClientMismatch
            | AuthFailure::InvalidToken
            | AuthFailure::ExpiredToken
            | AuthFailure::UnknownUser
            | AuthFailure::InvalidCredentials
            | AuthFailure::InvalidSignInLink => AUTH_FAILURES.len(),
        }
    }

    #[test]
    fn every_error_has_a_catalogue_entry_with_its_status() {
        let errors = [
            ApiError::NotFound(String::new()),
            ApiError::MethodNotAllowed { allow: Vec::new() },
            ApiError::PayloadTooLarge { limit: 1 },
            ApiError::BadRequest(String::new()),
            ApiError::Validation(Vec::new()),
            ApiError::Unauthenticated(AuthFailure::MissingCredential),
            ApiError::Forbidden(String::new()),
            ApiError::Conflict(String::new()),
            ApiError::ConflictCode {
                code: "clock_backwards",
                detail: String::new(),
            },
            ApiError::Gone {
                code: "secret_reveal_gone",
                detail: String::new(),
            },
            ApiError::IdempotencyMismatch,
            ApiError::IdempotencyInFlight,
            ApiError::SecretNotReplayable { resource_id: None },
            ApiError::AccountAdminRequired,
            ApiError::PreconditionFailed {
                current_etag: String::new(),
            },
            ApiError::InsufficientTokens {
                balance: 0,
                required: 1,
            },
            ApiError::TooManyRequests {
                retry_after_secs: 1,
            },
            ApiError::RateLimited {
                retry_after_secs: 1,
            },
            ApiError::RequestTimeout { secs: 1 },
            ApiError::TimedOut {
                code: "drain_timeout",
                detail: String::new(),
            },
            ApiError::TooManyDelayed {
                limit: 8,
                sandbox_wide: false,
                retry_after_secs: 1,
            },
            ApiError::TooManyFailedAuthentications {
                retry_after_secs: 1,
            },
            ApiError::TooManyConnections,
            ApiError::ForeignSite {
                code: "host_not_allowed",
                detail: String::new(),
            },
            ApiError::ScreenCredential,
            ApiError::QuotaExceeded {
                code: "webhook_limit",
                detail: String::new(),
                numbers: serde_json::Value::Null,
            },
            ApiError::UnsupportedMediaType(String::new()),
            ApiError::NotAcceptable(String::new()),
            ApiError::Unavailable(String::new()),
            ApiError::Internal(String::new()),
        ];
        for e in errors {
            let entry = by_slug(e.slug()).unwrap_or_else(|| panic!("no entry for {}", e.slug()));
            assert_eq!(entry.status, e.status().as_u16(), "{}", e.slug());
        }
        assert_eq!(
            TYPES.len(),
            29,
            "one entry per slug, and no entry without an error"
        );
    }

    #[test]
    fn codes_are_unique_and_described() {
        let all = codes();
        let mut names: Vec<&str> = all.iter().map(|c| c.code.as_ref()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len());
        assert!(all.iter().all(|c| !c.description.is_empty()));
        for t in TYPES {
            let code = default_code(t.slug);
            assert!(
                names.contains(&code.as_str()),
                "{code} is not in the catalogue"
            );
        }
    }
}
