//! The folded view of a text that the secret patterns are matched against, with each folded byte
//! mapped back to the characters it came from, so a match replaces the whole original span.
//!
//! Folding undoes what hides a secret from a plain match while keeping it readable to a person:
//! - NFKC per character (fullwidth `ｓｇｎ＿ｔｅｓｔ＿` becomes `sgn_test_`, U+2024 ONE DOT LEADER
//!   becomes `.`);
//! - zero-width and bidirectional control characters are dropped (a U+200B inside a key must not
//!   split it in two, leaving the tail visible);
//! - escapes are decoded: `%XX` percent-encoding (a UTF-8 sequence of them too), `\uXXXX`,
//!   `\u{X…}` and `\xXX` (JSON and JavaScript), `&#NNN;`, `&#xHH;` and the named HTML entities of
//!   ASCII punctuation (`&lowbar;`, `&colon;`, …): `\u0073gn_test_…` is a key.
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

    /// One character of the original text (or one it encodes), folded.
    fn push_char(&mut self, c: char, start: usize, end: usize) {
        if c.is_ascii() {
            self.push(c as u8, start, end);
            return;
        }
        if is_invisible(c) {
            return;
        }
        let mut buf = [0u8; 4];
        for d in std::iter::once(c).nfkc().filter(|d| !is_invisible(*d)) {
            for &b in d.encode_utf8(&mut buf).as_bytes() {
                self.push(b, start, end);
            }
        }
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

fn hex(b: u8) -> Option<u32> {
    (b as char).to_digit(16)
}

fn hex_run(bytes: &[u8], from: usize, n: usize) -> Option<u32> {
    let digits = bytes.get(from..from + n)?;
    digits
        .iter()
        .try_fold(0u32, |acc, &b| Some(acc * 16 + hex(b)?))
}

/// The printable ASCII character a `%XX` at `i` stands for, if it is one (controls excluded).
pub fn percent_at(bytes: &[u8], i: usize) -> Option<u8> {
    if bytes.get(i) != Some(&b'%') {
        return None;
    }
    let v = hex_run(bytes, i + 1, 2)? as u8;
    (0x20..0x7f).contains(&v).then_some(v)
}

/// A percent-encoded UTF-8 sequence of one non-ASCII character at `i` (`%E2%80%8B`): the
/// character and the length of its encoding.
pub fn percent_utf8_at(bytes: &[u8], i: usize) -> Option<(char, usize)> {
    let lead = hex_run(bytes, i + 1, 2)? as u8;
    let n = match lead {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return None,
    };
    let mut buf = [0u8; 4];
    for (k, slot) in buf.iter_mut().enumerate().take(n) {
        if bytes.get(i + 3 * k) != Some(&b'%') {
            return None;
        }
        *slot = hex_run(bytes, i + 3 * k + 1, 2)? as u8;
    }
    let c = std::str::from_utf8(&buf[..n]).ok()?.chars().next()?;
    Some((c, 3 * n))
}

/// The named HTML entities of the ASCII punctuation a credential or the redaction marker is
/// written with.
const ENTITIES: &[(&str, char)] = &[
    ("amp", '&'),
    ("lt", '<'),
    ("gt", '>'),
    ("quot", '"'),
    ("apos", '\''),
    ("lowbar", '_'),
    ("UnderBar", '_'),
    ("lsqb", '['),
    ("lbrack", '['),
    ("rsqb", ']'),
    ("rbrack", ']'),
    ("colon", ':'),
    ("equals", '='),
    ("sol", '/'),
    ("period", '.'),
    ("dollar", '$'),
    ("commat", '@'),
    ("percnt", '%'),
    ("num", '#'),
    ("excl", '!'),
    ("quest", '?'),
    ("plus", '+'),
    ("hyphen", '-'),
    ("dash", '-'),
    ("nbsp", '\u{A0}'),
];

/// An escape at `i` (`\u0073`, `\u{73}`, `\x73`, `&#115;`, `&#x73;`, `&lowbar;`): the character
/// it stands for and the length of the escape.
pub fn escape_at(bytes: &[u8], i: usize) -> Option<(char, usize)> {
    match bytes[i] {
        b'\\' => match *bytes.get(i + 1)? {
            b'u' if bytes.get(i + 2) == Some(&b'{') => {
                let n = bytes[i + 3..].iter().take(7).position(|&b| b == b'}')?;
                let v = hex_run(bytes, i + 3, n).filter(|_| n > 0)?;
                Some((char::from_u32(v)?, n + 4))
            }
            b'u' => Some((char::from_u32(hex_run(bytes, i + 2, 4)?)?, 6)),
            b'x' => {
                let v = hex_run(bytes, i + 2, 2)? as u8;
                (0x20..0x7f).contains(&v).then_some((v as char, 4))
            }
            _ => None,
        },
        b'&' => {
            let rest = bytes.get(i + 1..)?;
            let end = rest.iter().take(12).position(|&b| b == b';')?;
            let name = std::str::from_utf8(&rest[..end]).ok()?;
            let c = if let Some(num) = name.strip_prefix('#') {
                let v = match num.strip_prefix(['x', 'X']) {
                    Some(h) => u32::from_str_radix(h, 16).ok()?,
                    None => num.parse().ok()?,
                };
                char::from_u32(v)?
            } else {
                ENTITIES.iter().find(|(n, _)| *n == name)?.1
            };
            Some((c, end + 2))
        }
        _ => None,
    }
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
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'%' {
            if let Some(v) = percent_at(raw, i) {
                out.push(v, i, i + 3);
                i += 3;
                continue;
            }
            if let Some((c, n)) = percent_utf8_at(raw, i) {
                out.push_char(c, i, i + n);
                i += n;
                continue;
            }
        }
        if b == b'\\' || b == b'&' {
            if let Some((c, n)) = escape_at(raw, i) {
                out.push_char(c, i, i + n);
                i += n;
                continue;
            }
        }
        if b.is_ascii() {
            out.push(b, i, i + 1);
            i += 1;
            continue;
        }
        // `i` is at a character boundary: every branch above advances by whole characters.
        let c = s[i..].chars().next().unwrap_or('\u{FFFD}');
        let end = i + c.len_utf8();
        out.push_char(c, i, end);
        i = end;
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

    #[test]
    fn escapes_are_decoded() {
        for (s, folded) in [
            (r"\u0073gn", "sgn"),
            (r"\u{73}gn", "sgn"),
            (r"\x73gn", "sgn"),
            ("&#115;gn", "sgn"),
            ("&#x73;gn", "sgn"),
            ("a&lowbar;b", "a_b"),
            ("%E2%80%8Bab", "ab"),
            (r"a\u200Bb", "ab"),
            ("&#xFF3F;", "_"),
            ("AT&T & co; 5&#;", "AT&T & co; 5&#;"),
            (r"C:\path\x", r"C:\path\x"),
            (r"\u12", r"\u12"),
        ] {
            assert_eq!(String::from_utf8(fold(s).bytes).unwrap(), folded, "{s}");
        }
        let s = r"k\u0073y";
        let f = fold(s);
        assert_eq!(&s[f.span(1, 2).0..f.span(1, 2).1], r"\u0073");
    }
}
