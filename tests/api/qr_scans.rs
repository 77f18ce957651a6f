//! Tests: scanning a QR code's short link (`GET /q/{code}`, public) counts once per request,
//! redirects to the target with its UTM parameters, and shows on the code, its scan list and the
//! promotion's report; `qr_code.scanned` is rate-limited per code.

use crate::helpers::TestApp;
use crate::sandbox_clock::frozen;
use serde_json::{json, Value};

const SUMMER_FRUIT: &str = "promo_0m5d4rupd28t6txsgbdb";
const ROOFTOP_QR: &str = "qr_0m5d4rupy4r7imi8q243";
const IPHONE: &str =
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148";
const ANDROID: &str =
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/124 Mobile Safari/537.36";

async fn new_code(app: &TestApp) -> Value {
    let r = app
        .post(&format!("/promotions/{SUMMER_FRUIT}/qr-codes"))
        .key("northwind-readwrite")
        .json(&json!({"label": "Checkout screen",
            "utm": {"source": "signage", "medium": "qr", "campaign": "summer-fruit-week", "content": "checkout"}}))
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

fn scanned_events(app: &TestApp, id: &str) -> Vec<Value> {
    let id = id.to_string();
    app.sql(move |c| {
        c.prepare("SELECT payload FROM events WHERE type = 'qr_code.scanned' AND resource_id = ?1 ORDER BY id")?
            .query_map([&id], |r| r.get::<_, String>(0))?
            .map(|p| p.map(|p| serde_json::from_str(&p).unwrap()))
            .collect()
    })
}

#[tokio::test]
async fn a_scan_redirects_with_utm_and_counts_once_per_request() {
    let app = frozen().await;
    let qr = new_code(&app).await;
    let (id, code) = (qr["id"].as_str().unwrap(), qr["code"].as_str().unwrap());

    let r = app
        .get(&format!("/q/{code}"))
        .header("user-agent", IPHONE)
        .send()
        .await;
    assert_eq!(r.status, 302, "{}", r.text());
    // The promotion has no landing URL of its own: the sandbox's page of it, on the scanned host.
    let location = format!("/l/{code}?utm_source=signage&utm_medium=qr&utm_campaign=summer-fruit-week&utm_content=checkout");
    assert_eq!(r.header("location"), Some(location.as_str()));
    assert_eq!(
        qr["redirect_url"].as_str(),
        Some(format!("{}{location}", app.base_url).as_str())
    );
    assert_eq!(r.header("cache-control"), Some("no-store"));
    assert!(r.body.is_empty());

    let got = app
        .get(&format!("/qr-codes/{id}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(got["scan_count"], 1);
    assert_eq!(got["last_scanned_at"], "2026-03-02T09:00:00Z");

    // A credential changes nothing (the route is public); each request counts once.
    app.get(&format!("/q/{code}"))
        .key("harborview-readwrite")
        .header("user-agent", ANDROID)
        .send()
        .await;
    app.get(&format!("/q/{code}"))
        .header("user-agent", "curl/8.5.0")
        .send()
        .await;
    app.get(&format!("/q/{code}")).send().await;
    let got = app
        .get(&format!("/qr-codes/{id}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(got["scan_count"], 4);

    let scans = app
        .collect_all(&format!("/qr-codes/{id}/scans"), "northwind-readonly", 3)
        .await;
    let classes: Vec<&str> = scans
        .iter()
        .map(|s| s["agent_class"].as_str().unwrap())
        .collect();
    assert_eq!(classes, ["other", "bot", "android", "ios"], "newest first");
    for s in &scans {
        assert_eq!(s["object"], "qr_scan");
        assert_eq!(s["qr_code_id"], id);
        assert_eq!(s["scanned_at"], "2026-03-02T09:00:00Z");
        assert_eq!(
            s.as_object().unwrap().len(),
            5,
            "no address, no raw user agent: {s}"
        );
    }
    let stored: i64 = app.sql(|c| {
        c.query_row("SELECT count(*) FROM pragma_table_info('qr_scans') WHERE name LIKE '%ip%' OR name LIKE '%agent' OR name LIKE '%addr%'", [], |r| r.get(0))
    });
    assert_eq!(stored, 0);

    // The scan list is the company's: others get 404, a key without promotions:read 403 (scope
    // first, so a 403 never tells whether the code exists).
    app.get(&format!("/qr-codes/{id}/scans"))
        .key("harborview-readwrite")
        .send()
        .await
        .problem(404);
    app.get(&format!("/qr-codes/{id}/scans"))
        .key("harborview-hotels-billing")
        .send()
        .await
        .problem(403);
    app.get(&format!("/qr-codes/{ROOFTOP_QR}/scans"))
        .key("harborview-hotels-billing")
        .send()
        .await
        .problem(403);
}

#[tokio::test]
async fn scanned_events_are_rate_limited_per_code_but_every_scan_counts() {
    let app = frozen().await;
    let qr = new_code(&app).await;
    let (id, code) = (qr["id"].as_str().unwrap(), qr["code"].as_str().unwrap());
    for _ in 0..25 {
        let r = app
            .get(&format!("/q/{code}"))
            .header("user-agent", IPHONE)
            .send()
            .await;
        assert_eq!(r.status, 302);
    }
    let events = scanned_events(&app, id);
    assert_eq!(events.len(), 1, "one event for a storm within a minute");
    assert_eq!(events[0]["scan_count"], 1);
    assert_eq!(events[0]["scans_since_last_event"], 1);
    assert_eq!(events[0]["agent_class"], "ios");

    // 59 s later: still within the minute. 60 s after the event: the next one, covering the rest.
    let advance = |s: i64| {
        app.post("/_sandbox/clock/advance")
            .key("sandbox-operator")
            .json(&json!({"seconds": s}))
    };
    advance(59).send().await.ok();
    app.get(&format!("/q/{code}")).send().await;
    assert_eq!(scanned_events(&app, id).len(), 1);
    advance(1).send().await.ok();
    app.get(&format!("/q/{code}")).send().await;
    let events = scanned_events(&app, id);
    assert_eq!(events.len(), 2);
    assert_eq!(events[1]["scan_count"], 27);
    assert_eq!(events[1]["scans_since_last_event"], 26);
    assert_eq!(events[1]["scanned_at"], "2026-03-02T09:01:00Z");
    let got = app
        .get(&format!("/qr-codes/{id}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(got["scan_count"], 27);
    // Another code has its own allowance.
    let other = new_code(&app).await;
    app.get(&format!("/q/{}", other["code"].as_str().unwrap()))
        .send()
        .await;
    assert_eq!(scanned_events(&app, other["id"].as_str().unwrap()).len(), 1);
}

#[tokio::test]
async fn unknown_codes_are_404_and_reveal_nothing() {
    let app = TestApp::spawn().await;
    for path in [
        "/q/AAAAAAAAAA",
        "/q/zz",
        "/q/%2e%2e",
        "/q/a-b",
        &format!("/q/{}", "a".repeat(40)),
    ] {
        let p = app.get(path).send().await.problem(404);
        assert!(p.get("location").is_none());
    }
    // A QR code's id is not its code.
    app.get(&format!("/q/{ROOFTOP_QR}"))
        .send()
        .await
        .problem(404);
    let total: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM qr_scans WHERE scanned_at > strftime('%s','now') - 60",
            [],
            |r| r.get(0),
        )
    });
    assert_eq!(total, 0);
}

#[tokio::test]
async fn scans_show_in_the_promotion_report_per_day() {
    // Without the simulated fleet: only this test's scans move the numbers.
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(crate::sandbox_clock::FROZEN_AT));
        l.sandbox_simulate_fleet = Some(false);
    })
    .await;
    let before = app
        .get(&format!("/promotions/{SUMMER_FRUIT}/report"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(before["object"], "promotion_report");
    let qr = new_code(&app).await;
    let code = qr["code"].as_str().unwrap();
    for ua in [IPHONE, IPHONE, ANDROID] {
        app.get(&format!("/q/{code}"))
            .header("user-agent", ua)
            .send()
            .await;
    }
    app.post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": 86_400}))
        .send()
        .await
        .ok();
    app.get(&format!("/q/{code}"))
        .header("user-agent", ANDROID)
        .send()
        .await;

    let report = app
        .get(&format!("/promotions/{SUMMER_FRUIT}/report"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(report["generated_at"], "2026-03-03T09:00:00Z");
    assert_eq!(report["qr_code_count"], 4);
    assert_eq!(
        report["scan_count"],
        before["scan_count"].as_i64().unwrap() + 4
    );
    assert_eq!(report["last_scanned_at"], "2026-03-03T09:00:00Z");
    let days = report["scans_per_day"].as_array().unwrap();
    let day = |d: &str| {
        days.iter()
            .find(|x| x["date"] == d)
            .map(|x| x["scans"].as_i64().unwrap())
    };
    let before_days = before["scans_per_day"].as_array().unwrap();
    let before_day = |d: &str| {
        before_days
            .iter()
            .find(|x| x["date"] == d)
            .map_or(0, |x| x["scans"].as_i64().unwrap())
    };
    assert_eq!(day("2026-03-02"), Some(before_day("2026-03-02") + 3));
    assert_eq!(day("2026-03-03"), Some(1));
    assert_eq!(
        report["scans_by_agent_class"]["ios"].as_i64().unwrap(),
        before["scans_by_agent_class"]["ios"].as_i64().unwrap() + 2
    );
    let mine = report["qr_codes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == qr["id"])
        .unwrap()
        .clone();
    assert_eq!(mine["scan_count"], 4);
    // Dates ascend and every listed day has scans.
    let dates: Vec<&str> = days.iter().map(|d| d["date"].as_str().unwrap()).collect();
    let mut sorted = dates.clone();
    sorted.sort();
    assert_eq!(dates, sorted);
    assert!(days.iter().all(|d| d["scans"].as_i64().unwrap() >= 1));

    app.get(&format!("/promotions/{SUMMER_FRUIT}/report"))
        .key("harborview-readwrite")
        .send()
        .await
        .problem(404);
}

/// The fixtures: each code's `scan_count` is the number of its scans, and the report adds up.
#[tokio::test]
async fn fixture_scan_counts_match_their_scans() {
    let app = TestApp::spawn().await;
    let mut total = 0;
    for key in ["northwind-readonly", "harborview-readwrite"] {
        for p in app.collect_all("/promotions", key, 100).await {
            let pid = p["id"].as_str().unwrap();
            let report = app
                .get(&format!("/promotions/{pid}/report"))
                .key(key)
                .send()
                .await
                .ok();
            let mut sum = 0;
            for c in report["qr_codes"].as_array().unwrap() {
                let scans = app
                    .collect_all(
                        &format!("/qr-codes/{}/scans", c["id"].as_str().unwrap()),
                        key,
                        100,
                    )
                    .await;
                assert_eq!(c["scan_count"].as_i64().unwrap(), scans.len() as i64, "{c}");
                sum += scans.len() as i64;
            }
            assert_eq!(report["scan_count"], sum);
            let per_day: i64 = report["scans_per_day"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["scans"].as_i64().unwrap())
                .sum();
            assert!(per_day <= sum);
            let per_class: i64 = report["scans_by_agent_class"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_i64().unwrap())
                .sum();
            assert_eq!(per_class, sum);
            total += sum;
        }
    }
    assert!(total > 0, "the fixtures have scans");
}

/// With the simulated fleet on, running promotions' codes are scanned as the clock passes whole
/// hours, the same way in two sandboxes; off, nothing is scanned on its own.
#[tokio::test]
async fn the_simulated_fleet_scans_running_promotions_deterministically() {
    let totals = |app: &TestApp| -> (i64, i64) {
        app.sql(|c| {
            c.query_row(
                "SELECT (SELECT sum(scan_count) FROM qr_codes), (SELECT count(*) FROM qr_scans)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
    };
    fn day(app: &TestApp) -> crate::helpers::RequestBuilder<'_> {
        app.post("/_sandbox/clock/advance")
            .key("sandbox-operator")
            .json(&json!({"seconds": 86_400}))
    }
    let a = frozen().await;
    let b = frozen().await;
    let (before, rows_before) = totals(&a);
    let moved = day(&a).send().await.ok();
    day(&b).send().await.ok();
    let (after, rows_after) = totals(&a);
    assert!(after > before, "a day of running promotions brings scans");
    assert_eq!(
        after - before,
        rows_after - rows_before,
        "every scan is a row"
    );
    assert_eq!(
        moved["transitions"]["qr_code.simulated_scan"],
        after - before
    );
    assert_eq!(totals(&b), (after, rows_after), "deterministic");
    let simulated = |app: &TestApp| -> Vec<(String, i64, String)> {
        app.sql(|c| {
            c.prepare("SELECT qr_code_id, scanned_at, agent_class FROM qr_scans WHERE scanned_at > 1772442000 ORDER BY 1, 2, 3")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect()
        })
    };
    assert_eq!(simulated(&a), simulated(&b));
    // Only codes of running promotions, only inside the day's scanning hours (09:00–21:00 UTC).
    for (_, at, _) in simulated(&a) {
        let hour = at.rem_euclid(86_400) / 3600;
        assert!((8..=21).contains(&hour), "{at}");
    }
    let off = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(crate::sandbox_clock::FROZEN_AT));
        l.sandbox_simulate_fleet = Some(false);
    })
    .await;
    let quiet = totals(&off);
    day(&off).send().await.ok();
    assert_eq!(totals(&off), quiet);
}

/// A window of a code's scans (the ranking's `from`/`to`) counts exactly the scans its list shows
/// in that window, and the list pages through all of them newest first: both read the one index of
/// a code's scans, `(qr_code_id, id, scanned_at)` (V36), the window without the rows.
#[tokio::test]
async fn a_window_of_scans_counts_what_the_list_shows_in_it() {
    // Frozen at 2026-03-02T09:00:00Z with the fleet on: 30 days of history scans behind it.
    let app = frozen().await;
    let (from, to) = ("2026-02-20T00:00:00Z", "2026-03-01T12:00:00Z");
    let key = "northwind-readonly";
    let ranking = app
        .get(&format!("/qr-codes/ranking?from={from}&to={to}&limit=100"))
        .key(key)
        .send()
        .await
        .ok();
    let codes = ranking["codes"].as_array().unwrap();
    assert!(!codes.is_empty());
    let mut windowed = 0;
    for code in codes {
        let id = code["qr_code_id"].as_str().unwrap();
        let scans = app
            .collect_all(&format!("/qr-codes/{id}/scans"), key, 100)
            .await;
        let ids: Vec<&str> = scans.iter().map(|s| s["id"].as_str().unwrap()).collect();
        assert!(ids.windows(2).all(|w| w[0] > w[1]), "{id}: newest first");
        // Instants are RFC 3339 in UTC to the second: their text sorts as time does.
        let inside = scans
            .iter()
            .filter(|s| (from..to).contains(&s["scanned_at"].as_str().unwrap()))
            .count();
        assert_eq!(code["scans"].as_u64(), Some(inside as u64), "{id}");
        windowed += inside;
    }
    assert!(windowed > 0, "the history scanned inside the window");
    let plan: Vec<String> = app.sql(|c| {
        c.prepare(
            "EXPLAIN QUERY PLAN SELECT count(*) FROM qr_scans
             WHERE qr_code_id = ?1 AND scanned_at >= ?2 AND scanned_at < ?3",
        )?
        .query_map(["qr_a", "0", "1"], |r| r.get(3))?
        .collect()
    });
    assert_eq!(
        plan,
        ["SEARCH qr_scans USING COVERING INDEX qr_scans_by_code (qr_code_id=?)"]
    );
}
