//! Deterministic runs (issue 10, item 3): two sandboxes started frozen and seeded, given the same
//! scripted sequence of reads, writes, clock advances and MCP calls, answer byte-identical bodies.
//!
//! Each sandbox is a real child process of the binary (`serve --port 0 --database :memory:
//! --clock ... --seed 7`), so nothing shared inside the test process (a thread-local generator, a
//! process-wide counter, one temp directory entry) can hide a difference. Without `--seed` the same
//! script must give different secrets: a seed is what makes them predictable, nothing else.

use crate::helpers::key;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Method;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

const CLOCK: &str = "2026-03-02T09:00:00Z";

/// A `signage serve` child process, killed when dropped.
pub(crate) struct Sandbox {
    child: Child,
    base: String,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Drop for Sandbox {
    /// SIGTERM first, so the server shuts down and removes its throw-away database file; SIGKILL
    /// if it is still there after a few seconds.
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        for _ in 0..50 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sandbox {
    fn start(seed: Option<u64>) -> Sandbox {
        Sandbox::start_with(seed, &[])
    }

    /// Started with extra `SIGNAGE_*` variables.
    pub(crate) fn start_with(seed: Option<u64>, env: &[(&str, &str)]) -> Sandbox {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_signage"));
        cmd.envs(env.iter().copied());
        cmd.args([
            "serve",
            "--port",
            "0",
            "--database",
            ":memory:",
            "--clock",
            CLOCK,
        ]);
        if let Some(s) = seed {
            cmd.args(["--seed", &s.to_string()]);
        }
        let mut child = cmd
            .env_remove("SIGNAGE_CLOCK")
            .env_remove("SIGNAGE_SEED")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start signage serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("first stdout line");
        // "signage listening on http://127.0.0.1:PORT (MCP at .../mcp)"
        let base = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .to_string();
        Sandbox {
            child,
            base,
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    /// One request; returns (status, headers, body).
    pub(crate) async fn call(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> (u16, hyper::HeaderMap, Bytes) {
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(format!("{}{}", self.base, path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let body = match body {
            Some(v) => {
                req = req.header("content-type", "application/json");
                Bytes::from(serde_json::to_vec(v).unwrap())
            }
            None => Bytes::new(),
        };
        let resp = self
            .client
            .request(req.body(Full::new(body)).unwrap())
            .await
            .expect("request");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        (status, headers, bytes)
    }
}

/// What a script saw: one labelled body (or header) per step, in order.
type Transcript = Vec<(String, Bytes)>;

pub(crate) fn demo(name: &str) -> Vec<(String, String)> {
    let k = key(name);
    vec![
        ("x-api-key".into(), k.raw),
        ("x-service-client-id".into(), k.client_id),
    ]
}

fn mcp_headers(name: &str, session: Option<&str>) -> Vec<(String, String)> {
    let k = key(name);
    let mut h = vec![
        ("authorization".into(), format!("Bearer {}", k.raw)),
        ("x-service-client-id".into(), k.client_id),
        (
            "accept".into(),
            "application/json, text/event-stream".into(),
        ),
        ("mcp-protocol-version".into(), "2025-11-25".into()),
    ];
    if let Some(s) = session {
        h.push(("mcp-session-id".into(), s.into()));
    }
    h
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Runs the script against one sandbox.
async fn script(s: &Sandbox) -> Transcript {
    let mut out: Transcript = Vec::new();
    macro_rules! step {
        ($label:expr, $method:expr, $path:expr, $headers:expr, $body:expr) => {{
            let h: Vec<(String, String)> = $headers;
            let refs: Vec<(&str, &str)> = h.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
            let (status, headers, body) = s.call($method, $path, &refs, $body).await;
            out.push((
                format!("{} status", $label),
                Bytes::from(status.to_string()),
            ));
            // The headers a frozen, seeded run fixes too (the rate-limit ones run on real time).
            for name in ["request-id", "date", "etag", "location", "mcp-session-id"] {
                if let Some(v) = headers.get(name) {
                    let v = Bytes::copy_from_slice(v.as_bytes());
                    out.push((format!("{} {name}", $label), v));
                }
            }
            out.push(($label.to_string(), body.clone()));
            let session = headers
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(String::from);
            (status, session, body)
        }};
    }
    let json_of = |b: &Bytes| -> Value { serde_json::from_slice(b).unwrap_or(Value::Null) };

    // Reads of the fixtures.
    for path in [
        "/companies",
        "/devices?limit=50",
        "/promotions?limit=50",
        "/ads?limit=50",
        "/invoices",
    ] {
        step!(path, Method::GET, path, demo("northwind-readonly"), None);
    }
    step!(
        "clock",
        Method::GET,
        "/_sandbox/clock",
        demo("sandbox-operator"),
        None
    );
    // A problem body carries the request id.
    step!(
        "404",
        Method::GET,
        "/devices/dev_0000000000000000000000",
        demo("northwind-readonly"),
        None
    );

    // Writes: a new ad (id, timestamps), a webhook (server-made secret), an API key (raw key).
    let companies = json_of(
        &out.iter()
            .find(|(l, _)| l == "/companies")
            .map(|(_, b)| b.clone())
            .unwrap_or_default(),
    );
    let company = companies["data"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (_, _, ad) = step!(
        "POST /ads",
        Method::POST,
        "/ads",
        demo("northwind-readwrite"),
        Some(&json!({"company_id": company, "name": "Seeded", "headline": "Same on both"}))
    );
    let ad_id = json_of(&ad)["id"].as_str().unwrap_or_default().to_string();
    step!(
        "POST /webhooks",
        Method::POST,
        "/webhooks",
        demo("northwind-readwrite"),
        Some(
            &json!({"company_id": company, "url": "https://hooks.example.com/signage",
            "event_types": ["ad.created", "promotion.started"]})
        )
    );
    let (_, _, clients) = step!(
        "GET /api-clients",
        Method::GET,
        "/api-clients",
        demo("northwind-admin"),
        None
    );
    let client = json_of(&clients)["data"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    step!(
        "POST /api-keys",
        Method::POST,
        "/api-keys",
        demo("northwind-admin"),
        Some(&json!({"client_id": client, "name": "seeded key", "scopes": ["read"]}))
    );
    step!(
        "login",
        Method::POST,
        "/auth/login",
        vec![],
        Some(&json!({"username": "demo@northwind.example", "password": "northwind-demo-2026"}))
    );

    // The clock moves: what happened on the way, and the world after it.
    step!(
        "advance 1 day",
        Method::POST,
        "/_sandbox/clock/advance",
        demo("sandbox-operator"),
        Some(&json!({"seconds": 86_400}))
    );
    step!(
        "devices after",
        Method::GET,
        "/devices?limit=50",
        demo("northwind-readonly"),
        None
    );

    // MCP: a session, the catalogue, a read tool, a two-step write.
    let (_, session, _) = step!(
        "mcp initialize",
        Method::POST,
        "/mcp",
        mcp_headers("northwind-readwrite", None),
        Some(&rpc(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "determinism", "version": "1.0"}})
        ))
    );
    let session = session.unwrap_or_default();
    out.push(("mcp session id".into(), Bytes::from(session.clone())));
    let sid = Some(session.as_str());
    step!(
        "mcp tools/list",
        Method::POST,
        "/mcp",
        mcp_headers("northwind-readwrite", sid),
        Some(&rpc(2, "tools/list", json!({})))
    );
    step!(
        "mcp list_devices",
        Method::POST,
        "/mcp",
        mcp_headers("northwind-readwrite", sid),
        Some(&rpc(
            3,
            "tools/call",
            json!({"name": "list_devices", "arguments": {}})
        ))
    );
    let (_, _, prepared) = step!(
        "mcp prepare",
        Method::POST,
        "/mcp",
        mcp_headers("northwind-readwrite", sid),
        Some(&rpc(
            4,
            "tools/call",
            json!({"name": "prepare_ad_change",
                "arguments": {"ad_id": ad_id, "changes": {"headline": "Confirmed"}}})
        ))
    );
    let confirmation = json_of(&prepared)["result"]["structuredContent"]["confirmation_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    step!(
        "mcp confirm",
        Method::POST,
        "/mcp",
        mcp_headers("northwind-readwrite", sid),
        Some(&rpc(
            5,
            "tools/call",
            json!({"name": "confirm_change", "arguments": {"confirmation_id": confirmation}})
        ))
    );

    // The audit trail of all of it (request ids, instants) and a second advance.
    step!(
        "advance to",
        Method::POST,
        "/_sandbox/clock/advance",
        demo("sandbox-operator"),
        Some(&json!({"to": "2026-03-20T00:00:00Z"}))
    );
    step!(
        "audit log",
        Method::GET,
        "/audit-log?limit=100",
        demo("northwind-admin"),
        None
    );
    step!(
        "ads after",
        Method::GET,
        "/ads?limit=50",
        demo("northwind-readonly"),
        None
    );
    out
}

fn text(b: &Bytes) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A login answer with its token replaced by its subject: a login token is issued on the wall
/// clock (never the sandbox clock), so it is the one body a seeded, frozen sandbox cannot repeat.
fn without_wall_clock_token(b: &Bytes) -> String {
    let mut v: Value = serde_json::from_slice(b).expect("login answers JSON");
    let token = v["access_token"].as_str().expect("a token").to_string();
    let payload = token.split('.').nth(1).expect("a JWT");
    let claims: Value = serde_json::from_slice(
        &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, payload)
            .expect("base64url"),
    )
    .expect("claims");
    v["access_token"] = claims["sub"].clone();
    v.to_string()
}

#[tokio::test]
async fn two_seeded_frozen_sandboxes_answer_byte_identical_bodies() {
    let (a, b) = (Sandbox::start(Some(7)), Sandbox::start(Some(7)));
    let (ta, tb) = (script(&a).await, script(&b).await);
    assert_eq!(ta.len(), tb.len());
    for ((label, x), (_, y)) in ta.iter().zip(&tb) {
        let (x, y) = if label == "login" {
            (without_wall_clock_token(x), without_wall_clock_token(y))
        } else {
            (text(x), text(y))
        };
        assert_eq!(x, y, "`{label}` differs between two sandboxes seeded alike");
    }
    // The script did what it says (not byte-identical failures).
    let find = |label: &str| {
        ta.iter()
            .find(|(l, _)| l == label)
            .map(|(_, b)| text(b))
            .unwrap()
    };
    for label in [
        "POST /ads status",
        "POST /webhooks status",
        "POST /api-keys status",
    ] {
        assert_eq!(find(label), "201", "{label}");
    }
    for label in ["login status", "advance 1 day status", "mcp confirm status"] {
        assert_eq!(find(label), "200", "{label}");
    }
    assert!(find("POST /api-keys").contains("\"rawKey\":\"sgn_"));
    assert!(find("POST /webhooks").contains("\"secret\""));
    assert!(!find("mcp session id").is_empty());
    assert!(
        find("mcp confirm").contains("\"applied\""),
        "{}",
        find("mcp confirm")
    );
    assert!(find("advance 1 day").contains("device.offline"));
    // Dated by the frozen clock, not the wall's.
    assert_eq!(find("clock date"), "Mon, 02 Mar 2026 09:00:00 GMT");
    assert_eq!(find("advance to date"), "Fri, 20 Mar 2026 00:00:00 GMT");
}

#[tokio::test]
async fn without_a_seed_the_secrets_differ() {
    let (a, b) = (Sandbox::start(None), Sandbox::start(None));
    let (ka, kb) = (new_raw_key(&a).await, new_raw_key(&b).await);
    assert_ne!(ka, kb, "unseeded sandboxes must not repeat secrets");
}

/// Creates an API key as the Northwind admin; returns its raw key.
async fn new_raw_key(s: &Sandbox) -> String {
    let body = json!({"client_id": key("northwind-admin").client_id, "name": "unseeded",
        "scopes": ["read"]});
    let h = demo("northwind-admin");
    let refs: Vec<(&str, &str)> = h.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let (status, _, body) = s.call(Method::POST, "/api-keys", &refs, Some(&body)).await;
    assert_eq!(status, 201, "{}", text(&body));
    let v: Value = serde_json::from_slice(&body).unwrap();
    v["rawKey"].as_str().unwrap().to_string()
}
