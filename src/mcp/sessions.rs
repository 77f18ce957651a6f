//! Legacy-era MCP sessions (`Mcp-Session-Id`), in memory.
//!
//! A session only remembers the negotiated protocol version. It is never the authentication: every
//! request still carries and is checked for its credential, and a session answers only to the
//! credential (actor and client) that opened it. Another credential, an unknown id and an ended
//! session all get the same "not found", so a session id reveals nothing to anyone else.

use serde_json::Value;
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
    pub features: ClientFeatures,
    last_seen: i64,
}

/// What the client said it can do: at `initialize` (kept by the session), or on 2026-07-28 in
/// each request's `_meta`. Only what changes our answers is kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientFeatures {
    /// `elicitation` with form mode (an empty `elicitation: {}` means form, 2025-11-25).
    pub elicitation_form: bool,
    /// `elicitation` with URL mode (`elicitation: {url: {}}`, 2025-11-25): the client shows the
    /// person a link the server sends ([`super::handover`]).
    pub elicitation_url: bool,
    /// The MCP Apps extension (`io.modelcontextprotocol/ui`) with HTML views.
    pub ui_apps: bool,
}

impl ClientFeatures {
    pub fn from_capabilities(caps: &Value) -> ClientFeatures {
        let e = &caps["elicitation"];
        let elicitation_form = e.is_object()
            && (e.get("form").is_some() || e.as_object().is_some_and(|m| !m.contains_key("url")));
        let elicitation_url = e["url"].is_object();
        let ui = &caps["extensions"][super::apps::EXTENSION];
        let ui_apps = ui.is_object()
            && ui["mimeTypes"]
                .as_array()
                .is_none_or(|m| m.iter().any(|t| t == super::apps::MIME_TYPE));
        ClientFeatures {
            elicitation_form,
            elicitation_url,
            ui_apps,
        }
    }
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
        seeded: Option<&crate::random::Seeded>,
    ) -> String {
        let id = crate::random::hex::<24>(seeded, "mcp_session");
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
                    features: ClientFeatures::default(),
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

    /// Remembers what the client of a session can do (at `initialize`).
    pub fn set_features(&self, id: &str, features: ClientFeatures) {
        if let Ok(mut map) = self.map.lock() {
            if let Some(s) = map.get_mut(id) {
                s.features = features;
            }
        }
    }

    /// What the client of a session can do (nothing, for an unknown session).
    pub fn features(&self, id: &str) -> ClientFeatures {
        self.map
            .lock()
            .ok()
            .and_then(|m| m.get(id).map(|s| s.features))
            .unwrap_or_default()
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
        let id = s.open("key_a", Some("cli_a"), "2025-11-25", 100, None);
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
    fn client_features_are_read_from_capabilities() {
        use serde_json::json;
        let f = |v: Value| ClientFeatures::from_capabilities(&v);
        assert!(f(json!({"elicitation": {}})).elicitation_form);
        assert!(f(json!({"elicitation": {"form": {}, "url": {}}})).elicitation_form);
        assert!(!f(json!({"elicitation": {"url": {}}})).elicitation_form);
        assert!(f(json!({"elicitation": {"url": {}}})).elicitation_url);
        assert!(!f(json!({"elicitation": {}})).elicitation_url);
        assert!(!f(json!({})).elicitation_form);
        let ui = json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}});
        assert!(f(ui).ui_apps);
        assert!(
            !f(
                json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/plain"]}}})
            )
            .ui_apps
        );
    }

    #[test]
    fn idle_sessions_expire() {
        let s = Sessions::default();
        let id = s.open("key_a", None, "2025-06-18", 0, None);
        assert_eq!(s.touch(&id, "key_a", None, IDLE_SECS), Lookup::NotFound);
    }
}
