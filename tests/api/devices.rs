//! Devices: CRUD, plan limits, ads of a device, heartbeats and diagnostics.

use crate::helpers::{company_id, TestApp};
use crate::list_contract::{assert_list_contract, in_companies};
use serde_json::{json, Value};
use std::collections::HashSet;

fn device_count(app: &TestApp) -> i64 {
    app.sql(|c| c.query_row("SELECT count(*) FROM devices", [], |r| r.get(0)))
}

/// A fixture device of `company` whose last heartbeat is `status` (online/offline/never_seen).
async fn fixture_device(app: &TestApp, company: &str, status: &str) -> Value {
    let list = app
        .get(&format!(
            "/devices?company_id={}&status={status}&limit=1",
            company_id(company)
        ))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    list["data"][0].clone()
}

async fn harbor_device(app: &TestApp) -> String {
    let list = app
        .get("/devices?limit=1")
        .key("harborview-readwrite")
        .send()
        .await
        .ok();
    list["data"][0]["id"].as_str().unwrap().to_string()
}

fn new_device(company: &str) -> Value {
    json!({"company_id": company_id(company), "name": "Lobby Screen", "platform": "android"})
}

#[tokio::test]
async fn list_walks_every_visible_device_once() {
    let app = TestApp::spawn().await;
    let full = app
        .get("/devices?limit=100")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(full["object"], "list");
    assert_eq!(full["has_more"], false);
    assert!(full["next_cursor"].is_null());
    let full: Vec<Value> = full["data"].as_array().unwrap().clone();
    assert_eq!(
        full.len(),
        18,
        "Northwind Grocers 10 + Northwind Pharmacy 8"
    );

    let walked = assert_list_contract(
        &app,
        "/devices",
        "northwind-readonly",
        3,
        in_companies(&["Northwind Grocers", "Northwind Pharmacy"]),
    )
    .await;
    // A heartbeat's age grows between the two reads: compared within a few seconds, the rest exactly.
    let ageless = |rows: &[Value]| -> Vec<Value> {
        rows.iter()
            .map(|d| {
                let mut d = d.clone();
                d.as_object_mut().unwrap().remove("seconds_since_heartbeat");
                d
            })
            .collect()
    };
    assert_eq!(ageless(&walked), ageless(&full));
    for (w, f) in walked.iter().zip(&full) {
        let (a, b) = (&w["seconds_since_heartbeat"], &f["seconds_since_heartbeat"]);
        assert!(a.is_null() == b.is_null(), "{w} vs {f}");
        if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
            assert!((0..=5).contains(&(a - b)), "{w} vs {f}");
        }
    }
    for d in &walked {
        assert_eq!(d["object"], "device");
        for f in [
            "name",
            "location",
            "platform",
            "orientation",
            "resolution",
            "status",
            "last_heartbeat_at",
            "current_ad_id",
            "app_version",
            "assigned_ad_count",
            "created_at",
            "updated_at",
        ] {
            assert!(d.get(f).is_some(), "device lacks {f}: {d}");
        }
    }

    // A company-scoped key sees only its company.
    let scoped = assert_list_contract(
        &app,
        "/devices",
        "northwind-pharmacy-read",
        4,
        in_companies(&["Northwind Pharmacy"]),
    )
    .await;
    assert_eq!(scoped.len(), 8);
}

