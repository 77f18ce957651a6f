//! The appliance: health, storage, fixtures, reset, HTTP edge behaviour, shutdown and limits.

use crate::helpers::*;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_signage")
}

fn temp_db(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("signage-test-{}-{}", name, std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("signage.db")
}

#[tokio::test]
async fn health_answers_exactly_as_the_spec_says() {
    let app = TestApp::spawn().await;
    let r = app.get("/health").send().await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.json(),
        json!({"ok": true, "backendAuthMode": "passthrough"})
    );
}

#[tokio::test]
async fn health_is_503_when_the_database_is_not_usable() {
    let app = TestApp::spawn().await;
    app.sql(|c| c.execute_batch("DROP TABLE refinery_schema_history"));
    let r = app.get("/health").send().await;
    assert_eq!(r.status, 503);
    assert_eq!(
        r.json(),
        json!({"ok": false, "backendAuthMode": "passthrough"})
    );
}

/// The health query is a cached statement: it must still ask the database on every call, so a
/// health check that passed before the table went away fails after, and passes again once it is
/// back.
#[tokio::test]
async fn health_follows_the_database_after_its_statement_is_cached() {
    let app = TestApp::spawn().await;
    for _ in 0..3 {
        assert_eq!(app.get("/health").send().await.status, 200);
    }
    app.sql(|c| c.execute_batch("ALTER TABLE refinery_schema_history RENAME TO kept"));
    for _ in 0..3 {
        assert_eq!(app.get("/health").send().await.status, 503);
    }
    app.sql(|c| c.execute_batch("ALTER TABLE kept RENAME TO refinery_schema_history"));
    let r = app.get("/health").send().await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"ok": true, "backendAuthMode": "passthrough"})
    );
}

#[tokio::test]
async fn unknown_path_wrong_method_and_oversized_body_are_problems() {
    let app = TestApp::spawn_with(|l| l.max_body_bytes = Some(4096)).await;
    let r = app.get("/no/such/thing").send().await;
    let body = r.problem(404);
    assert_eq!(body["type"], "/problems/not-found");

    let r = app.delete("/health").send().await;
    r.problem(405);
    assert_eq!(r.header("allow"), Some("GET"));

    let r = app
        .post("/auth/login")
        .raw("application/json", vec![b'x'; 10_000])
        .send()
        .await;
    let body = r.problem(413);
    assert!(body["detail"].as_str().unwrap().contains("4096"));
}

#[tokio::test]
async fn every_response_carries_a_unique_request_id() {
    let app = TestApp::spawn().await;
    let a = app.get("/health").send().await;
    let b = app.get("/nope").send().await;
    let (a, b) = (
        a.header("request-id").unwrap().to_string(),
        b.header("request-id").unwrap().to_string(),
    );
    assert!(a.starts_with("req_") && b.starts_with("req_"));
    assert_ne!(a, b);
}

/// Rows of every fixture table, with time columns left out (the world is relative to load time).
fn snapshot(app: &TestApp) -> Value {
    app.sql(|c| {
        let mut out = serde_json::Map::new();
        let tables: Vec<String> = c
            .prepare("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' AND name NOT IN ('refinery_schema_history','audit_log','server_secrets','cache_generations') ORDER BY name")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        for t in tables {
            let mut stmt = c.prepare(&format!("SELECT * FROM \"{t}\" ORDER BY 1, 2"))?;
            let names: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
            let rows: Vec<Value> = stmt
                .query_map([], |r| {
                    let mut row = serde_json::Map::new();
                    for (i, n) in names.iter().enumerate() {
                        if n.ends_with("_at") || n.starts_with("period_") {
                            continue;
                        }
                        let v: rusqlite::types::Value = r.get(i)?;
                        row.insert(n.clone(), json!(format!("{v:?}")));
                    }
                    Ok(Value::Object(row))
                })?
                .collect::<Result<_, _>>()?;
            out.insert(t, json!(rows));
        }
        Ok(Value::Object(out))
    })
}

