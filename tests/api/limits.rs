//! Tests: limits. What keeps one client from taking the server: per-credential rate limits (REST
//! and MCP tool calls share a bucket), MCP batch and reply caps (with the memory of the real binary
//! measured), and the body-read and idle timeouts.

use crate::helpers::mcp::{post, request};
use crate::helpers::*;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The parameters of the one item of a `RateLimit`/`RateLimit-Policy` field
/// (`"default";r=2;t=100`), after checking the policy name.
fn sf_item(value: Option<&str>) -> Vec<(String, u64)> {
    let value = value.expect("RateLimit field present");
    let mut parts = value.split(';');
    assert_eq!(parts.next(), Some("\"default\""), "{value}");
    parts
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or_else(|| panic!("{value}"));
            (
                k.to_string(),
                v.parse().unwrap_or_else(|_| panic!("{value}")),
            )
        })
        .collect()
}

fn param(item: &[(String, u64)], name: &str) -> u64 {
    item.iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no {name} in {item:?}"))
        .1
}

/// Remaining tokens as the response's `RateLimit` field says.
fn remaining(r: &TestResponse) -> u64 {
    param(&sf_item(r.header("ratelimit")), "r")
}

/// A refill so slow (one token per 100 s) that no token comes back during a test.
fn slow_bucket(burst: u32) -> impl FnOnce(&mut signage::config::Layer) {
    move |l| {
        l.rate_limit_per_second = Some(0.01);
        l.rate_limit_burst = Some(burst);
    }
}

#[tokio::test]
async fn rest_past_the_burst_is_429_with_retry_after_and_ratelimit_headers() {
    let app = TestApp::spawn_with(slow_bucket(3)).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let r = app.get("/companies").key("northwind-readonly").send().await;
        assert_eq!(r.status, 200, "{}", r.text());
        let policy = sf_item(r.header("ratelimit-policy"));
        assert_eq!(param(&policy, "q"), 3);
        assert_eq!(param(&policy, "w"), 300, "an empty bucket refills in 300 s");
        seen.push(remaining(&r));
    }
    assert_eq!(seen, vec![2, 1, 0]);

    let r = app.get("/companies").key("northwind-readonly").send().await;
    let body = r.problem(429);
    assert_eq!(body["type"], "/problems/rate-limited");
    assert_eq!(body["violated-policies"], json!(["default"]));
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=100).contains(&retry), "{retry}");
    let limit = sf_item(r.header("ratelimit"));
    assert_eq!(param(&limit, "r"), 0);
    assert_eq!(
        param(&limit, "t"),
        retry,
        "Retry-After is not before the window's end"
    );
    assert!(r.header("ratelimit-policy").is_some());

    // Refusals spend nothing more, and they answer before anything else is looked at.
    let r = app
        .get("/devices/dev_doesnotexist")
        .key("northwind-readonly")
        .send()
        .await;
    r.problem(429);

    // Another key of the same account has its own bucket.
    let r = app.get("/companies").key("northwind-admin").send().await;
    assert_eq!(r.status, 200);
    assert_eq!(remaining(&r), 2);

    // Public routes and failed authentication carry no bucket.
    let r = app.get("/health").send().await;
    assert!(r.header("ratelimit").is_none());
    let r = app.get("/companies").send().await;
    r.problem(401);
    assert!(r.header("ratelimit").is_none());
}

#[tokio::test]
async fn errors_spend_tokens_too() {
    let app = TestApp::spawn_with(slow_bucket(2)).await;
    let r = app
        .get("/devices/dev_doesnotexist")
        .key("northwind-readonly")
        .send()
        .await;
    assert_eq!(remaining(&r), 1, "{}", r.text());
    let r = app
        .get("/companies?bogus=1")
        .key("northwind-readonly")
        .send()
        .await;
    r.problem(422);
    assert_eq!(remaining(&r), 0);
    app.get("/companies")
        .key("northwind-readonly")
        .send()
        .await
        .problem(429);
}

