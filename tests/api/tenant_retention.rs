//! Issue 22 item 6: every growing table has a bound by age and by rows per account, enforced on
//! each clock advance (and tick), without losing a count: plays roll up into daily totals and old
//! scans into per-minute counters, and the reports read both. Small bounds via config.

use crate::helpers::*;
use crate::sandbox_clock::FROZEN_AT;
use serde_json::{json, Value};

const DAY: i64 = 86_400;

async fn advance(app: &TestApp, seconds: i64) -> Value {
    app.post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({ "seconds": seconds }))
        .send()
        .await
        .ok()
}

fn count(app: &TestApp, sql: &str) -> i64 {
    app.sql(|c| c.query_row(sql, [], |r| r.get(0)))
}

async fn bounded() -> TestApp {
    TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.rate_limit_per_second = Some(0.0);
        l.retention_max_age_days = Some(3);
        l.retention_max_rows_per_account = Some(100);
        l.retention_idempotency_hours = Some(1);
        l.retention_playback_rollup_days = Some(2);
        l.retention_batch_rows = Some(7);
    })
    .await
}

#[tokio::test]
async fn writes_past_the_bounds_are_pruned_by_rows_and_by_age() {
    let app = bounded().await;
    let device: String = app.sql(|c| {
        c.query_row(
            "SELECT id FROM devices WHERE company_id = ?1 ORDER BY id LIMIT 1",
            [company_id("Northwind Grocers")],
            |r| r.get(0),
        )
    });
    for i in 0..130 {
        app.patch(&format!("/devices/{device}"))
            .key("northwind-readwrite")
            .json(&json!({"name": format!("Screen {i}")}))
            .send()
            .await
            .ok();
        let r = app
            .post(&format!("/devices/{device}/heartbeat"))
            .key("northwind-readwrite")
            .header("idempotency-key", &format!("beat-{i}"))
            .json(&json!({}))
            .send()
            .await;
        assert!(r.status.is_success(), "{}", r.text());
    }
    let grocers = company_id("Northwind Grocers");
    let account = key("northwind-readwrite").account_id;
    let events_sql = format!("SELECT count(*) FROM events WHERE company_id = '{grocers}'");
    let audit_sql = format!("SELECT count(*) FROM audit_log WHERE account_id = '{account}'");
    assert!(count(&app, &events_sql) > 100, "the writes made events");
    assert!(count(&app, &audit_sql) > 100);
    assert_eq!(count(&app, "SELECT count(*) FROM idempotency_keys"), 130);

    // An advance enforces the bounds: rows per owner at once, idempotency records past their hour.
    let newest_event: String = app.sql(|c| {
        c.query_row(
            "SELECT max(id) FROM events WHERE company_id = ?1",
            [&grocers],
            |r| r.get(0),
        )
    });
    advance(&app, 2 * 3600).await;
    assert!(count(&app, &events_sql) <= 100);
    assert!(count(&app, &audit_sql) <= 100);
    assert_eq!(count(&app, "SELECT count(*) FROM idempotency_keys"), 0);
    // The newest rows are the ones kept, and the events feed still pages over them.
    let kept: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM events WHERE id = ?1",
            [&newest_event],
            |r| r.get(0),
        )
    });
    assert_eq!(kept, 1);
    let feed = app.collect_all("/events", "northwind-readonly", 100).await;
    assert!(!feed.is_empty());
    // A replayed key older than the bound runs anew instead of replaying.
    let again = app
        .post(&format!("/devices/{device}/heartbeat"))
        .key("northwind-readwrite")
        .header("idempotency-key", "beat-0")
        .json(&json!({}))
        .send()
        .await;
    assert!(again.status.is_success());
    assert!(again.header("idempotent-replayed").is_none());

    // Past the age bound (3 days), the history of those writes is gone.
    advance(&app, 4 * DAY).await;
    let old = FROZEN_AT + 3 * 3600;
    assert_eq!(
        count(
            &app,
            &format!("SELECT count(*) FROM events WHERE created_at < {old}")
        ),
        0
    );
    assert_eq!(
        count(
            &app,
            &format!("SELECT count(*) FROM audit_log WHERE at < {old}")
        ),
        0
    );
}

