//! Time passing at the edges (issue 10, item 2): a sandbox starts consistent whatever loaded its
//! fixtures (a fresh start, a reset, an earlier command), devices go offline and come back once
//! per transition, and the platform's own events are not for webhooks.

use crate::helpers::{company_id, TestApp};
use crate::sandbox_clock::{frozen_without_fleet, FROZEN_AT};
use crate::sandbox_timeline::{advance, events_after, last_rowid, timed, DAY};
use serde_json::json;

#[tokio::test]
async fn nothing_fires_at_the_start_of_a_fresh_frozen_sandbox() {
    let app = frozen_without_fleet().await;
    let before = last_rowid(&app);
    // A zero-second advance runs everything due now: nothing is.
    let moved = advance(&app, 0).await;
    assert_eq!(moved["transitions"], json!({}), "{moved}");
    assert_eq!(moved["events"], json!({}), "{moved}");
    assert_eq!(moved["steps"], 0, "{moved}");
    assert!(timed(&events_after(&app, before)).is_empty());
    // A minute later: still nothing (no fixture device is a heartbeat away from the threshold and
    // no window, expiry or due date falls in it).
    let moved = advance(&app, 60).await;
    assert_eq!(moved["events"], json!({}), "{moved}");
}

#[tokio::test]
async fn a_device_goes_offline_once_and_a_heartbeat_brings_it_back_once() {
    let app = frozen_without_fleet().await;
    let device: String = app.sql(|c| {
        c.query_row(
            "SELECT min(d.id) FROM devices d JOIN companies c ON c.id = d.company_id
             WHERE d.presence = 'online' AND c.name = 'Northwind Grocers'",
            [],
            |r| r.get(0),
        )
    });
    let beat = || async {
        let r = app
            .post(&format!("/devices/{device}/heartbeat"))
            .key("northwind-readwrite")
            .json(&json!({"uptime_seconds": 100}))
            .send()
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
    };
    let before = last_rowid(&app);
    // A heartbeat of an online device: no presence event.
    beat().await;
    advance(&app, 10 * 60).await;
    beat().await; // back from offline: device.online, recorded by the heartbeat write
    beat().await; // already online: nothing more
    advance(&app, 10 * 60).await; // offline again: a new transition
    let mine: Vec<(String, i64)> = events_after(&app, before)
        .into_iter()
        .filter(|e| e.2 == device && (e.1 == "device.offline" || e.1 == "device.online"))
        .map(|e| (e.1, e.4))
        .collect();
    let after = app.app.settings.device_offline_after_secs;
    assert_eq!(
        mine,
        vec![
            ("device.offline".to_string(), FROZEN_AT + after + 1),
            ("device.online".to_string(), FROZEN_AT + 600),
            ("device.offline".to_string(), FROZEN_AT + 600 + after + 1),
        ]
    );
    let status = app
        .get(&format!("/devices/{device}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(status["status"], "offline");
}

#[tokio::test]
async fn a_reset_account_starts_consistent_and_fires_nothing_at_once() {
    let app = frozen_without_fleet().await;
    advance(&app, DAY).await;
    let reset = app
        .post("/_sandbox/reset")
        .key("northwind-admin")
        .send()
        .await;
    assert_eq!(reset.status, 200, "{}", reset.text());
    // The reloaded devices are online again (fixtures anchored to now), judged silently.
    let unjudged: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM devices WHERE presence IS NULL AND last_heartbeat_at IS NOT NULL",
            [],
            |r| r.get(0),
        )
    });
    assert_eq!(unjudged, 0);
    let moved = advance(&app, 60).await;
    assert_eq!(moved["events"], json!({}), "{moved}");
    // Their next transitions fire on time, once.
    let moved = advance(&app, 10 * 60).await;
    assert!(
        moved["transitions"]["device.offline"].as_u64().unwrap_or(0) > 0,
        "{moved}"
    );
}

#[tokio::test]
async fn platform_events_are_not_subscribable_and_area_events_are() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    for t in signage::areas::PLATFORM_EVENTS {
        assert!(!signage::events::EVENT_TYPES.contains(t));
        let r = app
            .post("/webhooks")
            .key("northwind-readwrite")
            .json(
                &json!({"company_id": grocers, "url": "https://hooks.example.com/x",
                "event_types": [t]}),
            )
            .send()
            .await;
        assert_eq!(r.status, 422, "{t}: {}", r.text());
    }
    let r = app
        .post("/webhooks")
        .key("northwind-readwrite")
        .json(
            &json!({"company_id": grocers, "url": "https://hooks.example.com/x",
            "event_types": ["promotion.started", "promotion.ended", "device.offline",
                "device.online", "invoice.overdue"]}),
        )
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
}

#[tokio::test]
async fn fixtures_loaded_by_an_earlier_command_are_judged_at_the_next_start() {
    // What `signage migrate` does on a new file: migrations and fixtures, no timeline.
    let path = std::env::temp_dir().join(format!(
        "signage-timeline-{}-{}.db",
        std::process::id(),
        signage::random::unseeded_hex::<6>()
    ));
    let file = path.to_string_lossy().to_string();
    let (db, report) = signage::db::Db::open(
        &file,
        true,
        std::sync::Arc::new(signage::time::Clock::system()),
        None,
    )
    .unwrap();
    assert!(report.fixtures_loaded);
    drop(db);
    let loaded_at = signage::time::wall_now();
    let app = TestApp::spawn_with(|l| {
        l.database = Some(file.clone());
        l.sandbox_clock = Some(Some(loaded_at));
        l.sandbox_simulate_fleet = Some(false);
    })
    .await;
    let unjudged: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM devices WHERE presence IS NULL AND last_heartbeat_at IS NOT NULL",
            [],
            |r| r.get(0),
        )
    });
    assert_eq!(unjudged, 0, "judged at start-up");
    let moved = advance(&app, 10 * 60).await;
    assert!(
        moved["transitions"]["device.offline"].as_u64().unwrap_or(0) > 0,
        "{moved}"
    );
    drop(app);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{file}{suffix}"));
    }
}

#[tokio::test]
async fn with_the_fleet_running_a_fresh_sandbox_still_records_no_event_at_first() {
    // The fleet heartbeats and plays from the first minute (transitions `fleet.plays`), but no
    // screen changes state: no event, and no step per heartbeat.
    let app = crate::sandbox_clock::frozen().await;
    let moved = advance(&app, 60).await;
    assert_eq!(moved["events"], json!({}), "{moved}");
    assert!(moved["steps"].as_u64().unwrap() <= 1, "{moved}");
    let day = advance(&app, DAY).await;
    assert!(
        day["steps"].as_u64().unwrap() < 60,
        "a day of the demo fleet stops at its transitions, not at its heartbeats: {day}"
    );
}