#[tokio::test]
async fn list_filters_by_company_and_status() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let only = app
        .collect_all(
            &format!("/devices?company_id={grocers}"),
            "northwind-readonly",
            3,
        )
        .await;
    assert_eq!(only.len(), 10);
    assert!(only.iter().all(|d| d["company_id"] == grocers));

    let mut total = 0;
    for (status, expected) in [("online", 12), ("offline", 4), ("never_seen", 2)] {
        let items = app
            .collect_all(
                &format!("/devices?status={status}"),
                "northwind-readonly",
                5,
            )
            .await;
        assert_eq!(items.len(), expected, "{status}");
        assert!(items.iter().all(|d| d["status"] == status));
        if status == "never_seen" {
            assert!(items.iter().all(|d| d["last_heartbeat_at"].is_null()));
            assert!(items.iter().all(|d| d["seconds_since_heartbeat"].is_null()));
        }
        // Each row carries its heartbeat's age, on the same side of the offline threshold as its
        // status (a dashboard draws every tile from the list alone).
        for d in items.iter().filter(|d| !d["last_heartbeat_at"].is_null()) {
            let age = d["seconds_since_heartbeat"].as_i64().unwrap();
            let last =
                signage::time::parse_rfc3339(d["last_heartbeat_at"].as_str().unwrap()).unwrap();
            let now = signage::time::parse_rfc3339(
                app.get("/_sandbox/clock")
                    .key("sandbox-operator")
                    .send()
                    .await
                    .ok()["now"]
                    .as_str()
                    .unwrap(),
            )
            .unwrap();
            assert!((now - last - age).abs() <= 2, "{d}");
            assert_eq!(age <= 300 + 2, status == "online", "{d}");
        }
        total += items.len();
    }
    assert_eq!(total, 18);

    let bad = app
        .get("/devices?status=sleeping")
        .key("northwind-readonly")
        .send()
        .await
        .problem(422);
    assert_eq!(bad["errors"][0]["field"], "status");
    let unknown = app
        .get("/devices?colour=red")
        .key("northwind-readonly")
        .send()
        .await
        .problem(422);
    assert_eq!(unknown["errors"][0]["field"], "colour");
    app.get("/devices?limit=0")
        .key("northwind-readonly")
        .send()
        .await
        .problem(422);

    // Another account's company as a filter is invisible, hence 404.
    app.get(&format!(
        "/devices?company_id={}",
        company_id("Harborview Hotels")
    ))
    .key("northwind-readonly")
    .send()
    .await
    .problem(404);
}

#[tokio::test]
async fn get_returns_device_with_etag_and_hides_other_companies() {
    let app = TestApp::spawn().await;
    let d = fixture_device(&app, "Northwind Grocers", "online").await;
    let id = d["id"].as_str().unwrap();
    let r = app
        .get(&format!("/devices/{id}"))
        .key("northwind-readonly")
        .send()
        .await;
    let body = r.ok();
    assert_eq!(r.header("etag"), Some("\"v1\""));
    assert_eq!(body, d);
    assert_eq!(body["status"], "online");
    assert!(body["current_ad_id"].as_str().unwrap().starts_with("ad_"));

    // Another account's key and a key scoped to the other company both get 404.
    for key in ["harborview-readwrite", "northwind-pharmacy-read"] {
        let p = app
            .get(&format!("/devices/{id}"))
            .key(key)
            .send()
            .await
            .problem(404);
        assert!(p["detail"].as_str().unwrap().contains(id));
    }
    let harbor = harbor_device(&app).await;
    app.get(&format!("/devices/{harbor}"))
        .key("northwind-admin")
        .send()
        .await
        .problem(404);
    app.get(&format!("/devices/{harbor}"))
        .key("northwind-grocers-write")
        .send()
        .await
        .problem(404);
    app.get("/devices/dev_doesnotexist")
        .key("northwind-admin")
        .send()
        .await
        .problem(404);
    app.get("/devices/ad_wrongkind")
        .key("northwind-admin")
        .send()
        .await
        .problem(404);
}

#[tokio::test]
async fn create_device_happy_path() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let r = app
        .post("/devices")
        .key("northwind-grocers-write")
        .json(&json!({"company_id": grocers, "name": "  Bakery Screen  ", "location": "Utrecht, bakery",
            "platform": "tizen", "orientation": "portrait", "resolution": "1080x1920"}))
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let d = r.json();
    let id = d["id"].as_str().unwrap();
    assert!(id.starts_with("dev_"));
    assert_eq!(r.header("etag"), Some("\"v1\""));
    assert_eq!(
        r.header("location"),
        Some(format!("/devices/{id}").as_str())
    );
    assert_eq!(d["name"], "Bakery Screen");
    assert_eq!(d["location"], "Utrecht, bakery");
    assert_eq!(d["platform"], "tizen");
    assert_eq!(d["orientation"], "portrait");
    assert_eq!(d["resolution"], "1080x1920");
    assert_eq!(d["status"], "never_seen");
    assert_eq!(d["assigned_ad_count"], 0);
    assert!(d["last_heartbeat_at"].is_null() && d["app_version"].is_null());

    // Defaults.
    let d2 = app
        .post("/devices")
        .key("northwind-readwrite")
        .json(&new_device("Northwind Pharmacy"))
        .send()
        .await
        .ok();
    assert_eq!(d2["orientation"], "landscape");
    assert_eq!(d2["resolution"], "1920x1080");
    assert_eq!(d2["location"], "");

    let got = app
        .get(&format!("/devices/{id}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(got, d);
    let newest = app
        .get("/devices?limit=1")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(newest["data"][0]["id"], d2["id"]);
    let events: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM events WHERE type = 'device.created' AND resource_id = ?1",
            [id],
            |r| r.get(0),
        )
    });
    assert_eq!(events, 1);
}

