//! The simulated fleet and proof-of-play: screens heartbeat and play on the sandbox clock, the
//! operator scripts them, players report plays, and the report sums both.

use crate::helpers::{company_id, TestApp};
use crate::sandbox_clock::{frozen, FROZEN_AT};
use serde_json::{json, Value};
use std::collections::BTreeMap;

const HOUR: i64 = 3_600;
const DAY: i64 = 86_400;

fn rfc(t: i64) -> String {
    signage::time::rfc3339(t)
}

async fn advance(app: &TestApp, seconds: i64) -> Value {
    app.post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({ "seconds": seconds }))
        .send()
        .await
        .ok()
}

async fn simulate(app: &TestApp, device: &str, body: Value) -> crate::helpers::TestResponse {
    app.post(&format!("/_sandbox/devices/{device}/simulate"))
        .key("sandbox-operator")
        .json(&body)
        .send()
        .await
}

/// Every device's profile, by id.
fn profiles(app: &TestApp) -> BTreeMap<String, String> {
    app.sql(|c| {
        c.prepare("SELECT device_id, profile FROM device_simulations")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect()
    })
}

/// Status of every device visible to both demo accounts' read keys.
async fn statuses(app: &TestApp) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for key in ["northwind-readonly", "harborview-readwrite"] {
        for d in app.collect_all("/devices", key, 100).await {
            out.insert(
                d["id"].as_str().unwrap().to_string(),
                d["status"].as_str().unwrap().to_string(),
            );
        }
    }
    out
}

