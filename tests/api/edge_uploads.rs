//! Issue 31 item 2 (memory): uploads are streamed to their destination. `POST /media` writes its
//! body to a temporary file of the server's own (never whole in memory), readable by the server's
//! user only and removed however the request ends; the file goes into the database in chunks; the
//! upload keeps every property of an in-memory one (idempotent replays by content, the journal's
//! size of what was sent).

use crate::helpers::*;
use serde_json::Value;
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A PNG of `size` bytes: a valid signature and IHDR, then filler.
fn png(size: usize, fill: u8) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    out.extend_from_slice(&64u32.to_be_bytes());
    out.extend_from_slice(&48u32.to_be_bytes());
    out.extend_from_slice(b"\x08\x06\x00\x00\x00");
    out.resize(size, fill);
    out
}

fn url() -> String {
    format!(
        "/media?company_id={}&filename=big.png",
        company_id("Northwind Grocers")
    )
}

fn spools() -> HashSet<PathBuf> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("signage-upload-"))
        })
        .collect()
}

/// Spool files that appeared since `before` and hold `marker` right after the PNG header.
fn ours(before: &HashSet<PathBuf>, marker: u8) -> Vec<PathBuf> {
    spools()
        .difference(before)
        .filter(|p| std::fs::read(p).is_ok_and(|b| b.len() > 40 && b[40] == marker))
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_goes_to_a_private_temporary_file_removed_however_the_request_ends() {
    let app = TestApp::spawn().await;
    let k = key("northwind-readwrite");
    let addr = app.base_url.trim_start_matches("http://").to_string();
    for finish in [true, false] {
        let marker = if finish { 0xA7 } else { 0xB3 };
        let file = png(2 * 1024 * 1024, marker);
        let before = spools();
        let mut s = TcpStream::connect(&addr).await.unwrap();
        let head = format!(
            "POST {} HTTP/1.1\r\nHost: localhost\r\nX-API-Key: {}\r\nX-Service-Client-Id: {}\r\nContent-Type: image/png\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            url(),
            k.raw,
            k.client_id,
            file.len()
        );
        s.write_all(head.as_bytes()).await.unwrap();
        let half = file.len() / 2;
        s.write_all(&file[..half]).await.unwrap();
        // Half of it has arrived: it is on disk, not in a buffer, and only the server may read it.
        let mut found = Vec::new();
        for _ in 0..100 {
            found = ours(&before, marker);
            if found
                .first()
                .and_then(|p| std::fs::metadata(p).ok())
                .is_some_and(|m| m.len() as usize >= half)
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(found.len(), 1, "the half-sent upload is spooled");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&found[0]).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        }
        if finish {
            s.write_all(&file[half..]).await.unwrap();
            let mut out = Vec::new();
            s.read_to_end(&mut out).await.unwrap();
            let text = String::from_utf8_lossy(&out);
            assert!(text.starts_with("HTTP/1.1 201"), "{text}");
            // The stored bytes are the file, byte for byte.
            let stored: Vec<u8> = app.sql(|c| {
                c.query_row(
                    "SELECT content FROM media ORDER BY created_at DESC, id DESC LIMIT 1",
                    [],
                    |r| r.get(0),
                )
            });
            assert!(stored == file, "stored {} bytes", stored.len());
        } else {
            // The client gives up halfway.
            drop(s);
        }
        let mut gone = false;
        for _ in 0..100 {
            if !found[0].exists() {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(gone, "the spool file is removed (finished: {finish})");
    }
}

#[tokio::test]
async fn a_streamed_upload_replays_by_its_content_and_is_journaled_at_its_size() {
    let app = TestApp::spawn().await;
    let file = png(300_000, 7);
    let send = |body: Vec<u8>| {
        app.post(&url())
            .key("northwind-readwrite")
            .header("idempotency-key", "upload-once-0001")
            .raw("image/png", body)
            .send()
    };
    let first = send(file.clone()).await;
    assert_eq!(first.status, 201, "{}", first.text());
    let again = send(file.clone()).await;
    assert_eq!(again.status, 201);
    assert_eq!(again.json()["id"], first.json()["id"], "replayed");
    // The same key with other bytes is another request.
    let other = send(png(300_000, 8)).await;
    assert_eq!(
        other.problem(409)["type"],
        "/problems/idempotency-key-reused"
    );
    let r = app
        .get("/requests?limit=10&operation_id=uploadMedia")
        .key("northwind-admin")
        .send()
        .await
        .ok();
    let entries: Vec<Value> = r["data"].as_array().unwrap().clone();
    assert!(!entries.is_empty(), "{r}");
    for e in &entries {
        assert_eq!(e["body_bytes"], 300_000, "{e}");
    }
}
