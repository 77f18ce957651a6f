//! Issue 29 §2: the webhook checks grade every enabled webhook of the account at its current
//! URL, ignore drills of webhooks that are gone (deleted, or rewound by a restore and made again),
//! catch the receivers that skip verification without a signature or accept a timestamp from the
//! future, judge speed apart from correctness, and reach the built-in sink, which answers like a
//! careful receiver.

use crate::helpers::{company_id, TestApp};
use crate::readiness::{drill, drill_every_kind};
use crate::readiness_client::*;
use crate::readiness_receiver::{Policy, Receiver};
use serde_json::json;

/// A webhook of the Grocers to `receiver`, which learns its secret.
async fn hook_to(app: &TestApp, receiver: &Receiver) -> String {
    let hook = app
        .post("/webhooks")
        .key("northwind-admin")
        .header("idempotency-key", &format!("hook-{}", receiver.port))
        .json(&json!({"company_id": company_id("Northwind Grocers"),
                      "url": format!("http://127.0.0.1:{}/hook", receiver.port),
                      "event_types": ["webhook.test"]}))
        .send()
        .await
        .ok();
    receiver.knows(hook["secret"].as_str().unwrap());
    hook["id"].as_str().unwrap().to_string()
}

/// The demo world's enabled webhook of Northwind: it delivers to the built-in sink.
fn demo_sink_hook(app: &TestApp) -> String {
    app.sql(|c| {
        c.query_row(
            "SELECT id FROM webhooks WHERE company_id = ?1 AND enabled = 1",
            [company_id("Northwind Grocers")],
            |r| r.get(0),
        )
    })
}

const WEBHOOK_CHECKS: [&str; 6] = [
    "webhook_signatures_verified",
    "webhook_stale_timestamp_rejected",
    "webhook_duplicates_tolerated",
    "webhook_out_of_order_tolerated",
    "webhook_rotation_accepted",
    "webhook_responds_fast",
];

/// Every enabled webhook is graded: one never drilled keeps every webhook check `not_observed`
/// and is named; once each is drilled with every kind, they pass.
#[tokio::test]
async fn every_enabled_webhook_is_graded_and_one_never_drilled_is_named() {
    let app = sandbox().await;
    let (first, second) = (
        Receiver::with(Policy::Careful).await,
        Receiver::with(Policy::Careful).await,
    );
    let (a, b) = (hook_to(&app, &first).await, hook_to(&app, &second).await);
    let sink = demo_sink_hook(&app);
    drill_every_kind(&app, &a, "northwind-admin", |s| first.knows(s)).await;
    drill_every_kind(&app, &sink, "northwind-admin", |_| {}).await;
    let r = report(&app).await;
    for id in WEBHOOK_CHECKS {
        assert_eq!(status(&r, id), "not_observed", "{id}: {r}");
        assert_eq!(evidence(&r, id), [b.clone()].into(), "{id}");
        assert!(check(&r, id)["advice"].as_str().unwrap().contains(&b));
    }
    drill_every_kind(&app, &b, "northwind-admin", |s| second.knows(s)).await;
    let r = report(&app).await;
    for id in WEBHOOK_CHECKS {
        assert_eq!(status(&r, id), "pass", "{id}: {r}");
    }
}

/// A webhook deleted after its drills no longer counts: its failed drills are ignored.
#[tokio::test]
async fn drills_of_a_deleted_webhook_are_ignored() {
    let app = sandbox().await;
    let careless = Receiver::with(Policy::Careless).await;
    let hook = hook_to(&app, &careless).await;
    let d = drill(&app, &hook, "bad_signature").await;
    assert_eq!(d["verdict"], "fail");
    let r = report(&app).await;
    assert_eq!(status(&r, "webhook_signatures_verified"), "fail");
    let etag = app
        .get(&format!("/webhooks/{hook}"))
        .key("northwind-admin")
        .send()
        .await;
    let etag = etag.header("etag").unwrap().to_string();
    let del = app
        .delete(&format!("/webhooks/{hook}"))
        .key("northwind-admin")
        .header("if-match", &etag)
        .send()
        .await;
    assert_eq!(del.status, 204, "{}", del.text());
    let r = report(&app).await;
    assert_ne!(status(&r, "webhook_signatures_verified"), "fail", "{r}");
    assert!(!evidence(&r, "webhook_signatures_verified").contains(d["id"].as_str().unwrap()));
}

/// With the plugin's defaults (seeded, a restore before each test), a webhook made in one test is
/// gone after the restore, and the next test makes it again with the same id at another URL: the
/// first test's drill does not count for it, and the two drills never share an id (issue 29 §3:
/// the second one was a 500 `UNIQUE constraint failed: drills.id`).
#[tokio::test]
async fn drills_of_a_webhook_gone_after_a_restore_are_ignored_and_ids_never_collide() {
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(crate::sandbox_clock::FROZEN_AT));
        l.sandbox_seed = Some(7);
        l.sandbox_simulate_fleet = Some(false);
    })
    .await;
    app.post("/_sandbox/snapshots")
        .key(OP)
        .json(&json!({"name": "clean"}))
        .send()
        .await
        .ok();
    let restore = || async {
        app.post("/_sandbox/snapshots/clean/restore")
            .key(OP)
            .send()
            .await
            .ok()
    };
    // Test one: a careless receiver.
    restore().await;
    let careless = Receiver::with(Policy::Careless).await;
    let first = hook_to(&app, &careless).await;
    let d1 = drill(&app, &first, "bad_signature").await;
    assert_eq!(d1["verdict"], "fail");
    // Test two: the world rewound, the same writes, another receiver.
    restore().await;
    let careful = Receiver::with(Policy::Careful).await;
    let second = hook_to(&app, &careful).await;
    assert_eq!(second, first, "seeded: the same id again");
    let d2 = drill(&app, &second, "bad_signature").await;
    assert_eq!(d2["verdict"], "pass");
    assert_ne!(d1["id"], d2["id"]);
    assert_ne!(
        d1["attempts"][0]["webhook_id"], d2["attempts"][0]["webhook_id"],
        "the drills' deliveries have ids of their own too"
    );
    let r = report(&app).await;
    assert_ne!(status(&r, "webhook_signatures_verified"), "fail", "{r}");
    assert!(!evidence(&r, "webhook_signatures_verified").contains(d1["id"].as_str().unwrap()));
}