/// A steady screen of Northwind Grocers with an active ad that has no promotion (so it plays
/// every second), and that ad.
fn steady_screen(app: &TestApp) -> (String, String) {
    let grocers = company_id("Northwind Grocers");
    app.sql(|c| {
        c.query_row(
            "SELECT s.device_id, a.id FROM device_simulations s
             JOIN devices d ON d.id = s.device_id
             JOIN ad_assignments x ON x.device_id = s.device_id
             JOIN ads a ON a.id = x.ad_id
             WHERE s.profile = 'steady' AND d.company_id = ?1 AND a.status = 'active'
               AND a.promotion_id IS NULL
             ORDER BY 1, 2 LIMIT 1",
            [&grocers],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    })
}

#[tokio::test]
async fn the_fixture_fleet_has_every_profile() {
    let app = frozen().await;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for p in profiles(&app).values() {
        *counts.entry(p.clone()).or_default() += 1;
    }
    let expected: BTreeMap<String, usize> = [
        ("steady", 11),
        ("flaky", 5),
        ("failing_playback", 4),
        ("offline", 8),
        ("never_seen", 2),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(counts, expected);
}

#[tokio::test]
async fn a_simulated_week_keeps_steady_screens_online_and_offline_ones_offline() {
    let app = frozen().await;
    let profiles = profiles(&app);
    let moved = advance(&app, 7 * DAY).await;
    assert_eq!(moved["now"], rfc(FROZEN_AT + 7 * DAY));
    // Flaky screens dropped out and came back; failing ones reported errors; nothing per play.
    assert!(moved["transitions"]["fleet.dropped_out"].as_u64().unwrap() >= 5);
    assert!(moved["transitions"]["fleet.came_back"].as_u64().unwrap() >= 5);
    assert!(
        moved["transitions"]["fleet.playback_error"]
            .as_u64()
            .unwrap()
            >= 4
    );
    assert!(moved["transitions"]["fleet.plays"].as_u64().unwrap() > 1_000);
    assert!(moved["events"].get("device.playback_recorded").is_none());
    // Bounded: hours, not beats, stop the clock (5 flaky x 2 x 14 + 4 failing x 21 + start).
    assert!(moved["steps"].as_u64().unwrap() < 300, "{moved}");

    let statuses = statuses(&app).await;
    assert_eq!(statuses.len(), 30);
    for (device, status) in &statuses {
        let expected = match profiles[device].as_str() {
            "steady" | "failing_playback" => "online",
            "offline" => "offline",
            "never_seen" => "never_seen",
            _ => continue,
        };
        assert_eq!(status, expected, "{device} ({})", profiles[device]);
    }
    // The last heartbeat is the last beat of the 60 s grid.
    let (device, _) = steady_screen(&app);
    let got = app
        .get(&format!("/devices/{device}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(got["last_heartbeat_at"], rfc(FROZEN_AT + 7 * DAY));
    // A failing screen's errors are where diagnostics read them.
    let failing = profiles
        .iter()
        .find(|(d, p)| *p == "failing_playback" && statuses.contains_key(*d))
        .map(|(d, _)| d.clone())
        .unwrap();
    let key = if app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM devices WHERE id = ?1 AND company_id IN (?2, ?3)",
            [
                &failing,
                &company_id("Northwind Grocers"),
                &company_id("Northwind Pharmacy"),
            ],
            |r| r.get::<_, i64>(0),
        )
    }) == 1
    {
        "northwind-readonly"
    } else {
        "harborview-readwrite"
    };
    let diag = app
        .get(&format!("/devices/{failing}/diagnostics"))
        .key(key)
        .send()
        .await
        .ok();
    let latest = &diag["recent_playback_errors"][0];
    assert!(latest["occurred_at"].as_str().unwrap() > rfc(FROZEN_AT).as_str());
    assert!([
        "MEDIA_DECODE_FAILED",
        "CODEC_UNSUPPORTED",
        "NETWORK_TIMEOUT",
        "RENDER_STALLED"
    ]
    .contains(&latest["code"].as_str().unwrap()));
}

#[tokio::test]
async fn step_sizes_do_not_change_what_the_fleet_did() {
    let one = frozen().await;
    let many = frozen().await;
    advance(&one, DAY).await;
    for _ in 0..24 {
        advance(&many, HOUR).await;
    }
    let grocers = company_id("Northwind Grocers");
    for path in [
        format!(
            "/reports/proof-of-play?company_id={grocers}&from={}&to={}",
            rfc(FROZEN_AT - DAY),
            rfc(FROZEN_AT + 2 * DAY)
        ),
        "/devices?limit=50".to_string(),
    ] {
        let a = one.get(&path).key("northwind-readonly").send().await;
        let b = many.get(&path).key("northwind-readonly").send().await;
        assert_eq!(a.status, 200, "{}", a.text());
        assert_eq!(a.text(), b.text(), "{path}");
    }
}

#[tokio::test]
async fn nothing_is_written_until_a_grid_beat_passes() {
    let app = frozen().await;
    let (device, _) = steady_screen(&app);
    let beat = |app: &TestApp| -> (i64, i64) {
        app.sql(|c| {
            c.query_row(
                "SELECT (SELECT last_heartbeat_at FROM devices WHERE id = ?1),
                        (SELECT count(*) FROM playbacks)",
                [&device],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
    };
    let before = beat(&app);
    advance(&app, 59).await;
    assert_eq!(beat(&app), before, "no grid beat passed: nothing written");
    advance(&app, 1).await;
    let after = beat(&app);
    assert_eq!(after.0, FROZEN_AT + 60);
    assert!(after.1 > 0);
}

#[tokio::test]
async fn switching_a_profile_changes_what_the_next_advance_does() {
    let app = frozen().await;
    let (steady, _) = steady_screen(&app);
    let offline: String = app.sql(|c| {
        c.query_row(
            "SELECT s.device_id FROM device_simulations s JOIN devices d ON d.id = s.device_id
             WHERE s.profile = 'offline' AND d.company_id = ?1 ORDER BY 1 LIMIT 1",
            [&company_id("Northwind Grocers")],
            |r| r.get(0),
        )
    });
    let status = |id: String| {
        let app = &app;
        async move {
            app.get(&format!("/devices/{id}"))
                .key("northwind-readonly")
                .send()
                .await
                .ok()["status"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    let set = simulate(&app, &steady, json!({"profile": "offline"}))
        .await
        .ok();
    assert_eq!(set["object"], "sandbox_device_simulation");
    assert_eq!(set["profile"], "offline");
    assert_eq!(set["next_transition_at"], Value::Null);
    let woke = simulate(&app, &offline, json!({"profile": "steady"}))
        .await
        .ok();
    assert_eq!(woke["profile_since"], rfc(FROZEN_AT));
    assert_eq!(
        status(offline.clone()).await,
        "online",
        "a screen switched on beats at once"
    );
    advance(&app, HOUR).await;
    assert_eq!(status(steady.clone()).await, "offline");
    assert_eq!(status(offline.clone()).await, "online");
    let flaky = simulate(&app, &steady, json!({"profile": "flaky"}))
        .await
        .ok();
    assert!(flaky["next_transition_at"].is_string());
    let failing = simulate(&app, &offline, json!({"profile": "failing_playback"}))
        .await
        .ok();
    let due = failing["next_transition_at"].as_str().unwrap().to_string();
    let errors_before: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM playback_errors WHERE device_id = ?1",
            [&offline],
            |r| r.get(0),
        )
    });
    let moved = app
        .post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({ "to": due }))
        .send()
        .await
        .ok();
    assert!(
        moved["transitions"]["fleet.playback_error"]
            .as_u64()
            .unwrap()
            >= 1
    );
    let errors_after: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM playback_errors WHERE device_id = ?1",
            [&offline],
            |r| r.get(0),
        )
    });
    assert_eq!(errors_after, errors_before + 1);
}

