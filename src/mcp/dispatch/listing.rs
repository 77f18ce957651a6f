//! What `tools/list` and `prompts/list` do alike: an opaque offset cursor, pages of a fixed size,
//! `nextCursor` while more follow, and on the 2026-07-28 wire the cache hints (each list depends
//! only on the key's scopes, so it is private to the caller).

use crate::mcp::protocol::RpcError;
use crate::mcp::reply::{ok, rpc_err, Out};
use base64::Engine;
use serde_json::{json, Value};

/// One kind of paged list.
pub(super) struct Listing {
    /// The JSON-RPC method, named in errors (`tools/list`).
    pub method: &'static str,
    /// The result member holding the page (`tools`), also the cursor's prefix.
    pub member: &'static str,
    pub page_size: usize,
    /// How long a 2026-07-28 client may cache the list.
    pub ttl_ms: u64,
}

/// The page of `len` items starting at `offset`, and the offset of the next page if any.
pub fn page(len: usize, offset: usize, size: usize) -> (std::ops::Range<usize>, Option<usize>) {
    let end = (offset + size).min(len);
    (offset.min(len)..end, (end < len).then_some(end))
}

impl Listing {
    fn encode_cursor(&self, offset: usize) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{}:{offset}", self.member))
    }

    fn decode_cursor(&self, c: &str) -> Option<usize> {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(c)
            .ok()?;
        std::str::from_utf8(&bytes)
            .ok()?
            .strip_prefix(self.member)?
            .strip_prefix(':')?
            .parse()
            .ok()
    }

    /// The answer to a list request over `items` (those the caller may see), each rendered by
    /// `render`; a cursor that is not one of ours, or past the end, is -32602.
    pub fn answer<T>(
        &self,
        id: &Value,
        params: Option<&Value>,
        modern: bool,
        items: &[T],
        render: impl Fn(&T) -> Value,
    ) -> Out {
        let offset = match params.and_then(|p| p.get("cursor")) {
            None | Some(Value::Null) => Some(0),
            Some(Value::String(c)) => self.decode_cursor(c),
            Some(_) => None,
        };
        let Some(offset) = offset.filter(|o| *o <= items.len()) else {
            return rpc_err(
                id,
                RpcError::invalid_params(format!(
                    "Invalid cursor: pass a `nextCursor` from {}.",
                    self.method
                )),
                modern,
            );
        };
        let (range, next) = page(items.len(), offset, self.page_size);
        let mut result =
            json!({ self.member: items[range].iter().map(render).collect::<Vec<_>>() });
        if let Some(n) = next {
            result["nextCursor"] = json!(self.encode_cursor(n));
        }
        if modern {
            // Required on the 2026-07-28 wire; the list depends on the key's scopes.
            result["ttlMs"] = json!(self.ttl_ms);
            result["cacheScope"] = json!("private");
        }
        ok(id, result, modern)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_per_list_and_pages_split() {
        let tools = Listing {
            method: "tools/list",
            member: "tools",
            page_size: 50,
            ttl_ms: 1,
        };
        let prompts = Listing {
            member: "prompts",
            method: "prompts/list",
            ..tools
        };
        assert_eq!(tools.decode_cursor(&tools.encode_cursor(50)), Some(50));
        // One list's cursor is not another's.
        assert_eq!(prompts.decode_cursor(&tools.encode_cursor(50)), None);
        assert_eq!(tools.decode_cursor("bm9wZQ"), None);
        assert_eq!(page(28, 0, 50), (0..28, None));
        assert_eq!(page(28, 0, 20), (0..20, Some(20)));
        assert_eq!(page(28, 20, 20), (20..28, None));
        assert_eq!(page(0, 0, 20), (0..0, None));
    }
}
