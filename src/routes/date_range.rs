//! The `from` / `to` query filters of lists and summaries: a time window `[from, to)`.
//!
//! Each takes an RFC 3339 timestamp (`2026-11-01T00:00:00Z`) or a calendar date (`2026-11-01`,
//! UTC). A date in `from` is the start of that day; a date in `to` includes that whole day (the
//! window ends at the start of the next one), so `from=2026-11-01&to=2026-11-30` is November.

use crate::http::router::{param, Param};
use crate::http::{ApiError, Ctx};

pub const FROM_DESCRIPTION: &str =
    "Start, included: RFC 3339, or a date (`2026-11-01`: its start, UTC).";
pub const TO_DESCRIPTION: &str =
    "End, excluded: RFC 3339, or a date (`2026-11-30`: that day included, UTC).";
/// Documented as a date-time (what generators and clients produce); a date is accepted too.
pub const SCHEMA: &str = r#"{"type":"string","format":"date-time"}"#;

/// The two query parameters, for a route's `.query(...)`.
pub const FROM: Param = param("from", SCHEMA, FROM_DESCRIPTION);
pub const TO: Param = param("to", SCHEMA, TO_DESCRIPTION);

/// A window `[from, to)`; either end may be open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    pub from: Option<i64>,
    pub to: Option<i64>,
}

impl Window {
    /// Whether a time is inside the window.
    pub fn contains(&self, t: i64) -> bool {
        self.from.is_none_or(|f| t >= f) && self.to.is_none_or(|e| t < e)
    }
}

/// A date `YYYY-MM-DD` as the first second of that day (UTC).
fn date(s: &str) -> Option<i64> {
    if s.len() != 10 {
        return None;
    }
    crate::time::parse_rfc3339(&format!("{s}T00:00:00Z"))
}

/// One bound: `from` (a date is the start of that day) or, with `end`, `to` (a date includes
/// that whole day).
pub fn bound(ctx: &Ctx<'_>, name: &str, end: bool) -> Result<Option<i64>, ApiError> {
    let Some(v) = ctx.query(name) else {
        return Ok(None);
    };
    let parsed = match date(v) {
        Some(day) if end => Some(day + 86_400),
        Some(day) => Some(day),
        None => crate::time::parse_rfc3339(v),
    };
    parsed.map(Some).ok_or_else(|| {
        ApiError::invalid(
            name,
            "invalid_time",
            format!("`{name}` must be an RFC 3339 timestamp (`2026-11-01T00:00:00Z`) or a date (`2026-11-01`)."),
        )
    })
}

/// The window of the request's `from` and `to`. A `to` not after `from` is an empty window (an
/// empty list, a summary of nothing), not an error: each value is valid on its own.
pub fn window(ctx: &Ctx<'_>) -> Result<Window, ApiError> {
    Ok(Window {
        from: bound(ctx, "from", false)?,
        to: bound(ctx, "to", true)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_cover_whole_days() {
        let day = date("2026-11-01").unwrap();
        assert_eq!(crate::time::rfc3339(day), "2026-11-01T00:00:00Z");
        assert_eq!(date("2026-11-1"), None);
        assert_eq!(date("2026-13-01"), None);
        let w = Window {
            from: Some(day),
            to: Some(day + 86_400),
        };
        assert!(w.contains(day) && w.contains(day + 86_399) && !w.contains(day + 86_400));
    }
}
