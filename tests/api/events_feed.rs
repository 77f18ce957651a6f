//! `GET /events`: what changed, by which key, via REST or MCP; the visible companies only.

use crate::helpers::mcp::call_ok;
use crate::helpers::{company_id, key, TestApp};
use serde_json::json;

fn grocers_ad(app: &TestApp) -> String {
    let grocers = company_id("Northwind Grocers");
    app.sql(|c| {
        c.query_row(
            "SELECT id FROM ads WHERE company_id = ?1 ORDER BY id LIMIT 1",
            [&grocers],
            |r| r.get(0),
        )
    })
}

#[tokio::test]
async fn the_feed_names_the_actor_and_the_door() {
    let app = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    app.patch(&format!("/ads/{ad}"))
        .key("northwind-readwrite")
        .json(&json!({"headline": "Through REST"}))
        .send()
        .await
        .ok();
    let feed = app
        .get("/events?limit=5")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    let first = &feed["data"][0];
    assert_eq!(first["object"], "event");
    assert_eq!(first["type"], "ad.updated");
    assert_eq!(first["resource_id"], ad.as_str());
    assert_eq!(first["via"], "rest");
    assert_eq!(first["actor"], key("northwind-readwrite").key_id.as_str());
    // For people: the key's name, as its owner gave it.
    let key_name: String = app.sql(|c| {
        c.query_row(
            "SELECT name FROM api_keys WHERE id = ?1",
            [key("northwind-readwrite").key_id],
            |r| r.get(0),
        )
    });
    assert!(!key_name.starts_with("key_"));
    assert_eq!(first["actor_name"], key_name.as_str());
    let ad_name = app
        .get(&format!("/ads/{ad}"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok()["name"]
        .clone();
    assert_eq!(first["resource_name"], ad_name);
    assert_eq!(first["data"]["headline"], "Through REST");

    // The same change through MCP's two steps is recorded as MCP's, with the same actor.
    let preview = call_ok(
        &app,
        "northwind-readwrite",
        "prepare_ad_change",
        json!({"ad_id": ad, "changes": {"headline": "Through MCP"}}),
    )
    .await;
    let id = preview["confirmation_id"].as_str().unwrap().to_string();
    call_ok(
        &app,
        "northwind-readwrite",
        "confirm_change",
        json!({"confirmation_id": id}),
    )
    .await;
    let feed = app
        .get("/events?limit=1&type=ad.updated")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    let first = &feed["data"][0];
    assert_eq!(first["data"]["headline"], "Through MCP");
    assert_eq!(first["via"], "mcp");
    assert_eq!(first["actor"], key("northwind-readwrite").key_id.as_str());
}

#[tokio::test]
async fn the_feed_shows_only_what_the_credential_may_see() {
    let app = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    app.patch(&format!("/ads/{ad}"))
        .key("northwind-readwrite")
        .json(&json!({"headline": "Seen by Northwind only"}))
        .send()
        .await
        .ok();
    // Harborview sees none of Northwind's events; the Pharmacy-scoped key none of Grocers'.
    for other in ["harborview-readwrite", "northwind-pharmacy-read"] {
        let rows = app.collect_all("/events", other, 100).await;
        assert!(
            rows.iter().all(|e| e["resource_id"] != ad.as_str()),
            "{other} sees another company's event"
        );
    }
    // Events are the webhooks area's: a key without webhooks:read is refused.
    let denied = app
        .get("/events")
        .key("northwind-ads-editor")
        .send()
        .await
        .problem(403);
    assert_eq!(denied["missing_scope"], "webhooks:read");
    // Filters are checked like every other.
    app.get("/events?type=not.a.type")
        .key("northwind-readwrite")
        .send()
        .await
        .problem(422);
    let grocers = company_id("Northwind Grocers");
    let only = app
        .collect_all(
            &format!("/events?company_id={grocers}"),
            "northwind-readwrite",
            50,
        )
        .await;
    assert!(!only.is_empty() && only.iter().all(|e| e["company_id"] == grocers.as_str()));
}

/// The newest event of `type` the key sees.
async fn newest(app: &TestApp, event_type: &str) -> serde_json::Value {
    let feed = app
        .get(&format!("/events?limit=1&type={event_type}"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    feed["data"][0].clone()
}

#[tokio::test]
async fn plays_spends_and_phone_scans_are_named_not_ids() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let (device, device_name, ad, ad_name): (String, String, String, String) = app.sql(move |c| {
        c.query_row(
            "SELECT d.id, d.name, a.id, a.name FROM ad_assignments x JOIN devices d ON d.id = x.device_id
             JOIN ads a ON a.id = x.ad_id WHERE d.company_id = ?1 ORDER BY d.id, a.id LIMIT 1",
            [&grocers],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
    });
    // A play reported by a screen: the ad's name on the screen's name.
    let now = app
        .get("/_sandbox/clock")
        .key("sandbox-operator")
        .send()
        .await
        .ok()["now"]
        .as_str()
        .unwrap()
        .to_string();
    app.post(&format!("/devices/{device}/playbacks"))
        .key("northwind-readwrite")
        .json(&json!({"ad_id": ad, "started_at": now, "duration_seconds": 5}))
        .send()
        .await
        .ok();
    let played = newest(&app, "device.playback_recorded").await;
    assert_eq!(played["resource_type"], "playback");
    assert_eq!(
        played["resource_name"],
        format!("{ad_name} on {device_name}").as_str(),
        "{played}"
    );

    // Tokens spent on an activation: the ledger line's description, not its id.
    let promotion = "promo_0m5d4ruph555gp9x0h0h"; // Northwind Pharmacy's Sun Care: inactive, in its window
    app.post(&format!("/promotions/{promotion}/activate"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    let spent = newest(&app, "tokens.spent").await;
    let description: String = app.sql(|c| {
        c.query_row(
            "SELECT description FROM token_transactions ORDER BY id DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
    });
    assert!(!description.is_empty());
    assert_eq!(spent["resource_name"], description.as_str(), "{spent}");
    assert_eq!(
        spent["actor_name"],
        newest(&app, "promotion.activated").await["actor_name"]
    );

    // A phone opening a short link carries no credential: said so, not "unknown".
    let code: String = app.sql(move |c| {
        c.query_row(
            "SELECT q.code FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id
             WHERE p.company_id = ?1 ORDER BY q.id LIMIT 1",
            [company_id("Northwind Grocers")],
            |r| r.get(0),
        )
    });
    let r = app.get(&format!("/q/{code}")).send().await;
    assert_eq!(r.status, 302, "{}", r.text());
    let scanned = newest(&app, "qr_code.scanned").await;
    assert_eq!(scanned["via"], "rest", "{scanned}");
    assert_eq!(scanned["actor"], serde_json::Value::Null);
    assert_eq!(scanned["actor_name"], "a phone (short link)", "{scanned}");
}
