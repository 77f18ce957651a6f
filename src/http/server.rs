//! The hyper server: accept loop with a connection limit, header-read, body-read and idle
//! timeouts, body size limit, request ids, access logs, and graceful shutdown.
//!
//! The three timeouts, so that no client can hold a connection slot for long without making
//! progress:
//! - headers: hyper's `header_read_timeout`, which runs from the moment a connection waits for a
//!   request head (a new connection, or a keep-alive connection after its previous response) until
//!   the head is complete;
//! - body: the whole body must arrive within `body_read_timeout_secs` of the head, else 408 and the
//!   connection is closed;
//! - idle: a connection with no byte read or written and no request running for
//!   `idle_timeout_secs` is closed (a silent keep-alive connection, or one whose client stopped
//!   reading its response).

use super::error::ApiError;
use super::pipeline::{self, Request};
use super::response::Response;
use super::router::Exec;
use super::state::App;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body as _, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// How long in-flight requests get to finish after a shutdown signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

pub async fn serve(
    app: Arc<App>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(app.settings.max_connections));
    let graceful = GracefulShutdown::new();
    let header_timeout = Duration::from_secs(app.settings.header_read_timeout_secs);
    let idle_timeout = Duration::from_secs(app.settings.idle_timeout_secs);
    let frozen = app.clock.mode() == crate::time::Mode::Frozen;
    tokio::pin!(shutdown);
    loop {
        // Take a connection slot before accepting: past the limit, new connections wait in the
        // kernel's backlog instead of being served.
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            _ = &mut shutdown => break,
        };
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
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let activity = Arc::new(Activity::new());
        let io = TokioIo::new(Tracked {
            inner: stream,
            activity: activity.clone(),
        });
        let busy = activity.clone();
        let service = service_fn(move |req| {
            let guard = Busy::enter(&busy);
            let fut = handle(app.clone(), peer, req);
            async move {
                let resp = fut.await;
                drop(guard);
                resp
            }
        });
        let conn = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(header_timeout)
            .keep_alive(true)
            // A frozen sandbox dates its answers by its own clock (`into_hyper`), not the wall's.
            .auto_date_header(!frozen)
            .serve_connection(io, service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            watch_idle(conn, &activity, idle_timeout, peer).await;
            // The connection is closed (or dropped) before its slot is given back.
            drop(permit);
        });
    }
    drop(listener);
    tracing::info!("shutting down: waiting for in-flight requests");
    tokio::select! {
        _ = graceful.shutdown() => tracing::info!("all connections closed"),
        _ = tokio::time::sleep(SHUTDOWN_GRACE) => tracing::warn!("shutdown grace period elapsed"),
    }
    Ok(())
}

/// The route whose healthy answers are logged at debug, not info.
const HEALTH_ROUTE: &str = "/health";

/// Drives a connection to its end, or drops it (closing the socket) once it has been idle for
/// `idle`: no byte moved and no request running.
async fn watch_idle(
    conn: impl Future<Output = impl Sized>,
    activity: &Activity,
    idle: Duration,
    peer: SocketAddr,
) {
    tokio::pin!(conn);
    loop {
        // Busy: look again after a whole idle period; else when the silence would reach it.
        let wait = if activity.busy() {
            idle
        } else {
            idle.saturating_sub(activity.idle_for())
        };
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = tokio::time::sleep(wait) => {
                if !activity.busy() && activity.idle_for() >= idle {
                    tracing::debug!(peer = %peer, "closing an idle connection");
                    return;
                }
            }
        }
    }
}

