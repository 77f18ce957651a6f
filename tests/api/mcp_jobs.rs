//! Tests: mcp_jobs (issue 12, item 6). The writes people ask for, each as prepare / confirm with
//! the guarantees of every two-step write: assign and unassign an ad on a screen, buy a token
//! pack, edit a promotion, pause and resume an ad. The preview executes nothing (checked against
//! the database) and refuses what the write would refuse.

use crate::helpers::mcp::{call_err, call_ok, full_tools, resolve_refs, rpc, tool_names};
use crate::helpers::{company_id, TestApp};
use serde_json::{json, Value};

fn count(app: &TestApp, sql: &str, args: &[&dyn rusqlite::ToSql]) -> i64 {
    app.sql(|c| c.query_row(sql, args, |r| r.get(0)))
}

fn one(app: &TestApp, sql: &str, arg: &str) -> String {
    app.sql(|c| c.query_row(sql, [arg], |r| r.get(0)))
}

/// Rows of the tables these writes touch, as text.
fn state_of(app: &TestApp) -> String {
    app.dump_tables(&[
        "ads",
        "ad_assignments",
        "promotions",
        "token_balances",
        "token_transactions",
        "charges",
        "invoices",
        "events",
    ])
}

async fn confirm(app: &TestApp, key_name: &str, preview: &Value) -> Value {
    let done = call_ok(
        app,
        key_name,
        "confirm_change",
        json!({"confirmation_id": preview["confirmation_id"]}),
    )
    .await;
    assert_eq!(done["status"], "applied", "{done}");
    // The result is one of the branches of confirm_change's output schema (clients such as the
    // TypeScript SDK validate structuredContent against it).
    let tools = full_tools(app, key_name).await;
    let confirm = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "confirm_change")
        .unwrap();
    let out = resolve_refs(&confirm["outputSchema"], &confirm["outputSchema"]);
    let branches = out["anyOf"][0]["properties"]["result"]["anyOf"]
        .as_array()
        .unwrap();
    let fits = |b: &Value| {
        signage::jsonschema::validate(&done["result"], b, "").is_ok()
            && b["required"].as_array().is_some_and(|req| {
                req.iter()
                    .all(|f| done["result"].get(f.as_str().unwrap()).is_some())
            })
            && b["additionalProperties"] == json!(false)
            && done["result"]
                .as_object()
                .unwrap()
                .keys()
                .all(|k| b["properties"].get(k).is_some())
    };
    assert!(
        branches.iter().any(fits),
        "no branch fits {}",
        done["result"]
    );
    done
}

/// A Grocers ad and a Grocers screen it is not assigned to.
fn ad_and_free_device(app: &TestApp) -> (String, String) {
    let grocers = company_id("Northwind Grocers");
    let ad = one(
        app,
        "SELECT min(id) FROM ads WHERE company_id = ?1",
        &grocers,
    );
    let device: String = app.sql(|c| {
        c.query_row(
            "SELECT min(d.id) FROM devices d WHERE d.company_id = ?1
               AND NOT EXISTS (SELECT 1 FROM ad_assignments x WHERE x.device_id = d.id AND x.ad_id = ?2)",
            [&grocers, &ad],
            |r| r.get(0),
        )
    });
    (ad, device)
}

