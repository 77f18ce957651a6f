//! What an answer's type declares about its fields, for the redactor: which strings are ids,
//! instants and enum values (never scanned), which are free text (scanned with every pattern),
//! and which hold a secret whole (replaced). Compiled once from the answer's JSON Schema, the
//! same schema the OpenAPI document and the tool's `outputSchema` publish (a test checks every
//! answer against it).
//!
//! The declaration is trusted only as far as the value bears it out: a string declared an id,
//! an instant or an enum value is skipped only when it has that shape (an id's characters, an
//! instant's digits and separators, one of the listed values); otherwise it is scanned like free
//! text. A field the type does not declare, and every member of an object whose members the type
//! leaves open, is judged by its name (a name that announces a secret hides its value, whatever
//! the value looks like: a key next to its value) and its value is scanned.

use serde_json::Value;

/// How one JSON value is redacted.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// Undeclared: every string is scanned, every member name is judged.
    Any,
    /// A string of free text: scanned with every pattern.
    Text,
    /// An id (`cmp_0mhh…`): skipped when it has an id's shape.
    Id,
    /// An instant or a date: skipped when it has only digits and `T`, `Z`, `:`, `.`, `+`, `-`.
    Time,
    /// One of these strings: skipped when it is one of them.
    Enum(Vec<String>),
    /// A number, a boolean or null: nothing to scan (a string found here is scanned as text).
    Scalar,
    /// A field whose name says it holds a secret: any value but `null` is replaced.
    Secret,
    /// A field whose name announces a secret (`pwd`, `pass`, `token`): a string is replaced,
    /// other values (`"pass": true`) stay.
    Announced,
    Array(Box<Shape>),
    /// An object with these declared members; any other member is judged by its name.
    Object(Vec<(String, Shape)>),
}

impl Shape {
    /// The shape of a JSON Schema whose `$ref`s are inlined (see `mcp::catalogue::inline`).
    pub fn of_schema(schema: &Value) -> Shape {
        compile(schema, None, 0)
    }

    /// The declared shape of the member `name` of an object of this shape, or `None` when the
    /// member is undeclared.
    pub fn member(&self, name: &str) -> Option<&Shape> {
        self.member_after(name.as_bytes(), 0).map(|(_, s)| s)
    }

    /// [`Shape::member`] by the name's bytes, looked for from the declared member `hint` on (an
    /// answer's members come in their declared order, so the next one is usually the one): its
    /// index and shape.
    pub fn member_after(&self, name: &[u8], hint: usize) -> Option<(usize, &Shape)> {
        let Shape::Object(fields) = self else {
            return None;
        };
        let n = fields.len();
        (0..n)
            .map(|k| (hint + k) % n)
            .find(|&k| fields[k].0.as_bytes() == name)
            .map(|k| (k, &fields[k].1))
    }
}

/// The shape an undeclared member gets from its name alone.
pub fn by_name(name: &str) -> Shape {
    if super::names::is_secret_field(name) {
        Shape::Secret
    } else if super::scan::announces(name.as_bytes()).is_some() {
        Shape::Announced
    } else {
        Shape::Any
    }
}

