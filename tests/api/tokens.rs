//! Tests: tokens (packs, purchases, balance, the ledger, and its exactness under concurrency).

use crate::helpers::{company_id, TestApp};
use crate::list_contract::{assert_list_contract, in_companies};
use serde_json::{json, Value};
use std::sync::Arc;

const GROWTH_PACK: &str = "tpk_0m5d4rusktxlxvdouqvv";
const STARTER_PACK: &str = "tpk_0m5d4rusj5xe4we40hu5";

fn ledger_sum(app: &TestApp, company: &str) -> i64 {
    let c = company.to_string();
    app.sql(move |conn| {
        conn.query_row(
            "SELECT coalesce(sum(amount), 0) FROM token_transactions WHERE company_id = ?1",
            [&c],
            |r| r.get(0),
        )
    })
}

fn cached_balance(app: &TestApp, company: &str) -> i64 {
    let c = company.to_string();
    app.sql(move |conn| {
        conn.query_row(
            "SELECT balance FROM token_balances WHERE company_id = ?1",
            [&c],
            |r| r.get(0),
        )
    })
}

fn count(app: &TestApp, sql: &'static str) -> i64 {
    app.sql(|conn| conn.query_row(sql, [], |r| r.get(0)))
}

#[tokio::test]
async fn packs_and_balances() {
    let app = TestApp::spawn().await;
    let packs = app
        .get("/token-packs")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(packs["object"], "list");
    let data = packs["data"].as_array().unwrap();
    assert_eq!(data.len(), 3);
    assert_eq!(data[0]["object"], "token_pack");
    assert_eq!(data[0]["tokens"], 2000);
    assert_eq!(packs["has_more"], false);

    let grocers = company_id("Northwind Grocers");
    let b = app
        .get(&format!("/tokens/balance?company_id={grocers}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(
        b,
        json!({"object": "token_balance", "company_id": grocers, "balance": 1550, "updated_at": b["updated_at"]})
    );
    // Fixture ledgers already match their balances.
    for (_, name, _) in &crate::helpers::demo().companies {
        let c = company_id(name);
        assert_eq!(cached_balance(&app, &c), ledger_sum(&app, &c), "{name}");
    }

    // `company_id` is required, even for a key that sees a single company.
    for k in ["northwind-readonly", "harborview-hotels-billing"] {
        let p = app.get("/tokens/balance").key(k).send().await.problem(422);
        assert_eq!(p["errors"][0]["field"], "company_id");
        assert_eq!(p["errors"][0]["code"], "required");
    }
    let hotels = company_id("Harborview Hotels");
    let b = app
        .get(&format!("/tokens/balance?company_id={hotels}"))
        .key("harborview-hotels-billing")
        .send()
        .await
        .ok();
    assert_eq!(b["company_id"], json!(hotels));
    assert_eq!(b["balance"], 5100);
    // Another account's company is not found; a malformed id is a 422.
    app.get(&format!(
        "/tokens/balance?company_id={}",
        company_id("Bluefin Cafés")
    ))
    .key("northwind-readonly")
    .send()
    .await
    .problem(404);
    app.get("/tokens/balance?company_id=nope")
        .key("northwind-readonly")
        .send()
        .await
        .problem(422);
    app.get("/tokens/balance?company=x")
        .key("northwind-readonly")
        .send()
        .await
        .problem(422);
}

#[tokio::test]
async fn purchase_credits_balance_and_bills_open_invoice() {
    // Frozen: which month's invoice holds a fixture charge depends on the date.
    let app = crate::sandbox_clock::frozen().await;
    let grocers = company_id("Northwind Grocers");
    let events_before = count(
        &app,
        "SELECT count(*) FROM events WHERE type = 'tokens.purchased'",
    );
    let r = app
        .post(&format!("/token-packs/{GROWTH_PACK}/purchase"))
        .key("northwind-grocers-write")
        .json(&json!({"company_id": grocers}))
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let body = r.json();
    assert_eq!(body["object"], "token_purchase");
    let t = &body["transaction"];
    assert_eq!(t["object"], "token_transaction");
    assert_eq!(t["kind"], "purchase");
    assert_eq!(t["amount"], 500);
    assert_eq!(t["balance_after"], 2050);
    assert_eq!(t["token_pack_id"], GROWTH_PACK);
    assert_eq!(t["charge_id"], body["charge"]["id"]);
    let ch = &body["charge"];
    assert_eq!(ch["kind"], "token_pack");
    assert_eq!(ch["amount_cents"], 3900);
    assert_eq!(ch["currency"], "EUR");
    assert_eq!(ch["company_id"], grocers);
    assert_eq!(body["balance"]["balance"], 2050);
    assert_eq!(body["balance"]["company_id"], grocers);

    // The charge landed on the company's open invoice, whose total grew by the price.
    let invoice = app
        .get(&format!("/invoices/{}", ch["invoice_id"].as_str().unwrap()))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(invoice["status"], "open");
    assert_eq!(invoice["number"], "NWG-2026-0003");
    assert_eq!(invoice["net_cents"], 14900 + 540 + 3900);
    assert!(invoice["lines"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l["id"] == ch["id"]));

    let b = app
        .get(&format!("/tokens/balance?company_id={grocers}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(b["balance"], 2050);
    assert_eq!(ledger_sum(&app, &grocers), 2050);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM events WHERE type = 'tokens.purchased'"
        ),
        events_before + 1
    );
}

#[tokio::test]
async fn purchase_opens_an_invoice_when_none_is_open() {
    let app = TestApp::spawn().await;
    let bluefin = company_id("Bluefin Cafés");
    let c = bluefin.clone();
    app.app
        .db
        .write(
            &signage::db::WriteIntent::sandbox(),
            move |tx| -> Result<(), signage::db::DbError> {
                tx.execute(
                    "UPDATE invoices SET status = 'paid' WHERE company_id = ?1",
                    [&c],
                )?;
                Ok(())
            },
        )
        .unwrap();
    let body = app
        .post(&format!("/token-packs/{STARTER_PACK}/purchase"))
        .key("harborview-readwrite")
        .json(&json!({"company_id": bluefin}))
        .send()
        .await
        .ok();
    let invoice_id = body["charge"]["invoice_id"].as_str().unwrap().to_string();
    let inv = app
        .get(&format!("/invoices/{invoice_id}"))
        .key("harborview-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(inv["status"], "open");
    assert_eq!(inv["net_cents"], 900);
    assert_eq!(inv["lines"].as_array().unwrap().len(), 1);
    let number = inv["number"].as_str().unwrap();
    assert!(number.starts_with("BFC-"), "{number}");
    let year = &inv["period_start"].as_str().unwrap()[..4];
    assert!(number.contains(&format!("-{year}-")), "{number}");
    assert!(inv["period_start"]
        .as_str()
        .unwrap()
        .ends_with("-01T00:00:00Z"));
    // A second purchase reuses the invoice it opened.
    let again = app
        .post(&format!("/token-packs/{STARTER_PACK}/purchase"))
        .key("harborview-readwrite")
        .json(&json!({"company_id": bluefin}))
        .send()
        .await
        .ok();
    assert_eq!(again["charge"]["invoice_id"], invoice_id.as_str());
    assert_eq!(again["balance"]["balance"], 500);
    let numbers: i64 = app.sql(|conn| {
        conn.query_row(
            "SELECT count(*) - count(DISTINCT number) FROM invoices",
            [],
            |r| r.get(0),
        )
    });
    assert_eq!(numbers, 0);
}

#[tokio::test]
async fn purchase_idempotency_key_replays_without_double_credit() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let path = format!("/token-packs/{STARTER_PACK}/purchase");
    let body = json!({"company_id": grocers});
    let first = app
        .post(&path)
        .key("northwind-readwrite")
        .header("idempotency-key", "buy-starter-1")
        .json(&body)
        .send()
        .await;
    assert_eq!(first.status, 201);
    let second = app
        .post(&path)
        .key("northwind-readwrite")
        .header("idempotency-key", "buy-starter-1")
        .json(&body)
        .send()
        .await;
    assert_eq!(second.status, 201);
    assert_eq!(second.header("idempotent-replayed"), Some("true"));
    assert_eq!(first.json(), second.json());
    assert_eq!(cached_balance(&app, &grocers), 1650);
    assert_eq!(ledger_sum(&app, &grocers), 1650);
    let purchases: i64 = count(
        &app,
        "SELECT count(*) FROM token_transactions WHERE kind = 'purchase' AND created_at > strftime('%s','now') - 60",
    );
    assert_eq!(purchases, 1);
    // The same key with another body is refused, and buys nothing.
    app.post(&path)
        .key("northwind-readwrite")
        .header("idempotency-key", "buy-starter-1")
        .json(&json!({"company_id": company_id("Northwind Pharmacy")}))
        .send()
        .await
        .problem(409);
    assert_eq!(
        cached_balance(&app, &company_id("Northwind Pharmacy")),
        1520
    );
}

#[tokio::test]
async fn purchase_validation_and_permissions() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let path = format!("/token-packs/{GROWTH_PACK}/purchase");
    let before = count(&app, "SELECT count(*) FROM token_transactions");
    let charges_before = count(&app, "SELECT count(*) FROM charges");

    let p = app
        .post(&path)
        .key("northwind-readwrite")
        .json(&json!({"company_id": grocers, "tokens": 5}))
        .send()
        .await
        .problem(422);
    assert_eq!(p["errors"][0]["field"], "/tokens");
    let p = app
        .post(&path)
        .key("northwind-readwrite")
        .json(&json!({"company_id": 42}))
        .send()
        .await
        .problem(422);
    assert_eq!(p["errors"][0]["field"], "/company_id");
    app.post(&path)
        .key("northwind-readwrite")
        .json(&json!({}))
        .send()
        .await
        .problem(422);
    app.post(&path)
        .key("northwind-readwrite")
        .json(&json!({"company_id": "cmp_"}))
        .send()
        .await
        .problem(422);
    app.post(&path)
        .key("northwind-readwrite")
        .raw("application/json", "{\"company_id\": ")
        .send()
        .await
        .problem(400);
    app.post(&path)
        .key("northwind-readwrite")
        .raw("text/plain", "company")
        .send()
        .await
        .problem(415);
    // Another account's company, a company outside the key's scope, an unknown pack: 404.
    app.post(&path)
        .key("northwind-readwrite")
        .json(&json!({"company_id": company_id("Harborview Hotels")}))
        .send()
        .await
        .problem(404);
    app.post(&path)
        .key("northwind-grocers-write")
        .json(&json!({"company_id": company_id("Northwind Pharmacy")}))
        .send()
        .await
        .problem(404);
    app.post("/token-packs/tpk_doesnotexist/purchase")
        .key("northwind-readwrite")
        .json(&json!({"company_id": grocers}))
        .send()
        .await
        .problem(404);
    // Read-only credentials: 403 naming the scope.
    let p = app
        .post(&path)
        .key("northwind-readonly")
        .json(&json!({"company_id": grocers}))
        .send()
        .await
        .problem(403);
    assert_eq!(p["missing_scope"], "tokens:write");
    app.post(&path)
        .key("harborview-hotels-billing")
        .json(&json!({"company_id": company_id("Harborview Hotels")}))
        .send()
        .await
        .problem(403);

    assert_eq!(
        count(&app, "SELECT count(*) FROM token_transactions"),
        before
    );
    assert_eq!(count(&app, "SELECT count(*) FROM charges"), charges_before);
    assert_eq!(cached_balance(&app, &grocers), 1550);
}

