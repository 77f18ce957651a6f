//! Tests: webhook retries on the sandbox clock (walked on a frozen clock, and sent by the system
//! clock's tick), attempt timeouts, disabling after persistent failure, redelivery by hand.

use crate::helpers::TestApp;
use crate::sandbox_clock::FROZEN_AT;
use crate::webhook_delivery::{
    advance, deliveries, delivery_with_attempts, edit_ad, hook, quiet_fixture_hooks,
};
use crate::webhook_receiver::{signatures_matching, Receiver, HANG};
use serde_json::{json, Value};

#[tokio::test]
async fn on_the_system_clock_the_tick_sends_due_retries() {
    let app = TestApp::spawn_with(|l| {
        l.webhook_retry_schedule = Some(vec![1]);
        l.sandbox_tick_millis = Some(50);
    })
    .await;
    quiet_fixture_hooks(&app);
    let rx = Receiver::start().await;
    rx.answer(&[503]);
    let (id, _) = hook(&app, &rx.url("/tick"), &["ad.updated"]).await;
    edit_ad(&app).await;
    let got = rx.wait_for(2).await;
    assert_eq!(got[0].header("webhook-id"), got[1].header("webhook-id"));
    let d = delivery_with_attempts(&app, &id, 2).await;
    assert_eq!(d["status"], "succeeded");
    let statuses: Vec<&Value> = d["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["http_status"])
        .collect();
    assert_eq!(statuses, [&json!(503), &json!(200)]);
}

#[tokio::test]
async fn an_attempt_that_gets_no_answer_in_time_fails_and_is_retried() {
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.webhook_timeout_millis = Some(300);
    })
    .await;
    quiet_fixture_hooks(&app);
    let rx = Receiver::start().await;
    rx.answer(&[HANG]);
    let (id, _) = hook(&app, &rx.url("/slow"), &["ad.updated"]).await;
    edit_ad(&app).await;
    let d = delivery_with_attempts(&app, &id, 1).await;
    assert_eq!(d["status"], "pending");
    assert_eq!(d["attempts"][0]["http_status"], Value::Null);
    assert_eq!(d["attempts"][0]["error"], "timed out after 300 ms");
    advance(&app, 5).await;
    let d = delivery_with_attempts(&app, &id, 2).await;
    assert_eq!(d["status"], "succeeded");
    assert_eq!(rx.received().len(), 2);
}

