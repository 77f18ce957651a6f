//! What the journal hook ([`super::observe`]) hands its observer for one request, and who made it:
//! plain data, below both the hook and the per-request [`super::exchange::Exchange`] that holds a
//! tool call's observation while the call runs.

use crate::auth::authenticate::Owner;
use crate::auth::Principal;
use bytes::Bytes;
use hyper::Method;

/// Short text held inline up to [`Text::INLINE`] bytes (every id signage mints fits), on the heap
/// beyond. An ordinary request's observation then allocates nothing on the request's thread, and
/// the journal's writer frees nothing another thread allocated; reading it back as `&str` checks
/// nothing (the writer reads every id of every entry).
#[derive(Clone)]
pub enum Text {
    Inline(arrayvec::ArrayString<{ Text::INLINE }>),
    Heap(Box<str>),
}

impl Text {
    /// Ids, request ids and UUID idempotency keys fit; the whole stays 48 bytes.
    pub const INLINE: usize = 40;

    // One shared copy rather than one inlined at each of the hook's dozen call sites: the hook
    // runs on every request, among code that already overflows the instruction cache.
    #[inline(never)]
    pub fn new(s: &str) -> Text {
        match arrayvec::ArrayString::from(s) {
            Ok(inline) => Text::Inline(inline),
            Err(_) => Text::Heap(s.into()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Text::Inline(s) => s,
            Text::Heap(s) => s,
        }
    }
}

impl std::ops::Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

/// One request as served, for the journal.
#[derive(Debug, Clone)]
pub struct Observation {
    /// The account the entry belongs to; `None`: nobody's (a request that did not authenticate
    /// and did not prove whose credential it carried).
    pub account_id: Option<Text>,
    /// The credential's company scope, if any.
    pub company_id: Option<Text>,
    /// `key_…` (or `usr_…` for a login token): never the secret.
    pub key_id: Option<Text>,
    pub client_id: Option<Text>,
    /// The sandbox clock at the start of the request (Unix milliseconds).
    pub at_ms: i64,
    /// The wall clock at the start of the request (Unix milliseconds): what client pacing
    /// (back-off, `Retry-After`) is judged on, whatever the sandbox clock does.
    pub wall_ms: i64,
    /// The path as requested (redacted by the observer): `/devices/dev_1/ads`, where `route` is
    /// `/devices/{id}/ads`.
    pub path: Text,
    pub duration_us: u64,
    pub method: Method,
    /// The route pattern and its operation; `None` when no route matched (404, 405).
    pub route: Option<&'static str>,
    pub operation_id: Option<&'static str>,
    /// The route creates something a retry could repeat: it answers 201 and honours
    /// `Idempotency-Key` (not a key rotation, which happens once: [`crate::http::router::Route::once_only`]).
    pub creates: bool,
    /// The route is a paged list (it takes `cursor`).
    pub list: bool,
    pub status: u16,
    pub request_id: Text,
    pub idempotency_key: Option<Text>,
    /// The answer was an `Idempotency-Key` replay.
    pub replayed: bool,
    /// The fault that answered or delayed it (`Signage-Fault`: a rule id, or `prefer`).
    pub fault: Option<Text>,
    /// `Retry-After` of the answer, in seconds.
    pub retry_after: Option<u32>,
    /// `rest` or `mcp`.
    pub via: &'static str,
    /// The MCP tool called.
    pub tool: Option<Text>,
    /// Which credential was presented: `none`, `api_key` or `bearer`.
    pub credentials: &'static str,
    pub if_match: bool,
    /// `If-Match: *`: a condition any version meets.
    pub if_match_any: bool,
    /// The `Signage-Test-Name` header: the test that sent the request (a harness's tag).
    pub test_name: Option<Text>,
    /// Noted when the client closed the connection before the answer was written (read when
    /// the entry is written: the server may notice after the request was observed).
    pub hangup: super::request::Hangup,
    /// The raw query string (redacted by the observer).
    pub query: Text,
    /// The raw body and its media type (redacted by the observer).
    pub body: Bytes,
    /// Bytes of the body as sent: `body`'s, or an upload's that was streamed to disk.
    pub body_sent: usize,
    pub body_type: Option<Text>,
    /// The answer's body when it is a problem (status >= 400); empty otherwise.
    pub response: Bytes,
    /// The `next_cursor` of a list page, read here: holding on to every page until the writer
    /// runs would keep megabytes of answers alive and out of the allocator's reach.
    pub next_cursor: Option<Text>,
}

/// Who made a request, as the journal names them: ids only, never a secret.
#[derive(Clone, Default)]
pub(super) struct Who {
    pub(super) account_id: Option<Text>,
    pub(super) company_id: Option<Text>,
    pub(super) key_id: Option<Text>,
    pub(super) client_id: Option<Text>,
}

impl Who {
    pub(super) fn of(p: &Principal) -> Who {
        Who {
            account_id: Some(Text::new(&p.account_id)),
            company_id: p.company_scope.as_deref().map(Text::new),
            key_id: Some(Text::new(p.actor_id())),
            client_id: p.client_id().map(Text::new),
        }
    }

    /// The holder of a refused credential that proved itself ([`Owner`]).
    #[cold]
    pub(super) fn of_owner(o: &Owner) -> Who {
        Who {
            account_id: Some(Text::new(&o.account_id)),
            company_id: o.company_id.as_deref().map(Text::new),
            key_id: Some(Text::new(&o.actor_id)),
            client_id: o.client_id.as_deref().map(Text::new),
        }
    }
}