#[tokio::test]
async fn transactions_are_paged_newest_first_and_filtered() {
    let app = TestApp::spawn().await;
    // Fixture transactions of the Northwind account: 7 + 5.
    let all = app
        .collect_all("/tokens/transactions", "northwind-readonly", 100)
        .await;
    assert_eq!(all.len(), 12);
    for limit in [1, 5] {
        let paged = assert_list_contract(
            &app,
            "/tokens/transactions",
            "northwind-readonly",
            limit,
            in_companies(&["Northwind Grocers", "Northwind Pharmacy"]),
        )
        .await;
        assert_eq!(paged, all, "limit {limit}");
    }

    let grocers = company_id("Northwind Grocers");
    let mine = app
        .collect_all(
            &format!("/tokens/transactions?company_id={grocers}"),
            "northwind-readonly",
            2,
        )
        .await;
    assert_eq!(mine.len(), 7);
    assert!(mine.iter().all(|t| t["company_id"] == grocers.as_str()));
    assert_eq!(mine[0]["balance_after"], 1550);
    let spends = app
        .collect_all(
            &format!("/tokens/transactions?company_id={grocers}&kind=spend"),
            "northwind-readonly",
            1,
        )
        .await;
    assert_eq!(spends.len(), 3);
    assert!(spends
        .iter()
        .all(|t| t["kind"] == "spend" && t["amount"].as_i64().unwrap() < 0));
    assert!(spends.iter().all(|t| t["promotion_id"].is_string()));

    // Company-scoped key sees only its company; other accounts' ids are 404.
    let hv = app
        .collect_all("/tokens/transactions", "harborview-hotels-billing", 3)
        .await;
    assert_eq!(hv.len(), 8);
    app.get(&format!("/tokens/transactions?company_id={grocers}"))
        .key("harborview-hotels-billing")
        .send()
        .await
        .problem(404);
    app.get("/tokens/transactions?kind=gift")
        .key("northwind-readonly")
        .send()
        .await
        .problem(422);
    app.get("/tokens/transactions?limit=0")
        .key("northwind-readonly")
        .send()
        .await
        .problem(422);
    app.get("/tokens/transactions?cursor=!!")
        .key("northwind-readonly")
        .send()
        .await
        .problem(422);
    // A credential without tokens:read.
    app.get("/tokens/transactions")
        .key("northwind-ads-editor")
        .send()
        .await
        .problem(403);
}

