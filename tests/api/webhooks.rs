//! Tests: webhooks (the secret shown once, then masked), and the event type catalogue.

use crate::helpers::{company_id, TestApp};
use serde_json::{json, Value};

const GROCERS_HOOK: &str = "wh_0m5d4ruu8azzqmib80t5";
const GROCERS_SECRET: &str = "whsec_wxYNXnMUFzhQ48XB7e2ImJPx8CNrSFf2";
const HOTELS_HOOK: &str = "wh_0m5d4ruuaolh1lc69you";

fn count(app: &TestApp, sql: &'static str) -> i64 {
    app.sql(|conn| conn.query_row(sql, [], |r| r.get(0)))
}

fn all_secrets(app: &TestApp) -> Vec<String> {
    app.sql(|c| {
        let mut s = c.prepare("SELECT secret FROM webhooks")?;
        let rows = s.query_map([], |r| r.get(0))?;
        rows.collect()
    })
}

fn assert_no_secret(body: &str, secrets: &[String]) {
    for s in secrets {
        assert!(!body.contains(s.as_str()), "a secret leaked: {body}");
    }
    assert!(!body.contains("\"secret\""), "{body}");
}

fn new_hook(company: &str) -> Value {
    json!({
        "company_id": company,
        "url": "https://hooks.northwind-grocers.example/new",
        "description": "Shelf labels",
        "event_types": ["promotion.activated", "tokens.spent"],
    })
}

#[tokio::test]
async fn list_and_get_mask_the_secret() {
    let app = TestApp::spawn().await;
    let secrets = all_secrets(&app);
    let r = app
        .get("/webhooks?limit=1")
        .key("northwind-readonly")
        .send()
        .await;
    assert_no_secret(&r.text(), &secrets);
    let all = app.collect_all("/webhooks", "northwind-readonly", 1).await;
    assert_eq!(all.len(), 2);
    assert_no_secret(&serde_json::to_string(&all).unwrap(), &secrets);
    let r = app
        .get(&format!("/webhooks/{GROCERS_HOOK}"))
        .key("northwind-readonly")
        .send()
        .await;
    assert_no_secret(&r.text(), &secrets);
    assert_eq!(r.header("etag"), Some("\"v1\""));
    let hook = r.ok();
    assert_eq!(hook["object"], "webhook");
    assert_eq!(
        hook["secret_last4"],
        &GROCERS_SECRET[GROCERS_SECRET.len() - 4..]
    );
    assert_eq!(hook["enabled"], true);
    assert_eq!(hook["event_types"].as_array().unwrap().len(), 6);
    let pharmacy = company_id("Northwind Pharmacy");
    let theirs = app
        .collect_all(
            &format!("/webhooks?company_id={pharmacy}"),
            "northwind-readonly",
            5,
        )
        .await;
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0]["enabled"], false);
    app.get(&format!("/webhooks/{HOTELS_HOOK}"))
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    app.get(&format!("/webhooks/{GROCERS_HOOK}"))
        .key("northwind-pharmacy-read")
        .send()
        .await
        .problem(404);
    app.get("/webhooks")
        .key("northwind-ads-editor")
        .send()
        .await
        .problem(403);
}

