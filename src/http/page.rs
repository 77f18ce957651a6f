//! Keyset pagination: a validated page request and its cursor (the last id, and the tag of the
//! filters it was asked with). Plain data and text: it imports no other file of http, so both the
//! response (which writes a page's `next_cursor`) and the request context (which reads it) sit
//! above it.

/// A validated page request: `limit` rows after the id in `cursor` (newest first).
#[derive(Debug, Clone)]
pub struct PageRequest {
    pub limit: u32,
    /// Rows strictly older than this id; `None` for the first page.
    pub before: Option<String>,
    /// The tag of the request's filters ([`filter_tag`]), carried by the page's `next_cursor`.
    pub tag: String,
}

impl PageRequest {
    /// The SQL keyset bound: ids sort below every `[0-9a-zA-Z_]` id when the cursor is absent.
    pub fn bound(&self) -> &str {
        self.before.as_deref().unwrap_or("~")
    }
    /// One more than the page, to learn whether another page follows.
    pub fn fetch(&self) -> i64 {
        i64::from(self.limit) + 1
    }
}

/// The cursor of a page is the id of its last row (as Stripe's `starting_after`: any id of the
/// listed kind is a meaningful keyset bound, so a cursor never goes stale), a `.`, and the tag of
/// the filters the page was asked with: the next page must be asked with the same ones.
pub fn encode_cursor(id: &str, tag: &str) -> String {
    format!("{id}.{tag}")
}

/// Characters of a filter tag.
pub(super) const TAG_LEN: usize = 8;

/// The tag of a list request's filters: 8 base-62 digits of a 64-bit FNV-1a digest of its
/// operation, its path parameters and its query parameters other than `cursor` and `limit`
/// (sorted by name). Not a secret, not a signature: a page size may change from page to page,
/// nothing else may.
pub fn filter_tag(
    operation_id: &str,
    params: &[(&'static str, String)],
    query: &[(String, String)],
) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes.iter().chain(std::iter::once(&0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    feed(operation_id.as_bytes());
    for (name, value) in params {
        feed(name.as_bytes());
        feed(value.as_bytes());
    }
    let mut filters: Vec<&(String, String)> = query
        .iter()
        .filter(|(k, _)| k != "cursor" && k != "limit")
        .collect();
    filters.sort();
    for (name, value) in filters {
        feed(name.as_bytes());
        feed(value.as_bytes());
    }
    let mut tag = [b'0'; TAG_LEN];
    for slot in tag.iter_mut().rev() {
        *slot = crate::random::BASE62[(h % 62) as usize];
        h /= 62;
    }
    String::from_utf8_lossy(&tag).into_owned()
}

/// A cursor split into its bound and its filter tag (`None` for a bare bound).
pub(super) fn split_cursor(s: &str) -> (&str, Option<&str>) {
    match s.rsplit_once('.') {
        Some((bound, tag)) => (bound, Some(tag)),
        None => (s, None),
    }
}

/// A cursor of a list whose items are of `kind` (the route's [`super::router::Route::cursor`]): an id of that
/// kind. A list without a declared kind (the audit log, with numeric ids that it parses itself)
/// takes a short run of letters, digits and `_`.
pub fn decode_cursor(kind: Option<crate::ids::Kind>, s: &str) -> Option<String> {
    let ok = match kind {
        Some(kind) => crate::ids::is_valid(kind, s),
        None => {
            !s.is_empty()
                && s.len() <= 100
                && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        }
    };
    ok.then(|| s.to_string())
}
