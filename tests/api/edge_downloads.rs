//! Issue 31 item 2 (memory), the other way: `GET /media/{id}/content` sends a large file as the
//! client reads it, in chunks read from the database, never whole in memory. Over HTTP it arrives
//! whole, byte for byte, under its stated Content-Length; an MCP read gets it whole too; and a
//! download cut short (its media deleted while a slow client reads) ends early, never with other
//! bytes.

use crate::helpers::mcp::rpc;
use crate::helpers::*;
use base64::Engine;
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A PNG of `size` bytes whose filler differs from byte to byte (a chunk out of place shows).
fn png(size: usize) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    out.extend_from_slice(&64u32.to_be_bytes());
    out.extend_from_slice(&48u32.to_be_bytes());
    out.extend_from_slice(b"\x08\x06\x00\x00\x00");
    let start = out.len();
    out.extend((start..size).map(|i| (i % 251) as u8));
    out
}

async fn upload(app: &TestApp, file: &[u8]) -> String {
    let r = app
        .post(&format!(
            "/media?company_id={}&filename=big.png",
            company_id("Northwind Grocers")
        ))
        .key("northwind-readwrite")
        .raw("image/png", file.to_vec())
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_large_download_arrives_whole_over_http_and_over_mcp() {
    let app = TestApp::spawn().await;
    // Past the chunks queued at once, so most of it is read after the handler returned.
    let file = png(3 * 1024 * 1024 + 12_345);
    let id = upload(&app, &file).await;
    let r = app
        .get(&format!("/media/{id}/content"))
        .key("northwind-readonly")
        .send()
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-length"),
        Some(file.len().to_string().as_str())
    );
    assert_eq!(r.header("content-type"), Some("image/png"));
    assert!(r.body.to_vec() == file, "{} bytes", r.body.len());
    // Its ETag still answers 304 without the bytes.
    let etag = r.header("etag").unwrap().to_string();
    let again = app
        .get(&format!("/media/{id}/content"))
        .key("northwind-readonly")
        .header("if-none-match", &etag)
        .send()
        .await;
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    // An MCP read gets the same bytes, whole.
    let read = rpc(
        &app,
        "northwind-readwrite",
        "resources/read",
        json!({"uri": format!("signage://media/{id}/content")}),
    )
    .await;
    let blob = base64::engine::general_purpose::STANDARD
        .decode(read["contents"][0]["blob"].as_str().unwrap())
        .unwrap();
    assert!(blob == file, "{} bytes over MCP", blob.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_cut_short_by_a_delete_ends_early_and_never_sends_other_bytes() {
    let app = TestApp::spawn().await;
    let id = upload(&app, &png(64 * 1024)).await;
    // A file larger than everything between the database and a client that has stopped reading
    // (the server's queue, hyper's buffer, loopback's send buffer of up to 4 MiB and the client's
    // receive buffer): at the upload limit (5 MiB) all of it can already be on its way when the
    // delete lands. Stored directly, as a file kept from before the limit would be.
    let file = png(24 * 1024 * 1024);
    app.sql(|c| {
        c.execute(
            "UPDATE media SET content = ?1, size_bytes = ?2 WHERE id = ?3",
            rusqlite::params![file, file.len() as i64, id],
        )
    });
    let k = key("northwind-readonly");
    // A slow client: a small receive window, and it reads the head and a little of the body.
    let addr: std::net::SocketAddr = app.base_url.trim_start_matches("http://").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(16 * 1024).unwrap();
    let mut s = socket.connect(addr).await.unwrap();
    let head = format!(
        "GET /media/{id}/content HTTP/1.1\r\nHost: localhost\r\nX-API-Key: {}\r\nX-Service-Client-Id: {}\r\nConnection: close\r\n\r\n",
        k.raw, k.client_id
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let mut got = vec![0u8; 64 * 1024];
    s.read_exact(&mut got).await.unwrap();
    let text = String::from_utf8_lossy(&got[..200]).to_string();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.to_ascii_lowercase()
            .contains(&format!("content-length: {}", file.len())),
        "{text}"
    );
    // The media goes away while the client still reads (no ad uses it).
    let r = app
        .delete(&format!("/media/{id}"))
        .key("northwind-readwrite")
        .send()
        .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut rest))
        .await
        .expect("the connection is closed")
        .ok();
    got.extend_from_slice(&rest);
    let body_at = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let body = &got[body_at..];
    assert!(
        body.len() < file.len(),
        "a deleted file is not sent whole after its delete ({} bytes)",
        body.len()
    );
    assert!(
        body == &file[..body.len()],
        "a prefix of the file, nothing else"
    );
}