#[tokio::test]
async fn fixtures_are_internally_consistent() {
    let app = TestApp::spawn().await;
    let (fk_violations, companies_without_branding, bad_balances): (i64, i64, i64) = app.sql(|c| {
        let fk: i64 = c.prepare("PRAGMA foreign_key_check")?.query_map([], |_| Ok(()))?.count() as i64;
        let nb: i64 = c.query_row(
            "SELECT count(*) FROM companies WHERE id NOT IN (SELECT company_id FROM brandings)",
            [],
            |r| r.get(0),
        )?;
        let bb: i64 = c.query_row(
            "SELECT count(*) FROM companies c LEFT JOIN token_balances b ON b.company_id = c.id
             WHERE coalesce(b.balance, -1) <> (SELECT coalesce(sum(amount), 0) FROM token_transactions t WHERE t.company_id = c.id)",
            [],
            |r| r.get(0),
        )?;
        Ok((fk, nb, bb))
    });
    assert_eq!(fk_violations, 0);
    assert_eq!(companies_without_branding, 0);
    assert_eq!(bad_balances, 0);
    let counts: Vec<(String, i64)> = app.sql(|c| {
        [
            "accounts",
            "companies",
            "devices",
            "ads",
            "promotions",
            "plans",
            "token_packs",
            "invoices",
            "media",
            "webhooks",
        ]
        .iter()
        .map(|t| {
            Ok((
                t.to_string(),
                c.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))?,
            ))
        })
        .collect()
    });
    let at_least = |t: &str, n: i64| {
        let got = counts.iter().find(|(name, _)| name == t).unwrap().1;
        assert!(got >= n, "{t}: {got} < {n}");
    };
    at_least("accounts", 2);
    at_least("companies", 4);
    at_least("devices", 30);
    at_least("ads", 40);
    at_least("promotions", 10);
    at_least("plans", 3);
    at_least("token_packs", 3);
    at_least("invoices", 12);
    at_least("media", 30);
    at_least("webhooks", 4);
    // Every key in demo-credentials.json is in the database with the same hash, client, scopes and scope.
    for k in &demo().keys {
        let (hash, client, scopes, company): (String, String, String, Option<String>) =
            app.sql(|c| {
                c.query_row(
                    "SELECT secret_hash, client_id, scopes, company_id FROM api_keys WHERE id = ?1",
                    [&k.key_id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )
            });
        assert_eq!(hash, signage::auth::keys::hash(&k.raw), "{}", k.name);
        assert_eq!(client, k.client_id);
        assert_eq!(scopes, k.scopes.join(" "));
        assert_eq!(company, k.company_scope);
        let r = app.get("/me").key(&k.name).send().await;
        match k.status.as_str() {
            "active" => assert_eq!(r.status, 200, "{}", k.name),
            "revoked" => assert_eq!(r.problem(401)["code"], "revoked_key"),
            "expired" => assert_eq!(r.problem(401)["code"], "expired_key"),
            other => panic!("unknown status {other}"),
        }
    }
    for (user, password) in &demo().users {
        app.login(user, password).await;
    }
}

#[tokio::test]
async fn sandbox_reset_restores_the_fixture_state_exactly() {
    // The simulated fleet would add the other account's proof-of-play whenever a minute passes.
    let app = TestApp::spawn_with(|l| l.sandbox_simulate_fleet = Some(false)).await;
    let before = snapshot(&app);
    let grocers = company_id("Northwind Grocers");
    app.patch(&format!("/companies/{grocers}/branding"))
        .key("northwind-readwrite")
        .json(&json!({"colors": {"primary": "#000000"}, "tagline": "changed"}))
        .send()
        .await
        .ok();
    let client = app
        .post("/api-clients")
        .key("northwind-admin")
        .json(&json!({"name": "temp"}))
        .send()
        .await
        .ok();
    app.post(&format!(
        "/api-keys/{}/revoke",
        key("northwind-readonly").key_id
    ))
    .key("northwind-admin")
    .send()
    .await
    .ok();
    assert_ne!(snapshot(&app), before);
    app.post("/_sandbox/reset")
        .key("northwind-readwrite")
        .send()
        .await
        .problem(403);
    let r = app
        .post("/_sandbox/reset")
        .key("northwind-admin")
        .send()
        .await;
    assert_eq!(r.ok(), json!({"object": "sandbox_reset", "reset": true}));
    assert_eq!(snapshot(&app), before);
    app.get(&format!("/api-clients/{}", client["id"].as_str().unwrap()))
        .key("northwind-admin")
        .send()
        .await
        .problem(404);
    app.get("/companies")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
}

#[tokio::test]
async fn migrations_are_idempotent_and_cli_reset_restores_a_file() {
    let db = temp_db("migrate");
    let run = |args: &[&str]| {
        let out = Command::new(bin()).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{:?}: {}",
            args,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let first = run(&["migrate", "--database", db.to_str().unwrap()]);
    assert!(
        first.contains("1 migration(s) applied")
            || first.contains("migration(s) applied, fixtures loaded"),
        "{first}"
    );
    assert!(first.contains("fixtures loaded"));
    let count = |sql: &str| -> i64 {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.query_row(sql, [], |r| r.get(0)).unwrap()
    };
    let devices = count("SELECT count(*) FROM devices");
    let second = run(&["migrate", "--database", db.to_str().unwrap()]);
    assert!(
        second.contains(" 0 migration(s) applied, fixtures unchanged"),
        "{second}"
    );
    assert_eq!(count("SELECT count(*) FROM devices"), devices);
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("DELETE FROM playback_errors", [])
        .unwrap();
    assert_eq!(count("SELECT count(*) FROM playback_errors"), 0);
    let out = run(&["reset", "--database", db.to_str().unwrap()]);
    assert!(out.contains("demo fixtures restored"));
    assert!(count("SELECT count(*) FROM playback_errors") > 0);
    assert_eq!(count("SELECT count(*) FROM devices"), devices);
    if let Some(dir) = db.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[tokio::test]
async fn a_slow_header_client_is_cut_off() {
    let app = TestApp::spawn_with(|l| l.header_read_timeout_secs = Some(1)).await;
    let addr = app.base_url.trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    // The server must close the connection on its own; the bound only keeps a broken server from
    // hanging the suite.
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut buf)).await;
    assert!(
        read.is_ok(),
        "connection was not closed by the header read timeout"
    );
    assert!(!String::from_utf8_lossy(&buf).contains("200 OK"));
}

