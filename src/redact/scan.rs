//! The secret patterns, matched on folded text ([`super::fold`]): where a secret starts, how much
//! of the match stays shown (the `password=` of an assignment) and where it ends.
//!
//! Each pattern takes the whole secret or nothing: a value ends only where the credential's own
//! alphabet ends, never at a character that was folded away.

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::{alphabet, Engine};

/// A match at `i`: bytes `[i, i + keep)` stay shown, `[i + keep, i + end)` are the secret.
pub type Match = (usize, usize);

fn is_b64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// Characters a base64 run may hold (both alphabets; padding).
fn is_b64_any(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_' | b'=')
}

fn run_len(bytes: &[u8], from: usize, ok: impl Fn(u8) -> bool) -> usize {
    bytes
        .get(from..)
        .map_or(0, |r| r.iter().take_while(|&&b| ok(b)).count())
}

fn starts_with_ci(bytes: &[u8], i: usize, prefix: &[u8]) -> bool {
    bytes
        .get(i..i + prefix.len())
        .is_some_and(|w| w.eq_ignore_ascii_case(prefix))
}

fn word_start(bytes: &[u8], i: usize) -> bool {
    i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')
}

/// The secret at `i`, if one starts there.
pub fn secret_at(bytes: &[u8], i: usize) -> Option<Match> {
    if let Some(m) = assigned_secret(bytes, i).or_else(|| basic_credentials(bytes, i)) {
        return Some(m);
    }
    if let Some(len) = credential_at(bytes, i) {
        return Some((0, len));
    }
    encoded_credential(bytes, i).map(|len| (0, len))
}

