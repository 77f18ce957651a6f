//! JSON-RPC 2.0 messages and the protocol versions this server speaks.
//!
//! Two eras share the endpoint (MCP 2026-07-28, "Versioning and Compatibility"):
//! - legacy (2025-03-26, 2025-06-18, 2025-11-25): `initialize` handshake, optional session;
//! - modern (2026-07-28): no handshake, every request carries its version and client
//!   capabilities in `params._meta` (mirrored in headers), `server/discover` advertises versions.

use crate::redact;
use serde_json::{json, Map, Value};

/// Handshake-era versions, newest first.
pub const LEGACY_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// Per-request-envelope versions.
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];
pub const LATEST_LEGACY: &str = LEGACY_VERSIONS[0];
/// What a request without `MCP-Protocol-Version` (and without a session) speaks (transports spec).
pub const DEFAULT_VERSION: &str = "2025-03-26";

pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// Implementation-defined range: refusals at the HTTP layer (origin, session).
pub const SERVER_REFUSED: i64 = -32000;
pub const SESSION_NOT_FOUND: i64 = -32001;
/// The caller's rate-limit bucket is empty (`data`: `status` 429, `retry_after` seconds).
pub const RATE_LIMITED: i64 = -32029;
/// MCP-reserved codes of 2026-07-28.
pub const HEADER_MISMATCH: i64 = -32020;
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Every version we answer, newest first (what `server/discover` and version errors list).
pub fn supported_versions() -> Vec<&'static str> {
    MODERN_VERSIONS
        .iter()
        .chain(LEGACY_VERSIONS.iter())
        .copied()
        .collect()
}

pub fn known_legacy(v: &str) -> Option<&'static str> {
    LEGACY_VERSIONS.iter().copied().find(|x| *x == v)
}

pub fn known_modern(v: &str) -> Option<&'static str> {
    MODERN_VERSIONS.iter().copied().find(|x| *x == v)
}

/// Batches were removed in 2025-06-18; only 2025-03-26 has them.
pub fn allows_batches(version: &str) -> bool {
    version == "2025-03-26"
}

/// The number of messages in a batch body, counted without building them (so an oversized batch
/// is refused before it costs memory). `None` when the body is not a well-formed JSON array.
pub fn batch_len(body: &[u8]) -> Option<usize> {
    use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
    struct Count;
    impl<'de> Visitor<'de> for Count {
        type Value = usize;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON array")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
            let mut n = 0;
            while seq.next_element::<IgnoredAny>()?.is_some() {
                n += 1;
            }
            Ok(n)
        }
    }
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'[') {
        return None;
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let n = (&mut de).deserialize_seq(Count).ok()?;
    de.end().ok()?;
    Some(n)
}

pub fn server_info() -> Value {
    json!({
        "name": "signage",
        "title": "Signage sandbox",
        "version": env!("CARGO_PKG_VERSION"),
    })
}

/// A JSON-RPC error, before it is framed with an id.
#[derive(Debug, Clone)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
    pub fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }
    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_PARAMS, message)
    }
    pub fn unsupported_version(requested: &str) -> RpcError {
        RpcError::new(
            UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "Unsupported protocol version `{}`; supported: {}.",
                shorten(requested),
                supported_versions().join(", ")
            ),
        )
        .with_data(json!({"supported": supported_versions(), "requested": requested}))
    }

    /// The HTTP status for this error on the modern era (2026-07-28 Streamable HTTP): 400 for
    /// envelope and parameter errors, 404 for an unknown method.
    pub fn modern_status(&self) -> u16 {
        match self.code {
            PARSE_ERROR
            | INVALID_REQUEST
            | INVALID_PARAMS
            | HEADER_MISMATCH
            | UNSUPPORTED_PROTOCOL_VERSION => 400,
            METHOD_NOT_FOUND => 404,
            RATE_LIMITED => 429,
            _ => 200,
        }
    }

    pub fn to_value(&self) -> Value {
        let mut e = Map::new();
        e.insert("code".into(), json!(self.code));
        e.insert(
            "message".into(),
            Value::String(redact::redact_str(&self.message).into_owned()),
        );
        if let Some(data) = &self.data {
            let mut data = data.clone();
            redact::redact_value(&mut data);
            e.insert("data".into(), data);
        }
        Value::Object(e)
    }
}

