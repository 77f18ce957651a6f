//! What the journal's cost work must keep: a list page's entry still names the page's
//! `next_cursor` (read on the request's thread now), and `sandbox.journal = false` records nothing
//! new while every read still answers.

use crate::helpers::{mcp, TestApp};

#[tokio::test]
async fn a_list_entry_names_the_cursor_of_the_page_it_answered() {
    let app = TestApp::spawn().await;
    let page = app
        .get("/devices?limit=2")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let cursor = page["next_cursor"].as_str().expect("more than 2 devices");
    let last = app
        .get("/devices?limit=100")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert!(last["next_cursor"].is_null(), "{last}");
    let list = app
        .get("/requests?operation_id=listDevices")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let data = list["data"].as_array().unwrap();
    assert_eq!(data.len(), 2, "{list}");
    // Newest first: the last page (no cursor), then the first.
    assert!(data[0]["next_cursor"].is_null(), "{}", data[0]);
    assert_eq!(data[1]["next_cursor"], cursor, "{}", data[1]);
    assert_eq!(data[1]["query"]["limit"], "2");
}

#[tokio::test]
async fn journal_off_records_nothing_and_its_reads_still_answer() {
    let app = TestApp::spawn_with(|l| l.journal = Some(false)).await;
    app.get("/devices?limit=2")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let r = app
        .get("/companies")
        .header("x-api-key", "sgn_test_not_a_key")
        .send()
        .await;
    assert_eq!(r.status, 401, "{}", r.text());
    mcp::call_ok(
        &app,
        "northwind-readonly",
        "list_companies",
        serde_json::json!({}),
    )
    .await;

    let own = app
        .get("/requests")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(own["data"], serde_json::json!([]), "{own}");
    let count = app
        .get("/_sandbox/requests?count=true")
        .key("sandbox-operator")
        .send()
        .await
        .ok();
    assert_eq!(count["count"], 0, "{count}");
    let missing = app
        .get("/requests/req_doesnotexist")
        .key("northwind-readonly")
        .send()
        .await;
    assert_eq!(missing.status, 404, "{}", missing.text());
}
