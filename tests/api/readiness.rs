//! The readiness report, graded from what two scripted clients actually did: a *good* one (waits
//! out `Retry-After`, backs off exponentially, reuses idempotency keys, walks cursors to the end,
//! sends `If-Match`, adopts a rotated key, and runs receivers that verify signatures and
//! timestamps, the demo world's built-in sink among them) is `ready`; a *careless* one fails
//! exactly the checks it breaks, each naming the requests that show it. Drills go to real
//! receivers over HTTP; the CLI and JUnit print the same report. The scenarios of each row and
//! bullet of issue 29 are in the sibling modules `readiness_*`.

use crate::helpers::{company_id, key, TestApp};
use crate::readiness_client::{
    check, create_with_retries, evidence, fail_creates, report, rid, Backoff, Rng, OP,
};
use crate::readiness_receiver::Receiver;
use crate::sandbox_clock::FROZEN_AT;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

async fn frozen() -> TestApp {
    TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.sandbox_simulate_fleet = Some(false);
    })
    .await
}

pub async fn drill(app: &TestApp, webhook: &str, kind: &str) -> Value {
    let r = app
        .post(&format!("/_sandbox/webhooks/{webhook}/drills"))
        .key(OP)
        .json(&json!({"kind": kind}))
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

/// Every drill kind but the rotation, which needs a rotation in progress.
pub const PLAIN_DRILLS: [&str; 6] = [
    "duplicate",
    "out_of_order",
    "bad_signature",
    "missing_signature",
    "stale_timestamp",
    "future_timestamp",
];

/// Drills webhook `id` with every kind, rotating its secret (as `admin`) before the rotation
/// drill; `knows` learns the new secret. The drills by kind.
pub async fn drill_every_kind(
    app: &TestApp,
    id: &str,
    admin: &str,
    knows: impl Fn(&str),
) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for kind in PLAIN_DRILLS {
        out.insert(kind.to_string(), drill(app, id, kind).await);
    }
    // Rotation: refused until a rotation is in progress (a webhook may be in one already).
    let r = app
        .post(&format!("/_sandbox/webhooks/{id}/drills"))
        .key(OP)
        .json(&json!({"kind": "rotation"}))
        .send()
        .await;
    if r.status == 201 {
        out.insert("rotation".into(), r.json());
        return out;
    }
    assert_eq!(r.problem(409)["code"], "no_rotation_in_progress");
    let rotated = app
        .post(&format!("/webhooks/{id}/rotate-secret"))
        .key(admin)
        .header("idempotency-key", &format!("rotate-{id}"))
        .send()
        .await;
    // The answer holds the new secret: shown once, never replayed.
    let rotated = rotated.ok();
    knows(rotated["secret"].as_str().unwrap());
    out.insert("rotation".into(), drill(app, id, "rotation").await);
    out
}

/// Creates a webhook to `receiver` (with an idempotency key, as a good client does) and drills
/// it with every kind; returns the drills by kind.
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
    drill_every_kind(app, &id, "northwind-admin", |s| receiver.knows(s)).await
}

/// The demo world's enabled webhooks of Northwind (they deliver to the built-in sink).
fn demo_hooks(app: &TestApp) -> Vec<String> {
    app.sql(|c| {
        let mut s = c.prepare(
            "SELECT w.id FROM webhooks w JOIN companies c ON c.id = w.company_id
             WHERE c.account_id = ?1 AND w.enabled = 1 AND w.url LIKE '%/_sandbox/sink/%'
             ORDER BY w.id",
        )?;
        let rows = s.query_map([key("northwind-admin").account_id], |r| r.get(0))?;
        rows.collect()
    })
}

pub const CHECKS: [&str; 14] = [
    "retries_transient_errors",
    "retry_after_respected",
    "backs_off_on_5xx",
    "idempotency_keys_on_create",
    "pagination_walked",
    "conditional_updates",
    "webhook_signatures_verified",
    "webhook_stale_timestamp_rejected",
    "webhook_duplicates_tolerated",
    "webhook_out_of_order_tolerated",
    "webhook_rotation_accepted",
    "webhook_responds_fast",
    "rotated_key_adopted",
    "polling_reasonable",
];

