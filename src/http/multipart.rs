//! `multipart/form-data` (RFC 7578) bodies, as client generators send uploads: each part's
//! `Content-Disposition` name and filename, its `Content-Type`, and where its bytes lie. The body
//! is read through a [`Source`]: bytes in memory, or an upload streamed to a temporary file
//! ([`super::spool::Spool`]), which is searched in chunks and never read whole.

use std::ops::Range;

/// At most this many parts: an upload has a file and a few fields.
const MAX_PARTS: usize = 8;
/// At most this many bytes of headers per part.
const MAX_HEADER_BYTES: usize = 4096;
/// At most this many bytes of transport padding after a delimiter (RFC 2046 allows some).
const MAX_PADDING: usize = 256;

#[derive(Debug, PartialEq, Eq)]
pub struct Part {
    pub name: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    /// Where the part's bytes lie in the body.
    pub body: Range<usize>,
}

/// A body to parse: what it must answer.
pub trait Source {
    fn size(&self) -> usize;
    /// The first position of `needle` in `from..until` (the needle wholly inside).
    fn find(&self, needle: &[u8], from: usize, until: usize) -> Option<usize>;
    /// The bytes of `range`: only short ranges are asked for (a delimiter line, part headers).
    fn read(&self, range: Range<usize>) -> Result<Vec<u8>, String>;
}

impl Source for [u8] {
    fn size(&self) -> usize {
        self.len()
    }
    fn find(&self, needle: &[u8], from: usize, until: usize) -> Option<usize> {
        let until = until.min(self.len());
        if from > until || needle.is_empty() {
            return None;
        }
        self[from..until]
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|p| p + from)
    }
    fn read(&self, range: Range<usize>) -> Result<Vec<u8>, String> {
        self.get(range)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| "the body ends early".to_string())
    }
}

/// The `boundary` parameter of a `multipart/form-data` Content-Type, or `None` when the type is
/// another or has no valid boundary (1 to 70 characters, RFC 2046).
pub fn boundary(content_type: &str) -> Option<String> {
    let mut fields = content_type.split(';');
    let essence = fields.next()?.trim();
    if !essence.eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    let params = params(&content_type[content_type.find(';')?..]);
    let b = params
        .into_iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("boundary"))?
        .1;
    (1..=70).contains(&b.len()).then_some(b)
}

/// `; key=value; key="quoted; value"` → pairs (quotes removed, `\"` unescaped).
fn params(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ';' || c.is_whitespace()) {
            chars.next();
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c == ';' {
                break;
            }
            key.push(c);
            chars.next();
        }
        if key.is_empty() && chars.peek().is_none() {
            return out;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'=') {
            chars.next();
            if chars.peek() == Some(&'"') {
                chars.next();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => value.extend(chars.next()),
                        '"' => break,
                        c => value.push(c),
                    }
                }
            } else {
                while let Some(&c) = chars.peek() {
                    if c == ';' {
                        break;
                    }
                    value.push(c);
                    chars.next();
                }
            }
        }
        out.push((key.trim().to_string(), value.trim().to_string()));
        if chars.peek().is_none() {
            return out;
        }
    }
}

/// The parts of `body` (in memory).
pub fn parse(body: &[u8], boundary: &str) -> Result<Vec<Part>, String> {
    parse_from(body, boundary)
}