#[tokio::test]
async fn an_ad_is_assigned_and_unassigned_in_two_steps() {
    let app = TestApp::spawn().await;
    let (ad, device) = ad_and_free_device(&app);
    let before = state_of(&app);
    let preview = call_ok(
        &app,
        "northwind-readwrite",
        "prepare_ad_assignment",
        json!({"ad_id": ad, "device_id": device}),
    )
    .await;
    assert_eq!(state_of(&app), before, "a prepare executes nothing");
    let diff = &preview["differences"][0];
    assert_eq!(diff["field"], "device_ids");
    let now: Vec<Value> = diff["current"].as_array().unwrap().clone();
    let after: Vec<Value> = diff["proposed"].as_array().unwrap().clone();
    assert!(!now.contains(&json!(device)));
    assert!(after.contains(&json!(device)));
    assert_eq!(after.len(), now.len() + 1);
    confirm(&app, "northwind-readwrite", &preview).await;
    let assigned = "SELECT count(*) FROM ad_assignments WHERE ad_id = ?1 AND device_id = ?2";
    assert_eq!(count(&app, assigned, &[&ad, &device]), 1);
    let rest = app
        .get(&format!("/ads/{ad}"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert!(rest["device_ids"]
        .as_array()
        .unwrap()
        .contains(&json!(device)));

    // Assigning again changes nothing, so nothing is prepared.
    let e = call_err(
        &app,
        "northwind-readwrite",
        "prepare_ad_assignment",
        json!({"ad_id": ad, "device_id": device}),
    )
    .await;
    assert!(e.starts_with("Nothing to change"), "{e}");

    let preview = call_ok(
        &app,
        "northwind-readwrite",
        "prepare_ad_unassignment",
        json!({"ad_id": ad, "device_id": device}),
    )
    .await;
    assert!(!preview["differences"][0]["proposed"]
        .as_array()
        .unwrap()
        .contains(&json!(device)));
    assert_eq!(count(&app, assigned, &[&ad, &device]), 1);
    confirm(&app, "northwind-readwrite", &preview).await;
    assert_eq!(count(&app, assigned, &[&ad, &device]), 0);
    let e = call_err(
        &app,
        "northwind-readwrite",
        "prepare_ad_unassignment",
        json!({"ad_id": ad, "device_id": device}),
    )
    .await;
    assert!(e.starts_with("Nothing to change"), "{e}");
}

/// A screen of another company: the write would refuse it, so the preview does, and nothing is
/// stored.
#[tokio::test]
async fn an_assignment_that_cannot_succeed_is_not_prepared() {
    let app = TestApp::spawn().await;
    let (ad, _) = ad_and_free_device(&app);
    let pharmacy = company_id("Northwind Pharmacy");
    let foreign = one(
        &app,
        "SELECT min(id) FROM devices WHERE company_id = ?1",
        &pharmacy,
    );
    let before = state_of(&app);
    let e = call_err(
        &app,
        "northwind-readwrite",
        "prepare_ad_assignment",
        json!({"ad_id": ad, "device_id": foreign}),
    )
    .await;
    assert!(e.contains("no confirmation_id was issued"), "{e}");
    assert_eq!(
        count(&app, "SELECT count(*) FROM mcp_pending_changes", &[]),
        0
    );
    assert_eq!(state_of(&app), before);
}

#[tokio::test]
async fn a_token_pack_is_bought_in_two_steps() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let (pack, tokens): (String, i64) = app.sql(|c| {
        c.query_row(
            "SELECT id, tokens FROM token_packs ORDER BY id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    let balance = "SELECT balance FROM token_balances WHERE company_id = ?1";
    let start = count(&app, balance, &[&grocers]);
    let before = state_of(&app);
    let preview = call_ok(
        &app,
        "northwind-readwrite",
        "prepare_token_purchase",
        json!({"token_pack_id": pack, "company_id": grocers}),
    )
    .await;
    assert_eq!(state_of(&app), before, "a prepare executes nothing");
    let diff = &preview["differences"][0];
    assert_eq!(diff["field"], "token_purchase");
    assert_eq!(diff["proposed"]["balance"]["balance"], start + tokens);
    assert!(
        diff["proposed"]["charge"]["amount_cents"].is_i64(),
        "{diff}"
    );
    confirm(&app, "northwind-readwrite", &preview).await;
    assert_eq!(count(&app, balance, &[&grocers]), start + tokens);
    let e = call_err(
        &app,
        "northwind-readwrite",
        "confirm_change",
        json!({"confirmation_id": preview["confirmation_id"]}),
    )
    .await;
    assert!(e.contains("already used"), "{e}");
    assert_eq!(count(&app, balance, &[&grocers]), start + tokens);

    // Another account's company: refused at the preview, as REST refuses it (404).
    let harbor = company_id("Harborview Hotels");
    let e = call_err(
        &app,
        "northwind-readwrite",
        "prepare_token_purchase",
        json!({"token_pack_id": pack, "company_id": harbor}),
    )
    .await;
    assert!(
        e.contains("no confirmation_id was issued") && e.contains("HTTP 404"),
        "{e}"
    );
    // A key that may not buy tokens does not see the tool.
    let listed = tool_names(&rpc(&app, "northwind-ads-editor", "tools/list", json!({})).await);
    assert!(!listed.contains(&"prepare_token_purchase".to_string()));
    assert!(listed.contains(&"prepare_ad_assignment".to_string()));
}

#[tokio::test]
async fn promotion_edits_are_checked_at_the_preview() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let promo = one(
        &app,
        "SELECT min(id) FROM promotions WHERE company_id = ?1",
        &grocers,
    );
    let before = state_of(&app);
    // `ends_at` before `starts_at`: the write's validation refuses it, so the preview does.
    let e = call_err(
        &app,
        "northwind-readwrite",
        "prepare_promotion_change",
        json!({"promotion_id": promo, "changes": {"starts_at": "2030-01-02T00:00:00Z", "ends_at": "2030-01-01T00:00:00Z"}}),
    )
    .await;
    assert!(
        e.contains("no confirmation_id was issued") && e.contains("HTTP 422"),
        "{e}"
    );
    assert_eq!(state_of(&app), before);
    let preview = call_ok(
        &app,
        "northwind-readwrite",
        "prepare_promotion_change",
        json!({"promotion_id": promo, "changes": {"discount_percent": 35, "name": "Spring 35"}}),
    )
    .await;
    let asked: Vec<&Value> = preview["differences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d.get("set_at_confirmation").is_none())
        .map(|d| &d["field"])
        .collect();
    assert_eq!(asked, [&json!("name"), &json!("discount_percent")]);
    let done = confirm(&app, "northwind-readwrite", &preview).await;
    assert_eq!(done["result"]["discount_percent"], 35);
    assert_eq!(done["result"]["name"], "Spring 35");
}

#[tokio::test]
async fn an_ad_is_paused_and_resumed() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let ad = one(
        &app,
        "SELECT min(id) FROM ads WHERE company_id = ?1 AND status = 'active'",
        &grocers,
    );
    for status in ["paused", "active"] {
        let preview = call_ok(
            &app,
            "northwind-ads-editor",
            "prepare_ad_change",
            json!({"ad_id": ad, "changes": {"status": status}}),
        )
        .await;
        // Pausing takes it off air, resuming puts it back: the preview says so.
        let on_air = status == "active";
        assert_eq!(
            preview["differences"],
            json!([{"field": "status", "current": if status == "paused" { "active" } else { "paused" }, "proposed": status},
                {"field": "on_air", "current": !on_air, "proposed": on_air},
                {"field": "updated_at", "current": preview["current"]["updated_at"], "proposed": null, "set_at_confirmation": true}])
        );
        confirm(&app, "northwind-ads-editor", &preview).await;
        assert_eq!(
            one(&app, "SELECT status FROM ads WHERE id = ?1", &ad),
            status
        );
    }
}
