//! Snapshots: save the whole state, write, restore, and every read answers as before.

use crate::helpers::{company_id, TestApp};
use crate::sandbox_clock::frozen;
use serde_json::json;

const OP: &str = "sandbox-operator";

/// Reads that cover most of the demo world, as two keys of two accounts see it.
const READS: &[(&str, &str)] = &[
    ("/companies", "northwind-admin"),
    ("/devices?limit=100", "northwind-readonly"),
    ("/ads?limit=100", "northwind-readonly"),
    ("/promotions?limit=100", "northwind-readonly"),
    ("/webhooks", "northwind-admin"),
    ("/api-clients", "northwind-admin"),
    ("/companies", "harborview-admin"),
];

async fn bodies(app: &TestApp) -> Vec<bytes::Bytes> {
    let mut out = Vec::new();
    for (path, key) in READS {
        let r = app.get(path).key(key).send().await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        out.push(r.body);
    }
    out
}

async fn save(app: &TestApp, name: &str) -> serde_json::Value {
    let r = app
        .post("/_sandbox/snapshots")
        .key(OP)
        .json(&json!({"name": name}))
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

#[tokio::test]
async fn a_restore_puts_back_exactly_the_saved_state() {
    let app = frozen().await;
    let saved = save(&app, "base").await;
    assert_eq!(saved["name"], "base");
    assert_eq!(saved["taken_at"], "2026-03-02T09:00:00Z");
    assert!(saved["bytes"].as_u64().unwrap() > 0);
    let before = bodies(&app).await;

    // Writes in several areas, through REST.
    let pharmacy = company_id("Northwind Pharmacy");
    let ad = app
        .post("/ads")
        .key("northwind-readwrite")
        .json(&json!({"company_id": pharmacy, "name": "After the snapshot", "headline": "New"}))
        .send()
        .await;
    assert_eq!(ad.status, 201, "{}", ad.text());
    let ad_id = ad.json()["id"].as_str().unwrap().to_string();
    let webhook = app
        .post("/webhooks")
        .key("northwind-admin")
        .json(&json!({"company_id": pharmacy, "url": "https://hooks.example/after", "event_types": ["tokens.spent"]}))
        .send()
        .await;
    assert_eq!(webhook.status, 201, "{}", webhook.text());
    let device = app
        .get("/devices?limit=1")
        .key("northwind-readonly")
        .send()
        .await
        .ok()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let renamed = app
        .patch(&format!("/devices/{device}"))
        .key("northwind-admin")
        .json(&json!({"name": "Renamed after the snapshot"}))
        .send()
        .await;
    assert_eq!(renamed.status, 200, "{}", renamed.text());
    assert_ne!(bodies(&app).await, before, "the writes show");

    let r = app
        .post("/_sandbox/snapshots/base/restore")
        .key(OP)
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let restored = r.json();
    assert_eq!(restored["snapshot"]["name"], "base");
    assert!(r.header("server-timing").is_some());

    // Every read answers byte for byte as before, on pooled connections opened before the restore.
    assert_eq!(bodies(&app).await, before);
    app.get(&format!("/ads/{ad_id}"))
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    // New writes work on the restored state, and a second restore undoes them too.
    let again = app
        .post("/ads")
        .key("northwind-readwrite")
        .json(&json!({"company_id": pharmacy, "name": "Second", "headline": "Again"}))
        .send()
        .await;
    assert_eq!(again.status, 201);
    app.post("/_sandbox/snapshots/base/restore")
        .key(OP)
        .send()
        .await
        .ok();
    assert_eq!(bodies(&app).await, before);

    // The audit log is history: the writes made after the snapshot are still recorded.
    let audited: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM audit_log WHERE route IN ('/ads', '/webhooks', '/devices/{id}') AND method IN ('POST', 'PATCH')",
            [],
            |r| r.get(0),
        )
    });
    assert!(
        audited >= 4,
        "audit rows kept through the restore: {audited}"
    );
    let restores: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM audit_log WHERE route = '/_sandbox/snapshots/{name}/restore'",
            [],
            |r| r.get(0),
        )
    });
    assert_eq!(restores, 2);
}

#[tokio::test]
async fn a_restore_puts_the_clock_back_to_the_snapshot_s_instant() {
    let app = frozen().await;
    save(&app, "morning").await;
    app.post("/_sandbox/clock/advance")
        .key(OP)
        .json(&json!({"seconds": 3600}))
        .send()
        .await
        .ok();
    let restored = app
        .post("/_sandbox/snapshots/morning/restore")
        .key(OP)
        .send()
        .await
        .ok();
    assert_eq!(restored["now"], "2026-03-02T09:00:00Z");
    assert_eq!(restored["snapshot"]["taken_at"], "2026-03-02T09:00:00Z");
    let clock = app.get("/_sandbox/clock").key(OP).send().await.ok();
    assert_eq!(clock["now"], "2026-03-02T09:00:00Z");
    assert_eq!(clock["mode"], "frozen");
}

#[tokio::test]
async fn snapshots_are_named_listed_deleted_and_bounded() {
    let app = frozen().await;
    for bad in ["", "Upper", "with space", "dot.ted", &"x".repeat(65)] {
        let p = app
            .post("/_sandbox/snapshots")
            .key(OP)
            .json(&json!({"name": bad}))
            .send()
            .await
            .problem(422);
        assert!(p.to_string().contains("/name"), "{bad}: {p}");
    }
    save(&app, "a-1_b").await;
    let dup = app
        .post("/_sandbox/snapshots")
        .key(OP)
        .json(&json!({"name": "a-1_b"}))
        .send()
        .await
        .problem(409);
    assert_eq!(dup["code"], "snapshot_exists");
    let list = app.get("/_sandbox/snapshots").key(OP).send().await.ok();
    assert_eq!(list["data"][0]["name"], "a-1_b");

    assert_eq!(list["budget_bytes"], 512 * 1024 * 1024);
    assert_eq!(list["bytes_used"], list["data"][0]["bytes"]);

    let r = app.delete("/_sandbox/snapshots/a-1_b").key(OP).send().await;
    assert_eq!(r.status, 204);
    app.delete("/_sandbox/snapshots/a-1_b")
        .key(OP)
        .send()
        .await
        .problem(404);
    app.post("/_sandbox/snapshots/a-1_b/restore")
        .key(OP)
        .send()
        .await
        .problem(404);
    app.post("/_sandbox/snapshots/NOT..valid/restore")
        .key(OP)
        .send()
        .await
        .problem(404);
    save(&app, "a-1_b").await;
}

#[tokio::test]
async fn only_the_operator_saves_and_restores() {
    let app = frozen().await;
    save(&app, "base").await;
    for k in ["northwind-admin", "harborview-admin", "northwind-readwrite"] {
        app.post("/_sandbox/snapshots")
            .key(k)
            .json(&json!({"name": "mine"}))
            .send()
            .await
            .problem(403);
        app.post("/_sandbox/snapshots/base/restore")
            .key(k)
            .send()
            .await
            .problem(403);
        app.get("/_sandbox/snapshots")
            .key(k)
            .send()
            .await
            .problem(403);
        app.delete("/_sandbox/snapshots/base")
            .key(k)
            .send()
            .await
            .problem(403);
    }
    app.post("/_sandbox/snapshots/base/restore")
        .send()
        .await
        .problem(401);
    let list = app.get("/_sandbox/snapshots").key(OP).send().await.ok();
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
}
