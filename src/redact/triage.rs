//! One pass over a text before the patterns: whether it can hold a secret at all, and whether it
//! must be folded first. Most text (names, headlines, slugs) is done here, at a few instructions a
//! byte.
//!
//! Every pattern needs at least one of: an `=`, `:`, `$`, `@` or quote (assignments, a URL's
//! password, argon2, quoted JSON); a base64 run of 16 or more characters holding an upper-case
//! letter or `_` (encoded credentials, random runs, tokens with a `_` prefix, AWS key ids; base64
//! of a credential always holds an upper-case letter, which the corpus checks: it encodes every
//! whole secret), and, when it is shorter than [`SHAPED_RUN`] and has no `_`, whose first four
//! characters may decode to text; or one of the [`KEYWORDS`]. An escape or a character that folds sends the text
//! to the folded view, where all of this is looked for again.

use super::pattern::starts_with_ci;
use super::{fold, runs};

/// What a text needs before the patterns are run over it.
#[derive(PartialEq, Eq, Debug)]
pub enum Triage {
    /// Nothing any pattern needs is in it: no secret.
    Clean,
    /// Scan it as it is.
    Plain,
    /// It holds an escape or a character that folds: scan its folded view ([`super::fold`]).
    Fold,
}

/// Words (lower case) a pattern needs where nothing else in the text would send it to the
/// patterns: a JWT's header, our key and secret prefixes, `Bearer`, `Basic`, the password words of
/// `password is x`, a PEM block, and the token prefixes written with `-`.
pub const KEYWORDS: &[&[u8]] = &[
    b"eyj",
    b"sgn",
    b"whsec",
    b"bearer",
    b"basic",
    b"pass",
    b"pwd",
    b"-----",
    b"xox",
    b"glpat",
    // Password words of other languages written from ASCII letters ([`super::words`]), the
    // commands that take a password, and token prefixes without `_` or an upper-case letter.
    b"kennw",
    b"wlan-s",
    b"wifi-s",
    b"wachtw",
    b"contras",
    b"clave",
    b"senha",
    b"has\xc5\x82",
    b"has\xc5\x81",
    b"haslo",
    b"parola",
    b"mdp",
    b"code wi",
    b"zugangsc",
    b"mysql",
    b"key-",
    b"sk-",
    b"xapp",
];

/// Password words beyond ASCII ([`super::words`]), in the cases they are written in: a text
/// that holds a character beyond ASCII is searched for them.
const WORDS_BEYOND_ASCII: &[&str] = &[
    "ароль",
    "АРОЛЬ",
    "パスワード",
    "暗証番号",
    "密码",
    "密碼",
    "口令",
    "كلمة",
    "ifre",
    "IFRE",
    "senord",
    "SENORD",
    "비밀번호",
];

const BASE64: u8 = 1;
/// An upper-case letter or `_`: what makes a base64 run worth the patterns.
const MARKS_RUN: u8 = 2;
const TRIGGER: u8 = 4;
/// The first byte of a keyword (either case).
const KEYWORD: u8 = 8;
const ESCAPE: u8 = 16;
const NON_ASCII: u8 = 32;

/// Each byte's classes.
const CLASSES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let mut k = 0;
        if c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_' | b'=') {
            k |= BASE64;
        }
        if c.is_ascii_uppercase() || c == b'_' {
            k |= MARKS_RUN;
        }
        // `~`: an Azure client secret (`…8Q~…`).
        if matches!(c, b'=' | b':' | b'$' | b'@' | b'"' | b'\'' | b'~') {
            k |= TRIGGER;
        }
        let mut w = 0;
        while w < KEYWORDS.len() {
            if c.to_ascii_lowercase() == KEYWORDS[w][0] {
                k |= KEYWORD;
            }
            w += 1;
        }
        if matches!(c, b'%' | b'\\' | b'&') {
            k |= ESCAPE;
        }
        if c >= 0x80 {
            k |= NON_ASCII;
        }
        t[b] = k;
        b += 1;
    }
    t
};