#[tokio::test]
async fn a_long_ledger_pages_from_its_end() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let c = grocers.clone();
    // A million old rows (ids sort before every fixture row), written straight to the table.
    app.app
        .db
        .write(&signage::db::WriteIntent::sandbox(), move |tx| -> Result<(), signage::db::DbError> {
            tx.execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000)
                 INSERT INTO token_transactions (id, company_id, kind, amount, balance_after, description, created_at)
                 SELECT printf('ttx_0000%016d', i), ?1, 'grant', 1, 1, 'bulk', 0 FROM n",
                [&c],
            )?;
            Ok(())
        })
        .unwrap();
    let first = app
        .get(&format!(
            "/tokens/transactions?company_id={grocers}&limit=100"
        ))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let data = first["data"].as_array().unwrap();
    assert_eq!(data.len(), 100);
    assert_eq!(first["has_more"], true);
    assert_eq!(data[0]["balance_after"], 1550);
    assert_eq!(data[7]["id"], "ttx_00000000000001000000");
    let next = app
        .get(&format!(
            "/tokens/transactions?company_id={grocers}&limit=3&cursor={}",
            first["next_cursor"].as_str().unwrap()
        ))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let ids: Vec<&str> = next["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "ttx_00000000000000999907",
            "ttx_00000000000000999906",
            "ttx_00000000000000999905"
        ]
    );
    // The account-wide list merges the companies' ranges the same way.
    let all = app
        .get("/tokens/transactions?limit=20")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(all["data"].as_array().unwrap().len(), 20);
    assert_eq!(all["data"][12]["id"], "ttx_00000000000001000000");
}

