//! Tests: no web page can drive the local sandbox. A page the developer opens may rebind its own
//! name to 127.0.0.1 (its requests then carry `Host: attacker.example`) or post straight to
//! `http://127.0.0.1:PORT` (they carry its `Origin`); either is refused on every route before
//! anything runs, and a webhook's failures tell nothing about a private network's addresses.

use crate::helpers::{demo, key, TestApp};
use crate::sandbox_clock::FROZEN_AT;
use crate::webhook_delivery::{delivery_with_attempts, edit_ad, hook, quiet_fixture_hooks};
use serde_json::json;

fn port(app: &TestApp) -> String {
    app.base_url
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_string()
}

fn assert_foreign(r: &crate::helpers::TestResponse, code: &str, what: &str) {
    let p = r.problem(403);
    assert_eq!(p["type"], "/problems/foreign-site", "{what}");
    assert_eq!(p["code"], code, "{what}");
}

#[tokio::test]
async fn a_rebound_name_reaches_nothing_on_any_route() {
    let app = TestApp::spawn_with(|l| l.sandbox_clock = Some(Some(FROZEN_AT))).await;
    let rebound = format!("attacker.example:{}", port(&app));
    let (user, password) = demo().users[0].clone();
    let keys_before =
        app.sql(|c| c.query_row("SELECT count(*) FROM api_keys", [], |r| r.get::<_, i64>(0)));

    // What the red team did: log in with the public demo user, list and mint keys, move the
    // clock with the operator key, make a webhook into the network; and the public pages.
    let login = app
        .post("/auth/login")
        .header("host", &rebound)
        .json(&json!({"username": user, "password": password}))
        .send()
        .await;
    assert_foreign(&login, "host_not_allowed", "login");
    assert!(login.text().find("access_token").is_none());
    let listed = app
        .get("/api-keys")
        .header("host", &rebound)
        .key("northwind-admin")
        .send()
        .await;
    assert_foreign(&listed, "host_not_allowed", "list keys");
    let client = key("northwind-admin").client_id;
    let minted = app
        .post("/api-keys")
        .header("host", &rebound)
        .key("northwind-admin")
        .json(&json!({"client_id": client, "name": "page", "scopes": ["admin"]}))
        .send()
        .await;
    assert_foreign(&minted, "host_not_allowed", "mint a key");
    let advanced = app
        .post("/_sandbox/clock/advance")
        .header("host", &rebound)
        .key("sandbox-operator")
        .json(&json!({"seconds": 86400}))
        .send()
        .await;
    assert_foreign(&advanced, "host_not_allowed", "move the clock");
    for path in ["/health", "/openapi.json", "/console", "/docs"] {
        let r = app.get(path).header("host", &rebound).send().await;
        assert_foreign(&r, "host_not_allowed", path);
    }
    let mcp = crate::helpers::mcp::post(&app, "northwind-admin")
        .header("host", &rebound)
        .json(&crate::helpers::mcp::request(1, "tools/list", json!({})))
        .send()
        .await;
    assert_eq!(mcp.status, 403, "{}", mcp.text());

    // Nothing happened: no key, the clock where it was.
    let keys_after =
        app.sql(|c| c.query_row("SELECT count(*) FROM api_keys", [], |r| r.get::<_, i64>(0)));
    assert_eq!(keys_before, keys_after);
    let clock = app
        .get("/_sandbox/clock")
        .key("sandbox-operator")
        .send()
        .await
        .ok();
    assert_eq!(clock["now"], signage::time::rfc3339(FROZEN_AT), "{clock}");

    // The names of this machine still work.
    for host in ["localhost", "127.0.0.1", "[::1]"] {
        let r = app
            .get("/health")
            .header("host", &format!("{host}:{}", port(&app)))
            .send()
            .await;
        assert_eq!(r.status, 200, "{host}");
    }
}

#[tokio::test]
async fn a_request_a_page_of_another_site_sends_is_refused_unread() {
    let app = TestApp::spawn().await;
    let (user, password) = demo().users[0].clone();
    let login = |origin: Option<&str>| {
        let mut r = app
            .post("/auth/login")
            .json(&json!({"username": user, "password": password}));
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        r.send()
    };
    for origin in [
        "https://attacker.example",
        "null",
        "http://192.168.1.9:8080",
        "file://",
    ] {
        let r = login(Some(origin)).await;
        assert_foreign(&r, "origin_not_allowed", origin);
        assert!(r.text().find("access_token").is_none());
    }
    // This server's own pages, pages on this machine, and clients that send no Origin.
    let own = format!("http://127.0.0.1:{}", port(&app));
    for origin in [Some(own.as_str()), Some("http://localhost:5173"), None] {
        login(origin).await.ok();
    }

    // A refused request's body is not read: the connection is closed rather than drained.
    let big = "x".repeat(200_000);
    let r = app
        .post("/ads")
        .key("northwind-admin")
        .header("origin", "https://attacker.example")
        .raw("application/json", big)
        .send()
        .await;
    assert_foreign(&r, "origin_not_allowed", "a large body");
    assert_eq!(r.header("connection"), Some("close"));
}

#[tokio::test]
async fn a_name_of_the_developers_own_is_allowed_in_configuration() {
    let app = TestApp::spawn_with(|l| l.allowed_hosts = Some(vec!["signage.test".into()])).await;
    let r = app
        .get("/me")
        .key("northwind-readonly")
        .header("host", &format!("signage.test:{}", port(&app)))
        .header("origin", "https://signage.test")
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = app
        .get("/me")
        .key("northwind-readonly")
        .header("host", "other.test")
        .send()
        .await;
    assert_foreign(&r, "host_not_allowed", "an unlisted name");
}

#[tokio::test]
async fn a_private_address_that_does_not_answer_is_only_not_reachable() {
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.webhook_timeout_millis = Some(300);
    })
    .await;
    quiet_fixture_hooks(&app);
    // An address of a private network nothing here answers on: whether the attempt was refused
    // at once or timed out, the log says the same, with no timing.
    let (id, _) = hook(&app, "https://10.255.255.1:9/hook", &["ad.updated"]).await;
    edit_ad(&app).await;
    let d = delivery_with_attempts(&app, &id, 1).await;
    let attempt = &d["attempts"][0];
    assert_eq!(attempt["http_status"], serde_json::Value::Null, "{d}");
    assert_eq!(attempt["error"], "not reachable", "{d}");
    assert_eq!(attempt["latency_ms"], 0, "{d}");
}
