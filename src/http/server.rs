//! The hyper server: accept loop with connection admission, header-read, body-read and idle
//! timeouts, body size limits, request ids, access logs, and graceful shutdown.
//!
//! No client can hold a connection slot for long without making progress, nor every slot:
//! - admission ([`super::admission`]): a connection is *unauthenticated* until one of its requests
//!   carries a valid credential; one address may hold `server.max_unauthenticated_per_address`
//!   such connections, all together three quarters of `max_connections`, and a new connection
//!   closes the oldest one past either bound;
//! - credential before body: a request to a route that needs a credential (or checks one itself,
//!   `/mcp`) is authenticated from its headers before any of its body is read. Without a valid
//!   one, the body is never read: the refusal is answered and the connection closed. Failed
//!   authentication is rate-limited per client address ([`super::auth_failures`]);
//! - headers: every connection must complete each request head within `header_read_timeout_secs`
//!   of its accept (or of its previous answer), an unauthenticated one within
//!   `unauthenticated_timeout_millis` ([`watch`], one timer per connection);
//! - body: an authenticated request's whole body must arrive within `body_read_timeout_secs` of
//!   the head (at most `max_body_bytes`), a public route's within `unauthenticated_timeout_millis`
//!   (at most `unauthenticated_max_body_bytes`), else 408 (413) and the connection is closed; the
//!   bodies in memory at once share one budget ([`super::body`]);
//! - idle: a connection with no byte read or written and no request running for
//!   `idle_timeout_secs` is closed (a silent keep-alive connection, or one whose client stopped
//!   reading its response).

use super::admission::{Admitted, Busy, Conn, Running};
use super::body::{self, Limits};
use super::error::ApiError;
use super::exchange::Exchange;
use super::pipeline;
use super::request::{Credential, Request};
use super::response::Response;
use super::router::{Exec, Match};
use super::spool::{self, Spool};
use super::state::App;
use crate::auth::failure::AuthError;
use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::body::{Body as _, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// How long in-flight requests get to finish after a shutdown signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

pub async fn serve(
    app: Arc<App>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let timeouts = Timeouts {
        idle: Duration::from_secs(app.settings.idle_timeout_secs),
        head: Duration::from_secs(app.settings.header_read_timeout_secs),
        unauthenticated: Duration::from_millis(app.settings.unauthenticated_timeout_millis),
    };
    let frozen = app.clock().mode() == crate::time::Mode::Frozen;
    tokio::pin!(shutdown);
    loop {
        // Wait for room before accepting: past the limit, new connections wait in the kernel's
        // backlog instead of being served.
        tokio::select! {
            _ = app.admission.room() => {}
            _ = &mut shutdown => break,
        }
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let watcher = graceful.watcher();
        let setup = Setup { timeouts, frozen };
        match app.admission.admit(peer.ip()) {
            Admitted::Yes(conn) => serve_one(app.clone(), watcher, setup, stream, peer, conn),
            Admitted::Wait => {
                // No stalled connection to close yet: this one waits for room, then is served
                // or answered 503.
                let app = app.clone();
                tokio::spawn(async move {
                    match app
                        .admission
                        .wait(peer.ip(), timeouts.unauthenticated)
                        .await
                    {
                        Some(conn) => serve_one(app, watcher, setup, stream, peer, conn),
                        None => refuse(stream).await,
                    }
                });
            }
        }
    }
    drop(listener);
    tracing::info!("shutting down: waiting for in-flight requests");
    tokio::select! {
        _ = graceful.shutdown() => tracing::info!("all connections closed"),
        _ = tokio::time::sleep(SHUTDOWN_GRACE) => tracing::warn!("shutdown grace period elapsed"),
    }
    Ok(())
}

/// What every connection is served with.
#[derive(Clone, Copy)]
struct Setup {
    timeouts: Timeouts,
    frozen: bool,
}

/// Serves an admitted connection on its own task until it ends, then gives its slot back.
fn serve_one(
    app: Arc<App>,
    watcher: hyper_util::server::graceful::Watcher,
    setup: Setup,
    stream: TcpStream,
    peer: SocketAddr,
    conn: Arc<Conn>,
) {
    let _ = stream.set_nodelay(true);
    let io = TokioIo::new(Tracked {
        inner: stream,
        conn: conn.clone(),
    });
    let service = {
        let (app, conn) = (app.clone(), conn.clone());
        service_fn(move |req| {
            let guard = Busy::enter(&conn);
            let fut = handle(app.clone(), conn.clone(), peer, req);
            async move {
                let resp = fut.await;
                // The body carries the mark: the head limit's clock starts once it is written.
                let answering = guard.answered();
                resp.map(|r| {
                    r.map(|body| Answered {
                        body,
                        _answering: answering,
                    })
                })
            }
        })
    };
    let served = http1::Builder::new()
        // The head's time limit is [`watch`]'s, which holds one timer per connection; hyper's
        // would make and drop one for every request head.
        .header_read_timeout(None)
        .keep_alive(true)
        // A frozen sandbox dates its answers by its own clock (`into_hyper`), not the wall's.
        .auto_date_header(!setup.frozen)
        .serve_connection(io, service);
    let served = watcher.watch(served);
    tokio::spawn(async move {
        watch(served, &conn, setup.timeouts, peer).await;
        // An answer handed to hyper and never written: hyper found the client gone first.
        if let Some(hangup) = conn.take_unwritten() {
            hangup.note();
        }
        // The connection is closed (or dropped) before its slot is given back.
        app.admission.release(&conn);
    });
}

/// A connection admission could not make room for in time: a 503 problem, then closed. Nothing of
/// its request is read.
async fn refuse(mut stream: TcpStream) {
    let request_id = format!("req_{}", crate::random::nonsecret::hex::<12>());
    let resp = ApiError::TooManyConnections.into_response(&request_id);
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        resp.status.as_u16(),
        resp.status.canonical_reason().unwrap_or("")
    );
    for (name, value) in &resp.headers {
        head.push_str(&format!(
            "{name}: {}\r\n",
            value.to_str().unwrap_or_default()
        ));
    }
    head.push_str(&format!(
        "request-id: {request_id}\r\ncontent-length: {}\r\n\r\n",
        resp.body.len()
    ));
    tracing::debug!(request_id = %request_id, "connection refused: no slot could be freed");
    let write = async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(&resp.body).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
}

