//! The one redactor every MCP response passes through: tool results (structured and text), error
//! messages and JSON-RPC errors.
//!
//! Two rules, applied together:
//! - by field name: a field whose name says it holds a credential (`password`, `secret`, `rawKey`,
//!   `secret_hash`, `authorization`, `access_token`, `api_key`, ...) has its value replaced;
//! - by value pattern: wherever a string contains something shaped like a credential (a JWT, a
//!   `Bearer <x>` header value, one of our `sgn_test_` keys, a `whsec_` signing secret, an argon2
//!   PHC hash) that part is replaced, whatever field it sits in.
//!
//! The word "token" alone is domain data here (brand tokens, token packs, token balances, token
//! transactions), so only the names of actual credential tokens count as secret.

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

fn is_b64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

fn run_len(bytes: &[u8], from: usize, ok: impl Fn(u8) -> bool) -> usize {
    bytes[from..].iter().take_while(|&&b| ok(b)).count()
}

/// The secret at `i`, if one starts there: how many bytes to keep shown, and where it ends
/// (relative to `i`).
fn secret_at(bytes: &[u8], i: usize) -> Option<(usize, usize)> {
    if let Some(span) = assigned_secret(bytes, i) {
        return Some(span);
    }
    whole_secret_at(bytes, i).map(|len| (0, len))
}

/// The length of the credential-shaped value starting at `i`, if one starts there.
fn whole_secret_at(bytes: &[u8], i: usize) -> Option<usize> {
    let rest = &bytes[i..];
    // A compact JWS: three base64url parts; the header always starts `eyJ` (`{"`).
    if rest.starts_with(b"eyJ") {
        let a = run_len(bytes, i, is_b64url);
        if bytes.get(i + a) == Some(&b'.') {
            let b = run_len(bytes, i + a + 1, is_b64url);
            if b > 0 && bytes.get(i + a + 1 + b) == Some(&b'.') {
                let c = run_len(bytes, i + a + b + 2, is_b64url);
                return Some(a + b + c + 2);
            }
        }
        return None;
    }
    for prefix in [&b"sgn_test_"[..], b"sgn_live_"] {
        if rest.starts_with(prefix) {
            // `sgn_test_<KID>` alone is the key's public prefix (REST `GET /me` shows it); a key
            // has `_<SECRET>` after it, and any part of that secret makes it a key.
            let kid = run_len(bytes, i + prefix.len(), |b| b.is_ascii_alphanumeric());
            let after = i + prefix.len() + kid;
            if kid == 0 || bytes.get(after) != Some(&b'_') {
                return None;
            }
            let secret = run_len(bytes, after + 1, |b| b.is_ascii_alphanumeric() || b == b'_');
            return (secret > 0).then_some(prefix.len() + kid + 1 + secret);
        }
    }
    if rest.starts_with(b"whsec_") {
        let n = run_len(bytes, i + 6, is_token_char);
        return (n > 0).then_some(6 + n);
    }
    if rest.starts_with(b"$argon2") {
        let n = run_len(bytes, i + 7, |b| {
            b.is_ascii_alphanumeric()
                || matches!(b, b'$' | b'=' | b',' | b'.' | b'+' | b'/' | b'_' | b'-')
        });
        return Some(7 + n);
    }
    if rest.len() > 7
        && rest[..6].eq_ignore_ascii_case(b"bearer")
        && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
    {
        let spaces = run_len(bytes, i + 6, |b| b == b' ' || b == b'\t');
        if spaces > 0 {
            let n = run_len(bytes, i + 6 + spaces, is_token_char);
            if token_shaped(&bytes[i + 6 + spaces..i + 6 + spaces + n]) {
                return Some(6 + spaces + n);
            }
        }
    }
    None
}

/// Whether the word after `Bearer` looks like a credential rather than English ("Bearer of good
/// news"): at least 8 characters (trailing punctuation aside) with a digit, or 20 with both cases.
fn token_shaped(word: &[u8]) -> bool {
    let core = word
        .iter()
        .rposition(|b| !matches!(b, b'.' | b',' | b'-'))
        .map_or(&word[..0], |end| &word[..=end]);
    let digit = core.iter().any(u8::is_ascii_digit);
    let mixed = core.iter().any(u8::is_ascii_lowercase) && core.iter().any(u8::is_ascii_uppercase);
    (core.len() >= 8 && digit) || (core.len() >= 20 && mixed)
}

/// Names that, followed directly by `=` or `:` in free text, announce a secret value
/// (`password=hunter2`, `api_key: abc`).
const ASSIGNED: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "client_secret",
    "api_key",
    "apikey",
    "access_token",
    "refresh_token",
    "auth_token",
];

