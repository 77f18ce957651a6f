//! One JSON-RPC reply ([`Out`]) and the ways every method answers: a result (with the members
//! every 2026-07-28 result carries) or an error. Shared by the dispatch and the methods below
//! it; it imports no sibling but [`super::protocol`].

use super::protocol::{self, RpcError};
use serde_json::{json, Value};
use std::sync::OnceLock;

/// One JSON-RPC reply: its HTTP status and serialized message; a new session id for `initialize`.
pub struct Out {
    pub status: u16,
    pub body: String,
    pub session: Option<String>,
    /// An event stream written later instead of `body` (confirmation by elicitation).
    pub stream: Option<crate::http::stream::Streamed>,
}

impl Out {
    pub(super) fn new(status: u16, body: String) -> Out {
        Out {
            status,
            body,
            session: None,
            stream: None,
        }
    }
}

/// The fields every 2026-07-28 result carries, as JSON members to append to a result object.
pub(super) fn modern_members() -> &'static str {
    static S: OnceLock<String> = OnceLock::new();
    S.get_or_init(|| {
        format!(
            r#","resultType":"complete","_meta":{{"{}":{}}}"#,
            protocol::META_SERVER_INFO,
            protocol::server_info()
        )
    })
}

fn with_modern(mut result: Value, modern: bool) -> Value {
    if modern {
        result["resultType"] = json!("complete");
        result["_meta"] = json!({ protocol::META_SERVER_INFO: protocol::server_info() });
    }
    result
}

pub(super) fn ok(id: &Value, result: Value, modern: bool) -> Out {
    Out::new(
        200,
        protocol::result_response(id, with_modern(result, modern)).to_string(),
    )
}

pub fn err(id: Option<&Value>, e: RpcError, status: u16) -> Out {
    Out::new(status, protocol::error_response(id, &e).to_string())
}

pub(super) fn rpc_err(id: &Value, e: RpcError, modern: bool) -> Out {
    let status = if modern { e.modern_status() } else { 200 };
    err(Some(id), e, status)
}
