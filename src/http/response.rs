//! A response as handlers build it: status, headers, bytes. Converted to hyper's type at the edge.

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{HeaderMap, StatusCode};
use serde::Serialize;

#[derive(Debug, Clone)]
pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Response {
    pub fn new(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response {
        let mut r = Response {
            status,
            headers: HeaderMap::new(),
            body: body.into(),
        };
        r.set_header("content-type", content_type);
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

    pub fn no_content() -> Response {
        Response {
            status: StatusCode::NO_CONTENT,
            headers: HeaderMap::new(),
            body: Bytes::new(),
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

/// The strong ETag of a resource version.
pub fn etag(version: i64) -> String {
    format!("\"v{version}\"")
}
