//! Issue 29 §4 and issue 31 §6: no outsider changes a verdict or a journal, and a company-scoped
//! admin's report covers its company only.
//!
//! The attacks are the ones that worked before: requests without a key carrying a victim's
//! `X-Service-Client-Id` (one turned an account `not_ready`), forged keys carrying a victim's key
//! id, thousands of them to empty the victim's journal, large bodies to grow the file. Bounded
//! here to a few hundred, on a journal ring made small so the same effect shows.

use crate::helpers::{company_id, key, TestApp};
use crate::readiness_client::*;
use serde_json::{json, Value};

/// The statuses of a report's checks, by id.
fn statuses(r: &Value) -> Vec<(String, String)> {
    r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

async fn admin_count(app: &TestApp) -> i64 {
    app.get("/requests?count=true")
        .key("northwind-admin")
        .send()
        .await
        .ok()["count"]
        .as_i64()
        .unwrap()
}

#[tokio::test]
async fn an_outsider_cannot_change_a_verdict_or_empty_a_journal() {
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(crate::sandbox_clock::FROZEN_AT));
        l.sandbox_simulate_fleet = Some(false);
        l.journal_max_entries = Some(40);
    })
    .await;
    // The victim's own, careful traffic: a walk to the end.
    app.collect_all("/devices", "northwind-readonly", 5).await;
    let before = report(&app).await;
    let victim_entries = admin_count(&app).await;
    assert!(victim_entries > 0);
    let victim = key("northwind-readonly");
    let forged_key = format!(
        "sgn_test_{}_{}",
        victim.key_id.trim_start_matches("key_"),
        "B".repeat(32)
    );
    let big = "x".repeat(60_000);
    for n in 0..300 {
        let mut req = app
            .post("/ads")
            .header("x-service-client-id", &victim.client_id)
            .json(&json!({"company_id": company_id("Northwind Grocers"), "name": big}));
        if n % 2 == 1 {
            req = req.header("x-api-key", &forged_key);
        }
        req.send().await.problem(401);
    }
    // Nothing changed for the victim: not its verdict, not one check, not its journal.
    let after = report(&app).await;
    assert_eq!(after["verdict"], before["verdict"]);
    assert_eq!(statuses(&after), statuses(&before));
    // The one entry more is its own first count.
    assert_eq!(admin_count(&app).await, victim_entries + 1);
    // Nobody's entries are small: nothing they sent is kept.
    let nobody = app
        .get("/_sandbox/requests?status=401&limit=100")
        .key(OP)
        .send()
        .await
        .ok();
    let nobody = nobody["data"].as_array().unwrap();
    assert!(!nobody.is_empty());
    for e in nobody {
        assert_eq!(e["account_id"], Value::Null, "{e}");
        assert_eq!(e["key_id"], Value::Null, "{e}");
        assert_eq!(e["body"], Value::Null);
        // Its credential was refused from its headers, so its body was never even read.
        assert_eq!(e["body_bytes"], 0, "{e}");
    }
    // The retired check is nowhere.
    assert!(statuses(&after)
        .iter()
        .all(|(id, _)| id != "authenticates_every_request"));
}

