//! Tests: mcp_answers (issue 12, item 7). One-call answers, on REST and as tools from the route
//! table: fleet health (`GET /devices/health`, get_fleet_health) and the token summary
//! (`GET /tokens/summary`, get_token_summary).

use crate::helpers::mcp::{call_err, call_ok};
use crate::helpers::{company_id, TestApp};
use serde_json::json;

fn exec(app: &TestApp, sql: &str, args: &[&dyn rusqlite::ToSql]) {
    app.app
        .db
        .write(
            &signage::db::WriteIntent::sandbox(),
            |tx| -> Result<(), signage::db::DbError> {
                tx.execute(sql, args)?;
                Ok(())
            },
        )
        .unwrap();
}

fn ids(app: &TestApp, sql: &str, arg: &str) -> Vec<String> {
    app.sql(|c| {
        let mut stmt = c.prepare(sql)?;
        let rows = stmt.query_map([arg], |r| r.get(0))?;
        rows.collect()
    })
}

/// Grocers' screens: all silent, then one online, two offline (one with playback errors), the
/// rest never seen. Returns (online, offline long, offline short, total).
fn grocers_fleet(app: &TestApp) -> (String, String, String, usize) {
    let grocers = company_id("Northwind Grocers");
    let mut devices = ids(
        app,
        "SELECT id FROM devices WHERE company_id = ?1 ORDER BY id",
        &grocers,
    );
    let total = devices.len();
    while devices.len() < 3 {
        let r = add_device(app, &grocers, devices.len());
        devices.push(r);
    }
    let total = total.max(3);
    let now = signage::time::wall_now();
    exec(
        app,
        "UPDATE devices SET last_heartbeat_at = NULL WHERE company_id = ?1",
        &[&grocers],
    );
    exec(
        app,
        "UPDATE devices SET last_heartbeat_at = ?1 WHERE id = ?2",
        &[&now, &devices[0]],
    );
    exec(
        app,
        "UPDATE devices SET last_heartbeat_at = ?1 WHERE id = ?2",
        &[&(now - 86_400), &devices[1]],
    );
    exec(
        app,
        "UPDATE devices SET last_heartbeat_at = ?1 WHERE id = ?2",
        &[&(now - 3_600), &devices[2]],
    );
    exec(
        app,
        "DELETE FROM playback_errors WHERE device_id IN (?1, ?2)",
        &[&devices[1], &devices[2]],
    );
    for (id, code, at) in [
        ("perr_health0000000000001", "old_error", now - 90_000),
        ("perr_health0000000000002", "decode_failed", now - 86_500),
    ] {
        exec(
            app,
            "INSERT INTO playback_errors (id, device_id, code, message, occurred_at)
             VALUES (?1, ?2, ?3, 'The video could not be decoded.', ?4)",
            &[&id, &devices[1], &code, &at],
        );
    }
    (
        devices[0].clone(),
        devices[1].clone(),
        devices[2].clone(),
        total,
    )
}

/// Only used when the fixtures hold fewer than three Grocers screens.
fn add_device(app: &TestApp, company: &str, n: usize) -> String {
    let id = format!("dev_health{n:014}");
    exec(
        app,
        "INSERT INTO devices (id, company_id, name, location, platform, orientation, resolution,
            created_at, updated_at, version)
         VALUES (?1, ?2, ?1, '', 'android', 'landscape', '1920x1080', 0, 0, 1)",
        &[&id, &company],
    );
    id
}

