//! A response as handlers build it: status, headers, bytes. Converted to hyper's type at the edge.

use super::page::{encode_cursor, PageRequest};
use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{HeaderMap, StatusCode};
use serde::Serialize;

/// A list item: what the cursor of a page ending at it is made from (its id).
pub trait Listed {
    fn list_key(&self) -> &str;
}

/// Rows still built as JSON values (areas not yet typed) page by their `id` member.
impl Listed for serde_json::Value {
    fn list_key(&self) -> &str {
        self["id"].as_str().unwrap_or("")
    }
}

/// The body of every list: `{"object":"list","data":[…],"has_more":…,"next_cursor":…}`, in that
/// order (the order of the `json!` it replaced, so bodies stay byte-identical). Its schema is
/// [`list_schema`]'s.
#[derive(Serialize, schemars::JsonSchema)]
struct ListBody<'a, T> {
    /// Always `list`.
    #[schemars(extend("const" = "list"))]
    object: &'static str,
    /// The objects of this page.
    data: &'a [T],
    /// Whether another page follows.
    has_more: bool,
    /// Pass as `cursor` for the next page; `null` on the last page.
    next_cursor: Option<String>,
}

/// The schema of a list body whose items are `item` (a `$ref` in the OpenAPI document, the
/// object's own schema in an MCP tool's output): derived from the type every list is written by.
pub fn list_schema(item: serde_json::Value) -> serde_json::Value {
    let mut schema = crate::jsonschema::response::<ListBody<'static, serde_json::Value>>();
    schema["properties"]["data"]["items"] = item;
    // What the list holds is said where the list is named (the document's `…List`).
    if let Some(m) = schema.as_object_mut() {
        m.remove("description");
    }
    schema
}

#[derive(Debug, Clone)]
pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// How the server hands the response over: at once (the default), late, or not at all (an
    /// injected fault, [`super::faults`]).
    pub delivery: Delivery,
}

/// What the server does with a response before (or instead of) writing it. The pipeline is
/// synchronous, so it never waits itself: the server sleeps in async code, off every worker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Hold the response back this long.
    pub delay_ms: u64,
    /// Close the connection without writing the response.
    pub drop: bool,
    /// Write this body, as it arrives, instead of `body` (an event stream).
    pub stream: Option<super::stream::Streamed>,
}

