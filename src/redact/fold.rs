//! The folded view of a text that the secret patterns are matched against, with each folded byte
//! mapped back to the characters it came from, so a match replaces the whole original span.
//!
//! Folding undoes what hides a secret from a plain match while keeping it readable to a person:
//! - NFKC per character (fullwidth `ｓｇｎ＿ｔｅｓｔ＿` becomes `sgn_test_`, U+2024 ONE DOT LEADER
//!   becomes `.`);
//! - zero-width and bidirectional control characters are dropped (a U+200B inside a key must not
//!   split it in two, leaving the tail visible);
//! - `%XX` percent-encoding of an ASCII character is decoded.
//!
//! Case is kept: patterns compare case-insensitively where the credential allows it.

use unicode_normalization::UnicodeNormalization;

pub struct Folded {
    pub bytes: Vec<u8>,
    /// For each folded byte, the byte range `[start, end)` of the original text it came from.
    pub origin: Vec<(usize, usize)>,
}

impl Folded {
    /// The original byte range of folded bytes `[from, to)` (`to > from`).
    pub fn span(&self, from: usize, to: usize) -> (usize, usize) {
        (self.origin[from].0, self.origin[to - 1].1)
    }

    fn push(&mut self, b: u8, start: usize, end: usize) {
        self.bytes.push(b);
        self.origin.push((start, end));
    }
}

/// Characters that show nothing and so can sit inside a secret unseen: zero-width characters,
/// bidirectional controls, the soft hyphen, the word joiner and its kin, the byte-order mark.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}'
        | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}'
        | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}')
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// The ASCII character a `%XX` at `i` stands for, if it is one (controls excluded).
pub fn percent_at(bytes: &[u8], i: usize) -> Option<u8> {
    if bytes.get(i) != Some(&b'%') {
        return None;
    }
    let v = hex(*bytes.get(i + 1)?)? * 16 + hex(*bytes.get(i + 2)?)?;
    (0x20..0x7f).contains(&v).then_some(v)
}

/// Whether folding would change `c` (an invisible character, or one NFKC rewrites).
pub fn folds(c: char) -> bool {
    if c.is_ascii() {
        return false;
    }
    is_invisible(c) || {
        let mut n = std::iter::once(c).nfkc();
        n.next() != Some(c) || n.next().is_some()
    }
}

pub fn fold(s: &str) -> Folded {
    let raw = s.as_bytes();
    let mut out = Folded {
        bytes: Vec::with_capacity(s.len()),
        origin: Vec::with_capacity(s.len()),
    };
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        let end = i + c.len_utf8();
        if c == '%' {
            if let Some(v) = percent_at(raw, i) {
                out.push(v, i, i + 3);
                chars.next();
                chars.next();
                continue;
            }
        }
        if c.is_ascii() {
            out.push(c as u8, i, end);
            continue;
        }
        if is_invisible(c) {
            continue;
        }
        let mut buf = [0u8; 4];
        for d in std::iter::once(c).nfkc().filter(|d| !is_invisible(*d)) {
            for &b in d.encode_utf8(&mut buf).as_bytes() {
                out.push(b, i, end);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_maps_back_to_whole_characters() {
        let s = "a\u{200B}ｂ%5Fc";
        let f = fold(s);
        assert_eq!(f.bytes, b"ab_c");
        assert_eq!(f.span(0, 4), (0, s.len()));
        assert_eq!(&s[f.span(1, 2).0..f.span(1, 2).1], "ｂ");
        assert_eq!(&s[f.span(2, 3).0..f.span(2, 3).1], "%5F");
        assert_eq!(fold("x\u{2024}y").bytes, b"x.y");
        assert_eq!(fold("100% sure").bytes, b"100% sure");
        assert!(folds('\u{FF3F}') && folds('\u{200B}') && !folds('é') && !folds('a'));
    }
}
