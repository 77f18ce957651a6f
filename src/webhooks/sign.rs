//! Signing per the Standard Webhooks specification: `webhook-signature` carries
//! `v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">`, keyed with the base64
//! decoding of the part of the secret after `whsec_`; several signatures (a rotation's old and new
//! secret) are separated by spaces.
//!
//! Our secrets are `whsec_` and 32 characters of `[0-9A-Za-z]`: every such string is valid base64
//! (no padding needed at 32 characters), so the key is its 24 decoded bytes, as any verifier of the
//! specification computes it. A secret that does not decode (none exists) is used as raw bytes.

use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The HMAC key of a `whsec_` secret.
pub fn key(secret: &str) -> Vec<u8> {
    let encoded = secret.strip_prefix("whsec_").unwrap_or(secret);
    B64.decode(encoded)
        .unwrap_or_else(|_| encoded.as_bytes().to_vec())
}

/// One `v1,<base64>` signature.
pub fn signature(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    // HMAC accepts a key of any length; the error arm cannot happen.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&key(secret)) else {
        return String::new();
    };
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", B64.encode(mac.finalize().into_bytes()))
}

/// The `webhook-signature` header: one signature per secret, space-separated, newest first.
pub fn header(secrets: &[String], id: &str, timestamp: i64, body: &[u8]) -> String {
    secrets
        .iter()
        .map(|s| signature(s, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The known-answer vector published with the specification (its reference libraries' tests).
    #[test]
    fn the_specifications_known_answer_vector() {
        let sig = signature(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn our_secret_format_decodes_as_base64_to_24_bytes() {
        let secret = "whsec_0123456789abcdefghijABCDEFGHIJ01";
        assert_eq!(secret.len(), 6 + 32);
        assert_eq!(key(secret).len(), 24);
    }

    #[test]
    fn a_rotation_signs_with_both_secrets() {
        let secrets = vec![
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_string(),
            "whsec_0123456789abcdefghijABCDEFGHIJ01".to_string(),
        ];
        let h = header(&secrets, "evt_1", 1, b"{}");
        let parts: Vec<&str> = h.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert_ne!(parts[0], parts[1]);
        assert!(parts.iter().all(|p| p.starts_with("v1,")));
    }
}