#[tokio::test]
async fn mcp_tool_calls_spend_from_the_same_bucket_as_rest() {
    let app = TestApp::spawn_with(slow_bucket(5)).await;
    let r = app.get("/companies").key("northwind-readonly").send().await;
    assert_eq!(remaining(&r), 4);

    // Every MCP method spends a token, a ping too (issue 31).
    let r = post(&app, "northwind-readonly")
        .json(&request(1, "ping", json!({})))
        .send()
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(remaining(&r), 3);
    let r = post(&app, "northwind-readonly")
        .json(&request(2, "tools/list", json!({})))
        .send()
        .await;
    assert!(r.json()["result"]["tools"].is_array(), "{}", r.text());
    assert_eq!(remaining(&r), 2);
    let r = app.get("/companies").key("northwind-readonly").send().await;
    assert_eq!(remaining(&r), 1);

    // A batch of two tool calls (2025-03-26): one token left, so the second is refused, as a
    // tool error that says when to retry.
    let calls: Vec<Value> = (1..=2)
        .map(|i| {
            request(
                i,
                "tools/call",
                json!({"name": "list_companies", "arguments": {}}),
            )
        })
        .collect();
    let r = post(&app, "northwind-readonly")
        .json(&Value::Array(calls))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(remaining(&r), 0, "the envelope shows what the calls left");
    let replies = r.json();
    let replies = replies.as_array().unwrap();
    assert_eq!(replies.len(), 2);
    assert_eq!(replies[0]["result"]["isError"], false, "{}", replies[0]);
    let last = &replies[1]["result"];
    assert_eq!(last["isError"], true, "{last}");
    let text = last["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("HTTP 429 "), "{text}");
    assert!(text.contains("retry after"), "{text}");
    // An agent reads the wait from the structured error, as REST's Retry-After.
    let error = &last["structuredContent"]["error"];
    assert_eq!(error["status"], 429, "{last}");
    assert!(
        error["retry_after"].as_u64().is_some_and(|s| s >= 1),
        "{last}"
    );

    // REST with the same key is now refused; another key is not.
    app.get("/companies")
        .key("northwind-readonly")
        .send()
        .await
        .problem(429);
    let r = post(&app, "northwind-admin")
        .json(&request(
            1,
            "tools/call",
            json!({"name": "list_companies", "arguments": {}}),
        ))
        .send()
        .await;
    assert_eq!(r.json()["result"]["isError"], false);
    assert_eq!(remaining(&r), 4);

    // Past the limit, every other method is a JSON-RPC error that says when to retry (and runs
    // nothing), a listing as much as a ping; a notification is answered 429.
    for method in ["tools/list", "ping", "prompts/list", "resources/list"] {
        let r = post(&app, "northwind-readonly")
            .json(&request(7, method, json!({})))
            .send()
            .await;
        let v = r.json();
        assert_eq!(v["error"]["code"], -32029, "{method}: {v}");
        assert_eq!(v["error"]["data"]["status"], 429, "{v}");
        assert!(
            v["error"]["data"]["retry_after"]
                .as_u64()
                .is_some_and(|s| s >= 1),
            "{v}"
        );
        assert!(v.get("result").is_none(), "{v}");
    }
    let r = post(&app, "northwind-readonly")
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await;
    assert_eq!(r.status, 429, "{}", r.text());
}

#[tokio::test]
async fn zero_turns_rate_limiting_off() {
    let app = TestApp::spawn_with(|l| {
        l.rate_limit_per_second = Some(0.0);
        l.rate_limit_burst = Some(1);
    })
    .await;
    for _ in 0..30 {
        let r = app.get("/companies").key("northwind-readonly").send().await;
        assert_eq!(r.status, 200);
        assert!(r.header("ratelimit").is_none());
        assert!(r.header("ratelimit-policy").is_none());
    }
}

fn list_call(id: i64, tool: &str, args: Value) -> Value {
    request(id, "tools/call", json!({"name": tool, "arguments": args}))
}

#[tokio::test]
async fn a_batch_over_the_message_limit_is_refused_whole_before_anything_runs() {
    let app = TestApp::spawn_with(|l| {
        l.mcp_max_batch_messages = Some(5);
        l.rate_limit_per_second = Some(0.01);
        l.rate_limit_burst = Some(50);
    })
    .await;
    let batch = |n: i64| {
        Value::Array(
            (1..=n)
                .map(|i| list_call(i, "list_companies", json!({})))
                .collect(),
        )
    };
    let r = post(&app, "northwind-readonly")
        .json(&batch(6))
        .send()
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    let v = r.json();
    assert!(v.is_object(), "one error, not a batch of replies: {v}");
    assert_eq!(v["id"], Value::Null);
    assert_eq!(v["error"]["code"], -32600);
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("6 messages") && message.contains("at most 5"),
        "{message}"
    );
    // Nothing ran: no tool call spent a token.
    assert_eq!(remaining(&r), 50);

    // At the limit, the batch runs.
    let r = post(&app, "northwind-readonly")
        .json(&batch(5))
        .send()
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json().as_array().unwrap().len(), 5);
    assert_eq!(remaining(&r), 45);
}

