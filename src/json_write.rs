//! JSON written straight into a byte buffer, byte for byte as `serde_json::to_vec` writes it, for
//! the rows of a list page (the hottest answer the server gives), and whether stored JSON already
//! is those bytes ([`is_canonical`]: asked once, when an event is recorded, so its page copies the
//! event's data as it is). A leaf of the foundation: the writers of events use it as the pages do.
//!
//! Values are written by what they are. Ids, enum words and timestamps cannot hold a character
//! JSON escapes (a quote, a backslash, a control character): they are copied as they are
//! ([`plain`]), and debug builds assert that they really need nothing. Free text goes through
//! [`text`], which copies a run without such characters at once and leaves the rest to
//! `serde_json`'s own escaping, so the bytes are `serde_json`'s in every case.

/// True when `s` holds no character JSON escapes (`"`, `\`, U+0000 to U+001F).
pub fn needs_no_escape(s: &str) -> bool {
    s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\')
}

/// `"s"` for a string that cannot need escaping: an id, an enum word, a cursor.
pub fn plain(out: &mut Vec<u8>, s: &str) {
    debug_assert!(needs_no_escape(s), "{s:?} is not plain JSON text");
    out.reserve(s.len() + 2);
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
}

/// `"s"` for free text, escaped exactly as `serde_json` escapes it.
pub fn text(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    escape_bytes(out, s.as_bytes());
    out.push(b'"');
}

/// The contents of the JSON string of `s` (no quotes around), escaped exactly as `serde_json`
/// escapes it, appended to `out` (see [`escape_bytes`]).
pub fn escape_into(out: &mut String, s: &str) {
    let mut escaped = Vec::with_capacity(s.len() + s.len() / 4 + 8);
    escape_bytes(&mut escaped, s.as_bytes());
    // Only ASCII was added, between whole characters: still UTF-8.
    match std::str::from_utf8(&escaped) {
        Ok(text) => out.push_str(text),
        Err(_) => {
            let quoted = serde_json::to_string(s).unwrap_or_default();
            out.push_str(
                quoted
                    .get(1..quoted.len().saturating_sub(1))
                    .unwrap_or_default(),
            );
        }
    }
}

/// `bytes` (UTF-8) escaped as the contents of a JSON string, appended to `escaped`. For a long
/// text with many characters to escape (the JSON of an answer carried inside another answer's
/// string, a quote every few bytes), copying runs between escapes (`serde_json`'s way, or a
/// vectorized search's) costs more per escape than this copy costs in all.
fn escape_bytes(escaped: &mut Vec<u8>, bytes: &[u8]) {
    // Eight bytes at a time: a word with nothing to escape (about half of them in an answer's
    // JSON) is copied whole.
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let Ok(word) = <[u8; 8]>::try_from(word) else {
            continue;
        };
        if needs_escape(u64::from_le_bytes(word)) {
            // Escaped into a buffer on the stack (at most six bytes each), copied once.
            let mut buf = [0u8; 48];
            let mut n = 0;
            for b in word {
                match ESCAPES[usize::from(b)] {
                    0 => {
                        buf[n] = b;
                        n += 1;
                    }
                    b'u' => {
                        buf[n..n + 6].copy_from_slice(&escape(b, b'u').0);
                        n += 6;
                    }
                    e => {
                        buf[n] = b'\\';
                        buf[n + 1] = e;
                        n += 2;
                    }
                }
            }
            escaped.extend_from_slice(&buf[..n]);
        } else {
            escaped.extend_from_slice(&word);
        }
    }
    for &b in words.remainder() {
        push_escaped(escaped, b);
    }
}

/// Whether any of the eight bytes of `w` is a quote, a backslash or a control character (bytes
/// of 0x80 and above are never flagged; a flagged byte may flag the ones above it, which only
/// sends the word to the byte-at-a-time path).
fn needs_escape(w: u64) -> bool {
    escape_mask(w) != 0
}

