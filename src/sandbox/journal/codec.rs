//! How journal entries are laid out inside a segment (see [`super::store`]): one after another, each
//! a presence bitmap, a "same as the previous entry" bitmap, a flags byte, integers as LEB128
//! varints and texts as a length and their UTF-8 bytes, uncompressed (a canary search of the file
//! sees exactly what was kept, and redaction has already run): see [`Encoder`]. Decoding borrows from the segment's bytes: scanning ten thousand entries for a
//! count allocates nothing per entry.

/// The segment layout's version, the first byte of every segment. A segment of any other version
/// is not read: a file holding one is set aside when a server opens it (`super::store::open`).
pub const VERSION: u8 = 3;

/// One journal entry's fields, borrowed: from a row being written, or from a segment being read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fields<'a> {
    pub seq: i64,
    /// The segment's account (not stored per entry).
    pub account_id: Option<&'a str>,
    pub company_id: Option<&'a str>,
    pub key_id: Option<&'a str>,
    pub client_id: Option<&'a str>,
    pub at_ms: i64,
    pub wall_ms: i64,
    pub duration_us: i64,
    pub method: &'a str,
    pub route: Option<&'a str>,
    pub operation_id: Option<&'a str>,
    pub creates: bool,
    pub list: bool,
    pub status: u16,
    pub problem_code: Option<&'a str>,
    pub request_id: &'a str,
    pub idempotency_key: Option<&'a str>,
    pub replayed: bool,
    pub fault: Option<&'a str>,
    pub retry_after: Option<u32>,
    pub via: &'a str,
    pub tool: Option<&'a str>,
    pub credentials: &'a str,
    pub if_match: bool,
    /// `If-Match: *`.
    pub if_match_any: bool,
    /// The client closed the connection before the answer was written.
    pub client_closed: bool,
    pub query: Option<&'a str>,
    pub body: Option<&'a str>,
    pub body_truncated: bool,
    pub body_bytes: i64,
    pub problem: Option<&'a str>,
    pub next_cursor: Option<&'a str>,
    /// The path as requested, redacted.
    pub path: Option<&'a str>,
    /// A digest of what the request asked for (method, path, query, body with its timestamps set
    /// aside): equal for a retry and the request it retries ([`super::shape`]).
    pub shape: Option<&'a str>,
    /// The `Signage-Test-Name` the request carried.
    pub test_name: Option<&'a str>,
}

/// A segment that does not decode: a damaged or foreign file.
#[derive(Debug)]
pub struct Malformed;

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("malformed journal segment")
    }
}

impl std::error::Error for Malformed {}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Signed integers zig-zag encoded, so small negatives stay short.
fn put_signed(out: &mut Vec<u8>, v: i64) {
    put_varint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Writes `s` as its length and bytes; where its bytes are.
fn put_str(out: &mut Vec<u8>, s: &str) -> std::ops::Range<usize> {
    put_varint(out, s.len() as u64);
    let start = out.len();
    out.extend_from_slice(s.as_bytes());
    start..out.len()
}

/// The entry's texts, in the order of the `present` and `same` bitmaps: the first four are always
/// there.
const TEXTS: usize = 21;
const REQUIRED: u32 = 0b1111;

/// The bit after the texts' in `present`: a `Retry-After` follows.
const RETRY_AFTER: u32 = 1 << TEXTS;

fn texts<'a>(f: &Fields<'a>) -> [Option<&'a str>; TEXTS] {
    [
        Some(f.method),
        Some(f.request_id),
        Some(f.via),
        Some(f.credentials),
        f.company_id,
        f.key_id,
        f.client_id,
        f.route,
        f.operation_id,
        f.problem_code,
        f.idempotency_key,
        f.fault,
        f.tool,
        f.query,
        f.body,
        // A digest of the body, written until the readiness checks compared bodies themselves.
        None,
        f.problem,
        f.next_cursor,
        f.path,
        f.shape,
        f.test_name,
    ]
}

