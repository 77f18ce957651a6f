//! The internal-testing login token and the console's session token: HS256 JWTs, validated
//! strictly (RFC 8725).
//!
//! The algorithm is pinned to HS256 (so `none` and swapped algorithms fail), and `iss`, `aud`,
//! `sub`, `iat`, `exp` and `typ` are all required.
//!
//! One clock (issue 31 item 3): a token is issued and checked on the wall clock (the system's),
//! never on the sandbox clock. `iat` is the wall time of the login, `exp` is `iat` plus
//! `auth.login_token_ttl_secs`, and the token is refused from the wall-clock second `exp` on,
//! without leeway (the same machine's clock issues and checks it): it never lives longer in real
//! time than its stated life, whatever the sandbox clock shows or does (frozen, moved to 2031,
//! set back to 2020, or the server restarted on another setting). A token whose `iat` lies ahead
//! of the wall clock, or whose life is longer than its type's, is refused as invalid.
//!
//! Two types: `user_session` (a login; `sub` is the user; life `auth.login_token_ttl_secs`) and
//! `console_session` (what a sign-in link gives: `sub` is the key or user it was made for, `scope`
//! the scopes it carries, never wider than that credential's plus, for a link `signage demo`
//! printed, `sandbox`; life [`SESSION_TTL_SECS`]).

use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

pub const ISSUER: &str = "signage-sandbox";
pub const AUDIENCE: &str = "signage-api";
pub const TOKEN_TYPE: &str = "user_session";
/// A session a sign-in link opened ([`crate::routes::sign_in`]).
pub const SESSION_TYPE: &str = "console_session";
/// How long a console session lasts (wall clock): a presenter's working day.
pub const SESSION_TTL_SECS: i64 = 12 * 3600;

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
    /// A player's session: the one screen it acts for (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
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
        validation.leeway = 0;
        JwtKeys {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
            ttl_secs,
        }
    }

    /// A token for `user_id`, issued now on the wall clock.
    pub fn issue(&self, user_id: &str) -> Result<String, jsonwebtoken::errors::Error> {
        self.issue_at(user_id, crate::time::wall_now())
    }

    fn issue_at(&self, user_id: &str, now: i64) -> Result<String, jsonwebtoken::errors::Error> {
        let claims = Claims {
            iss: ISSUER.into(),
            aud: AUDIENCE.into(),
            sub: user_id.into(),
            iat: now,
            exp: now + self.ttl_secs as i64,
            typ: TOKEN_TYPE.into(),
            scope: None,
            device: None,
        };
        encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
    }

    /// A console session for `sub` (`key_…` or `usr_…`) with `scope`, from now on the wall clock
    /// for [`SESSION_TTL_SECS`] (moving the sandbox's clock must not end a presenter's session).
    pub fn issue_session(
        &self,
        sub: &str,
        scope: &str,
        device: Option<&str>,
    ) -> Result<String, jsonwebtoken::errors::Error> {
        let now = crate::time::wall_now();
        let claims = Claims {
            iss: ISSUER.into(),
            aud: AUDIENCE.into(),
            sub: sub.into(),
            iat: now,
            exp: now + SESSION_TTL_SECS,
            typ: SESSION_TYPE.into(),
            scope: Some(scope.into()),
            device: device.map(str::to_string),
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
        // `exp` is the first second the token is refused in (RFC 7519 §4.1.4: "on or after");
        // the library refuses only past it, so a token lived up to a second too long.
        let c = &data.claims;
        let now = crate::time::wall_now();
        if c.exp <= now {
            return Err(TokenError::Expired);
        }
        // The rest of the stated life must be this instance's own: issued in the past, for no
        // longer than its type's life.
        let max_life = match c.typ.as_str() {
            TOKEN_TYPE if c.scope.is_none() => self.ttl_secs as i64,
            SESSION_TYPE if c.scope.is_some() => SESSION_TTL_SECS,
            _ => return Err(TokenError::Invalid),
        };
        let life = c.exp - c.iat;
        if life < 0 || life > max_life || c.iat > now {
            return Err(TokenError::Invalid);
        }
        Ok(data.claims)
    }
}

impl JwtKeys {
    /// The subject of a token this server signed, whatever its expiry: a refused but genuine
    /// token (only the holder of a token this server issued can present it) names its user.
    pub fn signed_subject(&self, token: &str) -> Option<String> {
        let mut lenient = self.validation.clone();
        lenient.validate_exp = false;
        lenient.validate_nbf = false;
        let data = decode::<Claims>(token, &self.decoding, &lenient).ok()?;
        (data.claims.typ == TOKEN_TYPE).then_some(data.claims.sub)
    }
}

/// A compact JWS has three base64url parts; an API key never looks like that.
pub fn looks_like_jwt(s: &str) -> bool {
    s.starts_with("eyJ") && s.bytes().filter(|&b| b == b'.').count() == 2
}