/// See the module's documentation. One tight pass collects the classes the text holds at all and
/// whether two neighbouring bytes may begin a keyword ([`PAIRS`]); only what those call for
/// (escapes, keywords, long runs) is looked at again, so most text costs a few instructions a
/// byte.
pub fn triage(s: &str) -> Triage {
    let mut all = 0u8;
    let mut pairs = 0u32;
    let mut prev = 0usize;
    for &b in s.as_bytes() {
        all |= CLASSES[usize::from(b)];
        let code = b & 0x1f;
        pairs |= PAIRS[prev] >> code;
        prev = usize::from(code);
    }
    verdict(s, all, pairs)
}

/// [`triage`] of the JSON string whose text starts at `from` in `doc` (just after its opening
/// quote), in the same pass that finds its closing quote: the quote's position and the triage of
/// the text before it. `None` when a backslash comes first (an escaped string is decoded before it
/// is triaged) or the string does not end.
#[inline]
pub fn triage_quoted(doc: &str, from: usize) -> Option<(usize, Triage)> {
    let rest = doc.as_bytes().get(from..)?;
    let mut all = 0u8;
    let mut pairs = 0u32;
    let mut prev = 0usize;
    let mut end = None;
    for (k, &b) in rest.iter().enumerate() {
        if matches!(b, b'"' | b'\\') {
            end = Some(k);
            break;
        }
        all |= CLASSES[usize::from(b)];
        let code = b & 0x1f;
        pairs |= PAIRS[prev] >> code;
        prev = usize::from(code);
    }
    let end = from + end?;
    if doc.as_bytes()[end] != b'"' {
        return None;
    }
    Some((end, verdict(doc.get(from..end)?, all, pairs)))
}

/// The triage of `s` from what one pass over it collected: `all`, its bytes' classes, and `pairs`,
/// whose lowest bit says whether two neighbouring bytes may begin a keyword.
fn verdict(s: &str, all: u8, pairs: u32) -> Triage {
    let bytes = s.as_bytes();
    let class_at = |i: usize| CLASSES[usize::from(bytes[i])];
    if all & ESCAPE != 0
        && (0..bytes.len()).any(|i| class_at(i) & ESCAPE != 0 && escape_at(bytes, i))
    {
        return Triage::Fold;
    }
    if all & NON_ASCII != 0 && s.chars().any(fold::folds) {
        return Triage::Fold;
    }
    // The two shapes most of a result's strings have, which no pattern can find anything in
    // though they hold a `:` or a long marked run: our own ids and RFC 3339 instants.
    if minted_id(bytes) || instant(bytes) {
        return Triage::Clean;
    }
    let can_hold = all & TRIGGER != 0
        || (pairs & 1 != 0
            && (0..bytes.len()).any(|i| class_at(i) & KEYWORD != 0 && keyword_at(bytes, i)))
        || (bytes.len() >= 16 && all & MARKS_RUN != 0 && marked_run(bytes))
        || (all & NON_ASCII != 0 && WORDS_BEYOND_ASCII.iter().any(|w| s.contains(w)));
    if can_hold {
        Triage::Plain
    } else {
        Triage::Clean
    }
}

/// An id exactly as [`crate::ids::new_id`] mints it: a kind's prefix, `_`, 20 base-36 characters
/// (lower case). No vendor's token has that shape under one of our prefixes, and a test mutates
/// ids byte by byte to hold what is left out to what the patterns find.
pub fn minted_id(bytes: &[u8]) -> bool {
    let Some(cut) = bytes.len().checked_sub(21) else {
        return false;
    };
    bytes[cut] == b'_'
        && bytes[cut + 1..]
            .iter()
            .all(|&b| b.is_ascii_digit() || b.is_ascii_lowercase())
        && std::str::from_utf8(&bytes[..cut]).is_ok_and(crate::ids::Kind::is_prefix)
}

/// An instant as the API writes it, `2026-01-21T17:06:00Z`, with or without a fraction of a
/// second: digits and fixed punctuation only.
fn instant(bytes: &[u8]) -> bool {
    const SHAPE: &[u8; 19] = b"dddd-dd-ddTdd:dd:dd";
    let (true, Some(head), Some(&b'Z')) = (bytes.len() >= 20, bytes.get(..19), bytes.last()) else {
        return false;
    };
    let fraction = &bytes[19..bytes.len() - 1];
    head.iter().zip(SHAPE).all(|(&b, &s)| {
        if s == b'd' {
            b.is_ascii_digit()
        } else {
            b == s
        }
    }) && (fraction.is_empty()
        || (fraction.len() <= 10
            && fraction[0] == b'.'
            && fraction.len() > 1
            && fraction[1..].iter().all(u8::is_ascii_digit)))
}

