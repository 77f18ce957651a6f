//! Issue 22 item 1, issue 31 item 2: injected delays cannot starve anyone. One credential floods the
//! server with `Prefer: delay=` requests, each on its own connection; only
//! `sandbox.max_delayed_per_account` are held, the rest are refused at once (429
//! `too_many_delayed_requests`, connection closed), and `/health` and another account's reads stay
//! fast while the held ones wait. The bound is per account: keys an admin mints share it.

use crate::helpers::*;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One request on a fresh connection, read to the end of the connection (the server closes it
/// after a refusal) or until `wait` passes. Returns the raw answer.
async fn on_own_connection(
    base_url: &str,
    path: &str,
    headers: &[(&str, &str)],
    wait: Duration,
) -> String {
    let addr = base_url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let mut req = format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    let _ = tokio::time::timeout(wait, stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delay_flood_holds_eight_requests_and_leaves_everyone_else_fast() {
    let app = TestApp::spawn_with(|l| {
        l.max_connections = Some(64);
        l.rate_limit_burst = Some(200);
    })
    .await;
    let attacker = key("northwind-readonly");
    let attack = 40;
    let mut tasks = Vec::new();
    for _ in 0..attack {
        let base = app.base_url.clone();
        let (raw, client) = (attacker.raw.clone(), attacker.client_id.clone());
        tasks.push(tokio::spawn(async move {
            let started = Instant::now();
            let answer = on_own_connection(
                &base,
                "/companies",
                &[
                    ("x-api-key", &raw),
                    ("x-service-client-id", &client),
                    ("prefer", "delay=6000"),
                ],
                Duration::from_secs(3),
            )
            .await;
            (answer, started.elapsed())
        }));
    }
    // Let the flood land, then the others must be served at once while the held ones wait.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let health = app.get("/health").send().await;
    let health_took = started.elapsed();
    assert_eq!(health.status, 200);
    let started = Instant::now();
    let other = app
        .get("/companies")
        .key("harborview-readwrite")
        .send()
        .await;
    let other_took = started.elapsed();
    assert_eq!(other.status, 200, "{}", other.text());
    // Generous bounds for a shared 2-core machine: without the cap these wait for the delays.
    assert!(
        health_took < Duration::from_secs(1),
        "/health took {health_took:?}"
    );
    assert!(
        other_took < Duration::from_secs(1),
        "another account's read took {other_took:?}"
    );

    assert_eq!(app.app.faults.holds.held_by(&attacker.account_id), 8);

    let mut refused = 0;
    let mut held = 0;
    for t in tasks {
        let (answer, took) = t.await.unwrap();
        if answer.starts_with("HTTP/1.1 429") {
            refused += 1;
            let lower = answer.to_ascii_lowercase();
            assert!(lower.contains("retry-after: "), "{answer}");
            assert!(lower.contains("connection: close"), "{answer}");
            assert!(
                answer.contains("\"code\":\"too_many_delayed_requests\""),
                "{answer}"
            );
            assert!(answer.contains("\"limit\":8"), "{answer}");
            assert!(answer.contains("\"scope\":\"account\""), "{answer}");
            // Refused at once, and the server closed the connection (read_to_end returned).
            assert!(took < Duration::from_secs(3), "a refusal took {took:?}");
        } else {
            // Still held when the read gave up: nothing arrived yet.
            assert!(answer.is_empty(), "{answer}");
            held += 1;
        }
    }
    assert_eq!(held, 8, "exactly the account's share is held");
    assert_eq!(refused, attack - 8);
}

#[tokio::test]
async fn the_cap_is_configurable_and_a_held_slot_is_given_back() {
    let app = TestApp::spawn_with(|l| l.sandbox_max_delayed_per_account = Some(1)).await;
    let k = key("northwind-readonly");
    let base = app.base_url.clone();
    let (raw, client) = (k.raw.clone(), k.client_id.clone());
    let first = tokio::spawn(async move {
        on_own_connection(
            &base,
            "/companies",
            &[
                ("x-api-key", &raw),
                ("x-service-client-id", &client),
                ("prefer", "delay=1500"),
                ("connection", "close"),
            ],
            Duration::from_secs(10),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = app
        .get("/companies")
        .key("northwind-readonly")
        .header("prefer", "delay=10")
        .send()
        .await;
    let p = second.problem(429);
    assert_eq!(p["code"], "too_many_delayed_requests");
    assert_eq!(p["limit"], 1);
    let retry: u64 = second.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry), "{retry}");
    // Another credential of the same account shares the account's bound; another account has its
    // own; an undelayed request is not limited.
    app.get("/companies")
        .key("northwind-readwrite")
        .header("prefer", "delay=10")
        .send()
        .await
        .problem(429);
    app.get("/companies")
        .key("harborview-readwrite")
        .header("prefer", "delay=10")
        .send()
        .await
        .ok();
    app.get("/companies")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    // Once the held request is answered, its slot is free again.
    assert!(first.await.unwrap().starts_with("HTTP/1.1 200"));
    app.get("/companies")
        .key("northwind-readonly")
        .header("prefer", "delay=10")
        .send()
        .await
        .ok();
    assert_eq!(app.app.faults.holds.held_by(&k.account_id), 0);
}

/// Issue 31 item 2: an admin mints keys to multiply its delays; the account's bound holds them all,
/// and another account still gets its own delayed request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minted_keys_share_their_accounts_bound_and_another_account_keeps_its_own() {
    let app = TestApp::spawn_with(|l| {
        l.max_connections = Some(64);
        l.rate_limit_burst = Some(200);
    })
    .await;
    let admin = key("northwind-admin");
    let mut minted = Vec::new();
    for i in 0..5 {
        let r = app
            .post("/api-keys")
            .key("northwind-admin")
            .json(&serde_json::json!({"client_id": admin.client_id, "name": format!("minted {i}"), "scopes": ["read"]}))
            .send()
            .await;
        assert_eq!(r.status, 201, "{}", r.text());
        minted.push(r.json()["rawKey"].as_str().unwrap().to_string());
    }
    // Four delayed requests per minted key: twenty tries against the account's eight.
    let mut tasks = Vec::new();
    for raw in &minted {
        for _ in 0..4 {
            let (base, raw, client) = (app.base_url.clone(), raw.clone(), admin.client_id.clone());
            tasks.push(tokio::spawn(async move {
                on_own_connection(
                    &base,
                    "/companies",
                    &[
                        ("x-api-key", &raw),
                        ("x-service-client-id", &client),
                        ("prefer", "delay=5000"),
                    ],
                    Duration::from_secs(2),
                )
                .await
            }));
        }
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(app.app.faults.holds.held_by(&admin.account_id), 8);
    // The other account's own delay is held, not refused.
    let started = Instant::now();
    let other = app
        .get("/companies")
        .key("harborview-readwrite")
        .header("prefer", "delay=300")
        .send()
        .await;
    assert_eq!(other.status, 200, "{}", other.text());
    assert!(started.elapsed() >= Duration::from_millis(300));
    let mut refused = 0;
    for t in tasks {
        let answer = t.await.unwrap();
        if answer.starts_with("HTTP/1.1 429") {
            assert!(answer.contains("\"scope\":\"account\""), "{answer}");
            refused += 1;
        }
    }
    assert_eq!(refused, 20 - 8);
}
