//! Tests: mcp_transport. The Streamable HTTP rules of `/mcp`, through real HTTP.

use crate::helpers::mcp::{post, post_accept, request, rpc, rpc_error, tool_names, ACCEPT_BOTH};
use crate::helpers::{key, RequestBuilder, TestApp, TestResponse};
use serde_json::{json, Value};

fn initialize(version: &str) -> Value {
    request(
        1,
        "initialize",
        json!({"protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "transport-test", "version": "1.0"}}),
    )
}

/// Opens a session; returns its id.
async fn open_session(app: &TestApp, key_name: &str) -> String {
    let r = post(app, key_name)
        .json(&initialize("2025-11-25"))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.header("mcp-session-id").expect("session id").to_string()
}

fn ping() -> Value {
    request(7, "ping", json!({}))
}

/// The JSON-RPC message of a one-message SSE response, after its priming event (an id, the
/// `retry` field and no data: SEP-1699).
fn sse_message(r: &TestResponse) -> Value {
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let text = r.text();
    assert!(text.ends_with("\n\n"), "{text:?}");
    let events: Vec<&str> = text.trim_end().split("\n\n").collect();
    assert_eq!(events.len(), 2, "{text:?}");
    let priming: Vec<&str> = events[0].lines().collect();
    assert!(
        priming.len() == 3
            && priming[0].starts_with("id: ")
            && priming[1] == "retry: 3000"
            && priming[2] == "data: ",
        "{text:?}"
    );
    let message: Vec<&str> = events[1].lines().collect();
    assert_eq!(message[0], "event: message", "{text:?}");
    assert!(
        message[1].starts_with("id: ") && message[1] != priming[0],
        "{text:?}"
    );
    let data = message[2].strip_prefix("data: ").expect("data");
    serde_json::from_str(data).expect("data is JSON")
}

#[tokio::test]
async fn initialize_negotiates_versions_and_issues_a_session() {
    let app = TestApp::spawn().await;
    for (asked, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let r = post(&app, "northwind-readonly")
            .json(&initialize(asked))
            .send()
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.header("content-type"), Some("application/json"));
        let v = r.json();
        let result = &v["result"];
        assert_eq!(result["protocolVersion"], answered, "asked {asked}");
        assert_eq!(result["serverInfo"]["name"], "signage");
        assert!(result["serverInfo"]["version"].is_string());
        assert_eq!(
            result["capabilities"],
            json!({"tools": {"listChanged": false}, "prompts": {"listChanged": false},
                "resources": {"listChanged": false, "subscribe": false}, "completions": {},
                "extensions": {"io.modelcontextprotocol/ui": {}}})
        );
        let instructions = result["instructions"].as_str().unwrap();
        for word in [
            "prepare_",
            "confirm_change",
            "cancel_change",
            "explicit confirmation",
        ] {
            assert!(instructions.contains(word), "instructions lack {word}");
        }
        let sid = r.header("mcp-session-id").expect("session id");
        // At least 128 random bits, visible ASCII.
        assert!(
            sid.len() >= 32 && sid.bytes().all(|b| b.is_ascii_hexdigit()),
            "{sid}"
        );
    }
    // Two sessions never share an id.
    let a = open_session(&app, "northwind-readonly").await;
    let b = open_session(&app, "northwind-readonly").await;
    assert_ne!(a, b);
}

#[tokio::test]
async fn session_is_used_then_initialized_notification_is_accepted() {
    let app = TestApp::spawn().await;
    let sid = open_session(&app, "northwind-readonly").await;
    let r = post(&app, "northwind-readonly")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await;
    assert_eq!(r.status, 202);
    assert!(r.body.is_empty());
    let r = post(&app, "northwind-readonly")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&request(2, "tools/list", json!({})))
        .send()
        .await;
    assert_eq!(r.status, 200);
    assert!(tool_names(&r.json()["result"]).contains(&"list_companies".to_string()));
}