/// The high bit of each byte of `w` [`needs_escape`] flags. The lowest one set is a byte that
/// needs an escape: a flag spreads only to the bytes above a flagged one.
fn escape_mask(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let quote = zero_byte(w ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(w ^ (ONES * u64::from(b'\\')));
    let control = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    quote | backslash | control
}

/// `b` as it stands inside a JSON string.
fn push_escaped(out: &mut Vec<u8>, b: u8) {
    match ESCAPES[usize::from(b)] {
        0 => out.push(b),
        b'u' => out.extend_from_slice(&escape(b, b'u').0),
        e => {
            out.push(b'\\');
            out.push(e);
        }
    }
}

/// What each byte is written as inside a JSON string: 0 for itself, else the letter after the
/// backslash (`u` for `\u00XX`), as `serde_json` writes them.
const ESCAPES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = b'u';
        b += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

/// The escape of byte `b` whose [`ESCAPES`] letter is `e`, and its length: `\e`, or `\u00XX`.
fn escape(b: u8, e: u8) -> ([u8; 6], usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let long = [
        b'\\',
        b'u',
        b'0',
        b'0',
        HEX[usize::from(b >> 4)],
        HEX[usize::from(b & 0xf)],
    ];
    if e == b'u' {
        (long, 6)
    } else {
        ([b'\\', e, 0, 0, 0, 0], 2)
    }
}

/// [`text`], or `null`.
pub fn opt_text(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => text(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

/// A Unix time as its RFC 3339 string (`"2026-03-02T09:00:00Z"`), as the API writes every `*_at`.
pub fn time(out: &mut Vec<u8>, t: i64) {
    match crate::time::rfc3339_bytes(t) {
        Some(bytes) => {
            out.push(b'"');
            out.extend_from_slice(&bytes);
            out.push(b'"');
        }
        None => plain(out, &crate::time::rfc3339(t)),
    }
}

/// [`time`], or `null`.
pub fn opt_time(out: &mut Vec<u8>, t: Option<i64>) {
    match t {
        Some(t) => time(out, t),
        None => out.extend_from_slice(b"null"),
    }
}

/// An integer, in decimal.
pub fn int(out: &mut Vec<u8>, n: i64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut m = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

/// [`int`], or `null`.
pub fn opt_int(out: &mut Vec<u8>, n: Option<i64>) {
    match n {
        Some(n) => int(out, n),
        None => out.extend_from_slice(b"null"),
    }
}

/// `"name":`, for a member name (always plain).
pub fn key(out: &mut Vec<u8>, name: &str) {
    plain(out, name);
    out.push(b':');
}

/// Compact JSON of one object (as `serde_json` writes it) with the values of its top-level
/// `members` cut out, and the offset in the result where each value was, in `members`' order: a
/// row kept rendered from its type's own `Serialize`, whose members that depend on the request
/// (the clock's) are written in per request. `None` when `json` is not one object, or a member is
/// missing or not in the object's order.
pub fn cut_members(json: &[u8], members: &[&str]) -> Option<(Vec<u8>, Vec<usize>)> {
    if json.first() != Some(&b'{') {
        return None;
    }
    let mut out = Vec::with_capacity(json.len());
    let mut cuts = Vec::with_capacity(members.len());
    let mut depth = 0usize;
    // At the top level, the next string is a member's name.
    let mut name_next = false;
    let mut i = 0;
    while i < json.len() {
        let b = json[i];
        if b == b'"' {
            let end = string_end(json, i)?;
            let text = &json[i..end];
            out.extend_from_slice(text);
            let is_name = depth == 1 && name_next;
            name_next = false;
            i = end;
            let wanted = members.get(cuts.len()).map(|m| m.as_bytes());
            if is_name && wanted == Some(&text[1..text.len() - 1]) && json.get(i) == Some(&b':') {
                out.push(b':');
                cuts.push(out.len());
                i = value_end(json, i + 1)?;
            }
            continue;
        }
        match b {
            b'{' | b'[' => {
                depth += 1;
                name_next = b == b'{' && depth == 1;
            }
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b',' if depth == 1 => name_next = true,
            _ => {}
        }
        out.push(b);
        i += 1;
    }
    (cuts.len() == members.len() && depth == 0).then_some((out, cuts))
}

/// The index just past the string that starts at `json[start]` (a `"`).
fn string_end(json: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < json.len() {
        match json[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The index just past the value that starts at `json[start]`: a string, an object or array
/// (strings in it skipped whole), or a scalar up to the `,`, `}` or `]` that ends it.
fn value_end(json: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    while i < json.len() {
        match json[i] {
            b'"' => {
                i = string_end(json, i)?;
                if depth == 0 {
                    return Some(i);
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b',' | b'}' | b']' if depth == 0 => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Whether `json` is byte for byte what `serde_json` writes of the value it parses to (with
/// `preserve_order`), so that it can be copied into an answer as it is instead of parsed and written
/// again: compact (no whitespace), strings escaped as [`text`] escapes them, integers only (a float
/// may print otherwise), no key twice in an object (parsing keeps one), at most 64 deep (parsing
/// stops at 128). False for anything else, which the caller parses and writes as before.
pub fn is_canonical(json: &str) -> bool {
    let mut at = 0;
    canonical_value(json.as_bytes(), &mut at, 0) && at == json.len()
}

fn canonical_value(b: &[u8], at: &mut usize, depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    match b.get(*at) {
        Some(b'"') => canonical_string(b, at),
        Some(b'{') => {
            *at += 1;
            if b.get(*at) == Some(&b'}') {
                *at += 1;
                return true;
            }
            // The keys so far, on the stack (an object of more is left to the parser).
            let mut keys: [&[u8]; 32] = [&[]; 32];
            let mut count = 0;
            loop {
                let start = *at;
                if b.get(*at) != Some(&b'"') || !canonical_string(b, at) {
                    return false;
                }
                // A canonical string has one spelling: equal keys are equal bytes.
                let key = &b[start..*at];
                if count == keys.len() || keys[..count].contains(&key) {
                    return false;
                }
                keys[count] = key;
                count += 1;
                if b.get(*at) != Some(&b':') {
                    return false;
                }
                *at += 1;
                if !canonical_value(b, at, depth + 1) {
                    return false;
                }
                match b.get(*at) {
                    Some(b',') => *at += 1,
                    Some(b'}') => {
                        *at += 1;
                        return true;
                    }
                    _ => return false,
                }
            }
        }
        Some(b'[') => {
            *at += 1;
            if b.get(*at) == Some(&b']') {
                *at += 1;
                return true;
            }
            loop {
                if !canonical_value(b, at, depth + 1) {
                    return false;
                }
                match b.get(*at) {
                    Some(b',') => *at += 1,
                    Some(b']') => {
                        *at += 1;
                        return true;
                    }
                    _ => return false,
                }
            }
        }
        Some(b't') => literal(b, at, b"true"),
        Some(b'f') => literal(b, at, b"false"),
        Some(b'n') => literal(b, at, b"null"),
        Some(b'-' | b'0'..=b'9') => canonical_integer(b, at),
        _ => false,
    }
}

fn literal(b: &[u8], at: &mut usize, word: &[u8]) -> bool {
    if b[*at..].starts_with(word) {
        *at += word.len();
        true
    } else {
        false
    }
}

/// An integer as `serde_json` writes an `i64` or `u64`: no leading zero, no `-0`, at most 18
/// digits (always in range), and no fraction or exponent after it.
fn canonical_integer(b: &[u8], at: &mut usize) -> bool {
    let negative = b[*at] == b'-';
    if negative {
        *at += 1;
    }
    let start = *at;
    while b.get(*at).is_some_and(u8::is_ascii_digit) {
        *at += 1;
    }
    let digits = &b[start..*at];
    if digits.is_empty()
        || digits.len() > 18
        || (digits[0] == b'0' && (digits.len() > 1 || negative))
    {
        return false;
    }
    !matches!(b.get(*at), Some(b'.' | b'e' | b'E'))
}

/// A string as [`text`] writes it: escapes only where [`ESCAPES`] has one, in its spelling.
fn canonical_string(b: &[u8], at: &mut usize) -> bool {
    *at += 1;
    loop {
        // Eight bytes at a time while none is a quote, a backslash or a control character, then
        // straight to the first that is (the string's end, most often).
        while let Some(Ok(word)) = b.get(*at..*at + 8).map(<[u8; 8]>::try_from) {
            let mask = escape_mask(u64::from_le_bytes(word));
            if mask != 0 {
                *at += (mask.trailing_zeros() / 8) as usize;
                break;
            }
            *at += 8;
        }
        let Some(&c) = b.get(*at) else { return false };
        match c {
            b'"' => {
                *at += 1;
                return true;
            }
            b'\\' => {
                let Some(&e) = b.get(*at + 1) else {
                    return false;
                };
                let byte = match e {
                    b'u' => {
                        let Some(hex) = b.get(*at + 2..*at + 6) else {
                            return false;
                        };
                        let digit = |h: u8| match h {
                            b'0'..=b'9' => Some(h - b'0'),
                            b'a'..=b'f' => Some(h - b'a' + 10),
                            _ => None,
                        };
                        match (hex[0], hex[1], digit(hex[2]), digit(hex[3])) {
                            (b'0', b'0', Some(hi), Some(lo)) => (hi << 4) | lo,
                            _ => return false,
                        }
                    }
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'b' => 0x08,
                    b't' => 0x09,
                    b'n' => 0x0a,
                    b'f' => 0x0c,
                    b'r' => 0x0d,
                    _ => return false,
                };
                let (spelling, len) = escape(byte, ESCAPES[usize::from(byte)]);
                if ESCAPES[usize::from(byte)] == 0
                    || b.get(*at..*at + len) != Some(&spelling[..len])
                {
                    return false;
                }
                *at += len;
            }
            0..=0x1f => return false,
            _ => *at += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_cut_out_are_the_top_levels_only() {
        let value = serde_json::json!({
            "id": "a\\\"on_air\":true,",
            "nested": {"on_air": true, "list": ["on_air", {"on_air": 1}]},
            "on_air": false,
            "device_ids": ["x", "y\"z"],
            "count": -12,
            "status": "offline",
            "last": null
        });
        let json = serde_json::to_vec(&value).unwrap();
        let (cut, at) = cut_members(&json, &["on_air", "status"]).unwrap();
        // Filling the cuts in again gives the object back.
        let mut again = Vec::new();
        again.extend_from_slice(&cut[..at[0]]);
        again.extend_from_slice(b"false");
        again.extend_from_slice(&cut[at[0]..at[1]]);
        again.extend_from_slice(b"\"offline\"");
        again.extend_from_slice(&cut[at[1]..]);
        assert_eq!(again, json);
        // What is cut is the members' values, nothing nested or in a string.
        assert!(cut.ends_with(b",\"count\":-12,\"status\":,\"last\":null}"));
        assert_eq!(&cut[at[0] - 10..at[0] + 1], b",\"on_air\":,");
        // A member cut from an object, an array or a string value, and the last one.
        for (member, value) in [
            (
                "nested",
                "{\"on_air\":true,\"list\":[\"on_air\",{\"on_air\":1}]}",
            ),
            ("device_ids", "[\"x\",\"y\\\"z\"]"),
            ("id", "\"a\\\\\\\"on_air\\\":true,\""),
            ("last", "null"),
        ] {
            let (cut, at) = cut_members(&json, &[member]).unwrap();
            let mut again = cut[..at[0]].to_vec();
            again.extend_from_slice(value.as_bytes());
            again.extend_from_slice(&cut[at[0]..]);
            assert_eq!(
                String::from_utf8_lossy(&again),
                String::from_utf8_lossy(&json),
                "{member}"
            );
        }
        // Missing, out of order, or not an object: none.
        assert!(cut_members(&json, &["absent"]).is_none());
        assert!(cut_members(&json, &["status", "on_air"]).is_none());
        assert!(cut_members(b"[1,2]", &[]).is_none());
        assert!(cut_members(b"{\"a\":\"open", &["a"]).is_none());
    }

    fn serde<T: serde::Serialize + ?Sized>(v: &T) -> Vec<u8> {
        serde_json::to_vec(v).unwrap()
    }

    #[test]
    fn canonical_json_is_what_serde_json_writes_again() {
        let canonical = [
            r#"{}"#,
            r#"[]"#,
            r#"{"a":1,"b":[true,false,null],"c":{"d":"e"},"n":-42,"z":0}"#,
            r#"{"text":"Café \" \\ \n\t\u001f /","max":999999999999999999}"#,
            r#"{"nested":[[[{"x":[]}]]],"neg":-999999999999999999}"#,
        ];
        for json in canonical {
            let json = json.to_string();
            assert!(is_canonical(&json), "{json}");
            let again =
                serde_json::to_string(&serde_json::from_str::<serde_json::Value>(&json).unwrap())
                    .unwrap();
            assert_eq!(again, json);
        }
        for json in [
            r#"{"a": 1}"#,
            r#" {}"#,
            r#"{"a":1.0}"#,
            r#"{"a":1e3}"#,
            r#"{"a":-0}"#,
            r#"{"a":01}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a":"\u0041"}"#,
            r#"{"a":"\/"}"#,
            r#"{"a":"\u000a"}"#,
            r#"{"a":"\u001F"}"#,
            r#"{"a":12345678901234567890}"#,
            r#"{"a":1"#,
            r#"{"a":1}x"#,
            "",
            "nul",
        ] {
            assert!(!is_canonical(json), "{json}");
        }
        let deep = format!("{}{}", "[".repeat(66), "]".repeat(66));
        assert!(!is_canonical(&deep));
        // Long strings, an escape at every offset of a word of eight.
        for k in 0..17 {
            let text = format!("{}\n{}\"end", "a".repeat(k), "b".repeat(17 - k));
            let json = serde_json::to_string(&serde_json::json!({ "k": text })).unwrap();
            assert!(is_canonical(&json), "{json}");
            assert!(!is_canonical(&json.replace("\\n", "\\u000a")), "{json}");
            assert!(!is_canonical(&json.replace("\\n", "\n")), "{json}");
        }
        // 32 keys are checked; more are left to the parser.
        let object = |n: usize| {
            let members: Vec<String> = (0..n).map(|i| format!("\"k{i}\":{i}")).collect();
            format!("{{{}}}", members.join(","))
        };
        assert!(is_canonical(&object(32)));
        assert!(!is_canonical(&object(33)));
    }

    #[test]
    fn text_is_serde_json_byte_for_byte() {
        for s in [
            "",
            "plain",
            "Café – 北京 🎉",
            "quote \" backslash \\ slash /",
            "tab\tnew\nline\rcr",
            "\u{0}\u{1}\u{1f}\u{7f}",
            "line\u{2028}para\u{2029}",
            "</script>",
        ] {
            let mut out = Vec::new();
            text(&mut out, s);
            assert_eq!(out, serde(s), "{s:?}");
            let mut inner = String::from("x");
            escape_into(&mut inner, s);
            assert_eq!(format!("\"{}\"", &inner[1..]).as_bytes(), serde(s), "{s:?}");
        }
        // Every byte, alone and in company.
        for b in 0u8..0x80 {
            let s = format!("a{}b{}", b as char, b as char);
            let mut out = Vec::new();
            text(&mut out, &s);
            assert_eq!(out, serde(&s), "{b:#x}");
        }
    }

    #[test]
    fn a_word_is_copied_whole_only_when_no_byte_of_it_needs_an_escape() {
        for b in 0u8..=255 {
            for at in 0..8 {
                let mut word = *b"abcdefgh";
                word[at] = b;
                let want = b < 0x20 || b == b'"' || b == b'\\';
                assert_eq!(
                    needs_escape(u64::from_le_bytes(word)),
                    want,
                    "{b:#x} at {at}"
                );
            }
        }
        // The lowest flag is the first byte that needs an escape, whatever follows it.
        let bytes = [
            0u8, 0x01, 0x1f, 0x20, b'"', b'\\', b'a', 0x7f, 0x80, 0xe2, 0xff,
        ];
        for x in bytes {
            for y in bytes {
                for i in 0..8 {
                    for j in 0..8 {
                        let mut word = *b"abcdefgh";
                        word[i] = x;
                        word[j] = y;
                        let first = word
                            .iter()
                            .position(|&b| b < 0x20 || b == b'"' || b == b'\\');
                        let mask = escape_mask(u64::from_le_bytes(word));
                        let lowest = (mask != 0).then(|| (mask.trailing_zeros() / 8) as usize);
                        assert_eq!(lowest, first, "{word:?}");
                    }
                }
            }
        }
        let long = "x\"y\\z\u{1}é—北京 🎉 ".repeat(9);
        let mut inner = String::new();
        escape_into(&mut inner, &long);
        assert_eq!(
            format!("\"{inner}\""),
            serde_json::to_string(&long).unwrap()
        );
    }

    #[test]
    fn numbers_and_times_are_serde_json_byte_for_byte() {
        for n in [0, 1, -1, 9, 10, 99, 100, i64::MAX, i64::MIN, -1234567] {
            let mut out = Vec::new();
            int(&mut out, n);
            assert_eq!(out, serde(&n), "{n}");
        }
        for t in [
            0,
            1,
            86_399,
            1_772_442_000,
            -62_167_219_200,
            253_402_300_800,
            -1,
        ] {
            let mut out = Vec::new();
            time(&mut out, t);
            assert_eq!(out, serde(&crate::time::rfc3339(t)), "{t}");
        }
    }

    #[test]
    fn plain_text_is_what_needs_no_escape() {
        assert!(needs_no_escape("dev_0m5d4ruo5fepbn59k9ts"));
        assert!(needs_no_escape("Café"));
        for s in ["a\"b", "a\\b", "a\nb", "\u{1f}"] {
            assert!(!needs_no_escape(s), "{s:?}");
        }
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "is not plain JSON text")]
    fn debug_builds_refuse_an_id_that_would_need_escaping() {
        plain(&mut Vec::new(), "dev_\"x");
    }
}
