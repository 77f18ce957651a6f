//! Who may manage which credential: the one rule behind every create, list, get, revoke and rotate
//! of API keys and API clients (REST and MCP alike; the CLI is the operator and has no limits).
//!
//! A manager may see and manage a credential when it belongs to the manager's account, its scopes
//! are within the manager's, and its company scope is within the manager's companies: a
//! company-scoped manager (an `admin` key with `companyScope`, or an `admin` user restricted to one
//! company) reaches only credentials scoped to that same company. A credential it cannot reach is
//! not found (404); creating one wider than itself is refused (422).

use super::principal::Principal;
use super::scopes::Scopes;

/// The reach of an admin principal.
#[derive(Clone, Copy, Debug)]
pub struct Manager<'a> {
    pub account: &'a str,
    pub scopes: &'a Scopes,
    /// The one company the manager is restricted to, if any.
    pub company: Option<&'a str>,
}

impl<'a> Manager<'a> {
    pub fn of(p: &'a Principal) -> Manager<'a> {
        Manager {
            account: &p.account_id,
            scopes: &p.scopes,
            company: p.company_scope.as_deref(),
        }
    }
}

/// A credential as the rule sees it. An API client has no scopes of its own.
#[derive(Clone, Copy, Debug)]
pub struct Credential<'a> {
    pub account: &'a str,
    pub scopes: &'a Scopes,
    pub company: Option<&'a str>,
}

/// The rule. `None` is the operator (the CLI), who reaches everything.
pub fn may_manage(manager: Option<&Manager<'_>>, target: &Credential<'_>) -> bool {
    let Some(m) = manager else {
        return true;
    };
    m.account == target.account
        && m.scopes.covers(target.scopes)
        && match m.company {
            None => true,
            // A credential without a company scope reaches every company: wider than `c`.
            Some(c) => target.company == Some(c),
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn company_scoped_managers_reach_only_their_company() {
        let admin = Scopes::parse_list("admin").unwrap();
        let read = Scopes::parse_list("read").unwrap();
        let account = Manager {
            account: "acct_a",
            scopes: &admin,
            company: None,
        };
        let scoped = Manager {
            company: Some("cmp_1"),
            ..account
        };
        let key = |company| Credential {
            account: "acct_a",
            scopes: &read,
            company,
        };
        assert!(may_manage(Some(&account), &key(None)));
        assert!(may_manage(Some(&account), &key(Some("cmp_2"))));
        assert!(may_manage(Some(&scoped), &key(Some("cmp_1"))));
        assert!(!may_manage(Some(&scoped), &key(Some("cmp_2"))));
        assert!(!may_manage(Some(&scoped), &key(None)));
        let other = Credential {
            account: "acct_b",
            ..key(None)
        };
        assert!(!may_manage(Some(&account), &other));
        assert!(may_manage(None, &other));
        let reader = Manager {
            account: "acct_a",
            scopes: &read,
            company: None,
        };
        let admin_key = Credential {
            account: "acct_a",
            scopes: &admin,
            company: None,
        };
        assert!(!may_manage(Some(&reader), &admin_key));
    }
}
