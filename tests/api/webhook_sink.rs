//! Tests: the built-in receiver `/_sandbox/sink/{name}`. The demo world's enabled webhooks deliver
//! to it and succeed from the start; it keeps only deliveries a webhook pointing at it signed, for
//! that webhook's account, the newest first. Its URL is the one
//! loopback target allowed when private targets are refused, and only for this purpose.

use crate::helpers::{company_id, TestApp};
use crate::sandbox_clock::frozen_without_fleet;
use crate::webhook_delivery::{deliveries, edit_ad};
use serde_json::{json, Value};

async fn drain(app: &TestApp) {
    let r = app
        .post("/_sandbox/webhooks/drain")
        .key("sandbox-operator")
        .json(&json!({}))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
}

async fn sink(app: &TestApp, name: &str) -> Vec<Value> {
    let r = app
        .get(&format!("/_sandbox/sink/{name}"))
        .key("sandbox-operator")
        .send()
        .await
        .ok();
    assert_eq!(r["sink"], name);
    r["data"].as_array().unwrap().clone()
}

#[tokio::test]
async fn the_demo_worlds_webhooks_deliver_to_the_sink_verified_from_the_start() {
    let app = frozen_without_fleet().await;
    let grocers_hook: String = app.sql(|c| {
        c.query_row(
            "SELECT id FROM webhooks WHERE company_id = ?1",
            [company_id("Northwind Grocers")],
            |r| r.get(0),
        )
    });
    let shown = app
        .get(&format!("/webhooks/{grocers_hook}"))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert_eq!(
        shown["url"],
        "http://127.0.0.1:0/_sandbox/sink/northwind-grocers"
    );
    assert!(sink(&app, "northwind-grocers").await.is_empty());
    edit_ad(&app).await;
    edit_ad(&app).await;
    drain(&app).await;
    let got = sink(&app, "northwind-grocers").await;
    assert_eq!(got.len(), 2);
    for d in &got {
        assert_eq!(d["object"], "sandbox_sink_delivery");
        assert_eq!(d["event_type"], "ad.updated");
        assert_eq!(d["verification"]["verified"], true, "{d}");
        assert_eq!(d["verification"]["webhook_id"], grocers_hook.as_str());
        assert_eq!(d["body"]["type"], "ad.updated");
        assert_eq!(d["body"]["id"], d["webhook_id_header"]);
        assert_eq!(d["headers"]["content-type"], "application/json");
    }
    // Newest first.
    assert!(got[0]["id"].as_str() > got[1]["id"].as_str());
    // The delivery log shows success: the sink answers 204.
    let log = deliveries(&app, &grocers_hook).await;
    assert_eq!(log.len(), 2);
    assert!(log
        .iter()
        .all(|d| d["status"] == "succeeded" && d["attempts"][0]["http_status"] == 204));
    // A rotation: deliveries signed with both secrets still verify.
    app.post(&format!("/webhooks/{grocers_hook}/rotate-secret"))
        .key("northwind-admin")
        .json(&json!({}))
        .send()
        .await;
    edit_ad(&app).await;
    drain(&app).await;
    let got = sink(&app, "northwind-grocers").await;
    assert_eq!(got[0]["verification"]["verified"], true, "{}", got[0]);
    // Emptied on request; other sinks are untouched.
    app.delete("/_sandbox/sink/northwind-grocers")
        .key("sandbox-operator")
        .send()
        .await;
    assert!(sink(&app, "northwind-grocers").await.is_empty());
}

/// A signed delivery to `sink`, as the webhook with `secret` would send it (wall-clock stamped).
async fn post_signed(app: &TestApp, sink: &str, secret: &str, id: &str, body: &str) -> u16 {
    let ts = signage::http::observe::wall_millis() / 1000;
    let sig = signage::webhooks::sign::header(&[secret.to_string()], id, ts, body.as_bytes());
    app.post(&format!("/_sandbox/sink/{sink}"))
        .header("webhook-id", id)
        .header("webhook-timestamp", &ts.to_string())
        .header("webhook-signature", &sig)
        .raw("application/json", body.to_string())
        .send()
        .await
        .status
        .as_u16()
}

fn secret_of(app: &TestApp, hook: &str) -> String {
    app.sql(|c| {
        c.query_row("SELECT secret FROM webhooks WHERE id = ?1", [hook], |r| {
            r.get(0)
        })
    })
}

fn grocers_hook(app: &TestApp) -> String {
    app.sql(|c| {
        c.query_row(
            "SELECT id FROM webhooks WHERE company_id = ?1",
            [company_id("Northwind Grocers")],
            |r| r.get(0),
        )
    })
}

