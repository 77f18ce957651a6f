//! An observation made fit to keep: its query and body passed through the same redactor as MCP
//! output ([`crate::redact`]) and the journal's own rules ([`scrub`]: names, URL credentials) and
//! capped, its problem body redacted, its `Idempotency-Key` kept as a digest only, its shape
//! computed. A request that belongs to no account (it did not authenticate) keeps no copy of
//! anything it sent: its entry is a few dozen bytes. Runs on the journal's writer thread, never on
//! the request's.

use super::codec::Fields;
use super::scrub;
use crate::http::observe::{cut, Observation};
use serde_json::Value;
use std::borrow::Cow;

/// Bytes of a query, body or problem copy kept; a longer one is cut and marked.
pub const CAP_BYTES: usize = 8 * 1024;

/// Bytes of a kept path or test name.
const PATH_CAP: usize = 512;
const TEST_NAME_CAP: usize = 200;

/// Operations whose body carries a credential as data (a login's username and password): never
/// copied, whatever their members are called (a password typed into the username field).
const CREDENTIAL_BODIES: &[&str] = &["login"];

/// A journal row before it has a sequence number.
pub struct Row {
    pub o: Observation,
    pub problem_code: Option<String>,
    pub path: Option<String>,
    pub shape: Option<String>,
    pub test_name: Option<String>,
    /// `sha256:…` of the `Idempotency-Key`.
    pub idempotency_key: Option<String>,
    /// The MCP tool, when it is one of the catalogue's.
    pub tool: Option<String>,
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
/// its value, or `[REDACTED]` under a secret name, or scrubbed of secret-shaped parts; a name that
/// holds a secret itself is replaced too ([`scrub::query_pair`]). A query the router refuses (not
/// percent-encoded UTF-8, a name given twice) shows only that it was there. Also the pairs as
/// kept, for the request's shape.
/// A query parameter as kept: its name and value, redacted.
type Kept<'a> = (Cow<'a, str>, Cow<'a, str>);

fn query_copy(query: &str) -> (Option<String>, Vec<Kept<'_>>) {
    if query.is_empty() {
        return (None, Vec::new());
    }
    // Names and values without escapes are slices of the query itself: nothing is allocated.
    let Ok(pairs) = crate::http::query::pairs(query) else {
        return (
            Some(r#"{"_undecodable":true}"#.to_string()),
            vec![(Cow::Borrowed("_undecodable"), Cow::Borrowed(""))],
        );
    };
    let mut hidden = 0;
    let kept: Vec<Kept<'_>> = pairs
        .into_iter()
        .map(|(name, value)| {
            let (n, v) = match (name, value) {
                (Cow::Borrowed(n), Cow::Borrowed(v)) => scrub::query_pair(n, v),
                (n, v) => {
                    let (n2, v2) = scrub::query_pair(&n, &v);
                    (Cow::Owned(n2.into_owned()), Cow::Owned(v2.into_owned()))
                }
            };
            // Names that held a secret stay distinct, as in a redacted JSON object.
            if n == crate::redact::REDACTED {
                hidden += 1;
                if hidden > 1 {
                    return (
                        Cow::Owned(format!("{}#{hidden}", crate::redact::REDACTED)),
                        v,
                    );
                }
            }
            (n, v)
        })
        .collect();
    let mut out = Vec::with_capacity(query.len() + 8);
    out.push(b'{');
    for (name, value) in &kept {
        if out.len() > 1 {
            out.push(b',');
        }
        json_string(&mut out, name);
        out.push(b':');
        json_string(&mut out, value);
    }
    out.push(b'}');
    let text = String::from_utf8(out).ok();
    let text = text.map(|t| {
        if t.len() > CAP_BYTES {
            r#"{"_truncated":true}"#.to_string()
        } else {
            t
        }
    });
    (text, kept)
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
    /// `known_tool` tells a catalogue tool's name from anything else a client called.
    pub fn from(o: Observation, known_tool: &dyn Fn(&str) -> bool) -> Row {
        // What the client sent, an upload streamed to disk included.
        let body_bytes = o.body_sent;
        let problem_value = (o.status >= 400 && !o.response.is_empty())
            .then(|| serde_json::from_slice::<Value>(&o.response).ok())
            .flatten();
        if o.account_id.is_none() {
            // Nobody's request: what it sent is kept by size only, and its problem by code.
            let code = problem_value.as_ref().and_then(problem_code);
            return Row {
                problem_code: code.map(|c| cut(&scrub::text(&c), 64).to_string()),
                path: None,
                shape: None,
                test_name: None,
                idempotency_key: None,
                tool: None,
                query: None,
                body: None,
                body_truncated: false,
                body_bytes,
                problem: None,
                o,
            };
        }
        let (query, pairs) = query_copy(&o.query);
        let path = match o.route {
            // The route's own words and the ids we minted: nothing a client wrote is in it.
            Some(route) if scrub::is_route_text(&o.path, route) => o.path.to_string(),
            _ => cut(&scrub::text(&o.path), PATH_CAP).to_string(),
        };
        let credential_body = o
            .operation_id
            .is_some_and(|op| CREDENTIAL_BODIES.contains(&op));
        let (mut body, mut body_truncated) = (None, false);
        let mut parsed = None;
        if !o.body.is_empty() && is_json(o.body_type.as_deref()) && !credential_body {
            if &o.body[..] == b"{}" {
                // A tool called with no arguments: nothing to parse or redact.
                body = Some("{}".to_string());
                parsed = Some(Value::Object(Default::default()));
            } else if let Ok(mut v) = serde_json::from_slice::<Value>(&o.body) {
                scrub::value(&mut v);
                let text = v.to_string();
                body_truncated = text.len() > CAP_BYTES;
                body = Some(cut(&text, CAP_BYTES).to_string());
                parsed = Some(v);
            }
        }
        let shape_body = match &parsed {
            Some(v) => scrub::Body::Json(v),
            None if o.body.is_empty() => scrub::Body::None,
            None => scrub::Body::Opaque(o.body.len()),
        };
        let shape = scrub::shape(o.method.as_str(), &path, &pairs, shape_body);
        let (mut problem, mut code) = (None, None);
        if let Some(mut v) = problem_value {
            scrub::value(&mut v);
            code = problem_code(&v);
            let text = v.to_string();
            if text.len() <= CAP_BYTES {
                problem = Some(text);
            }
        }
        let tool = o.tool.as_deref().map(|t| {
            if known_tool(t) {
                t.to_string()
            } else {
                // Whatever a client sent as a tool name is not a name to keep.
                crate::redact::REDACTED.to_string()
            }
        });
        Row {
            problem_code: code,
            path: Some(path),
            shape: Some(shape),
            test_name: o
                .test_name
                .as_deref()
                .map(|t| cut(&scrub::text(t), TEST_NAME_CAP).to_string()),
            idempotency_key: o
                .idempotency_key
                .as_deref()
                .map(crate::http::idempotency::digest),
            tool,
            query,
            body,
            body_truncated,
            body_bytes,
            problem,
            o,
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
            idempotency_key: self.idempotency_key.as_deref(),
            replayed: o.replayed,
            fault: o.fault.as_deref(),
            retry_after: o.retry_after,
            via: o.via,
            tool: self.tool.as_deref(),
            credentials: o.credentials,
            if_match: o.if_match,
            if_match_any: o.if_match_any,
            client_closed: o.hangup.noticed(),
            query: self.query.as_deref(),
            body: self.body.as_deref(),
            body_truncated: self.body_truncated,
            body_bytes: i64::try_from(self.body_bytes).unwrap_or(i64::MAX),
            problem: self.problem.as_deref(),
            next_cursor: o.next_cursor.as_deref(),
            path: self.path.as_deref(),
            shape: self.shape.as_deref(),
            test_name: self.test_name.as_deref(),
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
        scrub::value(&mut v);
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
            "sgn_test_fwJ6Gr6KLbkW37oC_abcdefghijklmnopqrstuvwxyz012345=1&limit=5",
            "sgn_test_fwJ6Gr6KLbkW37oC_abcdefghijklmnopqrstuvwxyz012345=1&sgn_test_fwJ6Gr6KLbkW37oC_abcdefghijklmnopqrstuvwxyz0123ab=2",
            "url=https%3A%2F%2Fuser%3Apw%40host%2Fx&https://u:p@h=1",
        ];
        for q in queries {
            assert_eq!(query_copy(q).0, query_copy_by_value(q), "query {q:?}");
        }
    }

    #[test]
    fn query_values_are_redacted() {
        let q = query_copy("api_key=sgn_test_abc_def&limit=5").0.unwrap();
        assert!(!q.contains("sgn_test_abc_def"), "{q}");
        assert!(q.contains(r#""limit":"5""#));
    }
}
