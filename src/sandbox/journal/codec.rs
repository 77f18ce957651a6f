//! How journal entries are laid out inside a segment (see [`super::store`]): one after another, each
//! a presence bitmap, a flags byte, integers as LEB128 varints and strings as a length and their
//! UTF-8 bytes, uncompressed (a canary search of the file sees exactly what was kept, and redaction
//! has already run). Decoding borrows from the segment's bytes: scanning ten thousand entries for a
//! count allocates nothing per entry.

/// The segment layout's version, the first byte of every segment.
pub const VERSION: u8 = 1;

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
    pub query: Option<&'a str>,
    pub body: Option<&'a str>,
    pub body_truncated: bool,
    pub body_bytes: i64,
    pub body_hash: Option<&'a str>,
    pub problem: Option<&'a str>,
    pub next_cursor: Option<&'a str>,
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

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

// The optional members, in the order of the presence bitmap's bits.
const COMPANY: u32 = 1;
const KEY: u32 = 1 << 1;
const CLIENT: u32 = 1 << 2;
const ROUTE: u32 = 1 << 3;
const OPERATION: u32 = 1 << 4;
const PROBLEM_CODE: u32 = 1 << 5;
const IDEMPOTENCY: u32 = 1 << 6;
const FAULT: u32 = 1 << 7;
const RETRY_AFTER: u32 = 1 << 8;
const TOOL: u32 = 1 << 9;
const QUERY: u32 = 1 << 10;
const BODY: u32 = 1 << 11;
const BODY_HASH: u32 = 1 << 12;
const PROBLEM: u32 = 1 << 13;
const NEXT_CURSOR: u32 = 1 << 14;

// The flags byte.
const CREATES: u8 = 1;
const LIST: u8 = 1 << 1;
const REPLAYED: u8 = 1 << 2;
const IF_MATCH: u8 = 1 << 3;
const TRUNCATED: u8 = 1 << 4;

/// Appends `f` to a segment whose first entry has sequence number `first_seq`.
pub fn encode(out: &mut Vec<u8>, first_seq: i64, f: &Fields<'_>) {
    let opt = [
        (COMPANY, f.company_id),
        (KEY, f.key_id),
        (CLIENT, f.client_id),
        (ROUTE, f.route),
        (OPERATION, f.operation_id),
        (PROBLEM_CODE, f.problem_code),
        (IDEMPOTENCY, f.idempotency_key),
        (FAULT, f.fault),
        (TOOL, f.tool),
        (QUERY, f.query),
        (BODY, f.body),
        (BODY_HASH, f.body_hash),
        (PROBLEM, f.problem),
        (NEXT_CURSOR, f.next_cursor),
    ];
    let mut present = opt
        .iter()
        .filter(|(_, v)| v.is_some())
        .fold(0, |acc, (bit, _)| acc | bit);
    if f.retry_after.is_some() {
        present |= RETRY_AFTER;
    }
    let flags = [
        (CREATES, f.creates),
        (LIST, f.list),
        (REPLAYED, f.replayed),
        (IF_MATCH, f.if_match),
        (TRUNCATED, f.body_truncated),
    ]
    .iter()
    .filter(|(_, on)| *on)
    .fold(0, |acc, (bit, _)| acc | bit);
    put_varint(out, u64::from(present));
    out.push(flags);
    put_varint(out, f.seq.saturating_sub(first_seq).max(0) as u64);
    put_signed(out, f.at_ms);
    put_signed(out, f.wall_ms);
    put_signed(out, f.duration_us);
    put_signed(out, f.body_bytes);
    put_varint(out, u64::from(f.status));
    put_str(out, f.method);
    put_str(out, f.request_id);
    put_str(out, f.via);
    put_str(out, f.credentials);
    if let Some(r) = f.retry_after {
        put_varint(out, u64::from(r));
    }
    for (_, v) in opt {
        if let Some(s) = v {
            put_str(out, s);
        }
    }
}

