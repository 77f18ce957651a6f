//! The hyper server: accept loop with a connection limit, header-read timeout, body size limit,
//! request ids, access logs, and graceful shutdown.

use super::error::ApiError;
use super::pipeline::{self, Request};
use super::response::Response;
use super::router::Exec;
use crate::app::App;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
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
        let service = service_fn(move |req| handle(app.clone(), peer, req));
        let conn = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(header_timeout)
            .keep_alive(true)
            .serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
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

async fn handle(
    app: Arc<App>,
    peer: SocketAddr,
    req: hyper::Request<Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let started = Instant::now();
    let request_id = format!("req_{}", crate::random::hex::<12>());
    let (parts, body) = req.into_parts();
    let method = parts.method.clone();
    let path = parts.uri.path().to_string();
    let (exec, pattern) = pipeline::route_info(&app, &method, &path);

    let limit = app.settings.max_body_bytes;
    let declared = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let body = if declared.is_some_and(|n| n > limit as u64) {
        Err(ApiError::PayloadTooLarge { limit })
    } else {
        match Limited::new(body, limit).collect().await {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(err) if err.is::<http_body_util::LengthLimitError>() => {
                Err(ApiError::PayloadTooLarge { limit })
            }
            Err(_) => Err(ApiError::BadRequest(
                "The request body could not be read.".into(),
            )),
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
                Exec::Inline => pipeline::execute(&app, &request),
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

    tracing::info!(
        request_id = %request_id,
        method = %method,
        route = pattern,
        status = resp.status.as_u16(),
        micros = started.elapsed().as_micros() as u64,
        "request"
    );
    Ok(into_hyper(resp, &request_id))
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
