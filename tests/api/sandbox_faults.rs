//! Fault injection: the operator's rules (`/_sandbox/faults`) and `Prefer: code=`/`delay=`,
//! applied after authentication and the scope check, never to `/_sandbox/*` or public routes.

use crate::helpers::{key, mcp, TestApp};
use crate::sandbox_clock::{frozen, FROZEN_AT};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const OP: &str = "sandbox-operator";

async fn add(app: &TestApp, rule: Value) -> Value {
    let r = app
        .post("/_sandbox/faults")
        .key(OP)
        .json(&rule)
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

#[tokio::test]
async fn a_status_fault_answers_its_problem_until_its_times_run_out() {
    let app = frozen().await;
    let rule = add(
        &app,
        json!({"match": {"operation_id": "listDevices"},
               "action": {"type": "status", "status": 503, "detail": "Scheduled maintenance.", "retry_after": 7},
               "times": 2}),
    )
    .await;
    let id = rule["id"].as_str().unwrap();
    assert!(id.starts_with("flt_"), "{rule}");
    assert_eq!(rule["remaining"], 2);

    for _ in 0..2 {
        let r = app.get("/devices").key("northwind-readonly").send().await;
        assert_eq!(r.status, 503);
        assert_eq!(r.header("signage-fault"), Some(id));
        assert_eq!(r.header("retry-after"), Some("7"));
        assert_eq!(r.header("content-type"), Some("application/problem+json"));
        let p = r.json();
        assert_eq!(p["status"], 503);
        assert_eq!(p["code"], "injected_fault");
        assert_eq!(p["fault"], id);
        assert_eq!(p["detail"], "Scheduled maintenance.");
    }
    // Exhausted: the request runs again, unmarked; other operations were never touched.
    let r = app.get("/devices").key("northwind-readonly").send().await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("signage-fault"), None);
    let r = app.get("/companies").key("northwind-readonly").send().await;
    assert_eq!(r.status, 200);

    let list = app.get("/_sandbox/faults").key(OP).send().await.ok();
    assert_eq!(list["data"][0]["id"], id);
    assert_eq!(list["data"][0]["remaining"], 0);
    assert_eq!(list["data"][0]["fired"], 2);
}

#[tokio::test]
async fn a_rule_matches_on_method_path_pattern_and_key() {
    let app = frozen().await;
    let admin = key("northwind-admin").key_id;
    add(
        &app,
        json!({"match": {"method": "GET", "path": "/companies/*", "key_id": admin},
               "action": {"type": "status", "status": 500}}),
    )
    .await;
    let companies = app
        .get("/companies")
        .key("northwind-admin")
        .send()
        .await
        .ok();
    let one = companies["data"][0]["id"].as_str().unwrap();
    let path = format!("/companies/{one}");
    let hit = app.get(&path).key("northwind-admin").send().await;
    assert_eq!(hit.status, 500, "{}", hit.text());
    // Another key, another method or a path the pattern does not cover: untouched.
    assert_eq!(
        app.get(&path).key("northwind-readonly").send().await.status,
        200
    );
    assert_eq!(
        app.get("/companies")
            .key("northwind-admin")
            .send()
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn a_delay_fault_runs_the_request_and_holds_its_answer() {
    let app = frozen().await;
    let rule = add(
        &app,
        json!({"match": {"operation_id": "listCompanies"},
               "action": {"type": "delay", "delay_ms": 300}, "times": 1}),
    )
    .await;
    let started = Instant::now();
    let r = app.get("/companies").key("northwind-readonly").send().await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("signage-fault"), rule["id"].as_str());
    assert!(r.json()["data"].is_array());
}

/// Sends one raw HTTP/1.1 request and reads until the server closes the connection.
async fn raw_exchange(app: &TestApp, path: &str, key_name: &str) -> Vec<u8> {
    raw_request(app, "GET", path, key_name, "").await
}

async fn raw_request(
    app: &TestApp,
    method: &str,
    path: &str,
    key_name: &str,
    body: &str,
) -> Vec<u8> {
    let addr = app.base_url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let k = key(key_name);
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nx-api-key: {}\r\nx-service-client-id: {}\r\n\
         content-type: application/json\r\naccept: application/json, text/event-stream\r\n\
         mcp-protocol-version: 2025-11-25\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        k.raw,
        k.client_id,
        body.len()
    );
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    // A reset counts as closed too: nothing was answered either way.
    let _ = stream.read_to_end(&mut got).await;
    got
}

