//! `GET /events`: what changed, by which key, via REST or MCP; the visible companies only.

use crate::helpers::mcp::call_ok;
use crate::helpers::{company_id, key, TestApp};
use serde_json::{json, Value};

fn grocers_ad(app: &TestApp) -> String {
    let grocers = company_id("Northwind Grocers");
    app.sql(|c| {
        c.query_row(
            "SELECT id FROM ads WHERE company_id = ?1 ORDER BY id LIMIT 1",
            [&grocers],
            |r| r.get(0),
        )
    })
}

#[tokio::test]
async fn the_feed_names_the_actor_and_the_door() {
    let app = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    app.patch(&format!("/ads/{ad}"))
        .key("northwind-readwrite")
        .json(&json!({"headline": "Through REST"}))
        .send()
        .await
        .ok();
    let feed = app
        .get("/events?limit=5")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    let first = &feed["data"][0];
    assert_eq!(first["object"], "event");
    assert_eq!(first["type"], "ad.updated");
    assert_eq!(first["resource_id"], ad.as_str());
    assert_eq!(first["via"], "rest");
    assert_eq!(first["actor"], key("northwind-readwrite").key_id.as_str());
    // For people: the key's name, as its owner gave it.
    let key_name: String = app.sql(|c| {
        c.query_row(
            "SELECT name FROM api_keys WHERE id = ?1",
            [key("northwind-readwrite").key_id],
            |r| r.get(0),
        )
    });
    assert!(!key_name.starts_with("key_"));
    assert_eq!(first["actor_name"], key_name.as_str());
    let ad_name = app
        .get(&format!("/ads/{ad}"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok()["name"]
        .clone();
    assert_eq!(first["resource_name"], ad_name);
    assert_eq!(first["data"]["headline"], "Through REST");

    // The same change through MCP's two steps is recorded as MCP's, with the same actor.
    let preview = call_ok(
        &app,
        "northwind-readwrite",
        "prepare_ad_change",
        json!({"ad_id": ad, "changes": {"headline": "Through MCP"}}),
    )
    .await;
    let id = preview["confirmation_id"].as_str().unwrap().to_string();
    call_ok(
        &app,
        "northwind-readwrite",
        "confirm_change",
        json!({"confirmation_id": id}),
    )
    .await;
    let feed = app
        .get("/events?limit=1&type=ad.updated")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    let first = &feed["data"][0];
    assert_eq!(first["data"]["headline"], "Through MCP");
    assert_eq!(first["via"], "mcp");
    assert_eq!(first["actor"], key("northwind-readwrite").key_id.as_str());
}

#[tokio::test]
async fn the_feed_shows_only_what_the_credential_may_see() {
    let app = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    app.patch(&format!("/ads/{ad}"))
        .key("northwind-readwrite")
        .json(&json!({"headline": "Seen by Northwind only"}))
        .send()
        .await
        .ok();
    // Harborview sees none of Northwind's events; the Pharmacy-scoped key none of Grocers'.
    for other in ["harborview-readwrite", "northwind-pharmacy-read"] {
        let rows = app.collect_all("/events", other, 100).await;
        assert!(
            rows.iter().all(|e| e["resource_id"] != ad.as_str()),
            "{other} sees another company's event"
        );
    }
    // Events are the webhooks area's: a key without webhooks:read is refused.
    let denied = app
        .get("/events")
        .key("northwind-ads-editor")
        .send()
        .await
        .problem(403);
    assert_eq!(denied["missing_scope"], "webhooks:read");
    // Filters are checked like every other.
    app.get("/events?type=not.a.type")
        .key("northwind-readwrite")
        .send()
        .await
        .problem(422);
    let grocers = company_id("Northwind Grocers");
    let only = app
        .collect_all(
            &format!("/events?company_id={grocers}"),
            "northwind-readwrite",
            50,
        )
        .await;
    assert!(!only.is_empty() && only.iter().all(|e| e["company_id"] == grocers.as_str()));
}

/// The newest event of `type` the key sees.
async fn newest(app: &TestApp, event_type: &str) -> serde_json::Value {
    let feed = app
        .get(&format!("/events?limit=1&type={event_type}"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    feed["data"][0].clone()
}

#[tokio::test]
async fn plays_spends_and_phone_scans_are_named_not_ids() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let (device, device_name, ad, ad_name): (String, String, String, String) = app.sql(move |c| {
        c.query_row(
            "SELECT d.id, d.name, a.id, a.name FROM ad_assignments x JOIN devices d ON d.id = x.device_id
             JOIN ads a ON a.id = x.ad_id WHERE d.company_id = ?1 ORDER BY d.id, a.id LIMIT 1",
            [&grocers],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
    });
    // A play reported by a screen: the ad's name on the screen's name.
    let now = app
        .get("/_sandbox/clock")
        .key("sandbox-operator")
        .send()
        .await
        .ok()["now"]
        .as_str()
        .unwrap()
        .to_string();
    app.post(&format!("/devices/{device}/playbacks"))
        .key("northwind-readwrite")
        .json(&json!({"ad_id": ad, "started_at": now, "duration_seconds": 5}))
        .send()
        .await
        .ok();
    let played = newest(&app, "device.playback_recorded").await;
    assert_eq!(played["resource_type"], "playback");
    assert_eq!(
        played["resource_name"],
        format!("{ad_name} on {device_name}").as_str(),
        "{played}"
    );

    // Tokens spent on an activation: the ledger line's description, not its id.
    let promotion = "promo_0m5d4ruph555gp9x0h0h"; // Northwind Pharmacy's Sun Care: inactive, in its window
    app.post(&format!("/promotions/{promotion}/activate"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    let spent = newest(&app, "tokens.spent").await;
    let description: String = app.sql(|c| {
        c.query_row(
            "SELECT description FROM token_transactions ORDER BY id DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
    });
    assert!(!description.is_empty());
    assert_eq!(spent["resource_name"], description.as_str(), "{spent}");
    assert_eq!(
        spent["actor_name"],
        newest(&app, "promotion.activated").await["actor_name"]
    );

    // A phone opening a short link carries no credential: said so, not "unknown".
    let code: String = app.sql(move |c| {
        c.query_row(
            "SELECT q.code FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id
             WHERE p.company_id = ?1 ORDER BY q.id LIMIT 1",
            [company_id("Northwind Grocers")],
            |r| r.get(0),
        )
    });
    let r = app.get(&format!("/q/{code}")).send().await;
    assert_eq!(r.status, 302, "{}", r.text());
    let scanned = newest(&app, "qr_code.scanned").await;
    assert_eq!(scanned["via"], "rest", "{scanned}");
    assert_eq!(scanned["actor"], serde_json::Value::Null);
    assert_eq!(scanned["actor_name"], "a phone (short link)", "{scanned}");
}

/// An event of Northwind Grocers' first ad written straight into the database, as no writer of the
/// service would: `payload` as given, its verdict (V51) as given (`None`: an event recorded before
/// there was one). Its id sorts after every other, so it is the newest.
fn hand_written(app: &TestApp, n: u32, payload: &str, canonical: Option<bool>) -> String {
    let id = format!("evt_zzzzzzzzzzzzzzzzzz{n:02}");
    let (grocers, ad, now) = (
        company_id("Northwind Grocers"),
        grocers_ad(app),
        app.app.clock().now(),
    );
    let (event, payload) = (id.clone(), payload.to_string());
    app.sql(move |c| {
        c.execute(
            "INSERT INTO events (id, company_id, type, resource_type, resource_id, payload, created_at,
                                 payload_canonical)
             VALUES (?1, ?2, 'ad.updated', 'ad', ?3, ?4, ?5, ?6)",
            rusqlite::params![event, grocers, ad, payload, now, canonical],
        )
    });
    id
}

/// `data` as the page writes it: parsed and written again, or null for what does not parse.
fn written(payload: &str) -> String {
    let data: Value = serde_json::from_str(payload).unwrap_or(Value::Null);
    serde_json::to_string(&data).unwrap()
}

/// The page's bytes for event `id` hold `data` spelled `expected`, as the event's own answer does.
async fn lists_data(app: &TestApp, page: &str, id: &str, expected: &str) {
    let row = format!(r#"{{"id":"{id}","object":"event","#);
    let at = page
        .find(&row)
        .unwrap_or_else(|| panic!("{id} not on the page: {page}"));
    let data = format!(r#","data":{expected},"actor":"#);
    let end = page[at..].find(r#""created_at":"#).unwrap() + at;
    assert!(
        page[at..end].contains(&data),
        "{id}: {} instead of data {expected}",
        &page[at..end]
    );
    let one = app
        .get(&format!("/events/{id}"))
        .key("northwind-readwrite")
        .send()
        .await;
    assert_eq!(one.status, 200, "{}", one.text());
    assert!(one.text().contains(&data), "{}", one.text());
}

#[tokio::test]
async fn data_the_service_would_not_write_is_listed_as_parsing_writes_it() {
    let app = TestApp::spawn().await;
    // What the service records carries its verdict: copied as stored.
    let ad = grocers_ad(&app);
    app.patch(&format!("/ads/{ad}"))
        .key("northwind-readwrite")
        .json(&json!({"headline": "Caf\u{e9} \"quoted\" \\ back"}))
        .send()
        .await
        .ok();
    let unflagged: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM events WHERE payload_canonical IS NOT 1",
            [],
            |r| r.get(0),
        )
    });
    assert_eq!(
        unflagged, 0,
        "an event the service wrote is not said canonical"
    );

    let mut n = 0;
    let mut cases = Vec::new();
    for payload in [
        r#"{"price":1.50,"n":1}"#,        // a float prints otherwise
        r#"{"name":"caf\u00e9 \u0041"}"#, // escapes serde_json does not write
        r#"{"a":1,"b":2,"a":3}"#,         // a key twice: parsing keeps the last value
        r#"{ "a" : [1, 2] }"#,            // not compact
        r#"{"deep":{"x":"\/"}}"#,         // an escaped slash
        r#"{"headline":"plain"}"#,        // canonical, as an old row
        r#"{"oops""#,                     // damaged: null, as before
    ] {
        // As an old row (no verdict), and as the writer says of it (a debug build refuses a page
        // with a wrong verdict).
        let said = serde_json::from_str::<Value>(payload)
            .is_ok_and(|data| serde_json::to_string(&data).unwrap() == *payload);
        for canonical in [None, Some(said)] {
            n += 1;
            cases.push((hand_written(&app, n, payload, canonical), payload));
        }
    }
    let r = app
        .get("/events?limit=30")
        .key("northwind-readwrite")
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let _valid = r.json();
    let page = r.text();
    for (id, payload) in &cases {
        lists_data(&app, &page, id, &written(payload)).await;
    }
}

#[tokio::test]
async fn a_wrong_verdict_never_makes_the_page_invalid_json() {
    let app = TestApp::spawn().await;
    // The database refuses a row said canonical that is no JSON text.
    let (grocers, ad) = (company_id("Northwind Grocers"), grocers_ad(&app));
    let refused = app.app.db.conn().unwrap().execute(
        "INSERT INTO events (id, company_id, type, resource_type, resource_id, payload, created_at,
                             payload_canonical)
         VALUES ('evt_zzzzzzzzzzzzzzzzzz99', ?1, 'ad.updated', 'ad', ?2, '{\"oops\"', 0, 1)",
        [&grocers, &ad],
    );
    assert!(refused.is_err(), "{refused:?}");
    for flag in ["2", "'yes'"] {
        let refused = app.app.db.conn().unwrap().execute(
            &format!(
                "INSERT INTO events (id, company_id, type, resource_type, resource_id, payload,
                                     created_at, payload_canonical)
                 VALUES ('evt_zzzzzzzzzzzzzzzzzz98', ?1, 'ad.updated', 'ad', ?2, '{{}}', 0, {flag})"
            ),
            [&grocers, &ad],
        );
        assert!(refused.is_err(), "{flag}: {refused:?}");
    }

    // Valid JSON wrongly said canonical: a release build copies it (still JSON); a debug build
    // checks every verdict it reads and refuses the page.
    let id = hand_written(&app, 1, r#"{ "a" : 1.50 }"#, Some(true));
    let r = app
        .get("/events?limit=5")
        .key("northwind-readwrite")
        .send()
        .await;
    if cfg!(debug_assertions) {
        r.problem(500);
    } else {
        assert_eq!(r.status, 200, "{}", r.text());
        let page = r.json();
        assert_eq!(page["data"][0]["id"], id.as_str());
        assert_eq!(page["data"][0]["data"], json!({"a": 1.5}));
    }
}

#[tokio::test]
async fn a_database_of_events_older_than_their_verdict_still_lists_them() {
    let (dir, db) = crate::helpers::temp_db("events-before-v51");
    let app = TestApp::spawn_with(|l| l.database = Some(db.clone())).await;
    let ad = grocers_ad(&app);
    app.patch(&format!("/ads/{ad}"))
        .key("northwind-readwrite")
        .json(&json!({"headline": "Before the verdict"}))
        .send()
        .await
        .ok();
    app.stop().await;

    // The file as the version before V51 left it (V51's column gone, and the later migrations
    // undone: V52's index of playback errors), with an event of data the service would not write.
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "ALTER TABLE events DROP COLUMN payload_canonical;
             DROP INDEX playback_errors_by_device_time;
             CREATE INDEX playback_errors_by_device ON playback_errors(device_id, id);
             DELETE FROM refinery_schema_history WHERE version >= 51;",
        )
        .unwrap();
        assert_eq!(
            signage::db::latest_migration(),
            52,
            "a migration after V52 is undone here too"
        );
        let (grocers, now): (String, i64) = (
            company_id("Northwind Grocers"),
            c.query_row("SELECT max(created_at) FROM events", [], |r| r.get(0))
                .unwrap(),
        );
        c.execute(
            "INSERT INTO events (id, company_id, type, resource_type, resource_id, payload, created_at)
             VALUES ('evt_zzzzzzzzzzzzzzzzzz01', ?1, 'ad.updated', 'ad', ?2,
                     '{\"headline\":\"caf\\u00e9\",\"n\":2.0}', ?3)",
            rusqlite::params![grocers, ad, now],
        )
        .unwrap();
    }
    let old: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .unwrap();

    let app = TestApp::spawn_with(|l| l.database = Some(db.clone())).await;
    // Nothing was decided for the old rows: each is checked when read, as before.
    let decided: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM (SELECT payload_canonical FROM events ORDER BY rowid LIMIT ?1)
             WHERE payload_canonical IS NOT NULL",
            [old],
            |r| r.get(0),
        )
    });
    assert_eq!(decided, 0);
    let r = app
        .get("/events?limit=10")
        .key("northwind-readwrite")
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let page = r.json();
    let text = r.text();
    lists_data(
        &app,
        &text,
        "evt_zzzzzzzzzzzzzzzzzz01",
        r#"{"headline":"café","n":2.0}"#,
    )
    .await;
    let before = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "ad.updated" && e["id"] != "evt_zzzzzzzzzzzzzzzzzz01")
        .unwrap_or_else(|| panic!("the REST change is not listed: {page}"));
    assert_eq!(before["data"]["headline"], "Before the verdict");
    // A new event is recorded with its verdict.
    app.patch(&format!("/ads/{ad}"))
        .key("northwind-readwrite")
        .json(&json!({"headline": "After the verdict"}))
        .send()
        .await
        .ok();
    let verdict: Option<bool> = app.sql(|c| {
        c.query_row(
            "SELECT payload_canonical FROM events WHERE type = 'ad.updated'
             ORDER BY rowid DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
    });
    assert_eq!(verdict, Some(true));
    app.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}
