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
