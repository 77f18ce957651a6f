//! Issue 48: the proof-of-play report reads whole days from a daily roll-up kept as plays are
//! written (`playback_days`). Whatever moves the plays (the fleet's advance, a player's report, a
//! snapshot's restore, retention rolling plays into daily totals and deleting old totals, a
//! screen's deletion), the roll-up stays the sum of the rows it stands for, and the report answers
//! what summing every play row and daily total of its range answers.

use crate::helpers::*;
use crate::sandbox_clock::FROZEN_AT;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const DAY: i64 = 86_400;
const HOUR: i64 = 3_600;
const OP: &str = "sandbox-operator";

fn rfc(t: i64) -> String {
    signage::time::rfc3339(t)
}

async fn advance(app: &TestApp, seconds: i64) {
    app.post("/_sandbox/clock/advance")
        .key(OP)
        .json(&json!({ "seconds": seconds }))
        .send()
        .await
        .ok();
}

/// A sandbox whose retention rolls plays into daily totals after 2 days and deletes totals after
/// 10 (the demo history holds 30 days of totals), a few rows at a time.
async fn short_retention() -> TestApp {
    TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.rate_limit_per_second = Some(0.0);
        l.retention_playback_rollup_days = Some(2);
        l.retention_daily_totals_days = Some(10);
        l.retention_batch_rows = Some(50);
    })
    .await
}

/// Keys of the roll-up that differ from a recomputation from the play rows and daily totals:
/// `(company, day, screen, ad)` with (plays, seconds, rows) in the roll-up and recomputed.
type Sums = BTreeMap<(String, i64, String, String), (i64, i64, i64)>;

fn sums(app: &TestApp, sql: &str) -> Sums {
    app.sql(|c| {
        let mut stmt = c.prepare(sql)?;
        let rows = stmt.query_map([], |r| {
            Ok((
                (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?),
                (r.get(4)?, r.get(5)?, r.get(6)?),
            ))
        })?;
        rows.collect()
    })
}

fn assert_roll_up_is_the_rows(app: &TestApp, when: &str) {
    let kept = sums(
        app,
        "SELECT company_id, day, device_id, ad_id, plays, seconds, rows FROM playback_days",
    );
    let recomputed = sums(
        app,
        "SELECT company_id, day, device_id, ad_id, sum(plays), sum(seconds), sum(rows)
         FROM (SELECT company_id, started_at / 86400 AS day, device_id, ad_id, plays,
                      duration_seconds AS seconds, 1 AS rows FROM playbacks
               UNION ALL
               SELECT company_id, day, device_id, ad_id, plays, seconds, rows
               FROM playback_daily_totals)
         GROUP BY company_id, day, device_id, ad_id",
    );
    assert!(!kept.is_empty(), "{when}: no plays at all");
    assert_eq!(kept, recomputed, "{when}");
}

/// The report's CSV lines as (date, screen, ad) → (plays, seconds).
fn csv_lines(csv: &str) -> BTreeMap<(String, String, String), (i64, i64)> {
    csv.lines()
        .skip(1)
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            let n = cells.len();
            (
                (
                    cells[0].to_string(),
                    cells[2].to_string(),
                    cells[4].to_string(),
                ),
                (cells[n - 2].parse().unwrap(), cells[n - 1].parse().unwrap()),
            )
        })
        .collect()
}

/// What the report must answer for `[from, to)` to the Northwind account's keys, summed from the
/// play rows and daily totals alone (a play counts where it started, a total where its day
/// starts).
fn recomputed(app: &TestApp, from: i64, to: i64) -> BTreeMap<(String, String, String), (i64, i64)> {
    let grocers = company_id("Northwind Grocers");
    app.sql(|c| {
        let mut stmt = c.prepare(
            "SELECT date(day * 86400, 'unixepoch'), device_id, ad_id, sum(plays), sum(seconds)
             FROM (SELECT started_at / 86400 AS day, device_id, ad_id, plays,
                          duration_seconds AS seconds
                   FROM playbacks WHERE started_at >= ?1 AND started_at < ?2
                   UNION ALL
                   SELECT day, device_id, ad_id, plays, seconds FROM playback_daily_totals
                   WHERE day * 86400 >= ?1 AND day * 86400 < ?2)
             WHERE device_id IN (SELECT d.id FROM devices d JOIN companies c ON c.id = d.company_id
                                 WHERE c.account_id = (SELECT account_id FROM companies
                                                       WHERE id = ?3))
             GROUP BY day, device_id, ad_id",
        )?;
        let rows = stmt.query_map(rusqlite::params![from, to, grocers], |r| {
            Ok(((r.get(0)?, r.get(1)?, r.get(2)?), (r.get(3)?, r.get(4)?)))
        })?;
        rows.collect()
    })
}

