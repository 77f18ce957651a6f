//! The domains a company's promotions and QR codes may send people to (issue 22 item 7): without
//! a bound, any write key gets a public redirect from the sandbox's own address (`/q/{code}`) to
//! a page of its choosing. A company's `allowed_landing_domains` (the fixtures set each company's
//! website domain) bound `landing_url` and QR `target_url`: the URL's host must equal one of them
//! or end with `.` and one of them. An empty list (or none) allows any public http(s) host.
//!
//! Who may redirect a QR code (issue 31 item 5): only an `admin` key changes the list, and neither
//! the list nor a landing URL may name a host that is not public ([`is_public_host`]): the
//! sandbox's short links must not send a phone to the scanner's own machine, its network, or a
//! cloud metadata address.

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

/// Why a host that is not public is refused, as the 422 says it.
pub const NOT_PUBLIC: &str = "A loopback, private, link-local or otherwise non-public address, or a name of one (`localhost`, a single-label name such as `router`, a name under `.localhost`, `.local`, `.internal`, `.lan`, `.home.arpa` and other private-use names, a cloud metadata name, or a name of a service that resolves to the address written in it, such as `192.168.1.1.nip.io`), cannot be where a public QR code sends people.";

/// Why a domain that is a public suffix is refused from a company's list.
pub const PUBLIC_SUFFIX: &str = "A public suffix (a top-level domain such as `com`, or a suffix under which anyone may register, such as `co.uk` or `nip.io`) would allow every site under it; list the company's own domain.";

/// Last labels no public site has: private-use and special-use names (RFC 6761, 6762, 7686,
/// 8375, 9476, and ICANN's `.internal`), and the ones routers and companies use for their own
/// networks.
const PRIVATE_TLDS: &[&str] = &[
    "internal",
    "lan",
    "home",
    "corp",
    "intranet",
    "private",
    "localdomain",
    "arpa",
    "invalid",
    "onion",
    "alt",
    "intra",
    "priv",
    "router",
    "gateway",
];

/// Services whose names resolve to the address written in them (`10.0.0.1.nip.io`) or to
/// loopback (`localtest.me`): a name under one says nothing about where it leads.
const ADDRESS_IN_NAME: &[&str] = &[
    "nip.io",
    "sslip.io",
    "xip.io",
    "traefik.me",
    "localtest.me",
    "lvh.me",
    "vcap.me",
    "lacolhost.com",
    "localhost.direct",
    "fuf.me",
    "nip.direct",
];

/// Suffixes of more than one label under which anyone may register (from the Public Suffix List,
/// the ones a company is likeliest to type): a company lists its own domain under one, never the
/// suffix itself. A single label (`com`) is refused by rule.
const PUBLIC_SUFFIXES: &[&str] = &[
    "co.uk",
    "org.uk",
    "ac.uk",
    "gov.uk",
    "me.uk",
    "ltd.uk",
    "plc.uk",
    "com.au",
    "net.au",
    "org.au",
    "co.nz",
    "co.jp",
    "ne.jp",
    "or.jp",
    "com.br",
    "com.cn",
    "com.mx",
    "co.in",
    "co.za",
    "com.tr",
    "com.sg",
    "com.hk",
    "co.kr",
    "com.ar",
    "com.pl",
    "co.il",
    "com.es",
    "co.at",
    "github.io",
    "gitlab.io",
    "herokuapp.com",
    "vercel.app",
    "netlify.app",
    "pages.dev",
    "workers.dev",
    "web.app",
    "firebaseapp.com",
    "appspot.com",
    "azurewebsites.net",
    "cloudfront.net",
    "blogspot.com",
    "ngrok.io",
    "ngrok-free.app",
    "ngrok.app",
    "s3.amazonaws.com",
    "onrender.com",
    "fly.dev",
    "glitch.me",
    "repl.co",
];

/// True when `name` is `suffix` or a name under it.
fn under(name: &str, suffix: &str) -> bool {
    name == suffix || name.strip_suffix(suffix).is_some_and(|p| p.ends_with('.'))
}

/// True when `domain` is a public suffix ([`PUBLIC_SUFFIX`]): one label, or one of the
/// registrable suffixes above or the address-in-name services.
pub fn is_public_suffix(domain: &str) -> bool {
    let domain = domain.trim_end_matches('.');
    !domain.contains('.') || PUBLIC_SUFFIXES.contains(&domain) || ADDRESS_IN_NAME.contains(&domain)
}

