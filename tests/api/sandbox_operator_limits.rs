//! The operator is not throttled on its own controls (issue 19 item 7): a key with the `sandbox`
//! scope spends no rate-limit token on `/_sandbox/*`, so a harness may poll the clock or restore a
//! snapshot before every test; everything else, and every other key, stays limited.

use crate::helpers::TestApp;

const OP: &str = "sandbox-operator";

#[tokio::test]
async fn operator_polling_is_never_429_while_other_keys_stay_limited() {
    // The default limit (50/s, burst 100): 150 fast reads would pass it.
    let app = TestApp::spawn().await;
    for i in 0..150 {
        let r = app.get("/_sandbox/clock").key(OP).send().await;
        assert_eq!(r.status, 200, "read {i}: {}", r.text());
        assert!(
            r.header("ratelimit").is_none(),
            "no token spent, none reported"
        );
    }
    // The operator key elsewhere spends tokens as any key does.
    let me = app.get("/me").key(OP).send().await;
    assert_eq!(me.status, 200, "{}", me.text());
    assert!(me.header("ratelimit").is_some());
}

#[tokio::test]
async fn the_exemption_holds_under_a_tight_limit_for_writes_too() {
    let app = TestApp::spawn_with(|l| {
        l.rate_limit_per_second = Some(0.01);
        l.rate_limit_burst = Some(3);
        l.sandbox_clock = Some(Some(crate::sandbox_clock::FROZEN_AT));
    })
    .await;
    for i in 0..20 {
        let r = app
            .post("/_sandbox/clock/advance")
            .key(OP)
            .json(&serde_json::json!({"seconds": 1}))
            .send()
            .await;
        assert_eq!(r.status, 200, "advance {i}: {}", r.text());
    }
    for _ in 0..3 {
        assert_eq!(app.get("/me").key(OP).send().await.status, 200);
    }
    app.get("/me").key(OP).send().await.problem(429);
    // Still free on its controls after its bucket ran dry elsewhere.
    assert_eq!(app.get("/_sandbox/clock").key(OP).send().await.status, 200);

    // A key without the scope is refused on /_sandbox/* and spends its tokens doing so.
    for _ in 0..3 {
        app.get("/_sandbox/clock")
            .key("northwind-readonly")
            .send()
            .await
            .problem(403);
    }
    app.get("/_sandbox/clock")
        .key("northwind-readonly")
        .send()
        .await
        .problem(429);
    app.get("/companies")
        .key("northwind-readonly")
        .send()
        .await
        .problem(429);
}
