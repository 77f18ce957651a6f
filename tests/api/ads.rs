//! Ads: CRUD, links to media and promotions, and assignment to devices.

use crate::helpers::{company_id, TestApp};
use crate::list_contract::{assert_list_contract, in_companies};
use serde_json::{json, Value};
use std::collections::HashSet;

fn ad_count(app: &TestApp) -> i64 {
    app.sql(|c| c.query_row("SELECT count(*) FROM ads", [], |r| r.get(0)))
}

/// The first id of `table` owned by `company` (by name), in id order.
fn first_of(app: &TestApp, table: &str, company: &str) -> String {
    let sql = format!(
        "SELECT t.id FROM {table} t JOIN companies c ON c.id = t.company_id WHERE c.name = ?1 ORDER BY t.id LIMIT 1"
    );
    app.sql(|c| c.query_row(&sql, [company], |r| r.get(0)))
}

fn events_of(app: &TestApp, kind: &str, resource: &str) -> Vec<Value> {
    app.sql(|c| {
        let mut s = c.prepare(
            "SELECT payload FROM events WHERE type = ?1 AND resource_id = ?2 ORDER BY id",
        )?;
        let rows = s.query_map([kind, resource], |r| r.get::<_, String>(0))?;
        rows.map(|p| p.map(|p| serde_json::from_str(&p).unwrap()))
            .collect()
    })
}

