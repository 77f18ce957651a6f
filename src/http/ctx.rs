//! What a handler gets: the matched route, path and query parameters, the body, the principal,
//! and helpers that turn raw input into validated values or a precise error.

use super::error::{ApiError, FieldError};
use super::exchange::Exchange;
use super::page::{decode_cursor, filter_tag, split_cursor, TAG_LEN};
use super::router::Route;
use super::state::App;
use crate::auth::{authorize, Principal, Target};
use crate::ids::TypedId;
use crate::random::Seeded;
use crate::time::Clock;
use bytes::Bytes;
use hyper::HeaderMap;
use serde::de::DeserializeOwned;
use std::net::IpAddr;

/// What [`Ctx::page`] returns, named here by the list handlers.
pub use super::page::PageRequest;
/// What [`Ctx::list_companies`] returns.
pub use super::reach::Reach;

/// A failed validation is a 422 listing every field problem.
impl From<crate::validate::Invalid> for ApiError {
    fn from(invalid: crate::validate::Invalid) -> ApiError {
        ApiError::Validation(
            invalid
                .0
                .into_iter()
                .map(|i| FieldError {
                    field: i.field,
                    code: i.code,
                    message: i.message,
                })
                .collect(),
        )
    }
}

pub struct Ctx<'a> {
    pub app: &'a App,
    pub route: &'a Route,
    pub request_id: &'a str,
    pub headers: &'a HeaderMap,
    pub params: Vec<(&'static str, String)>,
    pub query: Vec<(String, String)>,
    pub body: Bytes,
    pub principal: Option<Principal>,
    /// For a route that authenticates itself ([`Route::authenticates_itself`]): the principal the
    /// server verified from the request's headers, if it did.
    pub credential: Option<Principal>,
    /// The body of a spooled route ([`super::router::Route::spooled`]) when the server streamed it
    /// to a temporary file; `body` is empty then.
    pub spool: Option<std::sync::Arc<super::spool::Spool>>,
    pub peer: Option<IpAddr>,
    /// The answer goes straight to an HTTP connection (not back to an MCP call that reads its
    /// body), so the handler may send its body as the client reads it ([`super::stream`]).
    pub direct: bool,
    /// The HTTP request's own state, shared with the internal requests of its MCP tool calls.
    pub exchange: &'a Exchange,
    /// Who writes and how: every write of the handler passes it to [`crate::db::Scoped::write`]
    /// (a previewed MCP change is a dry run, a confirmed one may expect a balance).
    pub intent: &'a crate::db::WriteIntent,
    /// The database as this request sees it: its one read transaction (see
    /// [`crate::db::Db::read_scope`]), shared with the internal requests of its MCP tool calls.
    /// Every read and write of the handler goes through it ([`Ctx::conn`], `ctx.db.write`).
    pub db: crate::db::Scoped<'a>,
}

impl<'a> Ctx<'a> {
    /// The request's time in Unix milliseconds: its app's clock, read later by a dry run made
    /// later ([`crate::db::WriteIntent::later_ms`], an MCP preview's second run).
    pub fn now_millis(&self) -> i64 {
        self.app.clock().now_millis() + self.intent.later_ms
    }

    /// The request's time in Unix seconds ([`Ctx::now_millis`]).
    pub fn now(&self) -> i64 {
        self.now_millis().div_euclid(1000)
    }