fn types(schema: &Value) -> Vec<&str> {
    match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn compile(schema: &Value, name: Option<&str>, depth: usize) -> Shape {
    if let Some(n) = name {
        let by_name = by_name(n);
        if by_name != Shape::Any {
            return by_name;
        }
    }
    let Some(m) = schema.as_object() else {
        return Shape::Any;
    };
    if depth > 32 {
        return Shape::Any;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = m.get(key).and_then(Value::as_array) {
            let mut shapes = branches.iter().map(|b| compile(b, name, depth + 1));
            let first = shapes.next().unwrap_or(Shape::Any);
            return shapes.fold(first, merge);
        }
    }
    if let Some(c) = m.get("const") {
        return enum_of(std::slice::from_ref(c));
    }
    if let Some(values) = m.get("enum").and_then(Value::as_array) {
        return enum_of(values);
    }
    let ts = types(schema);
    if ts.contains(&"object") || m.contains_key("properties") {
        let fields = m
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    // A name with a quote or a backslash is written escaped: left undeclared, its
                    // member is judged by name and scanned, and every declared name can be
                    // compared with the document's bytes as they are (`walk`).
                    .filter(|(k, _)| !k.contains(['"', '\\']))
                    .map(|(k, s)| (k.clone(), compile(s, Some(k), depth + 1)))
                    .collect()
            })
            .unwrap_or_default();
        return Shape::Object(fields);
    }
    if ts.contains(&"array") {
        let items = m
            .get("items")
            .map_or(Shape::Any, |s| compile(s, None, depth + 1));
        return Shape::Array(Box::new(items));
    }
    if ts.is_empty() {
        return Shape::Any;
    }
    if !ts.contains(&"string") {
        return Shape::Scalar;
    }
    let format = m.get("format").and_then(Value::as_str);
    let name = name.unwrap_or("");
    if matches!(format, Some("date-time" | "date")) || name.ends_with("_at") {
        return Shape::Time;
    }
    if name == "id" || name.ends_with("_id") {
        return Shape::Id;
    }
    Shape::Text
}

fn enum_of(values: &[Value]) -> Shape {
    Shape::Enum(
        values
            .iter()
            .filter_map(Value::as_str)
            // A value with a quote or a backslash is written escaped, so its JSON text is not the
            // value: leaving it out scans such a string as text, which is always safe, and lets
            // [`declared_len`] compare an enum value with the document's bytes as they are.
            .filter(|v| !v.contains(['"', '\\']))
            .map(String::from)
            .collect(),
    )
}

/// One shape that redacts at least what each of two does (the branches of an `anyOf`).
fn merge(a: Shape, b: Shape) -> Shape {
    use Shape::*;
    match (a, b) {
        (a, b) if a == b => a,
        (Scalar, other) | (other, Scalar) => other,
        (Enum(mut x), Enum(y)) => {
            x.extend(y);
            Enum(x)
        }
        (Array(x), Array(y)) => Array(Box::new(merge(*x, *y))),
        (Object(mut x), Object(y)) => {
            for (name, s) in y {
                match x.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, mine)) => *mine = merge(std::mem::replace(mine, Any), s),
                    None => x.push((name, s)),
                }
            }
            Object(x)
        }
        (Secret, _) | (_, Secret) => Secret,
        (Id | Time | Enum(_) | Text, Id | Time | Enum(_) | Text) => Text,
        _ => Any,
    }
}

/// Whether a string declared by `shape` can be skipped: it has the declared shape (see the
/// module's documentation). `raw` is the string as it sits in the JSON text, escapes included.
pub fn skips(shape: &Shape, raw: &[u8]) -> bool {
    match shape {
        Shape::Id => is_id(raw),
        Shape::Time => {
            !raw.is_empty()
                && raw.len() <= 40
                && raw.iter().all(|&b| BYTE[usize::from(b)] & TIME != 0)
        }
        Shape::Enum(values) => values.iter().any(|v| v.as_bytes() == raw),
        _ => false,
    }
}

/// The length of the string value at the start of `rest` (the JSON text just after its opening
/// quote) when it has the shape `shape` declares, so it can be passed over unread: an id, an
/// instant written `YYYY-MM-DDTHH:MM:SSZ`, or one of an enum's values, each followed by its
/// closing quote. `None` sends the string the general way ([`skips`], then the scan), so this
/// only ever passes over what [`skips`] would; it reads the bytes once, eight at a time, instead
/// of finding the quote and then classifying the string.
#[inline]
pub fn declared_len(shape: &Shape, rest: &[u8]) -> Option<usize> {
    let n = match shape {
        Shape::Id => id_len(rest)?,
        Shape::Time => instant_len(rest)?,
        Shape::Enum(values) => values
            .iter()
            .map(String::as_bytes)
            .find(|v| rest.get(..v.len()).is_some_and(|r| same(r, v)))?
            .len(),
        _ => return None,
    };
    (rest.get(n) == Some(&b'"')).then_some(n)
}