/// `name=value` (or `name: value`) at `i` when `name` announces a secret: the name and separator
/// are kept, the value (up to a space, quote, `&`, `;` or `,`) is replaced.
fn assigned_secret(bytes: &[u8], i: usize) -> Option<(usize, usize)> {
    // Only at the start of a value: the name must begin at a word boundary.
    if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_') {
        return None;
    }
    let rest = &bytes[i..];
    let name = ASSIGNED
        .iter()
        .filter(|n| rest.len() > n.len() && rest[..n.len()].eq_ignore_ascii_case(n.as_bytes()))
        .map(|n| n.len())
        .max()?;
    let sep = rest[name];
    if sep != b'=' && sep != b':' {
        return None;
    }
    let mut at = name + 1;
    // `password: hunter2` is common, `Our secret: fresh bread` too: one space after a colon is
    // allowed for the password words only.
    let password_word =
        rest[..3].eq_ignore_ascii_case(b"pas") || rest[..3].eq_ignore_ascii_case(b"pwd");
    if sep == b':' && password_word && rest.get(at) == Some(&b' ') {
        at += 1;
    }
    let value = rest[at..]
        .iter()
        .take_while(|&&b| {
            !b.is_ascii_whitespace() && !matches!(b, b'"' | b'\'' | b'&' | b';' | b',')
        })
        .count();
    (value > 0).then_some((at, at + value))
}

fn might_hold_secret(s: &str) -> bool {
    let b = s.as_bytes();
    s.contains("eyJ")
        || s.contains("sgn_")
        || s.contains("whsec_")
        || s.contains("$argon2")
        || b.windows(6).any(|w| w.eq_ignore_ascii_case(b"bearer"))
        || (b.iter().any(|&c| c == b'=' || c == b':')
            && b.windows(3).any(|w| {
                w.eq_ignore_ascii_case(b"pas")
                    || w.eq_ignore_ascii_case(b"pwd")
                    || w.eq_ignore_ascii_case(b"sec")
                    || w.eq_ignore_ascii_case(b"api")
                    || w.eq_ignore_ascii_case(b"tok")
            }))
}