/// A receiver that skips verification when `webhook-signature` is absent passes the
/// `bad_signature` drill and fails `missing_signature`, and so the check.
#[tokio::test]
async fn a_receiver_that_skips_verification_without_a_signature_fails() {
    let app = sandbox().await;
    let lax = Receiver::with(Policy::SkipsMissingSignature).await;
    let hook = hook_to(&app, &lax).await;
    assert_eq!(drill(&app, &hook, "bad_signature").await["verdict"], "pass");
    let missing = drill(&app, &hook, "missing_signature").await;
    assert_eq!(missing["verdict"], "fail");
    assert_eq!(missing["attempts"][0]["status"], 200);
    let r = report(&app).await;
    assert_eq!(status(&r, "webhook_signatures_verified"), "fail", "{r}");
    assert_eq!(
        evidence(&r, "webhook_signatures_verified"),
        [missing["id"].as_str().unwrap().to_string()].into()
    );
}

/// A receiver that refuses old timestamps but accepts one 10 minutes ahead fails.
#[tokio::test]
async fn a_receiver_that_accepts_a_future_timestamp_fails() {
    let app = sandbox().await;
    let past_only = Receiver::with(Policy::PastOnly).await;
    let hook = hook_to(&app, &past_only).await;
    assert_eq!(
        drill(&app, &hook, "stale_timestamp").await["verdict"],
        "pass"
    );
    let future = drill(&app, &hook, "future_timestamp").await;
    assert_eq!(future["verdict"], "fail");
    let r = report(&app).await;
    assert_eq!(
        status(&r, "webhook_stale_timestamp_rejected"),
        "fail",
        "{r}"
    );
    assert_eq!(
        evidence(&r, "webhook_stale_timestamp_rejected"),
        [future["id"].as_str().unwrap().to_string()].into()
    );
}

/// Speed is judged apart: a receiver that refuses in milliseconds what it should accept fails the
/// drill's own check, not `webhook_responds_fast`; one that answers after 5 s fails that.
#[tokio::test]
async fn responds_fast_judges_speed_only() {
    let app = sandbox().await;
    let refuses = Receiver::with(Policy::RefusesAll).await;
    let hook = hook_to(&app, &refuses).await;
    let dup = drill(&app, &hook, "duplicate").await;
    assert_eq!(dup["verdict"], "fail");
    drill(&app, &demo_sink_hook(&app), "duplicate").await;
    let r = report(&app).await;
    assert_eq!(status(&r, "webhook_duplicates_tolerated"), "fail", "{r}");
    assert_eq!(status(&r, "webhook_responds_fast"), "pass", "{r}");

    let app = sandbox().await;
    let slow = Receiver::with(Policy::Slow(5_300)).await;
    let hook = hook_to(&app, &slow).await;
    let late = drill(&app, &hook, "bad_signature").await;
    // Refused, as it should be, but late.
    assert_eq!(late["verdict"], "pass", "{late}");
    assert!(late["attempts"][0]["latency_ms"].as_i64().unwrap() > 5_000);
    let r = report(&app).await;
    assert_eq!(status(&r, "webhook_responds_fast"), "fail", "{r}");
    assert_eq!(
        evidence(&r, "webhook_responds_fast"),
        [late["id"].as_str().unwrap().to_string()].into()
    );
}

/// Drills reach the built-in sink through its `127.0.0.1:0` alias, and the sink answers like a
/// careful receiver: the demo world's own webhook passes every drill, and the sink kept only what
/// it accepted.
#[tokio::test]
async fn the_builtin_sink_is_reached_and_passes_every_drill() {
    let app = sandbox().await;
    let hook = demo_sink_hook(&app);
    let drills = drill_every_kind(&app, &hook, "northwind-admin", |_| {}).await;
    for (kind, d) in &drills {
        assert_eq!(d["verdict"], "pass", "{kind}: {d}");
        assert!(
            d["attempts"]
                .as_array()
                .unwrap()
                .iter()
                .all(|a| a["error"].is_null()),
            "{kind}: {d}"
        );
    }
    for kind in [
        "bad_signature",
        "missing_signature",
        "stale_timestamp",
        "future_timestamp",
    ] {
        assert_eq!(drills[kind]["attempts"][0]["status"], 400, "{kind}");
    }
    let kept = app
        .get("/_sandbox/sink/northwind-grocers")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let kept = kept["data"].as_array().unwrap();
    // duplicate (2, the second marked), out_of_order (2), rotation (1).
    assert_eq!(kept.len(), 5, "{kept:?}");
    assert_eq!(kept.iter().filter(|d| d["duplicate"] == true).count(), 1);
    assert!(kept.iter().all(|d| d["event_type"] == "webhook.test"));
    let r = report(&app).await;
    for id in WEBHOOK_CHECKS {
        assert_eq!(status(&r, id), "pass", "{id}: {r}");
    }
}