#[tokio::test]
async fn responses_are_json_or_sse_as_the_client_prefers() {
    let app = TestApp::spawn().await;
    for accept in [
        "application/json, text/event-stream",
        "application/json",
        "*/*",
    ] {
        let r = post_accept(&app, "northwind-readonly", accept)
            .json(&ping())
            .send()
            .await;
        assert_eq!(r.status, 200);
        assert_eq!(
            r.header("content-type"),
            Some("application/json"),
            "{accept}"
        );
        assert_eq!(r.json(), json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
    }
    for accept in ["text/event-stream", "text/event-stream, application/json"] {
        let r = post_accept(&app, "northwind-readonly", accept)
            .json(&ping())
            .send()
            .await;
        assert_eq!(r.status, 200);
        assert_eq!(
            sse_message(&r),
            json!({"jsonrpc": "2.0", "id": 7, "result": {}})
        );
    }
    // A tool call over SSE carries the same result as over JSON.
    let msg = request(
        3,
        "tools/call",
        json!({"name": "list_companies", "arguments": {}}),
    );
    let sse = post_accept(&app, "northwind-readonly", "text/event-stream")
        .json(&msg)
        .send()
        .await;
    let json = post(&app, "northwind-readonly").json(&msg).send().await;
    assert_eq!(sse_message(&sse), json.json());
    // Initialize over SSE still issues the session header.
    let r = post_accept(&app, "northwind-readonly", "text/event-stream")
        .json(&initialize("2025-11-25"))
        .send()
        .await;
    assert!(r.header("mcp-session-id").is_some());
    assert_eq!(sse_message(&r)["result"]["protocolVersion"], "2025-11-25");
    // Neither JSON nor SSE acceptable: 406 before anything runs.
    let r = post_accept(&app, "northwind-readonly", "text/html")
        .json(&ping())
        .send()
        .await;
    assert_eq!(r.status, 406);
}

#[tokio::test]
async fn notifications_and_responses_get_202_without_body() {
    let app = TestApp::spawn().await;
    for msg in [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        json!({"jsonrpc": "2.0", "id": "srv-1", "result": {}}),
        json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -1, "message": "no"}}),
    ] {
        for accept in [ACCEPT_BOTH, "text/event-stream"] {
            let r = post_accept(&app, "northwind-readonly", accept)
                .json(&msg)
                .send()
                .await;
            assert_eq!(r.status, 202, "{msg}");
            assert!(r.body.is_empty());
            assert!(r.header("content-type").is_none());
        }
    }
}

#[tokio::test]
async fn every_request_needs_the_credential() {
    let app = TestApp::spawn().await;
    let sid = open_session(&app, "northwind-readonly").await;
    let k = key("northwind-readonly");
    let revoked = key("northwind-revoked");
    let expired = key("northwind-expired");
    let cases: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("nothing", vec![]),
        ("session only", vec![("mcp-session-id", sid.clone())]),
        (
            "key without client id",
            vec![("authorization", format!("Bearer {}", k.raw))],
        ),
        (
            "client id without key",
            vec![("x-service-client-id", k.client_id.clone())],
        ),
        (
            "malformed key",
            vec![
                ("authorization", "Bearer sgn_test_nope".into()),
                ("x-service-client-id", k.client_id.clone()),
            ],
        ),
        (
            "revoked key",
            vec![
                ("authorization", format!("Bearer {}", revoked.raw)),
                ("x-service-client-id", revoked.client_id.clone()),
            ],
        ),
        (
            "expired key",
            vec![
                ("authorization", format!("Bearer {}", expired.raw)),
                ("x-service-client-id", expired.client_id.clone()),
            ],
        ),
        (
            "wrong client id",
            vec![
                ("authorization", format!("Bearer {}", k.raw)),
                ("x-service-client-id", key("northwind-admin").client_id),
            ],
        ),
    ];
    for (what, headers) in cases {
        for msg in [ping(), initialize("2025-11-25")] {
            let mut b = app.post("/mcp").header("accept", ACCEPT_BOTH);
            for (n, v) in &headers {
                b = b.header(n, v);
            }
            let r = b.json(&msg).send().await;
            let p = r.problem(401);
            assert_eq!(p["title"], "Unauthenticated", "{what}");
            let challenge = r.header("www-authenticate").unwrap_or("");
            assert!(challenge.starts_with("Bearer"), "{what}: {challenge}");
            assert!(!r.text().contains(&k.raw));
            assert!(r.header("mcp-session-id").is_none());
        }
    }
    // DELETE is authenticated too.
    let r = app
        .delete("/mcp")
        .header("mcp-session-id", &sid)
        .send()
        .await;
    r.problem(401);
    assert!(r.header("www-authenticate").is_some());
}