#[tokio::test]
async fn a_drop_fault_closes_the_connection_without_an_answer() {
    let app = frozen().await;
    add(
        &app,
        json!({"match": {"method": "GET", "path": "/devices"},
               "action": {"type": "drop"}, "times": 1}),
    )
    .await;
    let got = raw_exchange(&app, "/devices", "northwind-readonly").await;
    assert!(
        got.is_empty(),
        "expected a closed connection, got {:?}",
        String::from_utf8_lossy(&got)
    );
    // The next request is answered (the rule is spent), on a connection of its own.
    let got = raw_exchange(&app, "/devices", "northwind-readonly").await;
    assert!(
        got.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&got)
    );
}

async fn statuses_with_probability(seed: u64) -> Vec<u16> {
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.sandbox_seed = Some(seed);
    })
    .await;
    add(
        &app,
        json!({"match": {"operation_id": "listCompanies"},
               "action": {"type": "status", "status": 502}, "probability": 0.5}),
    )
    .await;
    let mut out = Vec::new();
    for _ in 0..24 {
        let r = app.get("/companies").key("northwind-readonly").send().await;
        out.push(r.status.as_u16());
    }
    out
}

#[tokio::test]
async fn a_probability_drawn_from_the_seed_repeats_from_run_to_run() {
    let a = statuses_with_probability(7).await;
    let b = statuses_with_probability(7).await;
    assert_eq!(a, b, "same seed, same faults");
    assert!(a.contains(&200) && a.contains(&502), "{a:?}");
    assert!(a.iter().all(|s| *s == 200 || *s == 502));
}

#[tokio::test]
async fn an_mcp_tool_call_that_meets_a_fault_is_an_is_error_result() {
    let app = frozen().await;
    let rule = add(
        &app,
        json!({"match": {"operation_id": "listDevices", "via": "mcp"},
               "action": {"type": "status", "status": 503}}),
    )
    .await;
    let id = rule["id"].as_str().unwrap();
    // The same operation over REST is not matched (`via: mcp`).
    assert_eq!(
        app.get("/devices")
            .key("northwind-readonly")
            .send()
            .await
            .status,
        200
    );
    let r = mcp::send(
        &app,
        "northwind-readonly",
        &mcp::request(
            1,
            "tools/call",
            json!({"name": "list_devices", "arguments": {}}),
        ),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("signage-fault"), Some(id));
    let result = &r.json()["result"];
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("503"), "{text}");
    // Other tools are untouched.
    mcp::call_ok(&app, "northwind-readonly", "list_companies", json!({})).await;

    // A drop in a tool call drops the whole /mcp HTTP response.
    add(
        &app,
        json!({"match": {"operation_id": "listCompanies", "via": "mcp"},
               "action": {"type": "drop"}, "times": 1}),
    )
    .await;
    let call = mcp::request(
        2,
        "tools/call",
        json!({"name": "list_companies", "arguments": {}}),
    );
    let got = raw_request(
        &app,
        "POST",
        "/mcp",
        "northwind-readonly",
        &call.to_string(),
    )
    .await;
    assert!(got.is_empty(), "{}", String::from_utf8_lossy(&got));
    let got = raw_request(
        &app,
        "POST",
        "/mcp",
        "northwind-readonly",
        &call.to_string(),
    )
    .await;
    assert!(
        got.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&got)
    );
}