/// Eight bytes of `s` from `at`, little-endian (the first byte lowest).
#[inline]
fn word(s: &[u8], at: usize) -> Option<u64> {
    let b: [u8; 8] = s.get(at..at + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// Whether `a` and `b` are the same bytes: eight at a time (the last eight overlapping), or four
/// at a time when shorter. Member names and enum values are short, and a call to `memcmp` for
/// each costs more than the comparison.
#[inline]
pub fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        let mut at = 0;
        while at + 8 < n {
            if word(a, at) != word(b, at) {
                return false;
            }
            at += 8;
        }
        return word(a, n - 8) == word(b, n - 8);
    }
    let half = |s: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(s.get(at..at + 4)?.try_into().ok()?))
    };
    if n >= 4 {
        return half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4);
    }
    a.iter().zip(b).all(|(x, y)| x == y)
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `x` that is in `lo..=hi` (both ASCII).
#[inline]
fn within(x: u64, lo: u8, hi: u8) -> u64 {
    // Each byte with its high bit cleared plus a constant stays below 0x100, so no carry crosses
    // into the next byte; a non-ASCII byte is cleared by the caller.
    let x = x & !HIGH;
    let at_least_lo = x.wrapping_add(ONES * u64::from(0x80 - lo));
    let above_hi = x.wrapping_add(ONES * u64::from(0x7f - hi));
    at_least_lo & !above_hi & HIGH
}

/// The high bit of each byte of `x` that is an ASCII letter or digit.
#[inline]
fn alnum(x: u64) -> u64 {
    let letters = within(x | (ONES * 0x20), b'a', b'z');
    (letters | within(x, b'0', b'9')) & !(x & HIGH)
}

/// The length of the id at the start of `s` ([`is_id`]), ended by a byte that is not a letter or
/// a digit; `None` when it is not an id or is too near the end of `s` to read by words.
fn id_len(s: &[u8]) -> Option<usize> {
    // The prefix: lower-case letters and digits, then `_`, within the first eight bytes (our
    // longest prefix, `elicit`, has six), found in one read.
    let head = word(s, 0)?;
    let prefix = (within(head, b'a', b'z') | within(head, b'0', b'9')) & !(head & HIGH);
    let other = !prefix & HIGH;
    if other == 0 {
        return None;
    }
    let sep = other.trailing_zeros() as usize / 8;
    if s[sep] != b'_' || !is_our_prefix(&s[..sep]) {
        return None;
    }
    // The body: letters and digits, eight at a time, up to the first other byte.
    let mut at = sep + 1;
    let end = loop {
        let other = !alnum(word(s, at)?) & HIGH;
        if other != 0 {
            break at + other.trailing_zeros() as usize / 8;
        }
        at += 8;
        if at > sep + 1 + 64 {
            return None;
        }
    };
    (end > sep + 1 && end - sep - 1 <= 64).then_some(end)
}

/// The length of an instant written `YYYY-MM-DDTHH:MM:SSZ` at the start of `s`.
fn instant_len(s: &[u8]) -> Option<usize> {
    const FORM: &[u8; 20] = b"0000-00-00T00:00:00Z";
    /// `0xff` where the form has a separator, `0` where it has a digit.
    const SEPARATORS: [u8; 20] = {
        let mut m = [0u8; 20];
        let mut i = 0;
        while i < 20 {
            if FORM[i] != b'0' {
                m[i] = 0xff;
            }
            i += 1;
        }
        m
    };
    let matches = |at: usize| -> Option<bool> {
        // Each byte XOR its form's byte: a digit where the form has `0` gives 0..=9, anything
        // else 10 or more or a high bit; a separator must give exactly 0.
        let x = word(s, at)? ^ word(FORM, at)?;
        let digits = (x | x.wrapping_add(ONES * 0x76)) & HIGH == 0;
        Some(digits && x & word(&SEPARATORS, at)? == 0)
    };
    (matches(0)? && matches(8)? && matches(12)?).then_some(FORM.len())
}

