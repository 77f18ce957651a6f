//! The benchmark's ceiling: a bare hyper server that answers every request with a small JSON body,
//! built from the same hyper, hyper-util and tokio versions as signage and set up like its server
//! (`src/http/server.rs`, `src/cli.rs`): one multi-thread tokio runtime with default settings,
//! HTTP/1.1 with keep-alive, `TCP_NODELAY`, a header-read timeout on a tokio timer. No router, no
//! database, no logging: what is left is what any hyper server pays per request, so signage's figures
//! divided by these show what signage itself adds.
//!
//! ```text
//! cargo run --release --example hello -- --port 8099
//! ```
//!
//! The first stdout line is `hello listening on http://127.0.0.1:PORT`, like signage's.

use argh::FromArgs;
use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::io::Write;
use std::time::Duration;
use tokio::net::TcpListener;

#[derive(FromArgs)]
/// A bare hyper server: every request gets 200 and {"ok":true}.
struct Args {
    /// port on 127.0.0.1 (0: any free port)
    #[argh(option, default = "0")]
    port: u16,
}

/// The same body size class as `GET /health` (`{"ok":true,"backendAuthMode":"passthrough"}`).
const BODY: &[u8] = br#"{"ok":true,"backendAuthMode":"passthrough"}"#;

async fn hello(
    _req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let mut resp = hyper::Response::new(Full::new(Bytes::from_static(BODY)));
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Args = argh::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(("127.0.0.1", args.port)).await?;
        println!("hello listening on http://{}", listener.local_addr()?);
        std::io::stdout().flush()?;
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(pair) => pair,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let _ = http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(Duration::from_secs(10))
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(stream), service_fn(hello))
                    .await;
            });
        }
    })
}
