//! An advance writes in one transaction (`Scoped::write_scope`; in slices by default, one with
//! `sandbox.advance_slice_rows = 0`): tries to break it. A failure halfway
//! leaves nothing of the run, a REST write made meanwhile is not lost, and a webhook attempt made
//! on the way never reaches its receiver before its event and delivery rows have committed.

use crate::helpers::{company_id, TestApp};
use crate::sandbox_clock::{frozen, FROZEN_AT};
use crate::sandbox_timeline::DAY;
use crate::webhook_delivery::{hook, quiet_fixture_hooks};
use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

/// The rows an advance of the demo fleet writes, and the state it keeps.
const WORLD: [&str; 10] = [
    "playbacks",
    "qr_scans",
    "qr_codes",
    "events",
    "devices",
    "device_simulations",
    "fleet_simulation",
    "playback_errors",
    "webhook_deliveries",
    "cache_generations",
];

/// Seeded, frozen, and writing a whole advance in one transaction (`sandbox.advance_slice_rows =
/// 0`; by default an advance commits in slices, each of which a failure leaves in place).
async fn seeded() -> TestApp {
    TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.sandbox_seed = Some(11);
        l.sandbox_advance_slice_rows = Some(0);
    })
    .await
}

async fn post_advance(app: &TestApp, body: Value) -> crate::helpers::TestResponse {
    app.post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&body)
        .send()
        .await
}

#[tokio::test]
async fn a_failure_halfway_through_an_advance_leaves_nothing_of_it() {
    let app = seeded().await;
    let before = app.dump_tables(&WORLD);
    // The first playback error of a failing screen falls due hours into the day, after the fleet,
    // the scans and the presence checks have written steps of it: refusing it fails the run there.
    app.sql(|c| {
        c.execute_batch(
            "CREATE TRIGGER refuse_errors BEFORE INSERT ON playback_errors
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
        )
    });
    let failed = post_advance(&app, json!({"seconds": DAY})).await;
    assert!(
        failed.status.is_server_error(),
        "{} {}",
        failed.status,
        failed.text()
    );
    assert_eq!(
        app.dump_tables(&WORLD),
        before,
        "a failed advance kept part of its run"
    );
    let clock = app
        .get("/_sandbox/clock")
        .key("sandbox-operator")
        .send()
        .await
        .ok();
    assert_eq!(
        clock["now"], "2026-03-02T09:00:00Z",
        "the frozen clock went back"
    );

    // With the failure gone the same day runs as on a sandbox that never failed: same answer,
    // same rows (but for ids: the failed run's draws are not taken back), the simulated scans'
    // mark put back with the rows.
    app.sql(|c| c.execute_batch("DROP TRIGGER refuse_errors"));
    let other = seeded().await;
    let again = post_advance(&app, json!({"seconds": DAY})).await.ok();
    let expected = post_advance(&other, json!({"seconds": DAY})).await.ok();
    assert_eq!(again, expected);
    assert!(again["transitions"]["qr_code.simulated_scan"].as_u64() > Some(0));
    let rows = |app: &TestApp| -> String {
        app.sql(|c| {
            let mut out = String::new();
            for sql in [
                "SELECT device_id, ad_id, source, started_at, duration_seconds, plays, created_at
                 FROM playbacks ORDER BY rowid",
                "SELECT qr_code_id, scanned_at, agent_class FROM qr_scans ORDER BY rowid",
                "SELECT device_id, ad_id, code, occurred_at FROM playback_errors ORDER BY rowid",
                "SELECT type, resource_id, created_at FROM events ORDER BY rowid",
                "SELECT * FROM device_simulations ORDER BY device_id",
                "SELECT id, last_heartbeat_at, presence, current_ad_id FROM devices ORDER BY id",
            ] {
                let mut stmt = c.prepare(sql)?;
                let n = stmt.column_count();
                let mut rows = stmt.query([])?;
                while let Some(r) = rows.next()? {
                    for i in 0..n {
                        out.push_str(&format!("{:?}|", r.get_ref(i)?));
                    }
                    out.push('\n');
                }
            }
            Ok(out)
        })
    };
    let (mine, theirs) = (rows(&app), rows(&other));
    assert!(
        mine == theirs,
        "the rows of the day differ after the failed run"
    );
}

