//! The domains a company's promotions and QR codes may send people to (issue 22 item 7): without
//! a bound, any write key gets a public redirect from the sandbox's own address (`/q/{code}`) to
//! a page of its choosing. A company's `allowed_landing_domains` (the fixtures set each company's
//! website domain) bound `landing_url` and QR `target_url`: the URL's host must equal one of them
//! or end with `.` and one of them. An empty list (or none) allows any http(s) URL.

use crate::validate::Errors;
use rusqlite::OptionalExtension;

/// The most domains one company may list.
pub const MAX_DOMAINS: usize = 20;

/// The company's allowed domains (empty: any host).
pub fn of_company(conn: &rusqlite::Connection, company: &str) -> rusqlite::Result<Vec<String>> {
    let stored: Option<Option<String>> = conn
        .prepare_cached("SELECT allowed_landing_domains FROM companies WHERE id = ?1")?
        .query_row([company], |r| r.get(0))
        .optional()?;
    Ok(parse(stored.flatten().as_deref()))
}

/// The stored JSON array as a list (anything else: empty).
pub fn parse(stored: Option<&str>) -> Vec<String> {
    stored
        .and_then(|s| serde_json::from_str::<Vec<String>>(s).ok())
        .unwrap_or_default()
}

/// The lower-cased host of an http(s) URL (no port, no brackets' content changed).
pub fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    (!host.is_empty()).then(|| host.trim_end_matches('.').to_ascii_lowercase())
}

/// True when `host` is one of `domains` or under one of them.
pub fn allows(domains: &[String], host: &str) -> bool {
    domains.is_empty()
        || domains.iter().any(|d| {
            host == d
                || host
                    .strip_suffix(d.as_str())
                    .is_some_and(|p| p.ends_with('.'))
        })
}

/// Adds a `landing_domain_not_allowed` error at `field` when `url`'s host is outside `domains`.
pub fn check(errors: &mut Errors, field: &str, url: &str, domains: &[String]) {
    if domains.is_empty() {
        return;
    }
    let host = host_of(url).unwrap_or_default();
    if !allows(domains, &host) {
        errors.push(
            field,
            "landing_domain_not_allowed",
            format!(
                "The host `{host}` is not one of the company's allowed landing domains ({}), nor under one of them.",
                domains.join(", ")
            ),
        );
    }
}

/// A domain as a company may list it: lower-case letters, digits and hyphens in dot-separated
/// labels of 1 to 63 characters, at most 253 in all, no leading or trailing hyphen in a label.
pub fn is_domain(d: &str) -> bool {
    d.len() <= 253
        && !d.is_empty()
        && d.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_match_a_domain_or_a_subdomain_of_it() {
        let d = vec!["northwind-grocers.example".to_string()];
        assert!(allows(&d, "northwind-grocers.example"));
        assert!(allows(&d, "www.northwind-grocers.example"));
        assert!(!allows(&d, "evilnorthwind-grocers.example"));
        assert!(!allows(&d, "northwind-grocers.example.evil.test"));
        assert!(allows(&[], "anything.test"));
        assert_eq!(
            host_of("https://WWW.Shop.example:8443/a?b#c").as_deref(),
            Some("www.shop.example")
        );
        assert_eq!(host_of("http://[::1]:80/").as_deref(), Some("::1"));
        assert!(is_domain("shop.example") && is_domain("localhost"));
        assert!(!is_domain("Shop.example") && !is_domain("-a.example") && !is_domain("a..b"));
    }
}
