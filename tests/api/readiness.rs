//! The readiness report, graded from what two scripted clients actually did: a *good* one (backs
//! off, honours `Retry-After`, reuses idempotency keys, walks cursors, sends `If-Match`, adopts a
//! rotated key, and runs a receiver that verifies signatures and timestamps) is `ready`; a
//! *careless* one fails exactly the checks it breaks, each naming the requests that show it.
//! Drills go to real receivers over HTTP; the CLI prints the same report.

use crate::helpers::{company_id, key, TestApp};
use crate::readiness_receiver::Receiver;
use crate::sandbox_clock::FROZEN_AT;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

const OP: &str = "sandbox-operator";

async fn frozen() -> TestApp {
    TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.sandbox_simulate_fleet = Some(false);
    })
    .await
}

async fn fault(app: &TestApp, times: u32) {
    app.post("/_sandbox/faults")
        .key(OP)
        .json(&json!({"match": {"operation_id": "createAd"},
                      "action": {"type": "status", "status": 503, "retry_after": 1}, "times": times}))
        .send()
        .await
        .ok();
}

async fn drill(app: &TestApp, webhook: &str, kind: &str) -> Value {
    let r = app
        .post(&format!("/_sandbox/webhooks/{webhook}/drills"))
        .key(OP)
        .json(&json!({"kind": kind}))
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

/// Creates a webhook to `receiver` (with an idempotency key, as a good client does), drills it
/// with every kind (rotating its secret before the rotation drill); returns the drills by kind.
async fn drill_all(
    app: &TestApp,
    receiver: &Receiver,
    idempotency: bool,
) -> BTreeMap<String, Value> {
    let mut create = app.post("/webhooks").key("northwind-admin");
    if idempotency {
        create = create.header("idempotency-key", "hook-1");
    }
    let hook = create
        .json(&json!({"company_id": company_id("Northwind Grocers"),
                      "url": format!("http://127.0.0.1:{}/hook", receiver.port),
                      "event_types": ["webhook.test"]}))
        .send()
        .await
        .ok();
    let id = hook["id"].as_str().unwrap().to_string();
    receiver.knows(hook["secret"].as_str().unwrap());
    let mut out = BTreeMap::new();
    for kind in [
        "duplicate",
        "out_of_order",
        "bad_signature",
        "stale_timestamp",
    ] {
        out.insert(kind.to_string(), drill(app, &id, kind).await);
    }
    // Rotation: refused until a rotation is in progress.
    let r = app
        .post(&format!("/_sandbox/webhooks/{id}/drills"))
        .key(OP)
        .json(&json!({"kind": "rotation"}))
        .send()
        .await;
    assert_eq!(r.problem(409)["code"], "no_rotation_in_progress");
    let mut rotate = app
        .post(&format!("/webhooks/{id}/rotate-secret"))
        .key("northwind-admin");
    if idempotency {
        rotate = rotate.header("idempotency-key", "rotate-1");
    }
    let rotated = rotate.send().await.ok();
    receiver.knows(rotated["secret"].as_str().unwrap());
    out.insert("rotation".into(), drill(app, &id, "rotation").await);
    out
}

fn check<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}: {report}"))
}

