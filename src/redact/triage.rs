//! One pass over a text before the patterns: whether it can hold a secret at all, and whether it
//! must be folded first. Most text (names, headlines, slugs) is done here, at a few instructions a
//! byte.
//!
//! Every pattern needs at least one of: an `=`, `:`, `$`, `@` or quote (assignments, a URL's
//! password, argon2, quoted JSON); a base64 run of 16 or more characters holding an upper-case
//! letter or `_` (encoded credentials, random runs, tokens with a `_` prefix, AWS key ids; base64
//! of a credential always holds an upper-case letter, which the corpus checks: it encodes every
//! whole secret); or one of the [`KEYWORDS`]. An escape or a character that folds sends the text
//! to the folded view, where all of this is looked for again.

use super::fold;
use super::scan::starts_with_ci;

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
    b"eyj", b"sgn", b"whsec", b"bearer", b"basic", b"pass", b"pwd", b"-----", b"xox", b"glpat",
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
        if matches!(c, b'=' | b':' | b'$' | b'@' | b'"' | b'\'') {
            k |= TRIGGER;
        }
        if matches!(c | 0x20, b'e' | b's' | b'w' | b'b' | b'p' | b'x' | b'g') || c == b'-' {
            k |= KEYWORD;
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
    let bytes = s.as_bytes();
    let mut all = 0u8;
    let mut pairs = 0u32;
    let mut prev = 0usize;
    for &b in bytes {
        all |= CLASSES[usize::from(b)];
        let code = b & 0x1f;
        pairs |= PAIRS[prev] >> code;
        prev = usize::from(code);
    }
    let class_at = |i: usize| CLASSES[usize::from(bytes[i])];
    if all & ESCAPE != 0
        && (0..bytes.len()).any(|i| class_at(i) & ESCAPE != 0 && escape_at(bytes, i))
    {
        return Triage::Fold;
    }
    if all & NON_ASCII != 0 && s.chars().any(fold::folds) {
        return Triage::Fold;
    }
    let can_hold = all & TRIGGER != 0
        || (pairs & 1 != 0
            && (0..bytes.len()).any(|i| class_at(i) & KEYWORD != 0 && keyword_at(bytes, i)))
        || (bytes.len() >= 16 && all & MARKS_RUN != 0 && marked_run(bytes));
    if can_hold {
        Triage::Plain
    } else {
        Triage::Clean
    }
}

/// Whether a base64 run of 16 or more characters holds an upper-case letter or `_`.
fn marked_run(bytes: &[u8]) -> bool {
    let (mut run, mut marked) = (0usize, false);
    for &b in bytes {
        let class = CLASSES[usize::from(b)];
        if class & BASE64 != 0 {
            run += 1;
            marked |= class & MARKS_RUN != 0;
            if run >= 16 && marked {
                return true;
            }
        } else {
            (run, marked) = (0, false);
        }
    }
    false
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
    KEYWORDS
        .iter()
        .any(|k| usize::from(k[0]) == first && k[1] == second && starts_with_ci(bytes, i, k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_can_hold_a_secret_goes_to_the_patterns() {
        assert_eq!(triage("Northwind Pharmacy"), Triage::Clean);
        assert_eq!(triage("northwind-pharmacy"), Triage::Clean);
        assert_eq!(triage("Grüße aus Hamburg"), Triage::Clean);
        assert_eq!(triage("AT&T 100% sure"), Triage::Clean);
        assert_eq!(triage("Europe/Amsterdam"), Triage::Plain);
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
}
