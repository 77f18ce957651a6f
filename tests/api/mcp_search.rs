//! Tests: mcp_search (issue 12, item 8). A `q` name search on companies, devices, ads and
//! promotions and `from`/`to` on token transactions, charges and invoices, on REST and MCP alike.

use crate::helpers::mcp::{call_err, call_ok};
use crate::helpers::{company_id, TestApp};
use serde_json::{json, Value};

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

fn ids(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|x| x["id"].as_str().unwrap().to_string())
        .collect()
}

async fn rest(app: &TestApp, path: &str) -> Value {
    app.get(path).key("northwind-readonly").send().await.ok()
}

#[tokio::test]
async fn q_searches_names_on_rest_and_mcp() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let companies = rest(&app, "/companies?q=GROCERS").await;
    assert_eq!(ids(&companies), [grocers.as_str()]);
    let tool = call_ok(
        &app,
        "northwind-readonly",
        "list_companies",
        json!({"q": "grocers"}),
    )
    .await;
    assert_eq!(ids(&tool), [grocers.as_str()]);
    // Another account's company is never found.
    let none = rest(&app, "/companies?q=Harborview").await;
    assert_eq!(ids(&none), Vec::<String>::new());

    for (table, path, tool, args_key) in [
        ("devices", "/devices", "list_devices", "q"),
        ("ads", "/ads", "list_ads", "q"),
        ("promotions", "/promotions", "list_promotions", "q"),
    ] {
        let target: String = app.sql(|c| {
            c.query_row(
                &format!("SELECT min(id) FROM {table} WHERE company_id = ?1"),
                [&grocers],
                |r| r.get(0),
            )
        });
        // A name with LIKE's special characters: they are taken literally.
        exec(
            &app,
            &format!("UPDATE {table} SET name = 'Spring 50%_off Special' WHERE id = ?1"),
            &[&target],
        );
        let found = rest(&app, &format!("{path}?q=50%25_OFF&limit=100")).await;
        assert_eq!(ids(&found), [target.as_str()], "{table}");
        let by_tool = call_ok(
            &app,
            "northwind-readonly",
            tool,
            json!({ args_key: "50%_off", "limit": 100 }),
        )
        .await;
        assert_eq!(ids(&by_tool), [target.as_str()], "{tool}");
        // `%` alone matches only names that contain it, not everything.
        let percent = rest(&app, &format!("{path}?q=%25&limit=100")).await;
        assert_eq!(ids(&percent), [target.as_str()], "{table} q=%");
        // Combined with another filter and with paging.
        let page = rest(&app, &format!("{path}?q=s&limit=1")).await;
        assert!(ids(&page).len() <= 1);
    }
    for bad in ["", &"x".repeat(101)] {
        let r = app
            .get(&format!("/devices?q={bad}"))
            .key("northwind-readonly")
            .send()
            .await;
        assert_eq!(r.status, 422, "q={bad:?}: {}", r.text());
    }
    let e = call_err(&app, "northwind-readonly", "list_ads", json!({"q": ""})).await;
    assert!(e.contains("`q`"), "{e}");
}

#[tokio::test]
async fn from_and_to_filter_transactions_charges_and_invoices() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let day = signage::time::parse_rfc3339("2026-03-10T00:00:00Z").unwrap();
    for (id, at) in [
        ("ttx_win00000000000000001", day - 1),
        ("ttx_win00000000000000002", day),
        ("ttx_win00000000000000003", day + 86_399),
        ("ttx_win00000000000000004", day + 86_400),
    ] {
        exec(
            &app,
            "INSERT INTO token_transactions (id, company_id, kind, amount, balance_after, description, created_at)
             VALUES (?1, ?2, 'grant', 1, 1, 'window test', ?3)",
            &[&id, &grocers, &at],
        );
    }
    let path = format!(
        "/tokens/transactions?company_id={grocers}&from=2026-03-10&to=2026-03-10&limit=100"
    );
    let found = rest(&app, &path).await;
    assert_eq!(
        ids(&found),
        ["ttx_win00000000000000003", "ttx_win00000000000000002"]
    );
    let tool = call_ok(
        &app,
        "northwind-readonly",
        "list_token_transactions",
        json!({"company_id": grocers, "from": "2026-03-10T00:00:00Z", "to": "2026-03-11T00:00:00Z", "limit": 100}),
    )
    .await;
    assert_eq!(ids(&tool), ids(&found));

    // Charges by creation time, invoices by a billing period that overlaps the window.
    let (charge, created, invoice, start, end): (String, i64, String, i64, i64) = app.sql(|c| {
        c.query_row(
            "SELECT c.id, c.created_at, i.id, i.period_start, i.period_end FROM charges c
             JOIN invoices i ON i.id = c.invoice_id WHERE c.company_id = ?1 ORDER BY c.id LIMIT 1",
            [&grocers],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
    });
    let at = |t: i64| {
        signage::time::rfc3339(t)
            .replace(':', "%3A")
            .replace('+', "%2B")
    };
    let charges = rest(
        &app,
        &format!(
            "/charges?company_id={grocers}&from={}&to={}&limit=100",
            at(created),
            at(created + 1)
        ),
    )
    .await;
    assert!(ids(&charges).contains(&charge));
    assert!(charges["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["created_at"] == signage::time::rfc3339(created)));
    let later = rest(
        &app,
        &format!("/charges?company_id={grocers}&from={}", at(created + 1)),
    )
    .await;
    assert!(!ids(&later).contains(&charge));
    let inside = rest(
        &app,
        &format!(
            "/invoices?company_id={grocers}&from={}&to={}",
            at(start),
            at(end)
        ),
    )
    .await;
    assert!(ids(&inside).contains(&invoice));
    let after = rest(
        &app,
        &format!("/invoices?company_id={grocers}&from={}", at(end)),
    )
    .await;
    assert!(!ids(&after).contains(&invoice));
    let tool = call_ok(
        &app,
        "northwind-readonly",
        "list_invoices",
        json!({"company_id": grocers, "from": signage::time::rfc3339(end)}),
    )
    .await;
    assert_eq!(ids(&tool), ids(&after));

    for path in [
        "/charges?from=last-week",
        "/invoices?from=2026-03-10T00:00:00",
        "/tokens/transactions?to=2026-02-30",
    ] {
        let r = app.get(path).key("northwind-readonly").send().await;
        assert_eq!(r.status, 422, "{path}: {}", r.text());
    }
    // `to` not after `from`: each value is valid, the window is empty.
    let empty = rest(
        &app,
        &format!("/tokens/transactions?company_id={grocers}&from=2026-03-11&to=2026-03-10"),
    )
    .await;
    assert_eq!(ids(&empty), Vec::<String>::new());
    let summary = rest(
        &app,
        &format!("/tokens/summary?company_id={grocers}&from=2026-03-10T12:00:00Z&to=2026-03-10T12:00:00Z"),
    )
    .await;
    assert_eq!(summary["transaction_count"], 0);
    assert_eq!(summary["opening_balance"], summary["closing_balance"]);
}
