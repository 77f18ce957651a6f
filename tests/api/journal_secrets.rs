//! Nothing secret reaches the request journal: a canary test plants a login password, raw API
//! keys (in the header, a query and a body), a webhook secret, `Authorization` and `X-API-KEY`
//! values, then searches the journal's answers, the journal's and the database's files, and the
//! server's logs (the real binary, at debug level).

use crate::helpers::key;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One HTTP/1.1 request on a fresh connection; the status and the body.
fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn read_all(path: &std::path::Path) -> String {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

#[test]
fn planted_secrets_never_reach_the_journal_its_files_or_the_logs() {
    let dir = std::env::temp_dir().join(format!("signage-canary-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("signage.db");
    let log = dir.join("server.log");
    let log_file = std::fs::File::create(&log).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_signage"))
        .args([
            "serve",
            "--port",
            "0",
            "--database",
            db.to_str().unwrap(),
            "--log-level",
            "debug",
        ])
        .stdout(Stdio::from(log_file.try_clone().unwrap()))
        .stderr(Stdio::from(log_file))
        .spawn()
        .unwrap();
    let started = Instant::now();
    let port: u16 = loop {
        let text = read_all(&log);
        if let Some(at) = text.find("http://127.0.0.1:") {
            let rest = &text[at + 17..];
            let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            if !digits.is_empty() && rest.len() > digits.len() {
                break digits.parse().unwrap();
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no address: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };

    let rw = key("northwind-admin");
    let op = key("sandbox-operator");
    let auth = [
        ("x-api-key", rw.raw.as_str()),
        ("x-service-client-id", rw.client_id.as_str()),
    ];
    let json_auth = [auth[0], auth[1], ("content-type", "application/json")];
    let password = "Canary-Password-7f3a9c";
    let fake_key = "sgn_test_AbCdEfGh12345678_CanaryKeySecret9d8e7f6a5b4c";
    let bearer = "eyJhbGciOiJIUzI1NiJ9.eyJjYW5hcnkiOiJ5ZXMifQ.Q2FuYXJ5U2lnbmF0dXJlMTIzNDU2";
    let whsec = "whsec_CanaryWebhookSecret0123456789ab";

    // A login with a planted password (refused, journaled to the operator).
    let (s, _) = http(
        port,
        "POST",
        "/auth/login",
        &[("content-type", "application/json")],
        &json!({"username": "demo@northwind.example", "password": password}).to_string(),
    );
    assert_eq!(s, 401);
    // A raw key that does not exist, and a bearer token that does not verify.
    let (s, _) = http(
        port,
        "GET",
        "/devices",
        &[
            ("x-api-key", fake_key),
            ("x-service-client-id", &rw.client_id),
        ],
        "",
    );
    assert_eq!(s, 401);
    let (s, _) = http(
        port,
        "GET",
        "/devices",
        &[("authorization", &format!("Bearer {bearer}"))],
        "",
    );
    assert_eq!(s, 401);
    // Secrets pasted into a query and a body of authenticated requests.
    let (s, _) = http(
        port,
        "GET",
        &format!("/devices?api_key={fake_key}"),
        &auth,
        "",
    );
    assert_eq!(s, 422);
    let (s, _) = http(port, "POST", "/webhooks", &json_auth,
        &json!({"company_id": crate::helpers::company_id("Northwind Grocers"), "url": "http://127.0.0.1:9/x",
                "event_types": ["webhook.test"], "secret": whsec, "password": password}).to_string());
    assert_eq!(s, 422);
    // A real webhook secret, shown once at creation and at rotation.
    let (s, created) = http(port, "POST", "/webhooks", &json_auth,
        &json!({"company_id": crate::helpers::company_id("Northwind Grocers"), "url": "http://127.0.0.1:9/x",
                "event_types": ["webhook.test"]}).to_string());
    assert_eq!(s, 201, "{created}");
    let created: Value = serde_json::from_str(&created).unwrap();
    let real_secret = created["secret"].as_str().unwrap().to_string();
    let hook = created["id"].as_str().unwrap();
    let (s, rotated) = http(
        port,
        "POST",
        &format!("/webhooks/{hook}/rotate-secret"),
        &auth,
        "",
    );
    assert!(s < 300, "{rotated}");
    let rotated: Value = serde_json::from_str(&rotated).unwrap();
    let rotated_secret = rotated["secret"].as_str().unwrap().to_string();
    // A new API key: its raw value is shown once, then used.
    let (s, made) = http(
        port,
        "POST",
        "/api-keys",
        &json_auth,
        &json!({"client_id": rw.client_id, "name": "canary", "scopes": ["read"]}).to_string(),
    );
    assert_eq!(s, 201, "{made}");
    let made: Value = serde_json::from_str(&made).unwrap();
    let new_raw = made["rawKey"].as_str().unwrap().to_string();
    let (s, _) = http(
        port,
        "GET",
        "/companies",
        &[
            ("x-api-key", &new_raw),
            ("x-service-client-id", &rw.client_id),
        ],
        "",
    );
    assert_eq!(s, 200);
    // Over MCP: a tool call whose arguments carry a planted secret.
    let (s, _) = http(
        port,
        "POST",
        "/mcp",
        &[
            auth[0],
            auth[1],
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "list_devices", "arguments": {"status": fake_key}}})
        .to_string(),
    );
    assert_eq!(s, 200);

    // The journal's answers: the operator's view of everything, and each entry by id.
    let op_auth = [
        ("x-api-key", op.raw.as_str()),
        ("x-service-client-id", op.client_id.as_str()),
    ];
    let (s, all) = http(port, "GET", "/_sandbox/requests?limit=100", &op_auth, "");
    assert_eq!(s, 200);
    let entries: Value = serde_json::from_str(&all).unwrap();
    let mut answers = all.clone();
    for e in entries["data"].as_array().unwrap() {
        if let Some(account) = e["account_id"].as_str() {
            let (_, one) = http(
                port,
                "GET",
                &format!("/_sandbox/requests?account_id={account}&limit=100"),
                &op_auth,
                "",
            );
            answers.push_str(&one);
        }
    }
    let (_, explained) = http(port, "GET", "/requests/failures?limit=100", &auth, "");
    answers.push_str(&explained);
    assert!(entries["data"].as_array().unwrap().len() >= 10, "{all}");
    assert!(
        answers.contains("[REDACTED]"),
        "the planted fields are shown redacted: {answers}"
    );
    // SIGTERM: the server writes out its buffered log lines as it exits (a SIGKILL on a busy
    // machine can lose every info line, and the check below would read only the startup lines).
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let stopped = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        matches!(child.try_wait(), Ok(Some(_)))
    });
    if !stopped {
        let _ = child.kill();
        let _ = child.wait();
    }

    let journal_files = read_all(&dir.join("signage.db.requests"))
        + &read_all(&dir.join("signage.db.requests-wal"));
    let db_files = read_all(&db) + &read_all(&dir.join("signage.db-wal"));
    let logs = read_all(&log);
    assert!(logs.contains("request"), "the logs were captured: {logs}");
    let key_secret = |raw: &str| raw.rsplit('_').next().unwrap().to_string();
    let everywhere = [
        password.to_string(),
        key_secret(fake_key),
        bearer.to_string(),
        key_secret(&rw.raw),
        key_secret(&new_raw),
        "CanaryWebhookSecret".to_string(),
        key_secret(&op.raw),
    ];
    for canary in &everywhere {
        assert!(
            !answers.contains(canary.as_str()),
            "the journal's answers hold {canary}"
        );
        assert!(
            !journal_files.contains(canary.as_str()),
            "the journal's files hold {canary}"
        );
        assert!(!logs.contains(canary.as_str()), "the logs hold {canary}");
        assert!(
            !db_files.contains(canary.as_str()),
            "the database files hold {canary}"
        );
    }
    // The platform keeps a webhook's signing secrets to sign with; the journal never does.
    for secret in [&real_secret, &rotated_secret] {
        let tail = secret.trim_start_matches("whsec_");
        assert!(
            !answers.contains(tail),
            "the journal's answers hold a webhook secret"
        );
        assert!(
            !journal_files.contains(tail),
            "the journal's files hold a webhook secret"
        );
        assert!(!logs.contains(tail), "the logs hold a webhook secret");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