    /// The app's clock, which the request's ids are stamped on.
    pub fn clock(&self) -> &'a Clock {
        self.app.clock()
    }

    /// The app's seeded generator in a seeded sandbox: every purposed draw of the request.
    pub fn seeded(&self) -> Option<&'a Seeded> {
        self.app.seeded()
    }

    /// A new typed id, on the app's clock and generator.
    pub fn generate<T: TypedId>(&self) -> T {
        T::generate(self.clock(), self.seeded())
    }

    /// A connection in the request's read transaction ([`crate::db::Scoped::conn`]).
    pub fn conn(&self) -> Result<crate::db::Conn<'a>, crate::db::DbError> {
        self.db.conn()
    }

    /// The principal of an authenticated route. Public routes have none; asking is a bug, reported
    /// as a 500 rather than a panic.
    pub fn principal(&self) -> Result<&Principal, ApiError> {
        self.principal
            .as_ref()
            .ok_or_else(|| ApiError::Internal("route without principal asked for one".into()))
    }

    pub fn param(&self, name: &str) -> &str {
        self.params
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    }

    /// The `id` path parameter as a typed id (`let id: DeviceId = ctx.path()?`); a malformed id
    /// is a plain 404 naming the kind (it cannot exist, so no query is spent on it).
    pub fn path<T: TypedId>(&self) -> Result<T, ApiError> {
        self.path_param("id")
    }

    /// The path parameter `name` as a typed id, or a 404 as [`Ctx::path`].
    pub fn path_param<T: TypedId>(&self, name: &str) -> Result<T, ApiError> {
        let raw = self.param(name);
        T::parse(raw).ok_or_else(|| ApiError::not_found(T::KIND.what(), raw))
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Checks the route's action against the company that owns the object; invisible is a 404
    /// naming `what` and `id`.
    pub fn authorize_company(
        &self,
        company_id: &str,
        what: &str,
        id: &str,
    ) -> Result<(), ApiError> {
        authorize(
            self.principal()?,
            self.route.action,
            Target::Company(company_id),
        )
        .map_err(|d| ApiError::denied(d, what, id))
    }

    /// Companies whose rows a list may contain: the `company_id` filter if given (checked), else all
    /// visible ones (the whole account's, when the credential is not limited to one company and
    /// acts for no one screen).
    pub fn list_companies(&self) -> Result<Reach, ApiError> {
        let p = self.principal()?;
        match self.query("company_id") {
            Some(c) => {
                if !crate::ids::is_valid(crate::ids::Kind::Company, c) {
                    return Err(ApiError::invalid(
                        "company_id",
                        "invalid_id",
                        "Not a company id (`cmp_…`).",
                    ));
                }
                self.authorize_company(c, "company", c)?;
                Ok(Reach::companies(std::sync::Arc::from([c.to_string()])))
            }
            None if p.company_scope.is_none() && p.device.is_none() => Ok(Reach::account(
                &p.account_id,
                std::sync::Arc::clone(&p.visible_companies),
            )),
            None => Ok(Reach::companies(std::sync::Arc::clone(
                &p.visible_companies,
            ))),
        }
    }

    pub fn page(&self) -> Result<PageRequest, ApiError> {
        let limit = match self.query("limit") {
            None => 20,
            Some(v) => match v.parse::<u32>() {
                Ok(n) if (1..=100).contains(&n) => n,
                _ => {
                    return Err(ApiError::invalid(
                        "limit",
                        "out_of_range",
                        "`limit` must be an integer from 1 to 100.",
                    ))
                }
            },
        };
        let tag = filter_tag(self.route.operation_id, &self.params, &self.query);
        let before = match self.query("cursor") {
            None => None,
            Some(c) => {
                let (bound, given) = split_cursor(c);
                let invalid = || {
                    let expected = match self.route.cursor {
                        Some(kind) => format!(" (an id starting with `{}_`)", kind.prefix()),
                        None => String::new(),
                    };
                    ApiError::invalid(
                        "cursor",
                        "invalid_cursor",
                        format!("`cursor` is not a cursor of this list{expected}: pass back the `next_cursor` of the previous page."),
                    )
                };
                let bound = decode_cursor(self.route.cursor, bound).ok_or_else(invalid)?;
                match given {
                    None => {}
                    Some(t) if t.len() != TAG_LEN || !t.bytes().all(|b| b.is_ascii_alphanumeric()) => {
                        return Err(invalid())
                    }
                    Some(t) if t != tag => {
                        return Err(ApiError::Malformed {
                            code: "cursor_mismatch",
                            detail: "This `cursor` was given for a page asked with other filters. Send the next page's request with exactly the query parameters (other than `limit`) and the path of the page whose `next_cursor` it is, or start again without `cursor`.".into(),
                        })
                    }
                    Some(_) => {}
                }
                Some(bound)
            }
        };
        Ok(PageRequest { limit, before, tag })
    }

    /// An optional boolean query parameter (`true`/`false`).
    pub fn query_bool(&self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.query(name) {
            None => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(_) => Err(ApiError::invalid(
                name,
                "invalid_boolean",
                format!("`{name}` must be `true` or `false`."),
            )),
        }
    }

    /// An optional query parameter that must be one of `allowed`.
    pub fn query_enum(&self, name: &str, allowed: &[&str]) -> Result<Option<String>, ApiError> {
        match self.query(name) {
            None => Ok(None),
            Some(v) if allowed.contains(&v) => Ok(Some(v.to_string())),
            Some(_) => Err(ApiError::invalid(
                name,
                "invalid_value",
                format!("`{name}` must be one of: {}.", allowed.join(", ")),
            )),
        }
    }

    /// An optional query parameter holding an id of `kind`.
    pub fn query_id(&self, name: &str, kind: crate::ids::Kind) -> Result<Option<String>, ApiError> {
        match self.query(name) {
            None => Ok(None),
            Some(v) if crate::ids::is_valid(kind, v) => Ok(Some(v.to_string())),
            Some(_) => Err(ApiError::invalid(
                name,
                "invalid_id",
                format!("`{name}` must be an id starting with `{}_`.", kind.prefix()),
            )),
        }
    }

    /// Parses the JSON body into `T` (whose serde derive denies unknown fields). Syntax errors and
    /// duplicate member names ([`super::json`]) are 400; wrong types, unknown or missing fields are
    /// 422 naming the field.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        let content_type = self.header("content-type").unwrap_or("");
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if essence != "application/json" && !essence.ends_with("+json") {
            return Err(ApiError::UnsupportedMediaType(
                "Send the body as JSON with `Content-Type: application/json`.".into(),
            ));
        }
        if self.body.is_empty() {
            return Err(ApiError::BadRequest("A JSON body is required.".into()));
        }
        let mut value = super::json::from_slice(&self.body).map_err(ApiError::from)?;
        integral_floats_to_integers(&mut value);
        serde_path_to_error::deserialize(value).map_err(|err| {
            let pointer = json_pointer(err.path());
            let message = err.into_inner().to_string();
            ApiError::Validation(vec![FieldError::new(pointer, "invalid", message)])
        })
    }

    /// `If-Match` against the current version: absent passes; `*` passes; else it must match.
    pub fn check_if_match(&self, current_version: i64) -> Result<(), ApiError> {
        self.check_if_match_etag(&super::response::etag(current_version))
    }

    /// `If-Match` against a current entity tag (strong comparison, as RFC 9110 requires).
    /// Absent passes; `*` passes; a list of entity tags passes when one of them is `current`, and
    /// is 412 otherwise (a weak tag never matches); a value that is not `*` or a list of entity
    /// tags is 400 `invalid_if_match`, since it is a client bug that no retry will fix.
    pub fn check_if_match_etag(&self, current: &str) -> Result<(), ApiError> {
        let mut lines = self
            .headers
            .get_all(hyper::header::IF_MATCH)
            .iter()
            .peekable();
        if lines.peek().is_none() {
            return Ok(());
        }
        let condition = parse_if_match(lines.map(|v| v.as_bytes())).ok_or_else(|| {
            ApiError::Malformed {
                code: "invalid_if_match",
                detail: format!("`If-Match` must be `*` or a comma-separated list of entity tags such as {current} (RFC 9110 §13.1.1)."),
            }
        })?;
        let matches = match condition {
            IfMatch::Any => true,
            IfMatch::Tags(tags) => tags
                .iter()
                .any(|(weak, tag)| !weak && *tag == current.as_bytes()),
        };
        if matches {
            Ok(())
        } else {
            Err(ApiError::PreconditionFailed {
                current_etag: current.to_string(),
            })
        }
    }
}

