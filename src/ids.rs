//! Prefixed, typed resource identifiers (`cmp_…`, `dev_…`).
//!
//! A new id is `<prefix>_` + 9 base-36 characters of the creation time in milliseconds + 11 random
//! base-36 characters, so ids sort by creation time and every list can page by id alone. The fixtures
//! use the same shape with times in early 2025, so they sort before anything created later.

use crate::random;

const BASE36: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// The kinds of resource, each with its id prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Account,
    Company,
    Logo,
    Device,
    PlaybackError,
    Ad,
    Promotion,
    QrCode,
    Plan,
    TokenPack,
    TokenTransaction,
    Invoice,
    Charge,
    Media,
    Webhook,
    ApiClient,
    User,
    Event,
    PendingChange,
}

impl Kind {
    pub const fn prefix(self) -> &'static str {
        match self {
            Kind::Account => "acct",
            Kind::Company => "cmp",
            Kind::Logo => "logo",
            Kind::Device => "dev",
            Kind::PlaybackError => "perr",
            Kind::Ad => "ad",
            Kind::Promotion => "promo",
            Kind::QrCode => "qr",
            Kind::Plan => "plan",
            Kind::TokenPack => "tpk",
            Kind::TokenTransaction => "ttx",
            Kind::Invoice => "inv",
            Kind::Charge => "ch",
            Kind::Media => "med",
            Kind::Webhook => "wh",
            Kind::ApiClient => "cli",
            Kind::User => "usr",
            Kind::Event => "evt",
            Kind::PendingChange => "chg",
        }
    }
}

pub fn new_id(kind: Kind) -> String {
    let mut out = String::with_capacity(kind.prefix().len() + 21);
    out.push_str(kind.prefix());
    out.push('_');
    let mut ms = crate::time::now_millis() as u64;
    let mut stamp = [b'0'; 9];
    for slot in stamp.iter_mut().rev() {
        *slot = BASE36[(ms % 36) as usize];
        ms /= 36;
    }
    out.extend(stamp.iter().map(|&c| c as char));
    let bytes = random::bytes::<11>();
    out.extend(bytes.iter().map(|b| BASE36[(*b as usize) % 36] as char));
    out
}

/// True when `s` has the shape of an id of `kind`: the prefix, `_`, then 1–64 ASCII letters or digits.
/// Handlers check this before any query, so a malformed id is a plain 404 at no cost.
pub fn is_valid(kind: Kind, s: &str) -> bool {
    match s
        .strip_prefix(kind.prefix())
        .and_then(|rest| rest.strip_prefix('_'))
    {
        Some(body) => {
            !body.is_empty() && body.len() <= 64 && body.bytes().all(|c| c.is_ascii_alphanumeric())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefixed_and_ordered() {
        let a = new_id(Kind::Device);
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_id(Kind::Device);
        assert!(a.starts_with("dev_") && a.len() == 24);
        assert!(a < b);
        assert!(is_valid(Kind::Device, &a));
        assert!(!is_valid(Kind::Ad, &a));
        assert!(!is_valid(Kind::Device, "dev_"));
        assert!(!is_valid(Kind::Device, "dev_ab'--"));
    }
}
