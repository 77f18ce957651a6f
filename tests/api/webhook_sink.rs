//! Tests: the built-in receiver `/_sandbox/sink/{name}`. The demo world's enabled webhooks deliver
//! to it and succeed from the start; it verifies each delivery's signature against the webhook
//! that sent it, keeps the newest deliveries, and lists them newest first. Its URL is the one
//! loopback target allowed when private targets are refused, and only for this purpose.

use crate::helpers::{company_id, TestApp};
use crate::sandbox_clock::frozen_without_fleet;
use crate::webhook_delivery::{deliveries, edit_ad};
use serde_json::{json, Value};

async fn drain(app: &TestApp) {
    let r = app
        .post("/_sandbox/webhooks/drain")
        .key("sandbox-operator")
        .json(&json!({}))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
}

async fn sink(app: &TestApp, name: &str) -> Vec<Value> {
    let r = app
        .get(&format!("/_sandbox/sink/{name}"))
        .key("sandbox-operator")
        .send()
        .await
        .ok();
    assert_eq!(r["sink"], name);
    r["data"].as_array().unwrap().clone()
}

#[tokio::test]
async fn the_demo_worlds_webhooks_deliver_to_the_sink_verified_from_the_start() {
    let app = frozen_without_fleet().await;
    let grocers_hook: String = app.sql(|c| {
        c.query_row(
            "SELECT id FROM webhooks WHERE company_id = ?1",
            [company_id("Northwind Grocers")],
            |r| r.get(0),
        )
    });
    let shown = app
        .get(&format!("/webhooks/{grocers_hook}"))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert_eq!(
        shown["url"],
        "http://127.0.0.1:0/_sandbox/sink/northwind-grocers"
    );
    assert!(sink(&app, "northwind-grocers").await.is_empty());
    edit_ad(&app).await;
    edit_ad(&app).await;
    drain(&app).await;
    let got = sink(&app, "northwind-grocers").await;
    assert_eq!(got.len(), 2);
    for d in &got {
        assert_eq!(d["object"], "sandbox_sink_delivery");
        assert_eq!(d["event_type"], "ad.updated");
        assert_eq!(d["verification"]["verified"], true, "{d}");
        assert_eq!(d["verification"]["webhook_id"], grocers_hook.as_str());
        assert_eq!(d["body"]["type"], "ad.updated");
        assert_eq!(d["body"]["id"], d["webhook_id_header"]);
        assert_eq!(d["headers"]["content-type"], "application/json");
    }
    // Newest first.
    assert!(got[0]["id"].as_str() > got[1]["id"].as_str());
    // The delivery log shows success: the sink answers 204.
    let log = deliveries(&app, &grocers_hook).await;
    assert_eq!(log.len(), 2);
    assert!(log
        .iter()
        .all(|d| d["status"] == "succeeded" && d["attempts"][0]["http_status"] == 204));
    // A rotation: deliveries signed with both secrets still verify.
    app.post(&format!("/webhooks/{grocers_hook}/rotate-secret"))
        .key("northwind-admin")
        .json(&json!({}))
        .send()
        .await;
    edit_ad(&app).await;
    drain(&app).await;
    let got = sink(&app, "northwind-grocers").await;
    assert_eq!(got[0]["verification"]["verified"], true, "{}", got[0]);
    // Emptied on request; other sinks are untouched.
    app.delete("/_sandbox/sink/northwind-grocers")
        .key("sandbox-operator")
        .send()
        .await;
    assert!(sink(&app, "northwind-grocers").await.is_empty());
}

