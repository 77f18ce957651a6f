//! Query strings and percent-decoding.

use super::error::{ApiError, FieldError};

/// Decodes `%XX` escapes (and `+` as a space in query strings). `None` for bad escapes or UTF-8.
pub fn percent_decode(s: &str, plus_is_space: bool) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Parses `a=1&b=2`. Repeated or undecodable parameters are refused.
pub fn parse(query: &str) -> Result<Vec<(String, String)>, ApiError> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for part in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let key = percent_decode(k, true).ok_or_else(|| {
            ApiError::BadRequest("The query string is not valid percent-encoded UTF-8.".into())
        })?;
        let value = percent_decode(v, true).ok_or_else(|| {
            ApiError::BadRequest("The query string is not valid percent-encoded UTF-8.".into())
        })?;
        if pairs.iter().any(|(existing, _)| *existing == key) {
            return Err(ApiError::Validation(vec![FieldError::new(
                key,
                "repeated",
                "This parameter may be given only once.",
            )]));
        }
        pairs.push((key, value));
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes() {
        assert_eq!(percent_decode("a%20b+c", true).as_deref(), Some("a b c"));
        assert_eq!(percent_decode("a+b", false).as_deref(), Some("a+b"));
        assert_eq!(percent_decode("%zz", true), None);
        assert!(parse("a=1&a=2").is_err());
        assert_eq!(parse("limit=5&cursor=").unwrap().len(), 2);
    }
}
