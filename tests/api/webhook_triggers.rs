//! Tests: `POST /_sandbox/events` emits any catalogued type, built from the current state by the
//! same builder the real transition uses (a trigger right after the transition sends the same
//! `data`), recorded with `via: "sandbox"` and delivered like any event; bad triggers are 422
//! naming the field and record nothing.

use crate::helpers::{company_id, TestApp};
use crate::sandbox_clock::frozen_without_fleet;
use crate::schemas::Checker;
use crate::webhook_delivery::{hook, quiet_fixture_hooks};
use crate::webhook_payloads::{body_schema, openapi};
use crate::webhook_receiver::Receiver;
use serde_json::{json, Value};

async fn trigger(app: &TestApp, body: Value) -> crate::helpers::TestResponse {
    app.post("/_sandbox/events")
        .key("sandbox-operator")
        .json(&body)
        .send()
        .await
}

async fn drain(app: &TestApp) {
    let r = app
        .post("/_sandbox/webhooks/drain")
        .key("sandbox-operator")
        .json(&json!({}))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
}

fn first(app: &TestApp, sql: &str, company: &str) -> String {
    app.sql(|c| c.query_row(sql, [company], |r| r.get(0)))
}

fn event_count(app: &TestApp) -> i64 {
    app.sql(|c| c.query_row("SELECT count(*) FROM events", [], |r| r.get(0)))
}

