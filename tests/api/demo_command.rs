//! `signage demo`: the binary started as a presenter would, on an explicit loopback address (tests
//! bind 127.0.0.1 only). Its startup output holds one-click sign-in links for the console and two
//! players (each works once; Enter prints fresh ones and a fresh QR code), the demo key for curl and a terminal QR code;
//! its log keeps to warnings; the service behind it runs on the running clock with the fleet, and its
//! QR codes encode the public base URL.

use crate::helpers::key;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The demo process, killed when the test ends however it ends; its later output and its log.
struct Demo(
    Child,
    mpsc::Receiver<String>,
    std::sync::Arc<std::sync::Mutex<String>>,
);

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `signage demo` with `args`; returns it and its startup output (to its last line).
fn start(args: &[&str]) -> (Demo, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_signage"))
        .arg("demo")
        .args(args)
        .env("SIGNAGE_RATE_LIMIT_PER_SECOND", "0")
        .env_remove("SIGNAGE_LOG_LEVEL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let into = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            into.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    let mut lines = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(60)) {
        let last = line.contains("Ctrl-C to stop");
        lines.push(line);
        if last {
            break;
        }
    }
    (Demo(child, rx, log), lines)
}

/// A POST with a JSON body and a `Host` header of its own, over a fresh connection.
fn post(base: &str, path: &str, host: &str, body: &str) -> (u16, String) {
    let addr = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let status = raw[9..12].parse().unwrap();
    let body = raw.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (status, body.to_string())
}

/// The token of a sign-in link (`…#signin=<64 hex digits>`).
fn token(link: &str) -> String {
    let (_, t) = link
        .split_once("#signin=")
        .unwrap_or_else(|| panic!("not a sign-in link: {link}"));
    assert!(
        t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit()),
        "{link}"
    );
    t.to_string()
}

/// A GET with the demo key, over a fresh connection: (status, body).
fn get(base: &str, path: &str, key_name: &str) -> (u16, String) {
    let k = key(key_name);
    let host = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(host).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nX-API-Key: {}\r\nX-Service-Client-Id: {}\r\nConnection: close\r\n\r\n",
        k.raw, k.client_id
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let status = raw[9..12].parse().unwrap();
    let body = raw.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (status, body.to_string())
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// The value after `label` on the line that starts with it.
fn after<'a>(lines: &'a [String], label: &str) -> Vec<&'a str> {
    lines
        .iter()
        .filter_map(|l| l.trim_start().strip_prefix(label))
        .map(|rest| rest.split_whitespace().next().unwrap_or_default())
        .collect()
}

