//! The one error type of the request path, and its single mapping to RFC 9457 problem+json.

use super::response::Response;
pub use crate::auth::AuthFailure;
use crate::auth::{AuthError, Denial};
use crate::db::DbError;
use crate::ledger::LedgerError;
use hyper::{Method, StatusCode};
use serde::Serialize;
use serde_json::json;

/// One invalid field or query parameter of a 422.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct FieldError {
    /// A JSON Pointer (RFC 6901) into the body, or the name of the query parameter.
    #[schemars(extend("example" = "/name"))]
    pub field: String,
    /// What is wrong (`required`, `too_long`, `not_one_of`, `invalid_cursor`,
    /// `unknown_parameter`, ...).
    #[schemars(extend("example" = "too_long"))]
    pub code: String,
    /// The same, for a human.
    #[schemars(extend("example" = "must be at most 100 characters"))]
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, code: &str, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            code: code.into(),
            message: message.into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("not found: {0}")]
    NotFound(String),
    #[error("method not allowed")]
    MethodNotAllowed { allow: Vec<Method> },
    #[error("payload too large")]
    PayloadTooLarge { limit: usize },
    #[error("bad request: {0}")]
    BadRequest(String),
    /// A 400 with a machine-readable `code` (`duplicate_member`, `conflicting_credentials`,
    /// `invalid_if_match`): the request is malformed in a way a client should fix, not retry.
    #[error("malformed request ({code}): {detail}")]
    Malformed { code: &'static str, detail: String },
    #[error("validation failed")]
    Validation(Vec<FieldError>),
    #[error("unauthenticated: {0:?}")]
    Unauthenticated(AuthFailure),
    #[error("missing scope {0}")]
    Forbidden(String),
    /// A 403 for a request a browser sent from another site, or under a name that is not this
    /// server's ([`super::site`]): `host_not_allowed` or `origin_not_allowed`.
    /// A 403 for a player's session ([`crate::auth::Principal::device`]) asking for what a
    /// screen never does.
    #[error("a screen's credential")]
    ScreenCredential,
    #[error("foreign site ({code}): {detail}")]
    ForeignSite { code: &'static str, detail: String },
    #[error("conflict: {0}")]
    Conflict(String),
    /// A 409 with a machine-readable `code` (`clock_backwards`, `qr_code_limit`): the request
    /// cannot apply to the current state.
    #[error("conflict ({code}): {detail}")]
    ConflictCode { code: &'static str, detail: String },
    /// A 410 with a machine-readable `code`: what the request names existed once and is gone for
    /// good (a one-time link already used or expired).
    #[error("gone ({code}): {detail}")]
    Gone { code: &'static str, detail: String },
    #[error("idempotency key reused with a different request")]
    IdempotencyMismatch,
    #[error("idempotent request in flight")]
    IdempotencyInFlight,
    /// The replay of a request whose response carried a secret, which was never stored.
    #[error("secret not replayable")]
    SecretNotReplayable { resource_id: Option<String> },
    /// An operation on the whole account asked by a company-scoped credential.
    #[error("account-wide admin required")]
    AccountAdminRequired,
    #[error("precondition failed")]
    PreconditionFailed { current_etag: String },
    #[error("insufficient tokens")]
    InsufficientTokens { balance: i64, required: i64 },
    #[error("too many requests")]
    TooManyRequests { retry_after_secs: u64 },
    /// The credential's token bucket is empty (per-credential rate limit).
    #[error("rate limited")]
    RateLimited { retry_after_secs: u64 },
    /// The credential (or the whole sandbox) already holds the most requests an injected delay may
    /// hold back at once ([`super::delay_holds`]).
    #[error("too many delayed requests")]
    TooManyDelayed {
        limit: usize,
        sandbox_wide: bool,
        retry_after_secs: u64,
    },
    /// The client address has spent its failed authentications ([`super::auth_failures`]).
    #[error("too many failed authentications")]
    TooManyFailedAuthentications { retry_after_secs: u64 },
    /// No connection slot could be freed for a new connection ([`super::admission`]).
    #[error("too many connections")]
    TooManyConnections,
    /// A per-company bound on stored things (media bytes, webhooks) would be passed: `code` names
    /// it, `numbers` (`limit`, `used`, `requested`, …) are merged into the problem body.
    #[error("quota exceeded ({code})")]
    QuotaExceeded {
        code: &'static str,
        detail: String,
        numbers: serde_json::Value,
    },
    /// The request body did not arrive within the body read timeout.
    #[error("request body timeout")]
    RequestTimeout { secs: u64 },
    /// A wait the request asked for outlasted its timeout (`drain_timeout`); nothing was undone.
    #[error("timed out ({code}): {detail}")]
    TimedOut { code: &'static str, detail: String },
    #[error("unsupported media type: {0}")]
    UnsupportedMediaType(String),
    #[error("not acceptable: {0}")]
    NotAcceptable(String),
    #[error("unavailable: {0}")]
    Unavailable(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<DbError> for ApiError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::Sqlite(rusqlite::Error::SqliteFailure(f, _))
                if f.code == rusqlite::ErrorCode::DatabaseBusy
                    || f.code == rusqlite::ErrorCode::DatabaseLocked =>
            {
                ApiError::Unavailable("the database is busy; retry shortly".into())
            }
            other => ApiError::Internal(other.to_string()),
        }
    }
}

impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        match e {
            AuthError::Unauthenticated(reason) => ApiError::Unauthenticated(reason),
            AuthError::Conflicting(detail) => ApiError::Malformed {
                code: "conflicting_credentials",
                detail,
            },
            AuthError::Db(e) => ApiError::from(e),
        }
    }
}

impl From<LedgerError> for ApiError {
    fn from(e: LedgerError) -> Self {
        match e {
            LedgerError::InsufficientTokens { balance, required } => {
                ApiError::InsufficientTokens { balance, required }
            }
            LedgerError::Overflow => ApiError::Conflict("The token balance would overflow.".into()),
            LedgerError::UnknownCompany(id) => ApiError::not_found("company", &id),
            LedgerError::BalanceMoved { expected, balance } => ApiError::ConflictCode {
                code: "balance_changed",
                detail: format!("The token balance is {balance}, not the {expected} this change was prepared against; nothing was written."),
            },
            LedgerError::Vanished(id) => {
                ApiError::Internal(format!("token transaction {id} vanished"))
            }
            LedgerError::Db(e) => ApiError::from(e),
        }
    }
}

impl From<super::site::Refusal> for ApiError {
    fn from(r: super::site::Refusal) -> ApiError {
        ApiError::ForeignSite {
            code: r.code(),
            detail: r.detail(),
        }
    }
}

impl ApiError {
    /// A denial of [`crate::auth::authorize()`]: 403 naming the scope, or 404 for an object the
    /// credential may not see (`what` and `id` name it in the message).
    pub fn denied(denial: Denial, what: &str, id: &str) -> ApiError {
        match denial {
            Denial::MissingScope(scope) => ApiError::Forbidden(scope),
            Denial::NotVisible => ApiError::not_found(what, id),
            Denial::NotForAScreen => ApiError::ScreenCredential,
        }
    }
}

impl From<rusqlite::Error> for ApiError {
    fn from(e: rusqlite::Error) -> Self {
        ApiError::from(DbError::from(e))
    }
}

impl ApiError {
    pub fn not_found(what: &str, id: &str) -> ApiError {
        ApiError::NotFound(format!(
            "No {what} with id `{}` is visible to this credential.",
            truncate(id)
        ))
    }

    pub fn invalid(field: &str, code: &str, message: impl Into<String>) -> ApiError {
        ApiError::Validation(vec![FieldError::new(field, code, message)])
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::BadRequest(_) | ApiError::Malformed { .. } => StatusCode::BAD_REQUEST,
            ApiError::Validation(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_)
            | ApiError::AccountAdminRequired
            | ApiError::ForeignSite { .. }
            | ApiError::ScreenCredential => StatusCode::FORBIDDEN,
            ApiError::Conflict(_)
            | ApiError::ConflictCode { .. }
            | ApiError::IdempotencyMismatch
            | ApiError::IdempotencyInFlight
            | ApiError::SecretNotReplayable { .. } => StatusCode::CONFLICT,
            ApiError::Gone { .. } => StatusCode::GONE,
            ApiError::PreconditionFailed { .. } => StatusCode::PRECONDITION_FAILED,
            ApiError::InsufficientTokens { .. } => StatusCode::PAYMENT_REQUIRED,
            ApiError::TooManyRequests { .. }
            | ApiError::RateLimited { .. }
            | ApiError::TooManyDelayed { .. }
            | ApiError::TooManyFailedAuthentications { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::TooManyConnections => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::QuotaExceeded { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::RequestTimeout { .. } | ApiError::TimedOut { .. } => {
                StatusCode::REQUEST_TIMEOUT
            }
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The short machine-readable slug; also the last segment of the problem `type`.
    pub fn slug(&self) -> &'static str {
        match self {
            ApiError::NotFound(_) => "not-found",
            ApiError::MethodNotAllowed { .. } => "method-not-allowed",
            ApiError::PayloadTooLarge { .. } => "payload-too-large",
            ApiError::BadRequest(_) | ApiError::Malformed { .. } => "bad-request",
            ApiError::Validation(_) => "validation-failed",
            ApiError::Unauthenticated(_) => "unauthenticated",
            ApiError::Forbidden(_) => "missing-scope",
            ApiError::ForeignSite { .. } => "foreign-site",
            ApiError::ScreenCredential => "screen-credential",
            ApiError::Conflict(_) | ApiError::ConflictCode { .. } => "conflict",
            ApiError::Gone { .. } => "gone",
            ApiError::IdempotencyMismatch => "idempotency-key-reused",
            ApiError::IdempotencyInFlight => "idempotency-key-in-flight",
            ApiError::SecretNotReplayable { .. } => "secret-not-replayable",
            ApiError::AccountAdminRequired => "account-admin-required",
            ApiError::PreconditionFailed { .. } => "precondition-failed",
            ApiError::InsufficientTokens { .. } => "insufficient-tokens",
            ApiError::TooManyRequests { .. } => "too-many-requests",
            ApiError::RateLimited { .. } => "rate-limited",
            ApiError::TooManyDelayed { .. } => "too-many-delayed-requests",
            ApiError::TooManyFailedAuthentications { .. } => "too-many-failed-authentications",
            ApiError::TooManyConnections => "too-many-connections",
            ApiError::QuotaExceeded { .. } => "quota-exceeded",
            ApiError::RequestTimeout { .. } => "request-timeout",
            ApiError::TimedOut { .. } => "timed-out",
            ApiError::UnsupportedMediaType(_) => "unsupported-media-type",
            ApiError::NotAcceptable(_) => "not-acceptable",
            ApiError::Unavailable(_) => "unavailable",
            ApiError::Internal(_) => "internal",
        }
    }

    fn title(&self) -> &'static str {
        match self {
            ApiError::NotFound(_) => "Not found",
            ApiError::MethodNotAllowed { .. } => "Method not allowed",
            ApiError::PayloadTooLarge { .. } => "Payload too large",
            ApiError::BadRequest(_) | ApiError::Malformed { .. } => "Bad request",
            ApiError::Validation(_) => "Validation failed",
            ApiError::Unauthenticated(_) => "Unauthenticated",
            ApiError::Forbidden(_) => "Missing scope",
            ApiError::ForeignSite { .. } => "Request from another site",
            ApiError::ScreenCredential => "A screen's credential",
            ApiError::Conflict(_) | ApiError::ConflictCode { .. } => "Conflict",
            ApiError::Gone { .. } => "Gone",
            ApiError::IdempotencyMismatch => "Idempotency key reused",
            ApiError::IdempotencyInFlight => "Idempotent request in flight",
            ApiError::SecretNotReplayable { .. } => "Secret not replayable",
            ApiError::AccountAdminRequired => "Account-wide admin required",
            ApiError::PreconditionFailed { .. } => "Precondition failed",
            ApiError::InsufficientTokens { .. } => "Insufficient tokens",
            ApiError::TooManyRequests { .. } | ApiError::RateLimited { .. } => "Too many requests",
            ApiError::TooManyDelayed { .. } => "Too many delayed requests",
            ApiError::TooManyFailedAuthentications { .. } => "Too many failed authentications",
            ApiError::TooManyConnections => "Too many connections",
            ApiError::QuotaExceeded { .. } => "Quota exceeded",
            ApiError::RequestTimeout { .. } => "Request timeout",
            ApiError::TimedOut { .. } => "Timed out",
            ApiError::UnsupportedMediaType(_) => "Unsupported media type",
            ApiError::NotAcceptable(_) => "Not acceptable",
            ApiError::Unavailable(_) => "Service unavailable",
            ApiError::Internal(_) => "Internal server error",
        }
    }

    fn detail(&self) -> String {
        match self {
            ApiError::NotFound(d)
            | ApiError::BadRequest(d)
            | ApiError::Conflict(d)
            | ApiError::UnsupportedMediaType(d)
            | ApiError::NotAcceptable(d)
            | ApiError::Unavailable(d)
            | ApiError::Malformed { detail: d, .. }
            | ApiError::ForeignSite { detail: d, .. }
            | ApiError::QuotaExceeded { detail: d, .. }
            | ApiError::ConflictCode { detail: d, .. }
            | ApiError::Gone { detail: d, .. }
            | ApiError::TimedOut { detail: d, .. } => d.clone(),
            ApiError::MethodNotAllowed { allow } => format!(
                "This path supports: {}.",
                allow.iter().map(Method::as_str).collect::<Vec<_>>().join(", ")
            ),
            ApiError::PayloadTooLarge { limit } => {
                format!("The request body exceeds the limit of {limit} bytes.")
            }
            ApiError::Validation(errors) => match errors.as_slice() {
                [one] => format!("`{}`: {}", one.field, one.message),
                _ => format!("{} fields are invalid; see `errors`.", errors.len()),
            },
            ApiError::Unauthenticated(reason) => reason.message().into(),
            ApiError::Forbidden(scope) => {
                format!("This credential lacks the `{scope}` scope needed for this operation.")
            }
            ApiError::IdempotencyMismatch => "This Idempotency-Key was already used with a different request (method, path or body). Use a new key for a new request.".into(),
            ApiError::IdempotencyInFlight => "A request with this Idempotency-Key is still being processed; retry shortly.".into(),
            ApiError::SecretNotReplayable { resource_id } => format!(
                "The first request with this Idempotency-Key succeeded and created {}; its response carried a secret, which is shown once and never stored, so it cannot be replayed. If the secret was lost, revoke what was created (or delete it) and create a new one.",
                resource_id.as_deref().map_or("an object".to_string(), |id| format!("`{id}`"))
            ),
            ApiError::ScreenCredential => "This credential is a screen's player session: it reads what its screen plays (the screen, its company and branding, its ads with their media and QR codes, which it reads by id company-wide) and reports that screen's heartbeats and plays, nothing else.".into(),
            ApiError::AccountAdminRequired => "This operation acts on the whole account: it needs an admin credential without a company scope. A company-scoped admin cannot perform it.".into(),
            ApiError::PreconditionFailed { current_etag } => format!(
                "The resource changed since the version in If-Match; its current ETag is {current_etag}. Fetch it again and retry."
            ),
            ApiError::InsufficientTokens { balance, required } => format!(
                "This operation costs {required} tokens but the balance is {balance}. Buy a token pack first."
            ),
            ApiError::TooManyRequests { retry_after_secs } => {
                format!("Too many failed attempts; retry after {retry_after_secs} seconds.")
            }
            ApiError::RateLimited { retry_after_secs } => format!(
                "This credential is over its rate limit (see the RateLimit and RateLimit-Policy headers); retry after {retry_after_secs} seconds."
            ),
            ApiError::TooManyDelayed { limit, sandbox_wide: false, retry_after_secs } => format!(
                "This credential's account already has {limit} requests held back by an injected delay (`Prefer: delay=` or a delay fault rule), all its keys and users together, the most it may; this one was not run. Retry after {retry_after_secs} seconds, when one of them is answered."
            ),
            ApiError::TooManyDelayed { limit, sandbox_wide: true, retry_after_secs } => format!(
                "The sandbox already holds {limit} requests back by injected delays, half its connection budget; this one was not run. Retry after {retry_after_secs} seconds."
            ),
            ApiError::TooManyFailedAuthentications { retry_after_secs } => format!(
                "Too many requests from this address failed to authenticate; this one was not looked at. Retry after {retry_after_secs} seconds with a valid credential."
            ),
            ApiError::TooManyConnections => "Every connection slot is held by a request that is running; this connection is closed. Retry shortly.".into(),
            ApiError::RequestTimeout { secs } => format!(
                "The request body was not received within {secs} seconds; the connection is closed."
            ),
            ApiError::Internal(_) => "An unexpected error occurred; the request id identifies it in the server log.".into(),
        }
    }

    /// The problem+json response. Internal details are logged by the caller, never sent.
    pub fn into_response(self, request_id: &str) -> Response {
        let status = self.status();
        let mut body = json!({
            "type": format!("/problems/{}", self.slug()),
            "title": self.title(),
            "status": status.as_u16(),
            "detail": self.detail(),
            "request_id": request_id,
        });
        match &self {
            ApiError::Validation(errors) => body["errors"] = json!(errors),
            ApiError::Unauthenticated(reason) => body["code"] = json!(reason.code()),
            ApiError::Malformed { code, .. }
            | ApiError::ForeignSite { code, .. }
            | ApiError::ConflictCode { code, .. }
            | ApiError::Gone { code, .. }
            | ApiError::TimedOut { code, .. } => body["code"] = json!(code),
            ApiError::Forbidden(scope) => body["missing_scope"] = json!(scope),
            ApiError::InsufficientTokens { balance, required } => {
                body["balance"] = json!(balance);
                body["required"] = json!(required);
            }
            ApiError::PreconditionFailed { current_etag } => {
                body["current_etag"] = json!(current_etag)
            }
            ApiError::SecretNotReplayable { resource_id } => {
                body["code"] = json!("secret_not_replayable");
                body["resource_id"] = json!(resource_id);
            }
            ApiError::AccountAdminRequired => body["code"] = json!("account_admin_required"),
            ApiError::TooManyDelayed {
                limit,
                sandbox_wide,
                ..
            } => {
                body["code"] = json!("too_many_delayed_requests");
                body["limit"] = json!(limit);
                body["scope"] = json!(if *sandbox_wide { "sandbox" } else { "account" });
            }
            ApiError::TooManyFailedAuthentications { .. } => {
                body["code"] = json!("too_many_failed_authentications")
            }
            ApiError::TooManyConnections => body["code"] = json!("too_many_connections"),
            ApiError::QuotaExceeded { code, numbers, .. } => {
                body["code"] = json!(code);
                if let (Some(body), Some(numbers)) = (body.as_object_mut(), numbers.as_object()) {
                    for (k, v) in numbers {
                        body.insert(k.clone(), v.clone());
                    }
                }
            }
            ApiError::RateLimited { .. } => {
                body["violated-policies"] = json!([super::rate_limit::POLICY])
            }
            _ => {}
        }
        // Every problem carries a `code`: where no finer one was set above, the slug of its `type`
        // (`not_found`, `validation_failed`, `precondition_failed`, `conflict`, ...).
        if body.get("code").is_none() {
            body["code"] = json!(self.slug().replace('-', "_"));
        }
        // A problem may quote the request (an unknown member's name, a field's pointer): a secret
        // the client sent by mistake (a raw key as a member name) is not echoed, nor kept by the
        // idempotency store or the journal, which keep this answer.
        if matches!(self, ApiError::Validation(_) | ApiError::BadRequest(_)) {
            crate::redact::redact_value(&mut body);
        }
        let mut resp = Response::problem(status, &body);
        match self {
            ApiError::MethodNotAllowed { allow } => {
                let allow = allow
                    .iter()
                    .map(Method::as_str)
                    .collect::<Vec<_>>()
                    .join(", ");
                resp.set_header("allow", &allow);
            }
            ApiError::Unauthenticated(reason) => {
                resp.set_header("www-authenticate", &challenges(reason));
            }
            ApiError::TooManyRequests { retry_after_secs }
            | ApiError::RateLimited { retry_after_secs } => {
                resp.set_header("retry-after", &retry_after_secs.to_string());
            }
            ApiError::RequestTimeout { .. } => resp.set_header("connection", "close"),
            // Nothing of the request was read: the connection cannot serve another.
            ApiError::TooManyFailedAuthentications { retry_after_secs } => {
                resp.set_header("retry-after", &retry_after_secs.to_string());
                resp.set_header("connection", "close");
            }
            ApiError::TooManyConnections => {
                resp.set_header("retry-after", "1");
                resp.set_header("connection", "close");
            }
            // A refused delay closes its connection, so the refused requests hold no slot either.
            ApiError::TooManyDelayed {
                retry_after_secs, ..
            } => {
                resp.set_header("retry-after", &retry_after_secs.to_string());
                resp.set_header("connection", "close");
            }
            ApiError::PreconditionFailed { current_etag } => resp.set_header("etag", &current_etag),
            _ => {}
        }
        resp
    }
}

/// The `WWW-Authenticate` value of a 401 (RFC 9110 §11.6.1): two challenges, comma-separated, each
/// a scheme and comma-separated `name="value"` parameters. `Bearer` first (RFC 6750; MCP clients
/// read it), with `error` and `error_description` (the problem `code`) when a credential was sent
/// and refused; then `ApiKey`, naming the header that carries a key.
pub fn challenges(reason: AuthFailure) -> String {
    let error = match reason {
        // No credential at all, or a login with a wrong password: no token to call invalid.
        AuthFailure::MissingCredential
        | AuthFailure::InvalidCredentials
        | AuthFailure::InvalidSignInLink => None,
        AuthFailure::MissingClientId => Some("invalid_request"),
        _ => Some("invalid_token"),
    };
    let mut bearer = format!("Bearer realm={}", quoted("signage"));
    if let Some(error) = error {
        bearer.push_str(&format!(
            ", error={}, error_description={}",
            quoted(error),
            quoted(reason.code())
        ));
    }
    format!(
        "{bearer}, ApiKey realm={}, header={}",
        quoted("signage"),
        quoted("X-API-KEY")
    )
}

/// An RFC 9110 quoted-string: `"` and `\` escaped with a backslash.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Ids echoed in messages are cut short, so a pasted secret in a path is not reflected whole.
fn truncate(s: &str) -> String {
    if s.len() <= 40 {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(40).collect::<String>())
    }
}

impl From<super::json::JsonError> for ApiError {
    fn from(e: super::json::JsonError) -> Self {
        match e {
            super::json::JsonError::Syntax(_) => ApiError::BadRequest(e.to_string()),
            super::json::JsonError::DuplicateMember { .. } => ApiError::Malformed {
                code: "duplicate_member",
                detail: e.to_string(),
            },
        }
    }
}
