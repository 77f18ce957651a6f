//! Scopes and the actions they grant.
//!
//! | scope            | grants                                                   |
//! |------------------|----------------------------------------------------------|
//! | `read`           | every `<area>:read`                                      |
//! | `write`          | every `<area>:write` and, through it, every read          |
//! | `<area>:read`    | reading that area                                        |
//! | `<area>:write`   | writing that area, and reading it                        |
//! | `admin`          | everything, plus API clients, keys, audit and the account's reset |
//! | `sandbox`        | only the sandbox operator's `/_sandbox/*` controls (clock, fleet, faults, snapshots) |
//!
//! `sandbox` stands apart: it acts on the whole instance (every account shares one clock), so no
//! account's `admin` implies it or may grant it; the operator creates such keys with the CLI, and the
//! fixtures hold one (`sandbox-operator`).
//!
//! The areas, and which of them have a write scope, are the area registry ([`crate::areas`]).

pub use crate::areas::Area;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    Read,
    Write,
}

/// What an operation needs from the credential.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// No credential at all (health, OpenAPI document, login).
    Public,
    /// Any valid credential (for example: describing one's own key).
    Authenticated,
    Use(Area, Level),
    Admin,
    /// The sandbox operator's controls of the whole instance.
    Sandbox,
}

impl Action {
    /// The scope to name in a 403 when the action is denied.
    pub fn required_scope(self) -> String {
        match self {
            Action::Public | Action::Authenticated => String::new(),
            Action::Use(area, Level::Read) => format!("{}:read", area.name()),
            Action::Use(area, Level::Write) => format!("{}:write", area.name()),
            Action::Admin => "admin".into(),
            Action::Sandbox => "sandbox".into(),
        }
    }

    pub fn is_write(self) -> bool {
        matches!(
            self,
            Action::Use(_, Level::Write) | Action::Admin | Action::Sandbox
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    Read,
    Write,
    Admin,
    Sandbox,
    Area(Area, Level),
}

impl Scope {
    pub fn parse(s: &str) -> Option<Scope> {
        match s {
            "read" => Some(Scope::Read),
            "write" => Some(Scope::Write),
            "admin" => Some(Scope::Admin),
            "sandbox" => Some(Scope::Sandbox),
            _ => {
                let (area, level) = s.split_once(':')?;
                let area = Area::ALL.iter().copied().find(|a| a.name() == area)?;
                let level = match level {
                    "read" => Level::Read,
                    "write" if area.has_write() => Level::Write,
                    _ => return None,
                };
                Some(Scope::Area(area, level))
            }
        }
    }

    /// Every scope name a key may carry, for validation messages and the OpenAPI enum.
    pub fn all_names() -> Vec<String> {
        let mut names = vec![
            "read".to_string(),
            "write".into(),
            "admin".into(),
            "sandbox".into(),
        ];
        for a in Area::ALL {
            names.push(format!("{}:read", a.name()));
            if a.has_write() {
                names.push(format!("{}:write", a.name()));
            }
        }
        names
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Read => f.write_str("read"),
            Scope::Write => f.write_str("write"),
            Scope::Admin => f.write_str("admin"),
            Scope::Sandbox => f.write_str("sandbox"),
            Scope::Area(a, Level::Read) => write!(f, "{}:read", a.name()),
            Scope::Area(a, Level::Write) => write!(f, "{}:write", a.name()),
        }
    }
}

/// The scopes of one credential.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scopes(Vec<Scope>);

impl Scopes {
    /// Parses a space-separated list; unknown names are an error naming the first of them.
    pub fn parse_list(s: &str) -> Result<Scopes, String> {
        let mut out = Vec::new();
        for name in s.split_whitespace() {
            let scope = Scope::parse(name).ok_or_else(|| name.to_string())?;
            if !out.contains(&scope) {
                out.push(scope);
            }
        }
        Ok(Scopes(out))
    }

    pub fn from_vec(v: Vec<Scope>) -> Scopes {
        Scopes(v)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Scope> {
        self.0.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn names(&self) -> Vec<String> {
        self.0.iter().map(Scope::to_string).collect()
    }

    pub fn to_db(&self) -> String {
        self.names().join(" ")
    }

    pub fn allows(&self, action: Action) -> bool {
        if action == Action::Sandbox {
            return self.0.contains(&Scope::Sandbox);
        }
        if self.0.contains(&Scope::Admin) {
            return true;
        }
        match action {
            Action::Public | Action::Authenticated => true,
            Action::Admin | Action::Sandbox => false,
            Action::Use(area, Level::Read) => self.0.iter().any(|s| match s {
                Scope::Read | Scope::Write => true,
                Scope::Area(a, _) => *a == area,
                Scope::Admin => true,
                Scope::Sandbox => false,
            }),
            Action::Use(area, Level::Write) => self.0.iter().any(|s| match s {
                Scope::Write => true,
                Scope::Area(a, Level::Write) => *a == area,
                _ => false,
            }),
        }
    }

    /// True when every scope of `other` is within what `self` grants (a key may not mint a
    /// broader key than itself).
    pub fn covers(&self, other: &Scopes) -> bool {
        other.0.iter().all(|s| match s {
            Scope::Admin => self.0.contains(&Scope::Admin),
            Scope::Sandbox => self.0.contains(&Scope::Sandbox),
            Scope::Read => self
                .0
                .iter()
                .any(|x| matches!(x, Scope::Read | Scope::Write | Scope::Admin)),
            Scope::Write => self
                .0
                .iter()
                .any(|x| matches!(x, Scope::Write | Scope::Admin)),
            Scope::Area(a, l) => self.allows(Action::Use(*a, *l)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implication_rules() {
        let read = Scopes::parse_list("read").unwrap();
        let write = Scopes::parse_list("write").unwrap();
        let ads = Scopes::parse_list("ads:write billing:read").unwrap();
        let admin = Scopes::parse_list("admin").unwrap();
        let rd = Action::Use(Area::Devices, Level::Read);
        let wd = Action::Use(Area::Devices, Level::Write);
        assert!(read.allows(rd) && !read.allows(wd));
        assert!(write.allows(rd) && write.allows(wd) && !write.allows(Action::Admin));
        assert!(ads.allows(Action::Use(Area::Ads, Level::Read)));
        assert!(ads.allows(Action::Use(Area::Ads, Level::Write)));
        assert!(!ads.allows(rd));
        assert!(ads.allows(Action::Use(Area::Billing, Level::Read)));
        assert!(!ads.allows(Action::Use(Area::Billing, Level::Write)));
        assert!(admin.allows(Action::Admin) && admin.allows(wd));
        assert!(Scopes::parse_list("plans:write").is_err());
        assert!(Scopes::parse_list("root").is_err());
        assert!(write.covers(&ads) && !ads.covers(&write) && !write.covers(&admin));
        let sandbox = Scopes::parse_list("sandbox").unwrap();
        assert!(sandbox.allows(Action::Sandbox) && !sandbox.allows(rd));
        assert!(!admin.allows(Action::Sandbox) && !admin.covers(&sandbox));
        assert!(!sandbox.covers(&read) && sandbox.covers(&sandbox));
    }
}