async fn ping_in_session(app: &TestApp, key_name: &str, sid: &str) -> TestResponse {
    post(app, key_name)
        .header("mcp-session-id", sid)
        .json(&ping())
        .send()
        .await
}

async fn end_session(app: &TestApp, key_name: &str, sid: Option<&str>) -> TestResponse {
    let k = key(key_name);
    let mut b = app
        .delete("/mcp")
        .bearer(&k.raw)
        .header("x-service-client-id", &k.client_id);
    if let Some(sid) = sid {
        b = b.header("mcp-session-id", sid);
    }
    b.send().await
}

#[tokio::test]
async fn sessions_are_bound_to_their_key_and_end_with_delete() {
    let app = TestApp::spawn().await;
    let sid = open_session(&app, "northwind-readonly").await;
    assert_eq!(
        ping_in_session(&app, "northwind-readonly", &sid)
            .await
            .status,
        200
    );
    // Another key (even of the same account) cannot use it, and learns nothing about it.
    for other in [
        "northwind-pharmacy-read",
        "northwind-admin",
        "harborview-admin",
    ] {
        let r = ping_in_session(&app, other, &sid).await;
        assert_eq!(r.status, 404, "{other}");
        assert_eq!(r.json()["error"]["code"], -32001);
    }
    // Unknown session.
    let r = ping_in_session(&app, "northwind-readonly", &"0".repeat(48)).await;
    assert_eq!(r.status, 404);
    // Another key cannot end it; the owner can, once.
    assert_eq!(
        end_session(&app, "northwind-admin", Some(&sid))
            .await
            .status,
        404
    );
    assert_eq!(
        ping_in_session(&app, "northwind-readonly", &sid)
            .await
            .status,
        200
    );
    assert_eq!(
        end_session(&app, "northwind-readonly", Some(&sid))
            .await
            .status,
        204
    );
    assert_eq!(
        ping_in_session(&app, "northwind-readonly", &sid)
            .await
            .status,
        404
    );
    assert_eq!(
        end_session(&app, "northwind-readonly", Some(&sid))
            .await
            .status,
        404
    );
    assert_eq!(
        end_session(&app, "northwind-readonly", None).await.status,
        400
    );
    // A new initialize never reuses the ended session.
    let again = open_session(&app, "northwind-readonly").await;
    assert_ne!(again, sid);
    // A sandbox reset forgets sessions.
    signage::mcp::state(&app.app).clear();
    assert_eq!(
        ping_in_session(&app, "northwind-readonly", &again)
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn get_is_405() {
    let app = TestApp::spawn().await;
    let k = key("northwind-readonly");
    let r = app
        .get("/mcp")
        .bearer(&k.raw)
        .header("x-service-client-id", &k.client_id)
        .header("accept", "text/event-stream")
        .send()
        .await;
    r.problem(405);
    let allow = r.header("allow").unwrap_or("");
    assert!(
        allow.contains("POST") && allow.contains("DELETE"),
        "{allow}"
    );
}

#[tokio::test]
async fn protocol_version_header_rules() {
    let app = TestApp::spawn().await;
    for v in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let r = post(&app, "northwind-readonly")
            .header("mcp-protocol-version", v)
            .json(&ping())
            .send()
            .await;
        assert_eq!(r.status, 200, "{v}");
    }
    for v in ["2024-11-05", "2099-01-01", "latest"] {
        let r = post(&app, "northwind-readonly")
            .header("mcp-protocol-version", v)
            .json(&ping())
            .send()
            .await;
        assert_eq!(r.status, 400, "{v}");
        let e = &r.json()["error"];
        assert_eq!(e["code"], -32022);
        assert_eq!(e["data"]["requested"], v);
        let supported: Vec<&str> = e["data"]["supported"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        for s in ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"] {
            assert!(supported.contains(&s));
        }
    }
    // No header and no session: 2025-03-26, the version that still has batches.
    let batch = json!([ping(), request(8, "ping", json!({}))]);
    let r = post(&app, "northwind-readonly").json(&batch).send().await;
    assert_eq!(r.status, 200, "{}", r.text());
    // A session keeps its negotiated version: another supported version in the header is tolerated
    // (the conformance suite sends one), an unsupported one is refused.
    let r = post(&app, "northwind-readonly")
        .json(&initialize("2025-06-18"))
        .send()
        .await;
    let sid = r.header("mcp-session-id").unwrap().to_string();
    let r = post(&app, "northwind-readonly")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&ping())
        .send()
        .await;
    assert_eq!(r.status, 200);
    let r = post(&app, "northwind-readonly")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", "2024-01-01")
        .json(&ping())
        .send()
        .await;
    assert_eq!(r.status, 400);
    for version_header in [Some("2025-06-18"), None] {
        let mut b = post(&app, "northwind-readonly").header("mcp-session-id", &sid);
        if let Some(v) = version_header {
            b = b.header("mcp-protocol-version", v);
        }
        assert_eq!(b.json(&ping()).send().await.status, 200);
        // Batches are gone in the session's 2025-06-18 even without the header.
        let mut b = post(&app, "northwind-readonly").header("mcp-session-id", &sid);
        if let Some(v) = version_header {
            b = b.header("mcp-protocol-version", v);
        }
        assert_eq!(b.json(&batch).send().await.status, 400);
    }
}

