//! Issue 29 §6: the product passes its own report. Every problem body carries a `code` (the 409s,
//! 412s, 404s and 422s lacked one), and the injected fault's `type` is relative like every other.
//! (The browser player's plays carry an `Idempotency-Key`: tests/browser/check_console.py checks
//! it in a real browser, with the journal and the key's report.)

use crate::helpers::{company_id, TestApp};
use crate::readiness_client::OP;
use serde_json::json;

#[tokio::test]
async fn every_problem_carries_a_code() {
    let app = TestApp::spawn().await;
    let rw = "northwind-readwrite";
    let ad =
        json!({"company_id": company_id("Northwind Grocers"), "name": "Coded", "headline": "H"});
    let created = app
        .post("/ads")
        .key(rw)
        .header("idempotency-key", "coded-1")
        .json(&ad)
        .send()
        .await;
    let id = created.ok()["id"].as_str().unwrap().to_string();
    let mut other = ad.clone();
    other["name"] = json!("Other");
    let cases = [
        (
            404,
            app.get("/ads/ad_doesnotexist0000000000")
                .key(rw)
                .send()
                .await,
            "not_found",
        ),
        (404, app.get("/nowhere").key(rw).send().await, "not_found"),
        (
            409,
            app.post("/ads")
                .key(rw)
                .header("idempotency-key", "coded-1")
                .json(&other)
                .send()
                .await,
            "idempotency_key_reused",
        ),
        (
            412,
            app.patch(&format!("/ads/{id}"))
                .key(rw)
                .header("if-match", "\"v0\"")
                .json(&json!({"headline": "Stale"}))
                .send()
                .await,
            "precondition_failed",
        ),
        (
            422,
            app.post("/ads")
                .key(rw)
                .json(&json!({"name": ""}))
                .send()
                .await,
            "validation_failed",
        ),
        (
            405,
            app.put("/ads").key(rw).send().await,
            "method_not_allowed",
        ),
        (
            403,
            app.post("/ads")
                .key("northwind-readonly")
                .json(&ad)
                .send()
                .await,
            "missing_scope",
        ),
    ];
    for (status, r, code) in cases {
        let p = r.problem(status);
        assert_eq!(p["code"], code, "{p}");
        assert!(p["type"].as_str().unwrap().starts_with("/problems/"), "{p}");
    }
    // The injected fault is a problem like any other: a relative type and a code.
    app.post("/_sandbox/faults")
        .key(OP)
        .json(&json!({"match": {"operation_id": "listAds"}, "action": {"type": "status", "status": 503}, "times": 1}))
        .send()
        .await
        .ok();
    let p = app.get("/ads").key(rw).send().await.problem(503);
    assert_eq!(p["type"], "/problems/injected-fault");
    assert_eq!(p["code"], "injected_fault");
    let p = app
        .get("/ads")
        .key(rw)
        .header("prefer", "code=409")
        .send()
        .await
        .problem(409);
    assert_eq!(p["type"], "/problems/injected-fault");
    assert_eq!(p["code"], "injected_fault");
}
