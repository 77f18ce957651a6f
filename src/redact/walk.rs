//! Redaction of a serialized JSON document by its [`Shape`], without parsing it into a tree: one
//! pass over the bytes that scans only the strings the shape says can hold text, and splices
//! each redacted string in place. A document with nothing to redact comes back as the same bytes
//! (borrowed); one with something comes back with only those strings changed, every other byte
//! as it was. Each redacted member is reported by its path (`data[0].headline`).

use super::shape::{self, Shape};
use super::triage;
use std::borrow::Cow;

/// A redacted document and the paths of the members whose value it changed, in document order.
pub struct Redacted<'a> {
    pub json: Cow<'a, [u8]>,
    pub fields: Vec<String>,
}

/// One step of a path: a member name (as it sits in the JSON text) or an array index.
#[derive(Clone, Copy)]
enum Step<'a> {
    Member(&'a [u8]),
    Index(usize),
}

struct Walker<'a> {
    /// The document, checked to be UTF-8 once; `doc` is its bytes.
    text: &'a str,
    doc: &'a [u8],
    at: usize,
    path: Vec<Step<'a>>,
    /// `(start, end, replacement)` in document order.
    edits: Vec<(usize, usize, Vec<u8>)>,
    fields: Vec<String>,
}

/// `json` redacted as `shape` declares; `None` when it is not a JSON document.
pub fn redact<'a>(json: &'a [u8], shape: &Shape) -> Option<Redacted<'a>> {
    redact_text(std::str::from_utf8(json).ok()?, shape)
}

/// [`redact`] of a document already known to be UTF-8.
pub fn redact_text<'a>(text: &'a str, shape: &Shape) -> Option<Redacted<'a>> {
    let json = text.as_bytes();
    let mut w = Walker {
        text,
        doc: json,
        at: 0,
        path: Vec::new(),
        edits: Vec::new(),
        fields: Vec::new(),
    };
    w.ws();
    w.value(shape)?;
    w.ws();
    if w.at != json.len() {
        return None;
    }
    if w.edits.is_empty() {
        return Some(Redacted {
            json: Cow::Borrowed(json),
            fields: w.fields,
        });
    }
    let mut out = Vec::with_capacity(json.len());
    let mut copied = 0;
    for (start, end, with) in &w.edits {
        out.extend_from_slice(&json[copied..*start]);
        out.extend_from_slice(with);
        copied = *end;
    }
    out.extend_from_slice(&json[copied..]);
    Some(Redacted {
        json: Cow::Owned(out),
        fields: w.fields,
    })
}

/// Deeper documents are not walked (the caller redacts them the slow way).
const MAX_DEPTH: usize = 256;

/// `"[REDACTED]"` as JSON.
const MARKER_JSON: &[u8] = b"\"[REDACTED]\"";

impl<'a> Walker<'a> {
    fn peek(&self) -> Option<u8> {
        self.doc.get(self.at).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        self.ws();
        (self.peek()? == b).then(|| self.at += 1)
    }

