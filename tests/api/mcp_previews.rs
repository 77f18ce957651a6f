//! Tests: mcp_previews. A preview is a dry run of the real write: for every prepare tool, its
//! `after` is what `confirm_change` then returns as `result`, except the values named in
//! `set_at_confirmation` (new ids, the time of the write), which are `null` in the preview and set
//! in the result. Nothing in a preview is invented.

use crate::helpers::mcp::{call_ok, rpc, tool_names};
use crate::helpers::{company_id, key, TestApp};
use serde_json::{json, Value};

const ADMIN: &str = "northwind-admin";

fn one(app: &TestApp, sql: &str, args: &[&dyn rusqlite::ToSql]) -> String {
    app.sql(|c| c.query_row(sql, args, |r| r.get(0)))
}

/// The value at a preview path (`charge.id`, `device_ids[0]`), for writing.
fn at<'a>(v: &'a mut Value, path: &str) -> &'a mut Value {
    let mut cur = v;
    for part in path.split('.') {
        let (k, index) = match part.split_once('[') {
            Some((k, i)) => (k, Some(i.trim_end_matches(']').parse::<usize>().unwrap())),
            None => (part, None),
        };
        cur = cur.get_mut(k).unwrap_or_else(|| panic!("no {path}"));
        if let Some(i) = index {
            cur = cur.get_mut(i).unwrap();
        }
    }
    cur
}

