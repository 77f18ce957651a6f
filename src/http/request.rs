//! A request as the pipeline takes it, whatever carried it (the hyper server or an MCP tool call),
//! and what the server already found of its credential. Plain data: it imports neither the
//! pipeline nor the journal hook ([`super::observe`]), which both read it.

use crate::auth::authenticate::Verified;
use bytes::Bytes;
use hyper::{HeaderMap, Method};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether the client closed the connection before the request's answer was written (it timed
/// out or gave up: whatever the answer, it never read it). The server notes it; the journal reads
/// it when it writes the entry. A request that did not come over a connection never notes one.
#[derive(Debug, Clone, Default)]
pub struct Hangup(Option<Arc<AtomicBool>>);

impl Hangup {
    /// One to be noted by the server.
    pub fn watched() -> Hangup {
        Hangup(Some(Arc::new(AtomicBool::new(false))))
    }

    pub fn note(&self) {
        if let Some(flag) = &self.0 {
            flag.store(true, Ordering::Relaxed);
        }
    }

    pub fn noticed(&self) -> bool {
        self.0.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

/// A request as the pipeline sees it, independent of the transport.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    pub path: String,
    pub query: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub peer: Option<IpAddr>,
    pub request_id: String,
    /// What the server found of the request's credential before it read the body.
    pub credential: Credential,
    /// The body of an upload, streamed to a temporary file (`body` is empty then).
    pub spool: Option<std::sync::Arc<super::spool::Spool>>,
    /// An MCP preview: every write runs its checks and is rolled back ([`crate::db::WriteIntent`]).
    pub dry_run: bool,
    /// A dry run made later: its time reads this much after the clock (ms;
    /// [`crate::db::WriteIntent::later_ms`]).
    pub later_ms: i64,
    /// The token balance a confirmed MCP change expects of a company.
    pub expected_balance: Option<crate::db::ExpectedBalance>,
    /// Noted when the client closes the connection before the answer is written.
    pub hangup: Hangup,
}

/// The server checks the credential of a request that needs one from its headers, before it reads
/// any of its body ([`super::server`]); the pipeline takes its finding instead of looking again.
#[derive(Debug, Clone, Default)]
pub enum Credential {
    /// Not checked (a route without a credential, or a request that did not come from the server).
    #[default]
    NotChecked,
    /// Valid: the principal, and the key's use still to record (on the request's own thread).
    Verified(Box<Verified>),
    /// Refused: the body was not read. The pipeline authenticates again to answer the refusal
    /// exactly (and to audit it); should the credential have become valid meanwhile, the request
    /// is not run on a body it never read.
    Refused,
}