#[tokio::test]
async fn batch_replies_stop_at_the_response_budget() {
    // The size of one reply, measured on a server without a small cap.
    let probe = TestApp::spawn().await;
    let one = post(&probe, "northwind-readonly")
        .json(&Value::Array(vec![list_call(
            1,
            "list_companies",
            json!({}),
        )]))
        .send()
        .await;
    let size = one.body.len();
    assert!(size > 600, "{size}");

    // A batch at the message limit, with room for two replies and a half.
    let cap = size * 5 / 2;
    let app = TestApp::spawn_with(|l| {
        l.mcp_max_batch_messages = Some(5);
        l.mcp_max_response_bytes = Some(cap);
        l.rate_limit_per_second = Some(0.01);
        l.rate_limit_burst = Some(50);
    })
    .await;
    let batch: Vec<Value> = (1..=5)
        .map(|i| list_call(i, "list_companies", json!({})))
        .collect();
    let r = post(&app, "northwind-readonly")
        .json(&Value::Array(batch))
        .send()
        .await;
    assert_eq!(r.status, 200);
    let replies = r.json();
    let replies = replies.as_array().unwrap();
    assert_eq!(replies.len(), 5, "every request is answered");
    for (i, reply) in replies.iter().enumerate() {
        assert_eq!(reply["id"], i as i64 + 1, "in order");
    }
    assert_eq!(replies[0]["result"]["isError"], false);
    assert_eq!(replies[1]["result"]["isError"], false);
    for (reply, ran) in replies[2..].iter().zip([true, false, false]) {
        let e = &reply["error"];
        assert_eq!(e["code"], -32000, "{reply}");
        assert_eq!(e["data"]["reason"], "response_too_large");
        assert_eq!(e["data"]["limit"], cap);
        assert_eq!(e["data"]["ran"], ran);
    }
    // The cap, plus one short error per message past it.
    assert!(
        r.body.len() <= cap + 3 * 400,
        "{} > {cap} + errors",
        r.body.len()
    );
    // The last two were not run: three tool calls spent three tokens.
    assert_eq!(remaining(&r), 47);
}

#[tokio::test]
async fn one_tool_result_over_the_cap_becomes_an_error_result() {
    // 4 KiB: one company (with its allowed landing domains and its week of opening hours) fits, a
    // page of 100 devices does not.
    let app = TestApp::spawn_with(|l| l.mcp_max_response_bytes = Some(4096)).await;
    let r = post(&app, "northwind-readonly")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&list_call(7, "list_devices", json!({"limit": 100})))
        .send()
        .await;
    assert_eq!(r.status, 200);
    assert!(r.body.len() <= 4096, "{}", r.body.len());
    let v = r.json();
    assert_eq!(v["id"], 7);
    assert_eq!(v["result"]["isError"], true, "{v}");
    let text = v["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("Narrow the request") && text.contains("`limit`"),
        "{text}"
    );
    // A small page fits.
    let r = post(&app, "northwind-readonly")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&list_call(8, "list_companies", json!({"limit": 1})))
        .send()
        .await;
    assert_eq!(r.json()["result"]["isError"], false, "{}", r.text());
}

// ---- the real binary: memory under a hostile batch ----

struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn vm_hwm_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// One HTTP/1.1 exchange on a fresh connection (`Connection: close`); status and body.
async fn raw_post(addr: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(120), s.read_to_end(&mut out))
        .await
        .expect("answer in time")
        .unwrap();
    let split = out.windows(4).position(|w| w == b"\r\n\r\n").expect("head");
    let status = std::str::from_utf8(&out[9..12]).unwrap().parse().unwrap();
    (status, out[split + 4..].to_vec())
}

