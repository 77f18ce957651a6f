//! What authentication reports when it refuses a request. The HTTP layer maps these into its
//! problem responses (`From<AuthError> for ApiError` in `http::error`); nothing here knows HTTP.

use crate::db::DbError;

/// Why a request could not be authenticated. The message never contains the presented secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthFailure {
    MissingCredential,
    MissingClientId,
    MalformedKey,
    UnknownKey,
    RevokedKey,
    ExpiredKey,
    ClientMismatch,
    InvalidToken,
    ExpiredToken,
    UnknownUser,
    InvalidCredentials,
    /// A sign-in link that is unknown, already used or expired.
    InvalidSignInLink,
}

impl AuthFailure {
    pub fn code(self) -> &'static str {
        match self {
            AuthFailure::MissingCredential => "missing_credential",
            AuthFailure::MissingClientId => "missing_client_id",
            AuthFailure::MalformedKey => "malformed_key",
            AuthFailure::UnknownKey => "unknown_key",
            AuthFailure::RevokedKey => "revoked_key",
            AuthFailure::ExpiredKey => "expired_key",
            AuthFailure::ClientMismatch => "client_mismatch",
            AuthFailure::InvalidToken => "invalid_token",
            AuthFailure::ExpiredToken => "expired_token",
            AuthFailure::UnknownUser => "unknown_user",
            AuthFailure::InvalidCredentials => "invalid_credentials",
            AuthFailure::InvalidSignInLink => "invalid_sign_in_link",
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            AuthFailure::MissingCredential => "No credential was sent. Send the API key in `X-API-KEY` or `Authorization: Bearer <key>`, and the client id in `X-Service-Client-Id`.",
            AuthFailure::MissingClientId => "The `X-Service-Client-Id` header is required with an API key.",
            AuthFailure::MalformedKey => "The API key is not in the expected format (`sgn_test_…`); check for a copy/paste error.",
            AuthFailure::UnknownKey => "The API key is not recognised.",
            AuthFailure::RevokedKey => "The API key has been revoked.",
            AuthFailure::ExpiredKey => "The API key has expired (or its rotation grace period has ended).",
            AuthFailure::ClientMismatch => "The `X-Service-Client-Id` does not match the client that owns this API key.",
            AuthFailure::InvalidToken => "The bearer token is not a valid login token.",
            AuthFailure::ExpiredToken => "The login token has expired; log in again.",
            AuthFailure::UnknownUser => "The user of this login token no longer exists.",
            AuthFailure::InvalidCredentials => "The username or password is incorrect.",
            AuthFailure::InvalidSignInLink => "This sign-in link is unknown, already used or expired: a link signs in once, within 10 minutes of being made. Ask for a new one (Enter in the terminal running `signage demo` prints fresh links and a fresh QR code to scan) or sign in with an API key.",
        }
    }
}

/// Why [`super::authenticate::authenticate`] returned no principal.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// A 401: no credential, or one that is refused (the reason says which).
    #[error("unauthenticated: {0:?}")]
    Unauthenticated(AuthFailure),
    /// A 400 `conflicting_credentials`: more than one credential was sent. The text says which.
    #[error("conflicting credentials: {0}")]
    Conflicting(String),
    /// The database could not be read.
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<rusqlite::Error> for AuthError {
    fn from(e: rusqlite::Error) -> Self {
        AuthError::Db(DbError::from(e))
    }
}

impl From<AuthFailure> for AuthError {
    fn from(f: AuthFailure) -> Self {
        AuthError::Unauthenticated(f)
    }
}