#[tokio::test]
async fn a_rest_write_made_during_an_advance_is_kept() {
    let app = frozen().await;
    let company = company_id("Northwind Grocers");
    let running = post_advance(&app, json!({"seconds": 2 * DAY}));
    let writes = async {
        let mut made = Vec::new();
        for i in 0..8 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            let r = app
                .post("/ads")
                .key("northwind-readwrite")
                .json(&json!({"company_id": company, "name": format!("During {i}"), "headline": "Meanwhile"}))
                .send()
                .await;
            assert_eq!(r.status, 201, "{}", r.text());
            made.push(r.json()["id"].as_str().unwrap().to_string());
        }
        made
    };
    let (advanced, made) = tokio::join!(running, writes);
    assert_eq!(advanced.status, 200, "{}", advanced.text());
    for id in made {
        let ad = app
            .get(&format!("/ads/{id}"))
            .key("northwind-readonly")
            .send()
            .await
            .ok();
        assert_eq!(ad["headline"], "Meanwhile");
    }
}

/// What the receiver saw at each request: (webhook-id, its event committed, its delivery committed).
type Seen = Arc<Mutex<Vec<(String, bool, bool)>>>;

/// A receiver that, as each request arrives, looks for its event and delivery through a
/// connection of its own (which sees committed rows only), and answers 500 to the first `fail`.
async fn checking_receiver(app: &TestApp, fail: usize) -> (String, Seen) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Seen = Arc::default();
    let (db_app, shared) = (Arc::clone(&app.app), Arc::clone(&seen));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (db_app, seen) = (Arc::clone(&db_app), Arc::clone(&shared));
            tokio::spawn(async move {
                let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let (db_app, seen) = (Arc::clone(&db_app), Arc::clone(&seen));
                    async move {
                        let id = req
                            .headers()
                            .get("webhook-id")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("")
                            .to_string();
                        let conn = db_app.db.detached().unwrap();
                        let count = |sql: &str| -> bool {
                            conn.query_row(sql, [&id], |r| r.get::<_, i64>(0)).unwrap() > 0
                        };
                        let event = count("SELECT count(*) FROM events WHERE id = ?1");
                        let delivery =
                            count("SELECT count(*) FROM webhook_deliveries WHERE event_id = ?1");
                        let status = {
                            let mut seen = seen.lock().unwrap();
                            seen.push((id, event, delivery));
                            if seen.len() <= fail {
                                500
                            } else {
                                200
                            }
                        };
                        Ok::<_, Infallible>(
                            hyper::Response::builder()
                                .status(status)
                                .body(Full::new(Bytes::new()))
                                .unwrap(),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (format!("http://127.0.0.1:{port}/hook"), seen)
}

#[tokio::test]
async fn a_webhook_sent_during_an_advance_never_precedes_its_commit() {
    let app = frozen().await;
    quiet_fixture_hooks(&app);
    // The first two attempts fail: their retries fall due on the way and the advance sends them
    // itself, each at its instant.
    let (url, seen) = checking_receiver(&app, 2).await;
    hook(
        &app,
        &url,
        &["device.offline", "device.online", "qr_code.scanned"],
    )
    .await;
    for body in [
        json!({"seconds": DAY}),
        json!({"seconds": DAY, "drain": true}),
    ] {
        let r = post_advance(&app, body).await;
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let drained = app
        .post("/_sandbox/webhooks/drain")
        .key("sandbox-operator")
        .send()
        .await
        .ok();
    assert_eq!(drained["object"], "sandbox_webhook_drain");
    let seen = seen.lock().unwrap().clone();
    assert!(seen.len() > 2, "the advances sent nothing: {seen:?}");
    for (id, event, delivery) in &seen {
        assert!(
            *event && *delivery,
            "{id} reached its receiver before its rows committed"
        );
    }
    let retried = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM webhook_deliveries WHERE attempts > 1",
            [],
            |r| r.get::<_, i64>(0),
        )
    });
    assert!(retried > 0, "no retry was sent on the way");
}
