//! Tests: payloads equal the documentation. Every event type is documented once (`GET
//! /webhook-event-types` and the OpenAPI document's `webhooks`, the same schema and example), its
//! example matches its schema, every type is emitted through real transitions (scripted REST
//! writes and clock advances on a frozen sandbox, and each area's plain create, update and delete
//! replayed from the document's request examples) and each delivered body matches the documented
//! schema; the book's example (docs/src/webhooks.md) is the catalogue's.
//! `device.offline`/`device.online` carry the device as `GET /devices/{id}` shows it.

use crate::helpers::{company_id, TestApp};
use crate::sandbox_clock::FROZEN_AT;
use crate::schemas::{resolve, Checker};
use crate::webhook_delivery::quiet_fixture_hooks;
use crate::webhook_receiver::{Received, Receiver};
use hyper::Method;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The delivery-body schema of `event_type` in the OpenAPI document, `$ref`s resolved.
pub fn body_schema(doc: &Value, event_type: &str) -> Value {
    let op = &doc["webhooks"][event_type]["post"];
    assert!(
        op.is_object(),
        "{event_type} is not in the document's webhooks"
    );
    resolve(
        doc,
        &op["requestBody"]["content"]["application/json"]["schema"],
        0,
    )
}

pub async fn openapi(app: &TestApp) -> Value {
    app.get("/openapi.json").send().await.ok()
}