/// `s` with every secret-shaped part replaced; borrowed when there is nothing to replace.
pub fn redact_str(s: &str) -> Cow<'_, str> {
    if !might_hold_secret(s) {
        return Cow::Borrowed(s);
    }
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        match secret_at(bytes, i) {
            Some((keep, len)) => {
                // Patterns start and end at ASCII bytes, so these are character boundaries.
                out.push_str(&s[copied..i + keep]);
                out.push_str(REDACTED);
                i += len;
                copied = i;
            }
            None => i += 1,
        }
    }
    if copied == 0 {
        return Cow::Borrowed(s);
    }
    out.push_str(&s[copied..]);
    Cow::Owned(out)
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
pub fn needs_redaction(json: &[u8]) -> bool {
    let mut norm = Vec::with_capacity(json.len());
    let mut escaped = false;
    for &b in json {
        // A `\u` escape could spell anything; only the full parse sees through it.
        if escaped && b == b'u' {
            return true;
        }
        escaped = !escaped && b == b'\\';
        if b.is_ascii_alphanumeric() {
            norm.push(b.to_ascii_lowercase());
        }
    }
    (0..norm.len()).any(|i| needle_at(&norm[i..]))
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
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_names_are_redacted_and_token_domain_data_is_not() {
        for name in [
            "password",
            "password_hash",
            "secret",
            "secret_hash",
            "signing_secret",
            "webhookSecret",
            "rawKey",
            "api_key",
            "X-API-KEY",
            "authorization",
            "access_token",
            "refreshToken",
            "client_secret",
        ] {
            assert!(is_secret_field(name), "{name} should be secret");
        }
        for name in [
            "tokens",
            "token_balance",
            "balance",
            "token_pack_id",
            "activation_cost_tokens",
            "included_tokens_monthly",
            "brand_tokens",
            "kind",
            "amount",
            "key_id",
            "prefix",
            "client_id",
            "sha256",
            "secret_last_four",
            "name",
        ] {
            assert!(!is_secret_field(name), "{name} should be visible");
        }
    }

    #[test]
    fn domain_token_objects_stay_visible() {
        let mut pack =
            json!({"object":"token_pack","name":"Starter pack","tokens":500,"price_cents":4900});
        let mut balance = json!({"object":"token_balance","company_id":"cmp_x","balance":1200});
        let mut tx = json!({"object":"token_transaction","kind":"spend","amount":-50,"balance_after":1150,
            "description":"Promotion activation tokens"});
        let mut branding = json!({"object":"branding","colors":{"primary":"#112233"},"fonts":{"heading":"Inter"},
            "brand_tokens":{"radius":8}});
        for v in [&mut pack, &mut balance, &mut tx, &mut branding] {
            let before = v.clone();
            redact_value(v);
            assert_eq!(*v, before);
        }
    }

    #[test]
    fn secret_fields_and_values_are_replaced() {
        let mut v = json!({
            "rawKey": "sgn_test_abc",
            "secret": "whsec_xyz",
            "password_hash": null,
            "nested": [{"access_token": "x", "note": "use Bearer abc123.def456 please"}],
            "headline": "key sgn_test_VECFOkBoPCcq3rfr_ssqf9Y9xxptbfgNOxP5rqItR2hoMjFvg2yaUNr here",
            "jwt_in_text": "t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.sig-_x; ok",
            "hash": "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA end",
            "hook": "whsec_abc123/+=",
        });
        redact_value(&mut v);
        assert_eq!(v["rawKey"], REDACTED);
        assert_eq!(v["secret"], REDACTED);
        assert_eq!(v["password_hash"], Value::Null);
        assert_eq!(v["nested"][0]["access_token"], REDACTED);
        assert_eq!(v["nested"][0]["note"], "use [REDACTED] please");
        assert_eq!(v["headline"], "key [REDACTED] here");
        assert_eq!(v["jwt_in_text"], "t=[REDACTED]; ok");
        assert_eq!(v["hash"], "[REDACTED] end");
        assert_eq!(v["hook"], REDACTED);
    }

    #[test]
    fn the_fast_path_never_skips_a_redaction() {
        let samples = [
            json!({"id":"cmp_1","name":"Northwind Grocers","tokens":500,"balance":12}),
            json!({"rawKey":"x"}),
            json!({"Signing-Secret":"x"}),
            json!({"API_KEY":"x"}),
            json!({"x_api_key":"x"}),
            json!({"authorization":null}),
            json!({"note":"sgn_test_abc"}),
            json!({"note":"see whsec_1"}),
            json!({"note":"eyJa.eyJb.c"}),
            json!({"note":"$argon2id$v=19"}),
            json!({"note":"BEARER abc"}),
            json!({"refresh-token":"x"}),
            json!({"a":[{"b":{"session_token":"x"}}]}),
        ];
        for v in samples {
            let bytes = serde_json::to_vec(&v).unwrap();
            let mut redacted = v.clone();
            redact_value(&mut redacted);
            if redacted != v {
                assert!(needs_redaction(&bytes), "{v}");
            }
            let out = redact_json(&bytes).unwrap();
            assert_eq!(serde_json::from_slice::<Value>(&out).unwrap(), redacted);
        }
        let clean = br#"{"object":"list","data":[{"name":"Caf\u00e9"}]}"#;
        assert!(
            needs_redaction(clean),
            "unicode escapes take the careful path"
        );
        let plain = br#"{"object":"list","data":[{"name":"Grocers","tokens":5}]}"#;
        assert!(!needs_redaction(plain));
        assert!(matches!(redact_json(plain), Some(Cow::Borrowed(_))));
        // Every secret name is found by some needle.
        for name in SECRET_NAMES {
            assert!(needs_redaction(name.as_bytes()), "{name}");
        }
    }

    #[test]
    fn words_and_public_identifiers_are_not_secrets() {
        for s in [
            "Bearer of good news: 2-for-1",
            "Bearer bonds, bearer shares.",
            "sgn_test_VECFOkBoPCcq3rfr",
            "key prefix sgn_live_ABCdef1234567890 shown",
            "Our secret: fresh bread",
            "secret_last_four: 9f2a",
            "passwords must be long",
            "The api is fast",
        ] {
            assert_eq!(redact_str(s), s, "{s}");
        }
    }

    #[test]
    fn secrets_in_free_text_are_caught() {
        let cases = [
            ("login password=hunter2 ok", "login password=[REDACTED] ok"),
            ("Password: hunter2", "Password: [REDACTED]"),
            ("db?user=a&pwd=s3cr3t&x=1", "db?user=a&pwd=[REDACTED]&x=1"),
            ("api_key=abc123;", "api_key=[REDACTED];"),
            ("client_secret:xyz", "client_secret:[REDACTED]"),
            (
                "Authorization: Bearer Zx81pQ0rT5u",
                "Authorization: [REDACTED]",
            ),
            (
                "key sgn_test_VECFOkBoPCcq3rfr_ssqf9Y9x here",
                "key [REDACTED] here",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(redact_str(input), expected, "{input}");
            let bytes = serde_json::to_vec(&json!({ "note": input })).unwrap();
            assert!(needs_redaction(&bytes), "{input}");
        }
    }

    #[test]
    fn ordinary_text_is_untouched() {
        for s in [
            "Spring sale: 20% off",
            "eyJ is not a token",
            "Send `Authorization: Bearer <key>`",
            "Café ünïcode — sgn_",
            "bearer",
        ] {
            assert!(matches!(redact_str(s), Cow::Borrowed(_)), "{s}");
        }
        assert_eq!(
            redact_str("Grüße Bearer x1y2z3w4 ünd"),
            "Grüße [REDACTED] ünd"
        );
    }
}