fn evidence(report: &Value, id: &str) -> HashSet<String> {
    check(report, id)["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_string())
        .collect()
}

async fn report(app: &TestApp) -> Value {
    let account = key("northwind-admin").account_id;
    app.get(&format!("/_sandbox/readiness?account_id={account}"))
        .key(OP)
        .send()
        .await
        .ok()
}

#[tokio::test]
async fn a_good_client_is_ready() {
    let app = frozen().await;
    let receiver = Receiver::start(true).await;
    let grocers = company_id("Northwind Grocers");
    let rw = "northwind-readwrite";

    // Walks a list by cursor.
    let devices = app.collect_all("/devices", rw, 2).await;
    assert!(devices.len() > 2);

    // A create that meets an injected 503: waits Retry-After, retries with the same key.
    fault(&app, 1).await;
    let body = json!({"company_id": grocers, "name": "Spring", "headline": "H"});
    let mut ad = None;
    for _ in 0..3 {
        let r = app
            .post("/ads")
            .key(rw)
            .header("idempotency-key", "spring-ad")
            .json(&body)
            .send()
            .await;
        if r.status == 201 {
            ad = Some(r.json());
            break;
        }
        assert_eq!(r.status, 503);
        let wait: u64 = r.header("retry-after").unwrap().parse().unwrap();
        tokio::time::sleep(Duration::from_millis(wait * 1000 + 50)).await;
    }
    let ad = ad.expect("created after the retry");
    let ad_id = ad["id"].as_str().unwrap();

    // A conditional update.
    let etag = app.get(&format!("/ads/{ad_id}")).key(rw).send().await;
    let etag = etag.header("etag").unwrap().to_string();
    app.patch(&format!("/ads/{ad_id}"))
        .key(rw)
        .header("if-match", &etag)
        .json(&json!({"headline": "New"}))
        .send()
        .await
        .ok();

    // A rotated key, adopted at once.
    let old = key("northwind-readonly");
    let rotation = app
        .post(&format!("/api-keys/{}/rotate", old.key_id))
        .key("northwind-admin")
        .header("idempotency-key", "rotate-ro")
        .json(&json!({"grace_period_seconds": 3600}))
        .send()
        .await
        .ok();
    let new_raw = rotation["new_key"]["rawKey"].as_str().unwrap();
    app.get("/companies")
        .header("x-api-key", new_raw)
        .header("x-service-client-id", &old.client_id)
        .send()
        .await
        .ok();

    let drills = drill_all(&app, &receiver, true).await;
    for (kind, d) in &drills {
        assert_eq!(d["verdict"], "pass", "{kind}: {d}");
        assert!(d["id"].as_str().unwrap().starts_with("drl_"));
    }
    assert_eq!(
        drills["duplicate"]["attempts"][0]["webhook_id"],
        drills["duplicate"]["attempts"][1]["webhook_id"]
    );
    assert_eq!(drills["bad_signature"]["attempts"][0]["status"], 401);
    assert_eq!(drills["stale_timestamp"]["attempts"][0]["status"], 401);

    let r = report(&app).await;
    for c in r["checks"].as_array().unwrap() {
        assert_eq!(c["status"], "pass", "{c}");
        assert_eq!(c["advice"], "");
    }
    assert_eq!(r["verdict"], "ready", "{r}");
    assert_eq!(r["object"], "readiness_report");
    // The account's own admin reads the same report.
    let own = app
        .get("/readiness")
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert_eq!(own["verdict"], "ready", "{own}");
    for id in [
        "authenticates_every_request",
        "retry_after_respected",
        "backs_off_on_5xx",
        "idempotency_keys_on_create",
        "pagination_walked",
        "conditional_updates",
        "webhook_signatures_verified",
        "webhook_stale_timestamp_rejected",
        "webhook_duplicates_tolerated",
        "webhook_rotation_accepted",
        "webhook_responds_fast",
        "rotated_key_adopted",
        "polling_reasonable",
    ] {
        check(&r, id);
    }
    assert_eq!(check(&r, "conditional_updates")["required"], false);
}

#[tokio::test]
async fn a_careless_client_fails_exactly_the_checks_it_breaks() {
    let app = frozen().await;
    let receiver = Receiver::start(false).await;
    let grocers = company_id("Northwind Grocers");
    let rw = "northwind-readwrite";
    let rid = |r: &crate::helpers::TestResponse| r.header("request-id").unwrap().to_string();

    // Asks for a bigger page instead of following the cursor.
    let first = app.get("/devices?limit=2").key(rw).send().await;
    assert_eq!(first.json()["has_more"], true);
    let bigger = app.get("/devices?limit=100").key(rw).send().await;

    // Retries a failed create without a key, too soon, and faster each time.
    fault(&app, 2).await;
    let body = json!({"company_id": grocers, "name": "Spring", "headline": "H"});
    let a = app.post("/ads").key(rw).json(&body).send().await;
    assert_eq!(a.status, 503);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let b = app.post("/ads").key(rw).json(&body).send().await;
    assert_eq!(b.status, 503);
    let c = app.post("/ads").key(rw).json(&body).send().await;
    assert_eq!(c.status, 201);
    let ad_id = c.json()["id"].as_str().unwrap().to_string();

    // Overwrites without If-Match.
    let patch = app
        .patch(&format!("/ads/{ad_id}"))
        .key(rw)
        .json(&json!({"headline": "New"}))
        .send()
        .await;
    patch.ok();

    // Forgets its credential on a request.
    let anon = app
        .get("/ads")
        .header("x-service-client-id", &key(rw).client_id)
        .send()
        .await;
    anon.problem(401);

    // Polls a list a webhook would announce.
    let mut polls = Vec::new();
    for _ in 0..31 {
        polls.push(rid(&app.get("/promotions").key(rw).send().await));
    }

    // Keeps using a rotated key after its grace period.
    let old = key("northwind-readonly");
    app.post(&format!("/api-keys/{}/rotate", old.key_id))
        .key("northwind-admin")
        .json(&json!({"grace_period_seconds": 60}))
        .send()
        .await
        .ok();
    app.post("/_sandbox/clock/advance")
        .key(OP)
        .json(&json!({"seconds": 120}))
        .send()
        .await
        .ok();
    let late = app.get("/companies").key(&old.name).send().await;
    late.problem(401);

    // A receiver that checks nothing.
    let drills = drill_all(&app, &receiver, false).await;
    assert_eq!(drills["bad_signature"]["verdict"], "fail");
    assert_eq!(drills["bad_signature"]["attempts"][0]["status"], 200);
    assert_eq!(drills["stale_timestamp"]["verdict"], "fail");

    let r = report(&app).await;
    assert_eq!(r["verdict"], "not_ready", "{r}");
    let failed: HashSet<&str> = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "fail")
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let expected: HashSet<&str> = [
        "authenticates_every_request",
        "retry_after_respected",
        "backs_off_on_5xx",
        "idempotency_keys_on_create",
        "pagination_walked",
        "conditional_updates",
        "webhook_signatures_verified",
        "webhook_stale_timestamp_rejected",
        "rotated_key_adopted",
        "polling_reasonable",
    ]
    .into();
    assert_eq!(failed, expected, "{r}");
    for c in r["checks"].as_array().unwrap() {
        if c["status"] == "fail" {
            assert_ne!(c["advice"], "", "{c}");
        } else {
            assert_eq!(c["status"], "pass", "{c}");
        }
    }
    // Each failure names the requests (or drills) that show it.
    assert!(evidence(&r, "authenticates_every_request").contains(&rid(&anon)));
    let retry_after = evidence(&r, "retry_after_respected");
    assert!(
        retry_after.contains(&rid(&a)) && retry_after.contains(&rid(&b)),
        "{retry_after:?}"
    );
    let backoff = evidence(&r, "backs_off_on_5xx");
    assert!(
        backoff.contains(&rid(&b)) && backoff.contains(&rid(&c)),
        "{backoff:?}"
    );
    let idem = evidence(&r, "idempotency_keys_on_create");
    for x in [&a, &b, &c] {
        assert!(idem.contains(&rid(x)), "{idem:?}");
    }
    let pages = evidence(&r, "pagination_walked");
    assert!(
        pages.contains(&rid(&first)) && pages.contains(&rid(&bigger)),
        "{pages:?}"
    );
    assert_eq!(evidence(&r, "conditional_updates"), [rid(&patch)].into());
    assert_eq!(
        evidence(&r, "webhook_signatures_verified"),
        [drills["bad_signature"]["id"].as_str().unwrap().to_string()].into()
    );
    assert_eq!(
        evidence(&r, "webhook_stale_timestamp_rejected"),
        [drills["stale_timestamp"]["id"]
            .as_str()
            .unwrap()
            .to_string()]
        .into()
    );
    assert!(evidence(&r, "rotated_key_adopted").contains(&rid(&late)));
    let polled = evidence(&r, "polling_reasonable");
    assert!(
        polled.len() > 10 && polled.iter().all(|p| polls.contains(p)),
        "{polled:?}"
    );
    // Every request id of the evidence opens in the journal.
    let admin_view = app
        .get(&format!("/requests/{}", rid(&a)))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert_eq!(admin_view["status"], 503);
    assert_eq!(
        admin_view["fault"].as_str().map(|f| f.starts_with("flt_")),
        Some(true)
    );
}

