//! The request journal: every REST request and MCP tool call per account, who may read what, the
//! ring bound, restores that do not rewind it, and `count=true` verification.

use crate::helpers::{company_id, key, mcp, TestApp};
use serde_json::{json, Value};

const OP: &str = "sandbox-operator";

async fn entries(app: &TestApp, key_name: &str, query: &str) -> Vec<Value> {
    let r = app
        .get(&format!("/requests?limit=100{query}"))
        .key(key_name)
        .send()
        .await;
    r.ok()["data"].as_array().unwrap().clone()
}

async fn operator(app: &TestApp, query: &str) -> Value {
    app.get(&format!("/_sandbox/requests?{query}"))
        .key(OP)
        .send()
        .await
        .ok()
}

#[tokio::test]
async fn a_rest_request_is_journaled_with_what_a_test_asserts_on() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let r = app
        .post("/ads")
        .key("northwind-readwrite")
        .header("idempotency-key", "ad-1")
        .json(&json!({"company_id": grocers, "name": "N", "headline": "H"}))
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let rid = r.header("request-id").unwrap().to_string();
    // The same key again: a replay, journaled as one.
    let again = app
        .post("/ads")
        .key("northwind-readwrite")
        .header("idempotency-key", "ad-1")
        .json(&json!({"company_id": grocers, "name": "N", "headline": "H"}))
        .send()
        .await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));

    let k = key("northwind-readwrite");
    let list = entries(&app, "northwind-admin", "&operation_id=createAd").await;
    assert_eq!(list.len(), 2, "{list:?}");
    let (newest, first) = (&list[0], &list[1]);
    assert!(
        newest["id"].as_str().unwrap().parse::<i64>().unwrap()
            > first["id"].as_str().unwrap().parse::<i64>().unwrap()
    );
    assert_eq!(first["object"], "request");
    assert_eq!(first["request_id"], rid);
    assert_eq!(first["method"], "POST");
    assert_eq!(first["route"], "/ads");
    assert_eq!(first["operation_id"], "createAd");
    assert_eq!(first["status"], 201);
    assert_eq!(first["via"], "rest");
    assert_eq!(first["tool"], Value::Null);
    assert_eq!(first["key_id"], k.key_id.as_str());
    assert_eq!(first["client_id"], k.client_id.as_str());
    assert_eq!(first["account_id"], k.account_id.as_str());
    assert_eq!(first["credentials"], "api_key");
    // A digest of the key, never the key; the filter takes the key itself.
    assert_eq!(
        first["idempotency_key"],
        signage::http::idempotency::digest("ad-1").as_str()
    );
    assert_eq!(first["path"], "/ads");
    assert_eq!(
        entries(&app, "northwind-admin", "&idempotency_key=ad-1")
            .await
            .len(),
        2
    );
    assert_eq!(first["idempotent_replayed"], false);
    assert_eq!(newest["idempotent_replayed"], true);
    assert_eq!(first["body"]["headline"], "H");
    assert_eq!(first["body_truncated"], false);
    assert!(first["duration_ms"].as_f64().unwrap() >= 0.0);
    assert!(first["at"].as_str().unwrap().ends_with('Z'));

    // One entry by its Request-Id, with advice.
    let one = app
        .get(&format!("/requests/{rid}"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(one["request_id"], rid);
    assert_eq!(one["advice"], "The request succeeded.");
}

#[tokio::test]
async fn a_failure_is_explained_with_its_problem_and_advice() {
    let app = TestApp::spawn().await;
    let r = app
        .post("/ads")
        .key("northwind-readwrite")
        .json(&json!({"company_id": company_id("Northwind Grocers"), "name": ""}))
        .send()
        .await;
    let problem = r.problem(422);
    let rid = r.header("request-id").unwrap();
    let one = app
        .get(&format!("/requests/{rid}"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(one["status"], 422);
    assert_eq!(one["problem"], problem);
    assert_eq!(one["problem_code"], problem["code"]);
    assert_eq!(problem["code"], "validation_failed");
    assert!(one["advice"].as_str().unwrap().contains("field"), "{one}");

    // Another key of the account sees neither the entry nor the failure; the admin does.
    app.get(&format!("/requests/{rid}"))
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    app.get(&format!("/requests/{rid}"))
        .key("harborview-admin")
        .send()
        .await
        .problem(404);
    app.get(&format!("/requests/{rid}"))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    let failures = app
        .get("/requests/failures")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(failures["data"][0]["request_id"], rid);
    assert!(failures["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["status"].as_u64().unwrap() >= 400));
}

#[tokio::test]
async fn a_key_reads_its_own_entries_and_an_admin_its_account() {
    let app = TestApp::spawn().await;
    app.get("/devices")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    app.get("/ads").key("northwind-readwrite").send().await.ok();
    app.get("/ads")
        .key("harborview-readwrite")
        .send()
        .await
        .ok();
    let own = entries(&app, "northwind-readonly", "").await;
    let ro = key("northwind-readonly").key_id;
    assert!(!own.is_empty());
    assert!(own.iter().all(|e| e["key_id"] == ro.as_str()), "{own:?}");
    // Asking for another key's entries finds nothing.
    let other = key("northwind-readwrite").key_id;
    assert!(
        entries(&app, "northwind-readonly", &format!("&key_id={other}"))
            .await
            .is_empty()
    );
    let all = entries(&app, "northwind-admin", "").await;
    assert!(all.iter().any(|e| e["key_id"] == other.as_str()));
    assert!(all
        .iter()
        .all(|e| e["account_id"] == key("northwind-admin").account_id.as_str()));
    // The operator sees every account, and may narrow to one.
    let hv = key("harborview-readwrite").account_id;
    let every = operator(&app, "limit=100").await;
    assert!(every["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["account_id"] == hv.as_str()));
    let narrowed = operator(&app, &format!("limit=100&account_id={hv}")).await;
    assert!(narrowed["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["account_id"] == hv.as_str()));
    // The operator's view is not an account's.
    app.get("/_sandbox/requests")
        .key("northwind-admin")
        .send()
        .await
        .problem(403);
}

#[tokio::test]
async fn pages_are_walked_by_cursor_and_filters_are_checked() {
    let app = TestApp::spawn().await;
    for _ in 0..5 {
        app.get("/plans")
            .key("northwind-readonly")
            .send()
            .await
            .ok();
    }
    let mut seen = Vec::new();
    let mut url = "/requests?limit=2&operation_id=listPlans".to_string();
    loop {
        let page = app.get(&url).key("northwind-readonly").send().await.ok();
        for e in page["data"].as_array().unwrap() {
            seen.push(e["id"].as_str().unwrap().parse::<i64>().unwrap());
        }
        match page["next_cursor"].as_str() {
            Some(c) => url = format!("/requests?limit=2&operation_id=listPlans&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(seen.len(), 5);
    assert!(
        seen.windows(2).all(|w| w[0] > w[1]),
        "newest first: {seen:?}"
    );
    for bad in [
        "status=6xx",
        "since=yesterday",
        "via=smtp",
        "cursor=abc",
        "colour=red",
    ] {
        app.get(&format!("/requests?{bad}"))
            .key("northwind-readonly")
            .send()
            .await
            .problem(422);
    }
}

#[tokio::test]
async fn an_mcp_tool_call_is_one_entry_naming_the_tool() {
    let app = TestApp::spawn().await;
    mcp::call_ok(&app, "northwind-readonly", "list_companies", json!({})).await;
    let list = entries(&app, "northwind-readonly", "&via=mcp").await;
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["tool"], "list_companies");
    assert_eq!(list[0]["operation_id"], "listCompanies");
    assert_eq!(list[0]["status"], 200);
    assert_eq!(list[0]["key_id"], key("northwind-readonly").key_id.as_str());
    // The tool that explains a request, over MCP.
    let failed = app
        .get("/devices/dev_nope")
        .key("northwind-readonly")
        .send()
        .await;
    let rid = failed.header("request-id").unwrap().to_string();
    let out = mcp::call_ok(
        &app,
        "northwind-readonly",
        "explain_request",
        json!({"request_id": rid}),
    )
    .await;
    assert_eq!(out["status"], 404);
    assert!(out["advice"].as_str().unwrap().contains("visible"), "{out}");
    let out = mcp::call_ok(
        &app,
        "northwind-readonly",
        "list_recent_failures",
        json!({}),
    )
    .await;
    assert_eq!(out["data"][0]["request_id"], rid.as_str());
}

/// A request that did not authenticate belongs to no account: naming a victim's client id or key
/// id files nothing under the victim, and nothing of what it sent is kept. A refused credential
/// that proved itself (a revoked key sent with its very secret) is its holder's.
#[tokio::test]
async fn a_request_that_did_not_authenticate_is_nobodys_unless_its_credential_proved_itself() {
    let app = TestApp::spawn().await;
    let anon = app.get("/devices").send().await;
    anon.problem(401);
    let anon_id = anon.header("request-id").unwrap().to_string();
    let k = key("northwind-readonly");
    let named = app
        .post("/ads?note=mine")
        .header("x-service-client-id", &k.client_id)
        .json(&json!({"name": "x".repeat(4000)}))
        .send()
        .await;
    named.problem(401);
    let named_id = named.header("request-id").unwrap().to_string();
    // A forged key carrying the victim's key id.
    let forged = format!(
        "sgn_test_{}_{}",
        k.key_id.trim_start_matches("key_"),
        "A".repeat(32)
    );
    app.get("/devices")
        .header("x-api-key", &forged)
        .header("x-service-client-id", &k.client_id)
        .send()
        .await
        .problem(401);
    let every = operator(&app, "limit=100&status=401").await;
    let mine = |id: &str| {
        every["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["request_id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} is journaled: {every}"))
    };
    let e = mine(&anon_id);
    assert_eq!(e["account_id"], Value::Null);
    assert_eq!(e["credentials"], "none");
    let n = mine(&named_id);
    assert_eq!(n["account_id"], Value::Null);
    assert_eq!(n["client_id"], Value::Null);
    // Small: nothing it sent is copied; its credential was refused from its headers, so its
    // body was never even read.
    assert_eq!(n["body"], Value::Null);
    assert_eq!(n["query"], Value::Null);
    assert_eq!(n["path"], Value::Null);
    assert_eq!(n["body_bytes"], 0, "{n}");
    assert_eq!(n["problem_code"], "missing_credential");
    // The victim's admin sees none of them.
    let admin = entries(&app, "northwind-admin", "&status=401").await;
    assert!(admin.is_empty(), "{admin:?}");
    // The revoked key, with its real secret, is its holder's.
    let revoked = key("northwind-revoked");
    let r = app.get("/devices").key("northwind-revoked").send().await;
    assert_eq!(r.problem(401)["code"], "revoked_key");
    let admin = entries(&app, "northwind-admin", "&status=401").await;
    assert_eq!(admin.len(), 1, "{admin:?}");
    assert_eq!(admin[0]["key_id"], revoked.key_id.as_str());
    assert_eq!(admin[0]["client_id"], revoked.client_id.as_str());
    // Public routes that answered are nobody's: /health leaves no entry.
    app.get("/health").send().await;
    let count = operator(&app, "count=true&operation_id=getHealth").await;
    assert_eq!(count["count"], 0);
}

#[tokio::test]
async fn the_journal_keeps_the_newest_entries_per_account() {
    let app = TestApp::spawn_with(|l| l.journal_max_entries = Some(3)).await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        let r = app.get("/plans").key("northwind-readonly").send().await;
        ids.push(r.header("request-id").unwrap().to_string());
    }
    app.get("/plans")
        .key("harborview-readwrite")
        .send()
        .await
        .ok();
    let kept: Vec<String> = entries(&app, "northwind-admin", "")
        .await
        .iter()
        .map(|e| e["request_id"].as_str().unwrap().to_string())
        .collect();
    // Reading is itself journaled after it answers: the 3 newest are the last plans requests.
    assert_eq!(kept, vec![ids[4].clone(), ids[3].clone(), ids[2].clone()]);
    // Another account's ring is its own.
    assert_eq!(entries(&app, "harborview-admin", "").await.len(), 1);
}

#[tokio::test]
async fn a_restore_does_not_rewind_the_journal() {
    let app = TestApp::spawn().await;
    app.post("/_sandbox/snapshots")
        .key(OP)
        .json(&json!({"name": "base"}))
        .send()
        .await
        .ok();
    let r = app.get("/plans").key("northwind-readonly").send().await;
    let rid = r.header("request-id").unwrap().to_string();
    app.post("/_sandbox/snapshots/base/restore")
        .key(OP)
        .send()
        .await
        .ok();
    app.get(&format!("/requests/{rid}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
}

/// The README's worked example: exactly 3 `createAd` requests with one `Idempotency-Key`, 2 of them
/// answered by an injected 503.
#[tokio::test]
async fn count_verifies_retries_in_one_call() {
    let app = TestApp::spawn().await;
    app.post("/_sandbox/faults")
        .key(OP)
        .json(&json!({"match": {"operation_id": "createAd"},
                      "action": {"type": "status", "status": 503, "retry_after": 3}, "times": 2}))
        .send()
        .await
        .ok();
    let body = json!({"company_id": company_id("Northwind Grocers"), "name": "N", "headline": "H"});
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let r = app
            .post("/ads")
            .key("northwind-readwrite")
            .header("idempotency-key", "order-7")
            .json(&body)
            .send()
            .await;
        statuses.push(r.status.as_u16());
    }
    assert_eq!(statuses, [503, 503, 201]);
    let base = "count=true&operation_id=createAd&idempotency_key=order-7";
    assert_eq!(
        operator(&app, base).await,
        json!({"object": "request_count", "count": 3})
    );
    assert_eq!(
        operator(&app, &format!("{base}&status=503&faulted=true")).await["count"],
        2
    );
    assert_eq!(
        operator(&app, &format!("{base}&status=2xx")).await["count"],
        1
    );
}

/// The two answers of a journal list, a page and a count, are the ones the document describes:
/// a client generated from it reads either (schemathesis found `count=true` undocumented).
#[tokio::test]
async fn a_count_and_a_page_both_fit_the_documented_schema() {
    let app = TestApp::spawn().await;
    let doc = app.get("/openapi.json").send().await.ok();
    let mut checker = crate::schemas::Checker::new();
    for path in ["/requests", "/_sandbox/requests"] {
        let schema =
            &doc["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
        let schema = crate::schemas::resolve(&doc, schema, 0);
        for query in ["count=true", "limit=2", "count=false&limit=1"] {
            let body = app
                .get(&format!("{path}?{query}"))
                .key(OP)
                .send()
                .await
                .ok();
            checker
                .check(&body, &schema, "")
                .unwrap_or_else(|e| panic!("GET {path}?{query}: {e}"));
        }
        let count = app
            .get(&format!("{path}?count=true"))
            .key(OP)
            .send()
            .await
            .ok();
        assert_eq!(count["object"], "request_count");
        assert!(count["count"].as_u64().is_some(), "{count}");
    }
}

/// A filter longer than its documented `maxLength` is refused (422), not silently matched
/// against nothing: the router holds every route to its declared bounds.
#[tokio::test]
async fn a_filter_longer_than_documented_is_refused() {
    let app = TestApp::spawn().await;
    let long = "0".repeat(101);
    for path in ["/requests", "/_sandbox/requests"] {
        let r = app.get(&format!("{path}?tool={long}")).key(OP).send().await;
        let p = r.problem(422);
        assert_eq!(p["errors"][0]["field"], "tool", "{p}");
        assert_eq!(p["errors"][0]["code"], "invalid_length", "{p}");
        let fine = app
            .get(&format!("{path}?tool={}", &long[..100]))
            .key(OP)
            .send()
            .await;
        assert_eq!(fine.status, 200);
    }
}

/// A mark counts the caller's account only: another account's least-privileged key cannot watch
/// Northwind's requests move it (it moved by exactly 7 for 7 of them), while the operator's mark,
/// which scopes `/_sandbox/requests` across accounts, still counts everything.
#[tokio::test]
async fn a_mark_moves_with_the_callers_account_only() {
    let app = TestApp::spawn().await;
    let mark = |key_name: &'static str| {
        let app = &app;
        async move {
            let m = app.get("/requests/mark").key(key_name).send().await.ok();
            m["after"].as_str().unwrap().parse::<i64>().unwrap()
        }
    };
    let watcher = mark("harborview-readwrite").await;
    let operator_before = mark("sandbox-operator").await;
    let own_before = mark("northwind-readonly").await;
    for _ in 0..7 {
        app.get("/devices?limit=1")
            .key("northwind-readonly")
            .send()
            .await
            .ok();
    }
    assert_eq!(mark("harborview-readwrite").await, watcher);
    let own_after = mark("northwind-readonly").await;
    assert!(own_after >= own_before + 7, "{own_before} -> {own_after}");
    assert!(mark("sandbox-operator").await >= operator_before + 7);
    // The account's mark still scopes its own entries: nothing of its own after the newest.
    let later = entries(&app, "northwind-admin", &format!("&after={own_after}")).await;
    assert!(later.iter().all(|e| e["path"] != "/devices"), "{later:?}");
}