#[tokio::test]
async fn create_shows_the_secret_once() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let r = app
        .post("/webhooks")
        .key("northwind-grocers-write")
        .json(&new_hook(&grocers))
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let created = r.json();
    let secret = created["secret"].as_str().unwrap().to_string();
    let body = secret.strip_prefix("whsec_").unwrap();
    assert_eq!(body.len(), 32);
    assert!(body.bytes().all(|c| c.is_ascii_alphanumeric()));
    assert_eq!(created["secret_last4"], &secret[secret.len() - 4..]);
    assert_eq!(created["enabled"], true);
    assert_eq!(created["description"], "Shelf labels");
    assert_eq!(
        created["event_types"],
        json!(["promotion.activated", "tokens.spent"])
    );
    let id = created["id"].as_str().unwrap();

    // Never again: not in get, list, update responses, nor in the event payloads.
    let secrets = all_secrets(&app);
    assert!(secrets.contains(&secret));
    let got = app
        .get(&format!("/webhooks/{id}"))
        .key("northwind-readonly")
        .send()
        .await;
    assert_no_secret(&got.text(), &secrets);
    let mut expected = created.clone();
    expected.as_object_mut().unwrap().remove("secret");
    assert_eq!(got.json(), expected);
    let list = app
        .get(&format!("/webhooks?company_id={grocers}"))
        .key("northwind-readonly")
        .send()
        .await;
    assert_no_secret(&list.text(), &secrets);
    assert!(list.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|h| h["id"] == id));
    let updated = app
        .patch(&format!("/webhooks/{id}"))
        .key("northwind-readwrite")
        .json(&json!({"enabled": false}))
        .send()
        .await;
    assert_no_secret(&updated.text(), &secrets);
    let payloads: Vec<String> = app.sql(|c| {
        let mut s = c.prepare("SELECT payload FROM events WHERE resource_type = 'webhook'")?;
        let rows = s.query_map([], |r| r.get(0))?;
        rows.collect()
    });
    assert_eq!(payloads.len(), 2);
    for p in payloads {
        assert_no_secret(&p, &secrets);
    }

    // Local receivers over plain http, and enabled=false at creation.
    let local = app
        .post("/webhooks")
        .key("northwind-readwrite")
        .json(
            &json!({"company_id": grocers, "url": "http://127.0.0.1:8080/hook",
            "event_types": ["ad.created"], "enabled": false}),
        )
        .send()
        .await;
    assert_eq!(local.status, 201, "{}", local.text());
    assert_eq!(local.json()["enabled"], false);
    assert_eq!(local.json()["description"], "");
}

#[tokio::test]
async fn create_validation_and_permissions() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let before = count(&app, "SELECT count(*) FROM webhooks");
    let with = |k: &str, v: Value| {
        let mut b = new_hook(&grocers);
        b[k] = v;
        b
    };
    for (body, field) in [
        (with("url", json!("http://hooks.example.com/x")), "/url"),
        (with("url", json!("https://")), "/url"),
        (with("url", json!("https://a b.example")), "/url"),
        (with("url", json!("http://localhost.evil.example/")), "/url"),
        (with("url", json!("http://localhost:123456/")), "/url"),
        (with("url", json!(7)), "/url"),
        (with("event_types", json!([])), "/event_types"),
        (
            with("event_types", json!(["device.exploded"])),
            "/event_types/0",
        ),
        (
            with("event_types", json!(["ad.created", "ad.created"])),
            "/event_types/1",
        ),
        (with("event_types", json!("ad.created")), "/event_types"),
        (with("enabled", json!("yes")), "/enabled"),
        (with("description", json!("x".repeat(501))), "/description"),
        (with("secret", json!("whsec_mine")), "/secret"),
        (with("company_id", json!("northwind")), "/company_id"),
    ] {
        let p = app
            .post("/webhooks")
            .key("northwind-readwrite")
            .json(&body)
            .send()
            .await
            .problem(422);
        assert_eq!(p["errors"][0]["field"], field, "{body}");
    }
    app.post("/webhooks")
        .key("northwind-readwrite")
        .raw("application/json", "[")
        .send()
        .await
        .problem(400);
    app.post("/webhooks")
        .key("northwind-readwrite")
        .json(&new_hook(&company_id("Bluefin Cafés")))
        .send()
        .await
        .problem(404);
    for key in ["northwind-readonly", "northwind-pharmacy-read"] {
        let p = app
            .post("/webhooks")
            .key(key)
            .json(&new_hook(&grocers))
            .send()
            .await
            .problem(403);
        assert_eq!(p["missing_scope"], "webhooks:write");
    }
    assert_eq!(count(&app, "SELECT count(*) FROM webhooks"), before);
    for url in [
        "http://localhost",
        "http://localhost:3000",
        "http://127.0.0.1/x?y#z",
        "https://x",
    ] {
        app.post("/webhooks")
            .key("northwind-readwrite")
            .json(&with("url", json!(url)))
            .send()
            .await
            .ok();
    }
}

