//! Issue 29 §1, the list rows: a "latest 5" widget, an assistant's one `list_ads`, a walk that
//! drops its filter (refused by the API itself), a walk that stops early, a one-time export of
//! many screens' ads, polling, and `If-Match: *`; each graded as the table says.

use crate::helpers::{company_id, mcp};
use crate::readiness_client::*;
use serde_json::json;
use std::time::Duration;

/// Row 6: a "latest 5 ads" widget reads one `limit=5` page with `has_more` and never walks it:
/// no misbehaviour (not observed, saying a single page is not a walk).
#[tokio::test]
async fn a_latest_five_widget_is_not_a_failed_walk() {
    let app = sandbox().await;
    for _ in 0..3 {
        let page = app
            .get("/ads?limit=5")
            .key("northwind-readonly")
            .send()
            .await
            .ok();
        assert_eq!(page["has_more"], true);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let r = report(&app).await;
    assert_eq!(status(&r, "pagination_walked"), "not_observed", "{r}");
    assert!(check(&r, "pagination_walked")["advice"]
        .as_str()
        .unwrap()
        .contains("not a walk"));
}

/// Row 7: an assistant calls `list_ads` with `limit: 3` once over MCP.
#[tokio::test]
async fn an_assistants_single_list_call_is_not_a_failed_walk() {
    let app = sandbox().await;
    let out = mcp::call_ok(&app, "northwind-readonly", "list_ads", json!({"limit": 3})).await;
    assert_eq!(out["has_more"], true, "{out}");
    let r = report(&app).await;
    assert_ne!(status(&r, "pagination_walked"), "fail", "{r}");
}

/// An assistant that walks with the `cursor` argument to the end passes.
#[tokio::test]
async fn an_assistant_that_walks_to_the_end_passes() {
    let app = sandbox().await;
    let mut args = json!({"limit": 10, "company_id": company_id("Northwind Grocers")});
    loop {
        let page = mcp::call_ok(&app, "northwind-readonly", "list_ads", args.clone()).await;
        match page["next_cursor"].as_str() {
            Some(c) if page["has_more"] == true => args["cursor"] = json!(c),
            _ => break,
        }
    }
    let r = report(&app).await;
    assert_eq!(status(&r, "pagination_walked"), "pass", "{r}");
}

/// Row 8: a walk that follows its cursor but drops its filter. The API refuses the cursor with
/// other filters (400 `cursor_mismatch`), so no row of another company comes back, and the check
/// fails on that refusal.
#[tokio::test]
async fn a_walk_that_drops_its_filter_is_refused_and_fails() {
    let app = sandbox().await;
    let grocers = company_id("Northwind Grocers");
    let first = app
        .get(&format!("/ads?company_id={grocers}&limit=5"))
        .key("northwind-readonly")
        .send()
        .await;
    let page = first.ok();
    assert!(page["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["company_id"] == grocers.as_str()));
    let cursor = page["next_cursor"].as_str().unwrap();
    let dropped = app
        .get(&format!("/ads?limit=5&cursor={cursor}"))
        .key("northwind-readonly")
        .send()
        .await;
    let p = dropped.problem(400);
    assert_eq!(p["code"], "cursor_mismatch");
    // With its filter, the very same cursor walks on.
    let next = app
        .get(&format!(
            "/ads?company_id={grocers}&limit=5&cursor={cursor}"
        ))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert!(next["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["company_id"] == grocers.as_str()));
    let r = report(&app).await;
    assert_eq!(status(&r, "pagination_walked"), "fail", "{r}");
    assert!(evidence(&r, "pagination_walked").contains(&rid(&dropped)));
}

/// Row 9: a walk that follows two cursors and stops with `has_more: true`.
#[tokio::test]
async fn a_walk_that_stops_with_more_to_read_fails() {
    let app = sandbox().await;
    let mut ids = Vec::new();
    let mut url = "/ads?limit=3".to_string();
    for _ in 0..3 {
        let r = app.get(&url).key("northwind-readonly").send().await;
        ids.push(rid(&r));
        let page = r.ok();
        assert_eq!(page["has_more"], true);
        url = format!(
            "/ads?limit=3&cursor={}",
            page["next_cursor"].as_str().unwrap()
        );
    }
    let r = report(&app).await;
    assert_eq!(status(&r, "pagination_walked"), "fail", "{r}");
    assert_eq!(evidence(&r, "pagination_walked"), ids.into_iter().collect());
}

/// A walk to `has_more: false`, with jittered pauses between pages, passes; so does one by
/// another key of the same client, with its own walk.
#[tokio::test]
async fn walks_to_the_end_pass() {
    let app = sandbox().await;
    let mut rng = Rng::new(11);
    for who in ["northwind-readonly", "northwind-pharmacy-read"] {
        let mut url = "/devices?limit=4".to_string();
        loop {
            let page = app.get(&url).key(who).send().await.ok();
            tokio::time::sleep(Duration::from_millis(rng.below(60))).await;
            match page["next_cursor"].as_str() {
                Some(c) if page["has_more"] == true => url = format!("/devices?limit=4&cursor={c}"),
                _ => break,
            }
        }
    }
    let r = report(&app).await;
    assert_eq!(status(&r, "pagination_walked"), "pass", "{r}");
}

/// Asking for a bigger first page instead of following the cursor still fails.
#[tokio::test]
async fn a_bigger_page_instead_of_the_cursor_fails() {
    let app = sandbox().await;
    let first = app
        .get("/devices?limit=2")
        .key("northwind-readonly")
        .send()
        .await;
    assert_eq!(first.json()["has_more"], true);
    let bigger = app
        .get("/devices?limit=100")
        .key("northwind-readonly")
        .send()
        .await;
    let r = report(&app).await;
    assert_eq!(status(&r, "pagination_walked"), "fail", "{r}");
    assert_eq!(
        evidence(&r, "pagination_walked"),
        [rid(&first), rid(&bigger)].into()
    );
}

/// Row 10: a one-time export, `/devices/{id}/ads` for each of 34 screens, within a minute: 34
/// different requests, not polling.
#[tokio::test]
async fn a_one_time_export_of_34_screens_is_not_polling() {
    let app = sandbox().await;
    let writer = "northwind-readwrite";
    let devices = app.collect_all("/devices", writer, 100).await;
    let mut ids: Vec<String> = devices
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect();
    for n in ids.len()..34 {
        let d = app
            .post("/devices")
            .key(writer)
            .header("idempotency-key", &format!("screen-{n}"))
            .json(&json!({"company_id": company_id("Northwind Pharmacy"),
                          "name": format!("Aisle {n}"), "platform": "android"}))
            .send()
            .await
            .ok();
        ids.push(d["id"].as_str().unwrap().to_string());
    }
    assert_eq!(ids.len(), 34);
    for id in &ids {
        app.get(&format!("/devices/{id}/ads"))
            .key(writer)
            .send()
            .await
            .ok();
    }
    let r = report(&app).await;
    assert_eq!(status(&r, "polling_reasonable"), "pass", "{r}");
}

/// The same first page asked 31 times within a minute, with jitter, is polling.
#[tokio::test]
async fn the_same_query_repeated_is_polling() {
    let app = sandbox().await;
    let mut rng = Rng::new(5);
    let mut polls = Vec::new();
    for _ in 0..31 {
        polls.push(rid(&app
            .get("/promotions?limit=10")
            .key("northwind-readonly")
            .send()
            .await));
        tokio::time::sleep(Duration::from_millis(rng.below(20))).await;
    }
    let r = report(&app).await;
    assert_eq!(status(&r, "polling_reasonable"), "fail", "{r}");
    let shown = evidence(&r, "polling_reasonable");
    assert!(
        shown.len() > 10 && shown.iter().all(|p| polls.contains(p)),
        "{shown:?}"
    );
}

/// A poller that stamps its query with the time (`?since=…`) is still polling the same query.
#[tokio::test]
async fn a_poll_stamped_with_the_time_is_the_same_query() {
    let app = sandbox().await;
    for _ in 0..31 {
        let since = now_rfc3339().replace(':', "%3A");
        app.get(&format!("/devices?limit=5&q=seen+{since}"))
            .key("northwind-readonly")
            .send()
            .await
            .ok();
    }
    let r = report(&app).await;
    assert_eq!(status(&r, "polling_reasonable"), "fail", "{r}");
}

/// Row 11: `If-Match: *` on every PATCH is no condition.
#[tokio::test]
async fn if_match_star_on_every_patch_fails() {
    let app = sandbox().await;
    let ads = app
        .get("/ads?limit=2")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    let mut patches = Vec::new();
    for a in ads["data"].as_array().unwrap() {
        let r = app
            .patch(&format!("/ads/{}", a["id"].as_str().unwrap()))
            .key("northwind-readwrite")
            .header("if-match", "*")
            .json(&json!({"headline": "Any version"}))
            .send()
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
        patches.push(rid(&r));
    }
    let r = report(&app).await;
    assert_eq!(status(&r, "conditional_updates"), "fail", "{r}");
    assert_eq!(
        evidence(&r, "conditional_updates"),
        patches.into_iter().collect()
    );
    // Recommended only: it never changes the verdict by itself.
    assert_eq!(check(&r, "conditional_updates")["required"], false);
    // A PATCH with the ETag read passes.
    let app = sandbox().await;
    let id = ads["data"][0]["id"].as_str().unwrap();
    let read = app
        .get(&format!("/ads/{id}"))
        .key("northwind-readwrite")
        .send()
        .await;
    let etag = read.header("etag").unwrap().to_string();
    app.patch(&format!("/ads/{id}"))
        .key("northwind-readwrite")
        .header("if-match", &etag)
        .json(&json!({"headline": "This version"}))
        .send()
        .await
        .ok();
    let r = report(&app).await;
    assert_eq!(status(&r, "conditional_updates"), "pass", "{r}");
}
