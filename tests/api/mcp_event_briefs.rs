//! Tests: mcp_event_briefs. `list_events` through MCP carries each event's envelope and a brief
//! of its `data` (what happened: status, counts, short values), not the object it recorded; the
//! whole event is the resource `signage://events/{id}` (GET /events/{id}), read with the same
//! authorization as REST. A day of the simulated fleet and scans gives a page of 50 events, most
//! of them QR scans, whose result must stay under a bound.

use crate::helpers::mcp::{data_section, request, rpc, rpc_error, send};
use crate::helpers::TestApp;
use crate::webhook_delivery::advance;
use serde_json::{json, Value};

const ADMIN: &str = "northwind-admin";
/// The most bytes the JSON-RPC reply of `list_events` with 50 events may take (it was 63 KB).
const FIFTY_EVENTS_MAX_BYTES: usize = 36_000;

#[tokio::test]
async fn fifty_events_come_as_briefs_with_the_full_event_one_read_away() {
    let app = TestApp::spawn().await;
    // A day of screens coming and going and phones scanning the codes.
    advance(&app, 26 * 3600).await;
    let rest = app.get("/events?limit=50").key(ADMIN).send().await.ok();
    let full: &Vec<Value> = rest["data"].as_array().unwrap();
    assert_eq!(full.len(), 50, "a full page");
    let scans = full
        .iter()
        .filter(|e| e["type"] == "qr_code.scanned")
        .count();
    assert!(scans >= 25, "mostly scans: {scans}");

    let r = send(
        &app,
        ADMIN,
        &request(
            1,
            "tools/call",
            json!({"name": "list_events", "arguments": {"limit": 50}}),
        ),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let bytes = r.body.len();
    eprintln!(
        "list_events, 50 events: {bytes} bytes over MCP; REST page {} bytes",
        rest.to_string().len()
    );
    assert!(
        bytes <= FIFTY_EVENTS_MAX_BYTES,
        "list_events with 50 events is {bytes} bytes"
    );
    let result = &r.json()["result"];
    assert_eq!(result["isError"], false, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("`signage://events/{id}`"), "{text}");
    let briefs = result["structuredContent"]["data"].as_array().unwrap();
    assert_eq!(briefs.len(), 50);
    for (brief, event) in briefs.iter().zip(full) {
        // The envelope, as REST says it: what, which object, whose, who, how, when.
        for member in [
            "id",
            "type",
            "company_id",
            "resource_id",
            "resource_name",
            "actor",
            "actor_name",
            "via",
            "created_at",
        ] {
            // (`actor` is left out when null: Value's index reads a missing member as null.)
            assert_eq!(brief[member], event[member], "{member}: {brief}");
        }
        assert!(brief.get("object").is_none() && brief.get("resource_type").is_none());
        // The brief: a few members of the recorded data, each as it was recorded.
        let data = brief["data"].as_object().unwrap();
        assert!(data.len() <= 3, "{brief}");
        for (k, v) in data {
            assert_eq!(&event["data"][k], v, "{k}");
            assert!(!k.ends_with("_id") && !v.is_object(), "{k}");
        }
        if event["type"] == "qr_code.scanned" {
            assert_eq!(data["agent_class"], event["data"]["agent_class"]);
            assert_eq!(data["scan_count"], event["data"]["scan_count"]);
        }
        if event["type"] == "device.offline" {
            assert_eq!(data["status"], "offline");
        }
    }

    // One read away: the whole event, exactly as REST has it.
    let scan = full
        .iter()
        .find(|e| e["type"] == "qr_code.scanned")
        .unwrap();
    let id = scan["id"].as_str().unwrap();
    let read = rpc(
        &app,
        ADMIN,
        "resources/read",
        json!({"uri": format!("signage://events/{id}")}),
    )
    .await;
    let whole: Value =
        serde_json::from_str(data_section(read["contents"][0]["text"].as_str().unwrap())).unwrap();
    let by_id = app
        .get(&format!("/events/{id}"))
        .key(ADMIN)
        .send()
        .await
        .ok();
    assert_eq!(whole, by_id);
    assert_eq!(&by_id, scan);

    // Another account's key: the same "not found" as an id that does not exist.
    let e1 = rpc_error(
        &app,
        "harborview-admin",
        "resources/read",
        json!({"uri": format!("signage://events/{id}")}),
    )
    .await;
    assert_eq!(e1["code"], -32002, "{e1}");
    app.get(&format!("/events/{id}"))
        .key("harborview-admin")
        .send()
        .await
        .problem(404);
    app.get("/events/evt_doesnotexist0000000000")
        .key(ADMIN)
        .send()
        .await
        .problem(404);
    app.get("/events/nope").key(ADMIN).send().await.problem(404);
}
