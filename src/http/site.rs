//! Which sites may talk to this server: the one rule for `Host` and `Origin`, against DNS rebinding
//! and cross-site requests from pages the developer happens to open.
//!
//! A sandbox on a laptop listens on 127.0.0.1, holds a public demo login and an operator key, and
//! can send webhooks into the developer's network. A page on any site can make the browser send
//! requests to it, either under a name the attacker rebinds to 127.0.0.1 (the request then carries
//! `Host: attacker.example`) or straight to `http://127.0.0.1:PORT` (it carries the page's
//! `Origin`). So every request, REST and `/mcp` alike, is answered only when:
//! - its `Host` names this server: a loopback name (`localhost`, `127.0.0.0/8`, `[::1]`), the host
//!   of `server.public_base_url`, a name in `server.allowed_hosts`, or, when the server listens on
//!   a non-loopback address (a demo reached from phones), any IP address literal (a rebound name is
//!   never a literal);
//! - its `Origin`, when a browser sends one, is this server's own (the same authority as `Host`), a
//!   page on this machine (a loopback host, any port), the public base URL's host, a name in
//!   `server.allowed_hosts`, or (for `/mcp` only) an origin in `mcp.allowed_origins`. `Origin:
//!   null` (a sandboxed frame, a `file:` page) is refused: it names no site that could be allowed.
//!
//! Requests without `Host` or `Origin` (curl, SDKs, test harnesses) are not browsers' and pass.

use crate::config::Settings;
use hyper::HeaderMap;
use std::net::IpAddr;

/// Why a request was refused: the header and its value (shortened for the answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// `Host` names a site that is not this server.
    Host(String),
    /// `Origin` is a page of another site.
    Origin(String),
}

impl Refusal {
    /// The problem's `code`.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::Host(_) => "host_not_allowed",
            Refusal::Origin(_) => "origin_not_allowed",
        }
    }

    /// What the client is told, and how to allow the name if it is the developer's own.
    pub fn detail(&self) -> String {
        match self {
            Refusal::Host(host) => format!(
                "`Host: {}` is not this server. It answers to localhost, 127.0.0.1, [::1], the host of `server.public_base_url` and the names in `server.allowed_hosts` (add a name you use there).",
                shorten(host)
            ),
            Refusal::Origin(origin) => format!(
                "Requests from the page `{}` are refused: only this server's own pages, pages on this machine (a loopback origin) and the names in `server.allowed_hosts` may call it.",
                shorten(origin)
            ),
        }
    }
}

/// Checks `Host` and `Origin` of a request; `extra_origins` are exact origins allowed besides the
/// rule (`mcp.allowed_origins` for `/mcp`).
pub fn check(
    settings: &Settings,
    headers: &HeaderMap,
    extra_origins: &[String],
) -> Result<(), Refusal> {
    let host = headers
        .get(hyper::header::HOST)
        .map(|h| h.to_str().unwrap_or("").trim());
    if let Some(host) = host {
        if !is_plain_loopback(host) && !is_our_name(settings, host, true) {
            return Err(Refusal::Host(host.to_string()));
        }
    }
    let Some(origin) = headers.get(hyper::header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or("").trim();
    let wanted = origin.trim_end_matches('/').to_ascii_lowercase();
    let authority = wanted
        .strip_prefix("http://")
        .or_else(|| wanted.strip_prefix("https://"));
    let allowed = match authority {
        // `null`, another scheme or nothing: no site to allow.
        None => false,
        Some(authority) => {
            host.is_some_and(|h| h.eq_ignore_ascii_case(authority))
                || is_our_name(settings, authority, false)
                || extra_origins
                    .iter()
                    .any(|a| a.trim().trim_end_matches('/').eq_ignore_ascii_case(&wanted))
        }
    };
    if allowed {
        Ok(())
    } else {
        Err(Refusal::Origin(origin.to_string()))
    }
}

/// `127.0.0.1`, `localhost` or `[::1]`, with or without a port, as clients send it: the answer
/// for almost every request, found without parsing or allocating.
fn is_plain_loopback(authority: &str) -> bool {
    let rest = authority
        .strip_prefix("127.0.0.1")
        .or_else(|| authority.strip_prefix("localhost"))
        .or_else(|| authority.strip_prefix("[::1]"));
    match rest {
        Some("") => true,
        Some(r) => r
            .strip_prefix(':')
            .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())),
        None => false,
    }
}

/// True when `authority` (`host[:port]`) names this server. `literals`: an IP address literal is
/// accepted when the server listens on a non-loopback address (true for `Host`; an `Origin` of
/// another address is another server's page).
fn is_our_name(settings: &Settings, authority: &str, literals: bool) -> bool {
    let host = host_of_authority(authority);
    if host.is_empty() {
        return false;
    }
    if is_loopback_name(&host) {
        return true;
    }
    if literals && !settings.listen.ip().is_loopback() && host.parse::<IpAddr>().is_ok() {
        return true;
    }
    settings
        .public_base_url
        .as_deref()
        .is_some_and(|base| is_public_base(base, authority))
        || settings
            .allowed_hosts
            .iter()
            .any(|a| host_of_authority(a.trim()) == host)
}

/// True when `authority` is the host and port of the public base URL (a port left out is the
/// scheme's).
fn is_public_base(base: &str, authority: &str) -> bool {
    let Some((scheme, rest)) = base.split_once("://") else {
        return false;
    };
    let default_port = if scheme.eq_ignore_ascii_case("https") {
        "443"
    } else {
        "80"
    };
    let with_port = |a: &str| {
        let a = a.trim().to_ascii_lowercase();
        let port = port_of_authority(&a).unwrap_or(default_port).to_string();
        (host_of_authority(&a), port)
    };
    with_port(rest.split('/').next().unwrap_or_default()) == with_port(authority)
}