#[tokio::test]
async fn create_device_validation() {
    let app = TestApp::spawn().await;
    let before = device_count(&app);
    let grocers = company_id("Northwind Grocers");
    let cases = [
        (
            json!({"company_id": grocers, "name": "A", "platform": "android", "colour": "red"}),
            "colour",
        ),
        (
            json!({"company_id": grocers, "name": 42, "platform": "android"}),
            "/name",
        ),
        (
            json!({"company_id": grocers, "name": "A", "platform": "amiga"}),
            "/platform",
        ),
        (
            json!({"company_id": grocers, "name": "A", "platform": "android", "resolution": "1920*1080"}),
            "/resolution",
        ),
        (
            json!({"company_id": grocers, "name": "A", "platform": "android", "resolution": "0920x1080"}),
            "/resolution",
        ),
        (
            json!({"company_id": grocers, "name": "", "platform": "android"}),
            "/name",
        ),
        (
            json!({"company_id": grocers, "name": "   ", "platform": "android"}),
            "/name",
        ),
        (
            json!({"company_id": grocers, "name": "x".repeat(101), "platform": "android"}),
            "/name",
        ),
        (
            json!({"company_id": grocers, "name": "A\u{7}", "platform": "android"}),
            "/name",
        ),
        (
            json!({"company_id": grocers, "name": "A", "platform": "android", "orientation": null}),
            "/orientation",
        ),
        (
            json!({"company_id": "acme", "name": "A", "platform": "android"}),
            "/company_id",
        ),
        (json!({"name": "A", "platform": "android"}), ""),
    ];
    for (body, field) in cases {
        let p = app
            .post("/devices")
            .key("northwind-readwrite")
            .json(&body)
            .send()
            .await
            .problem(422);
        let errors = p["errors"].as_array().expect("errors");
        assert!(
            errors
                .iter()
                .any(|e| e["field"].as_str().unwrap().contains(field)),
            "{body} -> {p}"
        );
    }
    // Several problems are reported at once.
    let p = app
        .post("/devices")
        .key("northwind-readwrite")
        .json(&json!({"company_id": grocers, "name": "", "platform": "amiga"}))
        .send()
        .await
        .problem(422);
    assert_eq!(p["errors"].as_array().unwrap().len(), 2);

    let bad_json = app
        .post("/devices")
        .key("northwind-readwrite")
        .raw("application/json", "{\"name\": ")
        .send()
        .await;
    bad_json.problem(400);
    app.post("/devices")
        .key("northwind-readwrite")
        .raw("text/plain", "name=A")
        .send()
        .await
        .problem(415);
    assert_eq!(device_count(&app), before, "nothing written");
}

#[tokio::test]
async fn create_device_in_invisible_company_is_404() {
    let app = TestApp::spawn().await;
    let before = device_count(&app);
    app.post("/devices")
        .key("northwind-grocers-write")
        .json(&new_device("Northwind Pharmacy"))
        .send()
        .await
        .problem(404);
    app.post("/devices")
        .key("harborview-readwrite")
        .json(&new_device("Northwind Grocers"))
        .send()
        .await
        .problem(404);
    app.post("/devices")
        .key("northwind-readwrite")
        .json(&json!({"company_id": "cmp_doesnotexist", "name": "A", "platform": "linux"}))
        .send()
        .await
        .problem(404);
    assert_eq!(device_count(&app), before);
}

