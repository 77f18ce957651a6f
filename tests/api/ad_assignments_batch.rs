//! Tests: ad_assignments_batch. `POST /ads/{id}/assignments` puts one ad on many screens and takes
//! it off others in one all-or-nothing write (at most 100 screens, each named once, all of the
//! ad's company), with one event per screen that changes; `prepare_ad_assignments` previews it
//! screen by screen and confirm_change applies it.

use crate::helpers::mcp::{call_err, call_ok, rpc, tool_names};
use crate::helpers::{company_id, TestApp};
use serde_json::{json, Value};

const RW: &str = "northwind-readwrite";

/// An ad of Northwind Grocers with at least one screen, `n` of its company's screens it is not
/// on, and one it is on.
fn ad_and_screens(app: &TestApp, n: usize) -> (String, Vec<String>, String) {
    let grocers = company_id("Northwind Grocers");
    app.sql(|c| {
        let ad: String = c.query_row(
            "SELECT min(a.id) FROM ads a WHERE a.company_id = ?1 AND a.status <> 'archived'
               AND EXISTS (SELECT 1 FROM ad_assignments x WHERE x.ad_id = a.id)",
            [&grocers],
            |r| r.get(0),
        )?;
        let mut s = c.prepare(
            "SELECT d.id FROM devices d WHERE d.company_id = ?1 AND NOT EXISTS
               (SELECT 1 FROM ad_assignments x WHERE x.device_id = d.id AND x.ad_id = ?2)
             ORDER BY d.id LIMIT ?3",
        )?;
        let free: Vec<String> = s
            .query_map(rusqlite::params![grocers, ad, n as i64], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let on: String = c.query_row(
            "SELECT min(device_id) FROM ad_assignments WHERE ad_id = ?1",
            [&ad],
            |r| r.get(0),
        )?;
        Ok((ad, free, on))
    })
}

fn pharmacy_device(app: &TestApp) -> String {
    let pharmacy = company_id("Northwind Pharmacy");
    app.sql(|c| {
        c.query_row(
            "SELECT min(id) FROM devices WHERE company_id = ?1",
            [&pharmacy],
            |r| r.get(0),
        )
    })
}

/// The ad's screens, and its assignment events, as stored.
fn state(app: &TestApp, ad: &str) -> (Vec<String>, i64) {
    app.sql(|c| {
        let mut s =
            c.prepare("SELECT device_id FROM ad_assignments WHERE ad_id = ?1 ORDER BY 1")?;
        let on: Vec<String> = s.query_map([ad], |r| r.get(0))?.collect::<Result<_, _>>()?;
        let events: i64 = c.query_row(
            "SELECT count(*) FROM events WHERE resource_id = ?1
               AND type IN ('ad.assigned', 'ad.unassigned')",
            [ad],
            |r| r.get(0),
        )?;
        Ok((on, events))
    })
}

fn events_of(app: &TestApp, ad: &str, kind: &str) -> Vec<Value> {
    app.sql(|c| {
        let mut s = c.prepare(
            "SELECT payload FROM events WHERE resource_id = ?1 AND type = ?2 ORDER BY id",
        )?;
        let rows: Vec<String> = s
            .query_map([ad, kind], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        Ok(rows
            .iter()
            .map(|p| serde_json::from_str(p).unwrap())
            .collect())
    })
}

#[tokio::test]
async fn many_screens_change_in_one_write_with_one_event_each() {
    let app = TestApp::spawn().await;
    let (ad, free, on) = ad_and_screens(&app, 3);
    assert_eq!(free.len(), 3);
    let (before, events_before) = state(&app, &ad);
    let body = json!({"assign_device_ids": free, "unassign_device_ids": [on]});
    let r = app
        .post(&format!("/ads/{ad}/assignments"))
        .key(RW)
        .json(&body)
        .send()
        .await;
    let batch = r.ok();
    assert_eq!(batch["object"], "ad_assignment_batch");
    assert_eq!(batch["ad_id"], ad);
    assert_eq!(batch["company_id"], company_id("Northwind Grocers"));
    let devices = batch["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 4, "every screen asked for: {batch}");
    for (i, d) in free.iter().enumerate() {
        assert_eq!(devices[i]["device_id"], *d);
        assert_eq!(
            (&devices[i]["assigned"], &devices[i]["changed"]),
            (&json!(true), &json!(true))
        );
        assert!(devices[i]["assigned_at"].is_string());
    }
    assert_eq!(
        devices[3],
        json!({"device_id": on, "assigned": false, "changed": true, "assigned_at": null})
    );
    let (after, events_after) = state(&app, &ad);
    let mut expected: Vec<String> = before.into_iter().filter(|d| *d != on).collect();
    expected.extend(free.iter().cloned());
    expected.sort();
    assert_eq!(after, expected);
    assert_eq!(events_after, events_before + 4, "one event per screen");
    // The events are the one-screen routes' own.
    let assigned = events_of(&app, &ad, "ad.assigned");
    let last = &assigned[assigned.len() - 1];
    assert_eq!(last["object"], "ad_assignment", "{last}");
    assert_eq!(last["device_id"], free[2]);
    assert_eq!(last["newly_assigned"], true);
    let unassigned = events_of(&app, &ad, "ad.unassigned");
    assert_eq!(unassigned[unassigned.len() - 1]["device_id"], on);

    // The same request again changes nothing and emits nothing: a retry is harmless.
    let again = app
        .post(&format!("/ads/{ad}/assignments"))
        .key(RW)
        .json(&body)
        .send()
        .await
        .ok();
    assert!(again["devices"]
        .as_array()
        .unwrap()
        .iter()
        .all(|d| d["changed"] == false));
    assert_eq!(
        again["devices"][0]["assigned_at"],
        devices[0]["assigned_at"]
    );
    assert_eq!(state(&app, &ad), (after, events_after));
}

#[tokio::test]
async fn a_bad_batch_writes_nothing_and_names_every_field() {
    let app = TestApp::spawn().await;
    let (ad, free, on) = ad_and_screens(&app, 2);
    let other = pharmacy_device(&app);
    let path = format!("/ads/{ad}/assignments");
    let before = state(&app, &ad);
    let post = |body: Value| {
        let app = &app;
        let path = path.clone();
        async move { app.post(&path).key(RW).json(&body).send().await }
    };

    // Another company's screen among good ones: 404, naming it, and not one write.
    let r = post(json!({"assign_device_ids": [free[0], other, free[1]]})).await;
    let p = r.problem(404);
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains("/assign_device_ids/1") && detail.contains(&other),
        "{detail}"
    );
    assert!(
        !detail.contains(&free[0]),
        "only the missing ones: {detail}"
    );
    // A screen that does not exist reads the same.
    let r = post(json!({"unassign_device_ids": ["dev_0000000000000000000000"]})).await;
    r.problem(404);

    // A screen named twice, in one list or across both.
    let r = post(json!({"assign_device_ids": [free[0], free[0]]})).await;
    let p = r.problem(422);
    assert_eq!(p["errors"][0]["field"], "/assign_device_ids/1");
    assert_eq!(p["errors"][0]["code"], "duplicate");
    let r = post(json!({"assign_device_ids": [on], "unassign_device_ids": [on]})).await;
    let p = r.problem(422);
    assert_eq!(p["errors"][0]["field"], "/unassign_device_ids/0");

    // Malformed ids, nothing at all, and more than 100 screens.
    let r = post(json!({"assign_device_ids": ["ad_123", free[0]]})).await;
    let p = r.problem(422);
    assert_eq!(p["errors"][0]["field"], "/assign_device_ids/0");
    assert_eq!(p["errors"][0]["code"], "invalid_id");
    post(json!({})).await.problem(422);
    post(json!({"assign_device_ids": []})).await.problem(422);
    let many: Vec<String> = (0..101).map(|i| format!("dev_{i:024}")).collect();
    let r = post(json!({"assign_device_ids": many[..60], "unassign_device_ids": many[60..]})).await;
    let p = r.problem(422);
    assert_eq!(p["errors"][0]["code"], "too_many", "{p}");
    assert!(p["errors"][0]["message"].as_str().unwrap().contains("100"));
    let r = post(json!({"device_ids": [free[0]]})).await;
    assert!(r.status == 400 || r.status == 422, "{}", r.text());

    assert_eq!(state(&app, &ad), before, "nothing was written");
}

#[tokio::test]
async fn keys_companies_states_and_versions_are_checked() {
    let app = TestApp::spawn().await;
    let (ad, free, _) = ad_and_screens(&app, 1);
    let path = format!("/ads/{ad}/assignments");
    let body = json!({"assign_device_ids": [free[0]]});
    let before = state(&app, &ad);

    let r = app
        .post(&path)
        .key("northwind-readonly")
        .json(&body)
        .send()
        .await;
    assert_eq!(r.problem(403)["missing_scope"], "ads:write");
    // A key scoped to the pharmacy does not see the grocers' ad: 404, as for any other.
    let r = app
        .post(&path)
        .key("northwind-pharmacy-read")
        .json(&body)
        .send()
        .await;
    assert!(r.status == 403 || r.status == 404, "{}", r.text());
    let r = app
        .post(&path)
        .key("harborview-readwrite")
        .json(&body)
        .send()
        .await;
    r.problem(404);
    // A key scoped to the grocers cannot reach the pharmacy's screen through the grocers' ad.
    let other = pharmacy_device(&app);
    let r = app
        .post(&path)
        .key("northwind-grocers-write")
        .json(&json!({"assign_device_ids": [free[0], other]}))
        .send()
        .await;
    r.problem(404);
    // A stale If-Match is 412.
    let r = app
        .post(&path)
        .key(RW)
        .header("if-match", "\"999\"")
        .json(&body)
        .send()
        .await;
    r.problem(412);
    assert_eq!(state(&app, &ad), before);

    // An area key with ads:write may; the current ETag is accepted.
    let etag = app
        .get(&format!("/ads/{ad}"))
        .key(RW)
        .send()
        .await
        .header("etag")
        .unwrap()
        .to_string();
    let r = app
        .post(&path)
        .key("northwind-ads-editor")
        .header("if-match", &etag)
        .json(&body)
        .send()
        .await;
    assert_eq!(r.ok()["devices"][0]["changed"], true);

    // An archived ad gains no screen; taking it off one still works.
    let (_, more, on) = ad_and_screens(&app, 1);
    app.patch(&format!("/ads/{ad}"))
        .key(RW)
        .json(&json!({"status": "archived"}))
        .send()
        .await
        .ok();
    let before = state(&app, &ad);
    let r = app
        .post(&path)
        .key(RW)
        .json(&json!({"assign_device_ids": [more[0]], "unassign_device_ids": [on]}))
        .send()
        .await;
    r.problem(409);
    assert_eq!(state(&app, &ad), before, "all or nothing");
}

#[tokio::test]
async fn an_idempotency_key_replays_the_batch() {
    let app = TestApp::spawn().await;
    let (ad, free, _) = ad_and_screens(&app, 2);
    let path = format!("/ads/{ad}/assignments");
    let body = json!({"assign_device_ids": free});
    let first = app
        .post(&path)
        .key(RW)
        .header("idempotency-key", "batch-1")
        .json(&body)
        .send()
        .await;
    let first_body = first.ok();
    let events = state(&app, &ad).1;
    let replay = app
        .post(&path)
        .key(RW)
        .header("idempotency-key", "batch-1")
        .json(&body)
        .send()
        .await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(
        replay.ok(),
        first_body,
        "the first answer, changed screens and all"
    );
    assert_eq!(state(&app, &ad).1, events);
    let r = app
        .post(&path)
        .key(RW)
        .header("idempotency-key", "batch-1")
        .json(&json!({"unassign_device_ids": free}))
        .send()
        .await;
    r.problem(409);
}

#[tokio::test]
async fn one_preview_and_one_confirmation_for_many_screens() {
    let app = TestApp::spawn().await;
    let (ad, free, on) = ad_and_screens(&app, 2);
    // One screen the ad is already on: listed, unchanged.
    let args = json!({"ad_id": ad, "assign_device_ids": [free[0], on, free[1]]});
    let before = state(&app, &ad);
    let preview = call_ok(&app, RW, "prepare_ad_assignments", args.clone()).await;
    assert_eq!(state(&app, &ad), before, "a preview writes nothing");
    let listed: Vec<(Value, Value)> = preview["after"]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["device_id"].clone(), d["changed"].clone()))
        .collect();
    assert_eq!(
        listed,
        [
            (json!(free[0]), json!(true)),
            (json!(on), json!(false)),
            (json!(free[1]), json!(true))
        ]
    );
    assert_eq!(
        preview["differences"],
        json!([
            {"field": format!("{}.assigned", free[0]), "current": false, "proposed": true},
            {"field": format!("{}.assigned", free[1]), "current": false, "proposed": true}
        ])
    );
    // The new assignments' time is the confirmation's; the existing one's is known.
    let set = preview["set_at_confirmation"].as_array().unwrap();
    assert!(set.contains(&json!("devices[0].assigned_at")), "{set:?}");
    assert!(!set.contains(&json!("devices[1].assigned_at")), "{set:?}");
    let done = call_ok(
        &app,
        RW,
        "confirm_change",
        json!({"confirmation_id": preview["confirmation_id"]}),
    )
    .await;
    assert_eq!(done["operation"], "changeAdAssignments");
    assert_eq!(done["result"]["devices"][2]["changed"], true);
    let (on_now, events) = state(&app, &ad);
    assert!(on_now.contains(&free[0]) && on_now.contains(&free[1]));
    assert_eq!(events, before.1 + 2);

    // Nothing left to change: no confirmation id.
    let e = call_err(&app, RW, "prepare_ad_assignments", args).await;
    assert!(e.contains("Nothing to change"), "{e}");
    // Another company's screen: refused at preview time, nothing prepared.
    let e = call_err(
        &app,
        RW,
        "prepare_ad_assignments",
        json!({"ad_id": ad, "unassign_device_ids": [pharmacy_device(&app)]}),
    )
    .await;
    assert!(
        e.contains("404") && e.contains("nothing was prepared"),
        "{e}"
    );
    // A read-only key is not offered the tool, and cannot call it.
    let ro = tool_names(&rpc(&app, "northwind-readonly", "tools/list", json!({})).await);
    assert!(!ro.contains(&"prepare_ad_assignments".to_string()));
    let e = call_err(
        &app,
        "northwind-readonly",
        "prepare_ad_assignments",
        json!({"ad_id": ad, "unassign_device_ids": [on]}),
    )
    .await;
    assert!(e.contains("cannot use prepare_ad_assignments"), "{e}");
    assert_eq!(state(&app, &ad).1, before.1 + 2);
}
