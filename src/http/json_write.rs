//! JSON written straight into a byte buffer, byte for byte as `serde_json::to_vec` writes it, for
//! the rows of a list page (the hottest answer the server gives).
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
    if needs_no_escape(s) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

/// [`text`], or `null`.
pub fn opt_text(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => text(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

/// [`plain`], or `null`.
pub fn opt_plain(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => plain(out, s),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn serde<T: serde::Serialize + ?Sized>(v: &T) -> Vec<u8> {
        serde_json::to_vec(v).unwrap()
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
        }
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