/// 50 concurrent ledger writes on a company with few tokens: purchases, and activations and
/// deactivations of promotions with a cost. The balance must end equal to the sum of the ledger
/// and to what the successful requests imply, and never dip below zero on the way.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ledger_stays_exact_under_concurrent_purchases_and_spends() {
    let app = Arc::new(TestApp::spawn().await);
    let bluefin = company_id("Bluefin Cafés");
    const COST: i64 = 100;
    let start_balance = cached_balance(&app, &bluefin);
    assert_eq!(start_balance, 300);

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let fmt = |t: i64| -> String {
        // RFC 3339 via the crate's own formatter.
        signage::time::rfc3339(t)
    };
    let mut promos = Vec::new();
    for i in 0..30 {
        let p = app
            .post("/promotions")
            .key("harborview-readwrite")
            .json(&json!({
                "company_id": bluefin,
                "name": format!("Load promo {i}"),
                "description": "",
                "landing_url": "https://www.bluefin-cafes.example/load",
                "activation_cost_tokens": COST,
                "starts_at": fmt(now - 3600),
                "ends_at": fmt(now + 86_400),
            }))
            .send()
            .await
            .ok();
        promos.push(p["id"].as_str().unwrap().to_string());
    }

    enum Op {
        Buy,
        Activate(String),
        Deactivate(String),
    }
    let mut ops = Vec::new();
    for p in &promos[..10] {
        ops.push(Op::Buy);
        ops.push(Op::Activate(p.clone()));
        ops.push(Op::Deactivate(p.clone()));
    }
    for p in &promos[10..] {
        ops.push(Op::Activate(p.clone()));
    }
    assert_eq!(ops.len(), 50);

    let mut handles = Vec::new();
    for op in ops {
        let app = app.clone();
        let bluefin = bluefin.clone();
        handles.push(tokio::spawn(async move {
            let r = match &op {
                Op::Buy => {
                    app.post(&format!("/token-packs/{STARTER_PACK}/purchase"))
                        .key("harborview-readwrite")
                        .json(&json!({"company_id": bluefin}))
                        .send()
                        .await
                }
                Op::Activate(id) => {
                    app.post(&format!("/promotions/{id}/activate"))
                        .key("harborview-readwrite")
                        .send()
                        .await
                }
                Op::Deactivate(id) => {
                    app.post(&format!("/promotions/{id}/deactivate"))
                        .key("harborview-readwrite")
                        .send()
                        .await
                }
            };
            let kind = match op {
                Op::Buy => "buy",
                Op::Activate(_) => "activate",
                Op::Deactivate(_) => "deactivate",
            };
            (kind, r.status.as_u16(), r.text())
        }));
    }
    let mut bought = 0;
    let mut activated = 0;
    let mut refused = 0;
    for h in handles {
        let (kind, status, body) = h.await.unwrap();
        match (kind, status) {
            ("buy", 201) => bought += 1,
            ("activate", 200) => activated += 1,
            ("activate", 402) => {
                refused += 1;
                let b: Value = serde_json::from_str(&body).unwrap();
                assert_eq!(b["required"], COST);
                assert!(b["balance"].as_i64().unwrap() < COST);
            }
            ("deactivate", 200) => {}
            other => panic!("unexpected outcome {other:?}: {body}"),
        }
    }
    assert_eq!(bought, 10);
    assert!(refused > 0, "some activations must hit the empty balance");
    assert_eq!(activated + refused, 30);

    let expected = start_balance + 100 * bought - COST * activated;
    let balance = app
        .get(&format!("/tokens/balance?company_id={bluefin}"))
        .key("harborview-readwrite")
        .send()
        .await
        .ok()["balance"]
        .as_i64()
        .unwrap();
    assert_eq!(balance, expected);
    assert_eq!(ledger_sum(&app, &bluefin), expected);
    assert_eq!(cached_balance(&app, &bluefin), expected);

    // Replayed in commit order, the ledger is a running sum that never goes negative, and there
    // is exactly one spend per successful activation.
    let c = bluefin.clone();
    let rows: Vec<(String, i64, i64)> = app.sql(move |conn| {
        let mut stmt = conn.prepare(
            "SELECT kind, amount, balance_after FROM token_transactions WHERE company_id = ?1 ORDER BY rowid",
        )?;
        let rows = stmt.query_map([&c], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect()
    });
    let mut running = 0;
    for (kind, amount, after) in &rows {
        running += amount;
        assert_eq!(*after, running, "{kind} {amount}");
        assert!(*after >= 0);
    }
    assert_eq!(running, expected);
    let spends = rows
        .iter()
        .filter(|(k, a, _)| k == "spend" && *a == -COST)
        .count() as i64;
    assert_eq!(spends, activated);
    let purchases = rows.iter().filter(|(k, _, _)| k == "purchase").count() as i64;
    assert_eq!(purchases, 1 + bought, "one fixture purchase plus ours");

    // Every promotion that answered 200 to activation was charged exactly once.
    let charged: i64 = app.sql(|conn| {
        conn.query_row(
            "SELECT count(DISTINCT promotion_id) FROM token_transactions WHERE kind = 'spend' AND description LIKE 'Activated promotion ''Load promo %'",
            [],
            |r| r.get(0),
        )
    });
    assert_eq!(charged, activated);
}