fn set_texts<'a>(f: &mut Fields<'a>, texts: [Option<&'a str>; TEXTS]) -> Result<(), Malformed> {
    let [method, request_id, via, credentials, company_id, key_id, client_id, route, operation_id, problem_code, idempotency_key, fault, tool, query, body, _body_hash, problem, next_cursor, path, shape, test_name] =
        texts;
    f.method = method.ok_or(Malformed)?;
    f.request_id = request_id.ok_or(Malformed)?;
    f.via = via.ok_or(Malformed)?;
    f.credentials = credentials.ok_or(Malformed)?;
    f.company_id = company_id;
    f.key_id = key_id;
    f.client_id = client_id;
    f.route = route;
    f.operation_id = operation_id;
    f.problem_code = problem_code;
    f.idempotency_key = idempotency_key;
    f.fault = fault;
    f.tool = tool;
    f.query = query;
    f.body = body;
    f.problem = problem;
    f.next_cursor = next_cursor;
    f.path = path;
    f.shape = shape;
    f.test_name = test_name;
    Ok(())
}

// The flags byte.
const CREATES: u8 = 1;
const LIST: u8 = 1 << 1;
const REPLAYED: u8 = 1 << 2;
const IF_MATCH: u8 = 1 << 3;
const TRUNCATED: u8 = 1 << 4;
const IF_MATCH_ANY: u8 = 1 << 5;
const CLIENT_CLOSED: u8 = 1 << 6;

fn flags(f: &Fields<'_>) -> u8 {
    let bit = |on: bool, flag: u8| if on { flag } else { 0 };
    bit(f.creates, CREATES)
        | bit(f.list, LIST)
        | bit(f.replayed, REPLAYED)
        | bit(f.if_match, IF_MATCH)
        | bit(f.body_truncated, TRUNCATED)
        | bit(f.if_match_any, IF_MATCH_ANY)
        | bit(f.client_closed, CLIENT_CLOSED)
}

/// Builds one segment. An entry is written against the one before it: a text equal to the
/// previous entry's is one bit in `same` instead of its bytes, and the sequence number and both
/// clocks are differences. A client's requests repeat their account, key, client, route and
/// operation, so an ordinary entry is its request id and a few bytes of numbers.
pub struct Encoder {
    data: Vec<u8>,
    entries: usize,
    first_seq: i64,
    previous: Previous,
}

/// What the next entry is written against.
#[derive(Default)]
struct Previous {
    seq: i64,
    at_ms: i64,
    wall_ms: i64,
    /// Which of `texts` the previous entry had.
    present: u32,
    /// Where in the segment each of the previous entry's texts was last written out: compared in
    /// place, never copied.
    texts: [std::ops::Range<usize>; TEXTS],
}

impl Encoder {
    /// An empty segment whose first entry will have sequence number `first_seq`.
    pub fn new(first_seq: i64) -> Encoder {
        Encoder {
            data: vec![VERSION],
            entries: 0,
            first_seq,
            previous: Previous {
                seq: first_seq,
                ..Previous::default()
            },
        }
    }

    pub fn push(&mut self, f: &Fields<'_>) {
        let texts = texts(f);
        let previous = &mut self.previous;
        let (mut present, mut same) = (0u32, 0u32);
        for (i, text) in texts.iter().enumerate() {
            if let Some(t) = text {
                present |= 1 << i;
                if previous.present & (1 << i) != 0
                    && self.data.get(previous.texts[i].clone()) == Some(t.as_bytes())
                {
                    same |= 1 << i;
                }
            }
        }
        if f.retry_after.is_some() {
            present |= RETRY_AFTER;
        }
        let out = &mut self.data;
        put_varint(out, u64::from(present));
        put_varint(out, u64::from(same));
        out.push(flags(f));
        put_signed(out, f.seq.wrapping_sub(previous.seq));
        put_signed(out, f.at_ms.wrapping_sub(previous.at_ms));
        put_signed(out, f.wall_ms.wrapping_sub(previous.wall_ms));
        put_signed(out, f.duration_us);
        put_signed(out, f.body_bytes);
        put_varint(out, u64::from(f.status));
        if let Some(r) = f.retry_after {
            put_varint(out, u64::from(r));
        }
        for (i, text) in texts.iter().enumerate() {
            if let Some(t) = text.filter(|_| same & (1 << i) == 0) {
                previous.texts[i] = put_str(out, t);
            }
        }
        previous.present = present;
        previous.seq = f.seq;
        previous.at_ms = f.at_ms;
        previous.wall_ms = f.wall_ms;
        self.entries += 1;
    }

    /// The segment's bytes, its version first.
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    pub fn entries(&self) -> usize {
        self.entries
    }