/// The route whose healthy answers are logged at debug, not info.
const HEALTH_ROUTE: &str = "/health";
/// The public QR short link: its requests are logged as counts ([`scan_log`]).
const SCAN_ROUTE: &str = "/q/{code}";

/// The access log of public scans, aggregated: one info line per [`scan_log::EVERY`] at most,
/// with the scans answered since the previous line (redirected, refused, unknown).
mod scan_log {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    pub const EVERY: Duration = Duration::from_secs(10);
    static REDIRECTED: AtomicU64 = AtomicU64::new(0);
    static LIMITED: AtomicU64 = AtomicU64::new(0);
    static OTHER: AtomicU64 = AtomicU64::new(0);
    static LAST: Mutex<Option<Instant>> = Mutex::new(None);

    pub fn count(status: u16) {
        match status {
            302 => &REDIRECTED,
            429 => &LIMITED,
            _ => &OTHER,
        }
        .fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|t| now.duration_since(t) < EVERY) {
            return;
        }
        *last = Some(now);
        drop(last);
        let redirected = REDIRECTED.swap(0, Ordering::Relaxed);
        let limited = LIMITED.swap(0, Ordering::Relaxed);
        let other = OTHER.swap(0, Ordering::Relaxed);
        tracing::info!(
            route = super::SCAN_ROUTE,
            redirected,
            limited,
            other,
            "scans since the last scan log line"
        );
    }
}