/// The JSON Schema pattern of the `If-Match` values [`parse_if_match`] accepts (ASCII tags, no
/// empty elements: a subset, so every value it describes is well-formed).
pub const IF_MATCH_PATTERN: &str = r#"^(\*|(W/)?"[!#-~]*"([ \t]*,[ \t]*(W/)?"[!#-~]*")*)$"#;

/// A parsed `If-Match`.
#[derive(Debug, PartialEq)]
pub enum IfMatch<'a> {
    Any,
    /// (weak, opaque-tag with its quotes), in order.
    Tags(Vec<(bool, &'a [u8])>),
}

/// Parses the field lines of `If-Match` (RFC 9110 §13.1.1): `"*"` alone, or `#entity-tag` where
/// `entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE` and `etagc = %x21 / %x23-7E / obs-text`, elements
/// separated by `OWS "," OWS` (empty elements tolerated, as RFC 9110 §5.6.1 asks of recipients).
/// Several field lines are one list. `None` when malformed, or when no entity tag is given.
pub fn parse_if_match<'a>(lines: impl Iterator<Item = &'a [u8]>) -> Option<IfMatch<'a>> {
    let mut tags = Vec::new();
    let mut star = false;
    for line in lines {
        let mut rest = line;
        loop {
            // Separators: OWS and empty list elements.
            rest = rest.trim_ascii_start();
            while let Some(r) = rest.strip_prefix(b",") {
                rest = r.trim_ascii_start();
            }
            if rest.is_empty() {
                break;
            }
            if let Some(r) = rest.strip_prefix(b"*") {
                star = true;
                rest = r;
            } else {
                let (weak, opaque) = match rest.strip_prefix(b"W/") {
                    Some(r) => (true, r),
                    None => (false, rest),
                };
                let inner = opaque.strip_prefix(b"\"")?;
                // etagc: every visible character but DQUOTE, and obs-text (a comma included).
                let len = inner
                    .iter()
                    .take_while(|&&c| c == 0x21 || (0x23..=0x7e).contains(&c) || c >= 0x80)
                    .count();
                if inner.get(len) != Some(&b'"') {
                    return None;
                }
                tags.push((weak, &opaque[..len + 2]));
                rest = &inner[len + 1..];
            }
            // After an element: OWS, then a comma or the end.
            rest = rest.trim_ascii_start();
            if !rest.is_empty() && !rest.starts_with(b",") {
                return None;
            }
        }
    }
    match (star, tags.is_empty()) {
        (true, true) => Some(IfMatch::Any),
        (false, false) => Some(IfMatch::Tags(tags)),
        // `*` mixed with tags, or nothing at all.
        _ => None,
    }
}

