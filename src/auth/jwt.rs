//! The internal-testing login token: HS256 JWT, validated strictly (RFC 8725).
//!
//! The algorithm is pinned to HS256 (so `none` and swapped algorithms fail), and `iss`, `aud`,
//! `sub`, `iat`, `exp` and `typ` are all required; `exp` and (when present) `nbf` are checked with
//! 5 seconds of leeway.

use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

pub const ISSUER: &str = "signage-sandbox";
pub const AUDIENCE: &str = "signage-api";
pub const TOKEN_TYPE: &str = "user_session";

#[derive(Debug, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub aud: String,
    pub sub: String,
    pub iat: i64,
    pub exp: i64,
    pub typ: String,
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
        if data.claims.typ != TOKEN_TYPE || data.claims.iat > data.claims.exp {
            return Err(TokenError::Invalid);
        }
        Ok(data.claims)
    }
}

/// A compact JWS has three base64url parts; an API key never looks like that.
pub fn looks_like_jwt(s: &str) -> bool {
    s.starts_with("eyJ") && s.bytes().filter(|&b| b == b'.').count() == 2
}
