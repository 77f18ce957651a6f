//! What the journal does to a request's texts before it keeps them, beyond the shared redactor
//! ([`crate::redact`], which scrubs values): member and parameter *names* that hold a secret are
//! replaced too (a raw key sent as `?sgn_test_…=1` or `{"sgn_test_…": …}`), and the credentials
//! of a URL (`https://user:pw@host`) are taken out wherever a URL appears.
//!
//! And the request's *shape* ([`shape`]): a digest of what it asked for, so a retry can be told
//! from a new request without keeping the request itself. Two requests have the same shape when
//! they have the same method, path, query and JSON body once every timestamp in them is set aside
//! ([`mask_timestamps`]): a client that rebuilds its body with a new timestamp sends the same
//! request again.

use crate::redact;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::borrow::Cow;

/// `s` with its secret-shaped parts and the credentials of its URLs replaced.
pub fn text(s: &str) -> Cow<'_, str> {
    match redact::redact_str(s) {
        Cow::Borrowed(b) => userinfo(b),
        Cow::Owned(o) => Cow::Owned(userinfo(&o).into_owned()),
    }
}

/// Whether `path` is its route pattern with each `{parameter}` an id as we mint it
/// ([`redact::minted_id`]): text the server wrote, which holds no secret, so scrubbing is skipped.
pub fn is_route_text(path: &str, route: &str) -> bool {
    let (mut given, mut pattern) = (path.split('/'), route.split('/'));
    loop {
        match (given.next(), pattern.next()) {
            (None, None) => return true,
            (Some(g), Some(p)) if g == p => {}
            (Some(g), Some(p)) if p.starts_with('{') && redact::minted_id(g.as_bytes()) => {}
            _ => return false,
        }
    }
}

/// Whether a member or parameter name must not be kept: it holds something secret-shaped or a
/// URL's credentials.
pub fn secret_name(name: &str) -> bool {
    redact::holds_secret(name) || matches!(userinfo(name), Cow::Owned(_))
}

/// `s` with the user information of every `scheme://user:pw@host` replaced by the marker.
pub fn userinfo(s: &str) -> Cow<'_, str> {
    if !s.contains("://") {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let mut changed = false;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        // The authority ends at the path, query, fragment, or anything a URL cannot hold there.
        let end = after
            .find(|c: char| {
                matches!(c, '/' | '?' | '#' | '"' | '\'' | '<' | '>' | '\\') || c.is_whitespace()
            })
            .unwrap_or(after.len());
        let authority = &after[..end];
        match authority.rfind('@') {
            Some(user_end) => {
                out.push_str(redact::REDACTED);
                out.push_str(&authority[user_end..]);
                changed = true;
            }
            None => out.push_str(authority),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(s)
    }
}

/// A JSON value made fit to keep: the shared redactor's rules, then names that hold a secret
/// replaced (`[REDACTED]`, `[REDACTED]#2`, … so members stay distinct), then URL credentials.
pub fn value(v: &mut Value) {
    redact::redact_value(v);
    names_and_urls(v);
}

fn names_and_urls(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let Cow::Owned(clean) = userinfo(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(names_and_urls),
        Value::Object(map) => {
            if map.keys().any(|k| secret_name(k)) {
                let old = std::mem::take(map);
                let mut hidden = 0;
                for (k, x) in old {
                    let name = if secret_name(&k) {
                        hidden += 1;
                        if hidden == 1 {
                            redact::REDACTED.to_string()
                        } else {
                            format!("{}#{hidden}", redact::REDACTED)
                        }
                    } else {
                        k
                    };
                    map.insert(name, x);
                }
            }
            map.values_mut().for_each(names_and_urls);
        }
        _ => {}
    }
}

/// A query parameter made fit to keep: its name (replaced when it holds a secret) and its value
/// (replaced under a secret name, else scrubbed).
pub fn query_pair<'a>(name: &'a str, value: &'a str) -> (Cow<'a, str>, Cow<'a, str>) {
    if secret_name(name) {
        return (Cow::Borrowed(redact::REDACTED), text(value));
    }
    if redact::is_secret_field(name) {
        return (Cow::Borrowed(name), Cow::Borrowed(redact::REDACTED));
    }
    if name == "idempotency_key" {
        // The journal's own filter: what it names is kept as the entries keep it, a digest.
        return (
            Cow::Borrowed(name),
            Cow::Owned(crate::http::idempotency::digest(value)),
        );
    }
    (Cow::Borrowed(name), text(value))
}

/// The mark a timestamp is replaced with in a request's shape.
const TIME: &str = "~";

