//! Tests: outbox control for test suites. A drain (`POST /_sandbox/webhooks/drain`, or an advance
//! with `"drain": true`) answers only once every due delivery's attempt is recorded, so a test reads
//! the delivery log right after it, with no sleep and no polling; a drain that outlasts its
//! timeout is 408. `GET /_sandbox/deliveries` lists deliveries across webhooks, filtered.

use crate::helpers::TestApp;
use crate::sandbox_clock::{frozen_without_fleet, FROZEN_AT};
use crate::webhook_delivery::{deliveries, edit_ad, hook, quiet_fixture_hooks};
use crate::webhook_receiver::{Receiver, HANG};
use serde_json::{json, Value};

async fn drain(app: &TestApp, body: Value) -> crate::helpers::TestResponse {
    app.post("/_sandbox/webhooks/drain")
        .key("sandbox-operator")
        .json(&body)
        .send()
        .await
}

#[tokio::test]
async fn after_an_advance_with_drain_the_attempts_are_recorded_without_waiting() {
    let app = frozen_without_fleet().await;
    quiet_fixture_hooks(&app);
    let rx = Receiver::start().await;
    rx.answer(&[503]);
    let (id, _) = hook(&app, &rx.url("/drained"), &["ad.updated"]).await;
    edit_ad(&app).await;
    // The first attempt (503) may still be on the wire; the retry falls due 5 s later.
    let r = app
        .post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": 5, "drain": true}))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    // Read at once: no sleep, no poll.
    let log = deliveries(&app, &id).await;
    assert_eq!(log.len(), 1);
    let statuses: Vec<&Value> = log[0]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["http_status"])
        .collect();
    assert_eq!(statuses, [&json!(503), &json!(200)]);
    assert_eq!(log[0]["status"], "succeeded");
    assert_eq!(rx.received().len(), 2);
}

#[tokio::test]
async fn a_drain_answers_once_the_first_attempt_is_recorded() {
    let app = frozen_without_fleet().await;
    quiet_fixture_hooks(&app);
    let rx = Receiver::start().await;
    let (id, _) = hook(&app, &rx.url("/now"), &["ad.updated"]).await;
    edit_ad(&app).await;
    // An empty body is allowed.
    let r = app
        .post("/_sandbox/webhooks/drain")
        .key("sandbox-operator")
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let drained = r.json();
    assert_eq!(drained["object"], "sandbox_webhook_drain");
    assert_eq!(drained["now"], signage::time::rfc3339(FROZEN_AT));
    // The worker may have sent and recorded it already; if not, the drain sent it or waited.
    assert!(
        drained["sent"].as_u64().unwrap() + drained["awaited"].as_u64().unwrap() <= 1,
        "{drained}"
    );
    assert_eq!(drained["pending"], 0);
    assert_eq!(drained["next_attempt_at"], Value::Null);
    let log = deliveries(&app, &id).await;
    assert_eq!(log[0]["status"], "succeeded");
    assert_eq!(log[0]["attempts"][0]["http_status"], 200);
    // A failed attempt is rescheduled: the drain says when.
    rx.answer(&[500]);
    edit_ad(&app).await;
    let drained = drain(&app, json!({"timeout_ms": 5000})).await.ok();
    assert_eq!(drained["pending"], 1);
    assert_eq!(
        drained["next_attempt_at"],
        signage::time::rfc3339(FROZEN_AT + 5)
    );
    let log = deliveries(&app, &id).await;
    assert_eq!(log[0]["status"], "pending");
    assert_eq!(log[0]["attempts"][0]["http_status"], 500);
}

#[tokio::test]
async fn a_drain_that_outlasts_its_timeout_is_a_408_and_undoes_nothing() {
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.sandbox_simulate_fleet = Some(false);
        l.webhook_timeout_millis = Some(3000);
    })
    .await;
    quiet_fixture_hooks(&app);
    let rx = Receiver::start().await;
    rx.answer(&[HANG]);
    let (id, _) = hook(&app, &rx.url("/hang"), &["ad.updated"]).await;
    edit_ad(&app).await;
    // The worker has the attempt on the wire (the receiver holds it).
    rx.wait_for(1).await;
    let p = drain(&app, json!({"timeout_ms": 200})).await.problem(408);
    assert_eq!(p["type"], "/problems/timed-out");
    assert_eq!(p["code"], "drain_timeout");
    assert!(
        p["detail"].as_str().unwrap().contains("1 deliveries"),
        "{p}"
    );
    // Waiting long enough sees the attempt's outcome (its timeout) recorded.
    let drained = drain(&app, json!({"timeout_ms": 20000})).await.ok();
    assert_eq!(drained["awaited"], 1, "{drained}");
    let log = deliveries(&app, &id).await;
    assert_eq!(log[0]["attempts"][0]["error"], "timed out after 3000 ms");
    // Bad input.
    for (body, field) in [
        (json!({"timeout_ms": 0}), "/timeout_ms"),
        (json!({"timeout_ms": 120001}), "/timeout_ms"),
        (json!({"wait": 1}), ""),
    ] {
        let p = drain(&app, body.clone()).await.problem(422);
        if !field.is_empty() {
            assert_eq!(p["errors"][0]["field"], field, "{body}");
        }
    }
    let p = app
        .post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": 1, "drain": true, "drain_timeout_ms": 0}))
        .send()
        .await
        .problem(422);
    assert_eq!(p["errors"][0]["field"], "/drain_timeout_ms");
    // Only the operator drains.
    app.post("/_sandbox/webhooks/drain")
        .key("northwind-admin")
        .json(&json!({}))
        .send()
        .await
        .problem(403);
}