    /// The raw bytes of a string at the cursor (between its quotes) and whether it has escapes.
    fn string(&mut self) -> Option<(usize, usize, bool)> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.at + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            i += memchr::memchr2(b'"', b'\\', self.doc.get(i..)?)?;
            if self.doc[i] == b'"' {
                break;
            }
            escaped = true;
            i += 2;
        }
        self.at = i + 1;
        Some((start, i, escaped))
    }

    /// Skips a number, `true`, `false` or `null`.
    fn scalar(&mut self) -> Option<()> {
        let n = self.doc[self.at..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.'))
            .count();
        (n > 0).then(|| self.at += n)
    }

    fn record(&mut self) {
        let mut p = String::new();
        for step in &self.path {
            match step {
                Step::Member(m) => {
                    if !p.is_empty() {
                        p.push('.');
                    }
                    p.push_str(&String::from_utf8_lossy(m));
                }
                Step::Index(i) => p.push_str(&format!("[{i}]")),
            }
        }
        self.fields.push(p);
    }

    fn value(&mut self, shape: &Shape) -> Option<()> {
        if self.path.len() > MAX_DEPTH {
            return None;
        }
        self.ws();
        let start = self.at;
        match (self.peek()?, shape) {
            (b'n', Shape::Secret | Shape::Announced) => self.scalar(),
            (b'"', Shape::Announced) | (_, Shape::Secret) => {
                self.skip_value()?;
                self.edits.push((start, self.at, MARKER_JSON.to_vec()));
                self.record();
                Some(())
            }
            (b'{', _) => self.object(shape),
            (b'[', Shape::Array(items)) => self.array(items),
            (b'[', _) => self.array(&Shape::Any),
            (b'"', _) => self.string_value(shape),
            _ => self.scalar(),
        }
    }

    /// The string at the cursor, read as `shape` declares: passed over when it has the declared
    /// shape, scanned as text otherwise.
    #[inline]
    fn string_value(&mut self, shape: &Shape) -> Option<()> {
        let start = self.at;
        let declared = matches!(shape, Shape::Id | Shape::Time | Shape::Enum(_));
        if declared {
            if let Some(n) = shape::declared_len(shape, &self.doc[start + 1..]) {
                self.at = start + n + 2;
                return Some(());
            }
        } else {
            // Free text (nothing it could be skipped as): its end found and its triage made in
            // one pass; a text that triage leaves out needs nothing more. An escaped one goes
            // the general way.
            if let Some((end, verdict)) = triage::triage_quoted(self.text, start + 1) {
                self.at = end + 1;
                if verdict != triage::Triage::Clean {
                    self.text(start, start + 1, end, false)?;
                }
                return Some(());
            }
        }
        let (from, to, escaped) = self.string()?;
        if escaped || matches!(shape, Shape::Text) || !shape::skips(shape, &self.doc[from..to]) {
            self.text(start, from, to, escaped)?;
        }
        Some(())
    }

    /// Skips any value.
    fn skip_value(&mut self) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => self.scalar(),
        }
    }

    /// A string that may hold text: scanned, and replaced when a secret is in it.
    fn text(&mut self, start: usize, from: usize, to: usize, escaped: bool) -> Option<()> {
        let redacted = if escaped {
            let s: String = serde_json::from_slice(&self.doc[start..to + 1]).ok()?;
            match super::text::redact_str(&s) {
                Cow::Owned(r) => r,
                Cow::Borrowed(_) => return Some(()),
            }
        } else {
            let s = self.text.get(from..to)?;
            match super::text::redact_str(s) {
                Cow::Owned(r) => r,
                Cow::Borrowed(_) => return Some(()),
            }
        };
        let json = serde_json::to_vec(&redacted).ok()?;
        self.edits.push((start, to + 1, json));
        self.record();
        Some(())
    }

    fn object(&mut self, shape: &Shape) -> Option<()> {
        self.at += 1;
        self.ws();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        let mut next = 0;
        loop {
            self.ws();
            // An answer's members come in their declared order: the next declared name, quoted,
            // is usually what is here, compared in place.
            let (from, to, escaped, declared) = match self.predicted(shape, next) {
                Some((name, member)) => {
                    let from = self.at + 1;
                    self.at = from + name.len() + 1;
                    (from, from + name.len(), false, Some((next, member)))
                }
                None => {
                    let (from, to, escaped) = self.string()?;
                    let declared = if escaped {
                        None
                    } else {
                        shape.member_after(&self.doc[from..to], next)
                    };
                    (from, to, escaped, declared)
                }
            };
            self.eat(b':')?;
            let undeclared;
            let member = match declared {
                Some((k, s)) => {
                    next = k + 1;
                    s
                }
                None => {
                    let key: Cow<'_, str> = if escaped {
                        Cow::Owned(serde_json::from_slice(&self.doc[from - 1..to + 1]).ok()?)
                    } else {
                        Cow::Borrowed(self.text.get(from..to)?)
                    };
                    undeclared = match shape.member(&key) {
                        Some(s) => s.clone(),
                        None => shape::by_name(&key),
                    };
                    &undeclared
                }
            };
            // A string declared as text, an id, an instant or an enum value is read here, without
            // the general step into the value; one that has its declared shape needs no path.
            let string = matches!(
                (self.doc.get(self.at), member),
                (
                    Some(b'"'),
                    Shape::Text | Shape::Id | Shape::Time | Shape::Enum(_)
                )
            );
            // Only an id, an instant or an enum value can be passed over ([`shape::declared_len`]).
            let passed = match (string, member) {
                (true, Shape::Id | Shape::Time | Shape::Enum(_)) => {
                    shape::declared_len(member, &self.doc[self.at + 1..])
                }
                _ => None,
            };
            if let Some(n) = passed {
                self.at += n + 2;
            } else {
                self.path.push(Step::Member(&self.doc[from..to]));
                match string {
                    true => self.string_value(member)?,
                    false => self.value(member)?,
                }
                self.path.pop();
            }
            self.ws();
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The declared member `next` of `shape` when its name, quoted, is at the cursor.
    fn predicted<'s>(&self, shape: &'s Shape, next: usize) -> Option<(&'s str, &'s Shape)> {
        let Shape::Object(fields) = shape else {
            return None;
        };
        let (name, member) = fields.get(next)?;
        let quoted = self.doc.get(self.at..self.at + name.len() + 2)?;
        let hit = quoted[0] == b'"'
            && quoted[name.len() + 1] == b'"'
            && shape::same(&quoted[1..=name.len()], name.as_bytes());
        hit.then_some((name.as_str(), member))
    }

    fn array(&mut self, items: &Shape) -> Option<()> {
        self.at += 1;
        self.ws();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        let mut index = 0;
        loop {
            self.path.push(Step::Index(index));
            self.value(items)?;
            self.path.pop();
            index += 1;
            self.ws();
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}