/// The shortest base64 run without `_` that holds a credential of a known shape other than by its
/// keyword (an AWS key id: `AKIA` and 16 more) or is random-looking ([`runs::MIN_RANDOM`]); a
/// shorter one is a secret only as base64 of text. A test holds this to the known shapes.
pub const SHAPED_RUN: usize = 20;

/// Whether a base64 run of 16 or more characters holds an upper-case letter or `_`, and could
/// hide a secret: it holds `_`, it has [`SHAPED_RUN`] characters or more, or it may decode to text
/// ([`runs::may_decode_to_text`]: `Europe/Amsterdam` cannot).
fn marked_run(bytes: &[u8]) -> bool {
    let may_hide = |run: &[u8]| {
        run.len() >= runs::MIN_ENCODED
            && (run.len() >= SHAPED_RUN || run.contains(&b'_') || runs::may_decode_to_text(run))
    };
    let (mut start, mut marked) = (0usize, false);
    for (i, &b) in bytes.iter().enumerate() {
        let class = CLASSES[usize::from(b)];
        if class & BASE64 != 0 {
            marked |= class & MARKS_RUN != 0;
        } else {
            if marked && may_hide(&bytes[start..i]) {
                return true;
            }
            (start, marked) = (i + 1, false);
        }
    }
    marked && may_hide(&bytes[start..])
}

/// For the low five bits of a byte, the low five bits of the bytes that may follow it at the start
/// of a keyword, as bits: a superset of [`KEYWORD_PAIRS`] (the five bits ignore case and mix a few
/// characters, `-` with `m`), so a text with no such pair holds no keyword, and one with a pair is
/// looked at whole.
const PAIRS: [u32; 32] = {
    let mut t = [0u32; 32];
    let mut k = 0;
    while k < KEYWORDS.len() {
        t[(KEYWORDS[k][0] & 0x1f) as usize] |= 1u32 << (KEYWORDS[k][1] & 0x1f);
        k += 1;
    }
    t
};

fn escape_at(bytes: &[u8], i: usize) -> bool {
    if bytes[i] == b'%' {
        fold::percent_at(bytes, i).is_some() || fold::percent_utf8_at(bytes, i).is_some()
    } else {
        fold::escape_at(bytes, i).is_some()
    }
}

/// For each first byte (lower case), the second bytes (lower case) a keyword starts with, as
/// bits: most letters a keyword starts with ("s", "p", "b") are followed by none of them.
const KEYWORD_PAIRS: [u128; 128] = {
    let mut t = [0u128; 128];
    let mut k = 0;
    while k < KEYWORDS.len() {
        t[KEYWORDS[k][0] as usize] |= 1u128 << KEYWORDS[k][1];
        k += 1;
    }
    t
};

/// Whether one of [`KEYWORDS`] starts at `i`: by its first two bytes, then whole.
fn keyword_at(bytes: &[u8], i: usize) -> bool {
    let first = usize::from(bytes[i] | 0x20);
    let Some(second) = bytes.get(i + 1).map(|b| b | 0x20) else {
        return false;
    };
    if first >= 128 || second >= 128 || KEYWORD_PAIRS[first] >> second & 1 == 0 {
        return false;
    }
    // Only the keywords that start with this byte: a word of a company's name ("Pharmacy")
    // passes the pair filter often, and the whole list (30 words, growing with each language)
    // cost a thousand instructions a name.
    let mut candidates = KEYWORDS_BY_FIRST[first];
    while candidates != 0 {
        let k = KEYWORDS[candidates.trailing_zeros() as usize];
        candidates &= candidates - 1;
        if k[1] == second && starts_with_ci(bytes, i, k) {
            return true;
        }
    }
    false
}

