//! The one redactor every MCP response passes through: tool results (structured and text), error
//! messages and JSON-RPC errors.
//!
//! Two rules, applied together:
//! - by field name: a field whose name says it holds a credential (`password`, `secret`, `rawKey`,
//!   `secret_hash`, `authorization`, `access_token`, `api_key`, ...) has its value replaced;
//! - by value pattern ([`scan`]): wherever a string contains something shaped like a credential (a
//!   JWT, a `Bearer <x>` or `Basic <x>` header value, one of our `sgn_test_` keys, a `whsec_`
//!   signing secret, an argon2 PHC hash, the value of `password=`, `"token": "…"` and the like, or
//!   base64 that decodes to one of these) that part is replaced, whatever field it sits in.
//!
//! Patterns are matched on a folded view of the text ([`fold`]: NFKC, invisible characters
//! dropped, percent-encoding decoded) and the replacement covers the original characters, so a
//! secret is redacted whole or not at all.
//!
//! The word "token" alone is domain data here (brand tokens, token packs, token balances, token
//! transactions), so only the names of actual credential tokens count as secret.

mod fold;
mod scan;

use serde_json::Value;
use std::borrow::Cow;

pub const REDACTED: &str = "[REDACTED]";

/// Field names (lowercased, with everything but letters and digits removed) that always hold a
/// credential.
const SECRET_NAMES: &[&str] = &[
    "authorization",
    "proxyauthorization",
    "cookie",
    "setcookie",
    "apikey",
    "xapikey",
    "rawkey",
    "privatekey",
    "secretkey",
    "signingkey",
    "keyhash",
    "tokenhash",
    "accesstoken",
    "refreshtoken",
    "idtoken",
    "sessiontoken",
    "authtoken",
    "apitoken",
    "bearertoken",
    "logintoken",
    "jwt",
    "jwtsecret",
];

/// True when a field of this name holds a secret, so its value is never shown.
pub fn is_secret_field(name: &str) -> bool {
    let mut buf = [0u8; 48];
    let mut n = 0;
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() {
            if n == buf.len() {
                // No secret name is this long; long keys are data, not credentials.
                return false;
            }
            buf[n] = b.to_ascii_lowercase();
            n += 1;
        }
    }
    let c = &buf[..n];
    if contains(c, b"password") || contains(c, b"passwd") || contains(c, b"passphrase") {
        return true;
    }
    if contains(c, b"secret") {
        // The last characters of a signing secret are shown on purpose, to tell secrets apart.
        return !(c.ends_with(b"lastfour") || c.ends_with(b"last4"));
    }
    SECRET_NAMES.iter().any(|s| s.as_bytes() == c)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The original byte spans `[start, end)` of the secrets in `s`, in order, not overlapping.
fn secret_spans(s: &str) -> Vec<(usize, usize)> {
    let plain = !s.bytes().any(|b| b == b'%') && !s.chars().any(fold::folds);
    let mut spans = Vec::new();
    if plain {
        collect_spans(s.as_bytes(), |a, b| (a, b), &mut spans, false);
    } else {
        let f = fold::fold(s);
        collect_spans(&f.bytes, |a, b| f.span(a, b), &mut spans, false);
    }
    // A span ends at a character boundary (a capped quoted value could stop inside one).
    for (_, end) in spans.iter_mut() {
        while !s.is_char_boundary(*end) {
            *end += 1;
        }
    }
    spans
}

/// Scans folded bytes; with `first_only`, stops at the first secret.
fn collect_spans(
    bytes: &[u8],
    map: impl Fn(usize, usize) -> (usize, usize),
    spans: &mut Vec<(usize, usize)>,
    first_only: bool,
) {
    let mut i = 0;
    while i < bytes.len() {
        match scan::secret_at(bytes, i) {
            Some((keep, end)) if end > keep => {
                spans.push(map(i + keep, i + end));
                if first_only {
                    return;
                }
                i += end;
            }
            _ => i += 1,
        }
    }
}

/// Whether `s` holds anything [`redact_str`] would replace.
pub fn holds_secret(s: &str) -> bool {
    let mut spans = Vec::new();
    if !s.bytes().any(|b| b == b'%') && !s.chars().any(fold::folds) {
        collect_spans(s.as_bytes(), |a, b| (a, b), &mut spans, true);
    } else {
        let f = fold::fold(s);
        collect_spans(&f.bytes, |a, b| (a, b), &mut spans, true);
    }
    !spans.is_empty()
}