/// Ids echoed in messages are cut short, like the REST errors do.
pub fn shorten(s: &str) -> String {
    if s.chars().count() <= 64 {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(64).collect::<String>())
    }
}

/// What a decoded message is.
pub enum Message<'a> {
    Request {
        id: &'a Value,
        method: &'a str,
        params: Option<&'a Value>,
    },
    Notification {
        method: &'a str,
    },
    /// A client's answer to a server request; we send none, so these are acknowledged and dropped.
    Response,
    /// Not a JSON-RPC 2.0 message; the id is kept when it could be read.
    Invalid {
        id: Option<&'a Value>,
        reason: &'static str,
    },
}

pub fn classify(v: &Value) -> Message<'_> {
    let Some(obj) = v.as_object() else {
        return Message::Invalid {
            id: None,
            reason: "A JSON-RPC message must be an object.",
        };
    };
    let id = obj.get("id").filter(|id| id.is_string() || id.is_number());
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Message::Invalid {
            id,
            reason: "`jsonrpc` must be \"2.0\".",
        };
    }
    match obj.get("method") {
        Some(Value::String(method)) => {
            let params = obj.get("params");
            if params.is_some_and(|p| !p.is_object() && !p.is_array()) {
                return Message::Invalid {
                    id,
                    reason: "`params` must be an object.",
                };
            }
            match obj.get("id") {
                None => Message::Notification { method },
                Some(_) => match id {
                    Some(id) => Message::Request { id, method, params },
                    None => Message::Invalid {
                        id: None,
                        reason: "A request id must be a string or a number (not null).",
                    },
                },
            }
        }
        Some(_) => Message::Invalid {
            id,
            reason: "`method` must be a string.",
        },
        None if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) => {
            Message::Response
        }
        None => Message::Invalid {
            id,
            reason: "Not a request, notification or response.",
        },
    }
}

/// `{"jsonrpc":"2.0","id":…,"error":…}`; `id` is `null` when the request's id is unknown.
pub fn error_response(id: Option<&Value>, err: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id.cloned().unwrap_or(Value::Null), "error": err.to_value()})
}

pub fn result_response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_messages() {
        let req = json!({"jsonrpc":"2.0","id":1,"method":"ping"});
        assert!(matches!(
            classify(&req),
            Message::Request { method: "ping", .. }
        ));
        let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        assert!(matches!(classify(&note), Message::Notification { .. }));
        let resp = json!({"jsonrpc":"2.0","id":"a","result":{}});
        assert!(matches!(classify(&resp), Message::Response));
        let null_id = json!({"jsonrpc":"2.0","id":null,"method":"ping"});
        assert!(matches!(
            classify(&null_id),
            Message::Invalid { id: None, .. }
        ));
        let v1 = json!({"jsonrpc":"1.0","id":3,"method":"ping"});
        assert!(matches!(
            classify(&v1),
            Message::Invalid { id: Some(_), .. }
        ));
    }

    #[test]
    fn batches_are_counted_without_parsing_them() {
        assert_eq!(batch_len(b" [1, {\"a\": [2, 3]}, \"x\"] "), Some(3));
        assert_eq!(batch_len(b"[]"), Some(0));
        assert_eq!(batch_len(br#"{"jsonrpc":"2.0"}"#), None);
        assert_eq!(batch_len(b"[1,2"), None);
        assert_eq!(batch_len(b"[1] x"), None);
    }

    #[test]
    fn error_messages_are_redacted() {
        let e = RpcError::invalid_params("Unknown tool: sgn_test_abcdef_ghij");
        assert_eq!(e.to_value()["message"], "Unknown tool: [REDACTED]");
    }
}