/// For each first byte (lower case), the [`KEYWORDS`] that start with it, as bits of their
/// indexes.
const KEYWORDS_BY_FIRST: [u64; 128] = {
    assert!(KEYWORDS.len() <= 64, "KEYWORDS_BY_FIRST holds 64 keywords");
    let mut t = [0u64; 128];
    let mut k = 0;
    while k < KEYWORDS.len() {
        t[KEYWORDS[k][0] as usize] |= 1u64 << k;
        k += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_can_hold_a_secret_goes_to_the_patterns() {
        assert_eq!(triage("Northwind Pharmacy"), Triage::Clean);
        assert_eq!(triage("northwind-pharmacy"), Triage::Clean);
        assert_eq!(triage("Grüße aus Hamburg"), Triage::Clean);
        assert_eq!(triage("AT&T 100% sure"), Triage::Clean);
        // A run of 16 to 19 characters without `_` that cannot decode to text.
        assert_eq!(triage("Europe/Amsterdam"), Triage::Clean);
        assert_eq!(triage("Australia/Sydney"), Triage::Clean);
        assert_eq!(triage("Europe/Amsterdamm"), Triage::Clean);
        assert_eq!(triage("Europe/Amsterdam12"), Triage::Clean);
        assert_eq!(triage("America/New_York"), Triage::Plain);
        assert_eq!(triage("Europe/Amsterdam123"), Triage::Clean);
        assert_eq!(triage("Europe/Amsterdam1234"), Triage::Plain);
        assert_eq!(triage("see cHdkPWh1bnRlcjJ4 now"), Triage::Plain);
        assert_eq!(triage("Open: 9-5"), Triage::Plain);
        assert_eq!(triage("the password is x"), Triage::Plain);
        assert_eq!(triage("Basic plan"), Triage::Plain);
        assert_eq!(triage("a&#98;"), Triage::Fold);
        assert_eq!(triage("100%25"), Triage::Fold);
        assert_eq!(triage(r"x\u200By"), Triage::Fold);
        assert_eq!(triage("é ＳＡＬＥ"), Triage::Fold);
        assert_eq!(triage("Northwind Pharmacy"), Triage::Clean);
        assert_eq!(triage("SGN"), Triage::Plain);
        assert_eq!(triage("-----"), Triage::Plain);
        assert_eq!(triage("mm-x"), Triage::Clean);
        // Our ids and instants, and what only looks like them.
        assert_eq!(triage("acct_0m5d4ruo0fb72isqzrb5"), Triage::Clean);
        assert_eq!(triage("2026-01-21T17:06:00Z"), Triage::Clean);
        assert_eq!(triage("2026-01-21T17:06:00.5Z"), Triage::Clean);
        assert_eq!(triage("shpat_0m5d4ruo0fb72isqzrb5"), Triage::Plain);
        assert_eq!(triage("acct_0m5d4ruo0fb72isqzrb5x"), Triage::Plain);
        assert_eq!(triage("acct_0m5d4ruo0fb72isqzrB5"), Triage::Plain);
        assert_eq!(triage("2026-01-21T17:06:00+01:00"), Triage::Plain);
        assert_eq!(triage("2026-01-21T17:06:00.Z"), Triage::Plain);
        // Every secret form of the corpus gets to the patterns.
        for (label, text, _) in crate::redact::corpus::secret_forms() {
            assert_ne!(triage(&text), Triage::Clean, "{label}");
        }
        // Every keyword, in any case and at any place, is found by its first two bytes.
        for k in KEYWORDS {
            let upper = String::from_utf8(k.to_ascii_uppercase()).unwrap();
            let lower = String::from_utf8(k.to_vec()).unwrap();
            for w in [&upper, &lower] {
                for text in [w.clone(), format!("a {w}"), format!("xy{w} z")] {
                    assert_eq!(triage(&text), Triage::Plain, "{text}");
                }
            }
        }
    }

    #[test]
    fn a_short_run_is_left_out_only_where_no_shape_fits() {
        // Every credential of a known shape that needs no keyword holds `_` or is long.
        for &(prefix, _, _, least) in crate::redact::known::PREFIXED {
            let keyword = KEYWORDS.iter().any(|k| prefix.starts_with(k));
            assert!(
                keyword || prefix.contains(&b'_') || prefix.len() + least >= SHAPED_RUN,
                "{}",
                String::from_utf8_lossy(prefix)
            );
        }
        const { assert!(runs::MIN_RANDOM >= SHAPED_RUN) };
    }

    #[test]
    fn no_published_token_prefix_is_one_of_our_id_prefixes() {
        // What lets `minted_id` skip the patterns: a token after one of these is never an id.
        for &(prefix, _, _, _) in crate::redact::known::PREFIXED {
            for kind in crate::ids::Kind::PREFIXES {
                let ours = format!("{kind}_");
                let theirs = String::from_utf8_lossy(prefix);
                assert!(
                    !ours.starts_with(&*theirs) && !theirs.starts_with(&ours),
                    "{theirs} and {ours}"
                );
            }
        }
    }

    #[test]
    fn a_text_left_out_holds_nothing_the_patterns_would_find() {
        let bases = [
            "Europe/Amsterdam",
            "Australia/Sydney",
            "Pacific/Auckland",
            "America/New_York",
            "AKIAIOSFODNN7EXAMPLE",
            "AKIAIOSFODNN7EXAMPL",
            "cHdkPWh1bnRlcjJ4",
            "c2duX3Rlc3RfYV9i",
            "cGFzcz1TdW5ueTI0",
            "dG9rZW49YWJjMTIzNDU=",
            "Z2hwX3g=Z2hwX3g=",
            "NorthwindSpring2026",
            "in Europe/Amsterdam today",
            "cmp_0m5d4ruo6ao6qd5rc9dx",
            "acct_0m5d4ruo0fb72isqzrb5",
            "key_0m5d4ruo0fb72isqzrb5",
            "2026-01-21T17:06:00Z",
            "2026-01-21T17:06:00.123Z",
        ];
        let mut left_out = 0;
        for base in bases {
            // Every byte at every place.
            for at in 0..base.len() {
                for b in 0..=255u8 {
                    let mut bytes = base.as_bytes().to_vec();
                    bytes[at] = b;
                    let Ok(text) = std::str::from_utf8(&bytes) else {
                        continue;
                    };
                    if triage(text) != Triage::Clean {
                        continue;
                    }
                    left_out += 1;
                    let mut spans = Vec::new();
                    crate::redact::text::collect_spans(
                        text.as_bytes(),
                        |a, b| (a, b),
                        &mut spans,
                        false,
                    );
                    assert!(spans.is_empty(), "{text:?} holds {spans:?}");
                }
            }
        }
        assert!(left_out > 1000, "{left_out}");
    }

    #[test]
    fn a_string_read_to_its_quote_is_triaged_as_the_text_alone() {
        let mut bases: Vec<String> = crate::redact::corpus::secret_forms()
            .into_iter()
            .map(|(_, t, _)| t)
            .collect();
        bases.extend(
            crate::redact::corpus::ordinary()
                .into_iter()
                .map(String::from),
        );
        bases.extend(["", "Europe/Amsterdam", "a\\u0041b", "x\"y", "Grüße"].map(String::from));
        let mut read = 0;
        for base in &bases {
            // Every byte at every place of the short texts (the long ones as they are).
            let places = if base.len() <= 40 { base.len() } else { 0 };
            let mut texts = vec![base.as_bytes().to_vec()];
            for at in 0..places {
                for b in 0..=255u8 {
                    let mut t = base.as_bytes().to_vec();
                    t[at] = b;
                    texts.push(t);
                }
            }
            for t in texts {
                let Ok(text) = std::str::from_utf8(&t) else {
                    continue;
                };
                let doc = format!("{{\"a\":\"{text}\",\"b\":1}}");
                let from = 6;
                let expected = match text.find(['"', '\\']) {
                    Some(k) if text.as_bytes()[k] == b'\\' => None,
                    Some(k) => Some((from + k, triage(&text[..k]))),
                    None => Some((from + text.len(), triage(text))),
                };
                assert_eq!(triage_quoted(&doc, from), expected, "{doc}");
                read += usize::from(expected.is_some());
            }
        }
        assert!(read > 10_000, "{read}");
        // A string that does not end, and one that ends at the document's end.
        assert_eq!(triage_quoted("\"abc", 1), None);
        assert_eq!(triage_quoted("\"abc\\", 1), None);
        assert_eq!(triage_quoted("\"abc\"", 1), Some((4, Triage::Clean)));
        assert_eq!(triage_quoted("\"", 1), None);
    }
}
