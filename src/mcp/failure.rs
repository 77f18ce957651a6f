//! Why a tool call failed, in a form an agent can act on: the message (the text of the `isError`
//! result) and, as its `structuredContent`, `{"error": {code, status, message, retry_after?}}`.
//! A REST refusal keeps its problem's code and status and its `Retry-After`; the MCP layer's own
//! refusals (a stale preview, a used confirmation) get codes of their own. Every code is in the
//! style of the REST problem codes, lower-case words joined by `_` (`not_found`, `rate_limited`,
//! `confirmation_not_found`): a problem that has no `code` gives its type's slug in that style.
//! A refusal that says when to retry says it in its text too, not only in `retry_after`.

use crate::http::Response;
use crate::jsonschema;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

#[derive(Debug)]
pub struct Failure {
    /// A stable machine-readable code (`insufficient_tokens`, `confirmation_used`, ...).
    pub code: String,
    /// The HTTP status the REST API answers (or would answer) for the same refusal.
    pub status: u16,
    pub message: String,
    /// Seconds to wait before retrying, when the refusal says so.
    pub retry_after: Option<u64>,
    /// A fresh preview to show instead (a stale confirmation's, under a new confirmation id).
    /// Boxed: a failure travels in every `Result` of the MCP layer.
    pub preview: Option<Box<Value>>,
}

impl Failure {
    pub fn new(code: &str, status: u16, message: impl Into<String>) -> Failure {
        Failure {
            code: code.to_string(),
            status,
            message: message.into(),
            retry_after: None,
            preview: None,
        }
    }

    pub fn with_preview(mut self, preview: Value) -> Failure {
        self.preview = Some(Box::new(preview));
        self
    }

    pub fn with_retry_after(mut self, secs: u64) -> Failure {
        self.retry_after = Some(secs);
        self
    }

    /// A REST refusal: the problem's `code` (or its type's last segment), its status and its
    /// `Retry-After`, with `message` as the text.
    pub fn rest(resp: &Response, message: String) -> Failure {
        let problem = resp.body_json().filter(Value::is_object);
        let code = problem
            .as_ref()
            .and_then(|p| {
                p["code"].as_str().map(String::from).or_else(|| {
                    p["type"]
                        .as_str()
                        .and_then(|t| t.rsplit('/').next())
                        .filter(|s| !s.is_empty() && *s != "about:blank")
                        .map(String::from)
                })
            })
            .map(|c| code_style(&c))
            .unwrap_or_else(|| format!("http_{}", resp.status.as_u16()));
        Failure {
            code,
            status: resp.status.as_u16(),
            message,
            preview: None,
            retry_after: resp
                .headers
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse().ok()),
        }
    }

    /// The same refusal with its message prefixed.
    pub fn prefixed(mut self, prefix: &str) -> Failure {
        self.message.insert_str(0, prefix);
        self
    }

    /// The text of the error result: the message, and when to retry if it says so and the
    /// message does not already.
    pub fn text(&self) -> String {
        match self.retry_after {
            Some(secs) if !self.message.to_ascii_lowercase().contains("retry after") => {
                format!("{} Retry after {secs} seconds.", self.message)
            }
            _ => self.message.clone(),
        }
    }

    /// The `structuredContent` of the error result; `message` is its text ([`Failure::text`],
    /// redacted).
    pub fn structured(&self, message: &str) -> Value {
        let content = Structured {
            error: Detail {
                code: &self.code,
                status: self.status,
                message,
                retry_after: self.retry_after,
            },
            preview: self.preview.as_deref(),
        };
        serde_json::to_value(&content).unwrap_or_default()
    }
}

/// A code in the one style of error codes: lower-case words joined by `_` (`rate-limited` from a
/// problem type's slug is `rate_limited`).
pub fn code_style(code: &str) -> String {
    code.chars()
        .map(|c| match c {
            '-' | ' ' | '.' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// The branch every tool's output schema gains, so a client that validates the structured content
/// of error results too (the TypeScript SDK does) accepts them.
pub fn schema_branch() -> Value {
    let mut branch = jsonschema::response::<Structured<'static>>();
    // A branch of the output schema, whose root says the type.
    if let Some(m) = branch.as_object_mut() {
        m.remove("type");
    }
    branch
}

// The structured content of an error result (no doc comments: a description here would be
// repeated in every tool's output schema).
#[derive(Serialize, JsonSchema)]
struct Structured<'a> {
    error: Detail<'a>,
    // A stale confirmation's fresh preview (a pending change).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Value", extend("type" = "object"))]
    preview: Option<&'a Value>,
}

#[derive(Serialize, JsonSchema)]
struct Detail<'a> {
    code: &'a str,
    #[schemars(transform = jsonschema::plain_integer)]
    status: u16,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = jsonschema::absent_when_none)]
    retry_after: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_one_style_and_retries_are_in_the_text() {
        assert_eq!(code_style("rate-limited"), "rate_limited");
        assert_eq!(code_style("not-found"), "not_found");
        assert_eq!(code_style("confirmation_used"), "confirmation_used");
        let f = Failure::new("rate_limited", 429, "Too many calls.").with_retry_after(3);
        assert_eq!(f.text(), "Too many calls. Retry after 3 seconds.");
        let said = Failure::new("rate_limited", 429, "Slow down; retry after 3 seconds.")
            .with_retry_after(3);
        assert_eq!(said.text(), "Slow down; retry after 3 seconds.");
        let v = f.structured(&f.text());
        assert_eq!(v["error"]["retry_after"], 3);
        assert!(v.get("preview").is_none());
    }
}