    pub fn first_seq(&self) -> i64 {
        self.first_seq
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.data
    }
}

/// Reads entries out of one segment's bytes.
pub struct Decoder<'a> {
    bytes: &'a [u8],
    at: usize,
    account_id: Option<&'a str>,
    /// The previous entry's sequence number, clocks and texts.
    seq: i64,
    at_ms: i64,
    wall_ms: i64,
    texts: [Option<&'a str>; TEXTS],
}

impl<'a> Decoder<'a> {
    /// Checks the segment's version byte.
    pub fn new(
        data: &'a [u8],
        first_seq: i64,
        account_id: Option<&'a str>,
    ) -> Result<Decoder<'a>, Malformed> {
        match data.first() {
            Some(&VERSION) => Ok(Decoder {
                bytes: data,
                at: 1,
                account_id,
                seq: first_seq,
                at_ms: 0,
                wall_ms: 0,
                texts: [None; TEXTS],
            }),
            _ => Err(Malformed),
        }
    }

    fn varint(&mut self) -> Result<u64, Malformed> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.bytes.get(self.at).ok_or(Malformed)?;
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(Malformed)
    }

    fn signed(&mut self) -> Result<i64, Malformed> {
        let z = self.varint()?;
        Ok(((z >> 1) as i64) ^ -((z & 1) as i64))
    }

    fn bitmap(&mut self) -> Result<u32, Malformed> {
        u32::try_from(self.varint()?).map_err(|_| Malformed)
    }

    fn byte(&mut self) -> Result<u8, Malformed> {
        let b = *self.bytes.get(self.at).ok_or(Malformed)?;
        self.at += 1;
        Ok(b)
    }

    fn str(&mut self) -> Result<&'a str, Malformed> {
        let len = usize::try_from(self.varint()?).map_err(|_| Malformed)?;
        let end = self.at.checked_add(len).ok_or(Malformed)?;
        let bytes = self.bytes.get(self.at..end).ok_or(Malformed)?;
        self.at = end;
        std::str::from_utf8(bytes).map_err(|_| Malformed)
    }

    fn with_flags(f: Fields<'a>, flags: u8) -> Fields<'a> {
        Fields {
            creates: flags & CREATES != 0,
            list: flags & LIST != 0,
            replayed: flags & REPLAYED != 0,
            if_match: flags & IF_MATCH != 0,
            body_truncated: flags & TRUNCATED != 0,
            if_match_any: flags & IF_MATCH_ANY != 0,
            client_closed: flags & CLIENT_CLOSED != 0,
            ..f
        }
    }

    fn entry(&mut self) -> Result<Fields<'a>, Malformed> {
        let present = self.bitmap()?;
        let same = self.bitmap()?;
        let flags = self.byte()?;
        if present & REQUIRED != REQUIRED || same & !present != 0 || present >> (TEXTS + 1) != 0 {
            return Err(Malformed);
        }
        self.seq = self.seq.wrapping_add(self.signed()?);
        self.at_ms = self.at_ms.wrapping_add(self.signed()?);
        self.wall_ms = self.wall_ms.wrapping_add(self.signed()?);
        let mut f = Fields {
            seq: self.seq,
            account_id: self.account_id,
            at_ms: self.at_ms,
            wall_ms: self.wall_ms,
            duration_us: self.signed()?,
            body_bytes: self.signed()?,
            status: u16::try_from(self.varint()?).map_err(|_| Malformed)?,
            ..Fields::default()
        };
        if present & RETRY_AFTER != 0 {
            f.retry_after = Some(u32::try_from(self.varint()?).map_err(|_| Malformed)?);
        }
        for i in 0..TEXTS {
            let bit = 1 << i;
            self.texts[i] = if present & bit == 0 {
                None
            } else if same & bit != 0 {
                // Written against the previous entry: it must have had this text.
                Some(self.texts[i].ok_or(Malformed)?)
            } else {
                Some(self.str()?)
            };
        }
        set_texts(&mut f, self.texts)?;
        Ok(Decoder::with_flags(f, flags))
    }
}

