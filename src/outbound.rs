//! Where the service may send requests: the address policy for webhook targets.
//!
//! A webhook URL names a host the service will connect to, so a tenant could aim it at the
//! machine's own neighbourhood: the cloud metadata service (`169.254.169.254`), link-local or
//! multicast addresses. [`check_host`] refuses those when a webhook is created or updated, reading
//! a numeric host the way URL parsers and `inet_aton` do (`2852039166`, `0xa9fea9fe`,
//! `0251.0376.0251.0376` and `169.254.43518` are all `169.254.169.254`). A DNS name can still
//! resolve to any address, so delivery must call [`check_address`] again on every address it
//! resolved, right before connecting (DNS rebinding), and connect to that checked address.
//!
//! Loopback and private ranges are allowed unless [`TargetPolicy::allow_private`] is off
//! (`webhooks.allow_private_targets`): a sandbox's receivers usually live there.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What a deployment allows beyond public addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetPolicy {
    /// Loopback, RFC 1918, CGNAT (`100.64.0.0/10`) and unique-local IPv6 (`fc00::/7`).
    pub allow_private: bool,
}

/// Why a target is refused. [`Refusal::code`] is the `errors[].code` of the 422.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A cloud metadata endpoint, by address or by name.
    Metadata,
    /// `0.0.0.0/8`, `::`.
    Unspecified,
    /// `255.255.255.255`.
    Broadcast,
    /// `169.254.0.0/16`, `fe80::/10`.
    LinkLocal,
    /// `224.0.0.0/4`, `ff00::/8`.
    Multicast,
    /// `240.0.0.0/4` (reserved for future use, not routable).
    Reserved,
    /// A numeric host that is not an IPv4 address (`1.2.3.999`, `1.2.3.4.5`).
    InvalidAddress,
    /// `127.0.0.0/8`, `::1`, `localhost` (only when private targets are refused).
    Loopback,
    /// `10/8`, `172.16/12`, `192.168/16`, `100.64/10`, `fc00::/7` (only when private targets are
    /// refused).
    Private,
}

impl Refusal {
    pub fn code(self) -> &'static str {
        match self {
            Refusal::Metadata => "metadata_target",
            Refusal::Unspecified => "unspecified_target",
            Refusal::Broadcast => "broadcast_target",
            Refusal::LinkLocal => "link_local_target",
            Refusal::Multicast => "multicast_target",
            Refusal::Reserved => "reserved_target",
            Refusal::InvalidAddress => "invalid_address",
            Refusal::Loopback => "loopback_target",
            Refusal::Private => "private_target",
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            Refusal::Metadata => "The host is a cloud metadata endpoint; webhooks cannot target it.",
            Refusal::Unspecified => "The host is an unspecified address (0.0.0.0/8 or ::); webhooks cannot target it.",
            Refusal::Broadcast => "The host is the broadcast address; webhooks cannot target it.",
            Refusal::LinkLocal => "The host is link-local (169.254.0.0/16 or fe80::/10); webhooks cannot target it.",
            Refusal::Multicast => "The host is a multicast address; webhooks cannot target it.",
            Refusal::Reserved => "The host is in 240.0.0.0/4, which is reserved and not routable.",
            Refusal::InvalidAddress => "The host looks numeric but is not an IPv4 address.",
            Refusal::Loopback => "The host is loopback, and this server refuses private targets (webhooks.allow_private_targets = false).",
            Refusal::Private => "The host is a private address (RFC 1918, 100.64.0.0/10 or fc00::/7), and this server refuses private targets (webhooks.allow_private_targets = false).",
        }
    }
}

/// Host names of cloud metadata services (compared case-insensitively).
const METADATA_NAMES: &[&str] = &[
    "metadata",
    "metadata.google.internal",
    "metadata.goog",
    "instance-data",
    "instance-data.ec2.internal",
];

/// Metadata addresses outside the always-refused ranges: Alibaba Cloud's (in CGNAT space) and
/// AWS's IPv6 endpoint (in unique-local space). `169.254.169.254` is link-local anyway, but is
/// named as metadata for a clearer error.
const METADATA_V4: [Ipv4Addr; 2] = [
    Ipv4Addr::new(169, 254, 169, 254),
    Ipv4Addr::new(100, 100, 100, 200),
];
const METADATA_V6: [Ipv6Addr; 1] = [Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)];