/// The time limits [`watch`] enforces on a connection.
#[derive(Clone, Copy)]
struct Timeouts {
    idle: Duration,
    /// For each request head, from the accept or the previous answer (`header_read_timeout_secs`).
    head: Duration,
    /// The same, shorter, while the connection is unauthenticated.
    unauthenticated: Duration,
}

impl Timeouts {
    /// How long `conn` may wait for its next request head.
    fn head_for(&self, conn: &Conn) -> Duration {
        if conn.is_authenticated() {
            self.head
        } else {
            self.head.min(self.unauthenticated)
        }
    }
}

/// Drives a connection to its end, or drops it (closing the socket) when admission closes it to
/// make room, when it has been idle for `idle` (no byte moved and no request running), or when it
/// has waited for a request head for `head` (`unauthenticated`, shorter, while unauthenticated)
/// since its accept or its previous answer: bytes trickling in do not extend that.
///
/// One timer per connection, not per request: a request coming and going does not wake this. The
/// timer is set for the nearest limit; while a request runs, for the shortest limit that can apply
/// once it is answered, so it never fires later than a limit that applies: each limit is kept to
/// the moment, and a busy connection is looked at once per such period.
async fn watch(
    served: impl Future<Output = impl Sized>,
    conn: &Conn,
    limits: Timeouts,
    peer: SocketAddr,
) {
    tokio::pin!(served);
    loop {
        let wait = if conn.busy() {
            // Both clocks start again when the answer is done: no later than this.
            limits.idle.min(limits.head_for(conn))
        } else {
            let idle = limits.idle.saturating_sub(conn.idle_for());
            idle.min(limits.head_for(conn).saturating_sub(conn.waiting_for()))
        };
        tokio::select! {
            _ = served.as_mut() => return,
            _ = conn.evicted() => {
                tracing::debug!(peer = %peer, "closing an unauthenticated connection to make room");
                return;
            }
            _ = tokio::time::sleep(wait) => {
                if conn.busy() {
                    continue;
                }
                if conn.idle_for() >= limits.idle {
                    tracing::debug!(peer = %peer, "closing an idle connection");
                    return;
                }
                if conn.waiting_for() >= limits.head_for(conn) {
                    tracing::debug!(peer = %peer, authenticated = conn.is_authenticated(), "closing a connection: no request head in time");
                    return;
                }
            }
        }
    }
}

/// What a request needs before its body may be read.
enum Gate {
    /// No route: the answer (404, 405) needs no body, so none is read.
    NoRoute,
    /// A public route: its body is read within the unauthenticated budget.
    Public,
    /// A credential, checked from the headers first; `spooled`: an upload, streamed to disk.
    Credential { spooled: bool },
}

impl Gate {
    fn of(found: &Match<'_>) -> Gate {
        match found {
            Match::Found(route, _) => {
                if route.action == crate::auth::Action::Public && !route.authenticates_itself {
                    Gate::Public
                } else {
                    Gate::Credential {
                        spooled: route.spooled,
                    }
                }
            }
            _ => Gate::NoRoute,
        }
    }
}

/// The body of a request, or why it was not read: `close` when the connection cannot serve another
/// request (its body was not read to the end).
struct Read {
    body: Result<Bytes, ApiError>,
    /// An upload's body, streamed to a temporary file (`body` is empty then).
    spool: Option<Arc<Spool>>,
    credential: Credential,
    close: bool,
    held: body::Held,
}

impl Read {
    /// The body is not read: `body` stands for it.
    fn unread(body: Result<Bytes, ApiError>, credential: Credential, empty: bool) -> Read {
        Read {
            body,
            spool: None,
            credential,
            close: !empty,
            held: body::Held::default(),
        }
    }
}

