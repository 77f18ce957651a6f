//! Tests: billing (invoices with lines and totals, recent charges) and the plan catalogue.

use crate::helpers::{company_id, TestApp};
use crate::list_contract::{assert_list_contract, in_companies};
use std::collections::HashSet;

const NWG_OPEN_INVOICE: &str = "inv_0m5d4rusocljz0g8w1e9"; // NWG-2026-0009
const HVH_OPEN_INVOICE: &str = "inv_0m5d4rusui3cvkpflfhu"; // HVH-2026-0009
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
    let app = TestApp::spawn().await;
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
    assert_eq!(nwg["number"], "NWG-2026-0009");
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
    let app = TestApp::spawn().await;
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
    assert_eq!(hv["lines"].as_array().unwrap().len(), 3);
    assert_eq!(hv["net_cents"], 49900 + 3900 + 810);
}

#[tokio::test]
async fn charges_are_recent_first_and_filtered() {
    let app = TestApp::spawn().await;
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
