//! The `webhook-timestamp` header (issue 19 item 4): transport, signed with the wall clock by
//! default so stock Standard Webhooks verifiers (±5 minutes of their own clock) accept a frozen
//! sandbox's deliveries; the body's `timestamp` stays the event's sandbox time. With
//! `webhooks.timestamps = "sandbox"` the header follows the sandbox clock instead.

use crate::helpers::TestApp;
use crate::sandbox_clock::FROZEN_AT;
use crate::webhook_delivery::{edit_ad, hook, quiet_fixture_hooks};
use crate::webhook_receiver::{signatures_matching, Receiver};
use signage::config::WebhookTimestamps;

fn wall_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

async fn one_delivery(
    clock: Option<WebhookTimestamps>,
) -> (crate::webhook_receiver::Received, String) {
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.webhook_timestamps = clock;
    })
    .await;
    quiet_fixture_hooks(&app);
    let rx = Receiver::start().await;
    let (_, secret) = hook(&app, &rx.url("/ts"), &["ad.updated"]).await;
    edit_ad(&app).await;
    let got = rx.wait_for(1).await;
    (got[0].clone(), secret)
}

#[tokio::test]
async fn by_default_the_header_carries_the_wall_clock_and_the_body_the_sandbox_time() {
    let before = wall_now();
    let (r, secret) = one_delivery(None).await;
    let after = wall_now();
    let stamp: i64 = r.header("webhook-timestamp").parse().unwrap();
    assert!(
        (before - 1..=after + 1).contains(&stamp),
        "{stamp} is not the wall clock ({before}..{after})"
    );
    assert_eq!(r.json()["timestamp"], "2026-03-02T09:00:00Z");
    // The signature covers the header's timestamp.
    assert_eq!(signatures_matching(&r, &secret), 1);
}

#[tokio::test]
async fn the_sandbox_setting_signs_with_the_sandbox_clock() {
    let (r, secret) = one_delivery(Some(WebhookTimestamps::Sandbox)).await;
    assert_eq!(r.header("webhook-timestamp"), FROZEN_AT.to_string());
    assert_eq!(r.json()["timestamp"], "2026-03-02T09:00:00Z");
    assert_eq!(signatures_matching(&r, &secret), 1);
}

#[test]
fn the_setting_reads_from_the_environment_and_refuses_other_values() {
    let env = |v: &'static str| {
        signage::config::Layer::from_env(move |k| {
            (k == "SIGNAGE_WEBHOOKS_TIMESTAMPS").then(|| v.to_string())
        })
    };
    let s = signage::config::Settings::resolve(&[env("sandbox").unwrap()]).unwrap();
    assert_eq!(s.webhook_timestamps, WebhookTimestamps::Sandbox);
    let d = signage::config::Settings::resolve(&[]).unwrap();
    assert_eq!(d.webhook_timestamps, WebhookTimestamps::Wall);
    let err = env("frozen").unwrap_err().to_string();
    assert!(err.contains("wall") && err.contains("sandbox"), "{err}");
}
