//! `multipart/form-data` (RFC 7578) bodies, as client generators send uploads: the parts of a
//! body already read whole (its size is bounded by the server's body limit), each part's
//! `Content-Disposition` name and filename, its `Content-Type`, and its bytes (borrowed).

/// At most this many parts: an upload has a file and a few fields.
const MAX_PARTS: usize = 8;
/// At most this many bytes of headers per part.
const MAX_HEADER_BYTES: usize = 4096;

#[derive(Debug, PartialEq, Eq)]
pub struct Part<'a> {
    pub name: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub body: &'a [u8],
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

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if from > haystack.len() || needle.is_empty() {
        return None;
    }
    haystack[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// The parts of `body`. Refuses (with a message for the 400) a body without the closing
/// delimiter, a part without `Content-Disposition: form-data; name=…`, too many parts or headers.
pub fn parse<'a>(body: &'a [u8], boundary: &str) -> Result<Vec<Part<'a>>, String> {
    let delimiter = format!("--{boundary}");
    let next_delimiter = format!("\r\n--{boundary}");
    let mut at = if body.starts_with(delimiter.as_bytes()) {
        delimiter.len()
    } else {
        find(body, next_delimiter.as_bytes(), 0).ok_or("no boundary delimiter in the body")?
            + next_delimiter.len()
    };
    let mut parts = Vec::new();
    loop {
        let rest = &body[at..];
        if rest.starts_with(b"--") {
            return Ok(parts);
        }
        // Transport padding (RFC 2046), then the line break that ends the delimiter line.
        let line_end = find(body, b"\r\n", at).ok_or("a delimiter line does not end")?;
        if body[at..line_end].iter().any(|b| *b != b' ' && *b != b'\t') {
            return Err("text after a boundary delimiter".into());
        }
        let headers_start = line_end + 2;
        let headers_end = find(body, b"\r\n\r\n", headers_start)
            .filter(|e| e - headers_start <= MAX_HEADER_BYTES)
            .ok_or("a part's headers do not end (or are too long)")?;
        let content_start = headers_end + 4;
        let content_end = find(body, next_delimiter.as_bytes(), headers_end)
            .ok_or("the body has no closing boundary delimiter")?;
        if content_end < content_start {
            return Err("a part's headers run into the next delimiter".into());
        }
        let headers = std::str::from_utf8(&body[headers_start..headers_end])
            .map_err(|_| "a part's headers are not UTF-8")?;
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
            body: &body[content_start..content_end],
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
        assert_eq!(parts[0].body, b"\x89PNG\r\n--X");
        assert_eq!(parts[1].name, "company_id");
        assert_eq!(parts[1].body, b"cmp_1");
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
