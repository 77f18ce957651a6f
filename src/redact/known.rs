//! Credentials of a known shape: ours (API keys, webhook signing secrets, argon2 hashes, JWTs,
//! `Bearer` values) and the well-known ones an integrator pastes by mistake (GitHub, Stripe, AWS,
//! Slack, Google, GitLab, npm tokens, PEM private keys, a password in a URL).

use super::pattern::{run_len, starts_with_ci, word_start, Hit, Match};

fn is_b64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

pub fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

fn is_sep(b: u8) -> bool {
    b == b'_' || b == b'-'
}

/// Our API key at `i`: `sgn_test_<KID>_<secret>` (or `sgn_live_`), also written with dashes
/// (`sgn-test-…`). `sgn_test_<KID>` alone is the key's public prefix (REST `GET /me` shows it): a
/// [`Hit::Public`], so no other pattern takes its key id for a secret.
fn api_key(bytes: &[u8], i: usize) -> Option<Hit> {
    if !starts_with_ci(bytes, i, b"sgn") || !bytes.get(i + 3).copied().is_some_and(is_sep) {
        return None;
    }
    let mode = i + 4;
    if !(starts_with_ci(bytes, mode, b"test") || starts_with_ci(bytes, mode, b"live")) {
        return None;
    }
    if !bytes.get(mode + 4).copied().is_some_and(is_sep) {
        return None;
    }
    let kid_at = mode + 5;
    let kid = run_len(bytes, kid_at, |b| b.is_ascii_alphanumeric());
    if kid == 0 {
        return None;
    }
    let after = kid_at + kid;
    let secret = if bytes.get(after).copied().is_some_and(is_sep) {
        run_len(bytes, after + 1, |b| b.is_ascii_alphanumeric() || is_sep(b))
    } else {
        0
    };
    // Any part of the secret after the key id makes it a key.
    if secret > 0 {
        Some(Hit::Secret((0, after + 1 + secret - i)))
    } else {
        Some(Hit::Public(after - i))
    }
}

/// The length of our webhook secret's random part (after `whsec_`).
const WHSEC_BODY: usize = 32;

