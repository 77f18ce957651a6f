//! The redaction marker written back: text an assistant copied from a redacted answer. Stored,
//! it would replace the real value (a webhook URL's token, a Wi-Fi password in a headline) with
//! the marker, so a write holding it is refused.
//!
//! The marker is recognised in whatever form it takes once its text is *read*:
//! - decoded, up to four layers deep: `%XX` percent-encoding (`%5BREDACTED%5D`, `%255B…`),
//!   `\uXXXX`, `\u{X}` and `\xXX` escapes, HTML entities (`&#91;`, `&lsqb;`, `&#x5B;`), a
//!   backslash before punctuation (`\[`);
//! - folded: NFKC (fullwidth `［ＲＥＤＡＣＴＥＤ］`), zero-width and bidirectional characters dropped;
//! - mapped to its confusable skeleton (Unicode TS #39: a Cyrillic `Е`, a Greek `Α`), case
//!   ignored;
//! - spaced: up to three non-letters between its letters (`R E D A C T E D`, `RE-DACTED`).
//!
//! Two rules use it:
//! - **anywhere** in a write's arguments, the marker *in brackets* (`[REDACTED]`, `[ redacted ]`,
//!   an unclosed `[REDACTED` not followed by more words) is refused: no stored text has it;
//! - **where the stored value held a secret** (the field is shown redacted), the word alone in
//!   any of those forms (`token=REDACTED`, `token=%5BREDACTED`) is refused too: the write would
//!   put it where the secret was.

use serde_json::{Map, Value};

/// The letters of the marker.
const WORD: &[char] = &['r', 'e', 'd', 'a', 'c', 't', 'e', 'd'];

/// How many layers of encoding are undone.
const LAYERS: usize = 4;

/// One layer of encoding undone: percent-encoding (of any byte), escapes and entities, and a
/// backslash before punctuation.
fn decode_once(s: &str) -> String {
    let raw = s.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'%' {
            let hex = raw
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok());
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        if b == b'\\' || b == b'&' {
            if let Some((c, n)) = super::fold::escape_at(raw, i) {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                i += n;
                continue;
            }
            if b == b'\\' && raw.get(i + 1).is_some_and(u8::is_ascii_punctuation) {
                i += 1;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Brackets that read as `[` or `]`.
fn bracket(c: char) -> Option<char> {
    match c {
        '[' | '⟦' | '〚' | '【' | '〔' | '〖' | '⁅' | '❲' | '⦋' | '⦍' | '⦏' | '⟬' | '⸢' | '⸤' => {
            Some('[')
        }
        ']' | '⟧' | '〛' | '】' | '〕' | '〗' | '⁆' | '❳' | '⦌' | '⦎' | '⦐' | '⟭' | '⸣' | '⸥' => {
            Some(']')
        }
        _ => None,
    }
}

/// The text as it reads: decoded, folded, mapped to its confusable skeleton, lower case.
pub fn reading(s: &str) -> Vec<char> {
    let mut text = s.to_string();
    for _ in 0..LAYERS {
        let next = decode_once(&text);
        if next == text {
            break;
        }
        text = next;
    }
    let folded = String::from_utf8_lossy(&super::fold::fold(&text).bytes).into_owned();
    let mapped: String = folded.chars().map(|c| bracket(c).unwrap_or(c)).collect();
    let skeleton: String = unicode_security::skeleton(&mapped).collect();
    // Lower case can make a character confusable again (a capital that has no skeleton of its own).
    let lower = skeleton.to_lowercase();
    unicode_security::skeleton(&lower)
        .flat_map(char::to_lowercase)
        .collect()
}

/// Where the marker's word starts in `t` (at a word start), and where it ends.
fn words(t: &[char]) -> impl Iterator<Item = (usize, usize)> + '_ {
    (0..t.len()).filter_map(move |i| {
        if t[i] != WORD[0] || (i > 0 && t[i - 1].is_alphanumeric()) {
            return None;
        }
        let mut at = i + 1;
        for &letter in &WORD[1..] {
            let gap = t[at..]
                .iter()
                .take(4)
                .take_while(|c| !c.is_alphanumeric() && bracket(**c).is_none())
                .count();
            if gap > 3 || t.get(at + gap) != Some(&letter) {
                return None;
            }
            at += gap + 1;
        }
        Some((i, at))
    })
}

/// Whether `s` holds the marker in brackets, in any form (see the module's documentation).
pub fn bracketed(s: &str) -> bool {
    if s.is_ascii() && !s.bytes().any(|b| matches!(b, b'[' | b'%' | b'&' | b'\\')) {
        return false;
    }
    let t = reading(s);
    let found = words(&t).any(|(start, end)| {
        let before = t[..start].iter().rev().find(|c| !c.is_whitespace());
        let after = t[end..].iter().find(|c| !c.is_whitespace());
        // Closed, or cut short (`[REDACTED&v=2`, `[REDACTED` at the end): not a word going on.
        before == Some(&'[') && !after.is_some_and(|c| c.is_alphanumeric())
    });
    found
}

/// Whether `s` holds the marker's word, bracketed or not, in any form.
pub fn anywhere(s: &str) -> bool {
    let t = reading(s);
    let found = words(&t).next().is_some();
    found
}

/// The first string in `v` that holds the marker in brackets, as a path (`changes.headline`).
pub fn bracketed_path(v: &Value, path: &str) -> Option<String> {
    match v {
        Value::String(s) => bracketed(s).then(|| path.to_string()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, x)| bracketed_path(x, &format!("{path}[{i}]"))),
        Value::Object(map) => map
            .iter()
            .find_map(|(k, x)| bracketed_path(x, &join(path, k))),
        _ => None,
    }
}

fn join(path: &str, member: &str) -> String {
    if path.is_empty() {
        member.to_string()
    } else {
        format!("{path}.{member}")
    }
}

/// Whether a stored value was shown redacted: a secret field's value, or text holding a secret.
fn held_secret(name: &str, stored: &Value) -> bool {
    match (super::shape::by_name(name), stored) {
        (_, Value::Null) => false,
        (super::shape::Shape::Secret, _) => true,
        (super::shape::Shape::Announced, Value::String(_)) => true,
        (_, Value::String(s)) => super::text::holds_secret(s),
        _ => false,
    }
}

/// The first value in `changes` (members of `path`) holding the marker's word in any form where
/// the stored value at the same place (`current`) held a secret: its path.
pub fn restores_secret(
    changes: &Map<String, Value>,
    current: &Value,
    path: &str,
) -> Option<String> {
    changes
        .iter()
        .find_map(|(k, v)| restores(v, current.get(k), k, &join(path, k)))
}

fn restores(new: &Value, stored: Option<&Value>, name: &str, path: &str) -> Option<String> {
    match new {
        Value::String(s) => {
            let held = stored.is_some_and(|v| held_secret(name, v));
            (held && anywhere(s)).then(|| path.to_string())
        }
        Value::Array(items) => items.iter().enumerate().find_map(|(i, x)| {
            restores(
                x,
                stored.and_then(|s| s.get(i)),
                name,
                &format!("{path}[{i}]"),
            )
        }),
        Value::Object(m) => m
            .iter()
            .find_map(|(k, x)| restores(x, stored.and_then(|s| s.get(k)), k, &join(path, k))),
        _ => None,
    }
}