/// Past `max_connections` authenticated connections, a new one waits in the backlog until one
/// closes (unauthenticated ones are closed to make room instead: see `edge_connections`).
#[tokio::test]
async fn the_connection_limit_holds() {
    let app = TestApp::spawn_with(|l| l.max_connections = Some(2)).await;
    let addr = app.base_url.trim_start_matches("http://").to_string();
    let mut held = Vec::new();
    // Two accounts, one slot each: each within its share, so neither is closed for a newcomer
    // (one account holding both would give one back: see edge_connections).
    for name in ["harborview-readwrite", "northwind-readonly"] {
        let k = key(name);
        let authenticated = format!(
            "GET /companies HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: {}\r\nX-Service-Client-Id: {}\r\n\r\n",
            k.raw, k.client_id
        );
        let mut s = TcpStream::connect(&addr).await.unwrap();
        s.write_all(authenticated.as_bytes()).await.unwrap();
        let mut buf = vec![0u8; 65536];
        let n = s.read(&mut buf).await.unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        held.push(s);
    }
    let mut third = TcpStream::connect(&addr).await.unwrap();
    third
        .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 512];
    let early = tokio::time::timeout(Duration::from_millis(800), third.read(&mut buf)).await;
    assert!(
        early.is_err(),
        "a third connection was served while two authenticated ones were open"
    );
    drop(held.pop());
    let n = tokio::time::timeout(Duration::from_secs(10), third.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn graceful_shutdown_finishes_the_request_in_flight() {
    let mut app = TestApp::spawn().await;
    let addr = app.base_url.trim_start_matches("http://").to_string();
    let (user, password) = demo().users[0].clone();
    let body = serde_json::to_vec(&json!({"username": user, "password": password})).unwrap();
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body[..10]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Signal shutdown while the request body is still arriving.
    let handle = app.handle.take().unwrap();
    drop(app);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        TcpStream::connect(&addr).await.is_err(),
        "new connections must be refused after shutdown"
    );
    stream.write_all(&body[10..]).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("access_token"));
    tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[test]
fn the_binary_prints_its_url_first_logs_no_secrets_and_stops_on_sigterm() {
    let mut child = Command::new(bin())
        .args([
            "serve",
            "--port",
            "0",
            "--database",
            ":memory:",
            "--log-format",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = Vec::new();
    let mut byte = [0u8; 1];
    while stdout.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
        first.push(byte[0]);
    }
    let first = String::from_utf8(first).unwrap();
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no URL in first line: {first}"));
    let addr = url.trim_start_matches("http://");
    let k = key("northwind-readonly");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /companies HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-KEY: {}\r\nX-Service-Client-Id: {}\r\nConnection: close\r\n\r\n",
        k.raw, k.client_id
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    // A healthy probe is logged at debug only, so it is not in this info-level log.
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = child.wait().unwrap();
    assert!(status.success(), "exit status {status:?}");
    let mut logs = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut logs)
        .unwrap();
    assert!(logs.contains("\"route\":\"/companies\""), "{logs}");
    assert!(!logs.contains("\"route\":\"/health\""), "{logs}");
    assert!(logs.contains("signage stopped"));
    assert!(!logs.contains(&k.raw), "the raw key leaked into the log");
    assert!(
        !logs.contains(&k.raw[k.raw.len() - 12..]),
        "part of the key leaked into the log"
    );
}

/// Log lines are buffered (one write per 32 KiB or per 100 ms, not per line), yet a running
/// server's access log still reaches stderr promptly: the request line shows up while the process
/// is alive, long before it exits.
#[test]
fn buffered_logs_reach_stderr_while_the_server_runs() {
    use std::io::BufRead;
    let mut child = Command::new(bin())
        .args(["serve", "--port", "0", "--database", ":memory:"])
        .args(["--log-format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://127.0.0.1:"))
        .map(|port| format!("127.0.0.1:{port}"))
        .unwrap_or_else(|| panic!("no URL in first line: {first}"));
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut seen = false;
    while !seen {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => seen = line.contains("\"route\":\"/openapi.json\""),
            Err(_) => break,
        }
    }
    let alive = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    assert!(seen, "the access log line never reached stderr");
    assert!(alive, "the line arrived only because the process ended");
}