/// A retry is the next create of the same operation, by the same key, with the same body: one
/// sent with a new `Idempotency-Key` fails the check, naming both requests; a different create
/// after a failure is not a retry, whatever its key.
#[tokio::test]
async fn a_retry_is_told_from_a_new_create_by_its_body() {
    let app = frozen().await;
    let grocers = company_id("Northwind Grocers");
    let rw = "northwind-readwrite";
    let create = |key: &'static str, name: &'static str| {
        app.post("/ads")
            .key(rw)
            .header("idempotency-key", key)
            .json(&json!({"company_id": grocers, "name": name, "headline": "H"}))
            .send()
    };
    fault(&app, 1).await;
    let failed = create("summer-1", "Summer").await;
    assert_eq!(failed.status, 503);
    let other = create("autumn-1", "Autumn").await;
    assert_eq!(other.status, 201, "{}", other.text());
    let r = report(&app).await;
    assert_eq!(
        check(&r, "idempotency_keys_on_create")["status"],
        "pass",
        "a different body is a new create: {r}"
    );

    let retry = create("summer-2", "Summer").await;
    assert_eq!(retry.status, 201, "{}", retry.text());
    let r = report(&app).await;
    assert_eq!(check(&r, "idempotency_keys_on_create")["status"], "fail");
    let rid = |r: &crate::helpers::TestResponse| r.header("request-id").unwrap().to_string();
    assert_eq!(
        evidence(&r, "idempotency_keys_on_create"),
        HashSet::from([rid(&failed), rid(&retry)])
    );
}

