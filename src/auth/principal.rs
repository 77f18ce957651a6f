//! Who is calling: the credential resolved to an account, scopes and the companies it may see.

use super::scopes::Scopes;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Actor {
    ApiKey { key_id: String, client_id: String },
    User { user_id: String, username: String },
}

#[derive(Clone, Debug)]
pub struct Principal {
    pub actor: Actor,
    pub account_id: String,
    pub scopes: Scopes,
    /// The one company a key is restricted to, if any.
    pub company_scope: Option<String>,
    /// Every company this credential may see, ascending by id (the company scope alone, or all
    /// companies of the account). Shared: a principal is copied several times a request (the
    /// cache's, the handler's, the journal's), and an account may have hundreds of companies.
    pub visible_companies: std::sync::Arc<[String]>,
    pub expires_at: Option<i64>,
    /// The one screen a player's session acts for ([`crate::auth::authorize::screen_may`]): it
    /// reads what that screen plays and reports its heartbeats and plays, nothing else.
    pub device: Option<String>,
}

impl Principal {
    /// `key_…` or `usr_…`: what the audit log and idempotency records name.
    pub fn actor_id(&self) -> &str {
        match &self.actor {
            Actor::ApiKey { key_id, .. } => key_id,
            Actor::User { user_id, .. } => user_id,
        }
    }

    pub fn client_id(&self) -> Option<&str> {
        match &self.actor {
            Actor::ApiKey { client_id, .. } => Some(client_id),
            Actor::User { .. } => None,
        }
    }

    pub fn can_see_company(&self, company_id: &str) -> bool {
        self.visible_companies
            .binary_search_by(|c| c.as_str().cmp(company_id))
            .is_ok()
    }
}
