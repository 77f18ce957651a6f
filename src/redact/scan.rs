//! The secret patterns, matched on folded text ([`super::fold`]): where a secret starts, how much
//! of the match stays shown (the `password=` of an assignment) and where it ends.
//!
//! Each pattern takes the whole secret or nothing: a value ends only where the credential's own
//! alphabet ends, never at a character that was folded away. The patterns live in three files:
//! this one (the dispatcher, what a *name* announces: `password=x`, `password is x`,
//! `Basic <base64>`, and the base64 runs whose decoded text this scan finds a credential in),
//! [`super::known`] (credentials of a known shape: our keys, JWTs, GitHub, Stripe, AWS, …) and
//! [`super::runs`] (decoding a base64 run, and random-looking runs such as a secret without its
//! prefix). The scan of decoded text is this dispatcher again, so it lives here, above the files
//! it dispatches to; those share [`super::pattern`] and never import this one.

use super::pattern::{run_len, starts_with_ci, word_start, Hit, Match};
use super::runs::{
    decode_b64, decode_b64_into, is_b64_any, is_our_id, is_public_id, is_text, may_decode_to_text,
    random_part, MAX_ENCODED, MIN_ENCODED,
};
use super::words::{is_common_word, reads_like_password};
use super::{known, runs};

/// Whether a secret can start with `b` right after a letter, digit or `_`: a credential of a
/// known shape glued to a word ([`known::credential_at`]), a URL's `://`, a PEM block's dashes.
/// Every other pattern starts at a word start or a run start.
pub fn may_start_inside_a_word(b: u8) -> bool {
    // A character beyond ASCII starts a password word glued to a word (`WiFi密码`).
    matches!(b, b'e' | b's' | b'S' | b'w' | b'W' | b'$' | b':' | b'-') || b >= 0xC0
}

/// The secret (or public look-alike) at `i`, if one starts there.
pub fn secret_at(bytes: &[u8], i: usize) -> Option<Hit> {
    shaped_at(bytes, i).or_else(|| secret_run(bytes, i).map(Hit::Secret))
}

/// [`secret_at`] without the runs that are secrets only by their look (what base64 is decoded
/// and checked for).
pub fn shaped_at(bytes: &[u8], i: usize) -> Option<Hit> {
    let b = bytes[i];
    let starts_word = word_start(bytes, i);
    if b.is_ascii_alphabetic() && starts_word {
        if let Some(m) = named_at(bytes, i) {
            return Some(Hit::Secret(m));
        }
        if let Some(len) = known::prefixed_at(bytes, i) {
            return Some(Hit::Secret((0, len)));
        }
        if b == b'A' {
            if let Some(m) = known::twilio_auth_token(bytes, i) {
                return Some(Hit::Secret(m));
            }
        }
    }
    if starts_word && bytes.get(i + 4) == Some(&b'Q') {
        if let Some(len) = known::azure_client_secret(bytes, i) {
            return Some(Hit::Secret((0, len)));
        }
    }
    if (b >= 0xC0 || (b.is_ascii_alphabetic() && starts_word)) && super::words::may_start(b) {
        if let Some(m) = super::words::worded_password(bytes, i) {
            return Some(Hit::Secret(m));
        }
    }
    match b {
        b'e' | b's' | b'S' | b'w' | b'W' | b'$' | b'b' | b'B' => known::credential_at(bytes, i),
        b':' => known::url_password(bytes, i).map(Hit::Secret),
        b'-' => known::private_key_block(bytes, i).map(|len| Hit::Secret((0, len))),
        _ => None,
    }
}

/// A secret run starting at `i` (at a run's start only): base64 of a credential (the whole run)
/// or random-looking text (the random part).
pub fn secret_run(bytes: &[u8], i: usize) -> Option<Match> {
    secret_run_checked(bytes, i, true)
}