/// Issue 8, item 9: the ledger listed by id (the API's only order) is the ledger in commit order.
/// 8 tasks × 10 concurrent writes (purchases, and activations of promotions that cost tokens), then
/// the whole ledger, read through the API newest first and reversed, must be an unbroken running
/// sum: each `balance_after` is the previous one plus its `amount`. Ids used to end in random
/// characters, so two writes in one millisecond could list in the wrong order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_ledger_listed_oldest_first_is_an_unbroken_running_sum() {
    let app = Arc::new(TestApp::spawn().await);
    let bluefin = company_id("Bluefin Cafés");
    let now = signage::time::wall_now();
    let mut promos = Vec::new();
    for i in 0..8 {
        let p = app
            .post("/promotions")
            .key("harborview-readwrite")
            .json(&json!({
                "company_id": bluefin,
                "name": format!("Order promo {i}"),
                "description": "",
                "landing_url": "https://www.bluefin-cafes.example/order",
                "activation_cost_tokens": 10,
                "starts_at": signage::time::rfc3339(now - 3600),
                "ends_at": signage::time::rfc3339(now + 86_400),
            }))
            .send()
            .await
            .ok();
        promos.push(p["id"].as_str().unwrap().to_string());
    }
    let mut tasks = Vec::new();
    for promo in promos {
        let app = app.clone();
        let bluefin = bluefin.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..10 {
                let r = match i % 3 {
                    0 => {
                        app.post(&format!("/token-packs/{STARTER_PACK}/purchase"))
                            .key("harborview-readwrite")
                            .json(&json!({"company_id": bluefin}))
                            .send()
                            .await
                    }
                    1 => {
                        app.post(&format!("/promotions/{promo}/activate"))
                            .key("harborview-readwrite")
                            .send()
                            .await
                    }
                    _ => {
                        app.post(&format!("/promotions/{promo}/deactivate"))
                            .key("harborview-readwrite")
                            .send()
                            .await
                    }
                };
                assert!(r.status.is_success(), "{}: {}", r.status, r.text());
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut ledger = app
        .collect_all(
            &format!("/tokens/transactions?company_id={bluefin}"),
            "harborview-readwrite",
            7,
        )
        .await;
    ledger.reverse();
    // 8 × 4 purchases and 8 × 3 activations, after the fixture rows.
    let ours = ledger
        .iter()
        .filter(|t| t["created_at"].as_str() >= Some(&signage::time::rfc3339(now - 5)[..]))
        .count();
    assert!(ours >= 56, "{ours} rows of ours");
    let mut running = 0;
    let mut breaks = Vec::new();
    for t in &ledger {
        running += t["amount"].as_i64().unwrap();
        if t["balance_after"].as_i64() != Some(running) {
            breaks.push(t["id"].as_str().unwrap().to_string());
            running = t["balance_after"].as_i64().unwrap();
        }
    }
    assert!(breaks.is_empty(), "the chain breaks at {breaks:?}");
    assert_eq!(running, cached_balance(&app, &bluefin));
}