/// True for an address of a private network (RFC 1918, CGNAT, unique-local IPv6), whose failures
/// a delivery reports only as "not reachable". Loopback is not one: it is the developer's own
/// machine, whose receivers' timeouts and refusals are what a developer needs to read.
pub fn is_private(ip: IpAddr) -> bool {
    check_address(
        ip,
        TargetPolicy {
            allow_private: false,
        },
    ) == Err(Refusal::Private)
}

/// Checks one address a request would connect to. Delivery calls this on every resolved address.
pub fn check_address(ip: IpAddr, policy: TargetPolicy) -> Result<(), Refusal> {
    match ip {
        IpAddr::V4(v4) => check_v4(v4, policy),
        IpAddr::V6(v6) => check_v6(v6, policy),
    }
}

fn check_v4(ip: Ipv4Addr, policy: TargetPolicy) -> Result<(), Refusal> {
    let [a, b, _, _] = ip.octets();
    if METADATA_V4.contains(&ip) {
        return Err(Refusal::Metadata);
    }
    if a == 0 {
        return Err(Refusal::Unspecified);
    }
    if ip.is_broadcast() {
        return Err(Refusal::Broadcast);
    }
    if ip.is_link_local() {
        return Err(Refusal::LinkLocal);
    }
    if ip.is_multicast() {
        return Err(Refusal::Multicast);
    }
    if a >= 240 {
        return Err(Refusal::Reserved);
    }
    if !policy.allow_private {
        if ip.is_loopback() {
            return Err(Refusal::Loopback);
        }
        let cgnat = a == 100 && (64..128).contains(&b);
        if ip.is_private() || cgnat {
            return Err(Refusal::Private);
        }
    }
    Ok(())
}

fn check_v6(ip: Ipv6Addr, policy: TargetPolicy) -> Result<(), Refusal> {
    // IPv4 carried in IPv6: mapped (::ffff:0:0/96) and the NAT64 well-known prefix (64:ff9b::/96)
    // reach the embedded IPv4 address, so they get its rules.
    let seg = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return check_v4(v4, policy);
    }
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [_, _, _, _, _, _, hi, lo] = seg;
        return check_v4(
            Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo)),
            policy,
        );
    }
    if METADATA_V6.contains(&ip) {
        return Err(Refusal::Metadata);
    }
    if ip.is_unspecified() {
        return Err(Refusal::Unspecified);
    }
    if seg[0] & 0xffc0 == 0xfe80 {
        return Err(Refusal::LinkLocal);
    }
    if ip.is_multicast() {
        return Err(Refusal::Multicast);
    }
    if !policy.allow_private {
        if ip.is_loopback() {
            return Err(Refusal::Loopback);
        }
        if seg[0] & 0xfe00 == 0xfc00 {
            return Err(Refusal::Private);
        }
    }
    Ok(())
}

/// Checks the host of a URL (a DNS-style name, as [`crate::validate::is_url`] admits). A host
/// whose last label is a number is an IPv4 address in one of the forms URL parsers accept, and is
/// checked as that address; a name is checked against the metadata names (and `localhost` when
/// private targets are refused). Other names can only be checked after resolution.
pub fn check_host(host: &str, policy: TargetPolicy) -> Result<(), Refusal> {
    let host = host.to_ascii_lowercase();
    if let Some(parsed) = numeric_ipv4(&host) {
        let ip = parsed.ok_or(Refusal::InvalidAddress)?;
        return check_v4(ip, policy);
    }
    if METADATA_NAMES.contains(&host.as_str()) {
        return Err(Refusal::Metadata);
    }
    if !policy.allow_private && (host == "localhost" || host.ends_with(".localhost")) {
        return Err(Refusal::Loopback);
    }
    Ok(())
}

/// The WHATWG URL Standard's IPv4 host parser, which is also `inet_aton`'s: `None` when the host
/// does not end in a number (it is a name), `Some(None)` when it does but is not a valid address.
/// Parts are decimal, octal (leading `0`) or hex (`0x`); with fewer than four parts the last one
/// fills the remaining bytes (`169.254.1` is `169.254.0.1`, `2852039166` is `169.254.169.254`).
pub fn numeric_ipv4(host: &str) -> Option<Option<Ipv4Addr>> {
    let parts: Vec<&str> = host.strip_suffix('.').unwrap_or(host).split('.').collect();
    let last = parts.last()?;
    let ends_in_number = (!last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()))
        || last
            .strip_prefix("0x")
            .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()));
    if !ends_in_number {
        return None;
    }
    Some(parse_ipv4(&parts))
}