#[tokio::test]
async fn retries_walk_the_schedule_on_a_frozen_clock() {
    // Headers on the sandbox clock, so the attempts' timestamps show the schedule.
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.webhook_timestamps = Some(signage::config::WebhookTimestamps::Sandbox);
    })
    .await;
    quiet_fixture_hooks(&app);
    let rx = Receiver::start().await;
    rx.answer(&[500, 503]);
    let (id, secret) = hook(&app, &rx.url("/flaky"), &["ad.updated"]).await;
    edit_ad(&app).await;
    // The first attempt goes out at once, although the clock is frozen.
    let first = delivery_with_attempts(&app, &id, 1).await;
    assert_eq!(first["status"], "pending");
    assert_eq!(first["attempts"][0]["http_status"], 500);
    assert_eq!(first["next_attempt_at"], "2026-03-02T09:00:05Z");
    // Four seconds: nothing is due yet.
    advance(&app, 4).await;
    assert_eq!(rx.received().len(), 1);
    // Advancing past 5 s and 5 min runs both retries, in order, at their instants.
    let moved = advance(&app, 600).await;
    assert_eq!(moved["transitions"]["webhook.attempt"], 2, "{moved}");
    let got = rx.wait_for(3).await;
    assert_eq!(got.len(), 3);
    let d = delivery_with_attempts(&app, &id, 3).await;
    assert_eq!(d["status"], "succeeded");
    assert_eq!(d["attempt_count"], 3);
    assert_eq!(d["next_attempt_at"], Value::Null);
    let statuses: Vec<&Value> = d["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["http_status"])
        .collect();
    assert_eq!(statuses, [&json!(500), &json!(503), &json!(200)]);
    let at: Vec<&str> = d["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["at"].as_str().unwrap())
        .collect();
    assert_eq!(
        at,
        [
            "2026-03-02T09:00:00.000Z",
            "2026-03-02T09:00:05.000Z",
            "2026-03-02T09:05:05.000Z"
        ]
    );
    // The same webhook-id and body on every attempt; the timestamp is the attempt's, and each
    // signature matches its own timestamp.
    assert!(got
        .iter()
        .all(|r| r.header("webhook-id") == got[0].header("webhook-id")));
    assert!(got.iter().all(|r| r.body == got[0].body));
    let stamps: Vec<i64> = got
        .iter()
        .map(|r| r.header("webhook-timestamp").parse().unwrap())
        .collect();
    assert_eq!(stamps, [FROZEN_AT, FROZEN_AT + 5, FROZEN_AT + 305]);
    assert!(got.iter().all(|r| signatures_matching(r, &secret) == 1));
    // Nothing more is due: a further day sends nothing.
    advance(&app, 86_400).await;
    assert_eq!(rx.received().len(), 3);
}

#[tokio::test]
async fn a_webhook_failing_for_the_configured_span_is_disabled_with_an_event() {
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.webhook_retry_schedule = Some(vec![5, 5]);
        l.webhook_disable_after_secs = Some(10);
    })
    .await;
    quiet_fixture_hooks(&app);
    let down = Receiver::start().await;
    down.answer(&[500; 10]);
    let watcher = Receiver::start().await;
    let (id, _) = hook(&app, &down.url("/down"), &["ad.updated"]).await;
    let (_, watch_secret) = hook(&app, &watcher.url("/watch"), &["webhook.disabled"]).await;
    edit_ad(&app).await;
    delivery_with_attempts(&app, &id, 1).await;
    advance(&app, 60).await;
    let d = delivery_with_attempts(&app, &id, 3).await;
    assert_eq!(d["status"], "failed", "{d}");
    assert_eq!(d["next_attempt_at"], Value::Null);
    let hook_now = app
        .get(&format!("/webhooks/{id}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(hook_now["enabled"], false);
    let note = &watcher.wait_for_type("webhook.disabled", 1).await[0];
    assert_eq!(note.json()["data"]["id"], id.as_str());
    assert_eq!(note.json()["data"]["enabled"], false);
    assert_eq!(signatures_matching(note, &watch_secret), 1);
    // A disabled webhook gets no new deliveries.
    edit_ad(&app).await;
    advance(&app, 60).await;
    assert_eq!(down.received().len(), 3);
    assert_eq!(deliveries(&app, &id).await.len(), 1);
}

#[tokio::test]
async fn a_failed_delivery_is_sent_again_on_request_with_the_same_id() {
    let app = TestApp::spawn_with(|l| l.webhook_retry_schedule = Some(vec![])).await;
    let rx = Receiver::start().await;
    rx.answer(&[410]);
    let (id, _) = hook(&app, &rx.url("/gone"), &["ad.updated"]).await;
    edit_ad(&app).await;
    let d = delivery_with_attempts(&app, &id, 1).await;
    assert_eq!(d["status"], "failed");
    let path = format!(
        "/webhooks/{id}/deliveries/{}/retry",
        d["id"].as_str().unwrap()
    );
    // Read-only keys cannot resend.
    let r = app.post(&path).key("northwind-readonly").send().await;
    assert_eq!(r.status, 403);
    let r = app.post(&path).key("northwind-admin").send().await;
    assert_eq!(r.status, 200, "{}", r.text());
    let again = r.json();
    assert_eq!(again["status"], "succeeded");
    assert_eq!(again["attempt_count"], 2);
    assert_eq!(again["attempts"][1]["http_status"], 200);
    let got = rx.received();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].header("webhook-id"), got[1].header("webhook-id"));
    let one = app
        .get(&format!(
            "/webhooks/{id}/deliveries/{}",
            d["id"].as_str().unwrap()
        ))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(one, again);
}