#[tokio::test]
async fn prefer_asks_for_a_fault_per_request() {
    let app = frozen().await;
    let r = app
        .get("/companies")
        .key("northwind-readonly")
        .header("prefer", "code=503")
        .send()
        .await;
    assert_eq!(r.status, 503);
    assert_eq!(r.header("signage-fault"), Some("prefer"));
    assert_eq!(r.header("preference-applied"), Some("code=503"));
    assert_eq!(r.json()["code"], "injected_fault");

    let started = Instant::now();
    let r = app
        .get("/companies")
        .key("northwind-readonly")
        .header("prefer", "return=minimal, delay=200")
        .send()
        .await;
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("preference-applied"), Some("delay=200"));

    for bad in ["code=200", "code=abc", "delay=30001", "delay=-1"] {
        let p = app
            .get("/companies")
            .key("northwind-readonly")
            .header("prefer", bad)
            .send()
            .await
            .problem(422);
        assert!(p.to_string().contains("invalid_preference"), "{bad}: {p}");
    }
    // Never before authentication or the scope check, never on the operator's routes.
    app.get("/companies")
        .header("prefer", "code=503")
        .send()
        .await
        .problem(401);
    app.get("/_sandbox/clock")
        .key("northwind-admin")
        .header("prefer", "code=503")
        .send()
        .await
        .problem(403);
    let r = app
        .get("/_sandbox/clock")
        .key(OP)
        .header("prefer", "code=503")
        .send()
        .await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn prefer_is_ignored_when_the_setting_is_off() {
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.sandbox_allow_prefer_faults = Some(false);
    })
    .await;
    let r = app
        .get("/companies")
        .key("northwind-readonly")
        .header("prefer", "code=503, delay=1")
        .send()
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("signage-fault"), None);
    assert_eq!(r.header("preference-applied"), None);
}