/// [`secret_run`], with or without the check of a run's first four characters before it is
/// decoded (without: the general path, which the tests hold the check to).
#[inline]
pub(super) fn secret_run_checked(bytes: &[u8], i: usize, pre_check: bool) -> Option<Match> {
    if !is_b64_any(bytes[i]) || (i > 0 && is_b64_any(bytes[i - 1])) {
        return None;
    }
    let n = run_len(bytes, i, is_b64_any);
    if n < MIN_ENCODED {
        return None;
    }
    let run = &bytes[i..i + n];
    if is_our_id(run) {
        return None;
    }
    // Only text can hold a credential; random bytes (what most runs decode to) cannot. Most runs
    // that are not base64 of text show it in their first four characters: those are not decoded.
    if n <= MAX_ENCODED && (!pre_check || may_decode_to_text(run)) {
        let mut buf = [0u8; 96];
        let decoded: Option<std::borrow::Cow<'_, [u8]>> = if n <= 128 {
            decode_b64_into(run, &mut buf).map(|len| std::borrow::Cow::Borrowed(&buf[..len]))
        } else {
            decode_b64(run).map(std::borrow::Cow::Owned)
        };
        if let Some(decoded) = decoded.filter(|d| is_text(d)) {
            if holds_credential(&decoded) {
                return Some((0, n));
            }
            // An encoding of text (a cursor) is not random: its text is what was checked.
            return None;
        }
    }
    // Looked at only for a run that looks random: most runs are not.
    random_part(run).filter(|_| !is_public_id(bytes, i, n))
}

/// Whether decoded bytes hold a secret (folded, so an encoded fullwidth or zero-width form
/// counts too; the decoded text is shorter, so this ends).
fn holds_credential(decoded: &[u8]) -> bool {
    let text = String::from_utf8_lossy(decoded);
    let f = super::fold::fold(&text);
    (0..f.bytes.len()).any(|j| matches!(secret_at(&f.bytes, j), Some(Hit::Secret(_))))
}

/// A secret that a word at `i` names or introduces: `password=x`, `password is x`, `Basic x`.
/// Most words are followed by none of what these need, and are passed over at once.
fn named_at(bytes: &[u8], i: usize) -> Option<Match> {
    let word = run_len(bytes, i, |b| {
        b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
    });
    match bytes.get(i + word) {
        Some(b'=' | b':' | b'"' | b'\'' | b'\\') => assigned_secret(bytes, i)
            .or_else(|| super::words::login_pair(bytes, i))
            .or_else(|| super::words::wifi_qr(bytes, i)),
        Some(b' ') => assigned_secret(bytes, i)
            .or_else(|| password_phrase(bytes, i))
            .or_else(|| basic_credentials(bytes, i))
            .or_else(|| super::words::command_password(bytes, i)),
        Some(b'\t') => basic_credentials(bytes, i),
        _ => None,
    }
}