#[tokio::test]
async fn nothing_observed_is_incomplete_and_a_key_report_is_its_own() {
    let app = frozen().await;
    let r = app
        .get("/readiness")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(r["verdict"], "incomplete", "{r}");
    assert_eq!(r["key_id"], key("northwind-readonly").key_id.as_str());
    assert_eq!(
        check(&r, "webhook_signatures_verified")["status"],
        "not_observed"
    );
    app.get("/_sandbox/readiness")
        .key(OP)
        .send()
        .await
        .problem(422);
    app.get("/_sandbox/readiness?account_id=acct_nope")
        .key("northwind-admin")
        .send()
        .await
        .problem(403);
}

#[tokio::test]
async fn the_cli_prints_the_report_and_exits_by_its_verdict() {
    let dir = std::env::temp_dir().join(format!("signage-readiness-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("signage.db");
    let db_text = db.to_str().unwrap().to_string();
    let account = key("northwind-admin").account_id;
    {
        let app = TestApp::spawn_with(|l| l.database = Some(db_text.clone())).await;
        // A create without an idempotency key: a required check fails.
        app.post("/ads")
            .key("northwind-readwrite")
            .json(&json!({"company_id": company_id("Northwind Grocers"), "name": "N", "headline": "H"}))
            .send()
            .await
            .ok();
        // A read makes the journal write what is queued.
        app.get("/requests")
            .key("northwind-admin")
            .send()
            .await
            .ok();
    }
    let run = |format: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_signage"))
            .args([
                "readiness",
                "--database",
                &db_text,
                "--account",
                &account,
                "--format",
                format,
            ])
            .output()
            .unwrap()
    };
    let json_out = run("json");
    assert_eq!(
        json_out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&json_out.stderr)
    );
    let report: Value = serde_json::from_slice(&json_out.stdout).unwrap();
    assert_eq!(report["verdict"], "not_ready");
    assert_eq!(
        check(&report, "idempotency_keys_on_create")["status"],
        "fail"
    );
    let junit = run("junit");
    assert_eq!(junit.status.code(), Some(2));
    let xml = String::from_utf8(junit.stdout).unwrap();
    assert!(xml.starts_with("<?xml"), "{xml}");
    assert_eq!(
        xml.matches("<testcase ").count(),
        report["checks"].as_array().unwrap().len()
    );
    assert!(
        xml.contains("name=\"idempotency_keys_on_create\">\n      <failure message="),
        "{xml}"
    );
    assert!(xml.contains("<skipped"), "{xml}");
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_signage"))
        .args(["readiness", "--database", &db_text, "--account", "nope"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `key_id` that is no key's id is refused, on both reports, rather than grading nobody and
/// answering a hollow verdict (schemathesis sent one and got a 200).
#[tokio::test]
async fn a_malformed_key_id_is_refused() {
    let app = TestApp::spawn().await;
    let account = key("northwind-admin").account_id;
    for (path, who) in [
        ("/readiness?key_id=", "northwind-admin"),
        ("/readiness?key_id=", "northwind-readonly"),
        (
            &*format!("/_sandbox/readiness?account_id={account}&key_id="),
            OP,
        ),
    ] {
        for bad in [
            "%5BFiltered%5D",
            "key_",
            "sgn_test_abc",
            "key_a-b",
            "usr_%C3%A9",
        ] {
            let r = app.get(&format!("{path}{bad}")).key(who).send().await;
            let p = r.problem(422);
            assert_eq!(p["errors"][0]["field"], "key_id", "{path}{bad}: {p}");
        }
    }
    let fine = app
        .get(&format!(
            "/_sandbox/readiness?account_id={account}&key_id=key_abc123"
        ))
        .key(OP)
        .send()
        .await;
    assert_eq!(fine.status, 200);
}
