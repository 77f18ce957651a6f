//! The one place that decides whether a principal may perform an action on a target.
//!
//! Every REST handler reaches it (the pipeline checks the route's action against the service; the
//! handler checks the company of the object it touches), and the MCP server reaches it by running
//! its tool calls through the same router. Scope is checked before visibility, so a denial for
//! scope never tells whether an object exists, and an invisible object is always "not found".

use super::principal::Principal;
use super::scopes::Action;

/// What the action is aimed at.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    /// The service as a whole, or a collection filtered to visible companies afterwards.
    Service,
    /// An object owned by this company.
    Company(&'a str),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Denial {
    /// 403 naming the scope.
    MissingScope(String),
    /// 404: the target's company is outside what the credential may see.
    NotVisible,
    /// 403: a screen's credential asked for what its player never does.
    NotForAScreen,
}

/// The operations a player does for its screen, and whether the operation's `{id}` is that screen
/// (which must then be the credential's own: another screen is not found).
const SCREEN_OPERATIONS: &[(&str, bool)] = &[
    ("getDevice", true),
    ("listDeviceAds", true),
    ("recordDeviceHeartbeat", true),
    ("recordDevicePlayback", true),
    ("getCompany", false),
    ("getCompanyBranding", false),
    ("getMedia", false),
    ("downloadMedia", false),
    ("listPromotionQrCodes", false),
    ("getQrCodeImage", false),
    ("getCredential", false),
];

/// What a credential bound to one screen (a player's session, [`Principal::device`]) may do: only
/// the player's operations, on its own screen; scopes and company visibility still apply after.
pub fn screen_may(
    principal: &Principal,
    operation_id: &str,
    id: Option<&str>,
) -> Result<(), Denial> {
    let Some(device) = principal.device.as_deref() else {
        return Ok(());
    };
    match SCREEN_OPERATIONS.iter().find(|(op, _)| *op == operation_id) {
        None => Err(Denial::NotForAScreen),
        Some((_, true)) if id != Some(device) => Err(Denial::NotVisible),
        Some(_) => Ok(()),
    }
}

pub fn authorize(principal: &Principal, action: Action, target: Target<'_>) -> Result<(), Denial> {
    if !principal.scopes.allows(action) {
        return Err(Denial::MissingScope(action.required_scope()));
    }
    match target {
        Target::Service => Ok(()),
        Target::Company(company) if principal.can_see_company(company) => Ok(()),
        Target::Company(_) => Err(Denial::NotVisible),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::principal::Actor;
    use crate::auth::scopes::{Area, Level, Scopes};

    fn principal(scopes: &str, visible: &[&str]) -> Principal {
        Principal {
            actor: Actor::ApiKey {
                key_id: "key_x".into(),
                client_id: "cli_x".into(),
            },
            account_id: "acct_x".into(),
            scopes: Scopes::parse_list(scopes).unwrap(),
            company_scope: None,
            visible_companies: visible.iter().map(|s| s.to_string()).collect(),
            expires_at: None,
            device: None,
        }
    }

    #[test]
    fn scope_then_visibility() {
        let p = principal("read", &["cmp_a", "cmp_b"]);
        let read = Action::Use(Area::Devices, Level::Read);
        let write = Action::Use(Area::Devices, Level::Write);
        assert_eq!(authorize(&p, read, Target::Company("cmp_a")), Ok(()));
        assert_eq!(
            authorize(&p, read, Target::Company("cmp_z")),
            Err(Denial::NotVisible)
        );
        assert_eq!(
            authorize(&p, write, Target::Company("cmp_z")),
            Err(Denial::MissingScope("devices:write".into()))
        );
        assert_eq!(
            authorize(&p, Action::Admin, Target::Service),
            Err(Denial::MissingScope("admin".into()))
        );
    }
}