/// The sink answers like a careful receiver: a delivery that is not signed by a webhook pointing
/// at it (forged, tampered, unsigned, stale, from the future) is refused with 400 and a code, and
/// kept nowhere; 101 junk posts leave a tenant's sink as it was (issue 31 §4).
#[tokio::test]
async fn a_forged_or_foreign_delivery_is_refused_and_kept_nowhere() {
    let app = frozen_without_fleet().await;
    edit_ad(&app).await;
    drain(&app).await;
    let before = sink(&app, "northwind-grocers").await;
    assert_eq!(before.len(), 1);
    let real = &before[0];
    let refused = |r: crate::helpers::TestResponse, code: &str| {
        assert_eq!(r.problem(400)["code"], code, "{}", r.text());
    };
    // Nobody's delivery: no webhook signs with this secret.
    refused(
        app.post("/_sandbox/sink/northwind-grocers")
            .header("webhook-id", "evt_forged")
            .header(
                "webhook-timestamp",
                &(signage::http::observe::wall_millis() / 1000).to_string(),
            )
            .header("webhook-signature", "v1,AAAA")
            .raw("application/json", r#"{"type":"ad.updated"}"#)
            .send()
            .await,
        "signature_mismatch",
    );
    // A real delivery's headers on a tampered body.
    refused(
        app.post("/_sandbox/sink/northwind-grocers")
            .header("webhook-id", real["webhook_id_header"].as_str().unwrap())
            .header(
                "webhook-timestamp",
                real["webhook_timestamp"].as_str().unwrap(),
            )
            .header(
                "webhook-signature",
                real["headers"]["webhook-signature"].as_str().unwrap(),
            )
            .raw(
                "application/json",
                r#"{"type":"ad.updated","tampered":true}"#,
            )
            .send()
            .await,
        "signature_mismatch",
    );
    refused(
        app.post("/_sandbox/sink/northwind-grocers")
            .raw("text/plain", "hello")
            .send()
            .await,
        "missing_signature",
    );
    // Signed with the right secret, but stale or from the future.
    let secret = secret_of(&app, &grocers_hook(&app));
    for skew in [-601i64, 601] {
        let ts = signage::http::observe::wall_millis() / 1000 + skew;
        let body = r#"{"type":"ad.updated"}"#;
        let sig = signage::webhooks::sign::header(
            std::slice::from_ref(&secret),
            "evt_skew",
            ts,
            body.as_bytes(),
        );
        refused(
            app.post("/_sandbox/sink/northwind-grocers")
                .header("webhook-id", "evt_skew")
                .header("webhook-timestamp", &ts.to_string())
                .header("webhook-signature", &sig)
                .raw("application/json", body)
                .send()
                .await,
            "timestamp_out_of_tolerance",
        );
    }
    // A flood of junk does not flush the tenant's sink.
    for n in 0..101 {
        let r = app
            .post("/_sandbox/sink/northwind-grocers")
            .raw("application/json", format!("{{\"n\":{n}}}"))
            .send()
            .await;
        assert_eq!(r.status, 400);
    }
    let after = sink(&app, "northwind-grocers").await;
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0]["id"], real["id"]);
    // A bad name is 404.
    app.post("/_sandbox/sink/Bad.Name")
        .raw("application/json", "{}")
        .send()
        .await
        .problem(404);
}