#[tokio::test]
async fn deliveries_are_listed_across_webhooks_by_status_webhook_and_type() {
    let app = frozen_without_fleet().await;
    quiet_fixture_hooks(&app);
    let good = Receiver::start().await;
    let bad = Receiver::start().await;
    bad.answer(&[500, 500, 500]);
    let (ok_hook, _) = hook(&app, &good.url("/ok"), &["ad.updated", "device.updated"]).await;
    let (bad_hook, _) = hook(&app, &bad.url("/bad"), &["ad.updated"]).await;
    edit_ad(&app).await;
    edit_ad(&app).await;
    drain(&app, json!({})).await.ok();
    let list = |q: &'static str| {
        let app = &app;
        async move {
            let r = app
                .get(&format!("/_sandbox/deliveries{q}"))
                .key("sandbox-operator")
                .send()
                .await;
            assert_eq!(r.status, 200, "{q}: {}", r.text());
            r.json()
        }
    };
    let all = list("").await;
    assert_eq!(all["data"].as_array().unwrap().len(), 4);
    let pending = list("?status=pending").await;
    let pending = pending["data"].as_array().unwrap();
    assert_eq!(pending.len(), 2);
    assert!(pending.iter().all(|d| d["webhook_id"] == bad_hook.as_str()));
    assert!(pending
        .iter()
        .all(|d| d["attempts"][0]["http_status"] == 500));
    let succeeded = list("?status=succeeded").await;
    assert!(succeeded["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|d| d["webhook_id"] == ok_hook.as_str()));
    let by_hook = app
        .get(&format!(
            "/_sandbox/deliveries?webhook_id={ok_hook}&status=succeeded&event_type=ad.updated"
        ))
        .key("sandbox-operator")
        .send()
        .await
        .ok();
    assert_eq!(by_hook["data"].as_array().unwrap().len(), 2);
    let none = list("?event_type=device.updated").await;
    assert_eq!(none["data"].as_array().unwrap().len(), 0);
    // Newest first, walked by cursor.
    let first = list("?limit=1").await;
    assert_eq!(first["has_more"], true);
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    let second = app
        .get(&format!("/_sandbox/deliveries?limit=3&cursor={cursor}"))
        .key("sandbox-operator")
        .send()
        .await
        .ok();
    let ids: Vec<&str> = std::iter::once(&first["data"][0])
        .chain(second["data"].as_array().unwrap())
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(ids, sorted);
    assert_eq!(ids.len(), 4);
    // The per-webhook log takes the same status filter.
    let log = app
        .get(&format!("/webhooks/{bad_hook}/deliveries?status=pending"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(log["data"].as_array().unwrap().len(), 2);
    let log = app
        .get(&format!("/webhooks/{bad_hook}/deliveries?status=succeeded"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(log["data"].as_array().unwrap().len(), 0);
    // Bad filters are 422 naming the parameter; only the operator lists across accounts.
    for (q, field) in [
        ("?status=sent", "status"),
        ("?webhook_id=ad_1", "webhook_id"),
        ("?event_type=nope", "event_type"),
    ] {
        let p = app
            .get(&format!("/_sandbox/deliveries{q}"))
            .key("sandbox-operator")
            .send()
            .await
            .problem(422);
        assert_eq!(p["errors"][0]["field"], field, "{q}");
    }
    app.get(&format!("/webhooks/{bad_hook}/deliveries?status=sent"))
        .key("northwind-readonly")
        .send()
        .await
        .problem(422);
    app.get("/_sandbox/deliveries")
        .key("northwind-admin")
        .send()
        .await
        .problem(403);
}
