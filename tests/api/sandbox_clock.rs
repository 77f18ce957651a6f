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

fn secs(v: &serde_json::Value) -> i64 {
    signage::time::parse_rfc3339(v.as_str().unwrap()).unwrap()
}

fn wall() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[tokio::test]
async fn advancing_the_running_clock_adds_an_offset_and_it_keeps_running() {
    let app = TestApp::spawn().await;
    fn op(r: crate::helpers::RequestBuilder<'_>) -> crate::helpers::RequestBuilder<'_> {
        r.key("sandbox-operator")
    }
    let clock = op(app.get("/_sandbox/clock")).send().await.ok();
    assert_eq!(clock["mode"], "system");
    assert_eq!(clock["offset_seconds"], 0);
    assert!((secs(&clock["now"]) - wall()).abs() <= 2, "{clock}");

    let day = op(app.post("/_sandbox/clock/advance"))
        .json(&json!({"seconds": 86_400}))
        .send()
        .await;
    assert_eq!(day.status, 200, "{}", day.text());
    let day = day.json();
    assert_eq!(day["mode"], "system");
    // Exactly the jump asked, however long the run on the way took.
    let offset = day["offset_seconds"].as_i64().unwrap();
    assert!((86_400..=86_401).contains(&offset), "{day}");
    assert!(secs(&day["now"]) >= secs(&day["from"]) + 86_400, "{day}");
    assert!((secs(&day["now"]) - (wall() + 86_400)).abs() <= 2, "{day}");

    // It runs on from there: a second later it shows a later instant, with the same offset.
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let resp = op(app.get("/_sandbox/clock")).send().await;
    let later = resp.ok();
    assert!(
        secs(&later["now"]) > secs(&day["now"]),
        "{later} after {day}"
    );
    assert_eq!(later["offset_seconds"], day["offset_seconds"]);
    // The HTTP Date header tells the sandbox's time, not the wall clock's.
    let date = resp.header("date").unwrap().to_string();
    assert!(
        date.contains(&signage::time::http_date(secs(&later["now"]))[..16]),
        "{date} vs {later}"
    );

    // What is written now is stamped a day ahead of the wall clock.
    let company = crate::helpers::company_id("Northwind Grocers");
    let ad = app
        .post("/ads")
        .key("northwind-readwrite")
        .json(&json!({"company_id": company, "name": "Tomorrow", "headline": "From the future"}))
        .send()
        .await;
    assert_eq!(ad.status, 201, "{}", ad.text());
    assert!(secs(&ad.json()["created_at"]) >= wall() + 86_398);

    // Offsets add up, and the clock never moves back.
    let hour = op(app.post("/_sandbox/clock/advance"))
        .json(&json!({"seconds": 3_600}))
        .send()
        .await
        .ok();
    let offset2 = hour["offset_seconds"].as_i64().unwrap();
    assert!(
        (offset + 3_600..=offset + 3_601).contains(&offset2),
        "{hour}"
    );
    let back = op(app.post("/_sandbox/clock/advance"))
        .json(&json!({"to": signage::time::rfc3339(wall())}))
        .send()
        .await
        .problem(409);
    assert_eq!(back["code"], "clock_backwards");
    let after = op(app.get("/_sandbox/clock")).send().await.ok();
    assert!(
        after["offset_seconds"].as_i64().unwrap() >= offset2,
        "{after}"
    );
}

#[tokio::test]
async fn what_an_advance_makes_happen_is_the_sandbox_s_doing() {
    let app = TestApp::spawn().await;
    let newest = |page: &serde_json::Value| page["data"][0]["id"].as_str().map(String::from);
    let before = app
        .get("/events?limit=1")
        .key("northwind-admin")
        .send()
        .await
        .ok();
    let day = app
        .post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": 86_400}))
        .send()
        .await
        .ok();
    let produced: u64 = day["events"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert!(
        produced > 0,
        "a day of the demo world produces events: {day}"
    );
    let events = app.collect_all("/events", "northwind-admin", 100).await;
    let stop = newest(&before);
    let fresh: Vec<_> = events
        .iter()
        .take_while(|e| Some(e["id"].as_str().unwrap().to_string()) != stop)
        .collect();
    assert!(!fresh.is_empty());
    for e in &fresh {
        assert_eq!(e["via"], "sandbox", "{e}");
        assert!(e["actor"].is_null(), "{e}");
        let expected = match e["resource_type"].as_str() {
            Some("device") => "simulated fleet",
            Some("qr_code") => "simulated scans",
            _ => "sandbox clock",
        };
        // Named for people: the object's name, not only its id.
        if e["resource_type"] == "device" || e["resource_type"] == "qr_code" {
            assert!(
                e["resource_name"].as_str().is_some_and(|n| !n.is_empty()),
                "{e}"
            );
        }
        assert_eq!(e["actor_name"], expected, "{e}");
    }
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