/// Reads entries out of one segment's bytes.
pub struct Decoder<'a> {
    bytes: &'a [u8],
    at: usize,
    first_seq: i64,
    account_id: Option<&'a str>,
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
                first_seq,
                account_id,
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

    fn str(&mut self) -> Result<&'a str, Malformed> {
        let len = usize::try_from(self.varint()?).map_err(|_| Malformed)?;
        let end = self.at.checked_add(len).ok_or(Malformed)?;
        let bytes = self.bytes.get(self.at..end).ok_or(Malformed)?;
        self.at = end;
        std::str::from_utf8(bytes).map_err(|_| Malformed)
    }

    fn opt(&mut self, present: u32, bit: u32) -> Result<Option<&'a str>, Malformed> {
        if present & bit == 0 {
            Ok(None)
        } else {
            self.str().map(Some)
        }
    }

    fn entry(&mut self) -> Result<Fields<'a>, Malformed> {
        let present = u32::try_from(self.varint()?).map_err(|_| Malformed)?;
        let flags = *self.bytes.get(self.at).ok_or(Malformed)?;
        self.at += 1;
        let delta = i64::try_from(self.varint()?).map_err(|_| Malformed)?;
        let mut f = Fields {
            seq: self.first_seq.checked_add(delta).ok_or(Malformed)?,
            account_id: self.account_id,
            at_ms: self.signed()?,
            wall_ms: self.signed()?,
            duration_us: self.signed()?,
            body_bytes: self.signed()?,
            status: u16::try_from(self.varint()?).map_err(|_| Malformed)?,
            method: self.str()?,
            request_id: self.str()?,
            via: self.str()?,
            credentials: self.str()?,
            creates: flags & CREATES != 0,
            list: flags & LIST != 0,
            replayed: flags & REPLAYED != 0,
            if_match: flags & IF_MATCH != 0,
            body_truncated: flags & TRUNCATED != 0,
            ..Fields::default()
        };
        if present & RETRY_AFTER != 0 {
            f.retry_after = Some(u32::try_from(self.varint()?).map_err(|_| Malformed)?);
        }
        f.company_id = self.opt(present, COMPANY)?;
        f.key_id = self.opt(present, KEY)?;
        f.client_id = self.opt(present, CLIENT)?;
        f.route = self.opt(present, ROUTE)?;
        f.operation_id = self.opt(present, OPERATION)?;
        f.problem_code = self.opt(present, PROBLEM_CODE)?;
        f.idempotency_key = self.opt(present, IDEMPOTENCY)?;
        f.fault = self.opt(present, FAULT)?;
        f.tool = self.opt(present, TOOL)?;
        f.query = self.opt(present, QUERY)?;
        f.body = self.opt(present, BODY)?;
        f.body_hash = self.opt(present, BODY_HASH)?;
        f.problem = self.opt(present, PROBLEM)?;
        f.next_cursor = self.opt(present, NEXT_CURSOR)?;
        Ok(f)
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

    #[test]
    fn an_entry_reads_back_as_written() {
        let full = Fields {
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
            body_hash: Some("00ff"),
            problem: Some("{\"status\":503}"),
            next_cursor: Some("ad_9"),
        };
        let bare = Fields {
            seq: 44,
            account_id: Some("acct_1"),
            method: "GET",
            request_id: "req_2",
            via: "mcp",
            credentials: "none",
            status: 200,
            ..Fields::default()
        };
        let mut out = vec![VERSION];
        encode(&mut out, 40, &full);
        encode(&mut out, 40, &bare);
        let back: Vec<Fields<'_>> = Decoder::new(&out, 40, Some("acct_1"))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(format!("{:?}", back[0]), format!("{full:?}"));
        assert_eq!(format!("{:?}", back[1]), format!("{bare:?}"));
    }

    #[test]
    fn damaged_bytes_are_an_error_not_a_panic() {
        let f = Fields {
            method: "GET",
            request_id: "req_1",
            via: "rest",
            credentials: "none",
            ..Fields::default()
        };
        let mut out = vec![VERSION];
        encode(&mut out, 0, &f);
        for cut in 2..out.len() {
            let results: Vec<_> = Decoder::new(&out[..cut], 0, None).unwrap().collect();
            assert!(results.iter().any(Result::is_err), "cut at {cut}");
        }
        assert!(Decoder::new(&[9], 0, None).is_err());
        let mut bad_utf8 = out.clone();
        let at = bad_utf8.len() - 1;
        bad_utf8[at] = 0xff;
        assert!(Decoder::new(&bad_utf8, 0, None)
            .unwrap()
            .any(|r| r.is_err()));
    }
}
