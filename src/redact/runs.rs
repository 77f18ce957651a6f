//! Runs of base64-alphabet characters that are secrets without saying so: base64 that decodes to
//! a credential (decoded here; the decoded text is scanned by [`super::scan::secret_run`]), and
//! random-looking runs (a webhook secret without its `whsec_`, a key's secret
//! part alone or split off, an AWS secret access key).
//!
//! A run is random-looking when it has at least [`MIN_RANDOM`] letters and digits, mixes upper
//! case, lower case and digits, changes between those classes often (in at least 30 % of its
//! neighbouring pairs) and has few word-like stretches (capitalised or lower-case words of four
//! letters or more, and numbers of four digits or more, cover at most half of it). Our secrets
//! (32 random base62 characters) pass about 99.7 % of the time; words run together
//! (`NorthwindSpringSale2026`, `Q3Sales2026Report`) and ids (`cmp_0mhh…`, `key_VECF…`) do not.

use super::pattern::Match;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::{alphabet, Engine};

/// Characters a base64 run may hold (both alphabets; padding).
pub(super) fn is_b64_any(b: u8) -> bool {
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
pub(super) fn decode_b64_into(run: &[u8], buf: &mut [u8; 96]) -> Option<usize> {
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
pub(super) const MAX_ENCODED: usize = 4096;
/// The fewest letters and digits a random-looking run has: shorter fragments are too often
/// words run together.
pub const MIN_RANDOM: usize = 24;

/// Public ids that look random: the links of public media and document hosts (a YouTube
/// playlist, a shared Drive file, a Google Maps place), whose ids are what a screen shows or
/// plays: `(the host or the end of its name, the path's start)`. A random-looking run inside such
/// a link is an id; a credential in it is still found by its shape or its name (`token=`).
const PUBLIC_ID_HOSTS: &[(&[u8], &[u8])] = &[
    (b"youtube.com", b""),
    (b"youtu.be", b""),
    (b"drive.google.com", b""),
    (b"docs.google.com", b""),
    (b"google.com", b"/maps"),
    (b"maps.app.goo.gl", b""),
    (b"vimeo.com", b""),
];

/// Query parameters whose value is a public media id (`list=PL…`, `v=…`, `place_id=ChIJ…`).
const PUBLIC_ID_PARAMS: &[&[u8]] = &[b"list", b"v", b"si", b"place_id", b"query_place_id"];

/// Prefixes of public ids written alone: a Google Place ID (`ChIJ…`).
const PUBLIC_ID_PREFIXES: &[&[u8]] = &[b"ChIJ"];

/// Whether the random-looking run at `i` (of `n` bytes) is a public id ([`PUBLIC_ID_HOSTS`]).
/// Asked only of a run that looks random, which few are.
pub(super) fn is_public_id(bytes: &[u8], i: usize, n: usize) -> bool {
    let run = &bytes[i..i + n];
    if PUBLIC_ID_PREFIXES.iter().any(|p| run.starts_with(p)) {
        return true;
    }
    if let Some(eq) = run.iter().position(|&b| b == b'=') {
        if PUBLIC_ID_PARAMS.iter().any(|p| &run[..eq] == *p) {
            return true;
        }
    }
    // The link the run is in: its `://` before the run, on the same word (at most 200 bytes).
    let from = i.saturating_sub(200);
    let before = &bytes[from..i];
    let Some(colon) = before
        .iter()
        .rposition(|&b| b == b':' || b.is_ascii_whitespace())
    else {
        return false;
    };
    if !before[colon..].starts_with(b"://") {
        return false;
    }
    let rest = &bytes[from + colon + 3..];
    let host_len = rest
        .iter()
        .position(|&b| matches!(b, b'/' | b'?' | b'#') || b.is_ascii_whitespace())
        .unwrap_or(rest.len());
    let (host, path) = rest.split_at(host_len);
    PUBLIC_ID_HOSTS.iter().any(|&(h, p)| {
        let named = host.len() >= h.len()
            && host[host.len() - h.len()..].eq_ignore_ascii_case(h)
            && (host.len() == h.len() || host[host.len() - h.len() - 1] == b'.');
        named && path.starts_with(p)
    })
}

/// Prefixes of the random identifiers the service itself shows besides its resource ids: an
/// MCP question, a webhook drill and its message, a request.
pub(super) const OTHER_ID_PREFIXES: &[&str] = &["elicit", "drl", "msg", "req"];

/// Whether a run is one of the service's own identifiers (`chg_<32 random>`, `key_<16>`): a known
/// prefix and `_`. A key (`sgn_…`) and a signing secret (`whsec_…`) were matched before this.
pub(super) fn is_our_id(run: &[u8]) -> bool {
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
pub(super) fn is_text(decoded: &[u8]) -> bool {
    decoded.len() >= 4 && std::str::from_utf8(decoded).is_ok_and(|t| !t.chars().any(is_unprintable))
}

/// A control character other than a line break or a tab: what printable text has none of.
fn is_unprintable(c: char) -> bool {
    c.is_control() && !matches!(c, '\n' | '\t')
}

/// Whether a base64 run may decode to text ([`is_text`]): its first four characters decode to
/// three bytes that can begin text (or one of them is padding). A run for which this is false is
/// a secret, if at all, only as a random run.
pub fn may_decode_to_text(run: &[u8]) -> bool {
    head(run).is_none_or(may_begin_text)
}

/// The six bits a base64 character stands for, the same in both alphabets (`+` and `-` are 62,
/// `/` and `_` are 63); `None` for padding.
fn sextet(b: u8) -> Option<u8> {
    match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    }
}

/// The first three bytes a base64 run decodes to, from its first four characters (base64 decodes
/// four characters at a time, each group on its own); `None` when one of them is padding.
fn head(run: &[u8]) -> Option<[u8; 3]> {
    let [a, b, c, d] = match run.get(..4)? {
        &[a, b, c, d] => [sextet(a)?, sextet(b)?, sextet(c)?, sextet(d)?],
        _ => return None,
    };
    Some([a << 2 | b >> 4, b << 4 | c >> 2, c << 6 | d])
}

/// Whether printable text ([`is_text`]) can begin with these three bytes: they are UTF-8, or
/// UTF-8 cut short inside its last character, and hold no control character but a line break or
/// a tab. A character cut short can always be completed printably (`C2` by `A0`, not only by the
/// controls `80`-`9F`), so only what the bytes already settle is held against them.
fn may_begin_text(head: [u8; 3]) -> bool {
    let settled = match std::str::from_utf8(&head) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => {
            match head.get(..e.valid_up_to()).map(std::str::from_utf8) {
                Some(Ok(t)) => t,
                _ => return true,
            }
        }
        Err(_) => return false,
    };
    !settled.chars().any(is_unprintable)
}

/// The random-looking part of a run, if any: the whole run when, with its separators left out,
/// it is random and none of its pieces is a lower-case word (an AWS secret key holds `/` and `+`);
/// else a piece between `_`, `-` or `/` that is random (the id in a link's path).
pub(super) fn random_part(run: &[u8]) -> Option<Match> {
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
    let chars_again = chars.clone();
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
    let random = n >= MIN_RANDOM
        && upper
        && lower
        && digit
        && changes * 100 >= 30 * (n - 1)
        && wordy * 100 <= 50 * n;
    random && !is_camel_phrase(chars_again)
}

fn is_vowel(b: u8) -> bool {
    matches!(b, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
}

/// Words run together in camel case, as product names are (`iPhone15ProMaxCase256GBBlack`,
/// `MacBookAir13M3Sleeve2024Grey`): every lower-case letter is in a capitalised word of three
/// letters or more with a vowel (or a first word in lower case: `iPhone`, `macbook`), between
/// numbers and short acronyms (`GB`), and there are three such words at least. A random run
/// almost never is one (its lower-case letters stand alone or after digits).
fn is_camel_phrase(chars: impl Iterator<Item = u8>) -> bool {
    let run: Vec<u8> = chars.collect();
    let mut words = 0;
    let mut k = 0;
    while k < run.len() {
        let b = run[k];
        if b.is_ascii_digit() {
            k += 1;
            continue;
        }
        let start = k;
        if b.is_ascii_lowercase() {
            let n = run[k..]
                .iter()
                .take_while(|b| b.is_ascii_lowercase())
                .count();
            // An ordinal after its number (`2nd`, `4th`).
            let after_digit = k > 0 && run[k - 1].is_ascii_digit();
            if after_digit && matches!(&run[k..k + n], b"st" | b"nd" | b"rd" | b"th") {
                k += n;
                continue;
            }
            // Only the run's first word may start in lower case.
            if start != 0 || (n == 2 || (n > 2 && !run[k..k + n].iter().any(|&b| is_vowel(b)))) {
                return false;
            }
            k += n;
            continue;
        }
        if !b.is_ascii_uppercase() {
            return false;
        }
        let caps = run[k..]
            .iter()
            .take_while(|b| b.is_ascii_uppercase())
            .count();
        let lows = run[k + caps..]
            .iter()
            .take_while(|b| b.is_ascii_lowercase())
            .count();
        if lows == 0 {
            // An acronym (`GB`, `M`).
            if caps > 4 {
                return false;
            }
        } else {
            let word = &run[k + caps - 1..k + caps + lows];
            if word.len() < 3 || !word[1..].iter().any(|&b| is_vowel(b)) || caps > 5 {
                return false;
            }
            words += 1;
        }
        k += caps + lows;
    }
    words >= 3
}

#[cfg(test)]
mod tests {
    use super::super::scan::{secret_run, secret_run_checked};
    use super::*;
    use base64::engine::general_purpose::STANDARD as B64;

    /// Every three bytes that begin some printable text, built from characters (each allowed
    /// character's UTF-8 encoding, by `char::encode_utf8`), not from a UTF-8 validator: a set of
    /// 2^24 flags.
    fn text_heads() -> Vec<bool> {
        let allowed: Vec<Vec<u8>> = (0..=u32::from(char::MAX))
            .filter_map(char::from_u32)
            .filter(|c| !is_unprintable(*c))
            .map(|c| c.to_string().into_bytes())
            .collect();
        let mut firsts = [false; 256];
        for e in &allowed {
            firsts[usize::from(e[0])] = true;
        }
        let firsts: Vec<u8> = (0..=255u8).filter(|b| firsts[usize::from(*b)]).collect();
        // The first two bytes of some text.
        let mut twos = std::collections::BTreeSet::new();
        for e in &allowed {
            match e.len() {
                1 => twos.extend(firsts.iter().map(|&f| [e[0], f])),
                _ => {
                    twos.insert([e[0], e[1]]);
                }
            }
        }
        let mut heads = vec![false; 1 << 24];
        let mut set = |h: [u8; 3]| {
            heads[usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2])] = true
        };
        for e in &allowed {
            match e.len() {
                1 => twos.iter().for_each(|t| set([e[0], t[0], t[1]])),
                2 => firsts.iter().for_each(|&f| set([e[0], e[1], f])),
                _ => set([e[0], e[1], e[2]]),
            }
        }
        heads
    }

    #[test]
    fn the_check_before_decoding_refuses_exactly_what_cannot_begin_text() {
        let heads = text_heads();
        let mut refused = 0usize;
        for (k, &begins_text) in heads.iter().enumerate() {
            let h = [(k >> 16) as u8, (k >> 8) as u8, k as u8];
            assert_eq!(may_begin_text(h), begins_text, "{h:02x?}");
            refused += usize::from(!begins_text);
        }
        // What it is for: most random bytes are refused at once.
        assert!(refused * 100 > heads.len() * 85, "{refused}");
        // Every text of the corpus, secrets and ordinary copy, begins with a head it lets through.
        let ordinary = crate::redact::corpus::ordinary()
            .into_iter()
            .map(String::from);
        let forms = crate::redact::corpus::secret_forms().into_iter();
        for text in forms
            .flat_map(|(_, t, _)| [t.clone(), bare(&t).to_string()])
            .chain(ordinary)
        {
            if let Some(&[a, b, c]) = text.as_bytes().get(..3) {
                assert!(may_begin_text([a, b, c]), "{text}");
            }
        }
    }

    #[test]
    fn the_first_group_is_decoded_as_the_decoder_does() {
        let alphabet: Vec<u8> = (0..=255u8).filter(|&b| is_b64_any(b)).collect();
        let stds = |b: u8| match b {
            b'-' => b'+',
            b'_' => b'/',
            b => b,
        };
        // Each character at each place of a group, the others fixed: decoding works bit by bit.
        for fill in [b'A', b'/', b'z', b'9'] {
            for at in 0..4 {
                for &c in &alphabet {
                    let mut group = [fill; 4];
                    group[at] = c;
                    let decoded = B64.decode(group.map(stds)).ok();
                    match head(&group) {
                        Some(h) => assert_eq!(decoded.as_deref(), Some(&h[..]), "{group:?}"),
                        None => assert!(group.contains(&b'=')),
                    }
                }
            }
        }
    }

    /// A corpus form without the sentence around it.
    fn bare(form: &str) -> &str {
        form.strip_prefix("see ")
            .and_then(|t| t.strip_suffix(" now"))
            .unwrap_or(form)
    }

    /// Runs whose decision turns on their first group: encodings of secrets and of text, random
    /// runs, and the names of time zones.
    fn runs() -> Vec<Vec<u8>> {
        let mut runs: Vec<Vec<u8>> = [
            "Europe/Amsterdam",
            "America/Argentina/Buenos_Aires",
            "NorthwindSpringSale2026xx",
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "cGFzc3dvcmQ9aHVudGVyMg==",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        // Each secret encoded alone (the form written in a sentence begins `see `).
        // (At most 192 characters of each: what is judged here is a run's first group, and the
        // longest forms, a key percent-encoded, would make the test's cost grow with their square.)
        for (_, text, _) in crate::redact::corpus::secret_forms() {
            let mut run = B64.encode(bare(&text)).into_bytes();
            run.truncate(192);
            runs.push(run);
        }
        runs.sort();
        runs.dedup();
        runs
    }

    #[test]
    fn the_check_before_decoding_never_passes_over_what_decoding_would_catch() {
        let mut caught = 0;
        for run in runs() {
            // Every byte at each place of the first group.
            for at in 0..4 {
                for b in 0..=255u8 {
                    let mut bytes = b" ".to_vec();
                    bytes.extend_from_slice(&run);
                    bytes[1 + at] = b;
                    bytes.push(b' ');
                    for i in 0..bytes.len() {
                        let general = secret_run_checked(&bytes, i, false);
                        assert_eq!(
                            secret_run(&bytes, i),
                            general,
                            "{:?} at {i}",
                            String::from_utf8_lossy(&bytes)
                        );
                        caught += usize::from(general.is_some());
                    }
                }
            }
        }
        assert!(caught > 1000, "{caught}");
    }
}