/// A 2xx answer's body (null for a 204).
async fn op(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> Value {
    let mut req = app.request(method.clone(), path).key("northwind-admin");
    if let Some(b) = &body {
        req = req.json(b);
    }
    let r = req.send().await;
    assert!(
        r.status.is_success(),
        "{method} {path}: {} {}",
        r.status,
        r.text()
    );
    if r.status == 204 {
        Value::Null
    } else {
        r.json()
    }
}

async fn advance_drained(app: &TestApp, body: Value) -> Value {
    let mut body = body;
    body["drain"] = json!(true);
    let r = app
        .post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&body)
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

async fn drain(app: &TestApp) -> Value {
    let r = app
        .post("/_sandbox/webhooks/drain")
        .key("sandbox-operator")
        .json(&json!({}))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn rfc(at: i64) -> String {
    signage::time::rfc3339(at)
}

#[tokio::test]
async fn every_type_is_documented_once_with_an_example_that_matches_its_schema() {
    let app = TestApp::spawn().await;
    let doc = openapi(&app).await;
    let listed = app
        .get("/webhook-event-types")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let listed = listed["data"].as_array().unwrap();
    let types: Vec<&str> = listed.iter().map(|t| t["type"].as_str().unwrap()).collect();
    assert_eq!(types, signage::events::EVENT_TYPES);
    assert_eq!(
        doc["webhooks"].as_object().unwrap().len(),
        signage::events::EVENT_TYPES.len()
    );
    let mut checker = Checker::new();
    for t in listed {
        let name = t["type"].as_str().unwrap();
        let op = &doc["webhooks"][name]["post"];
        let content = &op["requestBody"]["content"]["application/json"];
        // One schema and one example, in both places.
        assert_eq!(content["schema"], t["schema"], "{name}");
        assert_eq!(content["example"], t["example"], "{name}");
        let example = &t["example"];
        assert_eq!(example["type"], name);
        assert!(
            example["data"].get("example_error").is_none(),
            "{name}: {example}"
        );
        checker
            .check(example, &body_schema(&doc, name), name)
            .unwrap_or_else(|e| panic!("{name}'s example does not match its schema: {e}"));
    }
    // The device events carry the device: the example of `device.offline` shows an offline one.
    let offline = &listed
        .iter()
        .find(|t| t["type"] == "device.offline")
        .unwrap()["example"];
    assert_eq!(offline["data"]["object"], "device");
    assert_eq!(offline["data"]["status"], "offline");
    assert!(offline["data"]["company_id"]
        .as_str()
        .unwrap()
        .starts_with("cmp_"));
}

#[tokio::test]
async fn the_readmes_example_is_the_catalogues() {
    let app = TestApp::spawn().await;
    let listed = app
        .get("/webhook-event-types")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/webhooks.md"))
            .unwrap();
    let start = readme
        .find("<!-- example: device.offline -->")
        .expect("the book's webhooks page shows the example of device.offline");
    let block = &readme[start..];
    let json_start = block.find("```json\n").unwrap() + 8;
    let json_end = json_start + block[json_start..].find("```").unwrap();
    let shown: Value = serde_json::from_str(&block[json_start..json_end]).unwrap();
    let example = &listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "device.offline")
        .unwrap()["example"];
    assert_eq!(&shown, example);
}

#[tokio::test]
async fn device_offline_and_online_carry_the_device_as_its_get_shows_it() {
    let app = crate::sandbox_clock::frozen_without_fleet().await;
    quiet_fixture_hooks(&app);
    let doc = openapi(&app).await;
    let rx = Receiver::start().await;
    let (_, _) = crate::webhook_delivery::hook(
        &app,
        &rx.url("/presence"),
        &["device.offline", "device.online"],
    )
    .await;
    let grocers = company_id("Northwind Grocers");
    let dev = op(&app, Method::POST, "/devices", Some(json!({"company_id": grocers, "name": "Presence screen",
        "location": "Utrecht", "platform": "tizen", "orientation": "landscape", "resolution": "1920x1080"}))).await;
    let dev = dev["id"].as_str().unwrap().to_string();
    op(
        &app,
        Method::POST,
        &format!("/devices/{dev}/heartbeat"),
        Some(json!({})),
    )
    .await;
    advance_drained(&app, json!({"seconds": 301})).await;
    let offline: Vec<Received> = rx
        .received()
        .into_iter()
        .filter(|r| r.json()["type"] == "device.offline" && r.json()["data"]["id"] == dev)
        .collect();
    assert_eq!(offline.len(), 1);
    let body = offline[0].json();
    let shown = op(&app, Method::GET, &format!("/devices/{dev}"), None).await;
    assert_eq!(
        body["data"], shown,
        "the event's data is the device as GET shows it"
    );
    assert_eq!(body["data"]["status"], "offline");
    assert_eq!(body["data"]["last_heartbeat_at"], rfc(FROZEN_AT));
    assert!(body["data"].get("device_id").is_none());
    Checker::new()
        .check(
            &body,
            &body_schema(&doc, "device.offline"),
            "device.offline",
        )
        .unwrap();
    op(
        &app,
        Method::POST,
        &format!("/devices/{dev}/heartbeat"),
        Some(json!({})),
    )
    .await;
    drain(&app).await;
    let online: Vec<Value> = rx
        .received()
        .iter()
        .map(Received::json)
        .filter(|b| b["type"] == "device.online")
        .collect();
    assert_eq!(online.len(), 1);
    let shown = op(&app, Method::GET, &format!("/devices/{dev}"), None).await;
    assert_eq!(online[0]["data"], shown);
    assert_eq!(online[0]["data"]["status"], "online");
    Checker::new()
        .check(
            &online[0],
            &body_schema(&doc, "device.online"),
            "device.online",
        )
        .unwrap();
}

/// Every catalogued type, caused the way production causes it, delivered to one receiver that
/// subscribes to everything; each body must match its documented schema. The script causes the
/// events a plain create, update or delete does not; [`replay_crud`] causes the rest of
/// `<object>.created|updated|deleted`. A type neither caused fails here, by name.
#[tokio::test]
async fn every_type_emitted_by_real_transitions_matches_its_documented_schema() {
    let app = TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(Some(FROZEN_AT));
        l.sandbox_simulate_fleet = Some(false);
        l.webhook_disable_after_secs = Some(1);
    })
    .await;
    quiet_fixture_hooks(&app);
    let doc = openapi(&app).await;
    let rx = Receiver::start().await;
    let (hook, _) =
        crate::webhook_delivery::hook(&app, &rx.url("/all"), signage::events::EVENT_TYPES).await;
    let grocers = company_id("Northwind Grocers");
    let get = Method::GET;
    let post = Method::POST;
    let patch = Method::PATCH;
    let delete = Method::DELETE;
    let _ = get;

    // Screens: created, heartbeat, offline, online (`device.updated` is left to the replay of
    // plain creates, updates and deletes below, which so runs on every run).
    let dev = op(&app, post.clone(), "/devices", Some(json!({"company_id": grocers, "name": "Payload screen",
        "location": "Utrecht", "platform": "tizen", "orientation": "landscape", "resolution": "1920x1080"}))).await;
    let dev = dev["id"].as_str().unwrap().to_string();
    op(
        &app,
        post.clone(),
        &format!("/devices/{dev}/heartbeat"),
        Some(json!({"app_version": "1.2.3"})),
    )
    .await;
    advance_drained(&app, json!({"seconds": 301})).await;
    op(
        &app,
        post.clone(),
        &format!("/devices/{dev}/heartbeat"),
        Some(json!({})),
    )
    .await;

    // Ads: created, updated, assigned, a play, unassigned, deleted; then the screen goes.
    let media: String = app.sql(|c| {
        c.query_row(
            "SELECT id FROM media WHERE company_id = ?1 ORDER BY id LIMIT 1",
            [&grocers],
            |r| r.get(0),
        )
    });
    let ad = op(
        &app,
        post.clone(),
        "/ads",
        Some(json!({"company_id": grocers, "name": "Payload ad",
        "headline": "Fresh", "status": "active", "media_id": media, "duration_seconds": 30})),
    )
    .await;
    let ad_created = ad["created_at"].as_str().unwrap().to_string();
    let ad = ad["id"].as_str().unwrap().to_string();
    op(
        &app,
        patch.clone(),
        &format!("/ads/{ad}"),
        Some(json!({"headline": "Fresher"})),
    )
    .await;
    op(
        &app,
        post.clone(),
        &format!("/ads/{ad}/devices"),
        Some(json!({"device_id": dev})),
    )
    .await;
    op(
        &app,
        post.clone(),
        &format!("/devices/{dev}/playbacks"),
        // A play the player made once the ad existed (none may predate it).
        Some(json!({"ad_id": ad, "started_at": ad_created, "duration_seconds": 15})),
    )
    .await;
    op(
        &app,
        delete.clone(),
        &format!("/ads/{ad}/devices/{dev}"),
        None,
    )
    .await;
    op(&app, delete.clone(), &format!("/ads/{ad}"), None).await;
    op(&app, delete.clone(), &format!("/devices/{dev}"), None).await;

    // A promotion through its life, with a QR code scanned while it runs.
    let now = FROZEN_AT + 301;
    let promo = op(
        &app,
        post.clone(),
        "/promotions",
        Some(json!({"company_id": grocers, "name": "Payload promo",
        "description": "Every type.", "landing_url": "https://www.northwind-grocers.example/p",
        "discount_percent": 10, "activation_cost_tokens": 5,
        "starts_at": rfc(now + 60), "ends_at": rfc(now + 120)})),
    )
    .await;
    let promo = promo["id"].as_str().unwrap().to_string();
    op(
        &app,
        patch.clone(),
        &format!("/promotions/{promo}"),
        Some(json!({"name": "Payload promo 2"})),
    )
    .await;
    op(
        &app,
        post.clone(),
        &format!("/promotions/{promo}/activate"),
        None,
    )
    .await;
    let qr = op(
        &app,
        post.clone(),
        &format!("/promotions/{promo}/qr-codes"),
        Some(json!({})),
    )
    .await;
    advance_drained(&app, json!({"seconds": 61})).await;
    let scan = app
        .get(&format!("/q/{}", qr["code"].as_str().unwrap()))
        .send()
        .await;
    assert!(scan.status.as_u16() < 400, "{}", scan.status);
    advance_drained(&app, json!({"seconds": 60})).await;
    op(
        &app,
        post.clone(),
        &format!("/promotions/{promo}/deactivate"),
        None,
    )
    .await;
    op(
        &app,
        delete.clone(),
        &format!("/qr-codes/{}", qr["id"].as_str().unwrap()),
        None,
    )
    .await;

    // Media, tokens, branding.
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>"#.to_vec();
    let r = app
        .post(&format!("/media?company_id={grocers}&filename=p.svg"))
        .key("northwind-admin")
        .raw("image/svg+xml", svg)
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    op(
        &app,
        delete.clone(),
        &format!("/media/{}", r.json()["id"].as_str().unwrap()),
        None,
    )
    .await;
    op(
        &app,
        post.clone(),
        "/token-packs/tpk_0m5d4rusj5xe4we40hu5/purchase",
        Some(json!({"company_id": grocers})),
    )
    .await;
    op(
        &app,
        patch.clone(),
        &format!("/companies/{grocers}/branding"),
        Some(json!({"tagline": "Every type"})),
    )
    .await;

    // Webhooks: created, updated, tested, deleted; one that keeps failing is disabled.
    let failing = Receiver::start().await;
    failing.answer(&[500, 500, 500]);
    let (bad, _) = crate::webhook_delivery::hook(&app, &failing.url("/bad"), &["ad.updated"]).await;
    op(
        &app,
        patch.clone(),
        &format!("/webhooks/{bad}"),
        Some(json!({"description": "fails"})),
    )
    .await;
    op(&app, post.clone(), &format!("/webhooks/{hook}/test"), None).await;
    crate::webhook_delivery::edit_ad(&app).await;
    advance_drained(&app, json!({"seconds": 10})).await;
    let (gone, _) =
        crate::webhook_delivery::hook(&app, &failing.url("/gone"), &["ad.created"]).await;
    op(&app, delete.clone(), &format!("/webhooks/{gone}"), None).await;

    // A month begins: every subscription renews, its tokens granted.
    advance_drained(&app, json!({"to": "2026-04-01T00:00:01Z"})).await;
    // An invoice falls overdue (March's, 14 days after the month).
    let due: i64 = app.sql(|c| {
        c.query_row(
            "SELECT min(due_at) FROM invoices WHERE company_id = ?1 AND status = 'open'",
            [&grocers],
            |r| r.get(0),
        )
    });
    advance_drained(&app, json!({"to": rfc(due + 1)})).await;
    drain(&app).await;

    // What the script did not cause, an area's plain create, update and delete do: replayed from
    // the document's request examples, so a new area's `<object>.created|updated|deleted` need
    // no line here (only its other events do).
    let emitted: Vec<String> = rx
        .received()
        .iter()
        .filter_map(|r| r.json()["type"].as_str().map(String::from))
        .collect();
    let missing: Vec<&str> = signage::events::EVENT_TYPES
        .iter()
        .copied()
        .filter(|t| !emitted.iter().any(|e| e == t))
        .collect();
    let notes = replay_crud(&app, &doc, &rx.url("/all"), &missing).await;
    drain(&app).await;

    let mut by_type: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for r in rx.received() {
        let body = r.json();
        by_type
            .entry(body["type"].as_str().unwrap().to_string())
            .or_default()
            .push(body);
    }
    let missing: Vec<&&str> = signage::events::EVENT_TYPES
        .iter()
        .filter(|t| !by_type.contains_key(**t))
        .collect();
    assert!(
        missing.is_empty(),
        "never delivered: {missing:?}\n{}",
        notes.join("\n")
    );
    let mut checker = Checker::new();
    for (t, bodies) in &by_type {
        let schema = body_schema(&doc, t);
        for body in bodies {
            checker.check(body, &schema, t).unwrap_or_else(|e| {
                panic!("a delivered {t} does not match its schema: {e}\n{body}")
            });
        }
    }
    // The disabled webhook's event names it, with the documented reason.
    let disabled = &by_type["webhook.disabled"][0]["data"];
    assert_eq!(disabled["id"], bad);
    assert!(disabled["disabled_reason"]
        .as_str()
        .unwrap()
        .starts_with("Every delivery attempt since"));
}