#[test]
fn demo_prints_what_a_presenter_opens_and_serves_a_live_world() {
    let (mut demo, lines) = start(&["--listen", "127.0.0.1:0"]);
    let first = lines.first().cloned().unwrap_or_default();
    assert!(
        first.starts_with("signage demo listening on http://127.0.0.1:"),
        "{lines:#?}"
    );
    let base = first
        .split_whitespace()
        .nth(4)
        .unwrap()
        .trim_end_matches('/')
        .to_string();

    // One link signs the console in: as the demo key, with the operator's controls; once.
    let console = after(&lines, "Console");
    assert_eq!(console.len(), 1, "{lines:#?}");
    assert!(
        console[0].starts_with(&format!("{base}/console#signin=")),
        "{lines:#?}"
    );
    let host = base.trim_start_matches("http://");
    let body = format!("{{\"token\":\"{}\"}}", token(console[0]));
    let (status, session) = post(&base, "/auth/sign-in", host, &body);
    assert_eq!(status, 200, "{session}");
    let session = json(&session);
    assert_eq!(session["scope"], "read write sandbox");
    assert_eq!(session["path"], "/console");
    assert_eq!(
        post(&base, "/auth/sign-in", host, &body).0,
        401,
        "a link works once"
    );
    let players = after(&lines, "Player");
    assert_eq!(players.len(), 2, "{lines:#?}");
    for (player, name) in players
        .iter()
        .zip(["Entrance Screen 1", "Checkout Screen 1"])
    {
        // The player's link is a screen's: no `sandbox` (the console's link has it), no admin.
        let host = base.trim_start_matches("http://");
        let body = format!("{{\"token\":\"{}\"}}", token(player));
        let (status, session) = post(&base, "/auth/sign-in", host, &body);
        assert_eq!(status, 200, "{session}");
        let scope = json(&session)["scope"].as_str().unwrap().to_string();
        assert!(
            !scope.contains("sandbox") && !scope.contains("admin"),
            "{scope}"
        );
        let path = player
            .strip_prefix(&base)
            .unwrap()
            .split('#')
            .next()
            .unwrap();
        assert_eq!(get(&base, path, "northwind-readwrite").0, 200);
        let id = path.trim_start_matches("/player/");
        let (status, device) = get(&base, &format!("/devices/{id}"), "northwind-readwrite");
        assert_eq!(status, 200);
        assert_eq!(json(&device)["name"], name);
        // The screens printed play the fixture video and photo.
        let (_, ads) = get(&base, &format!("/devices/{id}/ads"), "northwind-readwrite");
        let media: Vec<String> = json(&ads)["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| a["media_id"].as_str().map(String::from))
            .collect();
        let types: Vec<String> = media
            .iter()
            .map(|m| {
                let (_, body) = get(&base, &format!("/media/{m}"), "northwind-readwrite");
                json(&body)["content_type"].as_str().unwrap().to_string()
            })
            .collect();
        assert!(types.iter().any(|t| t == "video/mp4"), "{types:?}");
        assert!(types.iter().any(|t| t == "image/jpeg"), "{types:?}");
    }
    // The demo key for curl and MCP clients; no operator key to paste (the link carries the scope).
    let demo_key = key("northwind-readwrite");
    assert_eq!(after(&lines, "API key"), [demo_key.raw.as_str()]);
    assert!(lines.iter().any(|l| l.contains(&demo_key.client_id)));
    let operator = key("sandbox-operator");
    assert!(
        !lines.iter().any(|l| l.contains(&operator.raw)),
        "{lines:#?}"
    );
    // Bound to loopback (as tests must): the presenter is told phones cannot reach it.
    assert!(
        lines
            .iter()
            .any(|l| l.contains("WARNING") && l.contains("phones cannot")),
        "{lines:#?}"
    );
    // A terminal QR code: rows of half blocks.
    let qr_rows = |lines: &[String]| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l.contains('▄') || l.contains('▀'))
            .cloned()
            .collect()
    };
    let qr = qr_rows(&lines);
    assert!(qr.len() >= 10, "{lines:#?}");

    // A running clock with the simulated fleet, and QR codes that encode the public base URL.
    let (_, clock) = get(&base, "/_sandbox/clock", "sandbox-operator");
    let clock = json(&clock);
    assert_eq!(clock["mode"], "system", "{clock}");
    let (_, devices) = get(
        &base,
        "/devices?status=online&limit=100",
        "northwind-readwrite",
    );
    assert!(!json(&devices)["data"].as_array().unwrap().is_empty());
    let (_, promos) = get(&base, "/promotions?limit=100", "northwind-readwrite");
    let promo = json(&promos)["data"][0]["id"].as_str().unwrap().to_string();
    let (_, codes) = get(
        &base,
        &format!("/promotions/{promo}/qr-codes"),
        "northwind-readwrite",
    );
    for code in json(&codes)["data"].as_array().unwrap() {
        assert!(
            code["short_url"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{base}/q/")),
            "{code}"
        );
    }
    // Enter prints fresh links and a fresh QR code for the phone (a link works once, for 10
    // minutes; the phone's too).
    let Demo(child, rx, log) = &mut demo;
    writeln!(child.stdin.as_mut().unwrap()).unwrap();
    let mut fresh = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(20)) {
        let done = line.contains("Ctrl-C to stop");
        fresh.push(line);
        if done {
            break;
        }
    }
    let again = after(&fresh, "Console");
    assert_eq!(again.len(), 1, "{fresh:#?}");
    assert_ne!(token(again[0]), token(console[0]));
    assert_eq!(after(&fresh, "Player").len(), 2, "{fresh:#?}");
    let fresh_qr = qr_rows(&fresh);
    assert!(fresh_qr.len() >= 10, "{fresh:#?}");
    assert_ne!(fresh_qr, qr, "the fresh QR code encodes a fresh link");
    assert!(
        fresh
            .iter()
            .any(|l| l.contains("Scan to open the console on a phone")),
        "{fresh:#?}"
    );
    // The terminal keeps to the banner and warnings: the requests above logged nothing.
    let log = log.lock().unwrap().clone();
    assert!(!log.contains(" INFO "), "{log}");
}

#[test]
fn demo_takes_the_public_base_url_phones_use() {
    let (_demo, lines) = start(&[
        "--listen",
        "127.0.0.1:0",
        "--public-base-url",
        "http://signage-demo.example:8080",
    ]);
    let first = lines.first().cloned().unwrap_or_default();
    let bound = first.split_whitespace().nth(4).unwrap().to_string();
    assert!(bound.starts_with("http://127.0.0.1:"), "{first}");
    let console = after(&lines, "Console");
    assert!(
        console.len() == 1
            && console[0].starts_with("http://signage-demo.example:8080/console#signin="),
        "{lines:#?}"
    );
    // Redeemed at the public base's host (what the phone and the presenter's browser send).
    let body = format!("{{\"token\":\"{}\"}}", token(console[0]));
    assert_eq!(post(&bound, "/auth/sign-in", "evil.example", &body).0, 403);
    assert_eq!(
        post(&bound, "/auth/sign-in", "signage-demo.example:8080", &body).0,
        200
    );
    assert!(!lines.iter().any(|l| l.contains("WARNING")), "{lines:#?}");
    let (_, promos) = get(&bound, "/promotions?limit=1", "northwind-readwrite");
    let promo = json(&promos)["data"][0]["id"].as_str().unwrap().to_string();
    let (_, codes) = get(
        &bound,
        &format!("/promotions/{promo}/qr-codes"),
        "northwind-readwrite",
    );
    let short = json(&codes)["data"][0]["short_url"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        short.starts_with("http://signage-demo.example:8080/q/"),
        "{short}"
    );
}