/// The length of a credential of a known shape starting at `i`: a JWT, one of our API keys, a
/// webhook signing secret, an argon2 hash, a `Bearer` value.
pub fn credential_at(bytes: &[u8], i: usize) -> Option<usize> {
    let first = bytes[i].to_ascii_lowercase();
    // A compact JWS: three base64url parts; the header always starts `eyJ` (`{"`).
    if bytes[i..].starts_with(b"eyJ") {
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
    if first == b's' {
        for prefix in [&b"sgn_test_"[..], b"sgn_live_"] {
            if starts_with_ci(bytes, i, prefix) {
                // `sgn_test_<KID>` alone is the key's public prefix (REST `GET /me` shows it); a
                // key has `_<SECRET>` after it, and any part of that secret makes it a key.
                let kid = run_len(bytes, i + prefix.len(), |b| b.is_ascii_alphanumeric());
                let after = i + prefix.len() + kid;
                if kid == 0 || bytes.get(after) != Some(&b'_') {
                    return None;
                }
                let secret = run_len(bytes, after + 1, |b| b.is_ascii_alphanumeric() || b == b'_');
                return (secret > 0).then_some(prefix.len() + kid + 1 + secret);
            }
        }
        return None;
    }
    if first == b'w' && starts_with_ci(bytes, i, b"whsec_") {
        let n = run_len(bytes, i + 6, is_token_char);
        return (n > 0).then_some(6 + n);
    }
    if first == b'$' && starts_with_ci(bytes, i, b"$argon2") {
        let n = run_len(bytes, i + 7, |b| {
            b.is_ascii_alphanumeric()
                || matches!(b, b'$' | b'=' | b',' | b'.' | b'+' | b'/' | b'_' | b'-')
        });
        return Some(7 + n);
    }
    if first == b'b' && starts_with_ci(bytes, i, b"bearer") && word_start(bytes, i) {
        let spaces = run_len(bytes, i + 6, |b| b == b' ' || b == b'\t');
        if spaces > 0 {
            let from = i + 6 + spaces;
            let n = run_len(bytes, from, is_token_char);
            if token_shaped(&bytes[from..from + n]) {
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

/// Lenient base64: either padding, non-zero trailing bits.
fn engine(alphabet: &alphabet::Alphabet) -> GeneralPurpose {
    GeneralPurpose::new(
        alphabet,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    )
}

/// `run` decoded as base64 (standard or URL-safe alphabet), if it is base64.
fn decode_b64(run: &[u8]) -> Option<Vec<u8>> {
    let url = run.iter().any(|b| matches!(b, b'-' | b'_'));
    let std = run.iter().any(|b| matches!(b, b'+' | b'/'));
    match (std, url) {
        (true, true) => None,
        (_, true) => engine(&alphabet::URL_SAFE).decode(run).ok(),
        _ => engine(&alphabet::STANDARD).decode(run).ok(),
    }
}

/// The shortest base64 run checked for an encoded credential (`sgn_test_a_b` encodes to 16).
pub const MIN_ENCODED: usize = 16;
/// Longer runs (a JWT's body, an image) are not decoded: no credential of ours is this long.
const MAX_ENCODED: usize = 4096;

/// A base64 run starting at a word boundary at `i` that decodes to text holding a credential: the
/// length of the run.
pub fn encoded_credential(bytes: &[u8], i: usize) -> Option<usize> {
    if i > 0 && is_b64_any(bytes[i - 1]) {
        return None;
    }
    let n = run_len(bytes, i, is_b64_any);
    if !(MIN_ENCODED..=MAX_ENCODED).contains(&n) {
        return None;
    }
    let decoded = decode_b64(&bytes[i..i + n])?;
    holds_credential(&decoded).then_some(n)
}

/// Whether decoded bytes hold one of our credentials (folded, so an encoded fullwidth or
/// zero-width form counts too).
fn holds_credential(decoded: &[u8]) -> bool {
    let text = String::from_utf8_lossy(decoded);
    let f = super::fold::fold(&text);
    (0..f.bytes.len())
        .any(|j| credential_at(&f.bytes, j).is_some() || assigned_secret(&f.bytes, j).is_some())
}

/// `Basic <base64 of user:password>` at `i`: the word and space stay, the credentials go. The
/// value must decode to text with a colon, so "Basic plan" is left alone.
fn basic_credentials(bytes: &[u8], i: usize) -> Option<Match> {
    if !starts_with_ci(bytes, i, b"basic") || !word_start(bytes, i) {
        return None;
    }
    let spaces = run_len(bytes, i + 5, |b| b == b' ' || b == b'\t');
    if spaces == 0 {
        return None;
    }
    let from = i + 5 + spaces;
    let n = run_len(bytes, from, |b| {
        b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')
    });
    if n < 4 {
        return None;
    }
    let decoded = decode_b64(&bytes[from..from + n])?;
    let text = std::str::from_utf8(&decoded).ok()?;
    let ok = text.contains(':') && !text.chars().any(char::is_control);
    ok.then_some((5 + spaces, 5 + spaces + n))
}

/// How a name announces a secret value.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Announces {
    /// A password word: `password: hunter2` (one space after the colon) is a secret too.
    Password,
    /// Any other secret name: `api_key=x`, `api_key = x`, `secret:x`, `"token": "x"`.
    Secret,
    /// Too common a word to take a spaced form: only `pass=x` or `"pass": "x"`.
    Tight,
}

/// Whether the word (letters, digits, `_`, `-`) names a secret value.
fn announces(word: &[u8]) -> Option<Announces> {
    let lower: Vec<u8> = word.iter().map(u8::to_ascii_lowercase).collect();
    let last = lower
        .rsplit(|b| *b == b'_' || *b == b'-')
        .next()
        .unwrap_or(&lower);
    let squashed: Vec<u8> = lower
        .iter()
        .copied()
        .filter(u8::is_ascii_alphanumeric)
        .collect();
    let ends = |s: &[u8]| squashed.ends_with(s);
    if ends(b"password") || ends(b"passwd") || ends(b"passphrase") || last == b"pwd" {
        return Some(Announces::Password);
    }
    const KEYS: &[&[u8]] = &[
        b"apikey",
        b"xapikey",
        b"accesskey",
        b"secretkey",
        b"privatekey",
        b"signingkey",
        b"accesstoken",
        b"refreshtoken",
        b"authtoken",
        b"idtoken",
        b"sessiontoken",
        b"bearertoken",
        b"apitoken",
    ];
    if ends(b"secret") || KEYS.contains(&squashed.as_slice()) {
        return Some(Announces::Secret);
    }
    (last == b"pass" || last == b"token").then_some(Announces::Tight)
}

/// `name=value`, `name: value` or `"name": "value"` at `i` where the name announces a secret: the
/// name and separator stay shown, the value (up to a space, quote, `&`, `;` or `,`, or inside its
/// quotes) is the secret.
pub fn assigned_secret(bytes: &[u8], i: usize) -> Option<Match> {
    if !word_start(bytes, i) || !bytes[i].is_ascii_alphabetic() {
        return None;
    }
    let word = run_len(bytes, i, |b| {
        b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
    });
    let mut at = i + word;
    // Cheap before the name is looked at: a separator must follow, after a quote and spaces.
    let gap = run_len(bytes, at, |b| matches!(b, b'"' | b'\'' | b'\\' | b' '));
    if !matches!(bytes.get(at + gap), Some(b'=' | b':')) {
        return None;
    }
    let kind = announces(&bytes[i..i + word])?;
    // A quoted name (`"password":`, or `\"password\":` inside escaped JSON).
    let backslash = usize::from(bytes.get(at) == Some(&b'\\'));
    let quoted = i > 0
        && matches!(bytes[i - 1], b'"' | b'\'')
        && matches!(bytes.get(at + backslash), Some(b'"' | b'\''));
    if quoted {
        at += backslash + 1;
    }
    let before = run_len(bytes, at, |b| b == b' ');
    let sep = *bytes.get(at + before)?;
    if sep != b'=' && sep != b':' {
        return None;
    }
    let spaced_before = before > 0;
    at += before + 1;
    let after = run_len(bytes, at, |b| b == b' ');
    let spaced = spaced_before || after > 0;
    let allowed = match (kind, sep, quoted) {
        (_, _, true) => true,
        (Announces::Tight, b'=', _) => !spaced,
        (Announces::Tight, _, _) => false,
        (_, b'=', _) => true,
        (Announces::Password, _, _) => !spaced_before,
        (Announces::Secret, _, _) => !spaced,
    };
    if !allowed {
        return None;
    }
    at += after;
    // A quoted value: everything up to its closing quote.
    if bytes.get(at) == Some(&b'\\') && bytes.get(at + 1) == Some(&b'"') {
        at += 2;
        let n = run_len(bytes, at, |b| b != b'\\' && b != b'"' && b != b'\n');
        return (n > 0).then_some((at - i, at - i + n));
    }
    if let Some(&q) = bytes.get(at).filter(|&&q| q == b'"' || q == b'\'') {
        let n = run_len(bytes, at + 1, |b| b != q && b != b'\n');
        // Closed on the same line: the whole quoted text; unclosed: the word after the quote.
        if bytes.get(at + 1 + n) == Some(&q) {
            return (n > 0).then_some((at + 1 - i, at + 1 - i + n));
        }
        at += 1;
    }
    let n = run_len(bytes, at, |b| {
        !b.is_ascii_whitespace() && !matches!(b, b'"' | b'\'' | b'&' | b';' | b',' | b'\\')
    });
    // `"password": true` in JSON is a flag, not a password.
    let literal = |w: &[u8]| {
        bytes[at..].starts_with(w)
            && !bytes
                .get(at + w.len())
                .is_some_and(u8::is_ascii_alphanumeric)
    };
    if quoted && (literal(b"true") || literal(b"false") || literal(b"null")) {
        return None;
    }
    (n > 0).then_some((at - i, at - i + n))
}