/// The port of an authority, when it names one.
fn port_of_authority(authority: &str) -> Option<&str> {
    let after_host = match authority.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or("", |(_, rest)| rest),
        None => authority.rsplit_once(':').map_or("", |(_, p)| p),
    };
    let port = after_host.strip_prefix(':').unwrap_or(after_host);
    (!port.is_empty()).then_some(port)
}

/// `localhost` or a loopback address.
pub fn is_loopback_name(host: &str) -> bool {
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The host part of an authority (`host:port`, `[v6]:port`), lower-cased, without a final dot.
pub fn host_of_authority(authority: &str) -> String {
    let host = match authority.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((addr, rest)) if rest.is_empty() || is_port(rest) => addr,
            _ => return String::new(),
        },
        None => match authority.rsplit_once(':') {
            Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => h,
            Some(_) => return String::new(),
            None => authority,
        },
    };
    host.trim_end_matches('.').to_ascii_lowercase()
}

fn is_port(rest: &str) -> bool {
    rest.strip_prefix(':')
        .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn shorten(s: &str) -> String {
    s.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(listen: &str, public: Option<&str>, allowed: &[&str]) -> Settings {
        Settings {
            listen: listen.parse().unwrap_or_else(|e| panic!("{listen}: {e}")),
            public_base_url: public.map(str::to_string),
            allowed_hosts: allowed.iter().map(|a| a.to_string()).collect(),
            ..Settings::default()
        }
    }

    fn headers(host: Option<&str>, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(v) = host {
            h.insert("host", v.parse().unwrap());
        }
        if let Some(v) = origin {
            h.insert("origin", v.parse().unwrap());
        }
        h
    }

    #[test]
    fn a_rebound_name_is_refused_and_loopback_names_pass() {
        let s = settings("127.0.0.1:8080", Some("http://localhost:8080"), &[]);
        // Every loopback address is this machine (127.0.0.0/8), so no rebound name.
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "localhost",
            "[::1]:8080",
            "[::1]",
            "LOCALHOST:9",
            "127.0.0.2",
            "localhost.:8080",
        ] {
            assert_eq!(check(&s, &headers(Some(ok), None), &[]), Ok(()), "{ok}");
        }
        for bad in [
            "attacker.example:8080",
            "attacker.example",
            "localhost.attacker.example",
            "192.168.1.20:8080",
            "127.0.0.1:80:80",
            "[::1",
            "[::2]:1",
            "localhost:",
            "localhost:x",
            "",
        ] {
            assert!(check(&s, &headers(Some(bad), None), &[]).is_err(), "{bad}");
        }
        assert_eq!(check(&s, &headers(None, None), &[]), Ok(()));
    }

    #[test]
    fn a_public_name_and_allowed_names_pass() {
        let s = settings(
            "0.0.0.0:8080",
            Some("https://signage.example.dev"),
            &["demo.lan"],
        );
        for ok in [
            "signage.example.dev",
            "signage.example.dev:443",
            "demo.lan:8080",
            "192.168.1.20:8080",
            "[fe80::1]:8080",
        ] {
            assert_eq!(check(&s, &headers(Some(ok), None), &[]), Ok(()), "{ok}");
        }
        // The public base URL is one authority: its host on another port is another server.
        for bad in ["other.example", "signage.example.dev:8443"] {
            assert!(check(&s, &headers(Some(bad), None), &[]).is_err(), "{bad}");
        }
    }

    #[test]
    fn on_a_loopback_listener_only_loopback_or_the_public_base_is_this_server() {
        let host_ok = |authority: &str, base: Option<&str>| {
            let s = settings("127.0.0.1:8080", base, &[]);
            check(&s, &headers(Some(authority), None), &[]).is_ok()
        };
        for ok in ["127.0.0.1:8080", "localhost:9", "[::1]:80", "127.9.9.9"] {
            assert!(host_ok(ok, None), "{ok}");
        }
        for bad in [
            "192.168.1.20:8080",
            "evil.example",
            "localhost.evil.example:8080",
            "[fe80::1]:80",
        ] {
            assert!(!host_ok(bad, None), "{bad}");
        }
        let base = Some("http://192.168.1.20:8080");
        assert!(host_ok("192.168.1.20:8080", base));
        assert!(!host_ok("192.168.1.20:9090", base));
        assert!(host_ok("demo.local:80", Some("http://demo.local")));
        assert!(host_ok("demo.local", Some("http://demo.local")));
    }

    #[test]
    fn origins_of_other_sites_and_null_are_refused() {
        let s = settings("127.0.0.1:8080", None, &["demo.lan"]);
        let host = Some("127.0.0.1:8080");
        for ok in [
            "http://127.0.0.1:8080",
            "http://localhost:3000",
            "https://demo.lan",
        ] {
            assert_eq!(check(&s, &headers(host, Some(ok)), &[]), Ok(()), "{ok}");
        }
        for bad in [
            "null",
            "https://attacker.example",
            "http://192.168.1.9:8080",
            "file://",
            "",
        ] {
            assert_eq!(
                check(&s, &headers(host, Some(bad)), &[]),
                Err(Refusal::Origin(bad.to_string())),
                "{bad}"
            );
        }
        let extra = vec!["https://inspector.example".to_string()];
        let inspector = headers(host, Some("https://inspector.example"));
        assert_eq!(check(&s, &inspector, &extra), Ok(()));
    }
}
