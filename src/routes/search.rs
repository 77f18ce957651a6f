//! The `q` filter of lists: a case-insensitive substring of the name.
//!
//! `q=bread` matches "Fresh Bread Daily" and "bread". `%` and `_` are taken literally. ASCII
//! letters match regardless of case (SQLite's `LIKE`); other letters match as written.

use crate::http::router::{param, Param};
use crate::http::{ApiError, Ctx};

pub const MAX_Q_CHARS: usize = 100;

/// The query parameter, for a route's `.query(...)`.
pub const Q: Param = param(
    "q",
    r#"{"type":"string","minLength":1,"maxLength":100}"#,
    "Only items whose name contains this text (ASCII case-insensitive).",
);

/// The `LIKE` pattern of the request's `q`, if any.
pub fn pattern(ctx: &Ctx<'_>) -> Result<Option<rusqlite::types::Value>, ApiError> {
    let Some(q) = ctx.query("q") else {
        return Ok(None);
    };
    let n = q.chars().count();
    if n == 0 || n > MAX_Q_CHARS {
        return Err(ApiError::invalid(
            "q",
            "out_of_range",
            format!("`q` must be 1 to {MAX_Q_CHARS} characters."),
        ));
    }
    let mut like = String::with_capacity(q.len() + 2);
    like.push('%');
    for c in q.chars() {
        if matches!(c, '%' | '_' | '\\') {
            like.push('\\');
        }
        like.push(c);
    }
    like.push('%');
    Ok(Some(like.into()))
}
