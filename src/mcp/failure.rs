//! Why a tool call failed, in a form an agent can act on: the message (the text of the `isError`
//! result) and, as its `structuredContent`, `{"error": {code, status, message, retry_after?}}`.
//! A REST refusal keeps its problem's code and status and its `Retry-After`; the MCP layer's own
//! refusals (a stale preview, a used confirmation) get codes of their own.

use crate::http::Response;
use serde_json::{json, Value};

#[derive(Debug)]
pub struct Failure {
    /// A stable machine-readable code (`insufficient_tokens`, `confirmation_used`, ...).
    pub code: String,
    /// The HTTP status the REST API answers (or would answer) for the same refusal.
    pub status: u16,
    pub message: String,
    /// Seconds to wait before retrying, when the refusal says so.
    pub retry_after: Option<u64>,
}

impl Failure {
    pub fn new(code: &str, status: u16, message: impl Into<String>) -> Failure {
        Failure {
            code: code.to_string(),
            status,
            message: message.into(),
            retry_after: None,
        }
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
            .unwrap_or_else(|| format!("http_{}", resp.status.as_u16()));
        Failure {
            code,
            status: resp.status.as_u16(),
            message,
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

    /// The `structuredContent` of the error result.
    pub fn structured(&self, message: &str) -> Value {
        let mut error = json!({"code": self.code, "status": self.status, "message": message});
        if let Some(secs) = self.retry_after {
            error["retry_after"] = json!(secs);
        }
        json!({ "error": error })
    }
}

/// The branch every tool's output schema gains, so a client that validates the structured content
/// of error results too (the TypeScript SDK does) accepts them.
pub fn schema_branch() -> Value {
    json!({"required": ["error"], "properties": {"error": {"type": "object",
        "required": ["code", "status", "message"]}}})
}
