//! Issue 29 §3: what a test harness needs of the journal and the report. Assertions scoped to one
//! test (a mark, `after`, a test-name tag) hold when the suite runs twice; JUnit agrees with the
//! verdict; `Prefer` faults, requests the pipeline refuses and creates whose body the schema
//! refuses draw nothing from a fault rule's stream; an advance answers the same across identical
//! runs, with a real receiver too.

use crate::helpers::TestApp;
use crate::readiness_client::*;
use serde_json::{json, Value};

/// The plugin README's example, run twice in one session (the journal outlives restores): with a
/// mark taken as each test begins, each run counts its own three requests.
#[tokio::test]
async fn counts_after_a_mark_hold_when_the_suite_runs_twice() {
    let app = sandbox().await;
    for run in 0..2 {
        let after = mark(&app).await;
        fail_creates(&app, 503, Some(1), 2).await;
        let answers = create_with_retries(
            &app,
            "northwind-readwrite",
            &ad("Retried"),
            Some("order-7"),
            Backoff::RetryAfterThenJitter { base_ms: 100 },
            &mut Rng::new(run),
            5,
        )
        .await;
        assert_eq!(answers.len(), 3);
        let count = |extra: &'static str| {
            let after = after.clone();
            let app = &app;
            async move {
                app.get(&format!(
                    "/_sandbox/requests?count=true&operation_id=createAd&idempotency_key=order-7&after={after}{extra}"
                ))
                .key(OP)
                .send()
                .await
                .ok()["count"]
                    .as_i64()
                    .unwrap()
            }
        };
        assert_eq!(count("").await, 3, "run {run}");
        assert_eq!(count("&status=503&faulted=true").await, 2, "run {run}");
        // Without the mark, the first run's are counted too.
        let all = app
            .get("/_sandbox/requests?count=true&operation_id=createAd&idempotency_key=order-7")
            .key(OP)
            .send()
            .await
            .ok();
        assert_eq!(all["count"], 3 * (run + 1));
    }
}

/// The mark is not itself journaled, and requests tagged with `Signage-Test-Name` are found by
/// it; a report `after` a mark grades only what came later, drills included.
#[tokio::test]
async fn a_test_name_tag_and_a_mark_scope_the_journal_and_the_report() {
    let app = sandbox().await;
    let before = mark(&app).await;
    assert_eq!(mark(&app).await, before, "taking a mark adds no entry");
    for name in ["tests/test_a.py::test_one", "tests/test_a.py::test_two"] {
        app.get("/devices?limit=2")
            .key("northwind-readonly")
            .header("signage-test-name", name)
            .send()
            .await
            .ok();
    }
    let tagged = app
        .get("/_sandbox/requests?test_name=tests/test_a.py::test_one")
        .key(OP)
        .send()
        .await
        .ok();
    let data = tagged["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{tagged}");
    assert_eq!(data[0]["test_name"], "tests/test_a.py::test_one");
    assert_eq!(data[0]["path"], "/devices");
    // Test one walked nothing; a report after test two's mark sees test two only.
    let walk = app.collect_all("/devices", "northwind-readonly", 4).await;
    assert!(!walk.is_empty());
    let r = report(&app).await;
    assert_eq!(status(&r, "pagination_walked"), "pass", "{r}");
    let later = mark(&app).await;
    let r = report_after(&app, Some(&later)).await;
    assert_eq!(r["after"], later.as_str());
    assert_eq!(status(&r, "pagination_walked"), "not_observed", "{r}");
    assert_eq!(status(&r, "polling_reasonable"), "not_observed", "{r}");
}