#[tokio::test]
async fn read_only_keys_cannot_write_devices() {
    let app = TestApp::spawn().await;
    let before = device_count(&app);
    let d = fixture_device(&app, "Northwind Grocers", "online").await;
    let id = d["id"].as_str().unwrap();
    for key in [
        "northwind-readonly",
        "northwind-pharmacy-read",
        "northwind-ads-editor",
    ] {
        let p = app
            .post("/devices")
            .key(key)
            .json(&new_device("Northwind Grocers"))
            .send()
            .await
            .problem(403);
        assert_eq!(p["missing_scope"], "devices:write");
        app.patch(&format!("/devices/{id}"))
            .key(key)
            .json(&json!({"name": "Hacked"}))
            .send()
            .await
            .problem(403);
        app.delete(&format!("/devices/{id}"))
            .key(key)
            .send()
            .await
            .problem(403);
        app.post(&format!("/devices/{id}/heartbeat"))
            .key(key)
            .json(&json!({}))
            .send()
            .await
            .problem(403);
    }
    assert_eq!(device_count(&app), before);
    let mut after = app
        .get(&format!("/devices/{id}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    // The heartbeat's age is the request's own (the system clock may pass a second meanwhile).
    let mut d = d.clone();
    for v in [&mut after, &mut d] {
        v.as_object_mut().unwrap().remove("seconds_since_heartbeat");
    }
    assert_eq!(after, d, "unchanged");
}

#[tokio::test]
async fn plan_limit_refuses_extra_devices() {
    let app = TestApp::spawn().await;
    // Bluefin Cafés: Starter plan, 10 devices allowed, 5 in the fixtures.
    let bluefin = company_id("Bluefin Cafés");
    for i in 0..5 {
        let r = app
            .post("/devices")
            .key("harborview-readwrite")
            .json(
                &json!({"company_id": bluefin, "name": format!("Extra {i}"), "platform": "webos"}),
            )
            .send()
            .await;
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let p = app
        .post("/devices")
        .key("harborview-readwrite")
        .json(&json!({"company_id": bluefin, "name": "One too many", "platform": "webos"}))
        .send()
        .await
        .problem(409);
    assert!(p["detail"].as_str().unwrap().contains("10"), "{p}");
    let n: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM devices WHERE company_id = ?1",
            [&bluefin],
            |r| r.get(0),
        )
    });
    assert_eq!(n, 10);
}

#[tokio::test]
async fn update_device_with_if_match() {
    let app = TestApp::spawn().await;
    let d = fixture_device(&app, "Northwind Grocers", "online").await;
    let id = d["id"].as_str().unwrap();
    let path = format!("/devices/{id}");

    let r = app
        .patch(&path)
        .key("northwind-grocers-write")
        .header("if-match", "\"v1\"")
        .json(&json!({"name": "Entrance Left", "orientation": "portrait", "resolution": "2160x3840", "platform": "android", "location": ""}))
        .send()
        .await;
    let updated = r.ok();
    assert_eq!(r.header("etag"), Some("\"v2\""));
    assert_eq!(updated["name"], "Entrance Left");
    assert_eq!(updated["orientation"], "portrait");
    assert_eq!(updated["resolution"], "2160x3840");
    assert_eq!(updated["platform"], "android");
    assert_eq!(updated["location"], "");
    assert_eq!(updated["company_id"], d["company_id"]);
    assert_eq!(updated["created_at"], d["created_at"]);

    // A stale ETag is refused and nothing changes.
    let p = app
        .patch(&path)
        .key("northwind-grocers-write")
        .header("if-match", "\"v1\"")
        .json(&json!({"name": "Stale"}))
        .send()
        .await
        .problem(412);
    assert_eq!(p["current_etag"], "\"v2\"");
    let now = app.get(&path).key("northwind-readonly").send().await;
    assert_eq!(now.ok()["name"], "Entrance Left");
    assert_eq!(now.header("etag"), Some("\"v2\""));

    // Without If-Match the write applies.
    let r = app
        .patch(&path)
        .key("northwind-readwrite")
        .json(&json!({"location": "Back office"}))
        .send()
        .await;
    assert_eq!(r.ok()["location"], "Back office");
    assert_eq!(r.header("etag"), Some("\"v3\""));

    for (body, field) in [
        (json!({}), ""),
        (
            json!({"company_id": company_id("Northwind Pharmacy")}),
            "company_id",
        ),
        (json!({"name": null}), "/name"),
        (json!({"orientation": "diagonal"}), "/orientation"),
        (json!({"resolution": "big"}), "/resolution"),
        (json!({"name": ["x"]}), "/name"),
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
    app.patch(&path)
        .key("northwind-readwrite")
        .raw("application/json", "{nope}")
        .send()
        .await
        .problem(400);
    for key in ["harborview-readwrite", "harborview-admin"] {
        app.patch(&path)
            .key(key)
            .json(&json!({"name": "Mine now"}))
            .send()
            .await
            .problem(404);
    }
    let final_ = app.get(&path).key("northwind-readonly").send().await;
    assert_eq!(final_.header("etag"), Some("\"v3\""));
    assert_eq!(final_.ok()["company_id"], d["company_id"]);
}

#[tokio::test]
async fn delete_device_honours_if_match() {
    let app = TestApp::spawn().await;
    let d = fixture_device(&app, "Northwind Pharmacy", "offline").await;
    let id = d["id"].as_str().unwrap();
    let path = format!("/devices/{id}");
    app.delete(&path)
        .key("harborview-readwrite")
        .send()
        .await
        .problem(404);
    app.delete(&path)
        .key("northwind-grocers-write")
        .send()
        .await
        .problem(404);
    app.delete(&path)
        .key("northwind-readwrite")
        .header("if-match", "\"v7\"")
        .send()
        .await
        .problem(412);
    app.get(&path).key("northwind-readonly").send().await.ok();

    app.assert_deleted(&path, "\"v1\"").await;
    let left: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM ad_assignments WHERE device_id = ?1",
            [id],
            |r| r.get(0),
        )
    });
    assert_eq!(left, 0);
}

