//! Issue 48: the proof-of-play report reads whole days from a daily roll-up kept as plays are
//! written (`playback_days`), and rolling old plays up deletes them (their sums stay in the
//! roll-up). Whatever moves the plays (the fleet's advance, a player's report, a snapshot's
//! restore, retention rolling plays up and deleting old days, a screen's deletion), the roll-up
//! stays the sum of the play rows it stands for, and the report answers what summing them over its
//! range answers.
//!
//! The play rows rolled up are gone, so the test keeps its own record of them: a table and a
//! trigger of its own ([`record_rolled_plays`]) add every play row deleted while its screen and ad
//! still exist to a per-day sum, the old daily totals written by the test instead of the product.

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

/// A sandbox whose retention rolls plays up after 2 days and deletes days' roll-up rows after 10
/// (the demo history holds 30 days), a few rows at a time.
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

/// Keeps the test's own record of the plays rolled up (deleted while their screen and ad exist),
/// summed per company, day, screen and ad in `test_rolled_plays`, starting from what the roll-up
/// holds beyond the play rows now (the demo history's days, written as roll-up rows alone). A
/// screen or ad deleted takes its record with it, as it takes its roll-up rows.
fn record_rolled_plays(app: &TestApp) {
    app.sql(|c| {
        c.execute_batch(
            "CREATE TABLE test_rolled_plays (
                 company_id TEXT, day INTEGER, device_id TEXT, ad_id TEXT,
                 plays INTEGER, seconds INTEGER, rows INTEGER,
                 PRIMARY KEY (company_id, day, device_id, ad_id));
             INSERT INTO test_rolled_plays
                 SELECT d.company_id, d.day, d.device_id, d.ad_id,
                        d.plays - coalesce(p.plays, 0), d.seconds - coalesce(p.seconds, 0),
                        d.rows - coalesce(p.rows, 0)
                 FROM playback_days d LEFT JOIN
                     (SELECT company_id, started_at / 86400 AS day, device_id, ad_id,
                             sum(plays) AS plays, sum(duration_seconds) AS seconds, count(*) AS rows
                      FROM playbacks GROUP BY 1, 2, 3, 4) p
                     USING (company_id, day, device_id, ad_id)
                 WHERE d.rows > coalesce(p.rows, 0);
             CREATE TRIGGER test_play_rolled_up AFTER DELETE ON playbacks
             WHEN EXISTS (SELECT 1 FROM devices WHERE id = OLD.device_id)
              AND EXISTS (SELECT 1 FROM ads WHERE id = OLD.ad_id)
             BEGIN
                 INSERT INTO test_rolled_plays
                 VALUES (OLD.company_id, OLD.started_at / 86400, OLD.device_id, OLD.ad_id,
                         OLD.plays, OLD.duration_seconds, 1)
                 ON CONFLICT DO UPDATE SET plays = plays + excluded.plays,
                     seconds = seconds + excluded.seconds, rows = rows + 1;
             END;
             CREATE TRIGGER test_screen_deleted AFTER DELETE ON devices BEGIN
                 DELETE FROM test_rolled_plays WHERE device_id = OLD.id;
             END;
             CREATE TRIGGER test_ad_deleted AFTER DELETE ON ads BEGIN
                 DELETE FROM test_rolled_plays WHERE ad_id = OLD.id;
             END;",
        )
    });
}

/// The sandbox clock's now.
async fn now(app: &TestApp) -> i64 {
    app.get("/_sandbox/clock")
        .key(OP)
        .send()
        .await
        .ok()
        .get("now")
        .and_then(Value::as_str)
        .and_then(signage::time::parse_rfc3339)
        .unwrap_or(FROZEN_AT)
}

/// The first UTC day retention keeps at `now` (`retention.daily_totals_days` 10).
fn first_kept_day(now: i64) -> i64 {
    (now - 10 * DAY) / DAY
}