impl<'a> Iterator for Decoder<'a> {
    type Item = Result<Fields<'a>, Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.bytes.len() {
            return None;
        }
        let entry = self.entry();
        if entry.is_err() {
            // Nothing after a damaged entry can be trusted.
            self.at = self.bytes.len();
        }
        Some(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Fields<'static> {
        Fields {
            seq: 42,
            account_id: Some("acct_1"),
            company_id: Some("cmp_1"),
            key_id: Some("key_1"),
            client_id: Some("cli_1"),
            at_ms: -5,
            wall_ms: 1_790_000_000_000,
            duration_us: 1234,
            method: "POST",
            route: Some("/ads"),
            operation_id: Some("createAd"),
            creates: true,
            list: false,
            status: 503,
            problem_code: Some("service_unavailable"),
            request_id: "req_1",
            idempotency_key: Some("k-é"),
            replayed: true,
            fault: Some("prefer"),
            retry_after: Some(2),
            via: "rest",
            tool: Some("list_ads"),
            credentials: "api_key",
            if_match: true,
            query: Some("{}"),
            body: Some("{\"a\":1}"),
            body_truncated: true,
            body_bytes: 9000,
            problem: Some("{\"status\":503}"),
            next_cursor: Some("ad_9"),
            ..Fields::default()
        }
    }

    fn with_v3(f: Fields<'static>) -> Fields<'static> {
        Fields {
            if_match_any: true,
            client_closed: true,
            path: Some("/ads"),
            shape: Some("0123456789abcdef"),
            test_name: Some("tests/test_x.py::test_y"),
            ..f
        }
    }

    fn bare() -> Fields<'static> {
        Fields {
            seq: 44,
            account_id: Some("acct_1"),
            method: "GET",
            request_id: "req_2",
            via: "mcp",
            credentials: "none",
            status: 200,
            ..Fields::default()
        }
    }

    fn decode(bytes: &[u8], first_seq: i64) -> Vec<Fields<'_>> {
        Decoder::new(bytes, first_seq, Some("acct_1"))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn entries_read_back_as_written() {
        let retried = Fields {
            seq: 45,
            wall_ms: 1_790_000_000_250,
            request_id: "req_3",
            status: 201,
            fault: None,
            ..full()
        };
        let entries = [with_v3(full()), bare(), retried, with_v3(retried), full()];
        let mut segment = Encoder::new(42);
        for f in &entries {
            segment.push(f);
        }
        assert_eq!(segment.entries(), 5);
        let back = decode(segment.bytes(), 42);
        assert_eq!(back.len(), entries.len());
        for (got, want) in back.iter().zip(&entries) {
            assert_eq!(format!("{got:?}"), format!("{want:?}"));
        }
    }

    #[test]
    fn a_repeated_text_is_one_bit_not_its_bytes() {
        let first = full();
        let next = Fields {
            seq: 43,
            request_id: "req_9",
            wall_ms: first.wall_ms + 3,
            ..first
        };
        let mut segment = Encoder::new(42);
        segment.push(&first);
        let alone = segment.bytes().len();
        segment.push(&next);
        // The second entry: bitmaps (the Retry-After bit past the 21 texts makes them 4 bytes
        // each), flags, five numbers, the status, Retry-After, "req_9".
        let second = segment.bytes().len() - alone;
        assert!(second <= 26, "second entry took {second} bytes");
        assert_eq!(decode(segment.bytes(), 42)[1].route, Some("/ads"));
    }

    #[test]
    fn damaged_bytes_are_an_error_not_a_panic() {
        let mut segment = Encoder::new(0);
        segment.push(&bare());
        let out = segment.bytes();
        for cut in 2..out.len() {
            let results: Vec<_> = Decoder::new(&out[..cut], 0, None).unwrap().collect();
            assert!(results.iter().any(Result::is_err), "cut at {cut}");
        }
        assert!(Decoder::new(&[9], 0, None).is_err());
        let mut bad_utf8 = out.to_vec();
        let at = bad_utf8.len() - 1;
        bad_utf8[at] = 0xff;
        assert!(Decoder::new(&bad_utf8, 0, None)
            .unwrap()
            .any(|r| r.is_err()));
        // "Same as the previous entry's" in the first entry: there is none.
        let mut orphan = vec![VERSION];
        put_varint(&mut orphan, u64::from(REQUIRED));
        put_varint(&mut orphan, 1);
        orphan.extend_from_slice(&[0; 8]);
        assert!(Decoder::new(&orphan, 0, None).unwrap().any(|r| r.is_err()));
    }
}
