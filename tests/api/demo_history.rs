//! Tests: the demo world has a history (30 days of plays and scans, derived from the fixtures and
//! the load instant, consistent with every date), proof of play counts a screen once and never
//! before its ad, and the proof-of-play report answers per day and as CSV.

use crate::helpers::{company_id, TestApp};
use crate::sandbox_clock::{frozen, frozen_without_fleet, FROZEN_AT};
use serde_json::{json, Value};

const DAY: i64 = 86_400;
const ENTRANCE_1: &str = "dev_0m5d4rura41qxb8vdg0l";

async fn report(app: &TestApp, query: &str) -> Value {
    app.get(&format!("/reports/proof-of-play?{query}"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok()
}

fn date(t: i64) -> String {
    signage::time::rfc3339(t)[..10].to_string()
}

#[tokio::test]
async fn the_world_opens_on_thirty_days_of_plays_every_one_after_its_ad() {
    let app = frozen().await;
    let grocers = company_id("Northwind Grocers");
    let today = FROZEN_AT.div_euclid(DAY) * DAY;
    let from = date(today - 30 * DAY);
    let r = report(
        &app,
        &format!(
            "company_id={grocers}&from={from}&to={}",
            signage::time::rfc3339(FROZEN_AT)
        ),
    )
    .await;
    let days = r["days"].as_array().unwrap();
    assert_eq!(days.len(), 31, "{r}");
    for d in days {
        assert!(d["plays"].as_i64().unwrap() > 0, "a day without plays: {d}");
    }
    let sum: i64 = days.iter().map(|d| d["plays"].as_i64().unwrap()).sum();
    assert_eq!(
        sum,
        r["plays"].as_i64().unwrap(),
        "the days add up to the total"
    );
    // No row or day of plays predates the ad it reports, nor its screen, nor its assignment.
    let early: i64 = app.sql(|c| {
        c.query_row(
            "SELECT (SELECT count(*) FROM playbacks p JOIN ads a ON a.id = p.ad_id
                       JOIN ad_assignments x ON x.ad_id = p.ad_id AND x.device_id = p.device_id
                     WHERE p.started_at < max(a.created_at, x.assigned_at))
                  + (SELECT count(*) FROM playback_days t JOIN ads a ON a.id = t.ad_id
                       JOIN devices d ON d.id = t.device_id
                     WHERE (t.day + 1) * 86400 <= max(a.created_at, d.created_at))",
            [],
            |r| r.get(0),
        )
    });
    assert_eq!(early, 0);
    // A never-seen screen never played; an offline one stopped when it went silent.
    let (never, late): (i64, i64) = app.sql(|c| {
        c.query_row(
            "SELECT (SELECT count(*) FROM playback_days t JOIN devices d ON d.id = t.device_id
                     WHERE d.last_heartbeat_at IS NULL),
                    (SELECT count(*) FROM playback_days t JOIN devices d ON d.id = t.device_id
                     JOIN device_simulations s ON s.device_id = d.id
                     WHERE s.profile = 'offline' AND t.day * 86400 > d.last_heartbeat_at)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    assert_eq!((never, late), (0, 0));
    // The fixtures' QR scans of those 30 days are the simulated phones', inside each promotion's
    // run and after each code was made.
    let outside: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM qr_scans s JOIN qr_codes q ON q.id = s.qr_code_id
             JOIN promotions p ON p.id = q.promotion_id
             WHERE s.scanned_at >= ?1 AND (s.scanned_at < q.created_at OR s.scanned_at >= p.ends_at
                 OR s.scanned_at < p.starts_at OR s.scanned_at > ?2)",
            [today - 30 * DAY, FROZEN_AT],
            |r| r.get(0),
        )
    });
    assert_eq!(outside, 0);
    let promotion = app
        .get("/promotions/promo_0m5d4rupd28t6txsgbdb/report")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    // Fresh Fruit Week started 10 days ago: scans every day since, none before.
    let per_day = promotion["scans_per_day"].as_array().unwrap();
    assert!(per_day.len() >= 10, "{promotion}");
    assert!(per_day
        .iter()
        .all(|d| d["date"].as_str().unwrap() >= date(FROZEN_AT - 10 * DAY).as_str()));
    let counted: i64 = per_day.iter().map(|d| d["scans"].as_i64().unwrap()).sum();
    assert_eq!(counted, promotion["scan_count"].as_i64().unwrap());
}

