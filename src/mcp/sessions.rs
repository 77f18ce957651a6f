//! Legacy-era MCP sessions (`Mcp-Session-Id`), in memory.
//!
//! A session only remembers the negotiated protocol version. It is never the authentication: every
//! request still carries and is checked for its credential, and a session answers only to the
//! credential (actor and client) that opened it. Another credential, an unknown id and an ended
//! session all get the same "not found", so a session id reveals nothing to anyone else.

use std::collections::HashMap;
use std::sync::Mutex;

/// Sessions idle this long are forgotten.
const IDLE_SECS: i64 = 24 * 3600;
/// Bound on memory: past this, the least recently used sessions are dropped.
const MAX_SESSIONS: usize = 10_000;

#[derive(Clone, Debug)]
pub struct Session {
    pub actor: String,
    pub client_id: Option<String>,
    pub version: &'static str,
    last_seen: i64,
}

#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Session>>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    Found(&'static str),
    /// Unknown, ended, expired, or opened by another credential.
    NotFound,
}

impl Sessions {
    /// Opens a session for this credential; returns its id (192 random bits, hex).
    pub fn open(
        &self,
        actor: &str,
        client_id: Option<&str>,
        version: &'static str,
        now: i64,
    ) -> String {
        let id = crate::random::hex::<24>("mcp_session");
        if let Ok(mut map) = self.map.lock() {
            if map.len() >= MAX_SESSIONS {
                map.retain(|_, s| now - s.last_seen < IDLE_SECS);
                if map.len() >= MAX_SESSIONS {
                    let mut by_age: Vec<(i64, String)> =
                        map.iter().map(|(k, s)| (s.last_seen, k.clone())).collect();
                    by_age.sort();
                    for (_, k) in by_age.into_iter().take(MAX_SESSIONS / 10) {
                        map.remove(&k);
                    }
                }
            }
            map.insert(
                id.clone(),
                Session {
                    actor: actor.to_string(),
                    client_id: client_id.map(String::from),
                    version,
                    last_seen: now,
                },
            );
        }
        id
    }

    /// The session's negotiated version, if it exists and belongs to this credential.
    pub fn touch(&self, id: &str, actor: &str, client_id: Option<&str>, now: i64) -> Lookup {
        let Ok(mut map) = self.map.lock() else {
            return Lookup::NotFound;
        };
        match map.get_mut(id) {
            Some(s) if now - s.last_seen >= IDLE_SECS => {
                map.remove(id);
                Lookup::NotFound
            }
            Some(s) if s.actor == actor && s.client_id.as_deref() == client_id => {
                s.last_seen = now;
                Lookup::Found(s.version)
            }
            _ => Lookup::NotFound,
        }
    }

    /// Ends the session if it belongs to this credential.
    pub fn end(&self, id: &str, actor: &str, client_id: Option<&str>) -> bool {
        let Ok(mut map) = self.map.lock() else {
            return false;
        };
        match map.get(id) {
            Some(s) if s.actor == actor && s.client_id.as_deref() == client_id => {
                map.remove(id);
                true
            }
            _ => false,
        }
    }

    pub fn clear(&self) {
        if let Ok(mut map) = self.map.lock() {
            map.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_to_the_opening_credential() {
        let s = Sessions::default();
        let id = s.open("key_a", Some("cli_a"), "2025-11-25", 100);
        assert_eq!(id.len(), 48);
        assert_eq!(
            s.touch(&id, "key_a", Some("cli_a"), 101),
            Lookup::Found("2025-11-25")
        );
        assert_eq!(s.touch(&id, "key_b", Some("cli_a"), 101), Lookup::NotFound);
        assert_eq!(s.touch(&id, "key_a", Some("cli_b"), 101), Lookup::NotFound);
        assert!(!s.end(&id, "key_b", Some("cli_a")));
        assert!(s.end(&id, "key_a", Some("cli_a")));
        assert_eq!(s.touch(&id, "key_a", Some("cli_a"), 102), Lookup::NotFound);
    }

    #[test]
    fn idle_sessions_expire() {
        let s = Sessions::default();
        let id = s.open("key_a", None, "2025-06-18", 0);
        assert_eq!(s.touch(&id, "key_a", None, IDLE_SECS), Lookup::NotFound);
    }
}