/// The journal file of a flood of large unauthenticated requests stays small: each entry is a
/// few dozen bytes, whatever it sent.
#[tokio::test]
async fn a_flood_of_large_unauthenticated_requests_keeps_the_journal_file_small() {
    let dir = std::env::temp_dir().join(format!("signage-flood-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("signage.db").to_str().unwrap().to_string();
    let app = TestApp::spawn_with(|l| l.database = Some(db.clone())).await;
    let big = "y".repeat(100_000);
    for _ in 0..200 {
        app.post("/ads")
            .header("x-service-client-id", &key("northwind-readonly").client_id)
            .json(&json!({"name": big}))
            .send()
            .await
            .problem(401);
    }
    // A read writes what is held.
    app.get("/_sandbox/requests?limit=1")
        .key(OP)
        .send()
        .await
        .ok();
    let size: u64 = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".requests"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    // 200 requests of 100 KB each: 20 MB sent, well under 1 MB kept (SQLite's pages included).
    assert!(size < 1_000_000, "{size} bytes");
    app.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A company-scoped admin reads its company's report: its company's keys' requests, webhooks and
/// drills only; a key of the account it may not manage is 404, as under `/api-keys`.
#[tokio::test]
async fn a_company_scoped_admins_report_covers_its_company_only() {
    let app = sandbox().await;
    let grocers = company_id("Northwind Grocers");
    let made = app
        .post("/api-keys")
        .key("northwind-admin")
        .header("idempotency-key", "grocers-admin")
        .json(
            &json!({"name": "Grocers admin", "scopes": ["admin"], "companyScope": grocers,
                      "client_id": key("northwind-admin").client_id}),
        )
        .send()
        .await;
    let made = made.ok();
    let raw = made["rawKey"].as_str().unwrap().to_string();
    let client = key("northwind-admin").client_id;
    let as_grocers_admin = |path: String| {
        let app = &app;
        let (raw, client) = (raw.clone(), client.clone());
        async move {
            app.get(&path)
                .header("x-api-key", &raw)
                .header("x-service-client-id", &client)
                .send()
                .await
        }
    };
    // An account-wide key's careless traffic, and a Grocers key's careful walk.
    let careless = app
        .get("/ads?limit=2")
        .key("northwind-readwrite")
        .send()
        .await;
    app.get("/ads?limit=100")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    app.collect_all("/ads", "northwind-grocers-write", 5).await;
    // A Pharmacy webhook, drilled and failing.
    let careless_rx =
        crate::readiness_receiver::Receiver::with(crate::readiness_receiver::Policy::Careless)
            .await;
    let hook = app
        .post("/webhooks")
        .key("northwind-admin")
        .json(&json!({"company_id": company_id("Northwind Pharmacy"),
            "url": format!("http://127.0.0.1:{}/hook", careless_rx.port), "event_types": ["webhook.test"]}))
        .send()
        .await
        .ok();
    let pharmacy_drill =
        crate::readiness::drill(&app, hook["id"].as_str().unwrap(), "bad_signature").await;
    let account = report(&app).await;
    assert_eq!(status(&account, "pagination_walked"), "fail");
    assert_eq!(status(&account, "webhook_signatures_verified"), "fail");

    let r = as_grocers_admin("/readiness".into()).await.ok();
    assert_eq!(r["company_id"], grocers.as_str());
    assert_eq!(status(&r, "pagination_walked"), "pass", "{r}");
    assert_ne!(status(&r, "webhook_signatures_verified"), "fail", "{r}");
    let every_id: Vec<String> = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["evidence"].as_array().unwrap().clone())
        .map(|e| e.as_str().unwrap().to_string())
        .collect();
    assert!(!every_id.contains(&rid(&careless)), "{every_id:?}");
    assert!(!every_id.contains(&pharmacy_drill["id"].as_str().unwrap().to_string()));
    assert!(!every_id.contains(&hook["id"].as_str().unwrap().to_string()));
    // An account-wide key is 404 to it, as under /api-keys; a Grocers key is its to grade.
    let wide = key("northwind-readwrite").key_id;
    as_grocers_admin(format!("/api-keys/{wide}"))
        .await
        .problem(404);
    as_grocers_admin(format!("/readiness?key_id={wide}"))
        .await
        .problem(404);
    let own = key("northwind-grocers-write").key_id;
    let one = as_grocers_admin(format!("/readiness?key_id={own}"))
        .await
        .ok();
    assert_eq!(one["key_id"], own.as_str());
    // Another account's key is 404 to the account-wide admin too.
    app.get(&format!(
        "/readiness?key_id={}",
        key("harborview-admin").key_id
    ))
    .key("northwind-admin")
    .send()
    .await
    .problem(404);
}