async fn create_ad(app: &TestApp, key: &str, body: Value) -> Value {
    let r = app.post("/ads").key(key).json(&body).send().await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

#[tokio::test]
async fn list_walks_every_visible_ad_once() {
    let app = TestApp::spawn().await;
    let full = app
        .get("/ads?limit=100")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let full: Vec<Value> = full["data"].as_array().unwrap().clone();
    assert_eq!(
        full.len(),
        24,
        "Northwind Grocers 14 + Northwind Pharmacy 10"
    );
    let walked = assert_list_contract(
        &app,
        "/ads",
        "northwind-readonly",
        3,
        in_companies(&["Northwind Grocers", "Northwind Pharmacy"]),
    )
    .await;
    assert_eq!(walked, full);
    let ids: HashSet<&str> = walked.iter().map(|a| a["id"].as_str().unwrap()).collect();
    for a in &walked {
        assert_eq!(a["object"], "ad");
        assert_eq!(
            a["device_ids"].as_array().unwrap().len() as i64,
            a["device_count"].as_i64().unwrap()
        );
    }

    // The other account sees its own ads only.
    let harbor = app.collect_all("/ads", "harborview-readwrite", 7).await;
    assert_eq!(harbor.len(), 20);
    assert!(harbor
        .iter()
        .all(|a| !ids.contains(a["id"].as_str().unwrap())));
}

#[tokio::test]
async fn list_filters() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let by_company = app
        .collect_all(
            &format!("/ads?company_id={grocers}"),
            "northwind-readonly",
            5,
        )
        .await;
    assert_eq!(by_company.len(), 14);
    assert!(by_company.iter().all(|a| a["company_id"] == grocers));

    let mut total = 0;
    for status in ["draft", "active", "paused", "archived"] {
        let items = app
            .collect_all(&format!("/ads?status={status}"), "northwind-readonly", 4)
            .await;
        assert!(items.iter().all(|a| a["status"] == status));
        total += items.len();
    }
    assert_eq!(total, 24);

    let promo: String = app.sql(|c| {
        c.query_row(
            "SELECT a.promotion_id FROM ads a JOIN companies c ON c.id = a.company_id
             WHERE c.name = 'Northwind Grocers' AND a.promotion_id IS NOT NULL
             GROUP BY a.promotion_id ORDER BY count(*) DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
    });
    let linked = app
        .collect_all(
            &format!("/ads?promotion_id={promo}"),
            "northwind-readonly",
            1,
        )
        .await;
    let expected: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM ads WHERE promotion_id = ?1",
            [&promo],
            |r| r.get(0),
        )
    });
    assert_eq!(linked.len() as i64, expected);
    assert!(linked.iter().all(|a| a["promotion_id"] == promo));

    let device: String = app.sql(|c| {
        c.query_row(
            "SELECT x.device_id FROM ad_assignments x JOIN devices d ON d.id = x.device_id
             JOIN companies c ON c.id = d.company_id WHERE c.name = 'Northwind Pharmacy'
             GROUP BY x.device_id ORDER BY count(*) DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
    });
    let on_device = app
        .collect_all(&format!("/ads?device_id={device}"), "northwind-readonly", 1)
        .await;
    let via_device = app
        .collect_all(&format!("/devices/{device}/ads"), "northwind-readonly", 10)
        .await;
    assert!(!on_device.is_empty());
    assert_eq!(on_device, via_device);
    assert!(on_device
        .iter()
        .all(|a| a["device_ids"].as_array().unwrap().contains(&json!(device))));
    // Combined with a company filter that excludes the device's company: empty, not an error.
    let none = app
        .get(&format!("/ads?device_id={device}&company_id={grocers}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(none["data"], json!([]));

    // Invisible devices are 404; malformed filters 422.
    app.get(&format!("/ads?device_id={device}"))
        .key("harborview-readwrite")
        .send()
        .await
        .problem(404);
    app.get(&format!("/ads?device_id={device}"))
        .key("northwind-grocers-write")
        .send()
        .await
        .problem(404);
    for q in [
        "status=live",
        "device_id=ad_123",
        "promotion_id=xyz",
        "company_id=nope",
        "sort=name",
    ] {
        app.get(&format!("/ads?{q}"))
            .key("northwind-readonly")
            .send()
            .await
            .problem(422);
    }
}

#[tokio::test]
async fn get_ad_with_devices_and_etag() {
    let app = TestApp::spawn().await;
    let (ad, n): (String, i64) = app.sql(|c| {
        c.query_row(
            "SELECT x.ad_id, count(*) FROM ad_assignments x JOIN ads a ON a.id = x.ad_id
             JOIN companies c ON c.id = a.company_id WHERE c.name = 'Northwind Grocers'
             GROUP BY x.ad_id ORDER BY count(*) DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    let r = app
        .get(&format!("/ads/{ad}"))
        .key("northwind-readonly")
        .send()
        .await;
    let body = r.ok();
    assert_eq!(r.header("etag"), Some("\"v1\""));
    assert_eq!(body["id"], ad);
    assert_eq!(body["device_count"], n);
    let mut expected: Vec<String> = app.sql(|c| {
        let mut s = c.prepare("SELECT device_id FROM ad_assignments WHERE ad_id = ?1")?;
        let rows = s.query_map([&ad], |r| r.get(0))?;
        rows.collect()
    });
    expected.sort();
    assert_eq!(body["device_ids"], json!(expected));
    for f in [
        "company_id",
        "name",
        "headline",
        "status",
        "media_id",
        "promotion_id",
        "duration_seconds",
        "created_at",
        "updated_at",
    ] {
        assert!(body.get(f).is_some(), "{f}");
    }

    for key in [
        "harborview-readwrite",
        "harborview-admin",
        "northwind-pharmacy-read",
    ] {
        app.get(&format!("/ads/{ad}"))
            .key(key)
            .send()
            .await
            .problem(404);
    }
    let harbor_ad = first_of(&app, "ads", "Harborview Hotels");
    app.get(&format!("/ads/{harbor_ad}"))
        .key("northwind-admin")
        .send()
        .await
        .problem(404);
    app.get("/ads/dev_notanad")
        .key("northwind-admin")
        .send()
        .await
        .problem(404);
}

#[tokio::test]
async fn create_ad_with_media_and_promotion() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let media = first_of(&app, "media", "Northwind Grocers");
    let promo = first_of(&app, "promotions", "Northwind Grocers");
    let r = app
        .post("/ads")
        .key("northwind-ads-editor")
        .json(
            &json!({"company_id": grocers, "name": "Cheese week", "headline": "All cheese 2 for 1",
            "status": "active", "media_id": media, "promotion_id": promo, "duration_seconds": 30}),
        )
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let ad = r.json();
    let id = ad["id"].as_str().unwrap();
    assert!(id.starts_with("ad_"));
    assert_eq!(r.header("etag"), Some("\"v1\""));
    assert_eq!(r.header("location"), Some(format!("/ads/{id}").as_str()));
    assert_eq!(ad["company_id"], grocers);
    assert_eq!(ad["status"], "active");
    assert_eq!(ad["media_id"], media);
    assert_eq!(ad["promotion_id"], promo);
    assert_eq!(ad["duration_seconds"], 30);
    assert_eq!(ad["device_ids"], json!([]));
    assert_eq!(ad["device_count"], 0);
    let got = app
        .get(&format!("/ads/{id}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(got, ad);
    assert_eq!(events_of(&app, "ad.created", id).len(), 1);

    // Defaults: draft, 15 seconds, no media or promotion.
    let plain = create_ad(
        &app,
        "northwind-readwrite",
        json!({"company_id": grocers, "name": "Plain", "headline": "Hello", "media_id": null}),
    )
    .await;
    assert_eq!(plain["status"], "draft");
    assert_eq!(plain["duration_seconds"], 15);
    assert!(plain["media_id"].is_null() && plain["promotion_id"].is_null());
}

#[tokio::test]
async fn create_ad_validation_and_references() {
    let app = TestApp::spawn().await;
    let before = ad_count(&app);
    let grocers = company_id("Northwind Grocers");
    let pharmacy_media = first_of(&app, "media", "Northwind Pharmacy");
    let harbor_promo = first_of(&app, "promotions", "Harborview Hotels");
    let base = json!({"company_id": grocers, "name": "N", "headline": "H"});
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    for (body, field) in [
        (with("colour", json!("red")), "colour"),
        (with("duration_seconds", json!(0)), "/duration_seconds"),
        (with("duration_seconds", json!(3601)), "/duration_seconds"),
        (with("duration_seconds", json!("15")), "/duration_seconds"),
        (with("duration_seconds", json!(null)), "/duration_seconds"),
        (with("status", json!("live")), "/status"),
        (with("headline", json!("h".repeat(201))), "/headline"),
        (with("name", json!(" ")), "/name"),
        (with("media_id", json!("promo_abc")), "/media_id"),
        (json!({"company_id": grocers, "name": "N"}), ""),
    ] {
        let p = app
            .post("/ads")
            .key("northwind-readwrite")
            .json(&body)
            .send()
            .await
            .problem(422);
        assert!(
            p["errors"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["field"].as_str().unwrap().contains(field)),
            "{body} -> {p}"
        );
    }
    // References outside the ad's company are as invisible as a missing object: 404 naming the field.
    for (body, field) in [
        (with("media_id", json!(pharmacy_media)), "/media_id"),
        (with("promotion_id", json!(harbor_promo)), "/promotion_id"),
        (
            with("promotion_id", json!("promo_doesnotexist")),
            "/promotion_id",
        ),
    ] {
        let p = app
            .post("/ads")
            .key("northwind-readwrite")
            .json(&body)
            .send()
            .await
            .problem(404);
        assert!(
            p["detail"].as_str().unwrap().contains(field),
            "{body} -> {p}"
        );
    }
    app.post("/ads")
        .key("northwind-readwrite")
        .raw("application/json", "{\"name\": \"N\",")
        .send()
        .await
        .problem(400);
    // Another company (scoped key) or another account: the company is invisible.
    app.post("/ads")
        .key("northwind-grocers-write")
        .json(
            &json!({"company_id": company_id("Northwind Pharmacy"), "name": "N", "headline": "H"}),
        )
        .send()
        .await
        .problem(404);
    app.post("/ads")
        .key("harborview-readwrite")
        .json(&base)
        .send()
        .await
        .problem(404);
    for key in ["northwind-readonly", "northwind-pharmacy-read"] {
        let p = app
            .post("/ads")
            .key(key)
            .json(&base)
            .send()
            .await
            .problem(403);
        assert_eq!(p["missing_scope"], "ads:write");
    }
    assert_eq!(ad_count(&app), before, "nothing written");
}

#[tokio::test]
async fn update_ad_links_promotions_and_honours_if_match() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let media = first_of(&app, "media", "Northwind Grocers");
    let promo = first_of(&app, "promotions", "Northwind Grocers");
    let ad = create_ad(
        &app,
        "northwind-readwrite",
        json!({"company_id": grocers, "name": "Bread", "headline": "Fresh bread", "media_id": media}),
    )
    .await;
    let path = format!("/ads/{}", ad["id"].as_str().unwrap());

    // Link a promotion, clear the media, change the rest.
    let r = app
        .patch(&path)
        .key("northwind-ads-editor")
        .header("if-match", "\"v1\"")
        .json(&json!({"promotion_id": promo, "media_id": null, "name": "Bread!", "headline": "Warm bread",
            "status": "paused", "duration_seconds": 3600}))
        .send()
        .await;
    let updated = r.ok();
    assert_eq!(r.header("etag"), Some("\"v2\""));
    assert_eq!(updated["promotion_id"], promo);
    assert!(updated["media_id"].is_null());
    assert_eq!(updated["name"], "Bread!");
    assert_eq!(updated["headline"], "Warm bread");
    assert_eq!(updated["status"], "paused");
    assert_eq!(updated["duration_seconds"], 3600);
    let linked = app
        .collect_all(
            &format!("/ads?promotion_id={promo}"),
            "northwind-readonly",
            10,
        )
        .await;
    assert!(linked.iter().any(|a| a["id"] == ad["id"]));

    // Stale If-Match: 412, unchanged.
    let p = app
        .patch(&path)
        .key("northwind-readwrite")
        .header("if-match", "\"v1\"")
        .json(&json!({"name": "Stale"}))
        .send()
        .await
        .problem(412);
    assert_eq!(p["current_etag"], "\"v2\"");
    let now = app.get(&path).key("northwind-readonly").send().await;
    assert_eq!(now.header("etag"), Some("\"v2\""));
    assert_eq!(now.json(), updated);

    // Unlink.
    let unlinked = app
        .patch(&path)
        .key("northwind-readwrite")
        .json(&json!({"promotion_id": null}))
        .send()
        .await
        .ok();
    assert!(unlinked["promotion_id"].is_null());

    let harbor_promo = first_of(&app, "promotions", "Harborview Hotels");
    for (body, field) in [
        (json!({}), ""),
        (
            json!({"company_id": company_id("Northwind Pharmacy")}),
            "company_id",
        ),
        (json!({"status": null}), "/status"),
        (json!({"status": "gone"}), "/status"),
        (json!({"duration_seconds": 1.5}), "/duration_seconds"),
    ] {
        let p = app
            .patch(&path)
            .key("northwind-readwrite")
            .json(&body)
            .send()
            .await
            .problem(422);
        assert!(
            p["errors"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["field"].as_str().unwrap().contains(field)),
            "{body} -> {p}"
        );
    }
    for (body, field) in [
        (json!({"promotion_id": harbor_promo}), "/promotion_id"),
        (json!({"media_id": "med_doesnotexist"}), "/media_id"),
    ] {
        let p = app
            .patch(&path)
            .key("northwind-readwrite")
            .json(&body)
            .send()
            .await
            .problem(404);
        assert!(
            p["detail"].as_str().unwrap().contains(field),
            "{body} -> {p}"
        );
    }
    app.patch(&path)
        .key("harborview-readwrite")
        .json(&json!({"name": "x"}))
        .send()
        .await
        .problem(404);
    app.patch(&path)
        .key("northwind-readonly")
        .json(&json!({"name": "x"}))
        .send()
        .await
        .problem(403);
    let final_ = app.get(&path).key("northwind-readonly").send().await;
    assert_eq!(final_.header("etag"), Some("\"v3\""));
    assert_eq!(final_.json()["name"], "Bread!");
    assert_eq!(
        events_of(&app, "ad.updated", ad["id"].as_str().unwrap()).len(),
        2
    );
}

#[tokio::test]
async fn delete_ad() {
    let app = TestApp::spawn().await;
    let (ad, device): (String, String) = app.sql(|c| {
        c.query_row(
            "SELECT d.current_ad_id, d.id FROM devices d JOIN companies c ON c.id = d.company_id
             WHERE c.name = 'Northwind Grocers' AND d.current_ad_id IS NOT NULL LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    let path = format!("/ads/{ad}");
    app.delete(&path)
        .key("harborview-readwrite")
        .send()
        .await
        .problem(404);
    app.delete(&path)
        .key("northwind-readonly")
        .send()
        .await
        .problem(403);
    app.delete(&path)
        .key("northwind-readwrite")
        .header("if-match", "\"v9\"")
        .send()
        .await
        .problem(412);
    app.get(&path).key("northwind-readonly").send().await.ok();

    let r = app.delete(&path).key("northwind-ads-editor").send().await;
    assert_eq!(r.status, 204, "{}", r.text());
    app.get(&path)
        .key("northwind-readonly")
        .send()
        .await
        .problem(404);
    let left: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM ad_assignments WHERE ad_id = ?1",
            [&ad],
            |r| r.get(0),
        )
    });
    assert_eq!(left, 0);
    let d = app
        .get(&format!("/devices/{device}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert!(d["current_ad_id"].is_null());
    assert_eq!(events_of(&app, "ad.deleted", &ad).len(), 1);
}

#[tokio::test]
async fn assign_and_unassign_devices() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let ad = create_ad(
        &app,
        "northwind-readwrite",
        json!({"company_id": grocers, "name": "Flowers", "headline": "Tulips", "status": "active"}),
    )
    .await;
    let id = ad["id"].as_str().unwrap();
    let device = first_of(&app, "devices", "Northwind Grocers");
    let assign = format!("/ads/{id}/devices");

    let r = app
        .post(&assign)
        .key("northwind-ads-editor")
        .json(&json!({"device_id": device}))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let first = r.json();
    assert_eq!(first["object"], "ad_assignment");
    assert_eq!(first["ad_id"], id);
    assert_eq!(first["device_id"], device);
    assert_eq!(first["company_id"], grocers);
    assert_eq!(first["newly_assigned"], true);

    // Assigning again is idempotent: same assignment, no second event.
    let again = app
        .post(&assign)
        .key("northwind-readwrite")
        .json(&json!({"device_id": device}))
        .send()
        .await;
    assert_eq!(again.status, 200);
    let again = again.json();
    assert_eq!(again["newly_assigned"], false);
    assert_eq!(again["assigned_at"], first["assigned_at"]);
    assert_eq!(events_of(&app, "ad.assigned", id).len(), 1);
    assert_eq!(events_of(&app, "ad.assigned", id)[0]["device_id"], device);

    let got = app
        .get(&format!("/ads/{id}"))
        .key("northwind-readonly")
        .send()
        .await;
    assert_eq!(
        got.header("etag"),
        Some("\"v2\""),
        "an assignment moves the ad's ETag: it covers `device_ids`"
    );
    let got = got.json();
    assert_eq!(got["device_ids"], json!([device]));
    assert_eq!(got["device_count"], 1);
    let on_device = app
        .collect_all(&format!("/devices/{device}/ads"), "northwind-readonly", 5)
        .await;
    assert!(on_device.iter().any(|a| a["id"] == id));

    // Devices of another company (same account or not) are not assignable.
    let before: i64 =
        app.sql(|c| c.query_row("SELECT count(*) FROM ad_assignments", [], |r| r.get(0)));
    for other in [
        first_of(&app, "devices", "Northwind Pharmacy"),
        first_of(&app, "devices", "Harborview Hotels"),
        "dev_doesnotexist".to_string(),
    ] {
        let p = app
            .post(&assign)
            .key("northwind-readwrite")
            .json(&json!({"device_id": other}))
            .send()
            .await
            .problem(404);
        assert!(p["detail"].as_str().unwrap().contains("/device_id"));
    }
    for (body, status) in [
        (json!({}), 422),
        (json!({"device_id": 5}), 422),
        (json!({"device_id": device, "extra": true}), 422),
        (json!({"device_id": "ad_x"}), 422),
    ] {
        app.post(&assign)
            .key("northwind-readwrite")
            .json(&body)
            .send()
            .await
            .problem(status);
    }
    app.post(&assign)
        .key("northwind-readonly")
        .json(&json!({"device_id": device}))
        .send()
        .await
        .problem(403);
    app.post(&assign)
        .key("harborview-readwrite")
        .json(&json!({"device_id": device}))
        .send()
        .await
        .problem(404);
    let after: i64 =
        app.sql(|c| c.query_row("SELECT count(*) FROM ad_assignments", [], |r| r.get(0)));
    assert_eq!(after, before);

    // An archived ad cannot be newly assigned.
    let archived = create_ad(
        &app,
        "northwind-readwrite",
        json!({"company_id": grocers, "name": "Old", "headline": "Old", "status": "archived"}),
    )
    .await;
    app.post(&format!(
        "/ads/{}/devices",
        archived["id"].as_str().unwrap()
    ))
    .key("northwind-readwrite")
    .json(&json!({"device_id": device}))
    .send()
    .await
    .problem(409);

    // Unassign.
    let unassign = format!("/ads/{id}/devices/{device}");
    app.delete(&unassign)
        .key("harborview-readwrite")
        .send()
        .await
        .problem(404);
    app.delete(&unassign)
        .key("northwind-readonly")
        .send()
        .await
        .problem(403);
    let r = app
        .delete(&unassign)
        .key("northwind-ads-editor")
        .send()
        .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let p = app
        .delete(&unassign)
        .key("northwind-readwrite")
        .send()
        .await
        .problem(404);
    assert!(p["detail"].as_str().unwrap().contains("not assigned"));
    let other_device = first_of(&app, "devices", "Northwind Pharmacy");
    app.delete(&format!("/ads/{id}/devices/{other_device}"))
        .key("northwind-readwrite")
        .send()
        .await
        .problem(404);
    let got = app
        .get(&format!("/ads/{id}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(got["device_ids"], json!([]));
    let events = events_of(&app, "ad.unassigned", id);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["device_id"], device);
}

#[tokio::test]
async fn unassigning_the_playing_ad_clears_it_on_the_device() {
    let app = TestApp::spawn().await;
    let (ad, device): (String, String) = app.sql(|c| {
        c.query_row(
            "SELECT d.current_ad_id, d.id FROM devices d JOIN companies c ON c.id = d.company_id
             WHERE c.name = 'Northwind Pharmacy' AND d.current_ad_id IS NOT NULL
               AND EXISTS (SELECT 1 FROM ad_assignments x WHERE x.device_id = d.id AND x.ad_id = d.current_ad_id)
             LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    let r = app
        .delete(&format!("/ads/{ad}/devices/{device}"))
        .key("northwind-readwrite")
        .send()
        .await;
    assert_eq!(r.status, 204);
    let diag = app
        .get(&format!("/devices/{device}/diagnostics"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert!(diag["current_ad"].is_null());
}

// The list page keeps each ad's JSON rendered between requests (as the devices page does): each
// test below tries to get a kept row served after what it shows has changed, and every page must
// equal the ads read one by one. (Debug builds also compare every row served with the ad read
// again.)

async fn ads_page(app: &TestApp, key: &str, query: &str) -> Value {
    let r = app.get(&format!("/ads?{query}")).key(key).send().await;
    assert_eq!(r.status, 200, "{}", r.text());
    let page = r.json();
    // Compact JSON written by serde_json reads back to the same bytes.
    assert_eq!(serde_json::to_vec(&page).unwrap(), r.body.to_vec());
    page
}

fn listed<'a>(page: &'a Value, id: &str) -> &'a Value {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id)
        .unwrap_or_else(|| panic!("{id} not on the page"))
}

fn ads_generation(app: &TestApp) -> i64 {
    app.sql(|c| c.query_row("SELECT ads FROM cache_generations", [], |r| r.get(0)))
}

/// The ad listed (all of Northwind's ads fit one page) after `change`, kept or not.
async fn relisted(app: &TestApp, id: &str) -> Value {
    listed(&ads_page(app, "northwind-readonly", "limit=100").await, id).clone()
}

#[tokio::test]
async fn every_ads_page_row_is_the_ad_read_alone_byte_for_byte() {
    let app = crate::sandbox_clock::frozen_without_fleet().await;
    let grocers = company_id("Northwind Grocers");
    let device = first_of(&app, "devices", "Northwind Grocers");
    // Each ad read alone once (the clock is frozen: nothing moves between reads).
    let mut alone: std::collections::HashMap<String, Vec<u8>> = Default::default();
    for query in [
        "limit=20".to_string(),
        "limit=7".into(),
        "limit=100&status=active".into(),
        "q=a&limit=5".into(),
        format!("company_id={grocers}&limit=100"),
        format!("device_id={device}&limit=100"),
        "promotion_id=promo_0m5d4rupd28t6txsgbdb&limit=100".into(),
    ] {
        // Twice: rendered, then kept.
        for _ in 0..2 {
            let page = ads_page(&app, "northwind-readonly", &query).await;
            assert!(!page["data"].as_array().unwrap().is_empty(), "{query}");
            for a in page["data"].as_array().unwrap() {
                let id = a["id"].as_str().unwrap().to_string();
                if !alone.contains_key(&id) {
                    let r = app
                        .get(&format!("/ads/{id}"))
                        .key("northwind-readonly")
                        .send()
                        .await;
                    assert_eq!(r.status, 200);
                    alone.insert(id.clone(), r.body.to_vec());
                }
                assert_eq!(serde_json::to_vec(a).unwrap(), alone[&id], "{query}");
            }
        }
    }
}

#[tokio::test]
async fn a_kept_ad_row_never_outlives_a_write_to_what_it_shows() {
    const RW: &str = "northwind-readwrite";
    const SUMMER_FRUIT: &str = "promo_0m5d4rupd28t6txsgbdb"; // Grocers, active
    let app = crate::sandbox_clock::frozen_without_fleet().await;
    let now = crate::sandbox_clock::FROZEN_AT;
    let grocers = company_id("Northwind Grocers");
    let device = first_of(&app, "devices", "Northwind Grocers");
    let ad = create_ad(
        &app,
        RW,
        json!({"company_id": grocers, "name": "Kept", "headline": "Rows", "status": "active",
               "promotion_id": SUMMER_FRUIT}),
    )
    .await;
    let id = ad["id"].as_str().unwrap().to_string();
    // Rendered, then kept.
    assert_eq!(relisted(&app, &id).await, ad);
    assert_eq!(relisted(&app, &id).await["on_air"], true);

    // Renamed.
    app.patch(&format!("/ads/{id}"))
        .key(RW)
        .json(&json!({"name": "Kept \"renamed\""}))
        .send()
        .await
        .ok();
    assert_eq!(relisted(&app, &id).await["name"], "Kept \"renamed\"");

    // Put on a screen, and taken off it.
    app.post(&format!("/ads/{id}/devices"))
        .key(RW)
        .json(&json!({"device_id": device}))
        .send()
        .await
        .ok();
    let row = relisted(&app, &id).await;
    assert_eq!(row["device_ids"], json!([device]));
    assert_eq!(row["device_count"], 1);
    let r = app
        .delete(&format!("/ads/{id}/devices/{device}"))
        .key(RW)
        .send()
        .await;
    assert!(r.status.is_success(), "{}", r.text());
    let row = relisted(&app, &id).await;
    assert_eq!(row["device_ids"], json!([]));
    assert_eq!(row["device_count"], 0);

    // Its promotion's window closes a minute from now: the clock alone takes the ad off air, and
    // the row stays kept (no write moved what it shows: `on_air` is the request's).
    app.patch(&format!("/promotions/{SUMMER_FRUIT}"))
        .key(RW)
        .json(&json!({"ends_at": signage::time::rfc3339(now + 60)}))
        .send()
        .await
        .ok();
    assert_eq!(relisted(&app, &id).await["on_air"], true);
    let generation = ads_generation(&app);
    app.post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": 120}))
        .send()
        .await
        .ok();
    assert_eq!(relisted(&app, &id).await["on_air"], false);
    assert_eq!(ads_generation(&app), generation);
    // The window moved on again: back on air; the promotion switched off: off air.
    app.patch(&format!("/promotions/{SUMMER_FRUIT}"))
        .key(RW)
        .json(&json!({"ends_at": signage::time::rfc3339(now + 86_400)}))
        .send()
        .await
        .ok();
    assert_eq!(relisted(&app, &id).await["on_air"], true);
    app.post(&format!("/promotions/{SUMMER_FRUIT}/deactivate"))
        .key(RW)
        .send()
        .await
        .ok();
    assert_eq!(relisted(&app, &id).await["on_air"], false);
    // Unlinked from it: on air on its own.
    app.patch(&format!("/ads/{id}"))
        .key(RW)
        .json(&json!({"promotion_id": null}))
        .send()
        .await
        .ok();
    let row = relisted(&app, &id).await;
    assert_eq!(row["promotion_id"], Value::Null);
    assert_eq!(row["on_air"], true);

    // Its own dates: the clock crosses its start, then its end, and the kept row follows.
    let start = now + 120 + 3_600;
    app.patch(&format!("/ads/{id}"))
        .key(RW)
        .json(&json!({"starts_at": signage::time::rfc3339(start),
                      "ends_at": signage::time::rfc3339(start + 3_600)}))
        .send()
        .await
        .ok();
    assert_eq!(relisted(&app, &id).await["on_air"], false);
    let generation = ads_generation(&app);
    for (seconds, on_air) in [(3_599, false), (1, true), (3_599, true), (1, false)] {
        app.post("/_sandbox/clock/advance")
            .key("sandbox-operator")
            .json(&json!({"seconds": seconds}))
            .send()
            .await
            .ok();
        assert_eq!(relisted(&app, &id).await["on_air"], on_air, "+{seconds}s");
    }
    assert_eq!(ads_generation(&app), generation);

    // Another process changes it behind the server's back.
    let conn = rusqlite::Connection::open(app.app.db.path()).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    conn.execute("UPDATE ads SET headline = 'Elsewhere' WHERE id = ?1", [&id])
        .unwrap();
    assert_eq!(relisted(&app, &id).await["headline"], "Elsewhere");

    // A snapshot restore brings back the row it saved.
    app.post("/_sandbox/snapshots")
        .key("sandbox-operator")
        .json(&json!({"name": "kept-ads"}))
        .send()
        .await
        .ok();
    let saved = relisted(&app, &id).await;
    app.patch(&format!("/ads/{id}"))
        .key(RW)
        .json(&json!({"name": "After the snapshot", "status": "paused"}))
        .send()
        .await
        .ok();
    let row = relisted(&app, &id).await;
    assert_eq!(row["name"], "After the snapshot");
    assert_eq!(row["status"], "paused");
    app.post("/_sandbox/snapshots/kept-ads/restore")
        .key("sandbox-operator")
        .send()
        .await
        .ok();
    assert_eq!(relisted(&app, &id).await, saved);

    // Deleted: gone from the page.
    app.delete(&format!("/ads/{id}")).key(RW).send().await;
    let page = ads_page(&app, "northwind-readonly", "limit=100").await;
    assert!(page["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["id"] != id));
}

#[tokio::test]
async fn a_company_key_never_sees_another_companys_kept_rows() {
    let app = TestApp::spawn().await;
    let pharmacy = company_id("Northwind Pharmacy");
    let grocers_device = first_of(&app, "devices", "Northwind Grocers");
    // Every Northwind ad kept, by the account's key.
    let all = ads_page(&app, "northwind-readonly", "limit=100").await;
    assert!(all["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["company_id"] != pharmacy));
    for key in ["northwind-pharmacy-read", "harborview-readwrite"] {
        let page = ads_page(&app, key, "limit=100").await;
        let rows = page["data"].as_array().unwrap();
        assert!(!rows.is_empty(), "{key}");
        for a in rows {
            if key == "northwind-pharmacy-read" {
                assert_eq!(a["company_id"], pharmacy, "{key}");
            } else {
                assert!(all["data"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|b| b["id"] != a["id"]));
            }
            let alone = app
                .get(&format!("/ads/{}", a["id"].as_str().unwrap()))
                .key(key)
                .send()
                .await;
            assert_eq!(serde_json::to_vec(a).unwrap(), alone.body.to_vec());
        }
        // Another company's screen, or its company named, shows none of its kept rows.
        app.get(&format!("/ads?device_id={grocers_device}"))
            .key(key)
            .send()
            .await
            .problem(404);
        let grocers = company_id("Northwind Grocers");
        app.get(&format!("/ads?company_id={grocers}"))
            .key(key)
            .send()
            .await
            .problem(404);
    }
}
