//! Field validation for request bodies: each check pushes a precise [`FieldError`] so that one 422
//! lists every problem at once.

use crate::http::error::{ApiError, FieldError};
use serde_json::{json, Value};

/// Characters that make text invalid: C0 and C1 control characters.
pub fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// Characters that do not count towards "not blank": ECMA-262's `\s`, plus controls.
fn is_blank(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{20}' | '\u{7f}'..='\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}'
        | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}')
}

const NO_CONTROL: &str = "[^\\u0000-\\u001f\\u007f-\\u009f]";
const NOT_BLANK: &str =
    "[^\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]";

/// The JSON Schema pattern of [`Errors::text`]: no control characters, and (for required text)
/// at least one non-blank character.
pub fn text_pattern(required: bool) -> String {
    if required {
        format!("^{NO_CONTROL}*{NOT_BLANK}{NO_CONTROL}*$")
    } else {
        format!("^{NO_CONTROL}*$")
    }
}

/// The JSON Schema of text checked by [`Errors::text`] with the same bounds.
pub fn text_schema(min: usize, max: usize) -> Value {
    if min == 0 {
        json!({"type": "string", "maxLength": max, "pattern": text_pattern(false)})
    } else {
        json!({"type": "string", "minLength": min, "maxLength": max, "pattern": text_pattern(true)})
    }
}

#[derive(Default)]
pub struct Errors(Vec<FieldError>);

impl Errors {
    pub fn new() -> Errors {
        Errors(Vec::new())
    }

    pub fn push(&mut self, field: &str, code: &str, message: impl Into<String>) {
        self.0.push(FieldError::new(field, code, message));
    }

    /// `min..=max` characters (as sent, as JSON Schema's `maxLength` counts), no control
    /// characters, and not blank when `min > 0`: exactly what [`text_schema`] states. Handlers
    /// store the value trimmed.
    pub fn text(&mut self, field: &str, value: &str, min: usize, max: usize) {
        let n = value.chars().count();
        if n < min || n > max {
            self.push(
                field,
                "length",
                format!("Must be {min} to {max} characters."),
            );
        } else if value.chars().any(is_control) {
            self.push(
                field,
                "invalid_characters",
                "Must not contain control characters.",
            );
        } else if min > 0 && value.chars().all(is_blank) {
            self.push(field, "blank", "Must not be blank.");
        }
    }

    /// An absolute `https://` (or `http://`) URL without whitespace, at most 2048 characters.
    pub fn url(&mut self, field: &str, value: &str) {
        let ok = (value.starts_with("https://") || value.starts_with("http://"))
            && value.len() <= 2048
            && value.split("://").nth(1).is_some_and(|rest| {
                let host = rest.split(['/', '?', '#']).next().unwrap_or("");
                !host.is_empty() && !host.starts_with(':')
            })
            && !value.chars().any(|c| c.is_whitespace() || c.is_control());
        if !ok {
            self.push(field, "invalid_url", "Must be an absolute http(s) URL.");
        }
    }

    /// `#RRGGBB`.
    pub fn hex_color(&mut self, field: &str, value: &str) {
        let ok = value.len() == 7
            && value.starts_with('#')
            && value[1..].bytes().all(|c| c.is_ascii_hexdigit());
        if !ok {
            self.push(
                field,
                "invalid_color",
                "Must be a colour in the form #RRGGBB.",
            );
        }
    }

    pub fn range(&mut self, field: &str, value: i64, min: i64, max: i64) {
        if value < min || value > max {
            self.push(
                field,
                "out_of_range",
                format!("Must be between {min} and {max}."),
            );
        }
    }

    pub fn finish(self) -> Result<(), ApiError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ApiError::Validation(self.0))
        }
    }
}