/// The credential of a known shape at `i`, wherever it starts (glued to a word too): a JWT, one
/// of our API keys, a webhook signing secret, an argon2 hash, a `Bearer` value.
pub fn credential_at(bytes: &[u8], i: usize) -> Option<Hit> {
    let first = bytes[i].to_ascii_lowercase();
    // A compact JWS: three base64url parts; the header always starts `eyJ` (`{"`).
    if bytes[i..].starts_with(b"eyJ") {
        let a = run_len(bytes, i, is_b64url);
        if bytes.get(i + a) == Some(&b'.') {
            let b = run_len(bytes, i + a + 1, is_b64url);
            if b > 0 && bytes.get(i + a + 1 + b) == Some(&b'.') {
                let c = run_len(bytes, i + a + b + 2, is_b64url);
                return Some(Hit::Secret((0, a + b + c + 2)));
            }
        }
        return None;
    }
    let len = match first {
        b's' => return api_key(bytes, i),
        b'w' if starts_with_ci(bytes, i, b"whsec")
            && bytes.get(i + 5).copied().is_some_and(is_sep) =>
        {
            let mut n = run_len(bytes, i + 6, is_token_char);
            // `whsec_…` (an ellipsis) names a secret without showing one.
            let body = &bytes[i + 6..i + 6 + n];
            if !body.iter().any(u8::is_ascii_alphanumeric) {
                return None;
            }
            // A secret split by spaces (`whsec_MfKQ9r8G KYqrTw…`): the pieces that follow while
            // it is shorter than a whole one (32 characters), each random-looking (a digit or
            // a capital after its first letter), not a word.
            while n < WHSEC_BODY {
                let gap = run_len(bytes, i + 6 + n, |b| matches!(b, b' ' | b'\t' | b'\n'));
                let from = i + 6 + n + gap;
                let piece = run_len(bytes, from, is_token_char);
                let p = &bytes[from..from + piece];
                let random = p.len() >= 4
                    && p.iter()
                        .skip(1)
                        .any(|b| b.is_ascii_digit() || b.is_ascii_uppercase());
                if gap == 0 || gap > 2 || !random || n + piece > WHSEC_BODY + 12 {
                    break;
                }
                n += gap + piece;
            }
            Some(6 + n)
        }
        b'$' if starts_with_ci(bytes, i, b"$argon2") => Some(
            7 + run_len(bytes, i + 7, |b| {
                b.is_ascii_alphanumeric()
                    || matches!(b, b'$' | b'=' | b',' | b'.' | b'+' | b'/' | b'_' | b'-')
            }),
        ),
        b'b' if starts_with_ci(bytes, i, b"bearer") && word_start(bytes, i) => {
            let spaces = run_len(bytes, i + 6, |b| b == b' ' || b == b'\t');
            let from = i + 6 + spaces;
            let n = run_len(bytes, from, is_token_char);
            (spaces > 0 && token_shaped(&bytes[from..from + n])).then_some(6 + spaces + n)
        }
        _ => None,
    }?;
    Some(Hit::Secret((0, len)))
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

/// A token of another service, by its published prefix: `(prefix, case-sensitive, the body's
/// alphabet, the body's least length)`.
type Prefixed = (&'static [u8], bool, fn(u8) -> bool, usize);

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn alnum_underscore(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn upper_digit(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}

fn hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

pub(super) const PREFIXED: &[Prefixed] = &[
    // GitHub: personal, OAuth, user-to-server, server-to-server, refresh; fine-grained PAT.
    (b"ghp_", true, alnum, 30),
    (b"gho_", true, alnum, 30),
    (b"ghu_", true, alnum, 30),
    (b"ghs_", true, alnum, 30),
    (b"ghr_", true, alnum, 30),
    (b"github_pat_", true, alnum_underscore, 22),
    // Stripe secret and restricted keys (publishable `pk_` keys are public by design).
    (b"sk_live_", true, alnum, 10),
    (b"sk_test_", true, alnum, 10),
    (b"rk_live_", true, alnum, 10),
    (b"rk_test_", true, alnum, 10),
    // AWS access key ids (the secret key beside one is a random run: see `runs`).
    (b"AKIA", true, upper_digit, 16),
    (b"ASIA", true, upper_digit, 16),
    // Slack, Google API, GitLab, npm.
    (b"xoxb-", true, is_b64url, 11),
    (b"xoxp-", true, is_b64url, 11),
    (b"xoxa-", true, is_b64url, 11),
    (b"xoxr-", true, is_b64url, 11),
    (b"xoxs-", true, is_b64url, 11),
    (b"AIza", true, is_b64url, 30),
    (b"glpat-", true, is_b64url, 20),
    (b"npm_", true, alnum, 30),
    // Slack app-level tokens (`xapp-1-A…-…-<hex>`).
    (b"xapp-", true, is_b64url, 20),
    // Twilio API key sids (`SK` and 32 hex; an auth token is found by its account sid, below).
    (b"SK", true, hex, 32),
    // Mailgun API keys.
    (b"key-", true, alnum, 32),
    // Shopify access tokens, custom and private app tokens, shared secrets.
    (b"shpat_", true, hex, 32),
    (b"shpca_", true, hex, 32),
    (b"shppa_", true, hex, 32),
    (b"shpss_", true, hex, 32),
    // Hugging Face, Docker Hub, New Relic user keys.
    (b"hf_", true, alnum, 30),
    (b"dckr_pat_", true, is_b64url, 20),
    (b"NRAK-", true, upper_digit, 27),
    // OpenAI (`sk-proj-…`, `sk-svcacct-…`, legacy `sk-…`) and Anthropic (`sk-ant-api03-…`): the
    // whole key, `-` and `_` inside it too.
    (b"sk-", true, is_b64url, 20),
];

/// The first bytes of [`PREFIXED`]: a word start with none of them holds none of its tokens.
const PREFIX_FIRST: [bool; 256] = {
    let mut t = [false; 256];
    let mut k = 0;
    while k < PREFIXED.len() {
        t[PREFIXED[k].0[0] as usize] = true;
        k += 1;
    }
    t
};

/// A token with a published prefix at `i` (a word start): its length.
pub fn prefixed_at(bytes: &[u8], i: usize) -> Option<usize> {
    if !PREFIX_FIRST[usize::from(bytes[i])] {
        return None;
    }
    for &(prefix, exact, body, least) in PREFIXED {
        if prefix[0] != bytes[i] {
            continue;
        }
        let starts = if exact {
            bytes[i..].starts_with(prefix)
        } else {
            starts_with_ci(bytes, i, prefix)
        };
        if !starts {
            continue;
        }
        let n = run_len(bytes, i + prefix.len(), body);
        // The whole token or nothing: it must end where its alphabet ends.
        let ends = !bytes
            .get(i + prefix.len() + n)
            .is_some_and(|&b| b.is_ascii_alphanumeric());
        if n >= least && ends {
            return Some(prefix.len() + n);
        }
    }
    None
}

/// A password in a URL's user information, at the `:` of `scheme://`: `https://pos:Grocer2026@host`
/// keeps `://pos:` and hides `Grocer2026`.
pub fn url_password(bytes: &[u8], i: usize) -> Option<Match> {
    if !bytes[i..].starts_with(b"://") {
        return None;
    }
    let from = i + 3;
    // The authority runs to the path; its user information to its last `@`, so a user written
    // with an (encoded) `@` (`user%40corp:pw@host`) and a password holding `#` or `@`
    // (`user:pa#ss@host`) go whole.
    let authority = run_len(bytes, from, |b| {
        b.is_ascii_graphic() && !matches!(b, b'/' | b'?' | b'"' | b'\'' | b'<' | b'>' | b'\\')
    });
    let auth = &bytes[from..from + authority];
    let at = auth.iter().rposition(|&b| b == b'@')?;
    let colon = auth[..at].iter().position(|&b| b == b':')?;
    let start = from + colon + 1;
    let end = from + at;
    (end > start).then_some((start - i, end - i))
}

/// An Azure AD client secret at `i`: three characters, a digit, `Q~`, and 31 to 40 of
/// `[A-Za-z0-9_~.-]`.
pub fn azure_client_secret(bytes: &[u8], i: usize) -> Option<usize> {
    let head = bytes.get(i..i + 6)?;
    if !(head[3].is_ascii_digit() && &head[4..6] == b"Q~") {
        return None;
    }
    let lead = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'~' | b'.');
    if !head[..3].iter().all(|&b| lead(b)) {
        return None;
    }
    let n = run_len(bytes, i + 6, |b| {
        b.is_ascii_alphanumeric() || matches!(b, b'_' | b'~' | b'.' | b'-')
    });
    (n >= 31).then_some(6 + n)
}

/// A Twilio auth token after its account sid (`AC` and 32 hex) on the same line: `AC…:token`,
/// `AC… / token`, `AC… auth token: token`. The sid and what stands between stay; the token
/// (32 hex) goes.
pub fn twilio_auth_token(bytes: &[u8], i: usize) -> Option<Match> {
    if !bytes[i..].starts_with(b"AC") || run_len(bytes, i + 2, hex) != 32 {
        return None;
    }
    let mut at = i + 34;
    let limit = (at + 48).min(bytes.len());
    while at < limit && bytes[at] != b'\n' {
        if !bytes[at - 1].is_ascii_alphanumeric() {
            let n = run_len(bytes, at, hex);
            if n == 32 && !bytes.get(at + n).is_some_and(u8::is_ascii_alphanumeric) {
                return Some((at - i, at + n - i));
            }
        }
        at += 1;
    }
    None
}

/// A PEM private key at `i`: from `-----BEGIN … PRIVATE KEY-----` to the end of its `-----END`
/// line (or of the text).
pub fn private_key_block(bytes: &[u8], i: usize) -> Option<usize> {
    if !bytes[i..].starts_with(b"-----BEGIN ") {
        return None;
    }
    let header = run_len(bytes, i + 11, |b| b.is_ascii_uppercase() || b == b' ');
    if !bytes[i + 11..i + 11 + header].ends_with(b"PRIVATE KEY") {
        return None;
    }
    let rest = &bytes[i..];
    let end = rest
        .windows(8)
        .position(|w| w == b"-----END")
        .map(|at| {
            let tail = at + 8;
            let dashes = rest[tail..]
                .windows(5)
                .position(|w| w == b"-----")
                .map_or(rest.len() - tail, |d| d + 5);
            tail + dashes
        })
        .unwrap_or(rest.len());
    Some(end)
}
