//! An observation made fit to keep: its query and body passed through the same redactor as MCP
//! output ([`crate::redact`]) and capped, its problem body redacted. Runs on the journal's writer
//! thread, never on the request's.

use super::codec::Fields;
use crate::http::observe::{cut, Observation};
use serde_json::Value;

/// Bytes of a query, body or problem copy kept; a longer one is cut and marked.
pub const CAP_BYTES: usize = 8 * 1024;

/// A journal row before it has a sequence number.
pub struct Row {
    pub o: Observation,
    pub problem_code: Option<String>,
    pub query: Option<String>,
    /// The redacted body (JSON text), or its first [`CAP_BYTES`] when `body_truncated`.
    pub body: Option<String>,
    pub body_truncated: bool,
    /// Bytes of the body as sent (the copy may be cut, or omitted when it is not JSON).
    pub body_bytes: usize,
    pub problem: Option<String>,
}

fn is_json(media_type: Option<&str>) -> bool {
    let essence = media_type
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || essence.ends_with("+json")
}

/// The query string as a redacted JSON object, written straight from its pairs (no
/// `serde_json::Value` built and dropped per request): each name as it was sent, in order, and
/// its value, or `[REDACTED]` under a secret name, or scrubbed of secret-shaped parts; what
/// [`crate::redact::redact_value`] would make of the same object. A query the router refuses
/// (not percent-encoded UTF-8, a name given twice) shows only that it was there.
fn query_copy(query: &str) -> Option<String> {
    if query.is_empty() {
        return None;
    }
    // Names and values without escapes are slices of the query itself: nothing is allocated.
    let Ok(pairs) = crate::http::query::pairs(query) else {
        return Some(r#"{"_undecodable":true}"#.to_string());
    };
    let mut out = Vec::with_capacity(query.len() + 8);
    out.push(b'{');
    for (name, value) in &pairs {
        if out.len() > 1 {
            out.push(b',');
        }
        json_string(&mut out, name);
        out.push(b':');
        if crate::redact::is_secret_field(name) {
            json_string(&mut out, crate::redact::REDACTED);
        } else {
            json_string(&mut out, &crate::redact::redact_str(value));
        }
    }
    out.push(b'}');
    let text = String::from_utf8(out).ok()?;
    Some(if text.len() > CAP_BYTES {
        r#"{"_truncated":true}"#.to_string()
    } else {
        text
    })
}

/// `s` as a JSON string, escaped as `serde_json` escapes it.
fn json_string(out: &mut Vec<u8>, s: &str) {
    // Writing a `&str` into a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// `code` of a problem, else the last segment of its `type`.
fn problem_code(problem: &Value) -> Option<String> {
    if let Some(code) = problem["code"].as_str() {
        return Some(code.to_string());
    }
    problem["type"]
        .as_str()
        .and_then(|t| t.rsplit('/').next())
        .map(str::to_string)
}

impl Row {
    pub fn from(o: Observation) -> Row {
        let query = query_copy(&o.query);
        let body_bytes = o.body_sent;
        let (mut body, mut body_truncated) = (None, false);
        if !o.body.is_empty() && is_json(o.body_type.as_deref()) {
            if &o.body[..] == b"{}" {
                // A tool called with no arguments: nothing to parse or redact.
                body = Some("{}".to_string());
            } else if let Ok(mut v) = serde_json::from_slice::<Value>(&o.body) {
                crate::redact::redact_value(&mut v);
                let text = v.to_string();
                body_truncated = text.len() > CAP_BYTES;
                body = Some(cut(&text, CAP_BYTES).to_string());
            }
        }
        let (mut problem, mut code) = (None, None);
        if o.status >= 400 && !o.response.is_empty() {
            if let Ok(mut v) = serde_json::from_slice::<Value>(&o.response) {
                crate::redact::redact_value(&mut v);
                code = problem_code(&v);
                let text = v.to_string();
                if text.len() <= CAP_BYTES {
                    problem = Some(text);
                }
            }
        }
        Row {
            o,
            problem_code: code,
            query,
            body,
            body_truncated,
            body_bytes,
            problem,
        }
    }
}

impl Row {
    /// The row as the segment codec writes it, numbered `seq`.
    pub fn fields(&self, seq: i64) -> Fields<'_> {
        let o = &self.o;
        Fields {
            seq,
            account_id: o.account_id.as_deref(),
            company_id: o.company_id.as_deref(),
            key_id: o.key_id.as_deref(),
            client_id: o.client_id.as_deref(),
            at_ms: o.at_ms,
            wall_ms: o.wall_ms,
            duration_us: i64::try_from(o.duration_us).unwrap_or(i64::MAX),
            method: o.method.as_str(),
            route: o.route,
            operation_id: o.operation_id,
            creates: o.creates,
            list: o.list,
            status: o.status,
            problem_code: self.problem_code.as_deref(),
            request_id: &o.request_id,
            idempotency_key: o.idempotency_key.as_deref(),
            replayed: o.replayed,
            fault: o.fault.as_deref(),
            retry_after: o.retry_after,
            via: o.via,
            tool: o.tool.as_deref(),
            credentials: o.credentials,
            if_match: o.if_match,
            query: self.query.as_deref(),
            body: self.body.as_deref(),
            body_truncated: self.body_truncated,
            body_bytes: i64::try_from(self.body_bytes).unwrap_or(i64::MAX),
            problem: self.problem.as_deref(),
            next_cursor: o.next_cursor.as_deref(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    /// The object the journal first built for a query: the oracle [`query_copy`] must match.
    fn query_copy_by_value(query: &str) -> Option<String> {
        if query.is_empty() {
            return None;
        }
        let mut map = Map::new();
        match crate::http::query::parse(query) {
            Ok(pairs) => {
                for (k, v) in pairs {
                    map.entry(k).or_insert(Value::String(v));
                }
            }
            Err(_) => {
                map.insert("_undecodable".into(), Value::Bool(true));
            }
        }
        let mut v = Value::Object(map);
        crate::redact::redact_value(&mut v);
        Some(v.to_string())
    }

    #[test]
    fn the_query_copy_is_what_redacting_the_query_object_gives() {
        let queries = [
            "",
            "limit=20",
            "limit=20&cursor=dev_0m5d4ruo5fepbn59k9ts",
            "status=online&company_id=cmp_1&limit=5",
            "api_key=sgn_test_fwJ6Gr6KLbkW37oC_abcdefghijklmnopqrstuvwx&limit=5",
            "Password=hunter2&client_secret=x&secret_last4=SFf2",
            "q=Bearer%20eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
            "note=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw&x=1",
            "q=%22quoted%22%5Cslash%0Anewline%09tab%01ctl",
            "q=caf%C3%A9+%E2%9C%93&empty=&flag",
            "a=1&a=2",
            "bad=%ZZ",
            "bad=%C3",
            "=novalue&%3D=eq",
            "x=1&&y=2&x",
            "flag&flag=",
            "k=a=b",
        ];
        for q in queries {
            assert_eq!(query_copy(q), query_copy_by_value(q), "query {q:?}");
        }
    }

    #[test]
    fn query_values_are_redacted() {
        let q = query_copy("api_key=sgn_test_abc_def&limit=5").unwrap();
        assert!(!q.contains("sgn_test_abc_def"), "{q}");
        assert!(q.contains(r#""limit":"5""#));
    }
}