/// The report over each range equals the recomputation, line for line, and its totals agree.
async fn assert_report_is_the_rows(app: &TestApp, when: &str) {
    let now = FROZEN_AT;
    let now = app
        .get("/_sandbox/clock")
        .key(OP)
        .send()
        .await
        .ok()
        .get("now")
        .and_then(Value::as_str)
        .and_then(signage::time::parse_rfc3339)
        .unwrap_or(now);
    let midnight = now.div_euclid(DAY) * DAY;
    for (from, to) in [
        (now - 7 * DAY, now),
        (midnight - 20 * DAY, midnight),
        (
            midnight - 12 * DAY + 5 * HOUR,
            midnight - 12 * DAY + 9 * HOUR,
        ),
        (midnight - 3 * DAY - 1, midnight + 1),
        (now - 30 * DAY, now + DAY),
    ] {
        let q = format!("from={}&to={}", rfc(from), rfc(to));
        let csv = app
            .get(&format!("/reports/proof-of-play?{q}"))
            .key("northwind-readonly")
            .header("accept", "text/csv")
            .send()
            .await;
        assert_eq!(csv.status, 200, "{when} {q}: {}", csv.text());
        let lines = csv_lines(&csv.text());
        let want = recomputed(app, from, to);
        assert_eq!(lines, want, "{when} {q}");
        let report = app
            .get(&format!("/reports/proof-of-play?{q}"))
            .key("northwind-readonly")
            .send()
            .await
            .ok();
        let plays: i64 = want.values().map(|v| v.0).sum();
        let seconds: i64 = want.values().map(|v| v.1).sum();
        assert_eq!(report["plays"], plays, "{when} {q}");
        assert_eq!(report["seconds"], seconds, "{when} {q}");
        // Each screen's and each day's line: the recomputed lines' sums.
        let mut by_device: BTreeMap<String, (i64, i64, i64)> = BTreeMap::new();
        let mut by_day: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        let mut pairs = std::collections::BTreeSet::new();
        for ((date, device, ad), (p, s)) in &want {
            let d = by_device.entry(device.clone()).or_default();
            let new_ad = i64::from(pairs.insert((device, ad)));
            *d = (d.0 + p, d.1 + s, d.2 + new_ad);
            let d = by_day.entry(date.clone()).or_default();
            *d = (d.0 + p, d.1 + s);
        }
        let devices: BTreeMap<String, (i64, i64, i64)> = report["devices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["device_id"].as_str().unwrap().to_string(),
                    (
                        d["plays"].as_i64().unwrap(),
                        d["seconds"].as_i64().unwrap(),
                        d["ads"].as_i64().unwrap(),
                    ),
                )
            })
            .collect();
        assert_eq!(devices, by_device, "{when} {q}: screens");
        let days: BTreeMap<String, (i64, i64)> = report["days"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["plays"] != 0 || d["seconds"] != 0)
            .map(|d| {
                (
                    d["date"].as_str().unwrap().to_string(),
                    (d["plays"].as_i64().unwrap(), d["seconds"].as_i64().unwrap()),
                )
            })
            .collect();
        by_day.retain(|_, v| *v != (0, 0));
        assert_eq!(days, by_day, "{when} {q}: days");
    }
}

#[tokio::test]
async fn the_daily_roll_up_stays_the_sum_of_the_plays_through_time_travel() {
    let app = short_retention().await;
    // The demo history: 30 days of totals and today's hourly rows.
    advance(&app, 60).await;
    assert_roll_up_is_the_rows(&app, "loaded");
    assert_report_is_the_rows(&app, "loaded").await;

    let snap = app
        .post("/_sandbox/snapshots")
        .key(OP)
        .json(&json!({"name": "before"}))
        .send()
        .await;
    assert_eq!(snap.status, 201, "{}", snap.text());

    // Three days: the fleet writes its hours; retention rolls the plays older than 2 days into
    // totals and deletes the totals older than 10.
    advance(&app, 3 * DAY + 5 * HOUR).await;
    let totals_before: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM playback_daily_totals WHERE day < ?1 / 86400",
            [FROZEN_AT + 3 * DAY - 10 * DAY],
            |r| r.get(0),
        )
    });
    assert_eq!(totals_before, 0, "retention deleted the old totals");
    let rolled: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM playbacks WHERE started_at < ?1",
            [FROZEN_AT + DAY],
            |r| r.get(0),
        )
    });
    assert_eq!(rolled, 0, "retention rolled the old plays into totals");
    assert_roll_up_is_the_rows(&app, "advanced");

    // A player's report, on a day the fleet also played.
    let (device, ad): (String, String) = app.sql(|c| {
        c.query_row(
            "SELECT device_id, ad_id FROM playbacks WHERE source = 'simulator'
             ORDER BY started_at DESC, id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    let played = app
        .post(&format!("/devices/{device}/playbacks"))
        .key("northwind-readwrite")
        .json(&json!({"ad_id": ad, "started_at": rfc(FROZEN_AT + 2 * DAY), "duration_seconds": 15}))
        .send()
        .await;
    assert_eq!(played.status, 201, "{}", played.text());
    assert_roll_up_is_the_rows(&app, "a player's play");
    assert_report_is_the_rows(&app, "advanced").await;

    // Back to the snapshot, and on again by a different step.
    app.post("/_sandbox/snapshots/before/restore")
        .key(OP)
        .send()
        .await
        .ok();
    assert_roll_up_is_the_rows(&app, "restored");
    assert_report_is_the_rows(&app, "restored").await;
    for _ in 0..4 {
        advance(&app, 19 * HOUR).await;
    }
    assert_roll_up_is_the_rows(&app, "advanced after the restore");
    assert_report_is_the_rows(&app, "advanced after the restore").await;

    // A screen deleted takes its days with it.
    let path = format!("/devices/{device}");
    let got = app.get(&path).key("northwind-readonly").send().await;
    let etag = got.header("etag").unwrap_or_default().to_string();
    app.assert_deleted(&path, &etag).await;
    let left: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM playback_days WHERE device_id = ?1",
            [&device],
            |r| r.get(0),
        )
    });
    assert_eq!(left, 0);
    assert_roll_up_is_the_rows(&app, "a screen deleted");
    assert_report_is_the_rows(&app, "a screen deleted").await;
}