#[tokio::test]
async fn a_forged_delivery_is_kept_but_not_verified() {
    let app = frozen_without_fleet().await;
    // Nobody's delivery: no webhook sent this event here.
    let r = app
        .post("/_sandbox/sink/forged")
        .header("webhook-id", "evt_forged")
        .header("webhook-timestamp", "1772442000")
        .header("webhook-signature", "v1,AAAA")
        .raw("application/json", r#"{"type":"ad.updated"}"#)
        .send()
        .await;
    assert_eq!(r.status, 204, "{}", r.text());
    // A real event id with a wrong signature.
    edit_ad(&app).await;
    drain(&app).await;
    let real = &sink(&app, "northwind-grocers").await[0];
    let r = app
        .post("/_sandbox/sink/northwind-grocers")
        .header("webhook-id", real["webhook_id_header"].as_str().unwrap())
        .header(
            "webhook-timestamp",
            real["webhook_timestamp"].as_str().unwrap(),
        )
        .header(
            "webhook-signature",
            real["headers"]["webhook-signature"].as_str().unwrap(),
        )
        .raw(
            "application/json",
            r#"{"type":"ad.updated","tampered":true}"#,
        )
        .send()
        .await;
    assert_eq!(r.status, 204);
    let got = sink(&app, "northwind-grocers").await;
    assert_eq!(got[0]["verification"]["verified"], false);
    assert_eq!(
        got[0]["verification"]["reason"],
        "no signature matches the secret of the webhook that sent it"
    );
    let forged = sink(&app, "forged").await;
    assert_eq!(forged[0]["verification"]["verified"], false);
    assert!(forged[0]["verification"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("no webhook of this sandbox delivered"));
    let r = app
        .post("/_sandbox/sink/unsigned")
        .raw("text/plain", "hello")
        .send()
        .await;
    assert_eq!(r.status, 204);
    let unsigned = sink(&app, "unsigned").await;
    assert_eq!(unsigned[0]["body"], "hello");
    assert_eq!(
        unsigned[0]["verification"]["reason"],
        "missing webhook-id, webhook-timestamp or webhook-signature"
    );
    // Reading needs the operator; a bad name is 404.
    app.get("/_sandbox/sink/forged")
        .key("northwind-admin")
        .send()
        .await
        .problem(403);
    app.post("/_sandbox/sink/Bad.Name")
        .raw("application/json", "{}")
        .send()
        .await
        .problem(404);
}

#[tokio::test]
async fn a_sink_keeps_the_newest_hundred() {
    let app = frozen_without_fleet().await;
    for n in 0..105 {
        let r = app
            .post("/_sandbox/sink/bounded")
            .raw("application/json", format!("{{\"n\":{n}}}"))
            .send()
            .await;
        assert_eq!(r.status, 204);
    }
    let got = sink(&app, "bounded").await;
    assert_eq!(got.len(), 100);
    assert_eq!(got[0]["body"]["n"], 104);
    assert_eq!(got[99]["body"]["n"], 5);
}

#[tokio::test]
async fn the_sink_is_the_only_loopback_target_when_private_targets_are_refused() {
    let app = TestApp::spawn_with(|l| {
        l.webhook_allow_private_targets = Some(false);
        l.sandbox_simulate_fleet = Some(false);
    })
    .await;
    let create = |url: &'static str| {
        let app = &app;
        async move {
            app.post("/webhooks")
                .key("northwind-admin")
                .json(
                    &json!({"company_id": company_id("Northwind Pharmacy"), "url": url,
                    "event_types": ["ad.updated"]}),
                )
                .send()
                .await
        }
    };
    let r = create("http://127.0.0.1:0/_sandbox/sink/pharmacy").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let hook = r.json()["id"].as_str().unwrap().to_string();
    for url in [
        "http://127.0.0.1:0/_sandbox/clock",
        "http://127.0.0.1:0/_sandbox/sink/pharmacy/../../clock",
        "http://127.0.0.1:0/_sandbox/sink/pharmacy?x=1",
        "http://127.0.0.1:9/_sandbox/sink/pharmacy",
        "http://localhost:0/admin",
    ] {
        let p = create(url).await.problem(422);
        assert_eq!(p["errors"][0]["field"], "/url", "{url}");
    }
    // And it delivers there.
    let ad: String = app.sql(|c| {
        c.query_row(
            "SELECT id FROM ads WHERE company_id = ?1 ORDER BY id LIMIT 1",
            [company_id("Northwind Pharmacy")],
            |r| r.get(0),
        )
    });
    app.patch(&format!("/ads/{ad}"))
        .key("northwind-admin")
        .json(&json!({"headline": "Sink"}))
        .send()
        .await
        .ok();
    drain(&app).await;
    let got = sink(&app, "pharmacy").await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["verification"]["webhook_id"], hook.as_str());
}
