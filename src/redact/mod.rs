//! The one redactor every MCP response passes through: tool results (structured and text),
//! resources, error messages and JSON-RPC errors.
//!
//! Two rules, applied together:
//! - by field name: a field whose name says it holds a credential (`password`, `secret`, `rawKey`,
//!   `secret_hash`, `authorization`, `access_token`, `api_key`, ...) has its value replaced, and
//!   so has the string value of a member whose name announces one (`pwd`, `pass`, `token`);
//! - by value pattern ([`scan`]): wherever a string contains something shaped like a credential
//!   (our keys and webhook secrets, JWTs, `Bearer`/`Basic` values, argon2 hashes, GitHub, Stripe,
//!   AWS, Slack, Google, GitLab, npm, Twilio, Mailgun, Shopify, Hugging Face, Docker, New Relic,
//!   OpenAI, Anthropic and Azure AD secrets, PEM private keys, a URL's password, the value of
//!   `password=`, `password is …`, `"token": "…"` and the like, a password stated in words in
//!   another language or phrasing ([`words`]: `le mot de passe est …`, `密码是 …`, `login: u / …`,
//!   a Wi-Fi QR payload), base64 that decodes to one of these, or a random-looking run such as a
//!   secret without its prefix, unless it is a public media id) that part is replaced.
//!
//! Patterns are matched on a folded view of the text ([`fold`]: NFKC, invisible characters
//! dropped, percent-encoding, JSON/JavaScript escapes and HTML entities decoded) and the
//! replacement covers the original characters, so a secret is redacted whole or not at all.
//!
//! An answer whose type is known is redacted by its [`Shape`] ([`redact_json_as`]): only the
//! strings that can hold text are scanned; ids, instants, enum values and numbers are not.
//!
//! The word "token" alone is domain data here (brand tokens, token packs, token balances, token
//! transactions), so only the names of actual credential tokens count as secret.

mod fold;
mod known;
pub mod marker;
mod names;
mod pattern;
mod runs;
mod scan;
mod shape;
mod text;
mod triage;
mod walk;
mod words;

pub use names::is_secret_field;
pub use shape::Shape;
pub use text::{holds_secret, redact_str, REDACTED};
pub use triage::minted_id;
pub use walk::Redacted;

use serde_json::Value;
use std::borrow::Cow;

/// A serialized JSON document of unknown type, redacted: every string scanned, every member
/// judged by its name. The same bytes when there is nothing to redact; `None` when it is not JSON.
pub fn redact_json(json: &[u8]) -> Option<Cow<'_, [u8]>> {
    redact_json_as(json, &Shape::Any).map(|r| r.json)
}

/// A serialized JSON document redacted as its type declares ([`Shape`]), with the paths of the
/// members it changed. The same bytes (borrowed) when there is nothing to redact; otherwise only
/// the redacted strings differ. `None` when it is not JSON.
pub fn redact_json_as<'a>(json: &'a [u8], shape: &Shape) -> Option<Redacted<'a>> {
    walk::redact(json, shape)
}

/// [`redact_json_as`] of a document already checked to be UTF-8, as text: the same `&str` when
/// there is nothing to redact (so a caller that needs text checks the document once, not again
/// after redaction); `None` when it is not JSON.
pub fn redact_json_text_as<'a>(json: &'a str, shape: &Shape) -> Option<Cow<'a, str>> {
    match walk::redact_text(json, shape)?.json {
        Cow::Borrowed(_) => Some(Cow::Borrowed(json)),
        // Only whole strings were replaced, each by JSON text: still UTF-8.
        Cow::Owned(bytes) => String::from_utf8(bytes).ok().map(Cow::Owned),
    }
}

/// Redacts a JSON value in place (as [`redact_json`] does its text): secret-named fields lose
/// their value (a `null` stays `null`: an absent secret reveals nothing), and every string is
/// scrubbed of secret-shaped parts.
pub fn redact_value(v: &mut Value) {
    redact_value_fields(v);
}

/// [`redact_value`], reporting the paths of the members whose value it changed (`after.url`,
/// `differences[0].proposed`), in document order.
pub fn redact_value_fields(v: &mut Value) -> Vec<String> {
    let mut fields = Vec::new();
    redact_at(v, &Shape::Any, &At::Root, &mut fields);
    fields
}

/// Where a value sits in the document: written out as a path only for a member that changes.
enum At<'a> {
    Root,
    Member(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl At<'_> {
    fn path(&self) -> String {
        let mut p = String::new();
        self.write(&mut p);
        p
    }

    fn write(&self, p: &mut String) {
        match self {
            At::Root => {}
            At::Member(parent, name) => {
                parent.write(p);
                if !p.is_empty() {
                    p.push('.');
                }
                p.push_str(name);
            }
            At::Index(parent, i) => {
                parent.write(p);
                p.push_str(&format!("[{i}]"));
            }
        }
    }
}

fn redact_at(v: &mut Value, shape: &Shape, at: &At<'_>, fields: &mut Vec<String>) {
    match (v, shape) {
        (Value::Null, _) => {}
        (v @ Value::String(_), Shape::Announced) | (v, Shape::Secret) => {
            *v = Value::String(REDACTED.into());
            fields.push(at.path());
        }
        (Value::String(s), _) => {
            if let Cow::Owned(clean) = redact_str(s) {
                *s = clean;
                fields.push(at.path());
            }
        }
        (Value::Array(items), _) => {
            for (i, x) in items.iter_mut().enumerate() {
                redact_at(x, &Shape::Any, &At::Index(at, i), fields);
            }
        }
        (Value::Object(map), _) => {
            for (k, x) in map.iter_mut() {
                let member = At::Member(at, k);
                match x {
                    Value::Null => {}
                    // A number or a boolean changes only under a secret name (an announcing
                    // name hides a string only): the name's announcement is not looked at.
                    Value::Bool(_) | Value::Number(_) => {
                        if is_secret_field(k) {
                            *x = Value::String(REDACTED.into());
                            fields.push(member.path());
                        }
                    }
                    _ => redact_at(x, &shape::by_name(k), &member, fields),
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod corpus;
#[cfg(test)]
mod tests;
