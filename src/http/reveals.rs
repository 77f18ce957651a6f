//! One-time reveals: a secret a write made (a webhook's rotated signing secret) that must reach
//! the person, never the assistant that asked for the write. The MCP layer holds it here after
//! `confirm_change` and hands the person a link (`/console/reveal#<token>`); the console's reveal
//! page trades the token for the secret, once.
//!
//! Rules, like sign-in links' ([`crate::http::App`] holds one store):
//! - Only the SHA-256 of a token is kept, in memory: never in the database, the journal, the
//!   idempotency store or a log; a restart forgets every secret held.
//! - A token works once and for `mcp.secret_reveal_ttl_secs` of the wall clock (moving the
//!   sandbox's clock neither ages nor refreshes it). After it, the secret is dropped.
//! - Tokens come from the operating system, even in a seeded sandbox: a seed makes ids
//!   predictable, and a reveal token must never be.
//! - At most [`MAX_HELD`] secrets wait at once; past that, none is held (the result says so).

use super::App;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Secrets waiting to be revealed at once, at most.
pub const MAX_HELD: usize = 1000;

/// What a held secret belongs to, for the page to name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    /// The object's type (`webhook`).
    pub kind: String,
    pub id: String,
    /// The field of the write's answer the secret came from (`secret`).
    pub field: String,
    /// How long the previous secret keeps working beside it, in words ("24 hours").
    pub grace: Option<String>,
}

struct Held {
    /// `None` once revealed: kept until it expires, to say "already revealed".
    secret: Option<String>,
    subject: Subject,
    expires: Instant,
}

/// Why a token reveals nothing.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// It was used: the secret was shown once, to whoever opened the link first.
    Revealed,
    /// It expired, or never existed (the same answer: nothing tells the two apart).
    Expired,
}

/// The secrets held for a one-time reveal, by the SHA-256 of their token.
#[derive(Default)]
pub struct Reveals {
    held: Mutex<HashMap<[u8; 32], Held>>,
}

impl Reveals {
    /// Holds `secret` for `ttl`; the token that reveals it, or `None` when too many wait.
    pub fn hold(&self, secret: String, subject: Subject, ttl: Duration) -> Option<String> {
        let token = crate::random::unseeded_hex::<32>();
        let now = Instant::now();
        // A poisoned lock only means a panic elsewhere; the map is plain data.
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.len() >= MAX_HELD {
            held.retain(|_, h| h.expires > now);
            if held.len() >= MAX_HELD {
                return None;
            }
        }
        held.insert(
            digest(&token),
            Held {
                secret: Some(secret),
                subject,
                expires: now + ttl,
            },
        );
        Some(token)
    }

    /// The secret of `token`, once.
    pub fn reveal(&self, token: &str) -> Result<(Subject, String), Refused> {
        let now = Instant::now();
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let key = digest(token);
        let Some(h) = held.get_mut(&key) else {
            return Err(Refused::Expired);
        };
        if h.expires <= now {
            held.remove(&key);
            return Err(Refused::Expired);
        }
        match h.secret.take() {
            Some(secret) => Ok((h.subject.clone(), secret)),
            None => Err(Refused::Revealed),
        }
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The app's store (`app::App::build` registers it).
pub fn of(app: &App) -> Option<Arc<Reveals>> {
    app.extensions.get::<Arc<Reveals>>().cloned()
}

/// The path of the console's reveal page.
pub const PAGE: &str = "/console/reveal";

/// The link that opens the reveal page for `token`, under the public base URL. The token rides in
/// the fragment, which a browser never sends to a server, writes into a `Referer` or a log.
pub fn url(settings: &crate::config::Settings, token: &str) -> String {
    let base = match &settings.public_base_url {
        Some(b) => b.trim_end_matches('/').to_string(),
        None => crate::config::public_base_url_for(settings.listen),
    };
    format!("{base}{PAGE}#{token}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject() -> Subject {
        Subject {
            kind: "webhook".into(),
            id: "wh_x".into(),
            field: "secret".into(),
            grace: None,
        }
    }

    #[test]
    fn a_secret_is_revealed_once() {
        let r = Reveals::default();
        let token = r
            .hold("whsec_x".into(), subject(), Duration::from_secs(60))
            .unwrap();
        assert_eq!(token.len(), 64);
        assert_eq!(r.reveal("nope"), Err(Refused::Expired));
        assert_eq!(r.reveal(&token).map(|(_, s)| s), Ok("whsec_x".to_string()));
        assert_eq!(r.reveal(&token), Err(Refused::Revealed));
    }

    #[test]
    fn an_expired_token_reveals_nothing() {
        let r = Reveals::default();
        let token = r.hold("whsec_x".into(), subject(), Duration::ZERO).unwrap();
        assert_eq!(r.reveal(&token), Err(Refused::Expired));
    }
}