#[tokio::test]
async fn a_good_client_is_ready() {
    let app = frozen().await;
    let receiver = Receiver::start(true).await;
    let rw = "northwind-readwrite";

    // Walks a list by cursor, to the end.
    let devices = app.collect_all("/devices", rw, 2).await;
    assert!(devices.len() > 2);

    // A create that meets an injected 503 with Retry-After: waits it out, same key.
    fail_creates(&app, 503, Some(3), 1).await;
    let spring = create_with_retries(
        &app,
        rw,
        &crate::readiness_client::ad("Spring"),
        Some("spring-ad"),
        Backoff::RetryAfterThenJitter { base_ms: 100 },
        &mut Rng::new(1),
        4,
    )
    .await;
    assert_eq!(spring.last().unwrap().status, 201);
    // Three 500s: exponential back-off with equal jitter, same key.
    fail_creates(&app, 500, None, 3).await;
    let mut waits = Rng::new(2);
    let mut answers = Vec::new();
    for n in 0..5u32 {
        let r = app
            .post("/ads")
            .key(rw)
            .header("idempotency-key", "summer-ad")
            .json(&crate::readiness_client::ad("Summer"))
            .send()
            .await;
        let done = r.status == 201;
        answers.push(r.status.as_u16());
        if done {
            break;
        }
        let half = 100u64 << n;
        tokio::time::sleep(Duration::from_millis(half + waits.below(half))).await;
    }
    assert_eq!(answers, [500, 500, 500, 201]);
    let ad = spring.last().unwrap().json();
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

    // Its own receiver, and the demo world's built-in sink: every enabled webhook drilled.
    let drills = drill_all(&app, &receiver, true).await;
    for (kind, d) in &drills {
        assert_eq!(d["verdict"], "pass", "{kind}: {d}");
        assert!(d["id"].as_str().unwrap().starts_with("drl_"));
    }
    assert_eq!(
        drills["duplicate"]["attempts"][0]["webhook_id"],
        drills["duplicate"]["attempts"][1]["webhook_id"]
    );
    for kind in [
        "bad_signature",
        "missing_signature",
        "stale_timestamp",
        "future_timestamp",
    ] {
        assert_eq!(drills[kind]["attempts"][0]["status"], 401, "{kind}");
    }
    for hook in demo_hooks(&app) {
        let sink = drill_every_kind(&app, &hook, "northwind-admin", |_| {}).await;
        for (kind, d) in &sink {
            assert_eq!(d["verdict"], "pass", "the built-in sink, {kind}: {d}");
        }
        // The sink refuses like a careful receiver: 400 to a bad, missing, stale or future one.
        assert_eq!(sink["bad_signature"]["attempts"][0]["status"], 400);
        assert_eq!(sink["missing_signature"]["attempts"][0]["status"], 400);
    }

    let r = report(&app).await;
    for c in r["checks"].as_array().unwrap() {
        assert_eq!(c["status"], "pass", "{c}");
        assert_eq!(c["advice"], "");
        assert!(
            !c["evidence"].as_array().unwrap().is_empty(),
            "a pass shows its evidence: {c}"
        );
    }
    assert_eq!(r["verdict"], "ready", "{r}");
    assert_eq!(r["object"], "readiness_report");
    let ids: Vec<&str> = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, CHECKS);
    // The account's own admin reads the same report, in JSON and in JUnit.
    let own = app
        .get("/readiness")
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert_eq!(own["verdict"], "ready", "{own}");
    let xml = app
        .get("/readiness?format=junit")
        .key("northwind-admin")
        .send()
        .await;
    assert_eq!(
        xml.header("content-type"),
        Some("application/xml; charset=utf-8")
    );
    let xml = xml.text();
    assert!(xml.contains("failures=\"0\""), "{xml}");
    assert!(!xml.contains("<failure"), "{xml}");
    assert_eq!(check(&r, "conditional_updates")["required"], false);
}