/// Checks the credential (when the route needs one) from the headers, then reads the body within
/// the limits of what the request is.
async fn admit_request(
    app: &App,
    conn: &Arc<Conn>,
    peer: SocketAddr,
    parts: &hyper::http::request::Parts,
    body: Incoming,
    gate: Gate,
) -> Read {
    let empty = body.is_end_stream();
    let limits = match gate {
        Gate::NoRoute => return Read::unread(Ok(Bytes::new()), Credential::NotChecked, empty),
        Gate::Public => Limits {
            max_bytes: app.settings.unauthenticated_max_body_bytes,
            timeout: Duration::from_millis(app.settings.unauthenticated_timeout_millis),
        },
        Gate::Credential { spooled } => {
            let verified = crate::auth::authenticate::verify(
                app.db.unscoped(),
                &app.jwt,
                &app.principals,
                &parts.headers,
            );
            match verified {
                Ok(v) => {
                    app.admission.authenticated(conn, &v.principal.account_id);
                    let limits = Limits {
                        max_bytes: app.settings.max_body_bytes,
                        timeout: Duration::from_secs(app.settings.body_read_timeout_secs),
                    };
                    let credential = Credential::Verified(Box::new(v));
                    if spooled && !empty {
                        return spool_body(app, parts, body, limits, credential).await;
                    }
                    return read_body(app, parts, body, empty, limits, credential).await;
                }
                Err(AuthError::Db(e)) => {
                    return Read::unread(Err(ApiError::from(e)), Credential::Refused, false)
                }
                // A refusal past the address's budget is answered 429 at once: not run, not
                // recorded. A valid credential is never refused so, whoever shares the address.
                Err(_) => {
                    if let Some(wait) = app.auth_failures.blocked(peer.ip()) {
                        let refused = ApiError::TooManyFailedAuthentications {
                            retry_after_secs: wait,
                        };
                        return Read::unread(Err(refused), Credential::Refused, false);
                    }
                    app.auth_failures.failed(peer.ip());
                    return Read::unread(Ok(Bytes::new()), Credential::Refused, false);
                }
            }
        }
    };
    read_body(app, parts, body, empty, limits, Credential::NotChecked).await
}

async fn read_body(
    app: &App,
    parts: &hyper::http::request::Parts,
    body: Incoming,
    empty: bool,
    limits: Limits,
    credential: Credential,
) -> Read {
    if empty {
        // No body at all (most GETs): nothing to read, so no read timeout to arm.
        return Read::unread(Ok(Bytes::new()), credential, true);
    }
    let account = match &credential {
        Credential::Verified(v) => Some(v.principal.account_id.as_str()),
        _ => None,
    };
    let (body, held) = body::read(body, declared(parts), limits, &app.bodies, account).await;
    Read {
        close: body.is_err(),
        body,
        spool: None,
        credential,
        held,
    }
}

/// An upload: its body streamed to a temporary file ([`super::spool`]).
async fn spool_body(
    app: &App,
    parts: &hyper::http::request::Parts,
    body: Incoming,
    limits: Limits,
    credential: Credential,
) -> Read {
    let (spooled, held) = spool::spool(body, declared(parts), limits, &app.spools).await;
    let (body, spool) = match spooled {
        Ok(s) => (Ok(Bytes::new()), Some(Arc::new(s))),
        Err(e) => (Err(e), None),
    };
    Read {
        close: body.is_err(),
        body,
        spool,
        credential,
        held,
    }
}