/// JUnit says what the verdict says: a `<failure>` exactly for each required check that is not a
/// pass, a recommended check that failed is `<skipped>`, and `GET /readiness` answers it too.
#[tokio::test]
async fn the_junit_report_agrees_with_the_verdict() {
    let app = sandbox().await;
    // A PATCH without If-Match: a recommended check fails.
    let ads = app
        .get("/ads?limit=1")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    app.patch(&format!("/ads/{}", ads["data"][0]["id"].as_str().unwrap()))
        .key("northwind-readwrite")
        .json(&json!({"headline": "Blind"}))
        .send()
        .await
        .ok();
    let json_report = app
        .get("/readiness")
        .key("northwind-admin")
        .send()
        .await
        .ok();
    for ask in [
        app.get("/readiness?format=junit").key("northwind-admin"),
        app.get("/readiness")
            .key("northwind-admin")
            .header("accept", "application/xml"),
    ] {
        let r = ask.send().await;
        assert_eq!(r.status, 200);
        assert_eq!(
            r.header("content-type"),
            Some("application/xml; charset=utf-8")
        );
        let xml = r.text();
        let checks = json_report["checks"].as_array().unwrap();
        let blocking = checks
            .iter()
            .filter(|c| c["required"] == true && c["status"] != "pass")
            .count();
        assert!(blocking > 0);
        assert_eq!(xml.matches("<failure ").count(), blocking, "{xml}");
        assert!(xml.contains(&format!("failures=\"{blocking}\"")), "{xml}");
        assert!(
            xml.contains(
                "name=\"conditional_updates\">\n      <skipped message=\"failed, recommended only"
            ),
            "{xml}"
        );
        assert!(
            !xml.contains("name=\"conditional_updates\">\n      <failure"),
            "{xml}"
        );
        assert!(xml.contains(&format!(
            "value=\"{}\"",
            json_report["verdict"].as_str().unwrap()
        )));
    }
    app.get("/readiness?format=yaml")
        .key("northwind-admin")
        .send()
        .await
        .problem(422);
}

/// A frozen, seeded sandbox (no simulated fleet) whose one fault rule answers 503 to half of the
/// requests of `operation_id`, drawn from the rule's own seeded stream.
async fn seeded_with_a_coin_flip_on(operation_id: &str) -> TestApp {
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(crate::sandbox_clock::FROZEN_AT));
        l.sandbox_seed = Some(42);
        l.sandbox_simulate_fleet = Some(false);
    })
    .await;
    app.post("/_sandbox/faults")
        .key(OP)
        .json(&json!({"match": {"operation_id": operation_id},
                      "action": {"type": "status", "status": 503}, "probability": 0.5}))
        .send()
        .await
        .ok();
    app
}

/// Which of a stream of requests a probability rule faults (by position).
async fn faulted_positions(noise: bool) -> (Vec<usize>, Value) {
    let app = seeded_with_a_coin_flip_on("listAds").await;
    let mut hit = Vec::new();
    for i in 0..24 {
        if noise {
            // Its own fault: answered by it, never shown to the rule.
            let own = app
                .get("/ads")
                .key("northwind-readonly")
                .header("prefer", "code=503")
                .send()
                .await;
            assert_eq!(own.header("signage-fault"), Some("prefer"));
            // Refused before it runs: an unknown parameter, a malformed Prefer.
            app.get("/ads?colour=red")
                .key("northwind-readonly")
                .send()
                .await
                .problem(422);
            app.get("/ads")
                .key("northwind-readonly")
                .header("prefer", "code=42")
                .send()
                .await
                .problem(422);
        }
        let r = app.get("/ads").key("northwind-readonly").send().await;
        if r.status == 503 {
            hit.push(i);
        }
    }
    let rules = app.get("/_sandbox/faults").key(OP).send().await.ok();
    (hit, rules["data"][0].clone())
}

#[tokio::test]
async fn prefer_faults_and_refused_requests_draw_nothing_from_a_rules_stream() {
    let ((quiet, quiet_rule), (noisy, noisy_rule)) =
        tokio::join!(faulted_positions(false), faulted_positions(true));
    assert!(!quiet.is_empty() && quiet.len() < 24, "{quiet:?}");
    assert_eq!(quiet, noisy);
    assert_eq!(quiet_rule["fired"], noisy_rule["fired"]);
}

/// Which of a stream of creates a probability rule on `createAd` faults (by position); with
/// `noise`, another key of the account sends, before each, a create its schema refuses (no
/// `name`, no `headline`) with an `Idempotency-Key`: issue 45 §4.
async fn faulted_creates(noise: bool) -> (Vec<usize>, Value) {
    let app = seeded_with_a_coin_flip_on("createAd").await;
    let mut hit = Vec::new();
    for i in 0..16 {
        if noise {
            let refused = app
                .post("/ads")
                .key("northwind-grocers-write")
                .header("idempotency-key", &format!("incomplete-{i}"))
                .json(&json!({"company_id": crate::helpers::company_id("Northwind Grocers")}))
                .send()
                .await;
            assert_eq!(refused.status, 422, "{}", refused.text());
            assert_eq!(refused.header("signage-fault"), None);
        }
        let r = app
            .post("/ads")
            .key("northwind-readwrite")
            .header("idempotency-key", &format!("create-{i}"))
            .json(&ad(&format!("Create {i}")))
            .send()
            .await;
        if r.status == 503 {
            hit.push(i);
        } else {
            assert_eq!(r.status, 201, "{}", r.text());
        }
    }
    let rules = app.get("/_sandbox/faults").key(OP).send().await.ok();
    (hit, rules["data"][0].clone())
}