/// `s` with every timestamp replaced by `~`: an RFC 3339 date-time (`2026-03-02T09:00:01.5Z`, a
/// space for the `T`, the seconds and the offset optional), a time of day with seconds
/// (`09:00:01`), or a Unix time in seconds or milliseconds (a run of exactly 10 or 13 digits).
/// A date alone is not a timestamp: two campaigns of two days are two requests.
pub fn mask_timestamps(s: &str) -> Cow<'_, str> {
    let b = s.as_bytes();
    if !b.iter().any(u8::is_ascii_digit) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let (mut i, mut copied, mut changed) = (0, 0, false);
    while i < b.len() {
        let after_digit = i > 0 && b[i - 1].is_ascii_digit();
        let found = if after_digit || !b[i].is_ascii_digit() {
            None
        } else {
            date_time_at(b, i)
                .or_else(|| time_at(b, i))
                .or_else(|| epoch_at(b, i))
        };
        match found {
            Some(len) => {
                out.push_str(&s[copied..i]);
                out.push_str(TIME);
                i += len;
                copied = i;
                changed = true;
            }
            None => i += 1,
        }
    }
    if !changed {
        return Cow::Borrowed(s);
    }
    out.push_str(&s[copied..]);
    Cow::Owned(out)
}

fn digits(b: &[u8], at: usize, n: usize) -> bool {
    b.len() >= at + n && b[at..at + n].iter().all(u8::is_ascii_digit)
}

fn byte(b: &[u8], at: usize, want: u8) -> bool {
    b.get(at) == Some(&want)
}

/// `hh:mm:ss` and an optional fraction at `at` (one-digit hours too): its length.
fn clock_at(b: &[u8], at: usize) -> Option<usize> {
    let h = if digits(b, at, 2) {
        2
    } else if digits(b, at, 1) {
        1
    } else {
        return None;
    };
    let mut n = h;
    if !(byte(b, at + n, b':') && digits(b, at + n + 1, 2)) {
        return None;
    }
    n += 3;
    if !(byte(b, at + n, b':') && digits(b, at + n + 1, 2)) {
        return None;
    }
    n += 3;
    if byte(b, at + n, b'.') && digits(b, at + n + 1, 1) {
        n += 1;
        while digits(b, at + n, 1) {
            n += 1;
        }
    }
    (!digits(b, at + n, 1)).then_some(n)
}

fn time_at(b: &[u8], at: usize) -> Option<usize> {
    clock_at(b, at)
}

fn date_time_at(b: &[u8], at: usize) -> Option<usize> {
    let date = digits(b, at, 4)
        && byte(b, at + 4, b'-')
        && digits(b, at + 5, 2)
        && byte(b, at + 7, b'-')
        && digits(b, at + 8, 2);
    if !date || !matches!(b.get(at + 10), Some(b'T' | b't' | b' ')) {
        return None;
    }
    // The time: `hh:mm` at least.
    let t = at + 11;
    if !(digits(b, t, 2) && byte(b, t + 2, b':') && digits(b, t + 3, 2)) {
        return None;
    }
    let mut n = 16;
    if byte(b, t + 5, b':') && digits(b, t + 6, 2) {
        n += 3;
        if byte(b, at + n, b'.') && digits(b, at + n + 1, 1) {
            n += 1;
            while digits(b, at + n, 1) {
                n += 1;
            }
        }
    }
    match b.get(at + n) {
        Some(b'Z' | b'z') => n += 1,
        Some(b'+' | b'-') if digits(b, at + n + 1, 2) => {
            n += 3;
            if byte(b, at + n, b':') && digits(b, at + n + 1, 2) {
                n += 3;
            } else if digits(b, at + n, 2) {
                n += 2;
            }
        }
        _ => {}
    }
    Some(n)
}

fn epoch_at(b: &[u8], at: usize) -> Option<usize> {
    let mut n = 0;
    while digits(b, at + n, 1) {
        n += 1;
    }
    ((n == 10 || n == 13) && b[at] != b'0').then_some(n)
}

/// A JSON number that is a Unix time in seconds or milliseconds (2001 to 2286).
fn epoch_number(n: &serde_json::Number) -> bool {
    let v = n.as_f64().unwrap_or(0.0);
    (1e9..1e10).contains(&v) || (1e12..1e13).contains(&v)
}

/// Feeds a JSON value to the digest in a canonical form: members sorted by name, timestamps
/// masked (in strings, and numbers that are Unix times).
fn feed(h: &mut Sha256, v: &Value) {
    match v {
        Value::Null => h.update(b"n"),
        Value::Bool(b) => h.update(if *b { b"t" } else { b"f" }),
        Value::Number(n) if epoch_number(n) => h.update(b"s~"),
        Value::Number(n) => {
            h.update(b"#");
            h.update(n.to_string().as_bytes());
        }
        Value::String(s) => {
            let masked = mask_timestamps(s);
            h.update(b"s");
            h.update((masked.len() as u64).to_le_bytes());
            h.update(masked.as_bytes());
        }
        Value::Array(items) => {
            h.update(b"[");
            items.iter().for_each(|x| feed(h, x));
            h.update(b"]");
        }
        Value::Object(map) => feed_object(h, map),
    }
}

fn feed_object(h: &mut Sha256, map: &Map<String, Value>) {
    let mut members: Vec<(&String, &Value)> = map.iter().collect();
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    h.update(b"{");
    for (k, x) in members {
        h.update((k.len() as u64).to_le_bytes());
        h.update(k.as_bytes());
        feed(h, x);
    }
    h.update(b"}");
}

