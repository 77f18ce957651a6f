//! Issue 22 item 2: public scans cost bounded storage. A flood on one code keeps a capped number of
//! scan rows and then only per-minute counters, so the database grows by a small bounded amount
//! while every count stays exact; each client address is rate-limited with a plain 429 page.

use crate::helpers::*;
use std::sync::Arc;

/// Bytes of the database in use (the pages holding data, the write-ahead log's included).
fn used_bytes(app: &TestApp) -> i64 {
    app.sql(|c| {
        c.query_row(
            "SELECT (SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count FROM pragma_freelist_count()),
                    (SELECT page_size FROM pragma_page_size())",
            [],
            |r| Ok(r.get::<_, i64>(0)? * r.get::<_, i64>(1)?),
        )
    })
}

fn a_code(app: &TestApp) -> (String, String, i64) {
    app.sql(|c| {
        c.query_row(
            "SELECT q.code, q.promotion_id, q.scan_count FROM qr_codes q
             JOIN promotions p ON p.id = q.promotion_id
             WHERE p.company_id = ?1 ORDER BY q.id LIMIT 1",
            [company_id("Northwind Grocers")],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_flood_grows_the_database_by_a_bounded_amount_and_counts_stay_exact() {
    let app = Arc::new(
        TestApp::spawn_with(|l| {
            l.scan_rate_limit_per_minute = Some(0);
            l.scan_detail_per_code = Some(50);
            l.sandbox_simulate_fleet = Some(false);
        })
        .await,
    );
    let (code, promo, before_count) = a_code(&app);
    let report_path = format!("/promotions/{promo}/report");
    let before = app
        .get(&report_path)
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let size_before = used_bytes(&app);
    let (workers, each) = (8, 250);
    let mut tasks = Vec::new();
    for w in 0..workers {
        let app = Arc::clone(&app);
        let code = code.clone();
        tasks.push(tokio::spawn(async move {
            let agents = [
                "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0)",
                "curl/8.5.0",
                "Mozilla/5.0 (Linux; Android 14)",
            ];
            for i in 0..each {
                let r = app
                    .get(&format!("/q/{code}"))
                    .header("user-agent", agents[(w + i) % agents.len()])
                    .send()
                    .await;
                assert_eq!(r.status, 302);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let flood = (workers * each) as i64;
    let grew = used_bytes(&app) - size_before;
    // 2,000 scans one row each would be ~350 KB: the cap keeps 50 rows, the rest are counters.
    assert!(
        grew < 96 * 1024,
        "the database grew by {grew} bytes for {flood} scans"
    );
    let rows: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM qr_scans s JOIN qr_codes q ON q.id = s.qr_code_id WHERE q.code = ?1",
            [&code],
            |r| r.get(0),
        )
    });
    assert!(rows <= 50.max(before_count), "{rows} scan rows kept");
    let after = app
        .get(&report_path)
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let total = |r: &serde_json::Value| r["scan_count"].as_i64().unwrap();
    assert_eq!(total(&after), total(&before) + flood, "every scan counted");
    let by_class: i64 = after["scans_by_agent_class"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_i64().unwrap())
        .sum();
    assert_eq!(
        by_class,
        total(&after),
        "the report reads detail and counters"
    );
    let per_day: i64 = after["scans_per_day"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["scans"].as_i64().unwrap())
        .sum();
    let per_day_before: i64 = before["scans_per_day"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["scans"].as_i64().unwrap())
        .sum();
    assert_eq!(per_day, per_day_before + flood);
    let code_line = after["qr_codes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["code"] == code.as_str())
        .unwrap()
        .clone();
    assert_eq!(
        code_line["scan_count"].as_i64().unwrap(),
        before_count + flood
    );
}

#[tokio::test]
async fn one_address_past_its_scans_per_minute_gets_a_plain_429_page_and_is_not_counted() {
    let app = TestApp::spawn_with(|l| {
        l.scan_rate_limit_per_minute = Some(5);
        l.sandbox_simulate_fleet = Some(false);
    })
    .await;
    let (code, _, before) = a_code(&app);
    for _ in 0..5 {
        assert_eq!(app.get(&format!("/q/{code}")).send().await.status, 302);
    }
    let r = app.get(&format!("/q/{code}")).send().await;
    assert_eq!(r.status, 429);
    assert!(r.header("location").is_none(), "no redirect");
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    assert!(r.text().contains("Too many scans"));
    // A page like every other: it runs nothing and no other site may frame it.
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    let csp = r.header("content-security-policy").unwrap_or_default();
    assert!(
        csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'none'"),
        "{csp}"
    );
    // An unknown code is refused the same way: the limit comes before any lookup.
    assert_eq!(app.get("/q/nosuchcode").send().await.status, 429);
    let count: i64 = app.sql(|c| {
        c.query_row(
            "SELECT scan_count FROM qr_codes WHERE code = ?1",
            [&code],
            |r| r.get(0),
        )
    });
    assert_eq!(count, before + 5);
}