#[tokio::test]
async fn a_careless_client_fails_exactly_the_checks_it_breaks() {
    let app = frozen().await;
    let receiver = Receiver::start(false).await;
    let rw = "northwind-readwrite";

    // Asks for a bigger page instead of following the cursor.
    let first = app.get("/devices?limit=2").key(rw).send().await;
    assert_eq!(first.json()["has_more"], true);
    let bigger = app.get("/devices?limit=100").key(rw).send().await;

    // Retries a 503 with Retry-After at once, without a key.
    fail_creates(&app, 503, Some(3), 1).await;
    let body = crate::readiness_client::ad("Spring");
    let a = app.post("/ads").key(rw).json(&body).send().await;
    assert_eq!(a.status, 503);
    let b = app.post("/ads").key(rw).json(&body).send().await;
    assert_eq!(b.status, 201);
    // Hammers four 500s in a tight loop.
    fail_creates(&app, 500, None, 4).await;
    let loop_answers = create_with_retries(
        &app,
        rw,
        &crate::readiness_client::ad("Summer"),
        None,
        Backoff::Immediate,
        &mut Rng::new(0),
        6,
    )
    .await;
    assert_eq!(loop_answers.len(), 5);
    let ad_id = b.json()["id"].as_str().unwrap().to_string();

    // Overwrites without If-Match.
    let patch = app
        .patch(&format!("/ads/{ad_id}"))
        .key(rw)
        .json(&json!({"headline": "New"}))
        .send()
        .await;
    patch.ok();

    // Forgets its credential on a request: nobody's request, no check reads it.
    app.get("/ads")
        .header("x-service-client-id", &key(rw).client_id)
        .send()
        .await
        .problem(401);

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
    for kind in [
        "bad_signature",
        "missing_signature",
        "stale_timestamp",
        "future_timestamp",
    ] {
        assert_eq!(drills[kind]["verdict"], "fail", "{kind}");
        assert_eq!(drills[kind]["attempts"][0]["status"], 200, "{kind}");
    }

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
        } else if c["id"].as_str().unwrap().starts_with("webhook_") {
            // The demo world's sink was never drilled here: those checks wait for it.
            assert!(
                c["status"] == "not_observed" || c["status"] == "pass",
                "{c}"
            );
        }
    }
    // Each failure names the requests (or drills) that show it.
    assert_eq!(
        evidence(&r, "retry_after_respected"),
        [rid(&a), rid(&b)].into()
    );
    let backoff = evidence(&r, "backs_off_on_5xx");
    assert!(
        loop_answers.iter().all(|x| backoff.contains(&rid(x))),
        "{backoff:?}"
    );
    let idem = evidence(&r, "idempotency_keys_on_create");
    for x in [&a, &b] {
        assert!(idem.contains(&rid(x)), "{idem:?}");
    }
    assert_eq!(
        evidence(&r, "pagination_walked"),
        [rid(&first), rid(&bigger)].into()
    );
    assert_eq!(evidence(&r, "conditional_updates"), [rid(&patch)].into());
    assert_eq!(
        evidence(&r, "webhook_signatures_verified"),
        [
            drills["bad_signature"]["id"].as_str().unwrap().to_string(),
            drills["missing_signature"]["id"]
                .as_str()
                .unwrap()
                .to_string()
        ]
        .into()
    );
    assert!(evidence(&r, "rotated_key_adopted").contains(&rid(&late)));
    let polled = evidence(&r, "polling_reasonable");
    assert!(
        polled.len() > 10 && polled.iter().all(|p| polls.contains(p)),
        "{polled:?}"
    );
    assert!(r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["id"] != "authenticates_every_request"));
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
