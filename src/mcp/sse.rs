//! The event-stream framing of MCP answers (Streamable HTTP). Every stream opens with a priming
//! event (SEP-1699, MCP 2025-11-25): an event id, the `retry` field and no data, which clients
//! skip. Each message event carries an id of the same stream. signage does not resume a stream
//! (`GET /mcp` is 405): every stream carries its whole answer, and the ids only keep to the form a
//! client expects.

/// The `retry` field of the priming event: how long a client waits before reconnecting.
pub const RETRY_MS: u32 = 3_000;

/// The priming event of the stream answering request `stream`.
pub fn priming(stream: &str) -> String {
    format!("id: {stream}-0\nretry: {RETRY_MS}\ndata: \n\n")
}

/// The `n`th message event (from 1) of the stream answering request `stream`.
pub fn message(stream: &str, n: u32, json: &str) -> String {
    let mut out = String::with_capacity(json.len() + stream.len() + 40);
    out.push_str("event: message\nid: ");
    out.push_str(stream);
    out.push('-');
    out.push_str(&n.to_string());
    out.push_str("\ndata: ");
    out.push_str(json);
    out.push_str("\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_opens_with_an_id_a_retry_and_no_data() {
        assert_eq!(priming("req_1"), "id: req_1-0\nretry: 3000\ndata: \n\n");
        assert_eq!(
            message("req_1", 1, "{}"),
            "event: message\nid: req_1-1\ndata: {}\n\n"
        );
    }
}