/// The `Content-Length` a request declares, if any.
fn declared(parts: &hyper::http::request::Parts) -> Option<u64> {
    parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

async fn handle(
    app: Arc<App>,
    conn: Arc<Conn>,
    peer: SocketAddr,
    req: hyper::Request<Incoming>,
) -> Result<hyper::Response<Body>, Dropped> {
    let started = Instant::now();
    // Request ids label log lines and problems; they are not secrets, so they come from the
    // per-thread generator (no system call per request). A seeded sandbox numbers its requests
    // instead: the same request sequence gives the same ids, and no seeded stream moves.
    let request_id = match app.seeded() {
        Some(seeded) => format!("req_{:024x}", seeded.next_request()),
        None => {
            let mut id = String::with_capacity(28);
            id.push_str("req_");
            crate::random::nonsecret::push_hex::<12>(&mut id);
            id
        }
    };
    let (parts, body) = req.into_parts();
    let method = parts.method.clone();
    // Hyper drops this future when the client closes the connection while the request runs
    // (it reads the end of the stream mid-request): the guard notes the hangup then.
    let hangup = super::request::Hangup::watched();
    let mut unanswered = Unanswered(Some(hangup.clone()));
    let path = parts.uri.path().to_string();
    let (exec, pattern, found) = pipeline::route_info(&app, &method, &path);

    let gate = Gate::of(&found);
    // A page of another site, or a rebound DNS name, gets nothing run and no body read
    // ([`super::site`]). `/mcp` answers the same refusal in JSON-RPC's shape itself.
    let foreign = match &found {
        Match::Found(route, _) if route.authenticates_itself => Ok(()),
        _ => super::site::check(&app.settings, &parts.headers, &[]),
    };
    let read = match foreign {
        Ok(()) => admit_request(&app, &conn, peer, &parts, body, gate).await,
        Err(refusal) => Read::unread(
            Err(ApiError::from(refusal)),
            Credential::NotChecked,
            body.is_end_stream(),
        ),
    };
    let close = read.close;
    // The request id moves into the request and back out of it: one string a request.
    let (resp, holds, request_id) = match read.body {
        Err(err) => (err.into_response(&request_id), Vec::new(), request_id),
        Ok(body) => {
            let request = Request {
                method: method.clone(),
                path,
                query: parts.uri.query().unwrap_or("").to_string(),
                headers: parts.headers,
                body,
                peer: Some(peer.ip()),
                request_id,
                credential: read.credential,
                spool: read.spool,
                dry_run: false,
                later_ms: 0,
                expected_balance: None,
                hangup: hangup.clone(),
            };
            // A running handler keeps its connection from being closed to make room.
            let _running = Running::enter(&conn);
            // The delay holds the request takes ([`super::delay_holds`]) are kept until its
            // answer has been held back, and released however this future ends.
            match exec {
                Exec::Inline => {
                    let exchange = Exchange::default();
                    let resp = pipeline::execute_matched(&app, &request, found, &exchange);
                    (resp, exchange.into_holds(), request.request_id)
                }
                Exec::Blocking => {
                    let app = app.clone();
                    let rid = request.request_id.clone();
                    tokio::task::spawn_blocking(move || {
                        let exchange = Exchange::default();
                        let resp = pipeline::execute(&app, &request, &exchange);
                        (resp, exchange.into_holds(), request.request_id)
                    })
                    .await
                    .unwrap_or_else(|_| {
                        let resp =
                            ApiError::Internal("handler panicked".into()).into_response(&rid);
                        (resp, Vec::new(), rid)
                    })
                }
            }
        }
    };
    // The body's share of the memory budget is given back once the handler is done with it.
    drop(read.held);
    let mut resp = resp;
    if close {
        resp.set_header("connection", "close");
    }

    // An injected fault ([`super::faults`]): wait here, in async code, so no worker thread is
    // held; a drop closes the connection without an answer (hyper does so when the service fails).
    let delivery = resp.delivery.clone();
    if delivery.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(delivery.delay_ms)).await;
    }
    drop(holds);
    if delivery.drop {
        unanswered.0 = None;
        tracing::info!(request_id = %request_id, method = %method, route = pattern, "request: connection dropped by an injected fault");
        return Err(Dropped);
    }

    let status = resp.status.as_u16();
    let micros = started.elapsed().as_micros() as u64;
    // A healthy answer to a health probe is logged at debug: probes arrive every few seconds
    // from orchestrators and test harnesses and would drown the access log. An unhealthy one
    // (503) is logged like any request.
    if pattern == HEALTH_ROUTE && resp.status.is_success() {
        tracing::debug!(request_id = %request_id, method = %method, route = pattern, status, micros, "request");
    } else if pattern == SCAN_ROUTE {
        // Public scans are logged as a count every few seconds: a flood of them must not grow
        // the log by a line each.
        tracing::debug!(request_id = %request_id, method = %method, route = pattern, status, micros, "request");
        scan_log::count(status);
    } else {
        tracing::info!(request_id = %request_id, method = %method, route = pattern, status, micros, "request");
    }
    unanswered.0 = None;
    // A change's answer is looked at once more as it goes out: an inline handler runs inside
    // this future's poll, so a client that hung up meanwhile is seen only in the socket. Reads,
    // most of the traffic, are spared the system call: a read repeated does no harm.
    if method != hyper::Method::GET && method != hyper::Method::HEAD {
        conn.answer_unwritten(hangup);
    }
    let mut out = into_hyper(resp, request_id);
    // The sandbox's time, when it is not the system's (frozen, or a running clock moved ahead).
    if app.clock().mode() == crate::time::Mode::Frozen || app.clock().offset_millis() != 0 {
        let date = crate::time::http_date(app.clock().now());
        if let Ok(v) = hyper::header::HeaderValue::from_str(&date) {
            out.headers_mut().insert(hyper::header::DATE, v);
        }
    }
    Ok(out)
}