#[tokio::test]
async fn origin_and_host_are_checked() {
    let app = TestApp::spawn_with(|l| {
        l.mcp_allowed_origins = Some(vec!["http://allowed.example:3000".into()])
    })
    .await;
    for origin in [
        "http://evil.example",
        "null",
        "http://allowed.example",
        "https://allowed.example:3000",
    ] {
        let r = post(&app, "northwind-readonly")
            .header("origin", origin)
            .json(&ping())
            .send()
            .await;
        assert_eq!(r.status, 403, "{origin}");
        let v = r.json();
        assert_eq!(v["id"], Value::Null);
        assert!(v["error"]["message"].as_str().unwrap().contains("Origin"));
    }
    for origin in [
        "http://allowed.example:3000",
        "HTTP://ALLOWED.EXAMPLE:3000/",
    ] {
        let r = post(&app, "northwind-readonly")
            .header("origin", origin)
            .json(&ping())
            .send()
            .await;
        assert_eq!(r.status, 200, "{origin}");
    }
    // Refused even before the credential is looked at, and on DELETE.
    let r = app
        .post("/mcp")
        .header("origin", "http://evil.example")
        .json(&ping())
        .send()
        .await;
    assert_eq!(r.status, 403);
    let r = app
        .delete("/mcp")
        .header("origin", "http://evil.example")
        .send()
        .await;
    assert_eq!(r.status, 403);
    // Bound to loopback: a rebound host name is refused, loopback names are fine with any port
    // (every address of 127.0.0.0/8 is this machine, as for every route).
    for host in [
        "evil.example",
        "evil.example:8080",
        "192.168.1.20:80",
        "localhost.evil.example",
    ] {
        let r = post(&app, "northwind-readonly")
            .header("host", host)
            .json(&ping())
            .send()
            .await;
        assert_eq!(r.status, 403, "{host}");
        assert!(r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Host"));
    }
    for host in [
        "localhost",
        "localhost:1",
        "127.0.0.1:65535",
        "127.0.0.2:80",
        "[::1]:8080",
    ] {
        let r = post(&app, "northwind-readonly")
            .header("host", host)
            .json(&ping())
            .send()
            .await;
        assert_eq!(r.status, 200, "{host}");
    }
}

#[tokio::test]
async fn origin_is_refused_when_no_origin_is_configured() {
    let app = TestApp::spawn().await;
    for foreign in [
        "http://evil.example",
        "http://127.0.0.1.evil.example:9999",
        "null",
    ] {
        let r = post(&app, "northwind-readonly")
            .header("origin", foreign)
            .json(&ping())
            .send()
            .await;
        assert_eq!(r.status, 403, "{foreign}");
    }
    // Pages on this machine (any port) are not cross-site: an MCP inspector on localhost works.
    for local in [
        "http://127.0.0.1:9999",
        "http://localhost:6274",
        "http://[::1]:3000",
    ] {
        let r = post(&app, "northwind-readonly")
            .header("origin", local)
            .json(&ping())
            .send()
            .await;
        assert_eq!(r.status, 200, "{local}");
    }
    // Clients that send no Origin (every non-browser client) are unaffected.
    assert_eq!(
        post(&app, "northwind-readonly")
            .json(&ping())
            .send()
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn malformed_bodies() {
    let app = TestApp::spawn().await;
    for body in [&b"not json"[..], b"{\"jsonrpc\": \"2.0\", ", b""] {
        let r = post(&app, "northwind-readonly")
            .raw("application/json", body.to_vec())
            .send()
            .await;
        assert_eq!(r.status, 400);
        let v = r.json();
        assert_eq!(v["error"]["code"], -32700);
        assert_eq!(v["id"], Value::Null);
    }
    let r = post(&app, "northwind-readonly")
        .raw("text/plain", "{}")
        .send()
        .await;
    assert_eq!(r.status, 415);
    for (msg, id) in [
        (
            json!({"jsonrpc": "1.0", "id": 4, "method": "ping"}),
            json!(4),
        ),
        (json!({"id": 4, "method": "ping"}), json!(4)),
        (
            json!({"jsonrpc": "2.0", "id": null, "method": "ping"}),
            Value::Null,
        ),
        (json!({"jsonrpc": "2.0", "id": 4, "method": 12}), json!(4)),
        (
            json!({"jsonrpc": "2.0", "id": 4, "method": "ping", "params": 3}),
            json!(4),
        ),
        (json!("ping"), Value::Null),
        (json!({"jsonrpc": "2.0", "id": 4}), json!(4)),
    ] {
        let r = post(&app, "northwind-readonly").json(&msg).send().await;
        assert_eq!(r.status, 400, "{msg}");
        let v = r.json();
        assert_eq!(v["error"]["code"], -32600, "{msg}");
        assert_eq!(v["id"], id, "{msg}");
    }
}

#[tokio::test]
async fn batches_only_in_2025_03_26() {
    let app = TestApp::spawn().await;
    let batch = json!([
        ping(),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        request(9, "tools/list", json!({})),
        request(10, "no/such", json!({})),
        request(11, "initialize", json!({"protocolVersion": "2025-03-26", "capabilities": {}})),
    ]);
    for v in ["2025-06-18", "2025-11-25"] {
        let r = post(&app, "northwind-readonly")
            .header("mcp-protocol-version", v)
            .json(&batch)
            .send()
            .await;
        assert_eq!(r.status, 400, "{v}");
        let e = &r.json()["error"];
        assert_eq!(e["code"], -32600);
        assert!(e["message"].as_str().unwrap().contains("batch"));
    }
    let r = post(&app, "northwind-readonly")
        .header("mcp-protocol-version", "2025-03-26")
        .json(&batch)
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let replies = r.json();
    let replies = replies.as_array().unwrap();
    assert_eq!(
        replies.len(),
        4,
        "one reply per request, none for the notification"
    );
    assert_eq!(replies[0], json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
    assert!(replies[1]["result"]["tools"].is_array());
    assert_eq!(replies[2]["error"]["code"], -32601);
    assert_eq!(
        replies[3]["error"]["code"], -32600,
        "initialize is never batched"
    );
    assert!(r.header("mcp-session-id").is_none());
    // Only notifications: 202.
    let r = post(&app, "northwind-readonly")
        .header("mcp-protocol-version", "2025-03-26")
        .json(&json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]))
        .send()
        .await;
    assert_eq!(r.status, 202);
    // An empty batch is invalid.
    let r = post(&app, "northwind-readonly")
        .header("mcp-protocol-version", "2025-03-26")
        .json(&json!([]))
        .send()
        .await;
    assert_eq!(r.status, 400);
    // Over SSE the batch reply is one event.
    let r = post_accept(&app, "northwind-readonly", "text/event-stream")
        .header("mcp-protocol-version", "2025-03-26")
        .json(&json!([ping()]))
        .send()
        .await;
    assert_eq!(
        sse_message(&r),
        json!([{"jsonrpc": "2.0", "id": 7, "result": {}}])
    );
}

#[tokio::test]
async fn protocol_errors() {
    let app = TestApp::spawn().await;
    let e = rpc_error(&app, "northwind-readonly", "resources/subscribe", json!({})).await;
    assert_eq!(e["code"], -32601);
    let e = rpc_error(&app, "northwind-readonly", "tools/call", json!({})).await;
    assert_eq!(e["code"], -32602);
    let e = rpc_error(
        &app,
        "northwind-readonly",
        "tools/call",
        json!({"name": "list_companies", "arguments": [1]}),
    )
    .await;
    assert_eq!(e["code"], -32602);
    let e = rpc_error(
        &app,
        "northwind-readonly",
        "tools/call",
        json!({"name": "drop_tables", "arguments": {}}),
    )
    .await;
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("Unknown tool"));
    let e = rpc_error(
        &app,
        "northwind-readonly",
        "tools/list",
        json!({"cursor": "bogus"}),
    )
    .await;
    assert_eq!(e["code"], -32602);
    let e = rpc_error(&app, "northwind-readonly", "initialize", json!({})).await;
    assert_eq!(e["code"], -32602);
    // A tool without arguments may be called with none at all, or with an empty object.
    let r = rpc(
        &app,
        "northwind-readonly",
        "tools/call",
        json!({"name": "service_health_check"}),
    )
    .await;
    assert_eq!(r["isError"], false);
}

#[tokio::test]
async fn tools_list_pages_with_a_cursor() {
    let app = TestApp::spawn().await;
    let first = rpc(&app, "northwind-admin", "tools/list", json!({})).await;
    let names = tool_names(&first);
    assert!(!names.is_empty());
    // Everything fits one page today; a cursor past the end is refused.
    assert!(first.get("nextCursor").is_none());
    let e = rpc_error(
        &app,
        "northwind-admin",
        "tools/list",
        json!({"cursor": "dG9vbHM6OTk5"}),
    )
    .await;
    assert_eq!(e["code"], -32602);
    // The cursor of the end is an empty page.
    let end = rpc(
        &app,
        "northwind-admin",
        "tools/list",
        json!({"cursor": base64_cursor(names.len())}),
    )
    .await;
    assert_eq!(tool_names(&end), Vec::<String>::new());
}

fn base64_cursor(offset: usize) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("tools:{offset}"))
}