/// The arguments each prepare tool is tried with, on Northwind Grocers.
fn cases(app: &TestApp) -> Vec<(&'static str, Value)> {
    let grocers = company_id("Northwind Grocers");
    let now = signage::time::wall_now();
    let ad = one(
        app,
        "SELECT min(id) FROM ads WHERE company_id = ?1",
        &[&grocers],
    );
    let free = one(
        app,
        "SELECT min(d.id) FROM devices d WHERE d.company_id = ?1
           AND NOT EXISTS (SELECT 1 FROM ad_assignments x WHERE x.device_id = d.id AND x.ad_id = ?2)",
        &[&grocers, &ad],
    );
    let (assigned_ad, assigned_device): (String, String) = app.sql(|c| {
        c.query_row(
            "SELECT a.ad_id, a.device_id FROM ad_assignments a JOIN ads ON ads.id = a.ad_id
             WHERE ads.company_id = ?1 AND a.ad_id <> ?2 ORDER BY 1, 2 LIMIT 1",
            [&grocers, &ad],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    let account = key("northwind-readwrite").account_id;
    let promotion = |active: bool| {
        one(
            app,
            "SELECT min(p.id) FROM promotions p JOIN companies c ON c.id = p.company_id
               JOIN token_balances b ON b.company_id = p.company_id
             WHERE c.account_id = ?1 AND p.active = ?2 AND p.starts_at <= ?3 AND p.ends_at > ?3
               AND p.activation_cost_tokens BETWEEN 1 AND b.balance",
            &[&account, &active, &now],
        )
    };
    let (inactive, active) = (promotion(false), promotion(true));
    let pack = one(app, "SELECT min(id) FROM token_packs", &[]);
    let webhook = one(
        app,
        "SELECT min(w.id) FROM webhooks w JOIN companies c ON c.id = w.company_id
         WHERE c.account_id = ?1 AND w.enabled = 1",
        &[&account],
    );
    // Two more free screens for the ad, and one it is on (another ad's screen otherwise).
    let (more_free, on_it): (Vec<String>, Option<String>) = app.sql(|c| {
        let mut s = c.prepare(
            "SELECT d.id FROM devices d WHERE d.company_id = ?1 AND d.id <> ?3
               AND NOT EXISTS (SELECT 1 FROM ad_assignments x WHERE x.device_id = d.id AND x.ad_id = ?2)
             ORDER BY d.id LIMIT 2",
        )?;
        let free: Vec<String> = s
            .query_map([&grocers, &ad, &free], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let on: Option<String> = c.query_row(
            "SELECT min(device_id) FROM ad_assignments WHERE ad_id = ?1",
            [&ad],
            |r| r.get(0),
        )?;
        Ok((free, on))
    });
    let last_webhook = one(
        app,
        "SELECT max(w.id) FROM webhooks w JOIN companies c ON c.id = w.company_id
         WHERE c.account_id = ?1",
        &[&account],
    );
    assert_ne!(last_webhook, webhook, "two webhooks to work on");
    vec![
        (
            "prepare_ad_change",
            json!({"ad_id": ad, "changes": {"headline": "Fresh bread daily", "status": "paused"}}),
        ),
        (
            "prepare_ad_assignment",
            json!({"ad_id": ad, "device_id": free}),
        ),
        (
            "prepare_ad_unassignment",
            json!({"ad_id": assigned_ad, "device_id": assigned_device}),
        ),
        (
            "prepare_ad_assignments",
            json!({"ad_id": ad, "assign_device_ids": more_free,
                "unassign_device_ids": on_it.into_iter().collect::<Vec<_>>()}),
        ),
        (
            "prepare_promotion_change",
            json!({"promotion_id": active, "changes": {"description": "Two for one", "discount_percent": 25}}),
        ),
        (
            "prepare_promotion_activation",
            json!({"promotion_id": inactive}),
        ),
        (
            "prepare_promotion_deactivation",
            json!({"promotion_id": active}),
        ),
        (
            "prepare_token_purchase",
            json!({"token_pack_id": pack, "company_id": grocers}),
        ),
        (
            "prepare_webhook_creation",
            json!({"company_id": grocers, "url": "https://hooks.example.com/signage",
                "event_types": ["ad.assigned", "ad.unassigned"], "description": "Screens board"}),
        ),
        (
            "prepare_webhook_change",
            json!({"webhook_id": webhook, "changes": {"enabled": false, "description": "Paused for maintenance"}}),
        ),
        (
            "prepare_webhook_deletion",
            json!({"webhook_id": last_webhook}),
        ),
        (
            "prepare_webhook_secret_rotation",
            json!({"webhook_id": webhook}),
        ),
        ("prepare_webhook_test", json!({"webhook_id": webhook})),
        (
            "prepare_promotion_creation",
            json!({"company_id": grocers, "name": "Spring greens", "description": "Everything green, 10% off",
                "landing_url": "https://www.northwind-grocers.example/promotions/spring", "discount_percent": 10,
                "activation_cost_tokens": 40, "starts_at": "2026-01-01T00:00:00Z", "ends_at": "2030-01-01T00:00:00Z"}),
        ),
        (
            "prepare_qr_code_creation",
            json!({"promotion_id": active, "label": "Till 3", "utm": {"source": "signage", "content": "till-3"}}),
        ),
        (
            "prepare_ad_creation",
            json!({"company_id": grocers, "name": "Spring greens ad", "headline": "Greens, 10% off", "promotion_id": active,
                "duration_seconds": 20}),
        ),
        (
            "prepare_device_creation",
            json!({"company_id": grocers, "name": "Till 3 screen", "location": "Checkout", "platform": "android",
                "orientation": "portrait", "resolution": "1080x1920"}),
        ),
        (
            "prepare_media_upload",
            json!({"company_id": grocers, "filename": "dot.png", "content_type": "image/png", "content": PNG_1X1}),
        ),
    ]
}

/// A valid 1×1 PNG, base64-encoded.
pub const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// Paths the receiver's answer fills (a webhook test or redelivery): they may stay `null` in the
/// result too (no HTTP status when nothing answered, no error when it did).
fn receivers_part(path: &str) -> bool {
    path.starts_with("attempts[") || path == "next_attempt_at"
}

// Multi-threaded: a confirmed webhook test sends to the sandbox's own sink, on this server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_preview_is_the_outcome_of_its_confirmation() {
    // Every prepare tool, back to back: each preview is a read, two dry runs and the lookups of
    // the names it says, each a request that spends a token, so the default bucket (100) can run
    // dry within a second. Throttling is not what this test is about.
    let app = TestApp::spawn_with(|l| l.rate_limit_burst = Some(2_000)).await;
    let mut cases = cases(&app);
    // A delivery to send again: one made now, over REST.
    let webhook = cases
        .iter()
        .find(|(t, _)| *t == "prepare_webhook_test")
        .map(|(_, a)| a["webhook_id"].as_str().unwrap().to_string())
        .unwrap();
    let sent = app
        .post(&format!("/webhooks/{webhook}/test"))
        .key("northwind-admin")
        .send()
        .await;
    let delivery = sent.ok()["id"].as_str().unwrap().to_string();
    cases.push((
        "prepare_webhook_redelivery",
        json!({"webhook_id": webhook, "delivery_id": delivery}),
    ));
    // Every prepare tool the broadest key sees is covered here.
    let listed: Vec<String> = tool_names(&rpc(&app, ADMIN, "tools/list", json!({})).await)
        .into_iter()
        .filter(|n| n.starts_with("prepare_"))
        .collect();
    let covered: Vec<String> = cases.iter().map(|(t, _)| t.to_string()).collect();
    let without: Vec<&String> = listed.iter().filter(|t| !covered.contains(t)).collect();
    assert!(
        without.is_empty(),
        "prepare tools without a case in `cases` (tests/api/mcp_previews.rs): {without:?}"
    );
    let stale: Vec<&String> = covered.iter().filter(|t| !listed.contains(t)).collect();
    assert!(
        stale.is_empty(),
        "cases of tools that are not listed: {stale:?}"
    );
    let mut unique = covered.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        covered.len(),
        "a tool with two cases: {covered:?}"
    );

    for (tool, args) in cases {
        let preview = call_ok(&app, ADMIN, tool, args.clone()).await;
        let set: Vec<String> = preview["set_at_confirmation"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect();
        let done = call_ok(
            &app,
            ADMIN,
            "confirm_change",
            json!({"confirmation_id": preview["confirmation_id"]}),
        )
        .await;
        assert_eq!(done["status"], "applied", "{tool}: {done}");
        let mut result = done["result"].clone();
        for path in &set {
            assert!(
                at(&mut preview.clone()["after"], path).is_null(),
                "{tool} {path}"
            );
            let real = at(&mut result, path);
            assert!(
                !real.is_null() || receivers_part(path),
                "{tool}: {path} is named but the result has none"
            );
            *real = Value::Null;
        }
        assert_eq!(
            preview["after"], result,
            "{tool}: the preview was not the outcome"
        );
        // Nothing in `after` is null that the result has, except what is named.
        let text = preview.to_string();
        assert!(!text.contains("[REDACTED]"), "{tool}: {text}");
    }
}

#[tokio::test]
async fn a_deactivation_previews_the_inactive_promotion() {
    let app = TestApp::spawn().await;
    let (_, args) = cases(&app)
        .into_iter()
        .find(|(t, _)| *t == "prepare_promotion_deactivation")
        .unwrap();
    let preview = call_ok(&app, ADMIN, "prepare_promotion_deactivation", args).await;
    let after = &preview["after"];
    assert_eq!(after["active"], false);
    assert_ne!(after["state"], "active", "{after}");
    assert_eq!(
        after["state"],
        preview["differences"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["field"] == "state")
            .unwrap()["proposed"]
    );
    let set = preview["set_at_confirmation"].as_array().unwrap();
    assert!(set.contains(&json!("deactivated_at")), "{set:?}");
    assert!(after["deactivated_at"].is_null());
    let deactivated = preview["differences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["field"] == "deactivated_at")
        .unwrap();
    assert_eq!(
        deactivated,
        &json!({"field": "deactivated_at", "current": null, "proposed": null, "set_at_confirmation": true})
    );
    let next = preview["next_step"].as_str().unwrap();
    assert!(
        next.contains("`deactivated_at`") && next.contains("are null here"),
        "{next}"
    );
}

#[tokio::test]
async fn a_purchase_previews_its_price_balance_and_invoice_line() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let (pack, tokens, price, currency): (String, i64, i64, String) = app.sql(|c| {
        c.query_row(
            "SELECT id, tokens, price_cents, currency FROM token_packs ORDER BY id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
    });
    let balance: i64 = app.sql(|c| {
        c.query_row(
            "SELECT balance FROM token_balances WHERE company_id = ?1",
            [&grocers],
            |r| r.get(0),
        )
    });
    let open_invoice: Option<String> = app.sql(|c| {
        c.query_row(
            "SELECT max(id) FROM invoices WHERE company_id = ?1 AND status IN ('draft', 'open')",
            [&grocers],
            |r| r.get(0),
        )
    });
    let rw = key("northwind-readwrite");
    let preview = call_ok(
        &app,
        &rw.name,
        "prepare_token_purchase",
        json!({"token_pack_id": pack, "company_id": grocers}),
    )
    .await;
    let cost = &preview["cost"];
    assert_eq!(cost["price_cents"], price, "{cost}");
    assert_eq!(cost["currency"], currency);
    assert_eq!(cost["tokens_added"], tokens);
    assert_eq!(cost["balance"], balance);
    assert_eq!(cost["balance_after"], balance + tokens);
    let line = &cost["invoice_line"];
    assert_eq!(line["amount_cents"], price);
    assert_eq!(line["currency"], currency);
    assert!(line["description"].as_str().unwrap().len() > 3, "{line}");
    match open_invoice {
        Some(id) => assert_eq!(line["invoice_id"], id),
        None => assert!(line["invoice_id"].is_null()),
    }
    // The ids of the purchase are not shown before they exist.
    let set = preview["set_at_confirmation"].as_array().unwrap();
    for path in ["transaction.id", "charge.id", "transaction.charge_id"] {
        assert!(set.contains(&json!(path)), "{path}: {set:?}");
        assert!(at(&mut preview.clone()["after"], path).is_null());
    }
    let next = preview["next_step"].as_str().unwrap();
    assert!(next.contains("the differences and its cost"), "{next}");
}

/// A preview says when the change will be seen: assigning an ad that starts in three months puts
/// it on the screen but not on air, and the preview says so (with its start); an ad on air gets no
/// such sentence.
#[tokio::test]
async fn a_preview_says_when_an_ad_will_not_play_yet() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let media = one(
        &app,
        "SELECT id FROM media WHERE company_id = ?1 ORDER BY id LIMIT 1",
        &[&grocers],
    );
    let device = one(
        &app,
        "SELECT id FROM devices WHERE company_id = ?1 ORDER BY id LIMIT 1",
        &[&grocers],
    );
    let now = app.app.clock().now();
    let later = signage::time::rfc3339(now + 90 * 86_400);
    let ad = app
        .post("/ads")
        .key(ADMIN)
        .json(
            &json!({"company_id": grocers, "name": "Autumn", "headline": "Soon",
            "status": "active", "media_id": media, "starts_at": later}),
        )
        .send()
        .await
        .ok();
    assert_eq!(ad["on_air"], false, "{ad}");
    let preview = call_ok(
        &app,
        ADMIN,
        "prepare_ad_assignment",
        json!({"ad_id": ad["id"], "device_id": device}),
    )
    .await;
    let next = preview["next_step"].as_str().unwrap_or_default();
    assert!(
        next.contains("not on air") && next.contains(&later),
        "{next}"
    );

    let on_air = app
        .get(&format!("/ads?company_id={grocers}&limit=100"))
        .key(ADMIN)
        .send()
        .await
        .ok()["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["on_air"] == true)
        .cloned()
        .expect("an ad on air");
    let preview = call_ok(
        &app,
        ADMIN,
        "prepare_ad_change",
        json!({"ad_id": on_air["id"], "changes": {"headline": "Still playing"}}),
    )
    .await;
    let next = preview["next_step"].as_str().unwrap_or_default();
    assert!(!next.contains("not on air"), "{next}");
}

/// A QR code made through MCP carries its image once at most: never inline in the preview or the
/// result (about 15 KB of SVG, twice over with the text block); the result says where the image
/// is, and that link reads the SVG.
#[tokio::test]
async fn a_qr_code_confirmation_names_its_image_instead_of_carrying_it() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let promotion = one(
        &app,
        "SELECT id FROM promotions WHERE company_id = ?1 ORDER BY id LIMIT 1",
        &[&grocers],
    );
    let preview = call_ok(
        &app,
        ADMIN,
        "prepare_qr_code_creation",
        json!({"promotion_id": promotion, "label": "Till 4"}),
    )
    .await;
    assert!(preview["after"].get("image_svg").is_none(), "{preview}");
    assert_eq!(preview["withheld"]["field"], "image_svg", "{preview}");
    let confirm = crate::helpers::mcp::send(
        &app,
        ADMIN,
        &crate::helpers::mcp::request(
            1,
            "tools/call",
            json!({"name": "confirm_change",
                "arguments": {"confirmation_id": preview["confirmation_id"]}}),
        ),
    )
    .await;
    assert_eq!(confirm.status, 200, "{}", confirm.text());
    let bytes = confirm.text().len();
    assert!(!confirm.text().contains("<svg"), "{}", confirm.text());
    assert!(bytes < 6_000, "the confirmation is {bytes} bytes");
    let result = &confirm.json()["result"]["structuredContent"];
    let id = result["result"]["id"].as_str().expect("the new code's id");
    assert!(result["result"]["short_url"].is_string(), "{result}");
    let note = result["withheld"]["note"].as_str().unwrap();
    let uri = format!("signage://qr-codes/{id}/image");
    assert!(note.contains(&uri), "{note}");
    let read = rpc(&app, ADMIN, "resources/read", json!({"uri": uri})).await;
    let svg = read["contents"][0]["text"].as_str().unwrap_or_default();
    assert!(svg.contains("<svg"), "{read}");
}
