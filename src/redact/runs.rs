//! Runs of base64-alphabet characters that are secrets without saying so: base64 that decodes to
//! a credential, and random-looking runs (a webhook secret without its `whsec_`, a key's secret
//! part alone or split off, an AWS secret access key).
//!
//! A run is random-looking when it has at least [`MIN_RANDOM`] letters and digits, mixes upper
//! case, lower case and digits, changes between those classes often (in at least 30 % of its
//! neighbouring pairs) and has few word-like stretches (capitalised or lower-case words of four
//! letters or more, and numbers of four digits or more, cover at most half of it). Our secrets
//! (32 random base62 characters) pass about 99.7 % of the time; words run together
//! (`NorthwindSpringSale2026`, `Q3Sales2026Report`) and ids (`cmp_0mhh…`, `key_VECF…`) do not.

use super::scan::{run_len, Match};
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::{alphabet, Engine};

/// Characters a base64 run may hold (both alphabets; padding).
fn is_b64_any(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_' | b'=')
}

/// Lenient base64: either padding, non-zero trailing bits.
const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_decode_padding_mode(DecodePaddingMode::Indifferent)
    .with_decode_allow_trailing_bits(true);
const STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);

/// `run` decoded as base64 (standard or URL-safe alphabet), if it is base64.
pub fn decode_b64(run: &[u8]) -> Option<Vec<u8>> {
    let url = run.iter().any(|b| matches!(b, b'-' | b'_'));
    let std = run.iter().any(|b| matches!(b, b'+' | b'/'));
    match (std, url) {
        (true, true) => None,
        (_, true) => URL_SAFE.decode(run).ok(),
        _ => STANDARD.decode(run).ok(),
    }
}

/// [`decode_b64`] into `buf` (a run of up to 128 characters decodes to at most 96 bytes): the
/// decoded length.
fn decode_b64_into(run: &[u8], buf: &mut [u8; 96]) -> Option<usize> {
    let url = run.iter().any(|b| matches!(b, b'-' | b'_'));
    let std = run.iter().any(|b| matches!(b, b'+' | b'/'));
    match (std, url) {
        (true, true) => None,
        (_, true) => URL_SAFE.decode_slice(run, buf).ok(),
        _ => STANDARD.decode_slice(run, buf).ok(),
    }
}

/// The shortest base64 run checked for an encoded credential (`sgn_test_a_b` encodes to 16).
pub const MIN_ENCODED: usize = 16;
/// Longer runs (a JWT's body, an image) are not decoded: no credential of ours is this long.
const MAX_ENCODED: usize = 4096;
/// The fewest letters and digits a random-looking run has: shorter fragments are too often
/// words run together.
pub const MIN_RANDOM: usize = 24;

