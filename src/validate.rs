//! Field validation for request bodies: each check pushes a precise [`FieldError`] so that one 422
//! lists every problem at once.

use crate::http::error::{ApiError, FieldError};

#[derive(Default)]
pub struct Errors(Vec<FieldError>);

impl Errors {
    pub fn new() -> Errors {
        Errors(Vec::new())
    }

    pub fn push(&mut self, field: &str, code: &str, message: impl Into<String>) {
        self.0.push(FieldError::new(field, code, message));
    }

    /// Text of `min..=max` characters (counted as given, as JSON Schema's `maxLength` does), without
    /// C0 control characters, and not blank when `min > 0`: exactly what the schema pattern
    /// `^[^\u0000-\u001f]*\S[^\u0000-\u001f]*$` says.
    pub fn text(&mut self, field: &str, value: &str, min: usize, max: usize) {
        let n = value.chars().count();
        if n < min || n > max {
            self.push(
                field,
                "length",
                format!("Must be {min} to {max} characters."),
            );
        } else if value.chars().any(|c| c < ' ') {
            self.push(
                field,
                "invalid_characters",
                "Must not contain control characters.",
            );
        } else if min > 0 && value.chars().all(char::is_whitespace) {
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
