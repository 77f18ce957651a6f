//! Issue 33: list pages written from rows kept rendered between requests. Each test tries to get a
//! kept row served after what it shows has changed: a heartbeat, an assignment, a rename made by
//! another process behind the server's back, a snapshot restore, the clock alone (status and
//! heartbeat age are the request's), and each page must equal the rows read one by one.

use crate::helpers::*;
use serde_json::{json, Value};

const READER: &str = "northwind-readonly";

async fn devices(app: &TestApp, query: &str) -> Value {
    app.get(&format!("/devices?{query}"))
        .key(READER)
        .send()
        .await
        .ok()
}

fn named<'a>(page: &'a Value, id: &str) -> &'a Value {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == id)
        .unwrap_or_else(|| panic!("{id} not on the page"))
}

/// Another process's write, on the server's database file.
fn behind_its_back(app: &TestApp, sql: &str, id: &str) {
    let conn = rusqlite::Connection::open(app.app.db.path()).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    assert_eq!(conn.execute(sql, [id]).unwrap(), 1);
}

#[tokio::test]
async fn every_page_row_is_the_device_read_alone_byte_for_byte() {
    let app = crate::sandbox_clock::frozen_without_fleet().await;
    for query in [
        "limit=20",
        "limit=7",
        "limit=100&status=online",
        "q=a&limit=5",
    ] {
        // Twice: rendered, then kept.
        for _ in 0..2 {
            let r = app
                .get(&format!("/devices?{query}"))
                .key(READER)
                .send()
                .await;
            assert_eq!(r.status, 200);
            let page = r.json();
            // Compact JSON written by serde_json reads back to the same bytes.
            assert_eq!(serde_json::to_vec(&page).unwrap(), r.body.to_vec());
            for d in page["data"].as_array().unwrap() {
                let alone = app
                    .get(&format!("/devices/{}", d["id"].as_str().unwrap()))
                    .key(READER)
                    .send()
                    .await;
                assert_eq!(serde_json::to_vec(d).unwrap(), alone.body.to_vec());
            }
        }
    }
}

#[tokio::test]
async fn a_kept_row_never_outlives_a_write_to_what_it_shows() {
    let app = crate::sandbox_clock::frozen_without_fleet().await;
    let page = devices(&app, "limit=5").await;
    let id = page["data"][0]["id"].as_str().unwrap().to_string();
    devices(&app, "limit=5").await;

    // A heartbeat.
    app.post(&format!("/devices/{id}/heartbeat"))
        .key("northwind-readwrite")
        .json(&json!({"app_version": "9.9.9"}))
        .send()
        .await
        .ok();
    let page = devices(&app, "limit=5").await;
    assert_eq!(named(&page, &id)["app_version"], "9.9.9");
    assert_eq!(named(&page, &id)["seconds_since_heartbeat"], 0);

    // An assignment.
    let company = named(&page, &id)["company_id"]
        .as_str()
        .unwrap()
        .to_string();
    let count = named(&page, &id)["assigned_ad_count"].as_i64().unwrap();
    let ad = app
        .post("/ads")
        .key("northwind-readwrite")
        .json(
            &json!({"company_id": company, "name": "Kept", "headline": "Rows", "status": "active"}),
        )
        .send()
        .await
        .ok();
    app.post(&format!("/ads/{}/devices", ad["id"].as_str().unwrap()))
        .key("northwind-readwrite")
        .json(&json!({"device_id": id}))
        .send()
        .await
        .ok();
    let page = devices(&app, "limit=5").await;
    assert_eq!(named(&page, &id)["assigned_ad_count"], count + 1);

    // Another process renames it, and then removes the assignment.
    behind_its_back(
        &app,
        "UPDATE devices SET name = 'Renamed \"elsewhere\"' WHERE id = ?1",
        &id,
    );
    let page = devices(&app, "limit=5").await;
    assert_eq!(named(&page, &id)["name"], "Renamed \"elsewhere\"");
    behind_its_back(
        &app,
        "DELETE FROM ad_assignments WHERE device_id = ?1 AND ad_id IN (SELECT id FROM ads WHERE name = 'Kept')",
        &id,
    );
    let page = devices(&app, "limit=5").await;
    assert_eq!(named(&page, &id)["assigned_ad_count"], count);
}