#[tokio::test]
async fn a_hostile_batch_does_not_grow_the_servers_memory() {
    use std::io::BufRead;
    // The largest batch the configuration allows, and no rate limit: only the caps hold.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_signage"));
    // Run from a scratch directory, so no ./signage.toml is read.
    cmd.current_dir(std::env::temp_dir())
        .args(["serve", "--database", ":memory:", "--port", "0"])
        .env("SIGNAGE_LOG_LEVEL", "warn")
        .env("SIGNAGE_MCP_MAX_BATCH_MESSAGES", "1000")
        .env("SIGNAGE_RATE_LIMIT_PER_SECOND", "0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = Child(cmd.spawn().unwrap());
    let pid = child.0.id();
    let mut line = String::new();
    std::io::BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // "signage listening on http://127.0.0.1:PORT (MCP at …)"
    let addr = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://"))
        .unwrap_or("")
        .to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{line}");

    let k = key("northwind-readonly");
    let bearer = format!("Bearer {}", k.raw);
    let headers = [
        ("authorization", bearer.as_str()),
        ("x-service-client-id", k.client_id.as_str()),
        ("content-type", "application/json"),
        ("accept", "application/json"),
    ];
    let batch = |n: usize| {
        let items: Vec<Value> = (0..n)
            .map(|i| list_call(i as i64, "list_devices", json!({"limit": 100})))
            .collect();
        serde_json::to_vec(&items).unwrap()
    };
    // Warm up: the allocator and the caches see a normal batch first.
    let (status, _) = raw_post(&addr, &headers, &batch(20)).await;
    assert_eq!(status, 200);
    let before = vm_hwm_kb(pid);

    // The largest allowed batch runs until the 4 MiB reply budget is spent.
    let (status, body) = raw_post(&addr, &headers, &batch(1000)).await;
    assert_eq!(status, 200);
    assert!(body.len() <= 4 * 1024 * 1024 + 1000 * 400, "{}", body.len());
    let replies: Vec<Value> = serde_json::from_slice(&body).unwrap();
    assert_eq!(replies.len(), 1000);
    assert_eq!(
        replies[999]["error"]["data"]["reason"],
        "response_too_large"
    );
    let after_capped = vm_hwm_kb(pid);

    // The attack, scaled: ~4.8 MB, 40,000 tool calls.
    let hostile = batch(40_000);
    assert!(hostile.len() > 4_000_000, "{}", hostile.len());
    let (status, body) = raw_post(&addr, &headers, &hostile).await;
    assert_eq!(status, 400);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["error"]["code"], -32600);
    let after_refused = vm_hwm_kb(pid);

    eprintln!(
        "VmHWM: {before} kB warm, {after_capped} kB after a 1,000-call batch (reply cut at 4 MiB), {after_refused} kB after the refused 40,000-call batch"
    );
    assert!(
        after_capped - before < 32 * 1024,
        "capped batch: {before} -> {after_capped} kB"
    );
    assert!(
        after_refused - before < 32 * 1024,
        "refused batch: {before} -> {after_refused} kB"
    );
}

// ---- slow bodies and idle connections ----

/// An authenticated request whose body never finishes: it holds its slot until the body read
/// timeout (a connection that authenticated is never closed to make room).
fn slow_head() -> String {
    let k = key("northwind-readwrite");
    format!(
        "POST /devices HTTP/1.1\r\nHost: localhost\r\nX-API-Key: {}\r\nX-Service-Client-Id: {}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\nabcd",
        k.raw, k.client_id
    )
}

/// `GET /health` on a fresh connection, giving up after `wait`.
async fn health(addr: &str, wait: Duration) -> Option<u16> {
    tokio::time::timeout(wait, async {
        let mut s = TcpStream::connect(addr).await.ok()?;
        s.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .await
            .ok()?;
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.ok()?;
        std::str::from_utf8(out.get(9..12)?).ok()?.parse().ok()
    })
    .await
    .ok()
    .flatten()
}

#[tokio::test]
async fn slow_bodies_are_cut_off_and_the_server_recovers_on_its_own() {
    let app = TestApp::spawn_with(|l| {
        l.max_connections = Some(4);
        l.body_read_timeout_secs = Some(1);
        l.idle_timeout_secs = Some(60);
        l.header_read_timeout_secs = Some(60);
    })
    .await;
    let addr = app.base_url.trim_start_matches("http://").to_string();
    let mut slow = Vec::new();
    for _ in 0..4 {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        s.write_all(slow_head().as_bytes()).await.unwrap();
        slow.push(s);
    }
    // Every slot is held by an authenticated request; /health waits, then answers once the slow
    // bodies are cut off.
    let mut recovered = None;
    for attempt in 0..20 {
        if let Some(status) = health(&addr, Duration::from_secs(1)).await {
            recovered = Some((attempt, status));
            break;
        }
    }
    let (_, status) = recovered.expect("/health recovers within 20 attempts");
    assert_eq!(status, 200);
    // Each slow body is cut off with a 408, or (one account holding more than its share of the
    // slots) closed to make room for /health.
    let mut cut_off = 0;
    for mut s in slow {
        let mut out = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
            .await
            .expect("the slow connection is closed")
            .unwrap_or_default();
        if out.is_empty() {
            continue;
        }
        let text = String::from_utf8_lossy(&out);
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
        assert!(text.contains("application/problem+json"), "{text}");
        assert!(text.contains("connection: close"), "{text}");
        cut_off += 1;
    }
    assert!(
        cut_off >= 2,
        "{cut_off} of 4 were cut off by the body timeout"
    );
}