#[tokio::test]
async fn plays_and_scans_are_rolled_up_and_the_reports_do_not_change() {
    let app = bounded().await;
    // Whole UTC days: a daily total counts in the range that holds its day's start.
    let d0 = FROZEN_AT.div_euclid(DAY) * DAY;
    advance(&app, d0 + 2 * DAY - FROZEN_AT).await;
    let range = format!(
        "/reports/proof-of-play?from={}&to={}",
        signage::time::rfc3339(d0),
        signage::time::rfc3339(d0 + DAY)
    );
    let before = app.get(&range).key("northwind-readonly").send().await.ok();
    assert!(before["plays"].as_i64().unwrap() > 0, "{before}");
    let promo: String = app.sql(|c| {
        c.query_row(
            "SELECT q.promotion_id FROM qr_scans s JOIN qr_codes q ON q.id = s.qr_code_id
             JOIN promotions p ON p.id = q.promotion_id
             WHERE p.company_id = ?1 GROUP BY q.promotion_id ORDER BY count(*) DESC LIMIT 1",
            [company_id("Northwind Grocers")],
            |r| r.get(0),
        )
    });
    let report_path = format!("/promotions/{promo}/report");
    let scans_before = app
        .get(&report_path)
        .key("northwind-readonly")
        .send()
        .await
        .ok();

    // Four more days: the first day's plays are older than the rollup (2 days), the fixtures'
    // scans older than the age bound (3 days).
    advance(&app, 4 * DAY).await;
    assert_eq!(
        count(
            &app,
            &format!(
                "SELECT count(*) FROM playbacks WHERE started_at < {}",
                d0 + 4 * DAY
            )
        ),
        0,
        "rolled up"
    );
    // Their sums stay in their days' roll-up rows.
    assert!(
        count(
            &app,
            &format!(
                "SELECT count(*) FROM playback_days WHERE day < {} / 86400",
                d0 + 4 * DAY
            )
        ) > 0
    );
    let after = app.get(&range).key("northwind-readonly").send().await.ok();
    for field in ["plays", "seconds", "ads", "devices"] {
        assert_eq!(after[field], before[field], "{field}");
    }

    let old_scans = count(
        &app,
        &format!(
            "SELECT count(*) FROM qr_scans WHERE scanned_at < {}",
            d0 + 3 * DAY
        ),
    );
    assert_eq!(old_scans, 0, "old scan detail moved into the counters");
    assert!(count(&app, "SELECT count(*) FROM qr_scan_counts") > 0);
    let scans_after = app
        .get(&report_path)
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    // The simulated scanners kept scanning; the days complete before are counted as they were.
    assert!(scans_after["scan_count"].as_i64() >= scans_before["scan_count"].as_i64());
    let cut = signage::time::rfc3339(d0 + 2 * DAY)[..10].to_string();
    let days = |r: &Value| -> Vec<(String, i64)> {
        r["scans_per_day"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["date"].as_str().unwrap().to_string(),
                    d["scans"].as_i64().unwrap(),
                )
            })
            .filter(|(date, _)| *date < cut)
            .collect()
    };
    assert!(!days(&scans_before).is_empty());
    assert_eq!(days(&scans_after), days(&scans_before));
    let by_class: i64 = scans_after["scans_by_agent_class"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_i64().unwrap())
        .sum();
    assert_eq!(by_class, scans_after["scan_count"].as_i64().unwrap());
}

/// On the running (system) clock, a steady stream of writes cannot outrun the row bounds: the
/// tick keeps pruning while the load lasts, and the audit log, the events and the idempotency
/// records of the busy owner come back to their bound soon after it stops. (The 1,000,000-operation
/// bench found the bounds left behind: each batch re-walked the whole group to find its cutoff, and
/// the count check ran only every tenth tick.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_load_on_the_running_clock_stays_within_the_bounds() {
    let app = TestApp::spawn_with(|l| {
        l.rate_limit_per_second = Some(0.0);
        l.sandbox_tick_millis = Some(100);
        l.sandbox_simulate_fleet = Some(false);
        l.retention_max_rows_per_account = Some(100);
        l.retention_batch_rows = Some(7);
    })
    .await;
    let device: String = app.sql(|c| {
        c.query_row(
            "SELECT id FROM devices WHERE company_id = ?1 ORDER BY id LIMIT 1",
            [company_id("Northwind Grocers")],
            |r| r.get(0),
        )
    });
    let account = key("northwind-readwrite").account_id;
    let audit = format!("SELECT count(*) FROM audit_log WHERE account_id = '{account}'");
    let events = format!(
        "SELECT count(*) FROM events WHERE company_id = '{}'",
        company_id("Northwind Grocers")
    );
    let actor = key("northwind-readwrite").key_id;
    let idempotency = format!("SELECT count(*) FROM idempotency_keys WHERE actor = '{actor}'");
    let mut peak_audit = 0;
    for i in 0..400 {
        let r = app
            .post(&format!("/devices/{device}/heartbeat"))
            .key("northwind-readwrite")
            .header("idempotency-key", &format!("steady-{i}"))
            .json(&json!({}))
            .send()
            .await;
        assert!(r.status.is_success(), "{}", r.text());
        app.patch(&format!("/devices/{device}"))
            .key("northwind-readwrite")
            .json(&json!({"name": format!("Steady {i}")}))
            .send()
            .await
            .ok();
        if i % 50 == 0 {
            peak_audit = peak_audit.max(count(&app, &audit));
        }
    }
    // 800 audited writes went in; the bound is 100 per owner.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let now = (
            count(&app, &audit),
            count(&app, &events),
            count(&app, &idempotency),
        );
        if now.0 <= 100 && now.1 <= 100 && now.2 <= 100 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still over the bound of 100 after the load: audit, events, idempotency = {now:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        peak_audit < 800,
        "the tick pruned nothing while the load ran (peak {peak_audit})"
    );
}
