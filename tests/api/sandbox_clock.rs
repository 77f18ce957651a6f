//! The sandbox clock: one clock every part reads, frozen or system, moved forward only by the
//! sandbox operator (scope `sandbox`).

use crate::helpers::TestApp;
use serde_json::json;

/// 2026-03-02T09:00:00Z
pub const FROZEN_AT: i64 = 1_772_442_000;

pub async fn frozen() -> TestApp {
    TestApp::spawn_with(|l| l.sandbox_clock = Some(Some(FROZEN_AT))).await
}

/// Frozen, with the simulated fleet off: the transitions of the platform alone (the fleet's own
/// are tested in `sandbox_fleet`).
pub async fn frozen_without_fleet() -> TestApp {
    TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.sandbox_simulate_fleet = Some(false);
    })
    .await
}

#[tokio::test]
async fn a_frozen_clock_is_what_every_timestamp_reads() {
    let app = frozen().await;
    let clock = app
        .get("/_sandbox/clock")
        .key("sandbox-operator")
        .send()
        .await
        .ok();
    assert_eq!(clock["now"], "2026-03-02T09:00:00Z");
    assert_eq!(clock["mode"], "frozen");
    assert_eq!(clock["started_at"], "2026-03-02T09:00:00Z");

    // A write stamps the frozen instant, and so does its id's time part (sorts after fixtures).
    let companies = app
        .get("/companies")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    let company = companies["data"][0]["id"].as_str().unwrap().to_string();
    let ad = app
        .post("/ads")
        .key("northwind-readwrite")
        .json(&json!({"company_id": company, "name": "Clock test", "headline": "Tick tock"}))
        .send()
        .await;
    assert_eq!(ad.status, 201, "{}", ad.text());
    assert_eq!(ad.json()["created_at"], "2026-03-02T09:00:00Z");

    // The fixtures are anchored to the clock's start: the same world at whatever wall time.
    let other = frozen().await;
    for path in ["/devices?limit=50", "/promotions?limit=50", "/companies"] {
        let a = app.get(path).key("northwind-readonly").send().await;
        let b = other.get(path).key("northwind-readonly").send().await;
        assert_eq!(a.status, 200);
        assert_eq!(
            a.body, b.body,
            "{path} differs between two frozen sandboxes"
        );
    }
}

#[tokio::test]
async fn advancing_moves_forward_and_never_back() {
    let app = frozen().await;
    fn op(r: crate::helpers::RequestBuilder<'_>) -> crate::helpers::RequestBuilder<'_> {
        r.key("sandbox-operator")
    }
    let moved = op(app.post("/_sandbox/clock/advance"))
        .json(&json!({"seconds": 3600}))
        .send()
        .await
        .ok();
    assert_eq!(moved["object"], "sandbox_clock_advance");
    assert_eq!(moved["from"], "2026-03-02T09:00:00Z");
    assert_eq!(moved["to"], "2026-03-02T10:00:00Z");
    assert_eq!(moved["now"], "2026-03-02T10:00:00Z");
    let now = op(app.get("/_sandbox/clock")).send().await.ok();
    assert_eq!(now["now"], "2026-03-02T10:00:00Z");

    let to = op(app.post("/_sandbox/clock/advance"))
        .json(&json!({"to": "2026-03-03T10:00:00+01:00"}))
        .send()
        .await
        .ok();
    assert_eq!(to["now"], "2026-03-03T09:00:00Z");

    let back = op(app.post("/_sandbox/clock/advance"))
        .json(&json!({"to": "2026-03-02T09:00:00Z"}))
        .send()
        .await
        .problem(409);
    assert_eq!(back["code"], "clock_backwards");
    let neg = op(app.post("/_sandbox/clock/advance"))
        .json(&json!({"seconds": -1}))
        .send()
        .await
        .problem(422);
    assert_eq!(neg["errors"][0]["field"], "/seconds");
    // A century of work in one request is refused; so are both or neither member, and junk.
    op(app.post("/_sandbox/clock/advance"))
        .json(&json!({"seconds": 100_i64 * 366 * 86_400}))
        .send()
        .await
        .problem(422);
    op(app.post("/_sandbox/clock/advance"))
        .json(&json!({"seconds": 1, "to": "2027-01-01T00:00:00Z"}))
        .send()
        .await
        .problem(422);
    op(app.post("/_sandbox/clock/advance"))
        .json(&json!({}))
        .send()
        .await
        .problem(422);
    op(app.post("/_sandbox/clock/advance"))
        .json(&json!({"to": "tomorrow"}))
        .send()
        .await
        .problem(422);
    op(app.post("/_sandbox/clock/advance"))
        .json(&json!({"seconds": 1, "extra": true}))
        .send()
        .await
        .problem(422);
    let after = op(app.get("/_sandbox/clock")).send().await.ok();
    assert_eq!(
        after["now"], "2026-03-03T09:00:00Z",
        "refused advances moved nothing"
    );
}

#[tokio::test]
async fn the_system_clock_cannot_be_moved() {
    let app = TestApp::spawn().await;
    let clock = app
        .get("/_sandbox/clock")
        .key("sandbox-operator")
        .send()
        .await
        .ok();
    assert_eq!(clock["mode"], "system");
    let refused = app
        .post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": 60}))
        .send()
        .await
        .problem(409);
    assert_eq!(refused["code"], "clock_not_frozen");
}

#[tokio::test]
async fn only_the_sandbox_operator_controls_the_clock_and_every_call_is_audited() {
    let app = frozen().await;
    for key in ["northwind-admin", "harborview-admin", "northwind-readwrite"] {
        let denied = app
            .get("/_sandbox/clock")
            .key(key)
            .send()
            .await
            .problem(403);
        assert_eq!(denied["missing_scope"], "sandbox", "{key}");
        app.post("/_sandbox/clock/advance")
            .key(key)
            .json(&json!({"seconds": 60}))
            .send()
            .await
            .problem(403);
    }
    app.get("/_sandbox/clock").send().await.problem(401);
    // An account admin cannot mint a sandbox key either: the scope is beyond any admin's.
    let admin_client = crate::helpers::key("northwind-admin").client_id;
    let minted = app
        .post("/api-keys")
        .key("northwind-admin")
        .json(&json!({"client_id": admin_client, "name": "sneaky", "scopes": ["sandbox"]}))
        .send()
        .await
        .problem(422);
    assert!(minted.to_string().contains("exceeds_creator"), "{minted}");
    // The operator's key reads nothing of any account.
    app.get("/companies")
        .key("sandbox-operator")
        .send()
        .await
        .problem(403);

    app.get("/_sandbox/clock")
        .key("sandbox-operator")
        .send()
        .await
        .ok();
    let audited: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM audit_log WHERE route = '/_sandbox/clock'",
            [],
            |r| r.get(0),
        )
    });
    assert!(audited >= 1, "a control read is audited");
}

#[tokio::test]
async fn sandbox_control_off_removes_the_routes() {
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.sandbox_control = Some(false);
    })
    .await;
    app.get("/_sandbox/clock")
        .key("sandbox-operator")
        .send()
        .await
        .problem(404);
    app.post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": 60}))
        .send()
        .await
        .problem(404);
    let doc = app.get("/openapi.json").send().await.ok();
    assert!(doc["paths"].get("/_sandbox/clock").is_none());
}
