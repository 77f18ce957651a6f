//! Webhook delivery benchmark (issue 11's targets): deliveries per second to a local receiver that
//! answers 200 at once, and the delay from a write's commit to the receiver's arrival (p50, p99),
//! on the system clock.
//!
//!     cargo run --release --example webhooks -- [EVENTS] [PARALLEL_WRITERS] [RATE]
//!
//! RATE (events per second over all writers, default 0 = as fast as they can) paces the writers:
//! unpaced, the writers outrun delivery and the delay measures the backlog; paced below the
//! delivery rate, it measures the pipeline (commit, wake-up, claim, connect, send).
//!
//! In-process: the real server (`startup::Server`, `:memory:` database), one webhook to a hyper
//! receiver on 127.0.0.1, and writers that each commit one event per transaction the way every
//! route does (`events::record` inside `db.write`). Prints one JSON line.

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use signage::config::{Layer, Settings};
use signage::startup::Server;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Arrivals = Arc<Mutex<HashMap<String, Instant>>>;

async fn receiver(arrivals: Arrivals) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let arrivals = Arc::clone(&arrivals);
            tokio::spawn(async move {
                let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let at = Instant::now();
                    let id = req
                        .headers()
                        .get("webhook-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_string();
                    arrivals.lock().unwrap().entry(id).or_insert(at);
                    async { Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::new()))) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    port
}

#[tokio::main]
async fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let events = args.first().copied().unwrap_or(5000);
    let writers = args.get(1).copied().unwrap_or(4).max(1);
    let rate = args.get(2).copied().unwrap_or(0);
    let gap = (rate > 0).then(|| Duration::from_secs_f64(writers as f64 / rate as f64));
    let arrivals: Arrivals = Arc::default();
    let port = receiver(Arc::clone(&arrivals)).await;
    let settings = Settings::resolve(&[Layer {
        port: Some(0),
        database: Some(":memory:".into()),
        sandbox_simulate_fleet: Some(false),
        ..Layer::default()
    }])
    .unwrap();
    let server = Server::build(settings).await.unwrap();
    let app = Arc::clone(&server.app);
    tokio::spawn(server.run_until(std::future::pending()));
    let company: String = app
        .db
        .conn()
        .unwrap()
        .query_row("SELECT id FROM companies ORDER BY id LIMIT 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    // Only the benchmark's webhook: the fixtures' point at hosts that do not resolve.
    app.db.write(&signage::db::WriteIntent::sandbox(), |tx| {
        tx.execute("UPDATE webhooks SET enabled = 0", [])?;
        tx.execute(
            "INSERT INTO webhooks (id, company_id, url, description, event_types, enabled, secret, created_at, updated_at)
             VALUES ('wh_bench', ?1, ?2, 'bench', '[\"ad.updated\"]', 1, 'whsec_0123456789abcdefghijABCDEFGHIJ01', 0, 0)",
            rusqlite::params![company, format!("http://127.0.0.1:{port}/bench")],
        )?;
        Ok::<_, signage::db::DbError>(())
    })
    .unwrap();

    let commits: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let app = Arc::clone(&app);
        let commits = Arc::clone(&commits);
        let company = company.clone();
        let n = events / writers + usize::from(w < events % writers);
        tasks.push(tokio::task::spawn_blocking(move || {
            let begun = Instant::now();
            for i in 0..n {
                if let Some(gap) = gap {
                    let due = begun + gap * i as u32;
                    std::thread::sleep(due.saturating_duration_since(Instant::now()));
                }
                let payload = serde_json::json!({"id": format!("ad_bench{w}x{i}"), "object": "ad"});
                let id = app
                    .db
                    .write(&signage::db::WriteIntent::sandbox(), |tx| {
                        signage::events::record(
                            tx,
                            &company,
                            "ad.updated",
                            "ad",
                            "ad_bench",
                            &payload,
                        )
                        .map_err(signage::db::DbError::from)
                    })
                    .unwrap();
                commits.lock().unwrap().insert(id, Instant::now());
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let written = started.elapsed();
    let deadline = Instant::now() + Duration::from_secs(120);
    while arrivals.lock().unwrap().len() < events && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = started.elapsed();
    let arrivals = arrivals.lock().unwrap();
    let commits = commits.lock().unwrap();
    let mut delays: Vec<f64> = commits
        .iter()
        .filter_map(|(id, c)| {
            arrivals
                .get(id)
                .map(|a| a.saturating_duration_since(*c).as_secs_f64() * 1000.0)
        })
        .collect();
    delays.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        delays
            .get(((delays.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    println!(
        "{}",
        serde_json::json!({
            "events": events,
            "writers": writers,
            "rate": rate,
            "delivered": arrivals.len(),
            "write_secs": written.as_secs_f64(),
            "deliveries_per_sec": arrivals.len() as f64 / elapsed.as_secs_f64(),
            "commit_to_arrival_ms": {"p50": pct(0.5), "p99": pct(0.99), "max": pct(1.0)},
        })
    );
}