/// Another key's creates that the schema refuses (422, sent with an `Idempotency-Key`) draw
/// nothing from a probability rule's stream: the faulted creates of the client stay the same.
#[tokio::test]
async fn another_keys_refused_creates_draw_nothing_from_a_rules_stream() {
    let ((quiet, quiet_rule), (noisy, noisy_rule)) =
        tokio::join!(faulted_creates(false), faulted_creates(true));
    assert!(!quiet.is_empty() && quiet.len() < 16, "{quiet:?}");
    assert_eq!(quiet, noisy);
    assert_eq!(quiet_rule["fired"], noisy_rule["fired"]);
}

/// One quiet seeded run with a real receiver: a webhook to it, a write, a day's advance; the
/// advance's answer.
async fn advance_with_a_receiver() -> Value {
    let receiver = crate::readiness_receiver::Receiver::start(false).await;
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(crate::sandbox_clock::FROZEN_AT));
        l.sandbox_seed = Some(7);
    })
    .await;
    app.post("/webhooks")
        .key("northwind-admin")
        .header("idempotency-key", "hook-1")
        .json(
            &json!({"company_id": crate::helpers::company_id("Northwind Grocers"),
                      "url": format!("http://127.0.0.1:{}/hook", receiver.port),
                      "event_types": ["ad.created", "device.offline", "device.online"]}),
        )
        .send()
        .await
        .ok();
    app.post("/ads")
        .key("northwind-readwrite")
        .header("idempotency-key", "left-behind")
        .json(&ad("Left behind"))
        .send()
        .await
        .ok();
    app.post("/_sandbox/clock/advance")
        .key(OP)
        .json(&json!({"seconds": 86_400}))
        .send()
        .await
        .ok()
}

/// Issue 45 §4: identical seeded runs with a real local receiver answer a day's advance alike,
/// whatever the receiver's timing (who sends an attempt due during the run: the run itself).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_advance_answer_is_identical_with_a_real_receiver() {
    let mut answers = Vec::new();
    for _ in 0..3 {
        answers.push(advance_with_a_receiver().await);
    }
    // The run sent the attempts that fell due on its way (the fleet's device events).
    assert!(
        answers[0]["transitions"]["webhook.attempt"].as_u64() > Some(0),
        "{}",
        answers[0]
    );
    for a in &answers[1..] {
        assert_eq!(a["transitions"], answers[0]["transitions"], "{answers:?}");
        assert_eq!(a["events"], answers[0]["events"]);
    }
}

/// The plugin's flow: restore, write, advance a day. The advance answers alike every time (the
/// webhook attempt of the write is settled before the clock moves, never counted or not by
/// chance).
#[tokio::test]
async fn the_advance_answer_is_identical_across_identical_runs() {
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(crate::sandbox_clock::FROZEN_AT));
        l.sandbox_seed = Some(7);
    })
    .await;
    app.post("/_sandbox/snapshots")
        .key(OP)
        .json(&json!({"name": "clean"}))
        .send()
        .await
        .ok();
    let mut answers = Vec::new();
    for _ in 0..4 {
        app.post("/_sandbox/snapshots/clean/restore")
            .key(OP)
            .send()
            .await
            .ok();
        app.post("/ads")
            .key("northwind-readwrite")
            .header("idempotency-key", "left-behind")
            .json(&ad("Left behind"))
            .send()
            .await
            .ok();
        let moved = app
            .post("/_sandbox/clock/advance")
            .key(OP)
            .json(&json!({"seconds": 86_400}))
            .send()
            .await
            .ok();
        answers.push(moved);
    }
    for a in &answers[1..] {
        assert_eq!(a, &answers[0]);
    }
    assert!(answers[0]["events"]["device.offline"].as_i64().unwrap() > 0);
}