// --- The stateless revision (2026-07-28): what the Python SDK 2.x sends after `server/discover`.

const MODERN: &str = "2026-07-28";

fn modern_params(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "modern-test", "version": "1.0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    params
}

fn modern_post<'a>(app: &'a TestApp, method: &str) -> RequestBuilder<'a> {
    modern_post_accept(app, method, ACCEPT_BOTH)
}

fn modern_post_accept<'a>(app: &'a TestApp, method: &str, accept: &str) -> RequestBuilder<'a> {
    post_accept(app, "northwind-readonly", accept)
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", method)
}

/// An `initialize` sent as a 2026-07-28 request (its header, or its `_meta` version) asks for a
/// method that revision removed: 404 and Method not found, never a 2025-11-25 session opened
/// behind the client's back (conformance `sep-2575-http-server-method-not-found-404-initialize`).
/// The same `initialize` without them is the handshake, negotiated down as the lifecycle says.
#[tokio::test]
async fn a_modern_initialize_is_method_not_found_and_opens_no_session() {
    let app = TestApp::spawn().await;
    let init = json!({"protocolVersion": MODERN, "capabilities": {},
        "clientInfo": {"name": "modern-test", "version": "1.0"}});
    let by_header_and_meta = modern_post(&app, "initialize")
        .json(&request(1, "initialize", modern_params(init.clone())))
        .send()
        .await;
    let by_meta_alone = post(&app, "northwind-readonly")
        .json(&request(2, "initialize", modern_params(json!({}))))
        .send()
        .await;
    assert_eq!(
        by_header_and_meta.status,
        404,
        "{}",
        by_header_and_meta.text()
    );
    let e = by_header_and_meta.json();
    assert_eq!(e["error"]["code"], -32601, "{e}");
    let message = e["error"]["message"].as_str().unwrap();
    assert!(message.contains("server/discover"), "{message}");
    // A `_meta` version without the mirrored headers is a modern request with a bad envelope.
    assert_eq!(by_meta_alone.status, 400, "{}", by_meta_alone.text());
    assert_eq!(by_meta_alone.json()["error"]["code"], -32020);
    for r in [&by_header_and_meta, &by_meta_alone] {
        assert!(r.header("mcp-session-id").is_none(), "{}", r.text());
        assert!(r.json().get("result").is_none());
    }
    // The handshake itself is unchanged: no header, no `_meta`, a session on 2025-11-25.
    let r = post(&app, "northwind-readonly")
        .json(&initialize(MODERN))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-11-25");
    assert!(r.header("mcp-session-id").is_some());
}