#[tokio::test]
async fn status_and_heartbeat_age_are_the_requests_own() {
    let app = crate::sandbox_clock::frozen_without_fleet().await;
    let first = devices(&app, "limit=100").await;
    let generation = || -> i64 {
        app.sql(|c| c.query_row("SELECT devices FROM cache_generations", [], |r| r.get(0)))
    };
    let before = generation();
    app.post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": 7}))
        .send()
        .await
        .ok();
    let later = devices(&app, "limit=100").await;
    let mut seen = 0;
    for d in first["data"].as_array().unwrap() {
        let id = d["id"].as_str().unwrap();
        if let Some(age) = d["seconds_since_heartbeat"].as_i64() {
            assert_eq!(named(&later, id)["seconds_since_heartbeat"], age + 7);
            seen += 1;
        }
    }
    assert!(seen > 0);
    // Seven seconds moved no device's row (no presence changed): the rows were kept, the ages not.
    if generation() == before {
        assert_eq!(
            later["data"].as_array().unwrap().len(),
            first["data"].as_array().unwrap().len()
        );
    }
    // Past the offline threshold, status follows too.
    app.post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": 3600}))
        .send()
        .await
        .ok();
    let hour = devices(&app, "limit=100").await;
    for d in hour["data"].as_array().unwrap() {
        let expected = match d["seconds_since_heartbeat"].as_i64() {
            None => "never_seen",
            Some(age) if age <= 300 => "online",
            Some(_) => "offline",
        };
        assert_eq!(d["status"], expected, "{d}");
    }
}

#[tokio::test]
async fn a_restore_brings_back_the_rows_it_saved() {
    let app = crate::sandbox_clock::frozen_without_fleet().await;
    let page = devices(&app, "limit=3").await;
    let id = page["data"][0]["id"].as_str().unwrap().to_string();
    let name = page["data"][0]["name"].clone();
    let companies = app.get("/companies").key(READER).send().await.ok();
    app.post("/_sandbox/snapshots")
        .key("sandbox-operator")
        .json(&json!({"name": "kept"}))
        .send()
        .await
        .ok();
    app.patch(&format!("/devices/{id}"))
        .key("northwind-readwrite")
        .json(&json!({"name": "After the snapshot"}))
        .send()
        .await
        .ok();
    let cmp = companies["data"][0]["id"].as_str().unwrap().to_string();
    behind_its_back(
        &app,
        "UPDATE companies SET name = 'Renamed' WHERE id = ?1",
        &cmp,
    );
    assert_eq!(
        named(&devices(&app, "limit=3").await, &id)["name"],
        "After the snapshot"
    );
    let renamed = app.get("/companies").key(READER).send().await.ok();
    assert_eq!(renamed["data"][0]["name"], "Renamed");
    app.post("/_sandbox/snapshots/kept/restore")
        .key("sandbox-operator")
        .send()
        .await
        .ok();
    assert_eq!(named(&devices(&app, "limit=3").await, &id)["name"], name);
    assert_eq!(
        app.get("/companies").key(READER).send().await.ok(),
        companies
    );
}

#[tokio::test]
async fn company_pages_fit_their_index_and_equal_the_companies_read_alone() {
    let app = TestApp::spawn().await;
    for name in [READER, "northwind-pharmacy-read", "harborview-readwrite"] {
        for query in ["", "?limit=1", "?q=north"] {
            let r = app
                .get(&format!("/companies{query}"))
                .key(name)
                .send()
                .await;
            assert_eq!(r.status, 200);
            let page = r.json();
            assert_eq!(serde_json::to_vec(&page).unwrap(), r.body.to_vec());
            for c in page["data"].as_array().unwrap() {
                let alone = app
                    .get(&format!("/companies/{}", c["id"].as_str().unwrap()))
                    .key(name)
                    .send()
                    .await;
                assert_eq!(serde_json::to_vec(c).unwrap(), alone.body.to_vec());
            }
        }
        let all = app.collect_all("/companies", name, 1).await;
        let k = key(name);
        let expected: Vec<String> = demo()
            .companies
            .iter()
            .filter(|(id, _, account)| {
                *account == k.account_id && k.company_scope.as_ref().is_none_or(|c| c == id)
            })
            .map(|(id, _, _)| id.clone())
            .collect();
        let mut got: Vec<String> = all
            .iter()
            .map(|c| c["id"].as_str().unwrap().into())
            .collect();
        got.sort();
        let mut expected = expected;
        expected.sort();
        assert_eq!(got, expected, "{name}");
    }
    // Neither list query builds a temporary b-tree: each walks an index in id order.
    for (scoped, search) in [(false, false), (true, false), (false, true), (true, true)] {
        let sql = signage::routes::companies::page_ids_sql(scoped, search);
        let plan: Vec<String> = app.sql(|c| {
            c.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?
                .query_map(["a", "b", "1", "x", "a"], |r| r.get(3))?
                .collect()
        });
        let plan = plan.join(" | ");
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
        assert!(
            plan.contains("INDEX") || plan.contains("PRIMARY KEY"),
            "{plan}"
        );
    }
}
