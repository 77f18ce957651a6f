//! Field validation for request bodies: each check pushes a precise [`FieldIssue`] so that one 422
//! lists every problem at once. A field spec ([`Text`], [`OneOf`]) gives both the JSON Schema
//! snippet a route documents and the check its handler runs, so the two cannot drift.
//!
//! This module sits below `http`: it returns its own [`Invalid`], which `http` maps into a 422.

use crate::ids::Kind;
use serde_json::{json, Value};

/// One problem with one field: a JSON Pointer (or query parameter name), a code, a message.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldIssue {
    pub field: String,
    pub code: String,
    pub message: String,
}

/// Validation failed: every problem found, in the order the checks ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid(pub Vec<FieldIssue>);

/// Text of `min..=max` characters, no control characters, not blank when `min > 0`: one value
/// that states the JSON Schema ([`Text::schema`]) and runs the check ([`Text::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Text {
    pub min: usize,
    pub max: usize,
}

impl Text {
    pub const fn new(min: usize, max: usize) -> Text {
        Text { min, max }
    }

    pub fn schema(self) -> Value {
        text_schema(self.min, self.max)
    }

    pub fn check(self, errors: &mut Errors, field: &str, value: &str) {
        errors.text(field, value, self.min, self.max);
    }
}

/// A field's length bounds on its derived schema: `#[schemars(transform = &NAME)]` (a
/// reference: the derive borrows the transform mutably, and a `const` must not be).
impl schemars::transform::Transform for &Text {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        if let Some(bounds) = text_schema(self.min, self.max).as_object() {
            for (k, v) in bounds {
                schema.insert(k.clone(), v.clone());
            }
        }
    }
}

/// `schema` with a `description`: what an argument is, for a reader of the schema (an assistant
/// reads nothing else).
pub fn described(mut schema: Value, text: &str) -> Value {
    schema["description"] = Value::from(text);
    schema
}

/// One of a fixed list of strings: the schema's `enum` and the check come from the same list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OneOf(pub &'static [&'static str]);

impl OneOf {
    pub fn schema(self) -> Value {
        json!({"type": "string", "enum": self.0})
    }

    /// The schema with a `default`.
    pub fn schema_default(self, default: &str) -> Value {
        json!({"type": "string", "enum": self.0, "default": default})
    }

    pub fn check(self, errors: &mut Errors, field: &str, value: &str) {
        errors.one_of(field, value, self.0);
    }
}

/// A field's list of values on its derived schema: `#[schemars(transform = &PLATFORM)]`.
impl schemars::transform::Transform for &OneOf {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        schema.insert("enum".into(), json!(self.0));
    }
}

/// A field that holds one of the values or `null`, on its derived schema:
/// `#[schemars(transform = NullableOneOf(METHODS))]` (the values stay a string enum of their own).
pub struct NullableOneOf(pub &'static [&'static str]);

impl schemars::transform::Transform for NullableOneOf {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        let description = schema.remove("description");
        *schema = schemars::json_schema!({"anyOf": [
            {"type": "string", "enum": self.0},
            {"type": "null"}
        ]});
        if let Some(description) = description {
            schema.insert("description".into(), description);
        }
    }
}

/// JSON Schema of an id of `kind`, matching [`crate::ids::is_valid`].
pub fn id_schema(kind: Kind) -> Value {
    json!({"type":"string","pattern":kind.pattern()})
}

/// Characters that make text invalid: C0 and C1 control characters, and the bidirectional
/// embeddings, overrides and isolates (U+202A to U+202E, U+2066 to U+2069), which let a name
/// reorder the text around it where it is shown ("costs 900 tokens" read as "009 stsoc" in a
/// confirmation summary). The marks (U+200E, U+200F) stay: mixed-direction names need them.
pub fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Characters that do not count towards "not blank": ECMA-262's `\s`, controls, and the
/// characters that draw nothing (zero-width spaces and joiners, word joiners, the Hangul and
/// Braille fillers, the soft hyphen), so that a name cannot be made of nothing visible.
fn is_blank(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{20}' | '\u{7f}'..='\u{a0}' | '\u{ad}' | '\u{34f}' | '\u{115f}'
        | '\u{1160}' | '\u{1680}' | '\u{17b4}' | '\u{17b5}' | '\u{180e}' | '\u{2000}'..='\u{200f}'
        | '\u{2028}'..='\u{202f}' | '\u{205f}'..='\u{206f}' | '\u{2800}' | '\u{3000}' | '\u{3164}'
        | '\u{feff}' | '\u{ffa0}')
}

const NO_CONTROL: &str = "[^\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069]";
const NOT_BLANK: &str = "[^\\u0000-\\u0020\\u007f-\\u00a0\\u00ad\\u034f\\u115f\\u1160\\u1680\\u17b4\\u17b5\\u180e\\u2000-\\u200f\\u2028-\\u202f\\u205f-\\u206f\\u2800\\u3000\\u3164\\ufeff\\uffa0]";

