//! The signed `requestState` of 2026-07-28 confirmation round trips ([`super::mrtr`]): the
//! per-instance [`Signer`] kept in the server state, and the [`Claims`] a state binds. It imports
//! no sibling.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Longer states were not issued here; refused before any decoding.
const MAX_STATE_LEN: usize = 512;
/// Domain separation: a MAC made here means nothing anywhere else.
const DOMAIN: &[u8] = b"signage/mcp/requestState/v1\n";

/// The per-instance signing secret of `requestState`.
pub struct Signer(Option<[u8; 32]>);

impl Signer {
    /// A fresh secret from the operating system. Without one (the OS refused), no state is
    /// issued and confirmations stay two-step.
    pub fn new() -> Signer {
        let mut secret = [0u8; 32];
        match getrandom::fill(&mut secret) {
            Ok(()) => Signer(Some(secret)),
            Err(e) => {
                tracing::warn!(error = %e, "no randomness for the requestState secret: MRTR confirmation is off");
                Signer(None)
            }
        }
    }

    fn mac(&self, payload: &[u8]) -> Option<Hmac<Sha256>> {
        let mut mac = Hmac::<Sha256>::new_from_slice(self.0.as_ref()?).ok()?;
        mac.update(DOMAIN);
        mac.update(payload);
        Some(mac)
    }

    pub(super) fn sign(&self, claims: &Claims) -> Option<String> {
        let payload = serde_json::to_vec(claims).ok()?;
        let tag = self.mac(&payload)?.finalize().into_bytes();
        Some(format!("{}.{}", B64.encode(&payload), B64.encode(tag)))
    }

    /// The claims of a state this instance signed; `None` for anything else (constant-time MAC check).
    pub(super) fn open(&self, state: &str) -> Option<Claims> {
        if state.len() > MAX_STATE_LEN {
            return None;
        }
        let (payload, tag) = state.split_once('.')?;
        let payload = B64.decode(payload).ok()?;
        let tag = B64.decode(tag).ok()?;
        self.mac(&payload)?.verify_slice(&tag).ok()?;
        serde_json::from_slice(&payload).ok()
    }
}

impl Default for Signer {
    fn default() -> Signer {
        Signer::new()
    }
}

/// What a `requestState` binds: who was asked, about which change, until when.
#[derive(Serialize, Deserialize)]
pub(super) struct Claims {
    /// The API key (or user) id the question was asked of.
    pub(super) k: String,
    /// Its client id.
    pub(super) c: Option<String>,
    /// A digest of the change's confirmation id: names the change without revealing the id.
    pub(super) ch: String,
    /// Unix seconds after which the answer is too old to act on.
    pub(super) exp: i64,
}

/// The change a state names: a digest of its confirmation id, never the id itself.
pub(super) fn change_ref(confirmation_id: &str) -> String {
    let digest = Sha256::digest(format!("signage/mrtr/change\n{confirmation_id}").as_bytes());
    B64.encode(&digest[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> Claims {
        Claims {
            k: "key_a".into(),
            c: Some("client".into()),
            ch: change_ref("chg_1"),
            exp: 100,
        }
    }

    #[test]
    fn a_state_opens_only_unchanged_and_only_where_it_was_signed() {
        let signer = Signer::new();
        let state = signer.sign(&claims()).unwrap();
        assert_eq!(signer.open(&state).unwrap().k, "key_a");
        assert!(!state.contains("chg_1"), "no confirmation id in clear");
        // Another instance's secret.
        assert!(Signer::new().open(&state).is_none());
        // Any change to the claims or the tag.
        let (payload, tag) = state.split_once('.').unwrap();
        let mut forged = claims();
        forged.exp = i64::MAX;
        let forged = B64.encode(serde_json::to_vec(&forged).unwrap());
        assert!(signer.open(&format!("{forged}.{tag}")).is_none());
        let mut bad_tag = B64.decode(tag).unwrap();
        bad_tag[0] ^= 1;
        assert!(signer
            .open(&format!("{payload}.{}", B64.encode(bad_tag)))
            .is_none());
        for junk in ["", ".", "x.y", &"a".repeat(600), payload] {
            assert!(signer.open(junk).is_none(), "{junk}");
        }
        // No secret: nothing signs, nothing opens.
        assert!(Signer(None).sign(&claims()).is_none());
        assert!(Signer(None).open(&state).is_none());
    }
}