/// Deliveries are kept per account: two accounts whose webhooks point at one sink name each see
/// their own; a company-scoped key sees its company's; reading needs `webhooks:read`, emptying
/// `webhooks:write`, and empties only the caller's part. The same `webhook-id` twice is 204 both
/// times (a careful receiver), marked `duplicate`.
#[tokio::test]
async fn a_sink_belongs_to_the_accounts_whose_webhooks_deliver_to_it() {
    let app = frozen_without_fleet().await;
    let mut hooks = Vec::new();
    for (who, company) in [
        ("northwind-admin", "Northwind Pharmacy"),
        ("harborview-admin", "Harborview Hotels"),
    ] {
        let hook = app
            .post("/webhooks")
            .key(who)
            .json(&json!({"company_id": company_id(company),
                "url": "http://127.0.0.1:0/_sandbox/sink/shared", "event_types": ["ad.updated"]}))
            .send()
            .await
            .ok();
        hooks.push((
            hook["id"].as_str().unwrap().to_string(),
            hook["secret"].as_str().unwrap().to_string(),
        ));
    }
    assert_eq!(
        post_signed(
            &app,
            "shared",
            &hooks[0].1,
            "evt_n1",
            r#"{"type":"ad.updated","who":"northwind"}"#
        )
        .await,
        204
    );
    assert_eq!(
        post_signed(
            &app,
            "shared",
            &hooks[0].1,
            "evt_n1",
            r#"{"type":"ad.updated","who":"northwind"}"#
        )
        .await,
        204
    );
    assert_eq!(
        post_signed(
            &app,
            "shared",
            &hooks[1].1,
            "evt_h1",
            r#"{"type":"ad.updated","who":"harborview"}"#
        )
        .await,
        204
    );
    let read = |who: &'static str| {
        let app = &app;
        async move {
            let r = app.get("/_sandbox/sink/shared").key(who).send().await;
            r.ok()["data"].as_array().unwrap().clone()
        }
    };
    let northwind = read("northwind-readonly").await;
    assert_eq!(northwind.len(), 2, "{northwind:?}");
    assert!(northwind.iter().all(|d| d["body"]["who"] == "northwind"));
    assert_eq!(northwind[0]["duplicate"], true);
    assert_eq!(northwind[1]["duplicate"], false);
    assert_eq!(
        northwind[0]["verification"]["webhook_id"],
        hooks[0].0.as_str()
    );
    let harborview = read("harborview-readwrite").await;
    assert_eq!(harborview.len(), 1);
    assert_eq!(harborview[0]["body"]["who"], "harborview");
    // Northwind's Grocers-only key sees none of Pharmacy's deliveries.
    assert!(read("northwind-grocers-write").await.is_empty());
    assert_eq!(read("sandbox-operator").await.len(), 3);
    // A key without webhooks:read is refused; a read key may not empty it.
    app.get("/_sandbox/sink/shared")
        .key("harborview-hotels-billing")
        .send()
        .await
        .problem(403);
    app.delete("/_sandbox/sink/shared")
        .key("northwind-readonly")
        .send()
        .await
        .problem(403);
    let r = app
        .delete("/_sandbox/sink/shared")
        .key("northwind-admin")
        .send()
        .await;
    assert_eq!(r.status, 204);
    assert!(read("northwind-readonly").await.is_empty());
    assert_eq!(read("harborview-readwrite").await.len(), 1);
}

#[tokio::test]
async fn a_sink_keeps_the_newest_hundred() {
    let app = frozen_without_fleet().await;
    let secret = secret_of(&app, &grocers_hook(&app));
    for n in 0..105 {
        let status = post_signed(
            &app,
            "northwind-grocers",
            &secret,
            &format!("evt_bound{n}"),
            &format!("{{\"n\":{n}}}"),
        )
        .await;
        assert_eq!(status, 204);
    }
    let got = sink(&app, "northwind-grocers").await;
    assert_eq!(got.len(), 100);
    assert_eq!(got[0]["body"]["n"], 104);
    assert_eq!(got[99]["body"]["n"], 5);
}

#[tokio::test]
async fn the_sink_is_the_only_loopback_target_when_private_targets_are_refused() {
    let app = TestApp::spawn_with(|l| {
        l.webhook_allow_private_targets = Some(false);
        l.sandbox_simulate_fleet = Some(false);
    })
    .await;
    let create = |url: &'static str| {
        let app = &app;
        async move {
            app.post("/webhooks")
                .key("northwind-admin")
                .json(
                    &json!({"company_id": company_id("Northwind Pharmacy"), "url": url,
                    "event_types": ["ad.updated"]}),
                )
                .send()
                .await
        }
    };
    let r = create("http://127.0.0.1:0/_sandbox/sink/pharmacy").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let hook = r.json()["id"].as_str().unwrap().to_string();
    for url in [
        "http://127.0.0.1:0/_sandbox/clock",
        "http://127.0.0.1:0/_sandbox/sink/pharmacy/../../clock",
        "http://127.0.0.1:0/_sandbox/sink/pharmacy?x=1",
        "http://127.0.0.1:9/_sandbox/sink/pharmacy",
        "http://localhost:0/admin",
    ] {
        let p = create(url).await.problem(422);
        assert_eq!(p["errors"][0]["field"], "/url", "{url}");
    }
    // And it delivers there.
    let ad: String = app.sql(|c| {
        c.query_row(
            "SELECT id FROM ads WHERE company_id = ?1 ORDER BY id LIMIT 1",
            [company_id("Northwind Pharmacy")],
            |r| r.get(0),
        )
    });
    app.patch(&format!("/ads/{ad}"))
        .key("northwind-admin")
        .json(&json!({"headline": "Sink"}))
        .send()
        .await
        .ok();
    drain(&app).await;
    let got = sink(&app, "pharmacy").await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["verification"]["webhook_id"], hook.as_str());
}