/// A lower-case ASCII letter or a digit: an id's prefix.
const PREFIX: u8 = 1;
/// An ASCII letter or digit: an id's body.
const BODY: u8 = 2;
/// A digit, `T`, `Z`, `:`, `.`, `+` or `-`: an instant's.
const TIME: u8 = 4;

/// The classes of each byte, for one pass over a declared string.
const BYTE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            t[b] |= PREFIX;
        }
        if c.is_ascii_alphanumeric() {
            t[b] |= BODY;
        }
        if c.is_ascii_digit() || matches!(c, b'T' | b'Z' | b':' | b'.' | b'+' | b'-') {
            t[b] |= TIME;
        }
        b += 1;
    }
    t
};

/// An id's shape: one of the service's own prefixes ([`is_our_prefix`]), one `_`, then up to 64
/// letters and digits (`cmp_0mhh…`, `key_VECFOkBoPCcq3rfr`). A key (`sgn_test_…_…`) has more than
/// one `_`, and a token with an id's shape (`ghp_…`, `npm_…`, `whsec_…`) another prefix: neither
/// is one.
pub fn is_id(raw: &[u8]) -> bool {
    let Some(sep) = raw.iter().position(|&b| BYTE[usize::from(b)] & PREFIX == 0) else {
        return false;
    };
    let rest = &raw[sep + 1..];
    raw[sep] == b'_'
        && is_our_prefix(&raw[..sep])
        && (1..=64).contains(&rest.len())
        && rest.iter().all(|&b| BYTE[usize::from(b)] & BODY != 0)
}