impl Response {
    pub fn new(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response {
        let mut r = Response {
            status,
            headers: HeaderMap::new(),
            body: body.into(),
            delivery: Delivery::default(),
        };
        // The common types are made once, not validated and copied again for every answer.
        let value = match content_type {
            "application/json" => Some(HeaderValue::from_static("application/json")),
            "application/problem+json" => {
                Some(HeaderValue::from_static("application/problem+json"))
            }
            other => HeaderValue::from_str(other).ok(),
        };
        if let Some(value) = value {
            r.headers.insert(hyper::header::CONTENT_TYPE, value);
        }
        // Every answer is `nosniff`; a document gets the strict policy unless its route sets its
        // own after this ([`secure_headers`] holds the answers not made here to the same).
        r.headers.insert(
            hyper::header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        if is_document(content_type) {
            r.headers.insert(
                hyper::header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(DOCUMENT_CSP),
            );
        }
        r
    }

    pub fn json<T: Serialize + ?Sized>(status: StatusCode, value: &T) -> Response {
        // Serialising our own value types cannot fail; fall back to an empty object rather than panic.
        let body = serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec());
        Response::new(status, "application/json", body)
    }

    pub fn ok<T: Serialize + ?Sized>(value: &T) -> Response {
        Response::json(StatusCode::OK, value)
    }

    pub fn created<T: Serialize + ?Sized>(value: &T) -> Response {
        Response::json(StatusCode::CREATED, value)
    }

    /// A list page from up to `page.limit + 1` rows (one more than the page tells whether
    /// another follows), serialized straight into the body: no JSON value per row.
    pub fn page<T: Serialize + Listed>(rows: Vec<T>, page: &PageRequest) -> Response {
        let limit = page.limit as usize;
        let has_more = rows.len() > limit;
        let data = &rows[..rows.len().min(limit)];
        let next_cursor = if has_more {
            data.last().map(|r| encode_cursor(r.list_key(), &page.tag))
        } else {
            None
        };
        Response::ok(&ListBody {
            object: "list",
            data,
            has_more,
            next_cursor,
        })
    }

    /// The list page a [`PageWriter`] wrote.
    pub fn page_written(page: PageWriter) -> Response {
        Response::new(StatusCode::OK, "application/json", page.body)
    }

    pub fn no_content() -> Response {
        Response {
            status: StatusCode::NO_CONTENT,
            headers: HeaderMap::new(),
            body: Bytes::new(),
            delivery: Delivery::default(),
        }
    }

    pub fn problem(status: StatusCode, body: &serde_json::Value) -> Response {
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        Response::new(status, "application/problem+json", bytes)
    }

    /// Sets a header; values that are not valid header text are dropped rather than panicking.
    pub fn set_header(&mut self, name: &'static str, value: &str) {
        if let Ok(v) = HeaderValue::from_str(value) {
            self.headers.insert(HeaderName::from_static(name), v);
        }
    }

    /// Sets a header to a value made beforehand (shared, not copied), under a name made beforehand
    /// (a constant: no name is parsed per answer).
    pub fn set_header_value(&mut self, name: HeaderName, value: HeaderValue) {
        self.headers.insert(name, value);
    }

    pub fn with_header(mut self, name: &'static str, value: &str) -> Response {
        self.set_header(name, value);
        self
    }

    pub fn with_etag(self, version: i64) -> Response {
        self.with_header("etag", &etag(version))
    }

    pub fn body_json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// A header a write answers only in a dry run ([`crate::db::WriteIntent::dry_run`], an MCP
/// preview), never on the wire: the paths of its answer (`status`, `attempts[2].at`, comma-separated) that only the real
/// attempt can fill, such as a webhook receiver's answer; they are `null` in the dry run's body.
pub const UNKNOWN_UNTIL_APPLIED: &str = "x-signage-unknown-until-applied";

/// A list page written row by row as JSON (rows kept rendered between requests), byte for byte
/// the body [`Response::page`] makes of the same rows.
pub struct PageWriter {
    body: Vec<u8>,
    rows: usize,
}

impl PageWriter {
    pub fn with_capacity(bytes: usize) -> PageWriter {
        let mut body = Vec::with_capacity(bytes + 96);
        body.extend_from_slice(br#"{"object":"list","data":["#);
        PageWriter { body, rows: 0 }
    }

    /// Where the next row's JSON object goes.
    pub fn row(&mut self) -> &mut Vec<u8> {
        if self.rows > 0 {
            self.body.push(b',');
        }
        self.rows += 1;
        &mut self.body
    }

    /// The page's end: `has_more` and the cursor of a page ending at `last_id` when more follow,
    /// bound to the request's filters by their `tag` ([`PageRequest::tag`]).
    pub fn finish(mut self, has_more: bool, last_id: Option<&str>, tag: &str) -> PageWriter {
        let out = &mut self.body;
        out.extend_from_slice(br#"],"has_more":"#);
        out.extend_from_slice(if has_more { b"true" } else { b"false" });
        out.extend_from_slice(br#","next_cursor":"#);
        match last_id.filter(|_| has_more) {
            Some(id) => crate::json_write::plain(out, &encode_cursor(id, tag)),
            None => out.extend_from_slice(b"null"),
        }
        out.push(b'}');
        self
    }
}

/// The strong ETag of a resource version.
pub fn etag(version: i64) -> String {
    format!("\"v{version}\"")
}

/// The policy of a document (HTML, SVG, XML) whose route sets none: it runs no script, loads
/// nothing, and is framed by no page.
pub const DOCUMENT_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// What every answer carries, set once at the edge so that no route can forget it: `nosniff` (a
/// browser never reads a JSON, XML or SVG body as a script or a page it was not labelled as), and,
/// on a document without a policy of its own (the scan limiter's page, a JUnit report, a QR
/// code's SVG), [`DOCUMENT_CSP`].
pub fn secure_headers(headers: &mut HeaderMap) {
    // Standard names: no custom-name hashing. Answers made by [`Response::new`] have both
    // already (the common case: one lookup here); others are given them now.
    use hyper::header::{CONTENT_SECURITY_POLICY as CSP, X_CONTENT_TYPE_OPTIONS as NOSNIFF};
    if headers.contains_key(NOSNIFF) {
        return;
    }
    headers.insert(NOSNIFF, HeaderValue::from_static("nosniff"));
    let document = headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_document);
    if document && !headers.contains_key(&CSP) {
        headers.insert(CSP, HeaderValue::from_static(DOCUMENT_CSP));
    }
}

/// HTML, SVG or XML: a type a browser renders as a document.
fn is_document(content_type: &str) -> bool {
    let ct = content_type.trim_start().as_bytes();
    [
        &b"text/html"[..],
        b"image/svg+xml",
        b"application/xml",
        b"text/xml",
    ]
    .iter()
    .any(|d| ct.len() >= d.len() && ct[..d.len()].eq_ignore_ascii_case(d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_written_page_has_the_bytes_of_a_serialized_one() {
        let rows = vec![
            json!({"id": "dev_3", "n": "a\"b"}),
            json!({"id": "dev_2", "n": null}),
            json!({"id": "dev_1", "n": 1}),
        ];
        for limit in 1..=4u32 {
            let page = PageRequest {
                limit,
                before: None,
                tag: "a1B2c3D4".into(),
            };
            let expected = Response::page(rows.clone(), &page).body;
            let shown = &rows[..rows.len().min(limit as usize)];
            let mut w = PageWriter::with_capacity(0);
            for r in shown {
                w.row().extend(serde_json::to_vec(r).unwrap());
            }
            let has_more = rows.len() > limit as usize;
            let last = shown.last().and_then(|r| r["id"].as_str());
            let written = Response::page_written(w.finish(has_more, last, &page.tag)).body;
            assert_eq!(written, expected, "limit {limit}");
        }
        let empty = Response::page(
            Vec::<serde_json::Value>::new(),
            &PageRequest {
                limit: 20,
                before: None,
                tag: "a1B2c3D4".into(),
            },
        );
        let w = PageWriter::with_capacity(0).finish(false, None, "a1B2c3D4");
        assert_eq!(Response::page_written(w).body, empty.body);
    }

    #[test]
    fn a_page_has_the_bytes_of_the_list_it_replaced() {
        let rows = vec![
            json!({"id": "dev_3"}),
            json!({"id": "dev_2"}),
            json!({"id": "dev_1"}),
        ];
        let page = PageRequest {
            limit: 2,
            before: None,
            tag: "abcdEFGH".into(),
        };
        let body = Response::page(rows.clone(), &page).body;
        let before = json!({"object": "list", "data": &rows[..2], "has_more": true, "next_cursor": "dev_2.abcdEFGH"});
        assert_eq!(body, serde_json::to_vec(&before).unwrap());
        let last = Response::page(
            rows.clone(),
            &PageRequest {
                limit: 3,
                before: None,
                tag: "abcdEFGH".into(),
            },
        )
        .body;
        let before =
            json!({"object": "list", "data": rows, "has_more": false, "next_cursor": null});
        assert_eq!(last, serde_json::to_vec(&before).unwrap());
    }
}