#[tokio::test]
async fn create_device_idempotency_key_replays() {
    let app = TestApp::spawn().await;
    let body = new_device("Northwind Grocers");
    let first = app
        .post("/devices")
        .key("northwind-readwrite")
        .header("idempotency-key", "create-lobby-1")
        .json(&body)
        .send()
        .await;
    assert_eq!(first.status, 201);
    assert_eq!(first.header("idempotent-replayed"), None);
    let second = app
        .post("/devices")
        .key("northwind-readwrite")
        .header("idempotency-key", "create-lobby-1")
        .json(&body)
        .send()
        .await;
    assert_eq!(second.status, 201);
    assert_eq!(second.header("idempotent-replayed"), Some("true"));
    assert_eq!(second.json()["id"], first.json()["id"]);
    let n: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM devices WHERE name = 'Lobby Screen'",
            [],
            |r| r.get(0),
        )
    });
    assert_eq!(n, 1);

    let mut other = body.clone();
    other["name"] = json!("Another Screen");
    app.post("/devices")
        .key("northwind-readwrite")
        .header("idempotency-key", "create-lobby-1")
        .json(&other)
        .send()
        .await
        .problem(409);
}

#[tokio::test]
async fn list_device_ads_pages_through_assignments() {
    let app = TestApp::spawn().await;
    // The device with the most assignments in the Northwind account.
    let (device, n): (String, i64) = app.sql(|c| {
        c.query_row(
            "SELECT x.device_id, count(*) FROM ad_assignments x JOIN devices d ON d.id = x.device_id
             JOIN companies c ON c.id = d.company_id
             WHERE c.name LIKE 'Northwind%' GROUP BY x.device_id ORDER BY count(*) DESC, x.device_id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    assert!(n >= 3, "enough to need several pages");
    let expected: Vec<String> = app.sql(|c| {
        let mut s =
            c.prepare("SELECT ad_id FROM ad_assignments WHERE device_id = ?1 ORDER BY ad_id DESC")?;
        let rows = s.query_map([&device], |r| r.get(0))?;
        rows.collect()
    });
    let walked = app
        .collect_all(&format!("/devices/{device}/ads"), "northwind-readonly", 2)
        .await;
    let ids: Vec<String> = walked
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, expected);
    for a in &walked {
        assert_eq!(a["object"], "ad");
        assert!(a["device_ids"].as_array().unwrap().contains(&json!(device)));
    }
    let d = app
        .get(&format!("/devices/{device}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(d["assigned_ad_count"], n);

    app.get(&format!("/devices/{device}/ads"))
        .key("harborview-readwrite")
        .send()
        .await
        .problem(404);
    // Ads are listed under the devices area: devices:read is enough.
    app.get(&format!("/devices/{device}/ads"))
        .key("northwind-ads-editor")
        .send()
        .await
        .ok();
}

#[tokio::test]
async fn diagnostics_of_fixture_devices() {
    let app = TestApp::spawn().await;
    let online = fixture_device(&app, "Northwind Grocers", "online").await;
    let id = online["id"].as_str().unwrap();
    let diag = app
        .get(&format!("/devices/{id}/diagnostics"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(diag["object"], "device_diagnostics");
    assert_eq!(diag["device_id"], id);
    assert_eq!(diag["status"], "online");
    assert_eq!(diag["last_seen"], online["last_heartbeat_at"]);
    let age = diag["seconds_since_heartbeat"].as_i64().unwrap();
    assert!((0..=300).contains(&age));
    assert_eq!(diag["offline_after_seconds"], 300);
    assert_eq!(diag["current_ad"]["id"], online["current_ad_id"]);
    assert!(diag["current_ad"]["name"].is_string());
    assert_eq!(diag["app_version"], online["app_version"]);
    let storage = &diag["storage"];
    let (used, total) = (
        storage["used_mb"].as_i64().unwrap(),
        storage["total_mb"].as_i64().unwrap(),
    );
    let free = storage["free_percent"].as_f64().unwrap();
    let expected = (total - used) as f64 / total as f64 * 100.0;
    assert!((free - expected).abs() <= 0.05, "{free} vs {expected}");
    assert!(diag["uptime_seconds"].as_i64().unwrap() > 0);
    assert!(diag["recent_playback_errors"].is_array());

    // The device with playback errors lists them, newest first, with their fields.
    let (with_errors, n): (String, i64) = app.sql(|c| {
        c.query_row(
            "SELECT e.device_id, count(*) FROM playback_errors e JOIN devices d ON d.id = e.device_id
             JOIN companies c ON c.id = d.company_id WHERE c.name LIKE 'Northwind%'
             GROUP BY e.device_id ORDER BY count(*) DESC, e.device_id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    let diag = app
        .get(&format!("/devices/{with_errors}/diagnostics"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let errors = diag["recent_playback_errors"].as_array().unwrap();
    assert_eq!(errors.len() as i64, n);
    let times: Vec<&str> = errors
        .iter()
        .map(|e| e["occurred_at"].as_str().unwrap())
        .collect();
    let mut sorted = times.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(times, sorted);
    for e in errors {
        for f in ["id", "code", "message", "ad_id", "occurred_at"] {
            assert!(e.get(f).is_some(), "{e}");
        }
    }

    let never = fixture_device(&app, "Northwind Pharmacy", "never_seen").await;
    let diag = app
        .get(&format!(
            "/devices/{}/diagnostics",
            never["id"].as_str().unwrap()
        ))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(diag["status"], "never_seen");
    assert!(diag["last_seen"].is_null() && diag["seconds_since_heartbeat"].is_null());

    let offline = fixture_device(&app, "Northwind Pharmacy", "offline").await;
    let diag = app
        .get(&format!(
            "/devices/{}/diagnostics",
            offline["id"].as_str().unwrap()
        ))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(diag["status"], "offline");
    assert!(diag["seconds_since_heartbeat"].as_i64().unwrap() > 300);

    app.get(&format!("/devices/{id}/diagnostics"))
        .key("harborview-readwrite")
        .send()
        .await
        .problem(404);
    app.get(&format!("/devices/{id}/diagnostics"))
        .key("northwind-pharmacy-read")
        .send()
        .await
        .problem(404);
}

/// A device keeps its latest 100 playback errors, newest by when they occurred: a player that
/// reports 130 errors over six heartbeats keeps the last 100, and diagnostics shows the newest 20,
/// newest first. The fleet records its simulated errors through the same rule.
#[tokio::test]
async fn a_device_keeps_its_latest_hundred_playback_errors() {
    let app = TestApp::spawn().await;
    let created = app
        .post("/devices")
        .key("northwind-readwrite")
        .json(&new_device("Northwind Grocers"))
        .send()
        .await
        .ok();
    let id = created["id"].as_str().unwrap();
    let hb = format!("/devices/{id}/heartbeat");
    let mut sent = 0;
    for beat in 0..7 {
        let n = if beat == 6 { 10 } else { 20 };
        let errors: Vec<Value> = (sent..sent + n)
            .map(|i| json!({"code": format!("E{i:03}"), "message": format!("error {i}")}))
            .collect();
        sent += n;
        app.post(&hb)
            .key("northwind-readwrite")
            .json(&json!({"playback_errors": errors}))
            .send()
            .await
            .ok();
        // Each heartbeat's errors occur a minute after the last one's.
        app.post("/_sandbox/clock/advance")
            .key("sandbox-operator")
            .json(&json!({"seconds": 60}))
            .send()
            .await
            .ok();
    }
    assert_eq!(sent, 130);
    let kept: Vec<String> = app.sql(|c| {
        c.prepare("SELECT code FROM playback_errors WHERE device_id = ?1 ORDER BY code")?
            .query_map([id], |r| r.get(0))?
            .collect()
    });
    let want: Vec<String> = (30..130).map(|i| format!("E{i:03}")).collect();
    assert_eq!(kept, want, "the oldest 30 are gone, the latest 100 kept");

    let diag = app
        .get(&format!("/devices/{id}/diagnostics"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let shown: Vec<&str> = diag["recent_playback_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    let mut newest: Vec<String> = (110..130).map(|i| format!("E{i:03}")).collect();
    newest.reverse();
    assert_eq!(shown, newest, "the newest 20, newest first");
}

#[tokio::test]
async fn heartbeat_updates_status_and_diagnostics() {
    let app = TestApp::spawn().await;
    let created = app
        .post("/devices")
        .key("northwind-readwrite")
        .json(&new_device("Northwind Grocers"))
        .send()
        .await
        .ok();
    let id = created["id"].as_str().unwrap();
    assert_eq!(created["status"], "never_seen");
    let hb = format!("/devices/{id}/heartbeat");

    // An ad of the company that is not assigned to this device cannot be "playing".
    let ad = app
        .post("/ads")
        .key("northwind-readwrite")
        .json(&json!({"company_id": company_id("Northwind Grocers"), "name": "Deli", "headline": "Fresh", "status": "active"}))
        .send()
        .await
        .ok();
    let ad_id = ad["id"].as_str().unwrap();
    let p = app
        .post(&hb)
        .key("northwind-readwrite")
        .json(&json!({"current_ad_id": ad_id}))
        .send()
        .await
        .problem(409);
    assert!(p["detail"].as_str().unwrap().contains("/current_ad_id"));
    let still = app
        .get(&format!("/devices/{id}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(
        still["status"], "never_seen",
        "a refused heartbeat records nothing"
    );

    app.post(&format!("/ads/{ad_id}/devices"))
        .key("northwind-readwrite")
        .json(&json!({"device_id": id}))
        .send()
        .await
        .ok();
    let diag = app
        .post(&hb)
        .key("northwind-readwrite")
        .json(&json!({
            "app_version": "5.0.1",
            "current_ad_id": ad_id,
            "storage_used_mb": 1024,
            "storage_total_mb": 4096,
            "uptime_seconds": 3600,
            "playback_errors": [
                {"code": "NETWORK_TIMEOUT", "message": "Fetching media timed out", "ad_id": ad_id},
                {"code": "DECODER_RESET", "message": "Decoder restarted"}
            ]
        }))
        .send()
        .await
        .ok();
    assert_eq!(diag["object"], "device_diagnostics");
    assert_eq!(diag["status"], "online");
    assert!(diag["seconds_since_heartbeat"].as_i64().unwrap() <= 5);
    assert_eq!(diag["app_version"], "5.0.1");
    assert_eq!(diag["current_ad"], json!({"id": ad_id, "name": "Deli"}));
    assert_eq!(
        diag["storage"],
        json!({"used_mb": 1024, "total_mb": 4096, "free_percent": 75.0})
    );
    assert_eq!(diag["uptime_seconds"], 3600);
    let errors = diag["recent_playback_errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2);
    let codes: HashSet<&str> = errors.iter().map(|e| e["code"].as_str().unwrap()).collect();
    assert_eq!(codes, HashSet::from(["NETWORK_TIMEOUT", "DECODER_RESET"]));

    let device = app
        .get(&format!("/devices/{id}"))
        .key("northwind-readonly")
        .send()
        .await;
    // v2: the ad assigned above moved it (the device shows `assigned_ad_count`); the heartbeat's
    // telemetry did not.
    assert_eq!(
        device.header("etag"),
        Some("\"v2\""),
        "telemetry keeps the ETag"
    );
    let device = device.json();
    assert_eq!(device["status"], "online");
    assert_eq!(device["last_heartbeat_at"], diag["last_seen"]);
    assert_eq!(device["current_ad_id"], ad_id);
    assert_eq!(device["app_version"], "5.0.1");
    let fetched = app
        .get(&format!("/devices/{id}/diagnostics"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(
        fetched["recent_playback_errors"],
        diag["recent_playback_errors"]
    );
    assert_eq!(fetched["storage"], diag["storage"]);
    let online = app
        .collect_all("/devices?status=online", "northwind-readonly", 50)
        .await;
    assert!(online.iter().any(|d| d["id"] == id));

    // A bare heartbeat keeps the telemetry; clearing the current ad is explicit.
    let diag = app
        .post(&hb)
        .key("northwind-readwrite")
        .json(&json!({"current_ad_id": null}))
        .send()
        .await
        .ok();
    assert!(diag["current_ad"].is_null());
    assert_eq!(diag["app_version"], "5.0.1");
    assert_eq!(diag["recent_playback_errors"].as_array().unwrap().len(), 2);

    let events: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM events WHERE type = 'device.heartbeat' AND resource_id = ?1",
            [id],
            |r| r.get(0),
        )
    });
    assert_eq!(events, 2);
}

#[tokio::test]
async fn heartbeat_validation() {
    let app = TestApp::spawn().await;
    let d = fixture_device(&app, "Northwind Grocers", "online").await;
    let id = d["id"].as_str().unwrap();
    let hb = format!("/devices/{id}/heartbeat");
    let too_many: Vec<Value> = (0..21)
        .map(|i| json!({"code": "E", "message": format!("error {i}")}))
        .collect();
    let harbor_ad: String = app.sql(|c| {
        c.query_row(
            "SELECT a.id FROM ads a JOIN companies c ON c.id = a.company_id WHERE c.name = 'Harborview Hotels' LIMIT 1",
            [],
            |r| r.get(0),
        )
    });
    for (body, field) in [
        (json!({"playback_errors": too_many}), "/playback_errors"),
        (json!({"storage_used_mb": -1}), "/storage_used_mb"),
        (json!({"storage_total_mb": 0}), "/storage_total_mb"),
        (json!({"uptime_seconds": "long"}), "/uptime_seconds"),
        (json!({"app_version": "v 1"}), "/app_version"),
        (json!({"app_version": null}), "/app_version"),
        (json!({"current_ad_id": "promo_x"}), "/current_ad_id"),
        (
            json!({"playback_errors": [{"code": "E", "message": ""}]}),
            "/playback_errors/0/message",
        ),
        (
            json!({"playback_errors": [{"code": "E", "message": "m", "extra": 1}]}),
            "/playback_errors",
        ),
        (json!({"status": "online"}), "status"),
    ] {
        let p = app
            .post(&hb)
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
    let p = app
        .post(&hb)
        .key("northwind-readwrite")
        .json(&json!({"playback_errors": [{"code": "E", "message": "m", "ad_id": harbor_ad}]}))
        .send()
        .await
        .problem(404);
    assert!(p["detail"]
        .as_str()
        .unwrap()
        .contains("/playback_errors/0/ad_id"));
    let after = app
        .get(&format!("/devices/{id}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(after["last_heartbeat_at"], d["last_heartbeat_at"]);
    app.post(&hb)
        .key("harborview-readwrite")
        .json(&json!({}))
        .send()
        .await
        .problem(404);
}