/// Notes its hangup when dropped still holding it: the request's future ended before its answer
/// was handed to hyper, because the client closed the connection.
struct Unanswered(Option<super::request::Hangup>);

impl Drop for Unanswered {
    fn drop(&mut self) {
        if let Some(hangup) = self.0.take() {
            hangup.note();
        }
    }
}

/// The service's one failure: an injected `drop` fault, which makes hyper close the connection
/// without writing a response.
#[derive(Debug)]
pub struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped by an injected fault")
    }
}

impl std::error::Error for Dropped {}

/// A response body: bytes at once, or a stream written as it arrives ([`super::stream`]).
type Body = Either<Full<Bytes>, super::stream::ChannelBody>;

/// A body handed to hyper, with the mark that its answer is still being written: the
/// connection's wait for its next request head begins when hyper drops it ([`watch`]).
struct Answered {
    body: Body,
    /// Held for its drop.
    _answering: super::admission::Answering,
}

impl hyper::body::Body for Answered {
    type Data = Bytes;
    type Error = <Body as hyper::body::Body>::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

fn into_hyper(resp: Response, request_id: String) -> hyper::Response<Body> {
    let body = match resp.delivery.stream.as_ref().and_then(|s| s.take()) {
        Some(stream) => Either::Right(stream),
        None => Either::Left(Full::new(resp.body)),
    };
    let mut out = hyper::Response::new(body);
    *out.status_mut() = resp.status;
    *out.headers_mut() = resp.headers;
    super::response::secure_headers(out.headers_mut());
    // A constant: the name is not parsed again for every answer.
    const REQUEST_ID: hyper::header::HeaderName =
        hyper::header::HeaderName::from_static("request-id");
    // The id's own bytes become the header's value (checked, not copied).
    if let Ok(v) = hyper::header::HeaderValue::from_maybe_shared(Bytes::from(request_id)) {
        out.headers_mut().insert(REQUEST_ID, v);
    }
    out
}

/// A socket that records when bytes move through it.
struct Tracked {
    inner: TcpStream,
    conn: Arc<Conn>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.conn.touch();
        }
        r
    }
}

impl Tracked {
    /// Before an answer's first bytes go out: has the client closed its side already (a timeout,
    /// while an inline handler ran)? The end of the stream is in the socket, unread, and the
    /// answer will never be read, whatever the write returns.
    fn look_for_hangup(&self) {
        let Some(hangup) = self.conn.take_unwritten() else {
            return;
        };
        // A non-blocking peek, straight to the socket: tokio's cached readiness may not show an
        // end of stream that arrived while this worker ran the handler.
        let mut byte = [std::mem::MaybeUninit::<u8>::uninit()];
        let peeked = socket2::SockRef::from(&self.inner).peek(&mut byte);
        match peeked {
            Ok(0) => hangup.note(),
            Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => hangup.note(),
            _ => {}
        }
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.look_for_hangup();
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.conn.touch();
        }
        r
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.look_for_hangup();
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.conn.touch();
        }
        r
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
