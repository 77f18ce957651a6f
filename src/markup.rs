//! Text into HTML or XML: the one escaping every page (the QR landing page, the problem pages) and
//! the readiness report as JUnit XML use, so no writer of markup has its own idea of which characters matter.

/// `s` as the text of an element or a quoted attribute in HTML and XML alike: `&`, `<`, `>`, `"`
/// and `'` become character references, and control characters XML 1.0 forbids (all below U+0020
/// but tab, newline and carriage return) are dropped.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn markup_characters_become_references_and_forbidden_controls_go() {
        assert_eq!(
            super::escape("<a href=\"x\">Tom & Jerry's</a>\u{1}\n"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;\n"
        );
    }
}