/// RFC 6901 pointer of a serde path (`a[0].b` -> `/a/0/b`).
fn json_pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        out.push('/');
        match segment {
            Segment::Seq { index } => out.push_str(&index.to_string()),
            Segment::Map { key } => out.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Segment::Enum { variant } => out.push_str(variant),
            Segment::Unknown => out.push('?'),
        }
    }
    out
}

/// JSON Schema's `integer` admits `3.0`; serde's integers do not. Numbers with no fractional part are
/// rewritten as integers so that every schema-valid body deserializes.
fn integral_floats_to_integers(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64() {
                if f.fract() == 0.0 && f.abs() < 9.0e15 {
                    *v = serde_json::Value::from(f as i64);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(integral_floats_to_integers),
        serde_json::Value::Object(map) => map.values_mut().for_each(integral_floats_to_integers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse<'a>(lines: &[&'a str]) -> Option<IfMatch<'a>> {
        parse_if_match(lines.iter().map(|l| l.as_bytes()))
    }

    #[test]
    fn if_match_syntax() {
        assert_eq!(parse(&["*"]), Some(IfMatch::Any));
        assert_eq!(parse(&[" * "]), Some(IfMatch::Any));
        assert_eq!(
            parse(&[r#""v1", W/"v2",,"a,b""#, r#""""#]),
            Some(IfMatch::Tags(vec![
                (false, &b"\"v1\""[..]),
                (true, &b"\"v2\""[..]),
                (false, &b"\"a,b\""[..]),
                (false, &b"\"\""[..]),
            ]))
        );
        assert!(parse(&["\"\u{e9}\""]).is_some(), "obs-text is etagc");
        for bad in [
            "v1",
            "\"v1",
            "v1\"",
            "\"v\"1\"",
            "\"v1\" \"v2\"",
            "w/\"v1\"",
            "W/ \"v1\"",
            "*, \"v1\"",
            "**",
            "",
            " , ",
            "\"a b\"",
        ] {
            assert_eq!(parse(&[bad]), None, "{bad:?}");
        }
        assert_eq!(parse(&["*", "\"v1\""]), None);
    }
}
