//! The internal-testing login token and the console's session token: HS256 JWTs, validated
//! strictly (RFC 8725).
//!
//! The algorithm is pinned to HS256 (so `none` and swapped algorithms fail), and `iss`, `aud`,
//! `sub`, `iat`, `exp` and `typ` are all required; `exp` and (when present) `nbf` are checked with
//! 5 seconds of leeway.
//!
//! Two types: `user_session` (a login; `sub` is the user) and `console_session` (what a sign-in
//! link gives: `sub` is the key or user it was made for, `scope` the scopes it carries, never
//! wider than that credential's plus, for a link `signage demo` printed, `sandbox`).

use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

pub const ISSUER: &str = "signage-sandbox";
pub const AUDIENCE: &str = "signage-api";
pub const TOKEN_TYPE: &str = "user_session";
/// A session a sign-in link opened ([`crate::routes::sign_in`]).
pub const SESSION_TYPE: &str = "console_session";

#[derive(Debug, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub aud: String,
    pub sub: String,
    pub iat: i64,
    pub exp: i64,
    pub typ: String,
    /// A console session's scopes, space-separated (absent on a login token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

pub struct JwtKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    pub ttl_secs: u64,
}

#[derive(Debug, PartialEq, Eq)]
pub enum TokenError {
    Expired,
    Invalid,
}

impl JwtKeys {
    pub fn new(secret: &[u8], ttl_secs: u64) -> JwtKeys {
        super::jwt_crypto::install();
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub", "iat"]);
        // A token is not valid before its `nbf` (RFC 7519 §4.1.5), when it has one.
        validation.validate_nbf = true;
        validation.leeway = 5;
        JwtKeys {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
            ttl_secs,
        }
    }

    pub fn issue(&self, user_id: &str, now: i64) -> Result<String, jsonwebtoken::errors::Error> {
        let claims = Claims {
            iss: ISSUER.into(),
            aud: AUDIENCE.into(),
            sub: user_id.into(),
            iat: now,
            exp: now + self.ttl_secs as i64,
            typ: TOKEN_TYPE.into(),
            scope: None,
        };
        encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
    }

    /// A console session for `sub` (`key_…` or `usr_…`) with `scope`, from wall-clock `now` for
    /// `ttl_secs` (wall clock: moving the sandbox's clock must not end a presenter's session).
    pub fn issue_session(
        &self,
        sub: &str,
        scope: &str,
        now: i64,
        ttl_secs: i64,
    ) -> Result<String, jsonwebtoken::errors::Error> {
        let claims = Claims {
            iss: ISSUER.into(),
            aud: AUDIENCE.into(),
            sub: sub.into(),
            iat: now,
            exp: now + ttl_secs,
            typ: SESSION_TYPE.into(),
            scope: Some(scope.into()),
        };
        encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
    }

    pub fn verify(&self, token: &str) -> Result<Claims, TokenError> {
        use jsonwebtoken::errors::ErrorKind;
        let data =
            decode::<Claims>(token, &self.decoding, &self.validation).map_err(|e| {
                match e.kind() {
                    ErrorKind::ExpiredSignature => TokenError::Expired,
                    _ => TokenError::Invalid,
                }
            })?;
        let typed = match data.claims.typ.as_str() {
            TOKEN_TYPE => data.claims.scope.is_none(),
            SESSION_TYPE => data.claims.scope.is_some(),
            _ => false,
        };
        if !typed || data.claims.iat > data.claims.exp {
            return Err(TokenError::Invalid);
        }
        Ok(data.claims)
    }
}

/// A compact JWS has three base64url parts; an API key never looks like that.
pub fn looks_like_jwt(s: &str) -> bool {
    s.starts_with("eyJ") && s.bytes().filter(|&b| b == b'.').count() == 2
}
