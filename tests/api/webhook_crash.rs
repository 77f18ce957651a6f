//! Tests: the server killed (SIGKILL) between an event and its delivery. The real binary runs on a
//! database file; the receiver holds the first attempt open, the server is killed while it waits,
//! and after a restart the delivery still arrives: exactly once at a receiver that deduplicates by
//! `webhook-id`, and the delivery log shows it succeeded.

use crate::helpers::{company_id, key};
use crate::webhook_receiver::{Receiver, HANG};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};

struct Server {
    child: Child,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the binary on `db` and reads the URL it prints.
async fn start(db: &str) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_signage"))
        .args([
            "serve",
            "--port",
            "0",
            "--database",
            db,
            "--log-level",
            "warn",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start signage");
    let stdout = child.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap();
        line
    })
    .await
    .unwrap();
    let base = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .trim_end_matches('/')
        .to_string();
    Server { child, base }
}

async fn call(server: &Server, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let k = key("northwind-admin");
    let client = Client::builder(TokioExecutor::new()).build_http();
    let mut req = hyper::Request::builder()
        .method(method)
        .uri(format!("{}{path}", server.base))
        .header("x-api-key", &k.raw)
        .header("x-service-client-id", &k.client_id);
    let bytes = match body {
        Some(b) => {
            req = req.header("content-type", "application/json");
            Bytes::from(b.to_string())
        }
        None => Bytes::new(),
    };
    let resp = client
        .request(req.body(Full::new(bytes)).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_delivery_interrupted_by_a_kill_arrives_once_after_restart() {
    let dir = std::env::temp_dir().join(format!(
        "signage-webhook-crash-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("signage.db").to_string_lossy().into_owned();
    let rx = Receiver::start().await;
    rx.answer(&[HANG]);

    let server = start(&db).await;
    let grocers = company_id("Northwind Grocers");
    let (status, hook) = call(
        &server,
        "POST",
        "/webhooks",
        Some(
            json!({"company_id": grocers, "url": rx.url("/crash"), "event_types": ["ad.updated"]}),
        ),
    )
    .await;
    assert_eq!(status, 201, "{hook}");
    let hook = hook["id"].as_str().unwrap().to_string();
    let (_, ads) = call(
        &server,
        "GET",
        &format!("/ads?company_id={grocers}&limit=1"),
        None,
    )
    .await;
    let ad = ads["data"][0]["id"].as_str().unwrap().to_string();
    let (status, _) = call(
        &server,
        "PATCH",
        &format!("/ads/{ad}"),
        Some(json!({"headline": "Before the crash"})),
    )
    .await;
    assert_eq!(status, 200);
    // The attempt is on the wire, held open by the receiver: kill the server now.
    let first = rx.wait_for(1).await;
    let id = first[0].header("webhook-id").to_string();
    drop(server);

    // Restarted on the same file, the server sends the interrupted attempt again.
    let server = start(&db).await;
    let got = rx.wait_for(2).await;
    assert_eq!(got[1].header("webhook-id"), id);
    assert_eq!(got[1].body, first[0].body);
    // A second event as a marker: once it arrived, nothing more of the first will.
    let (status, _) = call(
        &server,
        "PATCH",
        &format!("/ads/{ad}"),
        Some(json!({"headline": "After"})),
    )
    .await;
    assert_eq!(status, 200);
    let got = rx.wait_for(3).await;
    let ids: Vec<&str> = got.iter().map(|r| r.header("webhook-id")).collect();
    assert_eq!(ids.iter().filter(|i| **i == id).count(), 2, "{ids:?}");
    // A receiver deduplicating by webhook-id processed each event once.
    let processed: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(processed.len(), 2);

    let (status, log) = call(
        &server,
        "GET",
        &format!("/webhooks/{hook}/deliveries"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let rows = log["data"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{log}");
    let crashed = rows.iter().find(|d| d["event_id"] == id.as_str()).unwrap();
    assert_eq!(crashed["status"], "succeeded");
    // The interrupted attempt was never recorded; the one after restart was.
    assert_eq!(crashed["attempt_count"], 1);
    assert_eq!(crashed["attempts"][0]["http_status"], 200);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