#[tokio::test]
async fn the_history_is_the_same_every_run_and_absent_without_the_fleet() {
    let a = frozen().await;
    let b = frozen().await;
    let grocers = company_id("Northwind Grocers");
    let q = format!("company_id={grocers}&from={}", date(FROZEN_AT - 30 * DAY));
    assert_eq!(report(&a, &q).await["days"], report(&b, &q).await["days"]);
    let scans = |app: &TestApp| {
        app.sql(|c| {
            c.prepare("SELECT qr_code_id, scanned_at, agent_class FROM qr_scans ORDER BY qr_code_id, scanned_at")?
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
    };
    assert_eq!(scans(&a), scans(&b));
    let still = frozen_without_fleet().await;
    assert_eq!(report(&still, &q).await["plays"], 0);
}

/// What a screen's browser player sends (`player.js`): a heartbeat naming the ad it shows, and a
/// play when the ad has played.
async fn play_as_a_browser(app: &TestApp, device: &str, at: i64) {
    let ad: String = app.sql({
        let device = device.to_string();
        move |c| {
            c.query_row(
                "SELECT ad_id FROM screen_ads WHERE device_id = ?1 AND switched_on
                 ORDER BY ad_id LIMIT 1",
                [&device],
                |r| r.get(0),
            )
        }
    });
    app.post(&format!("/devices/{device}/heartbeat"))
        .key("northwind-readwrite")
        .json(&json!({"app_version": "browser-player-1.0", "current_ad_id": ad}))
        .send()
        .await
        .ok();
    let r = app
        .post(&format!("/devices/{device}/playbacks"))
        .key("northwind-readwrite")
        .json(
            &json!({"ad_id": ad, "started_at": signage::time::rfc3339(at), "duration_seconds": 10}),
        )
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
}

/// A new active ad, assigned to `device`: its id.
async fn new_ad_on(app: &TestApp, device: &str) -> String {
    let ad = app
        .post("/ads")
        .key("northwind-readwrite")
        .json(
            &json!({"company_id": company_id("Northwind Grocers"), "name": "Presenter's ad",
            "headline": "Just made", "status": "active"}),
        )
        .send()
        .await
        .ok();
    let id = ad["id"].as_str().unwrap_or_default().to_string();
    app.post(&format!("/ads/{id}/devices"))
        .key("northwind-readwrite")
        .json(&json!({"device_id": device}))
        .send()
        .await
        .ok();
    id
}

/// A screen's plays of `[from, to)`, by source.
fn plays_of(app: &TestApp, device: &str, source: &str, from: i64, to: i64) -> i64 {
    let (device, source) = (device.to_string(), source.to_string());
    app.sql(move |c| {
        c.query_row(
            "SELECT coalesce(sum(plays), 0) FROM playbacks
             WHERE device_id = ?1 AND source = ?2 AND started_at >= ?3 AND started_at < ?4",
            rusqlite::params![device, source, from, to],
            |r| r.get(0),
        )
    })
}

async fn advance(app: &TestApp, seconds: i64) {
    let r = app
        .post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": seconds}))
        .send()
        .await
        .ok();
    assert!(r["events"].is_object(), "{r}");
}

/// While a browser player heartbeats a screen, its plays are the player's (a screen counts once);
/// the day a clock jump moves over is played by the fleet as on a screen no browser plays, the
/// per-screen report counts it, and the screen is online the moment the jump ends.
#[tokio::test]
async fn a_screen_a_browser_plays_keeps_a_simulated_screens_history_across_a_jump() {
    let app = frozen().await;
    let twin = frozen().await;
    // The presenter's new ad, on the screen a browser plays (and on its twin).
    let (new_ad, twin_ad) = (
        new_ad_on(&app, ENTRANCE_1).await,
        new_ad_on(&twin, ENTRANCE_1).await,
    );
    // Two minutes of real time: the player heartbeats and plays, the fleet does not for it.
    play_as_a_browser(&app, ENTRANCE_1, FROZEN_AT).await;
    advance(&app, 60).await;
    advance(&twin, 60).await;
    play_as_a_browser(&app, ENTRANCE_1, FROZEN_AT + 60).await;
    advance(&app, 60).await;
    advance(&twin, 60).await;
    let start = FROZEN_AT + 120;
    assert_eq!(
        plays_of(&app, ENTRANCE_1, "simulator", FROZEN_AT, start),
        0,
        "no simulated play while the player speaks for the screen"
    );
    assert!(plays_of(&twin, ENTRANCE_1, "simulator", FROZEN_AT, start) > 0);
    assert_eq!(plays_of(&app, ENTRANCE_1, "player", FROZEN_AT, start), 2);
    // The presenter jumps a day.
    advance(&app, DAY).await;
    advance(&twin, DAY).await;
    let end = start + DAY;
    // Simulated rows are per clock hour (FROZEN_AT is one): the first holds the minutes the
    // player spoke for, which the twin's simulation played.
    let played = plays_of(&app, ENTRANCE_1, "simulator", FROZEN_AT, end);
    let unplayed = plays_of(&twin, ENTRANCE_1, "simulator", FROZEN_AT, end);
    let lost = plays_of(&twin, ENTRANCE_1, "simulator", FROZEN_AT, FROZEN_AT + 3600);
    assert!(unplayed > 1_000, "a simulated day: {unplayed} plays");
    assert!(
        played < unplayed && played >= unplayed - lost,
        "a day of plays with a player ({played}) against without ({unplayed})"
    );
    // The new ad's share of the day, as on the twin.
    let ad_plays = |app: &TestApp, ad: &str| -> i64 {
        let ad = ad.to_string();
        app.sql(move |c| {
            c.query_row(
                "SELECT coalesce(sum(plays), 0) FROM playbacks WHERE ad_id = ?1 AND source = 'simulator'",
                [&ad],
                |r| r.get(0),
            )
        })
    };
    let (mine, twins) = (ad_plays(&app, &new_ad), ad_plays(&twin, &twin_ad));
    assert!(
        twins > 1_000 && mine * 100 >= twins * 95 && mine <= twins,
        "the new ad played {mine} times with a player, {twins} without"
    );
    // "Plays per screen" counts the day.
    let grocers = company_id("Northwind Grocers");
    let r = report(
        &app,
        &format!(
            "company_id={grocers}&from={}&to={}",
            signage::time::rfc3339(FROZEN_AT),
            signage::time::rfc3339(end)
        ),
    )
    .await;
    let line = r["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["device_id"] == ENTRANCE_1)
        .cloned()
        .unwrap_or_default();
    assert_eq!(line["plays"].as_i64(), Some(played + 2), "{r}");
    // Online at once, heartbeating at the new instant, not waiting for the player's next beat.
    let device = app
        .get(&format!("/devices/{ENTRANCE_1}"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(device["status"], "online", "{device}");
    assert!(
        device["seconds_since_heartbeat"]
            .as_i64()
            .unwrap_or(i64::MAX)
            < 60,
        "{device}"
    );
    // The player's next heartbeat and play are its own again: the fleet does not play beside it.
    play_as_a_browser(&app, ENTRANCE_1, end).await;
    let before = plays_of(&app, ENTRANCE_1, "simulator", FROZEN_AT, end + DAY);
    advance(&app, 60).await;
    assert_eq!(
        plays_of(&app, ENTRANCE_1, "simulator", FROZEN_AT, end + DAY),
        before
    );
}

#[tokio::test]
async fn a_reported_play_cannot_predate_its_ad() {
    let app = frozen().await;
    let grocers = company_id("Northwind Grocers");
    let ad = app
        .post("/ads")
        .key("northwind-readwrite")
        .json(&json!({"company_id": grocers, "name": "New", "headline": "New", "status": "active"}))
        .send()
        .await
        .ok();
    let ad = ad["id"].as_str().unwrap();
    app.post(&format!("/ads/{ad}/devices"))
        .key("northwind-readwrite")
        .json(&json!({"device_id": ENTRANCE_1}))
        .send()
        .await
        .ok();
    let r = app
        .post(&format!("/devices/{ENTRANCE_1}/playbacks"))
        .key("northwind-readwrite")
        .json(&json!({"ad_id": ad, "started_at": signage::time::rfc3339(FROZEN_AT - 60), "duration_seconds": 10}))
        .send()
        .await;
    assert_eq!(r.problem(422)["errors"][0]["code"], "before_ad");
    let r = app
        .post(&format!("/devices/{ENTRANCE_1}/playbacks"))
        .key("northwind-readwrite")
        .json(&json!({"ad_id": ad, "started_at": signage::time::rfc3339(FROZEN_AT), "duration_seconds": 10}))
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
}

#[tokio::test]
async fn the_report_answers_per_day_and_as_csv_that_adds_up() {
    let app = frozen().await;
    let grocers = company_id("Northwind Grocers");
    let q = format!(
        "company_id={grocers}&from={}&to={}",
        date(FROZEN_AT - 7 * DAY),
        date(FROZEN_AT - DAY)
    );
    let json = report(&app, &q).await;
    assert_eq!(json["days"].as_array().unwrap().len(), 7);
    let r = app
        .get(&format!("/reports/proof-of-play?{q}"))
        .key("northwind-readwrite")
        .header("accept", "text/csv")
        .send()
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("text/csv; charset=utf-8; header=present")
    );
    let disposition = r.header("content-disposition").unwrap();
    assert!(
        disposition.starts_with("attachment; filename=\"proof-of-play-cmp_")
            && disposition.ends_with(".csv\""),
        "{disposition}"
    );
    let text = r.text();
    let mut lines = text.split("\r\n").filter(|l| !l.is_empty());
    assert_eq!(
        lines.next(),
        Some("date,company_id,device_id,device_name,ad_id,ad_name,plays,seconds")
    );
    let (mut plays, mut seconds, mut n) = (0i64, 0i64, 0);
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), 8, "{line}");
        assert_eq!(cells[1], grocers);
        plays += cells[6].parse::<i64>().unwrap();
        seconds += cells[7].parse::<i64>().unwrap();
        n += 1;
    }
    assert!(n > 7, "{text}");
    assert_eq!(
        (plays, seconds),
        (
            json["plays"].as_i64().unwrap(),
            json["seconds"].as_i64().unwrap()
        )
    );
    // A year at most.
    let r = app
        .get("/reports/proof-of-play?from=2020-01-01&to=2026-01-01")
        .key("northwind-readwrite")
        .send()
        .await;
    assert_eq!(r.problem(422)["errors"][0]["code"], "range_too_long");
}

#[tokio::test]
async fn the_storage_line_is_the_librarys_real_size() {
    let app = frozen().await;
    let grocers = company_id("Northwind Grocers");
    let usage = app
        .get(&format!("/media/usage?company_id={grocers}"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    let (sum, count): (i64, i64) = app.sql(|c| {
        c.query_row(
            "SELECT sum(length(content)), count(*) FROM media WHERE company_id = ?1",
            [&grocers],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    assert_eq!(usage["used_bytes"], sum);
    assert_eq!(usage["media_count"], count);
    assert_eq!(usage["quota_bytes"], 100 * 1024 * 1024);
    assert_eq!(
        usage["available_bytes"].as_i64().unwrap(),
        100 * 1024 * 1024 - sum
    );
    // No storage overage is billed beside a library this small.
    let charges = app
        .get(&format!("/charges?company_id={grocers}&limit=100"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert!(!charges.to_string().contains("storage"), "{charges}");
    let other = app
        .get(&format!("/media/usage?company_id={grocers}"))
        .key("harborview-readwrite")
        .send()
        .await;
    other.problem(404);
}

#[tokio::test]
async fn an_ad_plays_only_within_its_dates() {
    let app = frozen().await;
    let grocers = company_id("Northwind Grocers");
    let later = signage::time::rfc3339(FROZEN_AT + 2 * 3600);
    let ad = app
        .post("/ads")
        .key("northwind-readwrite")
        .json(
            &json!({"company_id": grocers, "name": "Evening", "headline": "Evening offer",
            "status": "active", "starts_at": later}),
        )
        .send()
        .await
        .ok();
    assert_eq!(ad["starts_at"], later);
    assert_eq!(ad["ends_at"], Value::Null);
    assert_eq!(ad["on_air"], false);
    let id = ad["id"].as_str().unwrap();
    let r = app
        .patch(&format!("/ads/{id}"))
        .key("northwind-readwrite")
        .json(&json!({"ends_at": signage::time::rfc3339(FROZEN_AT)}))
        .send()
        .await;
    assert_eq!(r.problem(422)["errors"][0]["code"], "before_start");
    app.post(&format!("/ads/{id}/devices"))
        .key("northwind-readwrite")
        .json(&json!({"device_id": ENTRANCE_1}))
        .send()
        .await
        .ok();
    app.post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": 4 * 3600}))
        .send()
        .await
        .ok();
    let first: Option<i64> = app.sql(|c| {
        c.query_row(
            "SELECT min(started_at) FROM playbacks WHERE ad_id = ?1",
            [id],
            |r| r.get(0),
        )
    });
    assert_eq!(
        first,
        Some(FROZEN_AT + 2 * 3600),
        "plays from its start, not before"
    );
    let now_on = app
        .get(&format!("/ads/{id}"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(now_on["on_air"], true);
}

#[tokio::test]
async fn crossing_a_month_boundary_bills_the_month_and_grants_the_tokens() {
    // Frozen at 2026-03-02T09:00Z: the next boundary is 2026-04-01T00:00Z.
    let app = frozen().await;
    let grocers = company_id("Northwind Grocers");
    let balance = |app: &TestApp| {
        let grocers = grocers.clone();
        app.sql(move |c| {
            c.query_row(
                "SELECT balance FROM token_balances WHERE company_id = ?1",
                [&grocers],
                |r| r.get::<_, i64>(0),
            )
        })
    };
    let before = balance(&app);
    let april = signage::time::parse_rfc3339("2026-04-01T00:00:00Z").unwrap();
    app.post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": april - FROZEN_AT - 1}))
        .send()
        .await
        .ok();
    assert_eq!(balance(&app), before, "nothing before the boundary");
    app.post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": 2}))
        .send()
        .await
        .ok();
    assert_eq!(
        balance(&app),
        before + 500,
        "the Business plan's 500 tokens"
    );
    let charges = app
        .get(&format!("/charges?company_id={grocers}&limit=5"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    let charge = &charges["data"][0];
    assert_eq!(charge["kind"], "subscription");
    assert_eq!(charge["amount_cents"], 14_900);
    assert_eq!(charge["created_at"], "2026-04-01T00:00:00Z");
    let invoice = app
        .get(&format!(
            "/invoices/{}",
            charge["invoice_id"].as_str().unwrap()
        ))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(invoice["period_start"], "2026-04-01T00:00:00Z");
    assert_eq!(invoice["period_end"], "2026-05-01T00:00:00Z");
    assert_eq!(invoice["status"], "open");
    let granted: Vec<Value> = app.sql(|c| {
        c.prepare("SELECT payload FROM events WHERE type = 'tokens.granted' ORDER BY id")?
            .query_map([], |r| r.get::<_, String>(0))?
            .map(|p| p.map(|p| serde_json::from_str(&p).unwrap()))
            .collect()
    });
    // Every company renewed once (Starter, Business, Business, Enterprise all include tokens).
    assert_eq!(granted.len(), 4, "{granted:?}");
    assert!(granted.iter().any(|g| g["transaction"]["amount"] == 500
        && g["charge_id"] == charge["id"]
        && g["invoice_id"] == invoice["id"]));
    // Two more months in one jump: two more renewals, each at its own boundary.
    app.post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": 61 * DAY}))
        .send()
        .await
        .ok();
    assert_eq!(balance(&app), before + 1500);
    let subscriptions: Vec<String> = app.sql(|c| {
        let grocers = company_id("Northwind Grocers");
        c.prepare(
            "SELECT created_at FROM charges WHERE company_id = ?1 AND kind = 'subscription'
             AND created_at >= ?2 ORDER BY created_at",
        )?
        .query_map(rusqlite::params![grocers, april], |r| {
            Ok(signage::time::rfc3339(r.get(0)?))
        })?
        .collect()
    });
    assert_eq!(
        subscriptions,
        [
            "2026-04-01T00:00:00Z",
            "2026-05-01T00:00:00Z",
            "2026-06-01T00:00:00Z"
        ]
    );
}

/// The cells of one CSV line (RFC 4180: a quoted cell may hold commas and doubled quotes).
fn csv_cells(line: &str) -> Vec<String> {
    let (mut cells, mut cell, mut quoted, mut chars) =
        (Vec::new(), String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cell.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(std::mem::take(&mut cell)),
            _ => cell.push(c),
        }
    }
    cells.push(cell);
    cells
}

/// The lines come in their order, named and counted from the same rows: screens by id, ads by id,
/// CSV lines by day, screen name and id, ad name and id; a screen's `ads` and an ad's `devices`
/// are the distinct pairs of the CSV's lines, and each line's names are the screen's and the ad's.
#[tokio::test]
async fn the_reports_lines_are_ordered_named_and_counted_from_the_same_rows() {
    let app = frozen().await;
    // Partial days at both ends, whole days between, every company of the account.
    let q = format!(
        "from={}&to={}",
        signage::time::rfc3339(FROZEN_AT - 5 * DAY - 7 * 3600),
        signage::time::rfc3339(FROZEN_AT)
    );
    let json = report(&app, &q).await;
    let r = app
        .get(&format!("/reports/proof-of-play?{q}"))
        .key("northwind-readwrite")
        .header("accept", "text/csv")
        .send()
        .await;
    assert_eq!(r.status, 200);
    let text = r.text();
    let lines: Vec<Vec<String>> = text
        .split("\r\n")
        .skip(1)
        .filter(|l| !l.is_empty())
        .map(csv_cells)
        .collect();
    assert!(lines.len() > 20, "{text}");
    let names = |table: &str| -> std::collections::BTreeMap<String, (String, String)> {
        app.sql(|c| {
            let mut stmt = c.prepare(&format!("SELECT id, name, company_id FROM {table}"))?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))?;
            rows.collect()
        })
    };
    let (screens, ads) = (names("devices"), names("ads"));
    let mut sorted = lines.clone();
    sorted.sort_by(|a, b| {
        (&a[0], &a[3], &a[2], &a[5], &a[4]).cmp(&(&b[0], &b[3], &b[2], &b[5], &b[4]))
    });
    assert_eq!(
        lines, sorted,
        "CSV lines by day, screen name and id, ad name and id"
    );
    let mut pairs = std::collections::BTreeSet::new();
    for l in &lines {
        assert_eq!(l.len(), 8, "{l:?}");
        assert_eq!((&l[3], &l[1]), {
            let (name, company) = &screens[&l[2]];
            (name, company)
        });
        assert_eq!(l[5], ads[&l[4]].0);
        pairs.insert((l[2].clone(), l[4].clone()));
    }
    let devices = json["devices"].as_array().unwrap();
    let ids: Vec<&str> = devices
        .iter()
        .map(|d| d["device_id"].as_str().unwrap())
        .collect();
    let mut by_id = ids.clone();
    by_id.sort_unstable();
    assert_eq!(ids, by_id, "screens by id");
    for d in devices {
        let id = d["device_id"].as_str().unwrap();
        assert_eq!(d["name"], screens[id].0);
        assert_eq!(d["company_id"], screens[id].1);
        let n = pairs.iter().filter(|(s, _)| s == id).count();
        assert_eq!(d["ads"], n, "{id}");
    }
    let ad_ids: Vec<&str> = json["ads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["ad_id"].as_str().unwrap())
        .collect();
    let mut by_id = ad_ids.clone();
    by_id.sort_unstable();
    assert_eq!(ad_ids, by_id, "ads by id");
    for a in json["ads"].as_array().unwrap() {
        let id = a["ad_id"].as_str().unwrap();
        let n = pairs.iter().filter(|(_, ad)| ad == id).count();
        assert_eq!(a["devices"], n, "{id}");
        assert_eq!(a["name"], ads[id].0);
    }
    // Every screen of a CSV line has its line, and no other does.
    let csv_screens: std::collections::BTreeSet<&str> =
        lines.iter().map(|l| l[2].as_str()).collect();
    assert_eq!(
        ids.into_iter().collect::<std::collections::BTreeSet<_>>(),
        csv_screens
    );
}