#[tokio::test]
async fn a_trigger_sends_what_the_real_transition_sent() {
    let app = frozen_without_fleet().await;
    quiet_fixture_hooks(&app);
    let rx = Receiver::start().await;
    let (hook_id, _) = hook(&app, &rx.url("/t"), &["device.offline", "ad.unassigned"]).await;
    let grocers = company_id("Northwind Grocers");
    // The real transition: a screen's heartbeat grows old.
    let dev = first(
        &app,
        "SELECT id FROM devices WHERE company_id = ?1 AND last_heartbeat_at IS NOT NULL ORDER BY id LIMIT 1",
        &grocers,
    );
    app.post(&format!("/devices/{dev}/heartbeat"))
        .key("northwind-readwrite")
        .json(&json!({}))
        .send()
        .await
        .ok();
    let r = app
        .post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": 301, "drain": true}))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let real: Vec<Value> = rx
        .received()
        .iter()
        .map(|r| r.json())
        .filter(|b| b["data"]["id"] == dev.as_str())
        .collect();
    assert_eq!(real.len(), 1);
    // The trigger, on the same state.
    let r = trigger(
        &app,
        json!({"type": "device.offline", "company_id": grocers, "object_id": dev}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let emitted = r.json();
    assert_eq!(emitted["via"], "sandbox");
    assert_eq!(emitted["type"], "device.offline");
    assert_eq!(emitted["resource_id"], dev.as_str());
    assert_eq!(emitted["deliveries"][0]["webhook_id"], hook_id.as_str());
    assert_eq!(emitted["data"], real[0]["data"]);
    drain(&app).await;
    let sent = rx
        .received()
        .iter()
        .map(|r| r.json())
        .find(|b| b["id"] == emitted["id"])
        .expect("the triggered event was delivered");
    assert_eq!(sent["data"], real[0]["data"]);
    assert_ne!(sent["id"], real[0]["id"]);
    // Recorded like any event, marked as the sandbox's.
    let events = app
        .get("/events?type=device.offline&limit=100")
        .key("northwind-admin")
        .send()
        .await
        .ok();
    let mine = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == emitted["id"])
        .unwrap()
        .clone();
    assert_eq!(mine["via"], "sandbox");
    assert!(mine["actor"].as_str().unwrap().starts_with("key_"));
    // `data` may feed the builder (which screen an ad left) and replace members.
    let (ad, device): (String, String) = app.sql(|c| {
        c.query_row(
            "SELECT x.ad_id, x.device_id FROM ad_assignments x JOIN ads a ON a.id = x.ad_id
             WHERE a.company_id = ?1 ORDER BY x.ad_id LIMIT 1",
            [&grocers],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    let r = trigger(
        &app,
        json!({"type": "ad.unassigned", "company_id": grocers, "object_id": ad, "data": {"device_id": device}}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json()["data"],
        json!({"object": "ad_assignment", "ad_id": ad, "device_id": device, "company_id": grocers})
    );
    let r = trigger(
        &app,
        json!({"type": "device.offline", "company_id": grocers, "object_id": dev, "data": {"name": "Renamed in the event"}}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["data"]["name"], "Renamed in the event");
}

#[tokio::test]
async fn every_catalogued_type_can_be_triggered_and_matches_its_schema() {
    let app = frozen_without_fleet().await;
    quiet_fixture_hooks(&app);
    let doc = openapi(&app).await;
    let rx = Receiver::start().await;
    let (hook_id, _) = hook(&app, &rx.url("/all"), signage::events::EVENT_TYPES).await;
    let grocers = company_id("Northwind Grocers");
    // The demo world has no plays: record one, as a player would.
    let (ad, dev): (String, String) = app.sql(|c| {
        c.query_row(
            "SELECT x.ad_id, x.device_id FROM ad_assignments x JOIN ads a ON a.id = x.ad_id
             WHERE a.company_id = ?1 ORDER BY x.ad_id LIMIT 1",
            [&grocers],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    app.post(&format!("/devices/{dev}/playbacks"))
        .key("northwind-readwrite")
        .json(&json!({"ad_id": ad, "started_at": signage::time::rfc3339(crate::sandbox_clock::FROZEN_AT - 60), "duration_seconds": 15}))
        .send()
        .await
        .ok();
    let before = rx.received().len();
    let _ = before;
    for t in signage::events::EVENT_TYPES {
        let object = match *t {
            "ad.assigned" | "ad.unassigned" => Some(ad.clone()),
            "webhook.created" | "webhook.updated" | "webhook.deleted" | "webhook.disabled"
            | "webhook.test" => Some(hook_id.clone()),
            _ => None,
        };
        let mut body = json!({"type": t, "company_id": grocers});
        if let Some(o) = object {
            body["object_id"] = json!(o);
        }
        let r = trigger(&app, body).await;
        assert_eq!(r.status, 201, "{t}: {}", r.text());
    }
    drain(&app).await;
    let mut checker = Checker::new();
    let mut seen = Vec::new();
    for r in rx.received() {
        let body = r.json();
        let t = body["type"].as_str().unwrap().to_string();
        checker
            .check(&body, &body_schema(&doc, &t), &t)
            .unwrap_or_else(|e| panic!("a triggered {t} does not match its schema: {e}\n{body}"));
        seen.push(t);
    }
    for t in signage::events::EVENT_TYPES {
        assert!(seen.iter().any(|s| s == t), "{t} was not delivered");
    }
}

#[tokio::test]
async fn bad_triggers_are_422_naming_the_field_and_record_nothing() {
    let app = frozen_without_fleet().await;
    let grocers = company_id("Northwind Grocers");
    let pharmacy = company_id("Northwind Pharmacy");
    let grocers_device = first(
        &app,
        "SELECT id FROM devices WHERE company_id = ?1 ORDER BY id LIMIT 1",
        &grocers,
    );
    let pharmacy_device = first(
        &app,
        "SELECT id FROM devices WHERE company_id = ?1 ORDER BY id LIMIT 1",
        &pharmacy,
    );
    let an_ad = first(
        &app,
        "SELECT id FROM ads WHERE company_id = ?1 ORDER BY id LIMIT 1",
        &grocers,
    );
    let before = event_count(&app);
    for (body, field, code) in [
        (
            json!({"type": "device.exploded", "company_id": grocers}),
            "/type",
            "unknown_event_type",
        ),
        (
            json!({"type": "api_key.expired", "company_id": grocers}),
            "/type",
            "unknown_event_type",
        ),
        (
            json!({"type": "device.offline", "company_id": "dev_1"}),
            "/company_id",
            "invalid_id",
        ),
        (
            json!({"type": "device.offline", "company_id": "cmp_0000000000000000000"}),
            "/company_id",
            "not_found",
        ),
        (
            json!({"type": "device.offline", "company_id": grocers, "object_id": an_ad}),
            "/object_id",
            "wrong_object_type",
        ),
        (
            json!({"type": "device.offline", "company_id": grocers, "object_id": pharmacy_device}),
            "/object_id",
            "wrong_company",
        ),
        (
            json!({"type": "device.offline", "company_id": grocers, "object_id": "dev_nothere"}),
            "/object_id",
            "not_found",
        ),
        (
            json!({"type": "tokens.purchased", "company_id": grocers, "object_id": "ttx_nothere"}),
            "/object_id",
            "not_found",
        ),
        (
            json!({"type": "device.playback_recorded", "company_id": grocers}),
            "/object_id",
            "no_object",
        ),
        (
            json!({"type": "device.offline", "company_id": grocers, "object_id": grocers_device, "data": {"colour": 1}}),
            "/data/colour",
            "unknown_field",
        ),
        (
            json!({"type": "device.offline", "company_id": grocers, "object_id": grocers_device, "data": {"status": 7}}),
            "/data",
            "schema_mismatch",
        ),
        (
            json!({"type": "ad.assigned", "company_id": grocers, "object_id": an_ad, "data": {"device_id": pharmacy_device}}),
            "/data/device_id",
            "not_found",
        ),
    ] {
        let p = app
            .post("/_sandbox/events")
            .key("sandbox-operator")
            .json(&body)
            .send()
            .await
            .problem(422);
        assert_eq!(p["errors"][0]["field"], field, "{body}: {p}");
        assert_eq!(p["errors"][0]["code"], code, "{body}: {p}");
    }
    let p = app
        .post("/_sandbox/events")
        .key("sandbox-operator")
        .json(&json!({"type": "device.offline"}))
        .send()
        .await
        .problem(422);
    assert_eq!(p["errors"][0]["field"], "/company_id", "{p}");
    assert_eq!(event_count(&app), before, "nothing was recorded");
    // Only the operator triggers.
    app.post("/_sandbox/events")
        .key("northwind-admin")
        .json(&json!({"type": "device.offline", "company_id": grocers}))
        .send()
        .await
        .problem(403);
}