#[tokio::test]
async fn a_one_off_playback_error_shows_in_diagnostics() {
    let app = frozen().await;
    let (device, _) = steady_screen(&app);
    let r = simulate(
        &app,
        &device,
        json!({"event": "playback_error", "code": "HDMI_UNPLUGGED", "message": "Cable out"}),
    )
    .await
    .ok();
    assert_eq!(r["profile"], "steady", "a one-off event keeps the profile");
    assert_eq!(r["playback_error"]["code"], "HDMI_UNPLUGGED");
    let diag = app
        .get(&format!("/devices/{device}/diagnostics"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let latest = &diag["recent_playback_errors"][0];
    assert_eq!(latest["code"], "HDMI_UNPLUGGED");
    assert_eq!(latest["message"], "Cable out");
    assert_eq!(latest["occurred_at"], rfc(FROZEN_AT));
    assert_eq!(latest["id"], r["playback_error"]["id"]);
}

#[tokio::test]
async fn simulate_is_the_operators_and_checks_what_it_is_given() {
    let app = frozen().await;
    let (device, _) = steady_screen(&app);
    for bad in [
        json!({"profile": "sleepy"}),
        json!({"profile": "never_seen"}),
        json!({"event": "reboot", "code": "X"}),
        json!({"event": "playback_error"}),
        json!({"event": "playback_error", "code": "no spaces"}),
        json!({"event": "playback_error", "code": "X", "message": ""}),
        json!({"profile": "steady", "event": "playback_error", "code": "X"}),
        json!({"profile": "steady", "code": "X"}),
        json!({}),
        json!({"profile": "steady", "extra": 1}),
    ] {
        simulate(&app, &device, bad.clone()).await.problem(422);
    }
    simulate(
        &app,
        "dev_doesnotexist00000000",
        json!({"profile": "steady"}),
    )
    .await
    .problem(404);
    for key in ["northwind-admin", "northwind-readwrite"] {
        app.post(&format!("/_sandbox/devices/{device}/simulate"))
            .key(key)
            .json(&json!({"profile": "offline"}))
            .send()
            .await
            .problem(403);
    }
    assert_eq!(
        profiles(&app)[&device],
        "steady",
        "refused calls changed nothing"
    );
}

#[tokio::test]
async fn the_fleet_can_be_turned_off() {
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.sandbox_simulate_fleet = Some(false);
    })
    .await;
    let (device, _) = steady_screen(&app);
    let moved = advance(&app, HOUR).await;
    assert!(moved["transitions"].get("fleet.plays").is_none(), "{moved}");
    let got = app
        .get(&format!("/devices/{device}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(got["status"], "offline");
    let rows: i64 = app.sql(|c| c.query_row("SELECT count(*) FROM playbacks", [], |r| r.get(0)));
    assert_eq!(rows, 0);
}

#[tokio::test]
async fn simulated_and_reported_plays_sum_up_in_the_report() {
    let app = frozen().await;
    let (device, ad) = steady_screen(&app);
    let grocers = company_id("Northwind Grocers");
    advance(&app, 2 * HOUR).await;
    let played = app
        .post(&format!("/devices/{device}/playbacks"))
        .key("northwind-readwrite")
        .json(&json!({"ad_id": ad, "started_at": rfc(FROZEN_AT + 1_800), "duration_seconds": 15}))
        .send()
        .await;
    assert_eq!(played.status, 201, "{}", played.text());
    let played = played.json();
    assert!(played["id"].as_str().unwrap().starts_with("pb_"));
    assert_eq!(played["source"], "player");
    assert_eq!(played["plays"], 1);
    assert_eq!(played["created_at"], rfc(FROZEN_AT + 2 * HOUR));

    // The simulator's rows: one per ad and hour; a steady screen with an ad plays every second.
    // (Those before the load are the world's history, written as the simulator's own.)
    let rows = app
        .collect_all(
            &format!(
                "/devices/{device}/playbacks?source=simulator&from={}",
                rfc(FROZEN_AT)
            ),
            "northwind-readonly",
            1,
        )
        .await;
    let simulated: i64 = rows
        .iter()
        .map(|r| r["duration_seconds"].as_i64().unwrap())
        .sum();
    let simulated_plays: i64 = rows.iter().map(|r| r["plays"].as_i64().unwrap()).sum();
    assert_eq!(simulated, 2 * HOUR);
    assert!(rows.iter().all(|r| r["source"] == "simulator"
        && [rfc(FROZEN_AT), rfc(FROZEN_AT + HOUR)]
            .contains(&r["started_at"].as_str().unwrap().to_string())));

    let report = app
        .get(&format!(
            "/reports/proof-of-play?company_id={grocers}&from={}&to={}",
            rfc(FROZEN_AT),
            rfc(FROZEN_AT + 2 * HOUR)
        ))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(report["object"], "proof_of_play_report");
    let line = report["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["device_id"] == device.as_str())
        .unwrap();
    assert_eq!(line["seconds"], simulated + 15);
    assert_eq!(line["plays"], simulated_plays + 1);
    let ads: i64 = report["ads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["seconds"].as_i64().unwrap())
        .sum();
    assert_eq!(report["seconds"], ads);
    let in_db: i64 = app.sql(|c| {
        c.query_row(
            "SELECT sum(duration_seconds) FROM playbacks WHERE company_id = ?1
               AND started_at >= ?2 AND started_at < ?3",
            rusqlite::params![&grocers, FROZEN_AT, FROZEN_AT + 2 * HOUR],
            |r| r.get(0),
        )
    });
    assert_eq!(report["seconds"], in_db);

    // Filters of the list: the ad, the range and the source.
    let mine = app
        .get(&format!(
            "/devices/{device}/playbacks?source=player&ad_id={ad}&from={}&to={}",
            rfc(FROZEN_AT + 1_800),
            rfc(FROZEN_AT + 1_801)
        ))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(mine["data"].as_array().unwrap().len(), 1);
    assert_eq!(mine["data"][0]["id"], played["id"]);
}

#[tokio::test]
async fn playbacks_are_checked_and_kept_to_their_company() {
    // Without the fleet: the report counts the plays posted here and nothing else (no history).
    let app = crate::sandbox_clock::frozen_without_fleet().await;
    let (device, ad) = steady_screen(&app);
    let post = |key: &'static str, device: String, body: Value| {
        let app = &app;
        async move {
            app.post(&format!("/devices/{device}/playbacks"))
                .key(key)
                .json(&body)
                .send()
                .await
        }
    };
    let ok = json!({"ad_id": ad, "started_at": rfc(FROZEN_AT - 60), "duration_seconds": 30});
    for (field, bad) in [
        (
            "/started_at",
            json!({"ad_id": ad, "started_at": rfc(FROZEN_AT + 1), "duration_seconds": 30}),
        ),
        (
            "/started_at",
            json!({"ad_id": ad, "started_at": "yesterday", "duration_seconds": 30}),
        ),
        (
            "/duration_seconds",
            json!({"ad_id": ad, "started_at": rfc(FROZEN_AT), "duration_seconds": 0}),
        ),
        (
            "/duration_seconds",
            json!({"ad_id": ad, "started_at": rfc(FROZEN_AT), "duration_seconds": 86_401}),
        ),
        (
            "/ad_id",
            json!({"ad_id": "dev_x", "started_at": rfc(FROZEN_AT), "duration_seconds": 30}),
        ),
    ] {
        let p = post("northwind-readwrite", device.clone(), bad)
            .await
            .problem(422);
        assert_eq!(p["errors"][0]["field"], field, "{p}");
    }
    post(
        "northwind-readwrite",
        device.clone(),
        json!({"ad_id": ad, "started_at": rfc(FROZEN_AT), "duration_seconds": 30, "plays": 9}),
    )
    .await
    .problem(422);
    // An ad of another company is unknown here; one of the company not assigned to the screen, 409.
    let harbor_ad: String = app.sql(|c| {
        c.query_row(
            "SELECT id FROM ads WHERE company_id = ?1 ORDER BY id LIMIT 1",
            [&company_id("Harborview Hotels")],
            |r| r.get(0),
        )
    });
    post(
        "northwind-readwrite",
        device.clone(),
        json!({"ad_id": harbor_ad, "started_at": rfc(FROZEN_AT), "duration_seconds": 30}),
    )
    .await
    .problem(404);
    let unassigned: String = app.sql(|c| {
        c.query_row(
            "SELECT id FROM ads WHERE company_id = ?1 AND id NOT IN
               (SELECT ad_id FROM ad_assignments WHERE device_id = ?2) ORDER BY id LIMIT 1",
            [&company_id("Northwind Grocers"), &device],
            |r| r.get(0),
        )
    });
    let p = post(
        "northwind-readwrite",
        device.clone(),
        json!({"ad_id": unassigned, "started_at": rfc(FROZEN_AT), "duration_seconds": 30}),
    )
    .await
    .problem(409);
    assert_eq!(p["code"], "ad_not_assigned");
    // Another company's screen is 404 (before its body is looked at); read-only keys cannot post.
    let pharmacy_device: String = app.sql(|c| {
        c.query_row(
            "SELECT id FROM devices WHERE company_id = ?1 ORDER BY id LIMIT 1",
            [&company_id("Northwind Pharmacy")],
            |r| r.get(0),
        )
    });
    post(
        "northwind-grocers-write",
        pharmacy_device.clone(),
        json!({}),
    )
    .await
    .problem(404);
    post("harborview-readwrite", device.clone(), ok.clone())
        .await
        .problem(404);
    app.get(&format!("/devices/{device}/playbacks"))
        .key("harborview-readwrite")
        .send()
        .await
        .problem(404);
    post("northwind-readonly", device.clone(), ok.clone())
        .await
        .problem(403);
    assert_eq!(
        post("northwind-readwrite", device.clone(), ok).await.status,
        201
    );

    // The list and the report refuse junk and other companies.
    for q in [
        "ad_id=dev_1",
        "from=soon",
        "cursor=ad_1",
        "source=tv",
        "limit=0",
    ] {
        app.get(&format!("/devices/{device}/playbacks?{q}"))
            .key("northwind-readonly")
            .send()
            .await
            .problem(422);
    }
    let grocers = company_id("Northwind Grocers");
    app.get(&format!("/reports/proof-of-play?company_id={grocers}"))
        .key("harborview-readwrite")
        .send()
        .await
        .problem(404);
    // An empty window is an empty report; a long one is answered (it costs what it holds).
    for q in [
        format!("from={}&to={}", rfc(FROZEN_AT), rfc(FROZEN_AT)),
        format!("from={}&to={}", rfc(FROZEN_AT + DAY), rfc(FROZEN_AT)),
    ] {
        let empty = app
            .get(&format!("/reports/proof-of-play?{q}"))
            .key("northwind-readonly")
            .send()
            .await
            .ok();
        assert_eq!(
            (empty["plays"].as_i64(), empty["seconds"].as_i64()),
            (Some(0), Some(0))
        );
    }
    app.get(&format!(
        "/reports/proof-of-play?from={}&to={}",
        rfc(FROZEN_AT - 366 * DAY),
        rfc(FROZEN_AT)
    ))
    .key("northwind-readonly")
    .send()
    .await
    .ok();
    // A year at most: a longer range is asked for in parts.
    app.get(&format!(
        "/reports/proof-of-play?from={}&to={}",
        rfc(FROZEN_AT - 400 * DAY),
        rfc(FROZEN_AT)
    ))
    .key("northwind-readonly")
    .send()
    .await
    .problem(422);
    for q in ["to=later".to_string(), "company_id=nope".to_string()] {
        app.get(&format!("/reports/proof-of-play?{q}"))
            .key("northwind-readonly")
            .send()
            .await
            .problem(422);
    }
    // Without a company: every visible one; Harborview sees none of Northwind's plays.
    let theirs = app
        .get("/reports/proof-of-play")
        .key("harborview-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(theirs["company_id"], Value::Null);
    assert!(theirs["devices"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["device_id"] != device.as_str()));
    let ours = app
        .get("/reports/proof-of-play")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(ours["plays"], 1);
    assert_eq!(ours["seconds"], 30);
    assert_eq!(ours["from"], rfc(FROZEN_AT - 7 * DAY));
}

#[tokio::test]
async fn proof_of_play_is_readable_through_mcp() {
    use crate::helpers::mcp::{call_err, call_ok};
    let app = frozen().await;
    let (device, ad) = steady_screen(&app);
    advance(&app, HOUR).await;
    let grocers = company_id("Northwind Grocers");
    let report = call_ok(
        &app,
        "northwind-readonly",
        "get_proof_of_play_report",
        json!({"company_id": grocers, "from": rfc(FROZEN_AT), "to": rfc(FROZEN_AT + HOUR)}),
    )
    .await;
    let rest = app
        .get(&format!(
            "/reports/proof-of-play?company_id={grocers}&from={}&to={}",
            rfc(FROZEN_AT),
            rfc(FROZEN_AT + HOUR)
        ))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(report, rest, "the tool answers what the route does");
    assert!(report["seconds"].as_i64().unwrap() >= HOUR);
    let list = call_ok(
        &app,
        "northwind-readonly",
        "list_device_playbacks",
        json!({"device_id": device, "ad_id": ad}),
    )
    .await;
    assert_eq!(list["data"][0]["ad_id"], ad.as_str());
    assert_eq!(list["data"][0]["source"], "simulator");
    // Another company's screen is as unknown through MCP as over REST.
    call_err(
        &app,
        "harborview-readwrite",
        "list_device_playbacks",
        json!({"device_id": device}),
    )
    .await;
}

#[tokio::test]
async fn the_new_queries_walk_indexes() {
    let app = frozen().await;
    let plans: Vec<String> = app.sql(|c| {
        let mut out = Vec::new();
        for sql in [
            "SELECT id FROM playbacks WHERE device_id = 'dev_1' AND id < '~' ORDER BY id DESC LIMIT 21",
            "SELECT id FROM playbacks WHERE device_id = 'dev_1' AND id < '~' AND ad_id = 'ad_1' ORDER BY id DESC LIMIT 21",
            "SELECT ad_id, sum(plays) FROM playbacks WHERE company_id IN ('cmp_1') AND started_at >= 0 AND started_at < 9 GROUP BY ad_id",
            "SELECT min(next_due_at) FROM device_simulations WHERE next_due_at <= 5",
            "UPDATE playbacks SET plays = plays + 1 WHERE device_id = 'd' AND ad_id = 'a' AND started_at = 0 AND source = 'simulator'",
        ] {
            let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
            let detail: Vec<String> = stmt
                .query_map([], |r| r.get::<_, String>(3))?
                .collect::<Result<_, _>>()?;
            out.push(format!("{sql} => {}", detail.join("; ")));
        }
        Ok(out)
    });
    // One index serves a screen's plays of one ad and an ad's deletion (V37).
    assert!(
        plans[1].ends_with("playbacks_by_ad_device (ad_id=? AND device_id=? AND id<?)"),
        "{}",
        plans[1]
    );
    let cascade: Vec<String> = app.sql(|c| {
        c.prepare("EXPLAIN QUERY PLAN DELETE FROM ads WHERE id = 'ad_1'")?
            .query_map([], |r| r.get::<_, String>(3))?
            .collect()
    });
    assert!(
        cascade
            .iter()
            .any(|d| d == "SEARCH playbacks USING COVERING INDEX playbacks_by_ad_device (ad_id=?)"),
        "{cascade:?}"
    );
    for plan in plans {
        let (_, detail) = plan.split_once(" => ").unwrap();
        assert!(detail.contains("USING"), "{plan}");
        assert!(!detail.contains("SCAN playbacks"), "{plan}");
        assert!(!detail.contains("SCAN device_simulations"), "{plan}");
    }
}

#[tokio::test]
async fn a_device_made_through_the_api_is_not_simulated_until_given_a_profile() {
    let app = frozen().await;
    let hotels = company_id("Harborview Hotels");
    let made = app
        .post("/devices")
        .key("harborview-readwrite")
        .json(&json!({"company_id": hotels, "name": "New lobby screen", "platform": "linux"}))
        .send()
        .await;
    assert_eq!(made.status, 201, "{}", made.text());
    let id = made.json()["id"].as_str().unwrap().to_string();
    // Another account's reset re-derives its own fixture screens only.
    app.post("/_sandbox/reset")
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert!(!profiles(&app).contains_key(&id));
    advance(&app, HOUR).await;
    let status = |id: String| {
        let app = &app;
        async move {
            app.get(&format!("/devices/{id}"))
                .key("harborview-readwrite")
                .send()
                .await
                .ok()["status"]
                .clone()
        }
    };
    assert_eq!(status(id.clone()).await, "never_seen");
    simulate(&app, &id, json!({"profile": "steady"})).await.ok();
    advance(&app, DAY).await;
    assert_eq!(status(id.clone()).await, "online");
}

/// A screen's heartbeat state: id, last heartbeat, last update, current ad, presence.
type Heartbeat = (String, Option<i64>, i64, Option<String>, Option<String>);

/// Every screen's heartbeat state, as stored.
fn heartbeats(app: &TestApp) -> Vec<Heartbeat> {
    app.sql(|c| {
        c.prepare(
            "SELECT id, last_heartbeat_at, updated_at, current_ad_id, presence FROM devices
             ORDER BY id",
        )?
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect()
    })
}

/// The presence events, with the screen as their `data` showed it.
fn presence_events(app: &TestApp) -> Vec<(String, String, i64, String)> {
    app.sql(|c| {
        c.prepare(
            "SELECT type, resource_id, created_at, payload FROM events
             WHERE type IN ('device.online', 'device.offline')
             ORDER BY created_at, type, resource_id",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect()
    })
}

/// An advance holds the beats of the screens it keeps up and writes each once at its commit
/// (`sandbox::beats`). Nothing of that shows: a day in one advance leaves every screen's heartbeat,
/// update instant, current ad and presence, and every presence event with the screen in its data,
/// exactly as a day in 96 advances of 15 minutes, each its own transaction. The day has flaky
/// screens dropping out (their last beat must be in before the offline check reads it) and coming
/// back (online again at once).
#[tokio::test]
async fn held_heartbeats_commit_what_a_write_at_every_step_commits() {
    let one = frozen().await;
    let many = frozen().await;
    let before = presence_events(&one).len();
    let day = advance(&one, DAY).await;
    for _ in 0..96 {
        advance(&many, DAY / 96).await;
    }
    assert!(
        day["transitions"]["fleet.dropped_out"].as_i64() > Some(0)
            && day["transitions"]["fleet.came_back"].as_i64() > Some(0),
        "{day}"
    );
    let events = presence_events(&one);
    assert!(
        events.len() > before && events.iter().any(|e| e.0 == "device.offline"),
        "{events:?}"
    );
    assert_eq!(heartbeats(&one), heartbeats(&many));
    assert_eq!(events, presence_events(&many));
}

/// A screen switched on while reported offline is kept up by the fleet from then on, but is not
/// online yet: its beats are written at once, not held, so the advance's first step finds it
/// heartbeating, records it online and says so (`device.online`), as a player's heartbeat would.
#[tokio::test]
async fn a_screen_switched_on_while_offline_comes_back_at_the_next_step() {
    let app = frozen().await;
    let offline: String = app.sql(|c| {
        c.query_row(
            "SELECT s.device_id FROM device_simulations s JOIN devices d ON d.id = s.device_id
             WHERE s.profile = 'offline' AND d.presence = 'offline' ORDER BY 1 LIMIT 1",
            [],
            |r| r.get(0),
        )
    });
    simulate(&app, &offline, json!({"profile": "steady"}))
        .await
        .ok();
    let day = advance(&app, DAY).await;
    assert!(
        day["transitions"]["device.online"].as_i64() >= Some(1),
        "{day}"
    );
    let presence: String = app.sql(|c| {
        c.query_row(
            "SELECT presence FROM devices WHERE id = ?1",
            [&offline],
            |r| r.get(0),
        )
    });
    assert_eq!(presence, "online");
    let came_back = presence_events(&app)
        .into_iter()
        .filter(|e| e.0 == "device.online" && e.1 == offline)
        .count();
    assert_eq!(came_back, 1);
}