fn parse_ipv4(parts: &[&str]) -> Option<Ipv4Addr> {
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut numbers = Vec::with_capacity(4);
    for part in parts {
        numbers.push(parse_ipv4_number(part)?);
    }
    let (last, init) = numbers.split_last()?;
    if init.iter().any(|&n| n > 255) {
        return None;
    }
    let remaining_bits = 8 * (5 - numbers.len() as u32);
    if remaining_bits < 64 && *last >= 1u64 << remaining_bits {
        return None;
    }
    let mut value = *last;
    for (i, n) in init.iter().enumerate() {
        value += n << (8 * (3 - i as u32));
    }
    u32::try_from(value).ok().map(Ipv4Addr::from)
}

fn parse_ipv4_number(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    let (digits, radix) = if let Some(hex) = part.strip_prefix("0x") {
        (hex, 16)
    } else if part.len() > 1 && part.starts_with('0') {
        (&part[1..], 8)
    } else {
        (part, 10)
    };
    if digits.is_empty() {
        return Some(0);
    }
    if !digits.bytes().all(|b| (b as char).is_digit(radix)) || digits.len() > 20 {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// The path of the sandbox's built-in receiver, `/_sandbox/sink/{name}`.
pub const SINK_PATH: &str = "/_sandbox/sink/";

/// Whether `name` may name a sink: 1 to 64 of `a-z 0-9 - _`.
pub fn is_sink_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// The sink a webhook URL delivers to when it is this sandbox's own built-in receiver: exactly
/// `http://127.0.0.1:0/_sandbox/sink/{name}` (port 0 standing for whatever port this sandbox
/// listens on, so a fixture or a snapshot stays right across restarts) or
/// `http://127.0.0.1:{own_port}/_sandbox/sink/{name}` (also `localhost`), nothing after the name.
/// Such a URL is allowed whatever `webhooks.allow_private_targets` says, and delivery connects to
/// the sandbox's own listener: the exception reaches one route of this process, never another
/// address or port.
pub fn self_sink(url: &str, own_port: Option<u16>) -> Option<&str> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = rest.split_at(rest.find('/')?);
    let (host, port) = authority.rsplit_once(':')?;
    if host != "127.0.0.1" && host != "localhost" {
        return None;
    }
    let port: u16 = port.parse().ok().filter(|_| port.len() <= 5)?;
    if port != 0 && Some(port) != own_port {
        return None;
    }
    let name = path.strip_prefix(SINK_PATH)?;
    is_sink_name(name).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: TargetPolicy = TargetPolicy {
        allow_private: true,
    };
    const CLOSED: TargetPolicy = TargetPolicy {
        allow_private: false,
    };

    #[test]
    fn numeric_hosts_are_read_like_a_url_parser_reads_them() {
        let v4 = |s: &str| numeric_ipv4(s).flatten();
        let metadata = Some(Ipv4Addr::new(169, 254, 169, 254));
        for form in [
            "169.254.169.254",
            "2852039166",
            "0xa9fea9fe",
            "0xA9FEA9FE",
            "0251.0376.0251.0376",
            "0xa9.0xfe.0xa9.0xfe",
            "169.254.43518",
            "169.16689662",
            "0251.254.169.0376",
        ] {
            assert_eq!(v4(&form.to_ascii_lowercase()), metadata, "{form}");
        }
        assert_eq!(v4("169.254.1"), Some(Ipv4Addr::new(169, 254, 0, 1)));
        assert_eq!(v4("0x7f.1"), Some(Ipv4Addr::new(127, 0, 0, 1)));
        assert_eq!(v4("0"), Some(Ipv4Addr::new(0, 0, 0, 0)));
        assert_eq!(v4("0x"), Some(Ipv4Addr::new(0, 0, 0, 0)));
        for not_an_address in [
            "1.2.3.999",
            "1.2.3.4.5",
            "4294967296",
            "08",
            "1.2.0x1g.4",
            "1..2",
        ] {
            assert_eq!(numeric_ipv4(not_an_address), Some(None), "{not_an_address}");
        }
        for name in ["hooks.example", "1.2.3.example", "0xg", "a1", "10.0.0.1a"] {
            assert_eq!(numeric_ipv4(name), None, "{name}");
        }
    }

    #[test]
    fn the_always_refused_ranges() {
        let refused = |s: &str| check_address(s.parse().unwrap(), OPEN).err();
        assert_eq!(refused("169.254.169.254"), Some(Refusal::Metadata));
        assert_eq!(refused("100.100.100.200"), Some(Refusal::Metadata));
        assert_eq!(refused("fd00:ec2::254"), Some(Refusal::Metadata));
        assert_eq!(refused("::ffff:169.254.169.254"), Some(Refusal::Metadata));
        assert_eq!(refused("64:ff9b::a9fe:a9fe"), Some(Refusal::Metadata));
        assert_eq!(refused("169.254.1.1"), Some(Refusal::LinkLocal));
        assert_eq!(refused("fe80::1"), Some(Refusal::LinkLocal));
        assert_eq!(refused("febf::1"), Some(Refusal::LinkLocal));
        assert_eq!(refused("0.0.0.0"), Some(Refusal::Unspecified));
        assert_eq!(refused("0.1.2.3"), Some(Refusal::Unspecified));
        assert_eq!(refused("::"), Some(Refusal::Unspecified));
        assert_eq!(refused("255.255.255.255"), Some(Refusal::Broadcast));
        assert_eq!(refused("224.0.0.1"), Some(Refusal::Multicast));
        assert_eq!(refused("239.255.255.250"), Some(Refusal::Multicast));
        assert_eq!(refused("ff02::1"), Some(Refusal::Multicast));
        assert_eq!(refused("240.0.0.1"), Some(Refusal::Reserved));
        for public in [
            "93.184.216.34",
            "2606:2800:220:1::1",
            "1.1.1.1",
            "100.128.0.1",
        ] {
            assert_eq!(refused(public), None, "{public}");
        }
    }

    #[test]
    fn private_ranges_follow_the_policy() {
        for (addr, why) in [
            ("127.0.0.1", Refusal::Loopback),
            ("127.255.0.9", Refusal::Loopback),
            ("::1", Refusal::Loopback),
            ("::ffff:127.0.0.1", Refusal::Loopback),
            ("10.1.2.3", Refusal::Private),
            ("172.16.0.1", Refusal::Private),
            ("172.31.255.255", Refusal::Private),
            ("192.168.1.1", Refusal::Private),
            ("100.64.0.1", Refusal::Private),
            ("100.127.255.255", Refusal::Private),
            ("fc00::1", Refusal::Private),
            ("fd12:3456::1", Refusal::Private),
        ] {
            let ip: IpAddr = addr.parse().unwrap();
            assert_eq!(check_address(ip, OPEN), Ok(()), "{addr}");
            assert_eq!(check_address(ip, CLOSED), Err(why), "{addr}");
        }
        assert_eq!(check_address("172.32.0.1".parse().unwrap(), CLOSED), Ok(()));
    }

    #[test]
    fn host_names() {
        assert_eq!(
            check_host("METADATA.google.internal", OPEN),
            Err(Refusal::Metadata)
        );
        assert_eq!(check_host("metadata", OPEN), Err(Refusal::Metadata));
        assert_eq!(check_host("2852039166", OPEN), Err(Refusal::Metadata));
        assert_eq!(check_host("1.2.3.999", OPEN), Err(Refusal::InvalidAddress));
        assert_eq!(check_host("localhost", OPEN), Ok(()));
        assert_eq!(check_host("localhost", CLOSED), Err(Refusal::Loopback));
        assert_eq!(check_host("api.localhost", CLOSED), Err(Refusal::Loopback));
        assert_eq!(check_host("0x7f.1", CLOSED), Err(Refusal::Loopback));
        assert_eq!(check_host("hooks.example", CLOSED), Ok(()));
    }

    /// The sink exception reaches exactly `/_sandbox/sink/{name}` of this sandbox, nothing else.
    #[test]
    fn only_this_sandboxs_sink_is_a_self_sink() {
        assert_eq!(
            self_sink("http://127.0.0.1:0/_sandbox/sink/grocers", None),
            Some("grocers")
        );
        assert_eq!(
            self_sink("http://localhost:8080/_sandbox/sink/a-b_1", Some(8080)),
            Some("a-b_1")
        );
        for url in [
            "http://127.0.0.1:8081/_sandbox/sink/x",
            "http://127.0.0.1/_sandbox/sink/x",
            "https://127.0.0.1:0/_sandbox/sink/x",
            "http://10.0.0.1:0/_sandbox/sink/x",
            "http://127.0.0.1:0/_sandbox/clock",
            "http://127.0.0.1:0/_sandbox/sink/",
            "http://127.0.0.1:0/_sandbox/sink/x/../../clock",
            "http://127.0.0.1:0/_sandbox/sink/x?y=1",
            "http://127.0.0.1:0/_sandbox/sink/X",
            "http://127.0.0.1:000000/_sandbox/sink/x",
            "http://user@127.0.0.1:0/_sandbox/sink/x",
        ] {
            assert_eq!(self_sink(url, Some(8080)), None, "{url}");
        }
    }
}