async fn assert_roll_up_is_the_rows(app: &TestApp, when: &str) {
    let first = first_kept_day(now(app).await);
    let kept = sums(
        app,
        "SELECT company_id, day, device_id, ad_id, plays, seconds, rows FROM playback_days",
    );
    let recomputed = sums(
        app,
        &format!(
            "SELECT company_id, day, device_id, ad_id, sum(plays), sum(seconds), sum(rows)
             FROM (SELECT company_id, started_at / 86400 AS day, device_id, ad_id, plays,
                          duration_seconds AS seconds, 1 AS rows FROM playbacks
                   UNION ALL
                   SELECT company_id, day, device_id, ad_id, plays, seconds, rows
                   FROM test_rolled_plays WHERE day >= {first})
             GROUP BY company_id, day, device_id, ad_id"
        ),
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
/// play rows and the test's record of those rolled up alone (a play counts where it started, a
/// rolled-up sum where its day starts, while retention keeps its day).
fn recomputed(
    app: &TestApp,
    from: i64,
    to: i64,
    first: i64,
) -> BTreeMap<(String, String, String), (i64, i64)> {
    let grocers = company_id("Northwind Grocers");
    app.sql(|c| {
        let mut stmt = c.prepare(
            "SELECT date(day * 86400, 'unixepoch'), device_id, ad_id, sum(plays), sum(seconds)
             FROM (SELECT started_at / 86400 AS day, device_id, ad_id, plays,
                          duration_seconds AS seconds
                   FROM playbacks WHERE started_at >= ?1 AND started_at < ?2
                   UNION ALL
                   SELECT day, device_id, ad_id, plays, seconds FROM test_rolled_plays
                   WHERE day * 86400 >= ?1 AND day * 86400 < ?2 AND day >= ?4)
             WHERE device_id IN (SELECT d.id FROM devices d JOIN companies c ON c.id = d.company_id
                                 WHERE c.account_id = (SELECT account_id FROM companies
                                                       WHERE id = ?3))
             GROUP BY day, device_id, ad_id",
        )?;
        let rows = stmt.query_map(rusqlite::params![from, to, grocers, first], |r| {
            Ok(((r.get(0)?, r.get(1)?, r.get(2)?), (r.get(3)?, r.get(4)?)))
        })?;
        rows.collect()
    })
}

/// The report over each range equals the recomputation, line for line, and its totals agree.
async fn assert_report_is_the_rows(app: &TestApp, when: &str) {
    let now = now(app).await;
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
        let want = recomputed(app, from, to, first_kept_day(now));
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
    // The demo history: 30 days of roll-up rows and today's hourly rows.
    advance(&app, 60).await;
    record_rolled_plays(&app);
    assert_roll_up_is_the_rows(&app, "loaded").await;
    assert_report_is_the_rows(&app, "loaded").await;

    let snap = app
        .post("/_sandbox/snapshots")
        .key(OP)
        .json(&json!({"name": "before"}))
        .send()
        .await;
    assert_eq!(snap.status, 201, "{}", snap.text());

    // Three days: the fleet writes its hours; retention rolls the plays older than 2 days up and
    // deletes the days older than 10.
    advance(&app, 3 * DAY + 5 * HOUR).await;
    let (old_days, kept_days): (i64, i64) = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FILTER (WHERE day < ?1), count(*) FILTER (WHERE day >= ?1)
             FROM playback_days",
            [first_kept_day(FROZEN_AT + 3 * DAY + 5 * HOUR + 60)],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    assert_eq!(old_days, 0, "retention deleted the old days");
    assert!(kept_days > 0, "the days kept");
    let recorded: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM test_rolled_plays WHERE day >= ?1 / 86400",
            [FROZEN_AT],
            |r| r.get(0),
        )
    });
    assert!(recorded > 0, "plays of the advance were rolled up");
    let rolled: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM playbacks WHERE started_at < ?1",
            [FROZEN_AT + DAY],
            |r| r.get(0),
        )
    });
    assert_eq!(rolled, 0, "retention rolled the old plays up");
    assert_roll_up_is_the_rows(&app, "advanced").await;

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
    assert_roll_up_is_the_rows(&app, "a player's play").await;
    assert_report_is_the_rows(&app, "advanced").await;

    // Back to the snapshot, and on again by a different step.
    app.post("/_sandbox/snapshots/before/restore")
        .key(OP)
        .send()
        .await
        .ok();
    assert_roll_up_is_the_rows(&app, "restored").await;
    assert_report_is_the_rows(&app, "restored").await;
    for _ in 0..4 {
        advance(&app, 19 * HOUR).await;
    }
    assert_roll_up_is_the_rows(&app, "advanced after the restore").await;
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
    assert_roll_up_is_the_rows(&app, "a screen deleted").await;
    assert_report_is_the_rows(&app, "a screen deleted").await;
}