/// The JSON Schema pattern of [`Errors::text`]: no control characters, and (for required text)
/// at least one non-blank character.
pub fn text_pattern(required: bool) -> String {
    if required {
        format!("^{NO_CONTROL}*{NOT_BLANK}{NO_CONTROL}*$")
    } else {
        format!("^{NO_CONTROL}*$")
    }
}

/// The JSON Schema of text checked by [`Errors::text`] with the same bounds.
pub fn text_schema(min: usize, max: usize) -> Value {
    if min == 0 {
        json!({"type": "string", "maxLength": max, "pattern": text_pattern(false)})
    } else {
        json!({"type": "string", "minLength": min, "maxLength": max, "pattern": text_pattern(true)})
    }
}

#[derive(Default)]
pub struct Errors(Vec<FieldIssue>);

impl Errors {
    pub fn new() -> Errors {
        Errors(Vec::new())
    }

    pub fn push(&mut self, field: &str, code: &str, message: impl Into<String>) {
        self.0.push(FieldIssue {
            field: field.to_string(),
            code: code.to_string(),
            message: message.into(),
        });
    }

    /// One of `allowed` (a JSON Schema `enum`).
    pub fn one_of(&mut self, field: &str, value: &str, allowed: &[&str]) {
        if !allowed.contains(&value) {
            self.push(
                field,
                "invalid_value",
                format!("Must be one of: {}.", allowed.join(", ")),
            );
        }
    }

    /// An id in a request body: the wrong shape is a 422 on that field.
    pub fn id(&mut self, field: &str, value: &str, kind: Kind) {
        if !crate::ids::is_valid(kind, value) {
            self.push(
                field,
                "invalid_id",
                format!("Must be an id starting with `{}_`.", kind.prefix()),
            );
        }
    }

    /// A PATCH with nothing to change is refused, as `minProperties: 1` says.
    pub fn require_some(&mut self, any: bool) {
        if !any {
            self.push("", "empty", "Give at least one field to change.");
        }
    }

    /// `min..=max` characters (as sent, as JSON Schema's `maxLength` counts), no control
    /// characters, and not blank when `min > 0`: exactly what [`text_schema`] states. Handlers
    /// store the value trimmed.
    pub fn text(&mut self, field: &str, value: &str, min: usize, max: usize) {
        let n = value.chars().count();
        if n < min || n > max {
            self.push(
                field,
                "length",
                format!("Must be {min} to {max} characters."),
            );
        } else if value.chars().any(is_control) {
            self.push(
                field,
                "invalid_characters",
                "Must not contain control characters or bidirectional overrides (U+202A to U+202E, U+2066 to U+2069).",
            );
        } else if min > 0 && value.chars().all(is_blank) {
            self.push(field, "blank", "Must not be blank.");
        }
    }

    /// An absolute URL of one of `schemes`, as [`url_pattern`] states (see [`is_url`]).
    pub fn url(&mut self, field: &str, value: &str, schemes: UrlSchemes) {
        if !is_url(value, schemes) {
            self.push(field, "invalid_url", schemes.message());
        }
    }

    /// `#RRGGBB`.
    pub fn hex_color(&mut self, field: &str, value: &str) {
        let ok = value.len() == 7
            && value.starts_with('#')
            && value[1..].bytes().all(|c| c.is_ascii_hexdigit());
        if !ok {
            self.push(
                field,
                "invalid_color",
                "Must be a colour in the form #RRGGBB.",
            );
        }
    }

    pub fn range(&mut self, field: &str, value: i64, min: i64, max: i64) {
        if value < min || value > max {
            self.push(
                field,
                "out_of_range",
                format!("Must be between {min} and {max}."),
            );
        }
    }

    pub fn finish(self) -> Result<(), Invalid> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(Invalid(self.0))
        }
    }
}

/// Which URLs a field takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UrlSchemes {
    /// `http://` or `https://` to any host (landing pages, QR targets).
    Web,
    /// `https://` to any host, or `http://` to this machine only (webhook receivers).
    HttpsOrLoopback,
}

impl UrlSchemes {
    fn message(self) -> &'static str {
        match self {
            UrlSchemes::Web => "Must be an absolute http(s) URL with a host name, at most 2048 characters, without spaces.",
            UrlSchemes::HttpsOrLoopback => "Must be an https:// URL (or http://localhost / http://127.0.0.1 for local testing), at most 2048 characters, without spaces.",
        }
    }
}

const HOST_PATTERN: &str =
    "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*";
const PORT_AND_REST_PATTERN: &str =
    "(?::[0-9]{1,5})?(?:[/?#][^\\s\\u0000-\\u001f\\u007f-\\u009f]*)?";

/// A host whose last label starts with a letter: a name, never a numeric address.
const NAME_HOST_PATTERN: &str =
    "(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)*[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";

