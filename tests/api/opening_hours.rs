//! Tests: stores have opening hours (issue 49). A company's `opening_hours` are on its resource, in
//! its own time zone; its screens play only while its stores are open, in the demo history, the
//! live fleet and a clock jump alike, and stay on (online, heartbeating, playing nothing) outside
//! them.

use crate::helpers::{company_id, TestApp};
use crate::sandbox_clock::{frozen, FROZEN_AT};
use serde_json::{json, Value};

const DAY: i64 = 86_400;
const HOUR: i64 = 3_600;
/// A Northwind Grocers screen (Amsterdam; open every day 07:00-22:00).
const ENTRANCE_1: &str = "dev_0m5d4rura41qxb8vdg0l";

async fn company(app: &TestApp, id: &str) -> Value {
    app.get(&format!("/companies/{id}"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok()
}

async fn advance(app: &TestApp, seconds: i64) {
    app.post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": seconds}))
        .send()
        .await
        .ok();
}

/// The simulated plays of a company's screens in each UTC hour of the day (0..24), over
/// `[from, to)`: from the hourly rows.
fn plays_by_utc_hour(app: &TestApp, company: &str, from: i64, to: i64) -> [i64; 24] {
    let company = company.to_string();
    let rows: Vec<(i64, i64)> = app.sql(move |c| {
        let mut stmt = c.prepare(
            "SELECT (started_at / 3600) % 24, sum(plays) FROM playbacks
             WHERE company_id = ?1 AND source = 'simulator' AND started_at >= ?2
               AND started_at < ?3
             GROUP BY 1",
        )?;
        let rows = stmt.query_map(rusqlite::params![company, from, to], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
        rows.collect()
    });
    let mut out = [0; 24];
    for (h, plays) in rows {
        out[h as usize] = plays;
    }
    out
}

#[tokio::test]
async fn a_company_shows_its_opening_hours_in_its_own_time_zone() {
    let app = TestApp::spawn().await;
    let grocers = company(&app, &company_id("Northwind Grocers")).await;
    assert_eq!(grocers["timezone"], "Europe/Amsterdam");
    let days = grocers["opening_hours"].as_array().unwrap();
    assert_eq!(days.len(), 7, "{grocers}");
    assert_eq!(
        days[0],
        json!({"day": "monday", "opens": "07:00", "closes": "22:00"})
    );
    // The pharmacy is closed on Sundays: the day is not listed.
    let pharmacy = app
        .get(&format!("/companies/{}", company_id("Northwind Pharmacy")))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    let days: Vec<&str> = pharmacy["opening_hours"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["day"].as_str().unwrap())
        .collect();
    assert_eq!(
        days,
        [
            "monday",
            "tuesday",
            "wednesday",
            "thursday",
            "friday",
            "saturday"
        ]
    );
    // The list page carries the same member.
    let list = app
        .get("/companies")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    let listed = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == grocers["id"])
        .cloned()
        .unwrap_or_default();
    assert_eq!(listed["opening_hours"], grocers["opening_hours"]);
    // A company the operator adds is open around the clock.
    let account = grocers["account_id"].as_str().unwrap();
    let added = app
        .post(&format!("/_sandbox/accounts/{account}/companies"))
        .key("sandbox-operator")
        .json(&json!({"count": 1}))
        .send()
        .await;
    assert_eq!(added.status, 201, "{}", added.text());
    let id: String = app.sql(|c| {
        c.query_row(
            "SELECT id FROM companies WHERE industry = 'Sandbox' ORDER BY created_at DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
    });
    // Every credential of the account sees it.
    let new = company(&app, &id).await;
    let hours = new["opening_hours"].as_array().cloned().unwrap_or_default();
    assert_eq!(hours.len(), 7, "{new}");
    assert!(
        hours
            .iter()
            .all(|d| d["opens"] == "00:00" && d["closes"] == "24:00"),
        "{new}"
    );
}

/// The demo history and a day the clock jumps over both play the grocers' screens from 07:00 to
/// 22:00 Amsterdam time (06:00-21:00 UTC in March) and not at night; the hotels, open around
/// the clock, play every hour.
#[tokio::test]
async fn screens_play_only_while_their_store_is_open() {
    let app = frozen().await;
    let grocers = company_id("Northwind Grocers");
    let hotels = company_id("Harborview Hotels");
    // FROZEN_AT is Monday 2026-03-02 09:00 UTC; jump past the next day.
    let today = FROZEN_AT.div_euclid(DAY) * DAY;
    advance(&app, DAY + 15 * HOUR).await;
    let jumped = plays_by_utc_hour(&app, &grocers, today + DAY, today + 2 * DAY);
    let history = plays_by_utc_hour(&app, &grocers, today, FROZEN_AT);
    for (h, (jumped, history)) in jumped.iter().zip(history).enumerate() {
        let open = (6..21).contains(&h);
        if open {
            assert!(
                *jumped > 0,
                "no plays at {h}:00 UTC, an open hour: {jumped}"
            );
        } else {
            assert_eq!(*jumped, 0, "plays at {h}:00 UTC, a closed hour");
            assert_eq!(history, 0, "history plays at {h}:00 UTC, a closed hour");
        }
    }
    assert!(history[6..9].iter().all(|p| *p > 0), "{history:?}");
    let around = plays_by_utc_hour(&app, &hotels, today + DAY, today + 2 * DAY);
    assert!(around.iter().all(|p| *p > 0), "{around:?}");
    // The days before the load are roll-up rows alone: a screen of the grocers played at most its 15
    // open hours a day, and a pharmacy screen nothing on a Sunday (2026-03-01, closed).
    let (longest, sunday): (i64, i64) = app.sql(move |c| {
        c.query_row(
            "SELECT (SELECT max(s) FROM (SELECT sum(seconds) AS s FROM playback_days t
                       JOIN companies c ON c.id = t.company_id
                     WHERE c.name = 'Northwind Grocers' GROUP BY t.device_id, t.day)),
                    (SELECT coalesce(sum(plays), 0) FROM playback_days t
                       JOIN companies c ON c.id = t.company_id
                     WHERE c.name = 'Northwind Pharmacy' AND t.day = ?1)",
            [today / DAY - 1],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    assert!(
        longest > 10 * HOUR && longest <= 15 * HOUR,
        "a grocers screen's longest day: {longest} s"
    );
    assert_eq!(sunday, 0, "a pharmacy screen played on a Sunday");
    // People scan a store's screens while it is open: the pharmacy's codes (Brussels, open Monday
    // to Saturday 08:30-19:00, 07:30-18:00 UTC in winter) were scanned on weekdays, never after
    // 18:00 UTC, never on the Sunday.
    let (weekday, late, on_sunday): (i64, i64, i64) = app.sql(move |c| {
        c.query_row(
            "WITH s(at) AS (
               SELECT s.scanned_at FROM qr_scans s JOIN qr_codes q ON q.id = s.qr_code_id
                 JOIN promotions p ON p.id = q.promotion_id JOIN companies c ON c.id = p.company_id
                 WHERE c.name = 'Northwind Pharmacy' AND s.scanned_at >= ?1 - 30 * 86400
               UNION ALL
               SELECT n.minute * 60 FROM qr_scan_counts n JOIN qr_codes q ON q.id = n.qr_code_id
                 JOIN promotions p ON p.id = q.promotion_id JOIN companies c ON c.id = p.company_id
                 WHERE c.name = 'Northwind Pharmacy' AND n.minute * 60 >= ?1 - 30 * 86400)
             SELECT (SELECT count(*) FROM s WHERE at / 86400 = ?1 / 86400 - 2),
                    (SELECT count(*) FROM s WHERE at % 86400 > 18 * 3600),
                    (SELECT count(*) FROM s WHERE at / 86400 = ?1 / 86400 - 1)",
            [today],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
    });
    assert!(weekday > 0, "no pharmacy scans on the Saturday");
    assert_eq!(
        (late, on_sunday),
        (0, 0),
        "pharmacy scans while it was closed"
    );
}

/// At night a store's screen is on: online, heartbeating, playing nothing; in the morning it plays
/// again.
#[tokio::test]
async fn a_closed_stores_screen_is_online_and_plays_nothing() {
    let app = frozen().await;
    assert!(device(&app).await["current_ad_id"].is_string());
    // To 23:00 UTC (midnight in Amsterdam).
    advance(&app, 14 * HOUR).await;
    let night = device(&app).await;
    assert_eq!(night["status"], "online", "{night}");
    assert!(
        night["seconds_since_heartbeat"]
            .as_i64()
            .unwrap_or(i64::MAX)
            < 60
    );
    assert_eq!(night["current_ad_id"], Value::Null, "{night}");
    // To 07:00 UTC (08:00 in Amsterdam): open again.
    advance(&app, 8 * HOUR).await;
    let morning = device(&app).await;
    assert!(morning["current_ad_id"].is_string(), "{morning}");
}

async fn device(app: &TestApp) -> Value {
    app.get(&format!("/devices/{ENTRANCE_1}"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok()
}

/// Opening hours are the account admin's to set (`PATCH /companies/{id}`): the week replaced, shown
/// Monday first, and the screens play by it from the next instant; the landing domains are kept.
#[tokio::test]
async fn an_admin_sets_a_companys_opening_hours_and_its_screens_play_by_them() {
    let app = frozen().await;
    let grocers = company_id("Northwind Grocers");
    let before = company(&app, &grocers).await;
    // 10:00 in Amsterdam on a Monday: open by the fixture hours, closed by these.
    let hours = json!([
        {"day": "sunday", "opens": "12:00", "closes": "17:00"},
        {"day": "monday", "opens": "11:00", "closes": "24:00"}
    ]);
    let updated = app
        .patch(&format!("/companies/{grocers}"))
        .key("northwind-admin")
        .json(&json!({"opening_hours": hours}))
        .send()
        .await
        .ok();
    let monday_first = json!([
        {"day": "monday", "opens": "11:00", "closes": "24:00"},
        {"day": "sunday", "opens": "12:00", "closes": "17:00"}
    ]);
    assert_eq!(updated["opening_hours"], monday_first, "{updated}");
    assert_eq!(
        updated["allowed_landing_domains"], before["allowed_landing_domains"],
        "the other field is kept"
    );
    assert_eq!(company(&app, &grocers).await["opening_hours"], monday_first);
    advance(&app, 60).await;
    let closed = device(&app).await;
    assert_eq!(closed["status"], "online", "{closed}");
    assert_eq!(closed["current_ad_id"], Value::Null, "{closed}");
    // 11:01 in Amsterdam: open by the new hours.
    advance(&app, HOUR).await;
    let open = device(&app).await;
    assert!(open["current_ad_id"].is_string(), "{open}");
}

/// Hours that do not hold are refused as a 422 naming the field, and nothing is stored; a key
/// that is not the admin's is 403; another company, outside a company-scoped key's reach, is 404.
#[tokio::test]
async fn bad_opening_hours_are_refused_naming_the_field() {
    let app = frozen().await;
    let grocers = company_id("Northwind Grocers");
    let before = app.dump_tables(&["companies"]);
    let day = |d: &str, o: &str, c: &str| json!({"day": d, "opens": o, "closes": c});
    for (bad, field) in [
        (
            json!([
                day("monday", "08:00", "20:00"),
                day("monday", "09:00", "21:00")
            ]),
            "/opening_hours",
        ),
        (json!([day("funday", "08:00", "20:00")]), "/opening_hours"),
        (json!([day("monday", "21:00", "08:00")]), "/opening_hours"),
        (json!([day("monday", "8:00", "20:00")]), "/opening_hours"),
        (json!([day("monday", "24:00", "24:00")]), "/opening_hours"),
        (
            json!([{"day": "monday", "opens": "08:00", "closes": "20:00", "note": "x"}]),
            "/opening_hours/0/note",
        ),
        (json!("07:00-22:00"), "/opening_hours"),
        (Value::Null, "/opening_hours"),
    ] {
        let p = app
            .patch(&format!("/companies/{grocers}"))
            .key("northwind-admin")
            .json(&json!({"opening_hours": bad}))
            .send()
            .await
            .problem(422);
        assert_eq!(p["errors"][0]["field"], field, "{bad}: {p}");
    }
    // The message says which day and what is wrong with it.
    let p = app
        .patch(&format!("/companies/{grocers}"))
        .key("northwind-admin")
        .json(&json!({"opening_hours": [day("tuesday", "08:00", "20:00"), day("tuesday", "09:00", "21:00")]}))
        .send()
        .await
        .problem(422);
    assert!(
        p["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("`tuesday` is listed twice")),
        "{p}"
    );
    let p = app
        .patch(&format!("/companies/{grocers}"))
        .key("northwind-admin")
        .json(&json!({}))
        .send()
        .await
        .problem(422);
    assert_eq!(p["errors"][0]["code"], "empty", "{p}");
    assert_eq!(app.dump_tables(&["companies"]), before, "nothing stored");
    let hours = json!({"opening_hours": [day("monday", "08:00", "20:00")]});
    app.patch(&format!("/companies/{grocers}"))
        .key("northwind-readwrite")
        .json(&hours)
        .send()
        .await
        .problem(403);
    // An admin key scoped to the grocers, on the pharmacy of the same account: 404, not 403.
    let client = app
        .post("/api-clients")
        .key("northwind-admin")
        .json(&json!({"name": "grocers ops", "companyScope": grocers}))
        .send()
        .await;
    assert_eq!(client.status, 201, "{}", client.text());
    let client = client.json()["id"].as_str().unwrap_or_default().to_string();
    let scoped = app
        .post("/api-keys")
        .key("northwind-admin")
        .json(&json!({"client_id": client, "name": "grocers admin", "scopes": ["admin"], "companyScope": grocers}))
        .send()
        .await;
    assert_eq!(scoped.status, 201, "{}", scoped.text());
    let raw = scoped.json()["rawKey"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let before = app.dump_tables(&["companies"]);
    app.patch(&format!("/companies/{}", company_id("Northwind Pharmacy")))
        .header("x-api-key", &raw)
        .header("x-service-client-id", &client)
        .json(&hours)
        .send()
        .await
        .problem(404);
    assert_eq!(app.dump_tables(&["companies"]), before, "nothing stored");
    // Its own company it may set.
    let own = app
        .patch(&format!("/companies/{grocers}"))
        .header("x-api-key", &raw)
        .header("x-service-client-id", &client)
        .json(&hours)
        .send()
        .await
        .ok();
    assert_eq!(own["opening_hours"], hours["opening_hours"], "{own}");
    app.patch(&format!("/companies/{}", company_id("Harborview Hotels")))
        .key("northwind-admin")
        .json(&hours)
        .send()
        .await
        .problem(404);
}

async fn store_of(app: &TestApp, key: &str, id: &str) -> Value {
    app.get(&format!("/companies/{id}"))
        .key(key)
        .send()
        .await
        .ok()["store"]
        .clone()
}

fn store(open: bool, opens_at: Option<&str>, closes_at: Option<&str>) -> Value {
    json!({"open": open, "opens_at": opens_at, "closes_at": closes_at})
}

/// A company says whether its stores are open at the sandbox clock's now, and when that next
/// changes, by the same hours its screens play by: a store open around the clock never closes,
/// one closed on Sunday opens next on Monday, and the instants themselves fall on the right side.
#[tokio::test]
async fn a_company_says_whether_its_stores_are_open_now() {
    let app = crate::sandbox_clock::frozen_without_fleet().await;
    let grocers = company_id("Northwind Grocers");
    let pharmacy = company_id("Northwind Pharmacy");
    let hotels = company_id("Harborview Hotels");
    // Monday 2 March 2026, 09:00 UTC: the grocers (07:00-22:00 Amsterdam, 06:00-21:00 UTC) and the
    // pharmacy (08:30-19:00 Brussels, Monday to Saturday) are open; the hotels never close.
    let open_grocers = store(true, None, Some("2026-03-02T21:00:00Z"));
    assert_eq!(
        store_of(&app, "northwind-readwrite", &grocers).await,
        open_grocers
    );
    assert_eq!(
        store_of(&app, "northwind-readwrite", &pharmacy).await,
        store(true, None, Some("2026-03-02T18:00:00Z"))
    );
    assert_eq!(
        store_of(&app, "harborview-readwrite", &hotels).await,
        store(true, None, None)
    );
    // The list page says the same.
    let list = app
        .get("/companies")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    let listed = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == grocers.as_str())
        .cloned()
        .unwrap_or_default();
    assert_eq!(listed["store"], open_grocers, "{list}");
    // The last second open, then the closing instant: closed, opening next morning.
    advance(&app, 12 * HOUR - 1).await;
    assert_eq!(
        store_of(&app, "northwind-readwrite", &grocers).await,
        open_grocers
    );
    advance(&app, 1).await;
    let closed = store(false, Some("2026-03-03T06:00:00Z"), None);
    assert_eq!(
        store_of(&app, "northwind-readwrite", &grocers).await,
        closed
    );
    // A list page kept from before the clock moved says it at the new now too.
    let list = app
        .get("/companies")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert!(
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["id"] == grocers.as_str() && c["store"] == closed),
        "{list}"
    );
    // The opening instant: open.
    advance(&app, 9 * HOUR - 1).await;
    assert_eq!(
        store_of(&app, "northwind-readwrite", &grocers).await,
        closed
    );
    advance(&app, 1).await;
    assert_eq!(
        store_of(&app, "northwind-readwrite", &grocers).await,
        store(true, None, Some("2026-03-03T21:00:00Z"))
    );
    // Saturday 7 March, 18:00 UTC: the pharmacy has closed and, closed on Sunday, opens on Monday.
    advance(&app, 4 * DAY + 12 * HOUR).await;
    assert_eq!(
        store_of(&app, "northwind-readwrite", &pharmacy).await,
        store(false, Some("2026-03-09T07:30:00Z"), None)
    );
    assert_eq!(
        store_of(&app, "harborview-readwrite", &hotels).await,
        store(true, None, None)
    );
    // A key scoped to the grocers sees its store; the pharmacy stays not found.
    assert!(store_of(&app, "northwind-grocers-write", &grocers).await["open"].is_boolean());
    app.get(&format!("/companies/{pharmacy}"))
        .key("northwind-grocers-write")
        .send()
        .await
        .problem(404);
    app.get(&format!("/companies/{hotels}"))
        .key("northwind-readwrite")
        .send()
        .await
        .problem(404);
    // An MCP client reads the same member.
    let got = crate::helpers::mcp::call_ok(
        &app,
        "northwind-readwrite",
        "get_company",
        json!({"company_id": pharmacy}),
    )
    .await;
    assert_eq!(
        got["store"],
        store(false, Some("2026-03-09T07:30:00Z"), None)
    );
}

/// Hours changed take effect on the store at once: closed every day, it never opens.
#[tokio::test]
async fn a_store_closed_every_day_never_opens() {
    let app = crate::sandbox_clock::frozen_without_fleet().await;
    let grocers = company_id("Northwind Grocers");
    let updated = app
        .patch(&format!("/companies/{grocers}"))
        .key("northwind-admin")
        .json(&json!({"opening_hours": []}))
        .send()
        .await
        .ok();
    assert_eq!(updated["store"], store(false, None, None), "{updated}");
}

/// The proof-of-play report of one company says how long its stores were open in the range, up
/// to now (what a screen could have played), by the same hours; across companies it does not.
#[tokio::test]
async fn the_report_says_how_long_the_stores_were_open() {
    let app = crate::sandbox_clock::frozen_without_fleet().await;
    let grocers = company_id("Northwind Grocers");
    let report = app
        .get(&format!(
            "/reports/proof-of-play?company_id={grocers}&from=2026-03-01&to=2026-03-02"
        ))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    // Sunday 06:00-21:00 UTC, and Monday 06:00 to now (09:00).
    assert_eq!(report["store_open_seconds"], 18 * HOUR, "{report}");
    let all = app
        .get("/reports/proof-of-play?from=2026-03-01&to=2026-03-02")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(all["store_open_seconds"], Value::Null, "{all}");
}

/// A screen's player reads its company's store with its own session: closed at night with the
/// morning's opening instant, open again from that instant, through a clock jump; another
/// company stays not found.
#[tokio::test]
async fn a_player_reads_whether_its_store_is_open() {
    let app = frozen().await;
    let grocers = company_id("Northwind Grocers");
    let link = app
        .post("/auth/sign-in-links")
        .key("northwind-admin")
        .json(&json!({"path": format!("/player/{ENTRANCE_1}")}))
        .send()
        .await;
    assert_eq!(link.status, 201, "{}", link.text());
    let token = link.json()["url"]
        .as_str()
        .and_then(|u| u.split_once("#signin="))
        .map(|(_, t)| t.to_string())
        .unwrap_or_default();
    let session = app
        .post("/auth/sign-in")
        .json(&json!({"token": token}))
        .send()
        .await
        .ok();
    let bearer = session["access_token"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let read = |path: String| {
        let app = &app;
        let bearer = bearer.clone();
        async move { app.get(&path).bearer(&bearer).send().await }
    };
    let company_of = read(format!("/devices/{ENTRANCE_1}")).await.ok()["company_id"].clone();
    assert_eq!(company_of, grocers.as_str());
    let day = read(format!("/companies/{grocers}")).await.ok();
    assert_eq!(
        day["store"],
        store(true, None, Some("2026-03-02T21:00:00Z"))
    );
    // 23:00 UTC: midnight in Amsterdam.
    advance(&app, 14 * HOUR).await;
    let night = read(format!("/companies/{grocers}")).await.ok();
    assert_eq!(
        night["store"],
        store(false, Some("2026-03-03T06:00:00Z"), None)
    );
    // Its ads are still assigned and on air: the store's hours, not the ads, keep it dark.
    let ads = read(format!("/devices/{ENTRANCE_1}/ads")).await.ok();
    assert!(
        ads["data"]
            .as_array()
            .is_some_and(|a| a.iter().any(|ad| ad["on_air"] == true)),
        "{ads}"
    );
    advance(&app, 7 * HOUR).await;
    let morning = read(format!("/companies/{grocers}")).await.ok();
    assert_eq!(
        morning["store"],
        store(true, None, Some("2026-03-03T21:00:00Z"))
    );
    read(format!("/companies/{}", company_id("Harborview Hotels")))
        .await
        .problem(404);
}