#[tokio::test]
async fn idle_connections_are_closed() {
    let app = TestApp::spawn_with(|l| {
        l.idle_timeout_secs = Some(1);
        l.header_read_timeout_secs = Some(60);
    })
    .await;
    let addr = app.base_url.trim_start_matches("http://").to_string();

    // A keep-alive connection after one request.
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = s.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(15), s.read_to_end(&mut rest))
        .await
        .expect("the idle keep-alive connection is closed")
        .unwrap();
    assert!(rest.is_empty());

    // A connection that never says anything.
    let mut s = TcpStream::connect(&addr).await.unwrap();
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(15), s.read_to_end(&mut rest))
        .await
        .expect("the silent connection is closed")
        .unwrap();
    assert!(rest.is_empty());
}

#[tokio::test]
async fn a_throttled_confirmation_is_not_burned() {
    let app = TestApp::spawn_with(|l| {
        l.rate_limit_per_second = Some(0.5);
        l.rate_limit_burst = Some(4);
        // The client's pooled connection waits out the refill below.
        l.idle_timeout_secs = Some(60);
        l.header_read_timeout_secs = Some(60);
    })
    .await;
    let grocers = company_id("Northwind Grocers");
    let ad: String = app.sql(|c| {
        c.query_row(
            "SELECT min(id) FROM ads WHERE company_id = ?1",
            [&grocers],
            |r| r.get(0),
        )
    });
    let tool = |id: i64, name: &str, args: Value| {
        post(&app, "northwind-readwrite")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&list_call(id, name, args))
    };
    let r = tool(
        1,
        "prepare_ad_change",
        json!({"ad_id": ad, "changes": {"headline": "Throttled, not lost"}}),
    )
    .send()
    .await;
    let preview = r.json()["result"]["structuredContent"].clone();
    let confirmation = preview["confirmation_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", r.text()))
        .to_string();

    // Empty the bucket.
    let mut throttled = false;
    for _ in 0..10 {
        let r = app
            .get("/companies")
            .key("northwind-readwrite")
            .send()
            .await;
        if r.status == 429 {
            throttled = true;
            break;
        }
    }
    assert!(throttled);

    let r = tool(
        2,
        "confirm_change",
        json!({"confirmation_id": confirmation}),
    )
    .send()
    .await;
    let result = &r.json()["result"];
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("HTTP 429 ") && text.contains("still valid"),
        "{text}"
    );
    let wait: u64 = text
        .split("retry after ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    // Three tokens (read, check, write) at 0.5 a second: at most 6 seconds.
    assert!((1..=6).contains(&wait), "{text}");
    assert_eq!(
        result["structuredContent"]["error"],
        json!({"code": "rate_limited", "status": 429, "message": text, "retry_after": wait})
    );

    // Once the tokens are back, the same confirmation applies the change.
    tokio::time::sleep(Duration::from_millis(wait * 1000 + 300)).await;
    let r = tool(
        3,
        "confirm_change",
        json!({"confirmation_id": confirmation}),
    )
    .send()
    .await;
    let result = &r.json()["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"]["status"], "applied");
}

#[tokio::test]
async fn a_client_that_stops_reading_is_cut_off() {
    let app = TestApp::spawn_with(|l| {
        l.idle_timeout_secs = Some(1);
        l.header_read_timeout_secs = Some(60);
    })
    .await;
    let addr = app.base_url.trim_start_matches("http://").to_string();
    // The document's event examples are made once per process, on its first request: made now, so
    // that the burst below stalls the socket as soon as the buffers fill.
    app.get("/openapi.json").send().await.ok();
    // Many pipelined requests for a large document, and no reading: once the socket buffers are
    // full the server's writes stall, and nothing moves.
    let mut s = TcpStream::connect(&addr).await.unwrap();
    let requests = 300;
    let one = "GET /openapi.json HTTP/1.1\r\nHost: localhost\r\n\r\n";
    s.write_all(one.repeat(requests).as_bytes()).await.unwrap();
    // Ten times the idle timeout: on a loaded machine the server takes a while to fill the
    // socket buffers with the (megabyte-sized, event schemas and examples included) document and
    // stall, and reading before it gives up would unstall it.
    tokio::time::sleep(Duration::from_secs(10)).await;
    // Closed: what was buffered, then the end (or a reset, as requests were left unread).
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut out))
        .await
        .expect("the stalled connection was closed");
    if let Err(e) = read {
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
    }
    let answered = String::from_utf8_lossy(&out)
        .matches("HTTP/1.1 200 OK")
        .count();
    assert!(answered < requests, "{answered} of {requests} answered");
}
