//! Tests: billing (invoices with lines and totals, recent charges, one billing rule for the
//! fixtures and live months) and the plan catalogue.
//!
//! Invoices are calendar months, so which invoice a fixture charge lands on depends on the date:
//! the tests that look at invoice contents run on the frozen clock (2026-03-02 09:00 UTC).

use crate::helpers::{company_id, TestApp};
use crate::list_contract::{assert_list_contract, in_companies};
use crate::sandbox_clock::{frozen, FROZEN_AT};
use serde_json::json;
use std::collections::HashSet;

const NWG_OPEN_INVOICE: &str = "inv_0m5d4rusocljz0g8w1e9"; // NWG-2026-0003 on the frozen clock
const HVH_OPEN_INVOICE: &str = "inv_0m5d4rusui3cvkpflfhu"; // HVH-2026-0003 on the frozen clock
const BUSINESS_PLAN: &str = "plan_0m5d4ruo3lgv7fuynar1";

#[tokio::test]
async fn plans_are_a_shared_catalogue() {
    let app = TestApp::spawn().await;
    let all = app.collect_all("/plans", "northwind-readonly", 100).await;
    assert_eq!(all.len(), 3);
    let codes: Vec<&str> = all.iter().map(|p| p["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["enterprise", "business", "starter"]);
    assert_eq!(
        app.collect_all("/plans", "harborview-readwrite", 1).await,
        all
    );

    let p = app
        .get(&format!("/plans/{BUSINESS_PLAN}"))
        .key("northwind-pharmacy-read")
        .send()
        .await
        .ok();
    assert_eq!(p["object"], "plan");
    assert_eq!(p["name"], "Business");
    assert_eq!(p["monthly_price_cents"], 14900);
    assert_eq!(p["included_tokens_monthly"], 500);
    assert!(p["features"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f == "promotions"));
    app.get("/plans/plan_nothing")
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    app.get("/plans/cmp_0m5d4ruo5fepbn59k9ts")
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    // No plans:read scope.
    let p = app
        .get("/plans")
        .key("harborview-hotels-billing")
        .send()
        .await
        .problem(403);
    assert_eq!(p["missing_scope"], "plans:read");
    // The catalogue is read-only.
    app.post("/plans")
        .key("northwind-admin")
        .json(&serde_json::json!({"code": "x"}))
        .send()
        .await
        .problem(405);
}

#[tokio::test]
async fn invoices_list_filter_and_page() {
    let app = frozen().await;
    let all = app
        .collect_all("/invoices", "northwind-readonly", 100)
        .await;
    assert_eq!(all.len(), 6);
    let walked = assert_list_contract(
        &app,
        "/invoices",
        "northwind-readonly",
        1,
        in_companies(&["Northwind Grocers", "Northwind Pharmacy"]),
    )
    .await;
    assert_eq!(walked, all);
    let nwg = all.iter().find(|i| i["id"] == NWG_OPEN_INVOICE).unwrap();
    // Numbered by its month (March 2026), as live billing numbers on.
    assert_eq!(nwg["number"], "NWG-2026-0003");
    assert_eq!(nwg["net_cents"], 14900 + 540);
    assert_eq!(nwg["paid_at"], serde_json::Value::Null);
    assert!(nwg.get("lines").is_none());

    let open = app
        .collect_all("/invoices?status=open", "northwind-readonly", 1)
        .await;
    assert_eq!(open.len(), 2);
    assert!(open.iter().all(|i| i["status"] == "open"));
    let paid = app
        .collect_all("/invoices?status=paid", "northwind-readonly", 10)
        .await;
    assert_eq!(paid.len(), 4);
    assert!(paid.iter().all(|i| i["paid_at"].is_string()));
    let grocers = company_id("Northwind Grocers");
    let mine = app
        .collect_all(
            &format!("/invoices?company_id={grocers}&status=paid"),
            "northwind-readonly",
            10,
        )
        .await;
    assert_eq!(mine.len(), 2);

    // The billing-only key of Harborview Hotels sees its three invoices and nothing else.
    let hv = app
        .collect_all("/invoices", "harborview-hotels-billing", 2)
        .await;
    assert_eq!(hv.len(), 3);
    assert!(hv
        .iter()
        .all(|i| i["company_id"] == company_id("Harborview Hotels").as_str()));
    app.get(&format!(
        "/invoices?company_id={}",
        company_id("Bluefin Cafés")
    ))
    .key("harborview-hotels-billing")
    .send()
    .await
    .problem(404);
    app.get("/invoices?status=late")
        .key("northwind-readonly")
        .send()
        .await
        .problem(422);
    app.get("/invoices?number=1")
        .key("northwind-readonly")
        .send()
        .await
        .problem(422);
    app.get("/invoices")
        .key("northwind-ads-editor")
        .send()
        .await
        .problem(403);
}

#[tokio::test]
async fn invoice_has_lines_and_total() {
    let app = frozen().await;
    let inv = app
        .get(&format!("/invoices/{NWG_OPEN_INVOICE}"))
        .key("northwind-grocers-write")
        .send()
        .await
        .ok();
    assert_eq!(inv["object"], "invoice");
    assert_eq!(inv["status"], "open");
    assert_eq!(inv["currency"], "EUR");
    let lines = inv["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 2);
    let sum: i64 = lines
        .iter()
        .map(|l| l["amount_cents"].as_i64().unwrap())
        .sum();
    assert_eq!(inv["net_cents"], sum);
    assert_eq!(sum, 15440);
    assert!(lines
        .iter()
        .all(|l| l["object"] == "charge" && l["invoice_id"] == NWG_OPEN_INVOICE));
    let kinds: HashSet<&str> = lines.iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, HashSet::from(["subscription", "overage"]));
    // Another account's invoice, or another company for a scoped key: 404.
    app.get(&format!("/invoices/{HVH_OPEN_INVOICE}"))
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    app.get(&format!("/invoices/{NWG_OPEN_INVOICE}"))
        .key("northwind-pharmacy-read")
        .send()
        .await
        .problem(404);
    app.get("/invoices/inv_zzz")
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    let hv = app
        .get(&format!("/invoices/{HVH_OPEN_INVOICE}"))
        .key("harborview-hotels-billing")
        .send()
        .await
        .ok();
    // March holds Harborview Hotels' subscription only: its token pack (20 February) and its
    // overages (January and February) are on the invoices of the months they were made in.
    assert_eq!(hv["lines"].as_array().unwrap().len(), 1);
    assert_eq!(hv["net_cents"], 49900);
}

#[tokio::test]
async fn charges_are_recent_first_and_filtered() {
    let app = frozen().await;
    let all = app.collect_all("/charges", "northwind-readonly", 100).await;
    assert_eq!(all.len(), 9);
    let walked = assert_list_contract(
        &app,
        "/charges",
        "northwind-readonly",
        2,
        in_companies(&["Northwind Grocers", "Northwind Pharmacy"]),
    )
    .await;
    assert_eq!(walked, all);
    let on_invoice = app
        .collect_all(
            &format!("/charges?invoice_id={NWG_OPEN_INVOICE}"),
            "northwind-readonly",
            1,
        )
        .await;
    assert_eq!(on_invoice.len(), 2);
    let pharmacy = company_id("Northwind Pharmacy");
    let theirs = app
        .collect_all(
            &format!("/charges?company_id={pharmacy}"),
            "northwind-readonly",
            3,
        )
        .await;
    assert_eq!(theirs.len(), 4);
    // Filters that contradict each other give an empty list, not someone else's data.
    let none = app
        .get(&format!(
            "/charges?company_id={pharmacy}&invoice_id={NWG_OPEN_INVOICE}"
        ))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(none["data"].as_array().unwrap().len(), 0);
    assert_eq!(none["has_more"], false);
    app.get(&format!("/charges?invoice_id={HVH_OPEN_INVOICE}"))
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    let p = app
        .get("/charges?invoice_id=ch_123")
        .key("northwind-readonly")
        .send()
        .await
        .problem(422);
    assert_eq!(p["errors"][0]["field"], "invoice_id");
    let hv = app
        .collect_all("/charges", "harborview-hotels-billing", 4)
        .await;
    assert_eq!(hv.len(), 7);
}

/// Every company's invoices, oldest first: (id, period_start, period_end, issued_at, due_at).
fn invoices_of(app: &TestApp, company: &str) -> Vec<(String, i64, i64, i64, i64)> {
    app.sql(|c| {
        c.prepare(
            "SELECT id, period_start, period_end, issued_at, due_at FROM invoices
             WHERE company_id = ?1 ORDER BY period_start",
        )?
        .query_map([company], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect()
    })
}

/// Each company's invoices are whole UTC months that tile (no gap, no overlap) from the first
/// fixture month up to the month holding `now`, each with exactly one subscription charge dated its
/// first second, and every charge dated inside its invoice's month.
fn assert_months_tile(app: &TestApp, now: i64, months: usize) {
    let companies: Vec<String> = app.sql(|c| {
        c.prepare("SELECT id FROM companies")?
            .query_map([], |r| r.get(0))?
            .collect()
    });
    assert_eq!(companies.len(), 4);
    for company in &companies {
        let invoices = invoices_of(app, company);
        assert_eq!(invoices.len(), months, "{company}: {invoices:?}");
        for pair in invoices.windows(2) {
            assert_eq!(pair[0].2, pair[1].1, "{company}: a gap or an overlap");
        }
        let last = invoices.last().unwrap();
        assert!(last.1 <= now && now < last.2, "the last month holds now");
        for (id, start, end, issued, due) in &invoices {
            let stamp = signage::time::rfc3339(*start);
            assert!(stamp.ends_with("-01T00:00:00Z"), "{stamp}");
            assert!(signage::time::rfc3339(*end).ends_with("-01T00:00:00Z"));
            assert_eq!(issued, start);
            assert_eq!(
                *due,
                end + 14 * 86_400,
                "due 14 days after the month, at midnight"
            );
            let (subscriptions, outside): (Vec<i64>, i64) = app.sql(|c| {
                let subs = c
                    .prepare(
                        "SELECT created_at FROM charges WHERE invoice_id = ?1
                         AND kind = 'subscription'",
                    )?
                    .query_map([id], |r| r.get(0))?
                    .collect::<Result<_, _>>()?;
                let outside = c.query_row(
                    "SELECT count(*) FROM charges WHERE invoice_id = ?1
                     AND (created_at < ?2 OR created_at >= ?3)",
                    rusqlite::params![id, start, end],
                    |r| r.get(0),
                )?;
                Ok((subs, outside))
            });
            assert_eq!(subscriptions, [*start], "{stamp}: billed exactly once");
            assert_eq!(outside, 0, "{stamp}: every line in its month");
        }
    }
}

#[tokio::test]
async fn fixture_and_live_months_are_billed_by_one_rule() {
    let app = frozen().await;
    // The fixtures: January and February 2026 (paid) and March (open, the frozen month).
    assert_months_tile(&app, FROZEN_AT, 3);
    let grocers = company_id("Northwind Grocers");
    let months: Vec<String> = invoices_of(&app, &grocers)
        .iter()
        .map(|i| signage::time::rfc3339(i.1))
        .collect();
    assert_eq!(
        months,
        [
            "2026-01-01T00:00:00Z",
            "2026-02-01T00:00:00Z",
            "2026-03-01T00:00:00Z"
        ]
    );
    let statuses: Vec<String> = app.sql(|c| {
        c.prepare("SELECT status FROM invoices WHERE company_id = ?1 ORDER BY period_start")?
            .query_map([&grocers], |r| r.get(0))?
            .collect()
    });
    assert_eq!(statuses, ["paid", "paid", "open"]);
    // Charges listed by id (newest first, as `GET /charges` lists them) read in date order, and the
    // token ledger is still an unbroken chain that never goes below zero.
    let (dates, ledger): (Vec<i64>, Vec<(i64, i64)>) = app.sql(|c| {
        let dates = c
            .prepare("SELECT created_at FROM charges WHERE company_id = ?1 ORDER BY id")?
            .query_map([&grocers], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let ledger = c
            .prepare(
                "SELECT amount, balance_after FROM token_transactions WHERE company_id = ?1
                 ORDER BY id",
            )?
            .query_map([&grocers], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        Ok((dates, ledger))
    });
    assert!(dates.windows(2).all(|w| w[0] <= w[1]), "{dates:?}");
    let mut balance = 0;
    for (amount, after) in &ledger {
        balance += amount;
        assert_eq!(*after, balance);
        assert!(balance >= 0);
    }

    // Over the month boundary: April is billed, once, right after March.
    let april = signage::time::parse_rfc3339("2026-04-01T00:00:00Z").unwrap();
    for seconds in [april + 86_400 - FROZEN_AT, 3_600] {
        app.post("/_sandbox/clock/advance")
            .key("sandbox-operator")
            .json(&json!({"seconds": seconds}))
            .send()
            .await
            .ok();
        assert_months_tile(&app, april + 86_400 + 3_600, 4);
    }
    let april_invoice = invoices_of(&app, &grocers).pop().unwrap();
    let inv = app
        .get(&format!("/invoices/{}", april_invoice.0))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(inv["period_start"], "2026-04-01T00:00:00Z");
    assert_eq!(inv["period_end"], "2026-05-01T00:00:00Z");
    assert_eq!(inv["due_at"], "2026-05-15T00:00:00Z");
    assert_eq!(inv["status"], "open");
    assert_eq!(
        inv["number"], "NWG-2026-0004",
        "numbered on from the fixtures' March"
    );
}