/// The parts of `body`. Refuses (with a message for the 400) a body without the closing
/// delimiter, a part without `Content-Disposition: form-data; name=…`, too many parts or headers.
pub fn parse_from<S: Source + ?Sized>(body: &S, boundary: &str) -> Result<Vec<Part>, String> {
    let len = body.size();
    let delimiter = format!("--{boundary}");
    let next_delimiter = format!("\r\n--{boundary}");
    let starts = body
        .read(0..delimiter.len().min(len))
        .is_ok_and(|b| b == delimiter.as_bytes());
    let mut at = if starts {
        delimiter.len()
    } else {
        body.find(next_delimiter.as_bytes(), 0, len)
            .ok_or("no boundary delimiter in the body")?
            + next_delimiter.len()
    };
    let mut parts = Vec::new();
    loop {
        if body.read(at..(at + 2).min(len))? == b"--" {
            return Ok(parts);
        }
        // Transport padding (RFC 2046), then the line break that ends the delimiter line.
        let line_end = body
            .find(b"\r\n", at, (at + MAX_PADDING + 2).min(len))
            .ok_or("a delimiter line does not end")?;
        if body
            .read(at..line_end)?
            .iter()
            .any(|b| *b != b' ' && *b != b'\t')
        {
            return Err("text after a boundary delimiter".into());
        }
        let headers_start = line_end + 2;
        let headers_end = body
            .find(
                b"\r\n\r\n",
                headers_start,
                (headers_start + MAX_HEADER_BYTES + 4).min(len),
            )
            .ok_or("a part's headers do not end (or are too long)")?;
        let content_start = headers_end + 4;
        let content_end = body
            .find(next_delimiter.as_bytes(), headers_end, len)
            .ok_or("the body has no closing boundary delimiter")?;
        if content_end < content_start {
            return Err("a part's headers run into the next delimiter".into());
        }
        let headers = body.read(headers_start..headers_end)?;
        let headers =
            std::str::from_utf8(&headers).map_err(|_| "a part's headers are not UTF-8")?;
        let mut name = None;
        let mut filename = None;
        let mut content_type = None;
        for line in headers.split("\r\n") {
            let (k, v) = line.split_once(':').ok_or("a part header without `:`")?;
            if k.trim().eq_ignore_ascii_case("content-disposition") {
                let v = v.trim();
                let (kind, rest) = v.split_once(';').unwrap_or((v, ""));
                if !kind.trim().eq_ignore_ascii_case("form-data") {
                    return Err("a part is not `form-data`".into());
                }
                for (pk, pv) in params(rest) {
                    match pk.to_ascii_lowercase().as_str() {
                        "name" => name = Some(pv),
                        "filename" => filename = Some(pv),
                        _ => {}
                    }
                }
            } else if k.trim().eq_ignore_ascii_case("content-type") {
                content_type = Some(v.trim().to_string());
            }
        }
        let name = name.ok_or("a part has no `Content-Disposition: form-data; name=…`")?;
        if parts.len() == MAX_PARTS {
            return Err(format!("more than {MAX_PARTS} parts"));
        }
        parts.push(Part {
            name,
            filename,
            content_type,
            body: content_start..content_end,
        });
        at = content_end + next_delimiter.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boundary_of_a_form_data_type() {
        assert_eq!(
            boundary("multipart/form-data; boundary=abc").as_deref(),
            Some("abc")
        );
        assert_eq!(
            boundary("Multipart/Form-Data; charset=x; Boundary=\"a b;c\"").as_deref(),
            Some("a b;c")
        );
        assert_eq!(boundary("multipart/mixed; boundary=abc"), None);
        assert_eq!(boundary("multipart/form-data"), None);
        assert_eq!(boundary("multipart/form-data; boundary="), None);
        assert_eq!(
            boundary(&format!("multipart/form-data; boundary={}", "x".repeat(71))),
            None
        );
    }

    #[test]
    fn parts_with_names_filenames_and_types() {
        let body = b"preamble\r\n--XY\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a;b.png\"\r\nContent-Type: image/png\r\n\r\n\x89PNG\r\n--X\r\n--XY\r\nContent-Disposition: form-data; name=company_id\r\n\r\ncmp_1\r\n--XY--\r\nepilogue";
        let parts = parse(body, "XY").unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name, "file");
        assert_eq!(parts[0].filename.as_deref(), Some("a;b.png"));
        assert_eq!(parts[0].content_type.as_deref(), Some("image/png"));
        assert_eq!(&body[parts[0].body.clone()], b"\x89PNG\r\n--X");
        assert_eq!(parts[1].name, "company_id");
        assert_eq!(&body[parts[1].body.clone()], b"cmp_1");
    }

    #[test]
    fn broken_bodies_are_refused() {
        let cases: &[&[u8]] = &[
            b"",
            b"--XY\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nno end",
            b"--XY\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nx\r\n--XY--",
            b"--XY\r\nContent-Type: text/plain\r\n\r\nx\r\n--XY--",
            b"--XY\r\nno colon\r\n\r\nx\r\n--XY--",
            b"--XYjunk\r\nContent-Disposition: form-data; name=a\r\n\r\nx\r\n--XY--",
            b"--XY\r\nContent-Disposition: form-data; name=a\r\n--XY--",
        ];
        for body in cases {
            assert!(
                parse(body, "XY").is_err(),
                "{:?}",
                String::from_utf8_lossy(body)
            );
        }
        let many: String = (0..9)
            .map(|i| format!("--XY\r\nContent-Disposition: form-data; name=p{i}\r\n\r\nx\r\n"))
            .collect::<String>()
            + "--XY--";
        assert!(parse(many.as_bytes(), "XY").unwrap_err().contains("parts"));
        assert_eq!(parse(b"--XY--", "XY").unwrap(), Vec::new());
    }
}