#[tokio::test]
async fn fleet_health_counts_and_sorts_offline_screens() {
    let app = TestApp::spawn().await;
    let (online, long, short, total) = grocers_fleet(&app);
    let grocers = company_id("Northwind Grocers");
    let rest = app
        .get(&format!("/devices/health?company_id={grocers}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(rest["object"], "fleet_health");
    assert_eq!(rest["offline_after_seconds"], 300);
    let companies = rest["companies"].as_array().unwrap();
    assert_eq!(companies.len(), 1);
    let c = &companies[0];
    assert_eq!(c["company_id"], grocers.as_str());
    assert_eq!(c["company_name"], "Northwind Grocers");
    assert_eq!(c["total"], total);
    assert_eq!(c["online"], 1);
    assert_eq!(c["offline"], 2);
    assert_eq!(c["never_seen"], total - 3);
    assert_eq!(c["offline_not_listed"], 0);
    let offline = c["offline_devices"].as_array().unwrap();
    let order: Vec<&str> = offline
        .iter()
        .map(|d| d["device_id"].as_str().unwrap())
        .collect();
    assert_eq!(order, [long.as_str(), short.as_str()], "longest down first");
    assert!(!order.contains(&online.as_str()));
    assert!(offline[0]["seconds_since_heartbeat"].as_i64().unwrap() >= 86_400);
    assert_eq!(offline[0]["last_playback_error"]["code"], "decode_failed");
    assert_eq!(offline[1]["last_playback_error"], json!(null));

    // The tool is the same answer.
    let tool = call_ok(
        &app,
        "northwind-readonly",
        "get_fleet_health",
        json!({"company_id": grocers}),
    )
    .await;
    // The one member computed from the wall clock: the two calls may straddle a second (the first
    // MCP call of a fresh server also builds the catalogue). It must agree within that second.
    let mut tool_companies = tool["companies"].clone();
    for (t, r) in tool_companies[0]["offline_devices"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .zip(rest["companies"][0]["offline_devices"].as_array().unwrap())
    {
        let (a, b) = (
            t["seconds_since_heartbeat"].as_i64().unwrap(),
            r["seconds_since_heartbeat"].as_i64().unwrap(),
        );
        assert!((0..=1).contains(&(a - b)), "{a} vs {b}");
        t["seconds_since_heartbeat"] = json!(b);
    }
    assert_eq!(tool_companies, rest["companies"]);

    // Without company_id: every visible company, and only those.
    let all = app
        .get("/devices/health")
        .key("northwind-grocers-write")
        .send()
        .await
        .ok();
    let seen: Vec<&str> = all["companies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["company_id"].as_str().unwrap())
        .collect();
    assert_eq!(seen, [grocers.as_str()]);
}

#[tokio::test]
async fn fleet_health_of_another_company_is_not_found() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let r = app
        .get(&format!("/devices/health?company_id={grocers}"))
        .key("harborview-readwrite")
        .send()
        .await;
    assert_eq!(r.status, 404, "{}", r.text());
    let e = call_err(
        &app,
        "harborview-readwrite",
        "get_fleet_health",
        json!({"company_id": grocers}),
    )
    .await;
    assert!(e.starts_with("HTTP 404"), "{e}");
    // A key without devices:read is refused on both.
    let r = app
        .get("/devices/health")
        .key("harborview-hotels-billing")
        .send()
        .await;
    assert_eq!(r.status, 403);
}

#[tokio::test]
async fn token_summary_adds_up_the_window() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let day = signage::time::parse_rfc3339("2026-03-10T00:00:00Z").unwrap();
    exec(
        &app,
        "DELETE FROM token_transactions WHERE company_id = ?1",
        &[&grocers],
    );
    let rows: [(&str, &str, i64, i64, i64); 5] = [
        (
            "ttx_sum00000000000000001",
            "grant",
            1000,
            1000,
            day - 86_400,
        ),
        ("ttx_sum00000000000000002", "spend", -300, 700, day + 3_600),
        (
            "ttx_sum00000000000000003",
            "purchase",
            500,
            1200,
            day + 7_200,
        ),
        (
            "ttx_sum00000000000000004",
            "spend",
            -200,
            1000,
            day + 86_399,
        ),
        ("ttx_sum00000000000000005", "spend", -100, 900, day + 86_400),
    ];
    for (id, kind, amount, after, at) in rows {
        exec(
            &app,
            "INSERT INTO token_transactions (id, company_id, kind, amount, balance_after, description, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, 'test', ?6)",
            &[&id, &grocers, &kind, &amount, &after, &at],
        );
    }
    let path = format!("/tokens/summary?company_id={grocers}&from=2026-03-10&to=2026-03-10");
    let rest = app.get(&path).key("northwind-readonly").send().await.ok();
    assert_eq!(rest["from"], "2026-03-10T00:00:00Z");
    assert_eq!(rest["to"], "2026-03-11T00:00:00Z");
    assert_eq!(rest["opening_balance"], 1000);
    assert_eq!(rest["closing_balance"], 1000);
    assert_eq!(rest["added"], 500);
    assert_eq!(rest["spent"], 500);
    assert_eq!(rest["net"], 0);
    assert_eq!(rest["transaction_count"], 3);
    assert_eq!(
        rest["by_kind"],
        json!([{"kind": "grant", "count": 0, "tokens": 0},
            {"kind": "purchase", "count": 1, "tokens": 500},
            {"kind": "spend", "count": 2, "tokens": -500},
            {"kind": "refund", "count": 0, "tokens": 0}])
    );
    let tool = call_ok(
        &app,
        "northwind-readonly",
        "get_token_summary",
        json!({"company_id": grocers, "from": "2026-03-10", "to": "2026-03-10"}),
    )
    .await;
    assert_eq!(tool, rest);

    for (query, field) in [("from=yesterday", "from"), ("to=2026-02-30T00:00:00", "to")] {
        let r = app
            .get(&format!("/tokens/summary?company_id={grocers}&{query}"))
            .key("northwind-readonly")
            .send()
            .await;
        assert_eq!(r.status, 422, "{query}: {}", r.text());
        assert_eq!(r.json()["errors"][0]["field"], field, "{query}");
    }
    // Default window: a calendar month, the current one or the one `to` ends in.
    let only_to = app
        .get(&format!(
            "/tokens/summary?company_id={grocers}&to=2026-03-10"
        ))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(only_to["from"], "2026-03-01T00:00:00Z");
    assert_eq!(only_to["to"], "2026-03-11T00:00:00Z");
    let current = app
        .get(&format!("/tokens/summary?company_id={grocers}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let from = current["from"].as_str().unwrap();
    let to = current["to"].as_str().unwrap();
    assert!(
        from.ends_with("-01T00:00:00Z") && to.ends_with("-01T00:00:00Z"),
        "{from} {to}"
    );
    let now = signage::time::rfc3339(signage::time::wall_now());
    assert!(
        from <= now.as_str() && now.as_str() < to,
        "{from} {now} {to}"
    );
    let r = app
        .get("/tokens/summary")
        .key("northwind-readonly")
        .send()
        .await;
    assert_eq!(r.status, 422, "company_id is required");
    let r = app
        .get(&format!("/tokens/summary?company_id={grocers}"))
        .key("harborview-readwrite")
        .send()
        .await;
    assert_eq!(r.status, 404);
}
