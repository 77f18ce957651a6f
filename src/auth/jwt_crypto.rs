//! The one signature algorithm login tokens use, HS256, as `jsonwebtoken`'s crypto provider.
//!
//! Why not the crate's `rust_crypto` backend: it compiles RSA, P-256, P-384 and Ed25519 (with the
//! `rsa` crate and its advisory RUSTSEC-2023-0071) for tokens that are only ever HMAC-SHA-256. This
//! provider is built on `hmac` and `sha2`, which signage uses anyway; any other algorithm is refused
//! (`InvalidAlgorithm`), and the signature is compared in constant time (`Mac::verify_slice`).

use hmac::{Hmac, Mac};
use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{new_error, ErrorKind, Result};
use jsonwebtoken::signature::{Error as SignatureError, Signer, Verifier};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, EncodingKey};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

static HS256_ONLY: CryptoProvider = CryptoProvider {
    signer_factory,
    verifier_factory,
    key_utils: KeyUtils::new_unimplemented(),
};

/// Makes HS256 the process's JWT provider. Idempotent: every path that signs or verifies a token
/// calls it first (a second install is refused by `jsonwebtoken` and changes nothing).
pub fn install() {
    let _ = HS256_ONLY.install_default();
}

struct Hs256(HmacSha256);

fn hs256(algorithm: &Algorithm, family: AlgorithmFamily, secret: Result<&[u8]>) -> Result<Hs256> {
    if *algorithm != Algorithm::HS256 {
        return Err(new_error(ErrorKind::InvalidAlgorithm));
    }
    if family != AlgorithmFamily::Hmac {
        return Err(new_error(ErrorKind::InvalidKeyFormat));
    }
    HmacSha256::new_from_slice(secret?)
        .map(Hs256)
        .map_err(|_| new_error(ErrorKind::InvalidKeyFormat))
}

fn signer_factory(algorithm: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    Ok(Box::new(hs256(
        algorithm,
        key.family(),
        Ok(key.as_bytes()),
    )?))
}

fn verifier_factory(algorithm: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    Ok(Box::new(hs256(
        algorithm,
        key.family(),
        key.try_get_as_bytes(),
    )?))
}

impl Signer<Vec<u8>> for Hs256 {
    fn try_sign(&self, message: &[u8]) -> std::result::Result<Vec<u8>, SignatureError> {
        let mut mac = self.0.clone();
        mac.update(message);
        Ok(mac.finalize().into_bytes().to_vec())
    }
}

impl Verifier<Vec<u8>> for Hs256 {
    fn verify(
        &self,
        message: &[u8],
        signature: &Vec<u8>,
    ) -> std::result::Result<(), SignatureError> {
        let mut mac = self.0.clone();
        mac.update(message);
        mac.verify_slice(signature)
            .map_err(|_| SignatureError::new())
    }
}

impl JwtSigner for Hs256 {
    fn algorithm(&self) -> Algorithm {
        Algorithm::HS256
    }
}

impl JwtVerifier for Hs256 {
    fn algorithm(&self) -> Algorithm {
        Algorithm::HS256
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{decode, encode, Header, Validation};
    use serde_json::{json, Value};

    #[test]
    fn signs_and_verifies_hs256_and_refuses_every_other_algorithm() {
        install();
        let claims = json!({"sub": "usr_1", "exp": 4_000_000_000i64});
        let token = encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(b"k"),
        )
        .unwrap();
        let mut validation = Validation::new(Algorithm::HS256);
        validation.required_spec_claims.clear();
        let back = decode::<Value>(&token, &DecodingKey::from_secret(b"k"), &validation).unwrap();
        assert_eq!(back.claims, claims);
        // Another secret fails.
        assert!(decode::<Value>(&token, &DecodingKey::from_secret(b"x"), &validation).is_err());
        // Another algorithm is refused, signing and verifying.
        let err = encode(
            &Header::new(Algorithm::HS512),
            &claims,
            &EncodingKey::from_secret(b"k"),
        )
        .unwrap_err();
        assert_eq!(*err.kind(), ErrorKind::InvalidAlgorithm);
        let mut hs384 = Validation::new(Algorithm::HS384);
        hs384.required_spec_claims.clear();
        assert!(decode::<Value>(&token, &DecodingKey::from_secret(b"k"), &hs384).is_err());
    }
}