#[tokio::test]
async fn server_discover_and_stateless_requests() {
    let app = TestApp::spawn().await;
    let r = modern_post(&app, "server/discover")
        .json(&request(1, "server/discover", modern_params(json!({}))))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.header("mcp-session-id").is_none(),
        "no sessions in 2026-07-28"
    );
    let d = &r.json()["result"];
    assert_eq!(d["resultType"], "complete");
    let versions: Vec<&str> = d["supportedVersions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(versions[0], MODERN);
    assert!(versions.contains(&"2025-11-25"));
    assert_eq!(d["capabilities"]["tools"]["listChanged"], false);
    assert_eq!(
        d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "signage"
    );
    assert!(d["instructions"]
        .as_str()
        .unwrap()
        .contains("confirm_change"));
    assert!(d["ttlMs"].as_u64().is_some());
    assert_eq!(d["cacheScope"], "public");

    let r = modern_post(&app, "tools/list")
        .json(&request(2, "tools/list", modern_params(json!({}))))
        .send()
        .await;
    assert_eq!(r.status, 200);
    let l = &r.json()["result"];
    assert_eq!(l["resultType"], "complete");
    assert_eq!(l["cacheScope"], "private");
    assert!(l["ttlMs"].as_u64().is_some());
    assert!(tool_names(l).contains(&"list_companies".to_string()));

    // Mcp-Name may be plain or base64-wrapped; the SSE framing works the same.
    for name_header in ["list_companies", "=?base64?bGlzdF9jb21wYW5pZXM=?="] {
        let r = modern_post_accept(&app, "tools/call", "text/event-stream")
            .header("mcp-name", name_header)
            .json(&request(
                3,
                "tools/call",
                modern_params(json!({"name": "list_companies", "arguments": {}})),
            ))
            .send()
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
        let c = &sse_message(&r)["result"];
        assert_eq!(c["resultType"], "complete");
        assert_eq!(c["isError"], false);
        assert_eq!(c["structuredContent"]["object"], "list");
        assert_eq!(
            c["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "signage"
        );
    }
    // A session header is ignored on this revision.
    let r = modern_post(&app, "tools/list")
        .header("mcp-session-id", "whatever")
        .json(&request(2, "tools/list", modern_params(json!({}))))
        .send()
        .await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn stateless_envelope_errors_are_modern_errors() {
    let app = TestApp::spawn().await;
    let cases: Vec<(RequestBuilder<'_>, Value, u16, i64)> = vec![
        // Mcp-Method disagrees with the body.
        (
            modern_post(&app, "tools/call"),
            request(1, "tools/list", modern_params(json!({}))),
            400,
            -32020,
        ),
        // Mcp-Name missing.
        (
            modern_post(&app, "tools/call"),
            request(
                1,
                "tools/call",
                modern_params(json!({"name": "list_companies", "arguments": {}})),
            ),
            400,
            -32020,
        ),
        // No _meta.
        (
            modern_post(&app, "tools/list"),
            request(1, "tools/list", json!({})),
            400,
            -32602,
        ),
        // Header says 2026-07-28, body another version.
        (
            modern_post(&app, "tools/list"),
            request(1, "tools/list", {
                let mut p = modern_params(json!({}));
                p["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
                p
            }),
            400,
            -32020,
        ),
        // Methods of the handshake era do not exist here.
        (
            modern_post(&app, "ping"),
            request(1, "ping", modern_params(json!({}))),
            404,
            -32601,
        ),
        // An unknown tool is invalid params.
        (
            modern_post(&app, "tools/call").header("mcp-name", "nope"),
            request(
                1,
                "tools/call",
                modern_params(json!({"name": "nope", "arguments": {}})),
            ),
            400,
            -32602,
        ),
        // server/discover without the headers.
        (
            post(&app, "northwind-readonly"),
            request(1, "server/discover", modern_params(json!({}))),
            400,
            -32020,
        ),
    ];
    for (b, body, status, code) in cases {
        let r = b.json(&body).send().await;
        assert_eq!(r.status, status, "{body}: {}", r.text());
        assert_eq!(r.header("content-type"), Some("application/json"));
        let v = r.json();
        assert_eq!(v["error"]["code"], code, "{body}");
        assert_eq!(v["id"], 1);
    }
    // A version the server does not speak, in header and body alike: -32022 naming what it speaks.
    let mut p = modern_params(json!({}));
    p["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2027-01-01");
    let r = post(&app, "northwind-readonly")
        .header("mcp-protocol-version", "2027-01-01")
        .header("mcp-method", "server/discover")
        .json(&request(1, "server/discover", p))
        .send()
        .await;
    assert_eq!(r.status, 400);
    let e = &r.json()["error"];
    assert_eq!(e["code"], -32022);
    assert!(e["data"]["supported"]
        .as_array()
        .unwrap()
        .contains(&json!(MODERN)));
    // Batches do not exist in 2026-07-28.
    let r = modern_post(&app, "tools/list")
        .json(&json!([request(1, "tools/list", modern_params(json!({})))]))
        .send()
        .await;
    assert_eq!(r.status, 400);
    // And the credential is still required.
    let r = app
        .post("/mcp")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "server/discover")
        .json(&request(1, "server/discover", modern_params(json!({}))))
        .send()
        .await;
    r.problem(401);
}

#[tokio::test]
async fn the_mcp_envelope_is_not_audited_twice() {
    let app = TestApp::spawn().await;
    let count = |app: &TestApp| -> i64 {
        app.sql(|c| c.query_row("SELECT count(*) FROM audit_log", [], |r| r.get(0)))
    };
    let before = count(&app);
    let call = request(
        7,
        "tools/call",
        json!({"name": "list_companies", "arguments": {}}),
    );
    let r = post(&app, "northwind-readonly").json(&call).send().await;
    assert_eq!(r.status, 200, "{}", r.text());
    // A read through MCP writes no audit row (neither for the envelope nor for the GET it becomes).
    assert_eq!(count(&app), before);
    // An authentication failure on /mcp is refused before any tool runs, and audited.
    let r = app
        .post("/mcp")
        .header("accept", "application/json, text/event-stream")
        .json(&call)
        .send()
        .await;
    assert_eq!(r.status, 401);
    let last: (String, i64, String) = app.sql(|c| {
        c.query_row(
            "SELECT route, status, outcome FROM audit_log ORDER BY id DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
    });
    assert_eq!(
        last,
        ("/mcp".to_string(), 401, "missing_credential".to_string())
    );
    assert_eq!(count(&app), before + 1);
}

/// `resources/read` on 2026-07-28: cache hints like every other result, and a resource that is
/// not found is Invalid params with its URI in `data` (SEP-2164); 2025-11-25 keeps -32002.
#[tokio::test]
async fn a_modern_resource_read_carries_cache_hints_and_sep_2164_not_found() {
    let app = TestApp::spawn().await;
    let company = crate::helpers::company_id("Northwind Grocers");
    let read = |uri: String| {
        modern_post(&app, "resources/read")
            .json(&request(
                1,
                "resources/read",
                modern_params(json!({ "uri": uri })),
            ))
            .send()
    };
    let r = read(format!("signage://companies/{company}")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let result = &r.json()["result"];
    assert!(result["ttlMs"].as_u64().is_some(), "{result}");
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(
        result["contents"][0]["uri"],
        format!("signage://companies/{company}")
    );

    let missing = "signage://companies/cmp_0000000000zzzzzzzzzz".to_string();
    let r = read(missing.clone()).await;
    let e = &r.json()["error"];
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(e["data"]["uri"], missing);
}