/// `Basic <base64 of user:password>` at `i`: the word and space stay, the credentials go. The
/// value must decode to text with a colon, so "Basic plan" is left alone.
fn basic_credentials(bytes: &[u8], i: usize) -> Option<Match> {
    if !starts_with_ci(bytes, i, b"basic") {
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
    let decoded = runs::decode_b64(&bytes[from..from + n])?;
    let text = std::str::from_utf8(&decoded).ok()?;
    let ok = text.contains(':') && !text.chars().any(char::is_control);
    ok.then_some((5 + spaces, 5 + spaces + n))
}

/// How a name announces a secret value.
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub enum Announces {
    /// A password word: `password: hunter2` (one space after the colon) and `password is
    /// hunter2` are secrets too.
    Password,
    /// Any other secret name: `api_key=x`, `api_key = x`, `secret:x`, `"token": "x"`.
    Secret,
    /// Too common a word to take a spaced form, and promotion copy uses it (`PASS=SUMMER24`,
    /// `token=1 per visit`): a secret in a URL query (`?token=x`, `&pass=x`), quoted JSON
    /// (`"pass": "x"`), or a value that reads like a password (lower case with a digit or sign).
    Tight,
}

/// Names (lowercased, letters and digits only) that announce a secret when a name ends with them.
const SECRET_SUFFIXES: &[&[u8]] = &[
    b"secret",
    b"apikey",
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
    // A presigned URL's signature and session token (S3, Google Cloud Storage).
    b"amzsignature",
    b"googsignature",
    b"securitytoken",
];

/// Whether the word (letters, digits, `_`, `-`) names a secret value.
pub fn announces(word: &[u8]) -> Option<Announces> {
    let mut squashed = [0u8; 48];
    let mut n = 0;
    for &b in word {
        if b.is_ascii_alphanumeric() {
            if n == squashed.len() {
                return None;
            }
            squashed[n] = b.to_ascii_lowercase();
            n += 1;
        }
    }
    let squashed = &squashed[..n];
    let last = word
        .rsplit(|b| *b == b'_' || *b == b'-')
        .next()
        .unwrap_or(word);
    let last_is = |w: &[u8]| last.eq_ignore_ascii_case(w);
    let ends = |s: &[u8]| squashed.ends_with(s);
    if ends(b"password")
        || ends(b"passwd")
        || ends(b"passphrase")
        || ends(b"passcode")
        || last_is(b"pwd")
        || last_is(b"pw")
    {
        return Some(Announces::Password);
    }
    if SECRET_SUFFIXES.iter().any(|s| ends(s)) {
        return Some(Announces::Secret);
    }
    (last_is(b"pass") || last_is(b"token")).then_some(Announces::Tight)
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
    // A URL query or a connection string: `?token=x`, `&pass=x`, `;pwd=x`.
    let in_query = i > 0 && matches!(bytes[i - 1], b'?' | b'&' | b';' | b'#');
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
    let value = &bytes[at..at + n];
    if kind == Announces::Tight && !quoted && !in_query && !reads_like_password(value) {
        return None;
    }
    // `Password: see your welcome letter` names where the password is, not the password.
    if kind == Announces::Password && sep == b':' && after > 0 && !quoted && is_common_word(value) {
        return None;
    }
    (n > 0).then_some((at - i, at - i + n))
}

/// `password is X` (or `was`, with an optional colon): the password word and the verb stay, `X`
/// goes, unless it is a word that ordinary sentences put there.
fn password_phrase(bytes: &[u8], i: usize) -> Option<Match> {
    let word = run_len(bytes, i, |b| {
        b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
    });
    if bytes.get(i + word) != Some(&b' ') {
        return None;
    }
    let mut at = i + word + 1;
    // The verb first: it rules out most words at the cost of two comparisons.
    let verb = [&b"is"[..], b"was"].into_iter().find(|v| {
        starts_with_ci(bytes, at, v)
            && !bytes
                .get(at + v.len())
                .is_some_and(u8::is_ascii_alphanumeric)
    })?;
    let kind = announces(&bytes[i..i + word]);
    if !matches!(kind, Some(Announces::Password | Announces::Tight)) {
        return None;
    }
    at += verb.len();
    if bytes.get(at) == Some(&b':') {
        at += 1;
    }
    let spaces = run_len(bytes, at, |b| b == b' ');
    if spaces == 0 {
        return None;
    }
    at += spaces;
    let quote = bytes.get(at).filter(|&&q| q == b'"' || q == b'\'').copied();
    if let Some(q) = quote {
        let n = run_len(bytes, at + 1, |b| b != q && b != b'\n');
        if n > 0 && bytes.get(at + 1 + n) == Some(&q) {
            return Some((at + 1 - i, at + 1 - i + n));
        }
        at += 1;
    }
    let n = run_len(bytes, at, |b| {
        !b.is_ascii_whitespace() && !matches!(b, b'"' | b'\'' | b'&' | b';' | b',')
    });
    // A sentence's full stop is not part of the password.
    let value = &bytes[at..at + n];
    let n = value
        .iter()
        .rposition(|b| !matches!(b, b'.' | b'!' | b'?' | b')'))
        .map_or(0, |last| last + 1);
    if n == 0 || is_common_word(&value[..n]) {
        return None;
    }
    // `the wifi pass is guest2024`, not `the day pass is 5 EUR`.
    if kind == Some(Announces::Tight) && !reads_like_password(&value[..n]) {
        return None;
    }
    Some((at - i, at - i + n))
}