/// The shape of a request: 16 hex digits of SHA-256 over its method, its path, its query
/// parameters sorted by name (timestamps masked) and its JSON body in canonical form (members
/// sorted, timestamps masked); all of them already redacted, so the digest is of nothing secret.
/// A body that is not JSON counts by its length only.
pub fn shape(
    method: &str,
    path: &str,
    query: &[(Cow<'_, str>, Cow<'_, str>)],
    body: Body<'_>,
) -> String {
    let mut h = Sha256::new();
    h.update(method.as_bytes());
    h.update(b"\n");
    h.update(path.as_bytes());
    h.update(b"\n");
    let mut pairs: Vec<(&str, Cow<'_, str>)> = query
        .iter()
        .map(|(k, v)| (k.as_ref(), mask_timestamps(v)))
        .collect();
    pairs.sort();
    for (k, v) in pairs {
        h.update((k.len() as u64).to_le_bytes());
        h.update(k.as_bytes());
        h.update((v.len() as u64).to_le_bytes());
        h.update(v.as_bytes());
    }
    h.update(b"\n");
    match body {
        Body::None => h.update(b"-"),
        Body::Json(v) => feed(&mut h, v),
        Body::Opaque(len) => {
            h.update(b"opaque");
            h.update((len as u64).to_le_bytes());
        }
    }
    let digest = h.finalize();
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(16);
    for b in &digest[..8] {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

/// A request body, as [`shape`] reads it.
pub enum Body<'a> {
    None,
    Json(&'a Value),
    Opaque(usize),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_route_and_minted_ids_skip_the_scrub() {
        let id = "dev_0m5d4ruo6ao6qd5rc9dx";
        assert!(is_route_text("/companies", "/companies"));
        assert!(is_route_text(
            &format!("/devices/{id}/ads"),
            "/devices/{id}/ads"
        ));
        // A parameter a client wrote (a raw key where an id goes) is scrubbed.
        let key = "sgn_test_VECFOkBoPCcq3rfr_ssqf9Y9xxptbfgNOxP5rqItR2hoMjFvg2yaUNr";
        assert!(!is_route_text(
            &format!("/devices/{key}/ads"),
            "/devices/{id}/ads"
        ));
        assert!(!is_route_text("/devices/dev_1/ads", "/devices/{id}/ads"));
        assert!(!is_route_text(
            &format!("/devices/{id}/ads/x"),
            "/devices/{id}/ads"
        ));
        assert!(!is_route_text("/devices", "/devices/{id}"));
    }

    #[test]
    fn timestamps_are_masked_and_dates_are_not() {
        for (input, want) in [
            ("Spring 2026-03-02T09:00:01.123Z", "Spring ~"),
            ("sent 2026-03-02 09:00:01+01:00 ok", "sent ~ ok"),
            ("at 09:00:01", "at ~"),
            ("at 9:00:01.5 and 1772442000", "at ~ and ~"),
            ("ms 1772442000123", "ms ~"),
            ("Spring 2026-03-02", "Spring 2026-03-02"),
            ("Screen 1", "Screen 1"),
            ("12345678901", "12345678901"),
            ("Flash 10:00", "Flash 10:00"),
        ] {
            assert_eq!(mask_timestamps(input), want, "{input}");
        }
    }

    #[test]
    fn a_rebuilt_body_has_the_shape_of_the_first_and_another_body_does_not() {
        let shape_of = |v: Value| shape("POST", "/ads", &[], Body::Json(&v));
        let first = shape_of(
            json!({"name": "Spring", "headline": "sent 2026-03-02T09:00:01Z", "n": 1772442000}),
        );
        let again = shape_of(
            json!({"headline": "sent 2026-03-02T09:00:07Z", "n": 1772442006, "name": "Spring"}),
        );
        let other = shape_of(
            json!({"name": "Summer", "headline": "sent 2026-03-02T09:00:01Z", "n": 1772442000}),
        );
        assert_eq!(first, again);
        assert_ne!(first, other);
        assert_eq!(first.len(), 16);
        // The digest's first 8 bytes in lower-case hex, as journals already stored hold them.
        let mut h = Sha256::new();
        h.update(b"GET\n/x\n\n-");
        let want: String = h.finalize()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(shape("GET", "/x", &[], Body::None), want);
    }

    #[test]
    fn names_holding_secrets_and_url_credentials_are_replaced() {
        let key = "sgn_test_fwJ6Gr6KLbkW37oC_abcdefghijklmnopqrstuvwxyz012345";
        let mut v = json!({key: 1, "ok": "https://user:hunter2@example.com/a?b", "nested": [{key: {"x": 2}}]});
        value(&mut v);
        let text = v.to_string();
        assert!(!text.contains("sgn_test_"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(
            text.contains("https://[REDACTED]@example.com/a?b"),
            "{text}"
        );
        assert_eq!(v["[REDACTED]"], 1);
        assert_eq!(userinfo("no url here"), "no url here");
        assert_eq!(userinfo("http://host:80/x"), "http://host:80/x");
        assert_eq!(
            userinfo("a http://u@h b ftp://x:y@z"),
            "a http://[REDACTED]@h b ftp://[REDACTED]@z"
        );
    }
}