/// The create, update and delete verbs a plain area's events name (`<object>.created`, …).
const CRUD: [&str; 3] = ["created", "updated", "deleted"];

/// For each `<object>.created|updated|deleted` among `missing`: creates an object of the event's
/// kind with the document's request example of the `POST /<path>` of its area whose answer is
/// one (its example's id has the kind's prefix), then changes it with the example of `PATCH
/// /<path>/{id}` and deletes it with `DELETE /<path>/{id}`, where the document has those. The
/// example's company gets a webhook to `url` subscribed to every type, as the script's has.
/// Returns why a missing type could not be replayed.
async fn replay_crud(app: &TestApp, doc: &Value, url: &str, missing: &[&str]) -> Vec<String> {
    let catalogue = signage::routes::payloads();
    let mut hooked = vec![company_id("Northwind Grocers")];
    let mut replayed: Vec<&str> = Vec::new();
    let mut notes = Vec::new();
    for t in missing {
        let (Some(p), Some(area), Some((_, verb))) = (
            catalogue.find(t),
            signage::areas::Area::ALL
                .iter()
                .find(|a| a.spec().events.contains(t)),
            t.rsplit_once('.'),
        ) else {
            continue;
        };
        let subject = p.subject;
        if !CRUD.contains(&verb) || replayed.contains(&subject.resource) {
            continue;
        }
        let prefix = format!("{}_", subject.kind.prefix());
        let create = area.spec().paths.iter().find_map(|segment| {
            let op = &doc["paths"][format!("/{segment}")]["post"];
            let example = &op["requestBody"]["content"]["application/json"]["example"];
            let answer = &op["responses"]["201"]["content"]["application/json"]["example"];
            let makes = answer["id"]
                .as_str()
                .is_some_and(|id| id.starts_with(&prefix));
            (makes && example.is_object()).then(|| (*segment, example.clone()))
        });
        let Some((segment, body)) = create else {
            notes.push(format!(
                "{t}: not replayed: no `POST` under the paths of {area:?} with a JSON request \
                 example answers a {}",
                subject.resource
            ));
            continue;
        };
        if let Some(company) = body["company_id"].as_str() {
            if !hooked.iter().any(|c| c == company) {
                hook_company(app, company, url).await;
                hooked.push(company.to_string());
            }
        }
        let created = step(app, t, Method::POST, &format!("/{segment}"), Some(body)).await;
        let id = created["id"].as_str().unwrap_or_default().to_string();
        let item = doc["paths"]
            .as_object()
            .into_iter()
            .flatten()
            .find_map(|(path, ops)| {
                path.strip_prefix(&format!("/{segment}/"))
                    .is_some_and(|rest| rest.starts_with('{') && !rest.contains('/'))
                    .then_some(ops)
            });
        if let Some(ops) = item {
            let path = format!("/{segment}/{id}");
            let update = &ops["patch"]["requestBody"]["content"]["application/json"]["example"];
            if update.is_object() {
                step(app, t, Method::PATCH, &path, Some(update.clone())).await;
            }
            if ops["delete"].is_object() {
                step(app, t, Method::DELETE, &path, None).await;
            }
        }
        replayed.push(subject.resource);
    }
    notes
}

/// One request of the replay for `event_type`: a 2xx answer's body (null for a 204).
async fn step(
    app: &TestApp,
    event_type: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Value {
    let mut req = app.request(method.clone(), path).key("northwind-admin");
    if let Some(b) = &body {
        req = req.json(b);
    }
    let r = req.send().await;
    assert!(
        r.status.is_success(),
        "{event_type}: no scripted transition emitted it; replaying its area's {method} {path} \
         with the document's example {} answered {} {}",
        body.unwrap_or_default(),
        r.status,
        r.text()
    );
    if r.status == 204 {
        Value::Null
    } else {
        r.json()
    }
}

/// A webhook of `company` to `url` that subscribes to every type.
async fn hook_company(app: &TestApp, company: &str, url: &str) {
    let r = app
        .post("/webhooks")
        .key("northwind-admin")
        .json(&json!({"company_id": company, "url": url,
            "event_types": signage::events::EVENT_TYPES}))
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
}