/// The JSON Schema pattern of [`is_url`] (with `maxLength: 2048` beside it). For webhook URLs it
/// states a subset: `https://` hosts that are names, since a numeric host is accepted or refused
/// by address range ([`crate::outbound`]), which no pattern can state; so every URL the pattern
/// describes is accepted (bar the few metadata host names).
pub fn url_pattern(schemes: UrlSchemes) -> String {
    match schemes {
        UrlSchemes::Web => format!("^https?://{HOST_PATTERN}{PORT_AND_REST_PATTERN}$"),
        UrlSchemes::HttpsOrLoopback => format!(
            "^(?:https://{NAME_HOST_PATTERN}|http://(?:localhost|127\\.0\\.0\\.1)){PORT_AND_REST_PATTERN}$"
        ),
    }
}

fn is_host(host: &str) -> bool {
    !host.is_empty()
        && host.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// Scheme, a DNS-style host (no user info, no IP-literal brackets), an optional 1–5 digit port,
/// then an optional path/query/fragment without spaces or controls; at most 2048 characters.
pub fn is_url(value: &str, schemes: UrlSchemes) -> bool {
    if value.chars().count() > 2048 {
        return false;
    }
    let (https, rest) = match (
        value.strip_prefix("https://"),
        value.strip_prefix("http://"),
    ) {
        (Some(r), _) => (true, r),
        (None, Some(r)) => (false, r),
        _ => return false,
    };
    let host_end = rest.find([':', '/', '?', '#']).unwrap_or(rest.len());
    let (host, mut tail) = rest.split_at(host_end);
    let host_ok = match (schemes, https) {
        (UrlSchemes::Web, _) | (UrlSchemes::HttpsOrLoopback, true) => is_host(host),
        (UrlSchemes::HttpsOrLoopback, false) => host == "localhost" || host == "127.0.0.1",
    };
    if !host_ok {
        return false;
    }
    if let Some(port) = tail.strip_prefix(':') {
        let digits = port.bytes().take_while(u8::is_ascii_digit).count();
        if !(1..=5).contains(&digits) {
            return false;
        }
        tail = &port[digits..];
    }
    (tail.is_empty() || tail.starts_with(['/', '?', '#']))
        && !tail.chars().any(|c| c.is_whitespace() || is_control(c))
}

/// The host of a URL that [`is_url`] accepts: what follows the scheme, up to a port, path, query
/// or fragment.
pub fn url_host(url: &str) -> &str {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .unwrap_or(url);
    let end = rest.find([':', '/', '?', '#']).unwrap_or(rest.len());
    &rest[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        use UrlSchemes::*;
        assert!(is_url("https://shop.example/p?q=1#x", Web));
        assert!(is_url("http://a-b.example:8080", Web));
        for bad in [
            "http://[",
            "http://",
            "https://-a.example",
            "http://a..b",
            "http://h:99999999/",
            "http://h/ x",
            "ftp://h",
            "http://user@h",
        ] {
            assert!(!is_url(bad, Web), "{bad}");
        }
        assert!(is_url("http://127.0.0.1:9000/hook", HttpsOrLoopback));
        assert!(!is_url("http://hooks.example/x", HttpsOrLoopback));
        assert!(is_url("https://hooks.example/x", HttpsOrLoopback));
        assert_eq!(url_host("https://a.example:8443/x?y#z"), "a.example");
        assert_eq!(url_host("http://127.0.0.1"), "127.0.0.1");
    }

    #[test]
    fn text_rule() {
        let mut e = Errors::new();
        e.text("/a", "ok", 1, 5);
        e.text("/b", " ", 1, 5);
        e.text("/c", "a\u{85}b", 0, 5);
        e.text("/d", "toolong", 0, 5);
        let fields: Vec<String> = match e.finish() {
            Err(Invalid(v)) => v.into_iter().map(|f| f.field).collect(),
            _ => vec![],
        };
        assert_eq!(fields, vec!["/b", "/c", "/d"]);

        // Nothing visible is blank; a bidi override is refused; a mark and an emoji join are kept.
        let refused = |value: &str| {
            let mut e = Errors::new();
            e.text("/name", value, 1, 50);
            e.finish().err().map(|Invalid(v)| v[0].code.clone())
        };
        for invisible in [
            "\u{200b}",
            "\u{3164}\u{3164}",
            "\u{200d}\u{2060}",
            "\u{ad}",
            "\u{2800}",
        ] {
            assert_eq!(
                refused(invisible).as_deref(),
                Some("blank"),
                "{invisible:?}"
            );
        }
        for bidi in ["Sale \u{202e}009 stsoc", "a\u{2066}b", "\u{202a}x"] {
            assert_eq!(
                refused(bidi).as_deref(),
                Some("invalid_characters"),
                "{bidi:?}"
            );
        }
        for fine in ["שלום\u{200f} 2", "👩\u{200d}💻 team", "Café"] {
            assert_eq!(refused(fine), None, "{fine:?}");
        }
    }
}
