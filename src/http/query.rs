//! Query strings and percent-decoding.

use super::error::{ApiError, FieldError};
use std::borrow::Cow;

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
    Ok(pairs(query)?
        .into_iter()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect())
}

/// A decoded name and its value, borrowed from the query string when nothing was escaped.
pub type Pair<'q> = (Cow<'q, str>, Cow<'q, str>);

/// [`parse`], borrowing from `query` each name and value that has nothing to decode.
pub fn pairs(query: &str) -> Result<Vec<Pair<'_>>, ApiError> {
    let mut pairs: Vec<Pair<'_>> = Vec::new();
    for part in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let undecodable =
            || ApiError::BadRequest("The query string is not valid percent-encoded UTF-8.".into());
        let key = decode(k).ok_or_else(undecodable)?;
        let value = decode(v).ok_or_else(undecodable)?;
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

/// A query component decoded (`+` is a space), borrowed when it holds no escape.
fn decode(s: &str) -> Option<Cow<'_, str>> {
    if s.bytes().any(|b| b == b'%' || b == b'+') {
        percent_decode(s, true).map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_borrow_what_has_nothing_to_decode_and_refuse_what_parse_refuses() {
        let p = pairs("limit=20&q=a+b%21").unwrap();
        assert!(matches!(
            p[0],
            (Cow::Borrowed("limit"), Cow::Borrowed("20"))
        ));
        assert_eq!(p[1].1, "a b!");
        assert!(matches!(p[1].1, Cow::Owned(_)));
        assert!(pairs("a=1&a=2").is_err());
        assert!(pairs("a=%zz").is_err());
        assert_eq!(
            parse("x=%C3%A9&y").unwrap(),
            [
                ("x".to_string(), "é".to_string()),
                ("y".to_string(), String::new())
            ]
        );
    }

    #[test]
    fn decodes() {
        assert_eq!(percent_decode("a%20b+c", true).as_deref(), Some("a b c"));
        assert_eq!(percent_decode("a+b", false).as_deref(), Some("a+b"));
        assert_eq!(percent_decode("%zz", true), None);
        assert!(parse("a=1&a=2").is_err());
        assert_eq!(parse("limit=5&cursor=").unwrap().len(), 2);
    }
}