/// Whether `prefix` begins the service's own ids: a kind's ([`crate::ids::Kind::PREFIXES`]) or
/// another identifier it shows (an MCP question, a webhook drill and message, a request:
/// `runs::OTHER_ID_PREFIXES`). A new kind is recognised without a line here.
pub fn is_our_prefix(prefix: &[u8]) -> bool {
    std::str::from_utf8(prefix).is_ok_and(|p| {
        crate::ids::Kind::is_prefix(p) || crate::redact::runs::OTHER_ID_PREFIXES.contains(&p)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer with a member of each shape.
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Declared {
        #[schemars(regex(pattern = "^cmp_"))]
        id: String,
        #[schemars(extend("const" = "company"))]
        object: &'static str,
        name: String,
        count: i64,
        #[schemars(extend("format" = "date-time"))]
        created_at: String,
        #[schemars(extend("enum" = ["active", "paused"]))]
        status: String,
        #[serde(rename = "rawKey")]
        raw_key: String,
        pwd: String,
        tags: Vec<String>,
        extra: serde_json::Map<String, Value>,
        // Branches of one shape, and of two.
        #[schemars(schema_with = "null_or_time")]
        maybe: Option<String>,
        #[schemars(schema_with = "time_or_text")]
        mixed: String,
    }

    fn null_or_time(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"anyOf": [{"type": "null"}, {"type": "string", "format": "date-time"}]})
    }

    fn time_or_text(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"anyOf": [{"type": "string", "format": "date-time"}, {"type": "string"}]})
    }

    /// Names and values that would be written escaped.
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Escaped {
        #[serde(rename = "a\"b")]
        #[schemars(extend("format" = "date-time"))]
        quoted: String,
        #[schemars(extend("enum" = ["plain", "with\"quote", "back\\slash"]))]
        kind: String,
    }

    #[test]
    fn a_schema_declares_its_fields() {
        let s = Shape::of_schema(&crate::jsonschema::response::<Declared>());
        let m = |n: &str| s.member(n).cloned();
        assert_eq!(m("id"), Some(Shape::Id));
        assert_eq!(m("object"), Some(Shape::Enum(vec!["company".into()])));
        assert_eq!(m("name"), Some(Shape::Text));
        assert_eq!(m("count"), Some(Shape::Scalar));
        assert_eq!(m("created_at"), Some(Shape::Time));
        assert_eq!(m("rawKey"), Some(Shape::Secret));
        assert_eq!(m("pwd"), Some(Shape::Announced));
        assert_eq!(m("tags"), Some(Shape::Array(Box::new(Shape::Text))));
        assert_eq!(m("extra"), Some(Shape::Object(Vec::new())));
        assert_eq!(m("maybe"), Some(Shape::Time));
        assert_eq!(m("mixed"), Some(Shape::Text));
        assert_eq!(m("nope"), None);
    }

    /// `value` as it sits in a document: its closing quote and what follows it.
    fn in_doc(value: &[u8]) -> Vec<u8> {
        let mut d = value.to_vec();
        d.extend_from_slice(b"\",\"next\":1}");
        d
    }

    #[test]
    fn a_value_is_passed_over_unread_only_when_it_would_be_skipped() {
        let e = Shape::Enum(vec!["company".into(), "list".into()]);
        let mut values: Vec<Vec<u8>> = [
            &b"cmp_0m5d4ruo6ao6qd5rc9dx"[..],
            b"acct_0m5d4ruo0fb72isqzrb5",
            b"key_VECFOkBoPCcq3rfr",
            b"a1_Z9",
            b"abcdefghijkl_x",
            b"abcdefghijklm_x",
            b"Cmp_0m5d4ruo6ao6qd5rc9dx",
            b"cmp__0m5d4ruo6ao6qd5rc9dx",
            b"cmp_0m5d4ruo_6ao6qd5rc9dx",
            b"sgn_test_VECFOkBoPCcq3rfr_secret",
            b"cmp_0m5d4ruo6ao6qd5rc9d\\u0078",
            b"cmp_0m5d4ruo6ao6qd5rc9d\xc3\xa9",
            b"_x",
            b"cmp_",
            b"2026-01-12T21:04:27Z",
            b"2026-01-12T21:04:27.5Z",
            b"2026-01-12",
            b"2026-01-12T21:04:2xZ",
            b"2026-01-12 21:04:27Z",
            b"2026-01-12T21:04:27z",
            b"company",
            b"companyx",
            b"compan",
            b"list",
            b"Northwind Pharmacy",
            b"",
        ]
        .iter()
        .map(|v| v.to_vec())
        .collect();
        values.push([b"cmp_".as_slice(), &[b'a'; 64]].concat());
        values.push([b"cmp_".as_slice(), &[b'a'; 65]].concat());
        // Every byte in every position of an id and of an instant.
        for base in [&b"cmp_0m5d4ruo6ao6qd5rc9dx"[..], b"2026-01-12T21:04:27Z"] {
            for at in 0..base.len() {
                for b in 0u8..=255 {
                    let mut v = base.to_vec();
                    v[at] = b;
                    values.push(v);
                }
            }
        }
        let mut passed = 0;
        for v in &values {
            // The general way reads the string up to its quote first.
            let raw = match v.iter().position(|&b| b == b'"' || b == b'\\') {
                Some(i) => &v[..i],
                None => &v[..],
            };
            for shape in [&Shape::Id, &Shape::Time, &e, &Shape::Text, &Shape::Any] {
                if let Some(n) = declared_len(shape, &in_doc(v)) {
                    assert_eq!(
                        &v[..n],
                        raw,
                        "{:?} as {shape:?}",
                        String::from_utf8_lossy(v)
                    );
                    assert!(
                        n == raw.len() && skips(shape, raw),
                        "{:?} passed over as {shape:?}",
                        String::from_utf8_lossy(v)
                    );
                    passed += 1;
                }
            }
        }
        assert!(passed > 100, "{passed}");
        // Our own ids and instants are what this is for.
        for (shape, v) in [
            (&Shape::Id, &b"cmp_0m5d4ruo6ao6qd5rc9dx"[..]),
            (&Shape::Id, b"key_VECFOkBoPCcq3rfr"),
            (&Shape::Time, b"2026-01-12T21:04:27Z"),
            (&e, b"company"),
        ] {
            assert_eq!(declared_len(shape, &in_doc(v)), Some(v.len()));
        }
        // Too near the end of the document to read by words: the general way.
        assert_eq!(declared_len(&Shape::Id, b"a_b\""), None);
    }

    #[test]
    fn same_bytes_are_told_from_any_other() {
        let base: Vec<u8> = (0..24u8).map(|i| b'a' + i).collect();
        for n in 0..=base.len() {
            let a = &base[..n];
            assert!(same(a, a), "{n}");
            // Every byte changed to each of the 256 values, and every other length.
            for at in 0..n {
                for b in 0..=255u8 {
                    let mut other = a.to_vec();
                    other[at] = b;
                    assert_eq!(same(a, &other), a == &other[..], "{n} {at} {b}");
                }
            }
            for m in 0..=base.len() {
                assert_eq!(same(a, &base[..m]), n == m, "{n} {m}");
            }
        }
    }

    #[test]
    fn a_name_or_a_value_written_escaped_is_not_declared() {
        let s = Shape::of_schema(&crate::jsonschema::response::<Escaped>());
        assert_eq!(s.member("a\"b"), None);
        assert_eq!(s.member("kind"), Some(&Shape::Enum(vec!["plain".into()])));
    }

    #[test]
    fn a_declaration_holds_only_for_values_of_its_shape() {
        assert!(skips(&Shape::Id, b"cmp_0mhh4zb1k0000000000a1"));
        assert!(skips(&Shape::Id, b"key_VECFOkBoPCcq3rfr"));
        assert!(!skips(&Shape::Id, b"sgn_test_VECFOkBoPCcq3rfr_secret"));
        assert!(!skips(&Shape::Id, b"password=hunter2"));
        assert!(!skips(&Shape::Id, b"Cmp_x"));
        for not_an_id in [
            &b"cmp_"[..],
            b"abcdefghijklm_x",
            b"abc",
            b"_x",
            b"cmp_a-b",
            b"cmp_\xc3\xa9",
        ] {
            assert!(!is_id(not_an_id), "{not_an_id:?}");
        }
        assert!(is_id(b"cmp_x") && is_id(b"elicit_Z9") && is_id(b"key_VECFOkBoPCcq3rfr"));
        // A token with an id's shape is not one of ours.
        for token in [
            &b"ghp_R4nd0mT0k3nV4lu3F0rT3st1ngOnly0a1b2"[..],
            b"npm_R4nd0mT0k3nV4lu3F0rT3st1ngOnly0a1b2",
            b"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            b"gho_x",
            b"sk_x",
        ] {
            assert!(!is_id(token) && !skips(&Shape::Id, token), "{token:?}");
        }
        let ours = crate::ids::Kind::PREFIXES
            .iter()
            .chain(crate::redact::runs::OTHER_ID_PREFIXES);
        for p in ours {
            assert!(is_our_prefix(p.as_bytes()), "{p}");
        }
        assert!(skips(&Shape::Time, b"2026-03-01T10:00:00.000Z"));
        assert!(!skips(&Shape::Time, b"2026 password is hunter2"));
        let e = Shape::Enum(vec!["active".into()]);
        assert!(skips(&e, b"active") && !skips(&e, b"active pwd=x"));
        assert!(!skips(&Shape::Text, b"x") && !skips(&Shape::Scalar, b"1"));
    }
}