#[tokio::test]
async fn a_rule_that_matches_everything_spares_the_operator_health_and_the_unauthenticated() {
    let app = frozen().await;
    add(&app, json!({"action": {"type": "status", "status": 500}})).await;
    add(&app, json!({"action": {"type": "drop"}})).await;
    assert_eq!(
        app.get("/devices")
            .key("northwind-readonly")
            .send()
            .await
            .status,
        500
    );
    app.get("/devices").send().await.problem(401);
    app.get("/devices")
        .key("northwind-revoked")
        .send()
        .await
        .problem(401);
    // A caller without the scope still sees its 403, not the fault.
    app.post("/ads")
        .key("northwind-readonly")
        .json(&json!({}))
        .send()
        .await
        .problem(403);
    assert_eq!(app.get("/health").send().await.status, 200);
    let list = app.get("/_sandbox/faults").key(OP).send().await.ok();
    assert_eq!(list["data"].as_array().unwrap().len(), 2);
    let r = app.delete("/_sandbox/faults").key(OP).send().await;
    assert_eq!(r.status, 204);
    assert_eq!(
        app.get("/devices")
            .key("northwind-readonly")
            .send()
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn only_the_operator_manages_faults_and_rules_are_validated_and_bounded() {
    // Room for the 100 rules below in the operator's rate limit.
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.rate_limit_burst = Some(1000);
    })
    .await;
    let rule = json!({"action": {"type": "status", "status": 503}});
    for k in ["northwind-admin", "northwind-readwrite"] {
        app.post("/_sandbox/faults")
            .key(k)
            .json(&rule)
            .send()
            .await
            .problem(403);
        app.get("/_sandbox/faults").key(k).send().await.problem(403);
    }
    app.post("/_sandbox/faults")
        .json(&rule)
        .send()
        .await
        .problem(401);

    for (bad, field) in [
        (
            json!({"match": {"operation_id": "noSuchThing"}, "action": {"type": "drop"}}),
            "/match/operation_id",
        ),
        (
            json!({"match": {"operation_id": "getSandboxClock"}, "action": {"type": "drop"}}),
            "/match/operation_id",
        ),
        (
            json!({"match": {"operation_id": "getHealth"}, "action": {"type": "drop"}}),
            "/match/operation_id",
        ),
        (
            json!({"match": {"path": "/_sandbox/**"}, "action": {"type": "drop"}}),
            "/match/path",
        ),
        (
            json!({"match": {"path": "devices"}, "action": {"type": "drop"}}),
            "/match/path",
        ),
        (
            json!({"match": {"method": "get"}, "action": {"type": "drop"}}),
            "/match/method",
        ),
        (
            json!({"match": {"key_id": "cli_1"}, "action": {"type": "drop"}}),
            "/match/key_id",
        ),
        (
            json!({"action": {"type": "status", "status": 200}}),
            "/action/status",
        ),
        (
            json!({"action": {"type": "delay", "delay_ms": 30001}}),
            "/action/delay_ms",
        ),
        (json!({"action": {"type": "drop"}, "times": 0}), "/times"),
        (
            json!({"action": {"type": "drop"}, "probability": 0}),
            "/probability",
        ),
        (
            json!({"action": {"type": "drop"}, "probability": 1.5}),
            "/probability",
        ),
        (json!({"action": {"type": "teleport"}}), "/action"),
        (json!({"match": {}}), ""),
    ] {
        let p = app
            .post("/_sandbox/faults")
            .key(OP)
            .json(&bad)
            .send()
            .await
            .problem(422);
        assert!(p.to_string().contains(field), "{bad} -> {p}");
    }

    // Bounded: 100 rules, then 409; deleting one makes room.
    let harmless = json!({"match": {"path": "/nowhere"}, "action": {"type": "drop"}});
    let mut ids = Vec::new();
    for _ in 0..100 {
        ids.push(
            add(&app, harmless.clone()).await["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let full = app
        .post("/_sandbox/faults")
        .key(OP)
        .json(&harmless)
        .send()
        .await
        .problem(409);
    assert_eq!(full["code"], "fault_limit");
    let r = app
        .delete(&format!("/_sandbox/faults/{}", ids[0]))
        .key(OP)
        .send()
        .await;
    assert_eq!(r.status, 204);
    app.delete(&format!("/_sandbox/faults/{}", ids[0]))
        .key(OP)
        .send()
        .await
        .problem(404);
    add(&app, harmless).await;
}

#[tokio::test]
async fn a_status_fault_replaces_a_write_and_a_delay_lets_it_run() {
    let app = frozen().await;
    let pharmacy = crate::helpers::company_id("Northwind Pharmacy");
    let new_ad = json!({"company_id": pharmacy, "name": "Faulted", "headline": "Maybe"});
    let count = |app: &TestApp| {
        app.sql(|c| {
            c.query_row("SELECT count(*) FROM ads WHERE name = 'Faulted'", [], |r| {
                r.get::<_, i64>(0)
            })
        })
    };
    add(
        &app,
        json!({"match": {"operation_id": "createAd"},
               "action": {"type": "status", "status": 500}, "times": 1}),
    )
    .await;
    let r = app
        .post("/ads")
        .key("northwind-readwrite")
        .json(&new_ad)
        .send()
        .await;
    assert_eq!(r.status, 500);
    assert_eq!(count(&app), 0, "the write did not run");
    let outcome: String = app.sql(|c| {
        c.query_row(
            "SELECT outcome FROM audit_log WHERE route = '/ads' ORDER BY id DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
    });
    assert_eq!(outcome, "injected_fault");

    add(
        &app,
        json!({"match": {"operation_id": "createAd"},
               "action": {"type": "delay", "delay_ms": 50}, "times": 1}),
    )
    .await;
    let r = app
        .post("/ads")
        .key("northwind-readwrite")
        .json(&new_ad)
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(r.header("signage-fault").is_some());
    assert_eq!(count(&app), 1, "a delayed write runs");
}
