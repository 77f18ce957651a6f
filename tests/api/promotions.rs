//! Tests: promotions (CRUD, derived state, activation against the token ledger). QR codes: qr_*.rs.

use crate::helpers::{company_id, TestApp};
use crate::list_contract::{assert_list_contract, in_companies};
use serde_json::{json, Value};
use std::collections::HashSet;

const SUMMER_FRUIT: &str = "promo_0m5d4rupd28t6txsgbdb"; // Grocers, active, cost 150, 3 QR codes
const SPRING_BAKERY: &str = "promo_0m5d4rupfgq72e3l97yg"; // Grocers, expired
const SUN_CARE: &str = "promo_0m5d4ruph555gp9x0h0h"; // Pharmacy, inactive, cost 120
const ROOFTOP: &str = "promo_0m5d4rupj321exmngzev"; // Harborview Hotels

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn ts(offset: i64) -> String {
    signage::time::rfc3339(now() + offset)
}

fn count(app: &TestApp, sql: &'static str) -> i64 {
    app.sql(|conn| conn.query_row(sql, [], |r| r.get(0)))
}

fn balance(app: &TestApp, company: &str) -> i64 {
    let c = company.to_string();
    app.sql(move |conn| {
        conn.query_row(
            "SELECT balance FROM token_balances WHERE company_id = ?1",
            [&c],
            |r| r.get(0),
        )
    })
}

fn new_promo(company: &str, cost: i64) -> Value {
    json!({
        "company_id": company,
        "name": "Autumn Apples",
        "description": "Two kilos for the price of one.",
        "landing_url": "https://www.northwind-grocers.example/promotions/autumn-apples",
        "discount_percent": 50,
        "activation_cost_tokens": cost,
        "starts_at": ts(-3600),
        "ends_at": ts(7 * 86_400),
    })
}