/// `s` with every secret-shaped part replaced; borrowed when there is nothing to replace.
pub fn redact_str(s: &str) -> Cow<'_, str> {
    let spans = secret_spans(s);
    if spans.is_empty() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    for (start, end) in spans {
        if start < copied {
            continue;
        }
        out.push_str(&s[copied..start]);
        out.push_str(REDACTED);
        copied = end;
    }
    out.push_str(&s[copied..]);
    Cow::Owned(out)
}

/// Whether `s` carries the redaction marker, in any case or folded form (`[redacted]`,
/// `［REDACTED］`): text an assistant copied from a redacted answer, not a value to store.
pub fn contains_marker(s: &str) -> bool {
    if !s.contains('[') && s.is_ascii() {
        return false;
    }
    let f = fold::fold(s);
    f.bytes
        .windows(REDACTED.len())
        .any(|w| w.eq_ignore_ascii_case(REDACTED.as_bytes()))
}

/// The first string in `v` that carries the redaction marker, as a path (`changes.headline`).
pub fn marker_path(v: &Value, path: &str) -> Option<String> {
    match v {
        Value::String(s) => contains_marker(s).then(|| path.to_string()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, x)| marker_path(x, &format!("{path}[{i}]"))),
        Value::Object(map) => map.iter().find_map(|(k, x)| {
            let p = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            marker_path(x, &p)
        }),
        _ => None,
    }
}

/// Whether a secret field name (see [`is_secret_field`]) or the start of a secret value pattern
/// (see [`redact_str`]) begins at the start of `rest`, a slice of text lowercased with everything
/// but letters and digits removed. Names that contain another listed name are covered by it.
fn needle_at(rest: &[u8]) -> bool {
    let s = |n: &[u8]| rest.starts_with(n);
    match rest[0] {
        b'p' => s(b"password") || s(b"passwd") || s(b"passphrase") || s(b"privatekey") || s(b"pwd"),
        b's' => s(b"secret") || s(b"signingkey") || s(b"sessiontoken") || s(b"sgn"),
        b'a' => {
            s(b"authorization")
                || s(b"apikey")
                || s(b"accesstoken")
                || s(b"authtoken")
                || s(b"apitoken")
                || s(b"argon2")
        }
        b'c' => s(b"cookie"),
        b'r' => s(b"rawkey") || s(b"refreshtoken"),
        b'k' => s(b"keyhash"),
        b't' => s(b"tokenhash"),
        b'i' => s(b"idtoken"),
        b'l' => s(b"logintoken"),
        b'j' => s(b"jwt"),
        b'e' => s(b"eyj"),
        b'w' => s(b"whsec"),
        b'b' => s(b"bearer"),
        _ => false,
    }
}

/// False only when a serialized JSON document provably holds nothing the redactor would change,
/// so it can be passed on as it is. Errs towards true: a false alarm only costs a parse.
///
/// Without escapes, every string value of the document appears verbatim in it, between quotes
/// (which end every value pattern), so the value patterns run over the whole text see what they
/// would see in each string; field names are looked for in the letters and digits.
pub fn needs_redaction(json: &[u8]) -> bool {
    // An escape (`\u`, `\n`, `\"`) changes the text; only the full parse sees through it.
    if json.contains(&b'\\') {
        return true;
    }
    let Ok(text) = std::str::from_utf8(json) else {
        return true;
    };
    let norm: Vec<u8> = json
        .iter()
        .filter(|b| b.is_ascii_alphanumeric())
        .map(u8::to_ascii_lowercase)
        .collect();
    (0..norm.len()).any(|i| needle_at(&norm[i..])) || holds_secret(text)
}

/// A serialized JSON document (a REST body), redacted: the same bytes when there is nothing to
/// redact, otherwise parsed, redacted and serialized again. `None` when it had to be parsed and
/// was not JSON; the fast path trusts its input to be JSON.
pub fn redact_json(json: &[u8]) -> Option<Cow<'_, [u8]>> {
    if !needs_redaction(json) && std::str::from_utf8(json).is_ok() {
        return Some(Cow::Borrowed(json));
    }
    let mut v: Value = serde_json::from_slice(json).ok()?;
    redact_value(&mut v);
    serde_json::to_vec(&v).ok().map(Cow::Owned)
}

/// Redacts a JSON value in place: secret-named fields lose their value (a `null` stays `null`: an
/// absent secret reveals nothing), and every string is scrubbed of secret-shaped parts.
pub fn redact_value(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let Cow::Owned(clean) = redact_str(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_value),
        Value::Object(map) => {
            for (k, x) in map.iter_mut() {
                if is_secret_field(k) {
                    if !x.is_null() {
                        *x = Value::String(REDACTED.into());
                    }
                } else {
                    redact_value(x);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