/// A secret run starting at `i` (at a run's start only): base64 of a credential (the whole run)
/// or random-looking text (the random part).
pub fn secret_run(bytes: &[u8], i: usize) -> Option<Match> {
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
    if n <= MAX_ENCODED {
        // Only text can hold a credential; random bytes (what most runs decode to) cannot.
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
    random_part(run)
}

/// Prefixes of the random identifiers the service itself shows besides its resource ids: an
/// MCP question, a webhook drill and its message, a request.
pub(super) const OTHER_ID_PREFIXES: &[&str] = &["elicit", "drl", "msg", "req"];

/// Whether a run is one of the service's own identifiers (`chg_<32 random>`, `key_<16>`): a known
/// prefix and `_`. A key (`sgn_…`) and a signing secret (`whsec_…`) were matched before this.
fn is_our_id(run: &[u8]) -> bool {
    let Some(sep) = run.iter().position(|&b| b == b'_') else {
        return false;
    };
    let prefix = &run[..sep];
    crate::ids::Kind::PREFIXES
        .iter()
        .chain(OTHER_ID_PREFIXES)
        .any(|p| p.as_bytes() == prefix)
}

/// Whether decoded bytes are printable text (random bytes almost never are).
fn is_text(decoded: &[u8]) -> bool {
    decoded.len() >= 4
        && std::str::from_utf8(decoded).is_ok_and(|t| {
            !t.chars()
                .any(|c| c.is_control() && !matches!(c, '\n' | '\t'))
        })
}

/// Whether decoded bytes hold a secret (folded, so an encoded fullwidth or zero-width form
/// counts too; the decoded text is shorter, so this ends).
fn holds_credential(decoded: &[u8]) -> bool {
    let text = String::from_utf8_lossy(decoded);
    let f = super::fold::fold(&text);
    (0..f.bytes.len()).any(|j| {
        matches!(
            super::scan::secret_at(&f.bytes, j),
            Some(super::scan::Hit::Secret(_))
        )
    })
}

/// The random-looking part of a run, if any: the whole run when, with its separators left out,
/// it is random and none of its pieces is a lower-case word (an AWS secret key holds `/` and `+`);
/// else a piece between `_`, `-` or `/` that is random (the id in a link's path).
fn random_part(run: &[u8]) -> Option<Match> {
    // Neither the run nor a piece of it can hold [`MIN_RANDOM`] letters and digits.
    if run.len() < MIN_RANDOM {
        return None;
    }
    let whole = run.iter().copied().filter(|b| b.is_ascii_alphanumeric());
    let plain_piece = run
        .split(|b| matches!(b, b'_' | b'-' | b'/' | b'+' | b'='))
        .any(|p| p.len() >= 3 && p.iter().all(u8::is_ascii_lowercase));
    if !plain_piece && looks_random(whole) {
        return Some((0, run.len()));
    }
    let mut start = 0;
    for (k, &b) in run
        .iter()
        .enumerate()
        .chain(std::iter::once((run.len(), &b'_')))
    {
        if matches!(b, b'_' | b'-' | b'/') {
            let piece = &run[start..k];
            if piece.len() < MIN_RANDOM {
                start = k + 1;
                continue;
            }
            let core = piece.len() - piece.iter().rev().take_while(|&&b| b == b'=').count();
            if looks_random(piece[..core].iter().copied()) {
                return Some((start, k));
            }
            start = k + 1;
        }
    }
    None
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Upper,
    Lower,
    Digit,
    Other,
}

fn class(b: u8) -> Class {
    match b {
        b'A'..=b'Z' => Class::Upper,
        b'a'..=b'z' => Class::Lower,
        b'0'..=b'9' => Class::Digit,
        _ => Class::Other,
    }
}

/// See the module's documentation.
pub fn looks_random(chars: impl Iterator<Item = u8> + Clone) -> bool {
    let mut n = 0usize;
    let (mut upper, mut lower, mut digit) = (false, false, false);
    let mut changes = 0usize;
    let mut prev = Class::Other;
    // Word-like stretches: a lower-case run (after an optional capital) or a digit run.
    let mut wordy = 0usize;
    let mut stretch = 0usize;
    let mut stretch_class = Class::Other;
    // A stretch counts when it has four lower-case letters or four digits (a capital before
    // the letters counts in its length).
    let close = |stretch: usize, capital: bool, class: Class, wordy: &mut usize| {
        if stretch - usize::from(capital) >= 4 && class != Class::Other {
            *wordy += stretch;
        }
    };
    let mut capital = false;
    for b in chars {
        let c = class(b);
        n += 1;
        match c {
            Class::Upper => upper = true,
            Class::Lower => lower = true,
            Class::Digit => digit = true,
            Class::Other => {}
        }
        if n > 1 && c != prev {
            changes += 1;
        }
        // A capital starts a word whose letters follow in lower case.
        let continues = match (stretch_class, c) {
            (Class::Lower, Class::Lower) | (Class::Digit, Class::Digit) => true,
            (Class::Upper, Class::Lower) if stretch == 1 => {
                stretch_class = Class::Lower;
                capital = true;
                true
            }
            _ => false,
        };
        if continues {
            stretch += 1;
        } else {
            close(stretch, capital, stretch_class, &mut wordy);
            stretch = 1;
            stretch_class = c;
            capital = false;
        }
        prev = c;
    }
    close(stretch, capital, stretch_class, &mut wordy);
    n >= MIN_RANDOM
        && upper
        && lower
        && digit
        && changes * 100 >= 30 * (n - 1)
        && wordy * 100 <= 50 * n
}