#[tokio::test]
async fn update_and_delete_honour_if_match() {
    let app = TestApp::spawn().await;
    let path = format!("/webhooks/{GROCERS_HOOK}");
    let r = app
        .patch(&path)
        .key("northwind-readwrite")
        .header("if-match", "\"v1\"")
        .json(&json!({"url": "https://hooks.northwind-grocers.example/v2",
            "event_types": ["promotion.created"], "description": "v2"}))
        .send()
        .await;
    let hook = r.ok();
    assert_eq!(r.header("etag"), Some("\"v2\""));
    assert_eq!(hook["url"], "https://hooks.northwind-grocers.example/v2");
    assert_eq!(hook["event_types"], json!(["promotion.created"]));
    assert_eq!(
        hook["secret_last4"],
        &GROCERS_SECRET[GROCERS_SECRET.len() - 4..]
    );
    app.patch(&path)
        .key("northwind-readwrite")
        .header("if-match", "\"v1\"")
        .json(&json!({"enabled": false}))
        .send()
        .await
        .problem(412);
    for (body, field) in [
        (
            json!({"company_id": company_id("Northwind Pharmacy")}),
            "/company_id",
        ),
        (json!({"secret": "whsec_x"}), "/secret"),
        (json!({}), ""),
        (json!({"enabled": null}), "/enabled"),
        (json!({"url": "ftp://x"}), "/url"),
        (json!({"event_types": []}), "/event_types"),
    ] {
        let p = app
            .patch(&path)
            .key("northwind-readwrite")
            .json(&body)
            .send()
            .await
            .problem(422);
        assert_eq!(p["errors"][0]["field"], field, "{body}");
    }
    app.patch(&path)
        .key("northwind-readonly")
        .json(&json!({"enabled": false}))
        .send()
        .await
        .problem(403);
    app.patch(&format!("/webhooks/{HOTELS_HOOK}"))
        .key("northwind-readwrite")
        .json(&json!({"enabled": false}))
        .send()
        .await
        .problem(404);
    let still = app.get(&path).key("northwind-readonly").send().await.ok();
    assert_eq!(still["enabled"], true);
    assert_eq!(still["description"], "v2");

    // Delete: stale ETag refused, other account 404, read-only 403, then gone.
    app.delete(&path)
        .key("northwind-readwrite")
        .header("if-match", "\"v1\"")
        .send()
        .await
        .problem(412);
    app.delete(&format!("/webhooks/{HOTELS_HOOK}"))
        .key("northwind-readwrite")
        .send()
        .await
        .problem(404);
    app.delete(&path)
        .key("northwind-readonly")
        .send()
        .await
        .problem(403);
    app.assert_deleted(&path, "\"v2\"").await;
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM events WHERE type = 'webhook.deleted'"
        ),
        1
    );
    let hotels: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM webhooks WHERE id = ?1",
            [HOTELS_HOOK],
            |r| r.get(0),
        )
    });
    assert_eq!(hotels, 1);
}

#[tokio::test]
async fn event_types_catalogue() {
    let app = TestApp::spawn().await;
    let body = app
        .get("/webhook-event-types")
        .key("northwind-pharmacy-read")
        .send()
        .await
        .ok();
    assert_eq!(body["object"], "list");
    assert_eq!(body["has_more"], false);
    assert_eq!(body["next_cursor"], Value::Null);
    let types: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, signage::events::EVENT_TYPES);
    assert!(body["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| !t["description"].as_str().unwrap().is_empty()));
    app.get("/webhook-event-types?limit=5")
        .key("northwind-readonly")
        .send()
        .await
        .problem(422);
    app.get("/webhook-event-types")
        .key("harborview-hotels-billing")
        .send()
        .await
        .problem(403);
}