async fn create(app: &TestApp, key: &str, body: &Value) -> Value {
    let r = app.post("/promotions").key(key).json(body).send().await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

#[tokio::test]
async fn list_filters_and_pages() {
    let app = TestApp::spawn().await;
    let all = app
        .collect_all("/promotions", "northwind-readonly", 100)
        .await;
    assert_eq!(all.len(), 6);
    let nw: HashSet<String> = [
        company_id("Northwind Grocers"),
        company_id("Northwind Pharmacy"),
    ]
    .into();
    assert!(all
        .iter()
        .all(|p| nw.contains(p["company_id"].as_str().unwrap())));
    let state_of = |name: &str| -> String {
        all.iter().find(|p| p["name"] == name).unwrap()["state"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(state_of("Fresh Fruit Week"), "active");
    assert_eq!(state_of("Weekend BBQ Bundle"), "scheduled");
    assert_eq!(state_of("Bakery Days"), "expired");
    assert_eq!(state_of("Vitamin D Offer"), "expired");
    assert_eq!(state_of("Sun Care 2-for-1"), "inactive");
    assert_eq!(state_of("Walk-in Flu Shots"), "active");

    // Walking one by one yields the same list: no loss, no duplicates, newest first.
    let walked = assert_list_contract(
        &app,
        "/promotions",
        "northwind-readonly",
        1,
        in_companies(&["Northwind Grocers", "Northwind Pharmacy"]),
    )
    .await;
    assert_eq!(walked, all);

    let names = |items: &[Value]| -> HashSet<String> {
        items
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    let set = |v: &[&str]| -> HashSet<String> { v.iter().map(|s| s.to_string()).collect() };
    for (query, expected) in [
        (
            "state=active",
            set(&["Fresh Fruit Week", "Walk-in Flu Shots"]),
        ),
        ("state=scheduled", set(&["Weekend BBQ Bundle"])),
        ("state=expired", set(&["Bakery Days", "Vitamin D Offer"])),
        ("state=inactive", set(&["Sun Care 2-for-1"])),
        (
            "active=true",
            set(&["Fresh Fruit Week", "Walk-in Flu Shots"]),
        ),
        (
            "active=false",
            set(&[
                "Weekend BBQ Bundle",
                "Bakery Days",
                "Vitamin D Offer",
                "Sun Care 2-for-1",
            ]),
        ),
        (
            "active=false&state=expired",
            set(&["Bakery Days", "Vitamin D Offer"]),
        ),
        ("active=true&state=expired", set(&[])),
    ] {
        let got = app
            .collect_all(&format!("/promotions?{query}"), "northwind-readonly", 1)
            .await;
        assert_eq!(names(&got), expected, "{query}");
    }
    let grocers = company_id("Northwind Grocers");
    let mine = app
        .collect_all(
            &format!("/promotions?company_id={grocers}"),
            "northwind-readonly",
            2,
        )
        .await;
    assert_eq!(mine.len(), 3);
    // Company-scoped key: only its company, and the other company is not found.
    let scoped = app
        .collect_all("/promotions", "northwind-pharmacy-read", 10)
        .await;
    assert_eq!(scoped.len(), 3);
    app.get(&format!("/promotions?company_id={grocers}"))
        .key("northwind-pharmacy-read")
        .send()
        .await
        .problem(404);
    app.get(&format!(
        "/promotions?company_id={}",
        company_id("Harborview Hotels")
    ))
    .key("northwind-readonly")
    .send()
    .await
    .problem(404);
    for bad in [
        "state=running",
        "active=yes",
        "company_id=acme",
        "limit=101",
        "sort=name",
    ] {
        let p = app
            .get(&format!("/promotions?{bad}"))
            .key("northwind-readonly")
            .send()
            .await
            .problem(422);
        assert_eq!(
            p["errors"][0]["field"],
            bad.split('=').next().unwrap(),
            "{bad}"
        );
    }
}

#[tokio::test]
async fn get_has_state_count_and_etag() {
    let app = TestApp::spawn().await;
    let r = app
        .get(&format!("/promotions/{SUMMER_FRUIT}"))
        .key("northwind-readonly")
        .send()
        .await;
    let p = r.ok();
    assert_eq!(r.header("etag"), Some("\"v1\""));
    assert_eq!(p["object"], "promotion");
    assert_eq!(p["state"], "active");
    assert_eq!(p["active"], true);
    assert_eq!(p["qr_code_count"], 3);
    assert_eq!(p["activation_cost_tokens"], 150);
    assert_eq!(p["discount_percent"], 20);
    assert!(p["activated_at"].is_string());
    // Another account's promotion, another company for a scoped key, garbage ids: all 404.
    app.get(&format!("/promotions/{ROOFTOP}"))
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    app.get(&format!("/promotions/{SUMMER_FRUIT}"))
        .key("northwind-pharmacy-read")
        .send()
        .await
        .problem(404);
    app.get("/promotions/promo_nope")
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    app.get("/promotions/dev_123")
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
}

#[tokio::test]
async fn create_validates_and_starts_inactive() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let before = count(&app, "SELECT count(*) FROM promotions");

    let bad = |patch: Value| {
        let mut b = new_promo(&grocers, 10);
        for (k, v) in patch.as_object().unwrap() {
            if v.is_null() && k != "discount_percent" {
                b.as_object_mut().unwrap().remove(k);
            } else {
                b[k] = v.clone();
            }
        }
        b
    };
    for (body, field) in [
        (bad(json!({"active": true})), "/active"),
        (
            bad(json!({"activation_cost_tokens": "10"})),
            "/activation_cost_tokens",
        ),
        (
            bad(json!({"activation_cost_tokens": 100_001})),
            "/activation_cost_tokens",
        ),
        (
            bad(json!({"activation_cost_tokens": -1})),
            "/activation_cost_tokens",
        ),
        (bad(json!({"discount_percent": 0})), "/discount_percent"),
        (bad(json!({"discount_percent": 101})), "/discount_percent"),
        (bad(json!({"name": "   "})), "/name"),
        (bad(json!({"name": "x".repeat(101)})), "/name"),
        (bad(json!({"name": "tab\there"})), "/name"),
        (
            bad(json!({"landing_url": "ftp://example.com"})),
            "/landing_url",
        ),
        (
            bad(json!({"landing_url": "https://exa mple.com"})),
            "/landing_url",
        ),
        (bad(json!({"starts_at": "tomorrow"})), "/starts_at"),
        (bad(json!({"ends_at": ts(-7200)})), "/ends_at"),
        (bad(json!({"company_id": "acme"})), "/company_id"),
        (bad(json!({"name": null})), ""),
    ] {
        let p = app
            .post("/promotions")
            .key("northwind-readwrite")
            .json(&body)
            .send()
            .await
            .problem(422);
        assert_eq!(p["errors"][0]["field"], field, "{body}");
    }
    app.post("/promotions")
        .key("northwind-readwrite")
        .raw("application/json", "{\"name\": \"x\",}")
        .send()
        .await
        .problem(400);
    // A company of another account, or outside the key's scope, is not found.
    app.post("/promotions")
        .key("northwind-readwrite")
        .json(&new_promo(&company_id("Harborview Hotels"), 10))
        .send()
        .await
        .problem(404);
    app.post("/promotions")
        .key("northwind-grocers-write")
        .json(&new_promo(&company_id("Northwind Pharmacy"), 10))
        .send()
        .await
        .problem(404);
    // Keys without promotions:write.
    for key in ["northwind-readonly", "northwind-ads-editor"] {
        let p = app
            .post("/promotions")
            .key(key)
            .json(&new_promo(&grocers, 10))
            .send()
            .await
            .problem(403);
        assert_eq!(p["missing_scope"], "promotions:write");
    }
    assert_eq!(count(&app, "SELECT count(*) FROM promotions"), before);

    let mut body = new_promo(&grocers, 25);
    body["discount_percent"] = Value::Null;
    let p = create(&app, "northwind-grocers-write", &body).await;
    assert_eq!(p["object"], "promotion");
    assert_eq!(p["active"], false);
    assert_eq!(p["state"], "inactive");
    assert_eq!(p["discount_percent"], Value::Null);
    assert_eq!(p["qr_code_count"], 0);
    assert_eq!(p["activated_at"], Value::Null);
    assert_eq!(p["starts_at"], body["starts_at"]);
    let got = app
        .get(&format!("/promotions/{}", p["id"].as_str().unwrap()))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(got, p);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM events WHERE type = 'promotion.created'"
        ),
        1
    );
}

#[tokio::test]
async fn update_honours_if_match_and_refuses_protected_fields() {
    let app = TestApp::spawn().await;
    let path = format!("/promotions/{SUN_CARE}");
    let r = app
        .patch(&path)
        .key("northwind-readwrite")
        .header("if-match", "\"v1\"")
        .json(&json!({"name": "Sun Care 3-for-2", "discount_percent": null}))
        .send()
        .await;
    let p = r.ok();
    assert_eq!(r.header("etag"), Some("\"v2\""));
    assert_eq!(p["name"], "Sun Care 3-for-2");
    assert_eq!(p["discount_percent"], Value::Null);
    // The old ETag no longer matches: 412, nothing written.
    let p412 = app
        .patch(&path)
        .key("northwind-readwrite")
        .header("if-match", "\"v1\"")
        .json(&json!({"name": "Stale"}))
        .send()
        .await;
    let body = p412.problem(412);
    assert_eq!(body["current_etag"], "\"v2\"");
    assert_eq!(p412.header("etag"), Some("\"v2\""));
    for (body, field) in [
        (json!({"active": true}), "/active"),
        (
            json!({"company_id": company_id("Northwind Grocers")}),
            "/company_id",
        ),
        (json!({}), ""),
        (json!({"name": null}), "/name"),
        (
            json!({"activation_cost_tokens": 100_001}),
            "/activation_cost_tokens",
        ),
        (
            json!({"starts_at": "2001-01-01T00:00:00Z", "ends_at": "2000-01-01T00:00:00Z"}),
            "/ends_at",
        ),
        (json!({"landing_url": 5}), "/landing_url"),
    ] {
        let p = app
            .patch(&path)
            .key("northwind-readwrite")
            .json(&body)
            .send()
            .await
            .problem(422);
        assert_eq!(p["errors"][0]["field"], field, "{body}");
    }
    // An end before the stored start: the body is fine, the combination with the stored state is not.
    let p = app
        .patch(&path)
        .key("northwind-readwrite")
        .json(&json!({"ends_at": "2000-01-01T00:00:00Z"}))
        .send()
        .await
        .problem(409);
    assert!(p["detail"].as_str().unwrap().contains("starts_at"));
    app.patch(&path)
        .key("northwind-readwrite")
        .raw("application/json", "nope")
        .send()
        .await
        .problem(400);
    app.patch(&path)
        .key("northwind-readonly")
        .json(&json!({"name": "Nope"}))
        .send()
        .await
        .problem(403);
    app.patch(&format!("/promotions/{ROOFTOP}"))
        .key("northwind-readwrite")
        .json(&json!({"name": "Mine now"}))
        .send()
        .await
        .problem(404);
    let now = app.get(&path).key("northwind-readonly").send().await.ok();
    assert_eq!(now["name"], "Sun Care 3-for-2");
    let rooftop: String = app.sql(|c| {
        c.query_row(
            "SELECT name FROM promotions WHERE id = ?1",
            [ROOFTOP],
            |r| r.get(0),
        )
    });
    assert_eq!(rooftop, "Rooftop Happy Hour");
    // Moving the window: ends_at must stay after the (possibly unchanged) starts_at.
    let moved = app
        .patch(&path)
        .key("northwind-readwrite")
        .json(&json!({"starts_at": ts(86_400), "ends_at": ts(2 * 86_400)}))
        .send()
        .await
        .ok();
    assert_eq!(moved["state"], "inactive");
}

#[tokio::test]
async fn activation_spends_tokens_once_and_deactivation_never_refunds() {
    let app = TestApp::spawn().await;
    let pharmacy = company_id("Northwind Pharmacy");
    assert_eq!(balance(&app, &pharmacy), 1520);
    let path = format!("/promotions/{SUN_CARE}");

    // Stale If-Match: nothing is charged.
    app.post(&format!("{path}/activate"))
        .key("northwind-readwrite")
        .header("if-match", "\"v9\"")
        .send()
        .await
        .problem(412);
    // Read-only: 403, nothing charged.
    app.post(&format!("{path}/activate"))
        .key("northwind-readonly")
        .send()
        .await
        .problem(403);
    assert_eq!(balance(&app, &pharmacy), 1520);

    let r = app
        .post(&format!("{path}/activate"))
        .key("northwind-readwrite")
        .header("if-match", "\"v1\"")
        .send()
        .await;
    let p = r.ok();
    assert_eq!(r.header("etag"), Some("\"v2\""));
    assert_eq!(p["active"], true);
    assert_eq!(p["state"], "active");
    assert!(p["activated_at"].is_string());
    assert_eq!(balance(&app, &pharmacy), 1400);
    let spends = app
        .collect_all(
            &format!("/tokens/transactions?company_id={pharmacy}&kind=spend"),
            "northwind-readonly",
            10,
        )
        .await;
    assert_eq!(spends[0]["amount"], -120);
    assert_eq!(spends[0]["balance_after"], 1400);
    assert_eq!(spends[0]["promotion_id"], SUN_CARE);

    // Already active: 200, same version, no second charge.
    let r = app
        .post(&format!("{path}/activate"))
        .key("northwind-readwrite")
        .send()
        .await;
    assert_eq!(r.ok()["active"], true);
    assert_eq!(r.header("etag"), Some("\"v2\""));
    assert_eq!(balance(&app, &pharmacy), 1400);

    let r = app
        .post(&format!("{path}/deactivate"))
        .key("northwind-readwrite")
        .send()
        .await;
    let p = r.ok();
    assert_eq!(p["active"], false);
    assert_eq!(p["state"], "inactive");
    assert!(p["deactivated_at"].is_string());
    assert_eq!(balance(&app, &pharmacy), 1400, "no refund");
    // Deactivating again is a no-op; re-activating charges again.
    app.post(&format!("{path}/deactivate"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    app.post(&format!("{path}/activate"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(balance(&app, &pharmacy), 1280);
    let events: Vec<String> = app.sql(|c| {
        let mut s = c.prepare(
            "SELECT type FROM events WHERE resource_id = ?1 OR type = 'tokens.spent' ORDER BY rowid",
        )?;
        let rows = s.query_map([SUN_CARE], |r| r.get(0))?;
        rows.collect()
    });
    assert_eq!(
        events,
        [
            "tokens.spent",
            "promotion.activated",
            "promotion.started",
            "promotion.deactivated",
            "tokens.spent",
            "promotion.activated",
            "promotion.started"
        ]
    );

    // Expired: 409, and nothing charged.
    let p = app
        .post(&format!("/promotions/{SPRING_BAKERY}/activate"))
        .key("northwind-readwrite")
        .send()
        .await
        .problem(409);
    assert!(p["detail"].as_str().unwrap().contains("ended"));
    // Another account's promotion: 404.
    app.post(&format!("/promotions/{ROOFTOP}/activate"))
        .key("northwind-readwrite")
        .send()
        .await
        .problem(404);
    app.post(&format!("/promotions/{ROOFTOP}/deactivate"))
        .key("northwind-readwrite")
        .send()
        .await
        .problem(404);
    assert_eq!(balance(&app, &pharmacy), 1280);
}

#[tokio::test]
async fn activation_without_enough_tokens_is_402_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let dear = create(&app, "northwind-readwrite", &new_promo(&grocers, 100_000)).await;
    let id = dear["id"].as_str().unwrap();
    let txs = count(&app, "SELECT count(*) FROM token_transactions");
    let p = app
        .post(&format!("/promotions/{id}/activate"))
        .key("northwind-readwrite")
        .send()
        .await
        .problem(402);
    assert_eq!(p["balance"], 1550);
    assert_eq!(p["required"], 100_000);
    assert_eq!(p["type"], "/problems/insufficient-tokens");
    let after = app
        .get(&format!("/promotions/{id}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(after, dear);
    assert_eq!(balance(&app, &grocers), 1550);
    assert_eq!(count(&app, "SELECT count(*) FROM token_transactions"), txs);

    // A free promotion activates without touching the ledger.
    let free = create(&app, "northwind-readwrite", &new_promo(&grocers, 0)).await;
    let on = app
        .post(&format!(
            "/promotions/{}/activate",
            free["id"].as_str().unwrap()
        ))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(on["state"], "active");
    assert_eq!(count(&app, "SELECT count(*) FROM token_transactions"), txs);
}