/// True when `host` (lower-case, as [`host_of`] gives it) may be where a public short link sends
/// people: not empty, not an IPv6 literal (the sandbox's URLs take none, so any is a bracket
/// trick), not `localhost`, a name under `.localhost` or `.local`, and not an IPv4 address in a
/// range that is not public (this network, private, shared, loopback, link-local, benchmarking,
/// the IETF's, multicast, reserved, broadcast). A host whose last label is a number is an IPv4
/// address to a browser (WHATWG URL: `2130706433` and `0x7f.1` are `127.0.0.1`): it is read so,
/// and one that does not read as an address is refused.
pub fn is_public_host(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    if host.is_empty() || host.contains(['[', ']', ':', '%']) {
        return false;
    }
    if host == "localhost" || host.ends_with(".localhost") || host.ends_with(".local") {
        return false;
    }
    // The webhook URL rule's names: cloud metadata endpoints.
    if crate::outbound::check_host(
        host,
        crate::outbound::TargetPolicy {
            allow_private: false,
        },
    )
    .is_err_and(|r| r == crate::outbound::Refusal::Metadata)
    {
        return false;
    }
    let last = host.rsplit('.').next().unwrap_or("");
    if PRIVATE_TLDS.contains(&last) || ADDRESS_IN_NAME.iter().any(|s| under(host, s)) {
        return false;
    }
    let numeric = !last.is_empty()
        && (last.bytes().all(|b| b.is_ascii_digit())
            || last
                .strip_prefix("0x")
                .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit())));
    if !numeric {
        // A single label is a name of the scanner's own network (`router`, `intranet`).
        return host.contains('.');
    }
    ipv4_of(host).is_some_and(|ip| {
        let [a, b, c, _] = ip.octets();
        !(ip.is_unspecified()
            || a == 0
            || ip.is_private()
            || (a == 100 && (64..128).contains(&b))
            || ip.is_loopback()
            || ip.is_link_local()
            || (a == 192 && b == 0 && c == 0)
            || (a == 198 && (18..20).contains(&b))
            || ip.is_multicast()
            || a >= 240)
    })
}

/// The address of a host written the WHATWG way: one to four dot-separated numbers (decimal, `0x`
/// hex, or `0`-led octal), the last one filling the remaining bytes.
fn ipv4_of(host: &str) -> Option<std::net::Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for p in &parts {
        let n = if let Some(hex) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
            if hex.is_empty() {
                0
            } else {
                u64::from_str_radix(hex, 16).ok()?
            }
        } else if p.len() > 1 && p.starts_with('0') {
            u64::from_str_radix(&p[1..], 8).ok()?
        } else {
            p.parse::<u64>().ok()?
        };
        numbers.push(n);
    }
    let (last, leading) = numbers.split_last()?;
    if leading.iter().any(|n| *n > 255) || *last >= 256u64.pow(5 - numbers.len() as u32) {
        return None;
    }
    let mut value = *last;
    for (i, n) in leading.iter().enumerate() {
        value += n << (8 * (3 - i));
    }
    u32::try_from(value).ok().map(std::net::Ipv4Addr::from)
}

/// Adds an error at `field` when `url`'s host is not public (`landing_host_not_public`, whatever
/// the list) or outside `domains` (`landing_domain_not_allowed`).
pub fn check(errors: &mut Errors, field: &str, url: &str, domains: &[String]) {
    let host = host_of(url).unwrap_or_default();
    if !is_public_host(&host) {
        errors.push(field, "landing_host_not_public", NOT_PUBLIC);
        return;
    }
    if domains.is_empty() {
        return;
    }
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

/// [`is_domain`] as a JSON Schema pattern (with the 1–253 length bounds beside it).
pub const DOMAIN_PATTERN: &str =
    "^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$";

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

    #[test]
    fn a_public_suffix_is_not_a_companys_domain() {
        for suffix in ["com", "internal", "nip.io", "co.uk", "github.io"] {
            assert!(is_public_suffix(suffix), "{suffix}");
        }
        for own in ["northwind-grocers.example", "shop.co.uk", "acme.github.io"] {
            assert!(!is_public_suffix(own), "{own}");
        }
    }

    #[test]
    fn hosts_inside_a_machine_or_a_network_are_not_public() {
        for public in [
            "shop.example",
            "northwind-grocers.example",
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "www.localhost-shop.example",
            "172.32.0.1",
            "100.128.0.1",
        ] {
            assert!(is_public_host(public), "{public}");
        }
        for inside in [
            "",
            "localhost",
            "router",
            "intranet",
            "router.lan",
            "nas.home.arpa",
            "host.docker.internal",
            "metadata.google.internal",
            "metadata.goog",
            "192.168.1.1.nip.io",
            "app.127.0.0.1.sslip.io",
            "localtest.me",
            "shop.corp",
            "api.localhost",
            "printer.local",
            "127.0.0.1",
            "127.1",
            "2130706433",
            "0x7f000001",
            "0x7f.1",
            "0177.0.0.1",
            "0.0.0.0",
            "0",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.20",
            "169.254.169.254",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "[::1]",
            "::1",
            "[]",
            "1.2.3.4.5",
            "999.1.1.1",
        ] {
            assert!(!is_public_host(inside), "{inside}");
        }
    }
}