async fn handle(
    app: Arc<App>,
    peer: SocketAddr,
    req: hyper::Request<Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, Dropped> {
    let started = Instant::now();
    // Request ids label log lines and problems; they are not secrets, so they come from the
    // per-thread generator (no system call per request), or the app's seeded one.
    let request_id = app.within(|| format!("req_{}", crate::random::nonsecret::hex::<12>()));
    let (parts, body) = req.into_parts();
    let method = parts.method.clone();
    let path = parts.uri.path().to_string();
    let (exec, pattern, found) = pipeline::route_info(&app, &method, &path);

    let limit = app.settings.max_body_bytes;
    let declared = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let body_secs = app.settings.body_read_timeout_secs;
    let body = if declared.is_some_and(|n| n > limit as u64) {
        Err(ApiError::PayloadTooLarge { limit })
    } else if body.is_end_stream() {
        // No body at all (most GETs): nothing to read, so no read timeout to arm.
        Ok(Bytes::new())
    } else {
        let read = read_body(body, limit, declared);
        match tokio::time::timeout(Duration::from_secs(body_secs), read).await {
            Err(_) => Err(ApiError::RequestTimeout { secs: body_secs }),
            Ok(result) => result,
        }
    };

    let resp = match body {
        Err(err) => err.into_response(&request_id),
        Ok(body) => {
            let request = Request {
                method: method.clone(),
                path: path.clone(),
                query: parts.uri.query().unwrap_or("").to_string(),
                headers: parts.headers,
                body,
                peer: Some(peer.ip()),
                request_id: request_id.clone(),
            };
            match exec {
                Exec::Inline => pipeline::execute_matched(&app, &request, found),
                Exec::Blocking => {
                    let app = app.clone();
                    let rid = request_id.clone();
                    tokio::task::spawn_blocking(move || pipeline::execute(&app, &request))
                        .await
                        .unwrap_or_else(|_| {
                            ApiError::Internal("handler panicked".into()).into_response(&rid)
                        })
                }
            }
        }
    };

    // An injected fault ([`super::faults`]): wait here, in async code, so no worker thread is
    // held; a drop closes the connection without an answer (hyper does so when the service fails).
    let delivery = resp.delivery;
    if delivery.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(delivery.delay_ms)).await;
    }
    if delivery.drop {
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
    } else {
        tracing::info!(request_id = %request_id, method = %method, route = pattern, status, micros, "request");
    }
    let mut out = into_hyper(resp, &request_id);
    // The sandbox's time, when it is not the system's (frozen, or a running clock moved ahead).
    if app.clock.mode() == crate::time::Mode::Frozen || app.clock.offset_millis() != 0 {
        let date = crate::time::http_date(app.clock.now());
        if let Ok(v) = hyper::header::HeaderValue::from_str(&date) {
            out.headers_mut().insert(hyper::header::DATE, v);
        }
    }
    Ok(out)
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

/// Reads a whole body into one buffer, at most `limit` bytes. The buffer is the only copy: chunks
/// are appended as they arrive (a large buffer grows in place), so a body costs its size once.
async fn read_body(
    mut body: Incoming,
    limit: usize,
    declared: Option<u64>,
) -> Result<Bytes, ApiError> {
    // A declared length is only a hint: a client may promise much and send little.
    let mut buf = Vec::with_capacity(declared.unwrap_or(0).min(64 * 1024) as usize);
    while let Some(frame) = body.frame().await {
        let frame = frame
            .map_err(|_| ApiError::BadRequest("The request body could not be read.".into()))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > limit {
                return Err(ApiError::PayloadTooLarge { limit });
            }
            if buf.is_empty() && declared == Some(data.len() as u64) {
                return Ok(data);
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(buf))
}

fn into_hyper(resp: Response, request_id: &str) -> hyper::Response<Full<Bytes>> {
    let mut out = hyper::Response::new(Full::new(resp.body));
    *out.status_mut() = resp.status;
    *out.headers_mut() = resp.headers;
    if let Ok(v) = hyper::header::HeaderValue::from_str(request_id) {
        out.headers_mut().insert("request-id", v);
    }
    out
}

/// What the idle timeout watches on one connection: when a byte last moved, and whether a request
/// is being served.
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
    in_flight: AtomicUsize,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
        }
    }
    fn touch(&self) {
        let ms = self.start.elapsed().as_millis() as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }
    fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }
    fn busy(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) > 0
    }
}

/// Marks a request as being served for as long as it lives.
struct Busy(Arc<Activity>);

impl Busy {
    fn enter(activity: &Arc<Activity>) -> Busy {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        Busy(activity.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

/// A socket that records when bytes move through it.
struct Tracked {
    inner: TcpStream,
    activity: Arc<Activity>,
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
            self.activity.touch();
        }
        r
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
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
