//! Tests: mcp_side_changes. A preview is bound to everything it shows (issue 30 §1). For every
//! prepare tool, each kind of change that can be made on the side to what its preview shows
//! (its target, the target's relations, the company, the balance, the clock, a referenced object)
//! is made between the preview and the confirmation, through REST, the bulk route or MCP, and the
//! confirmation must then apply nothing: `stale_preview` with a fresh preview to show (which
//! applies once confirmed), or a refusal when the change can no longer be made at all. With no
//! side change, the same confirmation applies.
//!
//! The matrix is printed (`cargo test --test api mcp_side_changes:: -- --nocapture`).

use crate::helpers::mcp::{call, call_ok};
use crate::helpers::{company_id, TestApp};
use serde_json::{json, Value};

const RW: &str = "northwind-readwrite";
const ADMIN: &str = "northwind-admin";
const OPERATOR: &str = "sandbox-operator";

/// What the confirmation must do after the side change.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    Applied,
    /// `stale_preview` (412) carrying a fresh preview, which applies when confirmed.
    StaleWithFresh,
    /// `stale_preview` (412) saying the change cannot be prepared again as it stands.
    StaleNoFresh,
    /// Refused with this code: the change cannot be made any more.
    Refused(&'static str),
}

/// A change made on the side, between the preview and the confirmation.
enum Side {
    None,
    /// A REST request as a key.
    Rest(&'static str, &'static str, String, Option<Value>),
    /// A write made through MCP by another key: prepare then confirm.
    Mcp(&'static str, Value),
    /// The sandbox clock moves forward.
    Clock(i64),
}

impl Side {
    fn rest(method: &'static str, path: String, body: Option<Value>) -> Side {
        Side::Rest(ADMIN, method, path, body)
    }

    async fn apply(&self, app: &TestApp) {
        match self {
            Side::None => {}
            Side::Rest(key, method, path, body) => {
                let b = match *method {
                    "POST" => app.post(path),
                    "PATCH" => app.patch(path),
                    "DELETE" => app.delete(path),
                    other => panic!("{other}"),
                }
                .key(key);
                let b = match body {
                    Some(v) => b.json(v),
                    None => b,
                };
                let r = b.send().await;
                assert!(
                    r.status.is_success(),
                    "side change {method} {path}: {}",
                    r.text()
                );
            }
            Side::Mcp(tool, args) => {
                let p = call_ok(app, ADMIN, tool, args.clone()).await;
                let done = call_ok(
                    app,
                    ADMIN,
                    "confirm_change",
                    json!({"confirmation_id": p["confirmation_id"]}),
                )
                .await;
                assert_eq!(done["status"], "applied", "side change {tool}: {done}");
            }
            Side::Clock(seconds) => {
                app.post("/_sandbox/clock/advance")
                    .key(OPERATOR)
                    .json(&json!({"seconds": seconds}))
                    .send()
                    .await
                    .ok();
            }
        }
    }
}

/// What must not move when a confirmation applies nothing: every row a prepare tool can write.
const WITNESS: &[&str] = &[
    "ads",
    "ad_assignments",
    "promotions",
    "qr_codes",
    "devices",
    "media",
    "token_balances",
    "token_transactions",
    "charges",
    "invoices",
    "webhooks",
];

fn witness(app: &TestApp) -> String {
    let mut out = app.dump_tables(WITNESS);
    // What a test delivery or a redelivery sends: `webhook.test` deliveries and their attempts
    // (the event deliveries of the side changes themselves go on in the background).
    out.push_str(&app.sql(|c| {
        c.query_row(
            "SELECT count(DISTINCT d.id) || '/' || count(a.n) FROM webhook_deliveries d
             LEFT JOIN webhook_attempts a ON a.delivery_id = d.id WHERE d.event_type = 'webhook.test'",
            [],
            |r| r.get::<_, String>(0),
        )
    }));
    out
}

/// One cell: prepare, change on the side, confirm, check; returns the result as printed.
async fn cell(app: &TestApp, tool: &str, args: Value, what: &str, side: Side, expect: Expect) {
    let preview = call_ok(app, RW, tool, args.clone()).await;
    let id = preview["confirmation_id"].as_str().unwrap().to_string();
    side.apply(app).await;
    let before = witness(app);
    let r = call(app, RW, "confirm_change", json!({"confirmation_id": id})).await;
    let sc = &r["structuredContent"];
    let label = match expect {
        Expect::Applied => {
            assert_eq!(r["isError"], false, "{tool} / {what}: {r}");
            assert_eq!(sc["status"], "applied");
            // A purchase or an activation repeats the cost it was bound to.
            if !preview["cost"].is_null() {
                assert_eq!(sc["cost"], preview["cost"], "{tool} / {what}");
            }
            "applied".to_string()
        }
        Expect::StaleWithFresh | Expect::StaleNoFresh => {
            assert_eq!(r["isError"], true, "{tool} / {what}: {r}");
            assert_eq!(sc["error"]["code"], "stale_preview", "{tool} / {what}: {r}");
            assert_eq!(sc["error"]["status"], 412);
            assert_eq!(
                witness(app),
                before,
                "{tool} / {what}: something was applied"
            );
            let text = r["content"][0]["text"].as_str().unwrap();
            assert!(text.contains("nothing was applied"), "{text}");
            if expect == Expect::StaleWithFresh {
                let fresh = &sc["preview"];
                assert_eq!(fresh["object"], "pending_change", "{tool} / {what}: {r}");
                assert_ne!(fresh["confirmation_id"], preview["confirmation_id"]);
                assert!(
                    text.contains(fresh["confirmation_id"].as_str().unwrap())
                        && text.contains(fresh["summary"].as_str().unwrap()),
                    "{text}"
                );
                // The fresh preview is what the change does now, and applies once confirmed.
                let done = call_ok(
                    app,
                    RW,
                    "confirm_change",
                    json!({"confirmation_id": fresh["confirmation_id"]}),
                )
                .await;
                assert_eq!(done["status"], "applied", "{tool} / {what}: fresh {done}");
                "stale_preview + fresh preview (applied when confirmed)".to_string()
            } else {
                assert!(sc.get("preview").is_none(), "{r}");
                assert!(text.contains("cannot be prepared again"), "{text}");
                "stale_preview, no fresh preview (the change is no longer possible)".to_string()
            }
        }
        Expect::Refused(code) => {
            assert_eq!(r["isError"], true, "{tool} / {what}: {r}");
            assert_eq!(sc["error"]["code"], code, "{tool} / {what}: {r}");
            assert_eq!(
                witness(app),
                before,
                "{tool} / {what}: something was applied"
            );
            let text = r["content"][0]["text"].as_str().unwrap();
            assert!(text.starts_with("Nothing was applied"), "{text}");
            format!("refused `{code}`, nothing applied")
        }
    };
    // The confirmation id is used up either way.
    let again = call(app, RW, "confirm_change", json!({"confirmation_id": id})).await;
    assert_eq!(again["isError"], true);
    println!("| {tool} | {what} | {label} |");
}

/// The sandbox without its rate limit: a matrix makes many calls at once.
async fn spawn() -> TestApp {
    TestApp::spawn_with(|l| l.rate_limit_per_second = Some(0.0)).await
}

/// A new promotion of Northwind Grocers, running, switched off, costing `cost` tokens.
async fn new_promotion(app: &TestApp, cost: i64) -> String {
    app.post("/promotions")
        .key(ADMIN)
        .json(&json!({"company_id": grocers(), "name": format!("Costs {cost}"), "description": "x",
            "landing_url": "https://www.northwind-grocers.example/new", "activation_cost_tokens": cost,
            "starts_at": signage::time::rfc3339(signage::time::now() - 3600), "ends_at": "2031-01-01T00:00:00Z"}))
        .send()
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn one(app: &TestApp, sql: &str, args: &[&dyn rusqlite::ToSql]) -> String {
    app.sql(|c| c.query_row(sql, args, |r| r.get(0)))
}

fn grocers() -> String {
    company_id("Northwind Grocers")
}

/// An ad of Northwind Grocers with at least one screen, and a screen of its company it is not on.
fn ad_and_free_screen(app: &TestApp) -> (String, String, String) {
    app.sql(|c| {
        c.query_row(
            "SELECT a.id, (SELECT min(x.device_id) FROM ad_assignments x WHERE x.ad_id = a.id),
                (SELECT min(d.id) FROM devices d WHERE d.company_id = a.company_id
                   AND NOT EXISTS (SELECT 1 FROM ad_assignments y WHERE y.ad_id = a.id AND y.device_id = d.id))
             FROM ads a WHERE a.company_id = ?1 AND a.status <> 'archived'
               AND EXISTS (SELECT 1 FROM ad_assignments x WHERE x.ad_id = a.id)
             ORDER BY a.id LIMIT 1",
            [grocers()],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
    })
}

/// A second screen the ad is not on, other than `not`.
fn another_free_screen(app: &TestApp, ad: &str, not: &str) -> String {
    one(
        app,
        "SELECT min(d.id) FROM devices d WHERE d.company_id = ?1 AND d.id <> ?3
           AND NOT EXISTS (SELECT 1 FROM ad_assignments y WHERE y.ad_id = ?2 AND y.device_id = d.id)",
        &[&grocers(), &ad, &not],
    )
}

fn company_edit(app: &TestApp, n: usize) -> Side {
    let c = grocers();
    let mut domains: Vec<String> = app
        .sql(|conn| {
            conn.query_row(
                "SELECT coalesce(allowed_landing_domains, '[]') FROM companies WHERE id = ?1",
                [&c],
                |r| r.get::<_, String>(0),
            )
        })
        .parse::<Value>()
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    if domains.is_empty() {
        domains.push("northwind-grocers.example".into());
        domains.push("hooks.example.com".into());
    }
    domains.push(format!("side{n}.example"));
    Side::rest(
        "PATCH",
        format!("/companies/{c}"),
        Some(json!({"allowed_landing_domains": domains})),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ad_tools_are_bound_to_the_ad_and_its_screens() {
    let app = spawn().await;
    let app = &app;
    println!("| tool | side change | result |\n|---|---|---|");

    // prepare_ad_change × every side change to the ad it shows.
    let change = |ad: &str, n: usize| json!({"ad_id": ad, "changes": {"headline": format!("Bound headline {n}")}});
    let (ad, on, free) = ad_and_free_screen(app);
    let cases: Vec<(&str, Side, Expect)> = vec![
        (
            "the ad edited (REST PATCH)",
            Side::rest(
                "PATCH",
                format!("/ads/{ad}"),
                Some(json!({"name": "Edited on the side"})),
            ),
            Expect::StaleWithFresh,
        ),
        (
            "a screen assigned (REST)",
            Side::rest(
                "POST",
                format!("/ads/{ad}/devices"),
                Some(json!({"device_id": free})),
            ),
            Expect::StaleWithFresh,
        ),
        (
            "a screen removed (REST)",
            Side::rest("DELETE", format!("/ads/{ad}/devices/{on}"), None),
            Expect::StaleWithFresh,
        ),
        (
            "a screen assigned (bulk route)",
            Side::rest(
                "POST",
                format!("/ads/{ad}/assignments"),
                Some(json!({"assign_device_ids": [on]})),
            ),
            Expect::StaleWithFresh,
        ),
        (
            "a screen removed (MCP, another key)",
            Side::Mcp(
                "prepare_ad_unassignment",
                json!({"ad_id": ad, "device_id": free}),
            ),
            Expect::StaleWithFresh,
        ),
        (
            "a screen of the ad deleted (REST DELETE /devices)",
            Side::rest("DELETE", format!("/devices/{on}"), None),
            Expect::StaleWithFresh,
        ),
        ("nothing", Side::None, Expect::Applied),
    ];
    for (n, (what, side, expect)) in cases.into_iter().enumerate() {
        cell(app, "prepare_ad_change", change(&ad, n), what, side, expect).await;
    }
    let (ad, _, _) = ad_and_free_screen(app);
    cell(
        app,
        "prepare_ad_change",
        change(&ad, 99),
        "the ad deleted",
        Side::rest("DELETE", format!("/ads/{ad}"), None),
        Expect::Refused("not_found"),
    )
    .await;

    // prepare_ad_assignment: one screen on.
    let (ad, on, free) = ad_and_free_screen(app);
    let assign = json!({"ad_id": ad, "device_id": free});
    cell(
        app,
        "prepare_ad_assignment",
        assign.clone(),
        "the ad edited (REST PATCH)",
        Side::rest(
            "PATCH",
            format!("/ads/{ad}"),
            Some(json!({"headline": "Side"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let free = another_free_screen(app, &ad, "");
    let other = another_free_screen(app, &ad, &free);
    cell(
        app,
        "prepare_ad_assignment",
        json!({"ad_id": ad, "device_id": free}),
        "another screen assigned (REST)",
        Side::rest(
            "POST",
            format!("/ads/{ad}/devices"),
            Some(json!({"device_id": other})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let free = another_free_screen(app, &ad, "");
    cell(
        app,
        "prepare_ad_assignment",
        json!({"ad_id": ad, "device_id": free}),
        "the same screen assigned (MCP, another key)",
        Side::Mcp(
            "prepare_ad_assignment",
            json!({"ad_id": ad, "device_id": free}),
        ),
        Expect::StaleNoFresh,
    )
    .await;
    let free = another_free_screen(app, &ad, "");
    cell(
        app,
        "prepare_ad_assignment",
        json!({"ad_id": ad, "device_id": free}),
        "the screen deleted",
        Side::rest("DELETE", format!("/devices/{free}"), None),
        Expect::Refused("not_found"),
    )
    .await;
    let free = another_free_screen(app, &ad, "");
    cell(
        app,
        "prepare_ad_assignment",
        json!({"ad_id": ad, "device_id": free}),
        "a screen removed (bulk route)",
        Side::rest(
            "POST",
            format!("/ads/{ad}/assignments"),
            Some(json!({"unassign_device_ids": [on]})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let free = another_free_screen(app, &ad, "");
    cell(
        app,
        "prepare_ad_assignment",
        json!({"ad_id": ad, "device_id": free}),
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;

    // prepare_ad_unassignment: one screen off.
    let (ad, on, free) = ad_and_free_screen(app);
    cell(
        app,
        "prepare_ad_unassignment",
        json!({"ad_id": ad, "device_id": on}),
        "another screen assigned (REST)",
        Side::rest(
            "POST",
            format!("/ads/{ad}/devices"),
            Some(json!({"device_id": free})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let (ad, on, _) = ad_and_free_screen(app);
    cell(
        app,
        "prepare_ad_unassignment",
        json!({"ad_id": ad, "device_id": on}),
        "the same screen removed (REST)",
        Side::rest("DELETE", format!("/ads/{ad}/devices/{on}"), None),
        Expect::StaleNoFresh,
    )
    .await;
    let (ad, on, _) = ad_and_free_screen(app);
    cell(
        app,
        "prepare_ad_unassignment",
        json!({"ad_id": ad, "device_id": on}),
        "the ad edited (REST PATCH)",
        Side::rest(
            "PATCH",
            format!("/ads/{ad}"),
            Some(json!({"duration_seconds": 17})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let (ad, on, _) = ad_and_free_screen(app);
    cell(
        app,
        "prepare_ad_unassignment",
        json!({"ad_id": ad, "device_id": on}),
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;

    // prepare_ad_assignments: many screens.
    let (ad, on, free) = ad_and_free_screen(app);
    let batch = json!({"ad_id": ad, "assign_device_ids": [free], "unassign_device_ids": [on]});
    cell(
        app,
        "prepare_ad_assignments",
        batch,
        "one of its screens assigned on the side (REST)",
        Side::rest(
            "POST",
            format!("/ads/{ad}/devices"),
            Some(json!({"device_id": free})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let (ad, on, free) = ad_and_free_screen(app);
    let other = another_free_screen(app, &ad, &free);
    let batch = json!({"ad_id": ad, "assign_device_ids": [free], "unassign_device_ids": [on]});
    cell(
        app,
        "prepare_ad_assignments",
        batch,
        "another screen assigned (MCP, another key)",
        Side::Mcp(
            "prepare_ad_assignment",
            json!({"ad_id": ad, "device_id": other}),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let (ad, on, free) = ad_and_free_screen(app);
    let batch = json!({"ad_id": ad, "assign_device_ids": [free], "unassign_device_ids": [on]});
    cell(
        app,
        "prepare_ad_assignments",
        batch,
        "the ad edited (REST PATCH)",
        Side::rest(
            "PATCH",
            format!("/ads/{ad}"),
            Some(json!({"status": "paused"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let (ad, on, free) = ad_and_free_screen(app);
    let batch = json!({"ad_id": ad, "assign_device_ids": [free], "unassign_device_ids": [on]});
    cell(
        app,
        "prepare_ad_assignments",
        batch,
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;
}

/// A media item of the company that no ad uses, uploaded now.
async fn spare_media(app: &TestApp) -> String {
    let png = base64_decode(crate::mcp_previews::PNG_1X1);
    let r = app
        .post(&format!(
            "/media?company_id={}&filename=spare.png",
            grocers()
        ))
        .key(ADMIN)
        .raw("image/png", png)
        .send()
        .await;
    r.ok()["id"].as_str().unwrap().to_string()
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creations_are_bound_to_the_company_and_what_they_name() {
    let app = spawn().await;
    let app = &app;
    let c = grocers();
    let promotion = one(
        app,
        "SELECT min(id) FROM promotions WHERE company_id = ?1",
        &[&c],
    );
    let creations: Vec<(&str, Value)> = vec![
        (
            "prepare_ad_creation",
            json!({"company_id": c, "name": "Side ad", "headline": "Side", "promotion_id": promotion}),
        ),
        (
            "prepare_device_creation",
            json!({"company_id": c, "name": "Side screen", "platform": "android"}),
        ),
        (
            "prepare_promotion_creation",
            json!({"company_id": c, "name": "Side promo", "description": "x",
            "landing_url": "https://www.northwind-grocers.example/side", "activation_cost_tokens": 5,
            "starts_at": "2026-01-01T00:00:00Z", "ends_at": "2031-01-01T00:00:00Z"}),
        ),
        (
            "prepare_webhook_creation",
            json!({"company_id": c, "url": "http://127.0.0.1:0/_sandbox/sink/side-hooks",
            "event_types": ["ad.created"]}),
        ),
        (
            "prepare_media_upload",
            json!({"company_id": c, "filename": "side.png", "content_type": "image/png",
            "content": crate::mcp_previews::PNG_1X1}),
        ),
    ];
    let mut n = 0;
    for (tool, args) in &creations {
        n += 1;
        cell(
            app,
            tool,
            args.clone(),
            "the company edited (REST PATCH)",
            company_edit(app, n),
            Expect::StaleWithFresh,
        )
        .await;
        cell(
            app,
            tool,
            args.clone(),
            "nothing",
            Side::None,
            Expect::Applied,
        )
        .await;
    }
    // What a new ad names: its media deleted on the side makes the ad impossible.
    let media = spare_media(app).await;
    cell(
        app,
        "prepare_ad_creation",
        json!({"company_id": c, "name": "With media", "headline": "Media", "media_id": media}),
        "its media deleted (REST)",
        Side::rest("DELETE", format!("/media/{media}"), None),
        Expect::Refused("not_found"),
    )
    .await;
}

fn northwind_promotion(app: &TestApp, active: bool) -> String {
    let now = signage::time::now();
    one(
        app,
        "SELECT min(p.id) FROM promotions p JOIN token_balances b ON b.company_id = p.company_id
         WHERE p.company_id = ?1 AND p.active = ?2 AND p.starts_at <= ?3 AND p.ends_at > ?3
           AND p.activation_cost_tokens BETWEEN 1 AND b.balance",
        &[&grocers(), &active, &now],
    )
}

fn pack(app: &TestApp) -> String {
    one(app, "SELECT min(id) FROM token_packs", &[])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promotion_and_token_tools_are_bound_to_the_promotion_the_balance_and_the_clock() {
    let app = spawn().await;
    let app = &app;
    let c = grocers();
    let buy = || {
        Side::Mcp(
            "prepare_token_purchase",
            json!({"token_pack_id": pack(app), "company_id": grocers()}),
        )
    };

    // prepare_promotion_change.
    let p = northwind_promotion(app, true);
    let change = |n: u32| json!({"promotion_id": p, "changes": {"discount_percent": 10 + n}});
    cell(
        app,
        "prepare_promotion_change",
        change(1),
        "the promotion edited (REST PATCH)",
        Side::rest(
            "PATCH",
            format!("/promotions/{p}"),
            Some(json!({"name": "Edited on the side"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    cell(
        app,
        "prepare_promotion_change",
        change(3),
        "a QR code added (REST)",
        Side::rest(
            "POST",
            format!("/promotions/{p}/qr-codes"),
            Some(json!({"label": "Side"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    let code = one(
        app,
        "SELECT max(id) FROM qr_codes WHERE promotion_id = ?1",
        &[&p],
    );
    cell(
        app,
        "prepare_promotion_change",
        change(5),
        "a QR code deleted (REST)",
        Side::rest("DELETE", format!("/qr-codes/{code}"), None),
        Expect::StaleWithFresh,
    )
    .await;
    // A promotion that starts in a minute: its state turns from scheduled to active by the clock.
    let starts = signage::time::rfc3339(signage::time::now() + 90);
    let soon = app
        .post("/promotions")
        .key(ADMIN)
        .json(&json!({"company_id": c, "name": "Starts soon", "description": "x",
            "landing_url": "https://www.northwind-grocers.example/soon", "activation_cost_tokens": 1,
            "starts_at": starts, "ends_at": "2031-01-01T00:00:00Z"}))
        .send()
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Switched on: `scheduled` until it starts.
    app.post(&format!("/promotions/{soon}/activate"))
        .key(ADMIN)
        .send()
        .await
        .ok();
    cell(
        app,
        "prepare_promotion_change",
        json!({"promotion_id": soon, "changes": {"name": "Starts soon!"}}),
        "the clock passes its start (state scheduled → active)",
        Side::Clock(120),
        Expect::StaleWithFresh,
    )
    .await;
    cell(
        app,
        "prepare_promotion_change",
        change(7),
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;

    // prepare_promotion_activation: bound to the balance it showed.
    let p = new_promotion(app, 40).await;
    cell(
        app,
        "prepare_promotion_activation",
        json!({"promotion_id": p}),
        "the balance moved (a purchase, MCP)",
        buy(),
        Expect::StaleWithFresh,
    )
    .await;
    app.post(&format!("/promotions/{p}/deactivate"))
        .key(ADMIN)
        .send()
        .await
        .ok();
    let other = new_promotion(app, 25).await;
    cell(
        app,
        "prepare_promotion_activation",
        json!({"promotion_id": p}),
        "the balance moved (another activation, REST)",
        Side::rest("POST", format!("/promotions/{other}/activate"), None),
        Expect::StaleWithFresh,
    )
    .await;
    app.post(&format!("/promotions/{p}/deactivate"))
        .key(ADMIN)
        .send()
        .await
        .ok();
    cell(
        app,
        "prepare_promotion_activation",
        json!({"promotion_id": p}),
        "the promotion edited (REST PATCH)",
        Side::rest(
            "PATCH",
            format!("/promotions/{p}"),
            Some(json!({"description": "Reworded"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    app.post(&format!("/promotions/{p}/deactivate"))
        .key(ADMIN)
        .send()
        .await
        .ok();
    cell(
        app,
        "prepare_promotion_activation",
        json!({"promotion_id": p}),
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;

    // prepare_promotion_deactivation.
    let p = northwind_promotion(app, true);
    cell(
        app,
        "prepare_promotion_deactivation",
        json!({"promotion_id": p}),
        "the promotion edited (REST PATCH)",
        Side::rest(
            "PATCH",
            format!("/promotions/{p}"),
            Some(json!({"description": "Side"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    app.post(&format!("/promotions/{p}/activate"))
        .key(ADMIN)
        .send()
        .await
        .ok();
    cell(
        app,
        "prepare_promotion_deactivation",
        json!({"promotion_id": p}),
        "deactivated on the side (REST)",
        Side::rest("POST", format!("/promotions/{p}/deactivate"), None),
        Expect::StaleNoFresh,
    )
    .await;
    app.post(&format!("/promotions/{p}/activate"))
        .key(ADMIN)
        .send()
        .await
        .ok();
    cell(
        app,
        "prepare_promotion_deactivation",
        json!({"promotion_id": p}),
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;

    // prepare_qr_code_creation: the code's default target is the landing page it showed.
    let p = northwind_promotion(app, true);
    let qr = json!({"promotion_id": p, "label": "Door"});
    cell(
        app,
        "prepare_qr_code_creation",
        qr.clone(),
        "the landing page changed (REST PATCH)",
        Side::rest(
            "PATCH",
            format!("/promotions/{p}"),
            Some(json!({"landing_url": "https://www.northwind-grocers.example/moved"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    cell(
        app,
        "prepare_qr_code_creation",
        qr.clone(),
        "another QR code added (REST)",
        Side::rest(
            "POST",
            format!("/promotions/{p}/qr-codes"),
            Some(json!({"label": "Side"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    cell(
        app,
        "prepare_qr_code_creation",
        qr,
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;

    // prepare_token_purchase: bound to the balance and the invoice it showed.
    let purchase = json!({"token_pack_id": pack(app), "company_id": c});
    cell(
        app,
        "prepare_token_purchase",
        purchase.clone(),
        "the balance moved (another purchase, MCP)",
        buy(),
        Expect::StaleWithFresh,
    )
    .await;
    let p = new_promotion(app, 30).await;
    cell(
        app,
        "prepare_token_purchase",
        purchase.clone(),
        "the balance moved (an activation, REST)",
        Side::rest("POST", format!("/promotions/{p}/activate"), None),
        Expect::StaleWithFresh,
    )
    .await;
    cell(
        app,
        "prepare_token_purchase",
        purchase,
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_tools_are_bound_to_the_webhook_and_its_log() {
    let app = spawn().await;
    let app = &app;
    let c = grocers();
    let webhook = || {
        one(
            app,
            "SELECT min(id) FROM webhooks WHERE company_id = ?1 AND enabled = 1",
            &[&grocers()],
        )
    };
    let new_webhook = || async {
        app.post("/webhooks")
            .key(ADMIN)
            .json(
                &json!({"company_id": c, "url": "http://127.0.0.1:0/_sandbox/sink/side-hooks",
                "event_types": ["ad.created"]}),
            )
            .send()
            .await
            .ok()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let w = webhook();
    let n = std::cell::Cell::new(0);
    for tool in [
        "prepare_webhook_change",
        "prepare_webhook_secret_rotation",
        "prepare_webhook_test",
        "prepare_webhook_deletion",
    ] {
        let args = |w: &str| {
            n.set(n.get() + 1);
            match tool {
                "prepare_webhook_change" => {
                    json!({"webhook_id": w, "changes": {"description": format!("Bound {}", n.get())}})
                }
                _ => json!({"webhook_id": w}),
            }
        };
        let w = if tool == "prepare_webhook_deletion" {
            new_webhook().await
        } else {
            w.clone()
        };
        cell(
            app,
            tool,
            args(&w),
            "the webhook edited (REST PATCH)",
            Side::rest(
                "PATCH",
                format!("/webhooks/{w}"),
                Some(json!({"description": format!("Side {tool}")})),
            ),
            Expect::StaleWithFresh,
        )
        .await;
        if tool != "prepare_webhook_deletion" {
            cell(
                app,
                tool,
                args(&w),
                "its secret rotated (REST)",
                Side::rest("POST", format!("/webhooks/{w}/rotate-secret"), None),
                Expect::StaleWithFresh,
            )
            .await;
            let gone = new_webhook().await;
            cell(
                app,
                tool,
                args(&gone),
                "the webhook deleted (REST)",
                Side::rest("DELETE", format!("/webhooks/{gone}"), None),
                Expect::Refused("not_found"),
            )
            .await;
        }
        let w = if tool == "prepare_webhook_deletion" {
            new_webhook().await
        } else {
            w
        };
        cell(app, tool, args(&w), "nothing", Side::None, Expect::Applied).await;
    }

    // prepare_webhook_redelivery: bound to the delivery's log as it showed it.
    let w = webhook();
    let delivery = || async {
        app.post(&format!("/webhooks/{w}/test"))
            .key(ADMIN)
            .send()
            .await
            .ok()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let d = delivery().await;
    let args = json!({"webhook_id": w, "delivery_id": d});
    cell(
        app,
        "prepare_webhook_redelivery",
        args.clone(),
        "sent again on the side (REST retry)",
        Side::rest("POST", format!("/webhooks/{w}/deliveries/{d}/retry"), None),
        Expect::StaleWithFresh,
    )
    .await;
    cell(
        app,
        "prepare_webhook_redelivery",
        args.clone(),
        "its webhook's URL changed (REST PATCH)",
        Side::rest(
            "PATCH",
            format!("/webhooks/{w}"),
            Some(json!({"url": "http://127.0.0.1:0/_sandbox/sink/moved"})),
        ),
        Expect::StaleWithFresh,
    )
    .await;
    cell(
        app,
        "prepare_webhook_redelivery",
        args,
        "nothing",
        Side::None,
        Expect::Applied,
    )
    .await;
    let gone = new_webhook().await;
    let d = app
        .post(&format!("/webhooks/{gone}/test"))
        .key(ADMIN)
        .send()
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_string();
    cell(
        app,
        "prepare_webhook_redelivery",
        json!({"webhook_id": gone, "delivery_id": d}),
        "the webhook deleted (REST)",
        Side::rest("DELETE", format!("/webhooks/{gone}"), None),
        Expect::Refused("not_found"),
    )
    .await;
}

/// The REST side of the same rule: a version covers everything its representation shows. An ad's
/// screens move its ETag however they change (one assignment, the bulk route, an MCP confirmation,
/// a deleted screen), and so does a promotion's QR code count; an `If-Match` from before is 412.
#[tokio::test]
async fn versions_cover_what_their_objects_show() {
    let app = spawn().await;
    let app = &app;
    let (ad, on, free) = ad_and_free_screen(app);
    let etag = |path: String| async move {
        app.get(&path)
            .key(RW)
            .send()
            .await
            .header("etag")
            .unwrap()
            .to_string()
    };
    let path = format!("/ads/{ad}");
    let mut seen = vec![etag(path.clone()).await];
    let device_before = etag(format!("/devices/{free}")).await;
    let moves: Vec<(&str, Side)> = vec![
        (
            "one assignment",
            Side::rest(
                "POST",
                format!("/ads/{ad}/devices"),
                Some(json!({"device_id": free})),
            ),
        ),
        (
            "the bulk route",
            Side::rest(
                "POST",
                format!("/ads/{ad}/assignments"),
                Some(json!({"unassign_device_ids": [free]})),
            ),
        ),
        (
            "an MCP confirmation",
            Side::Mcp(
                "prepare_ad_assignment",
                json!({"ad_id": ad, "device_id": free}),
            ),
        ),
        (
            "a screen deleted",
            Side::rest("DELETE", format!("/devices/{on}"), None),
        ),
    ];
    for (how, side) in moves {
        side.apply(app).await;
        let now = etag(path.clone()).await;
        assert!(!seen.contains(&now), "{how} left the ad's ETag at {now}");
        seen.push(now);
    }
    // The screen's own version moved with its assigned_ad_count.
    assert_ne!(etag(format!("/devices/{free}")).await, device_before);
    // An edit with the ETag from before the screens changed applies nothing.
    let r = app
        .patch(&path)
        .key(RW)
        .header("if-match", &seen[0])
        .json(&json!({"headline": "Too late"}))
        .send()
        .await;
    let p = r.problem(412);
    assert_eq!(p["current_etag"], seen[seen.len() - 1].as_str());
    // Assigning a screen already on the ad changes nothing, the ETag included.
    Side::rest(
        "POST",
        format!("/ads/{ad}/devices"),
        Some(json!({"device_id": free})),
    )
    .apply(app)
    .await;
    assert_eq!(etag(path.clone()).await, seen[seen.len() - 1]);

    // A promotion shows its QR code count.
    let p = northwind_promotion(app, true);
    let before = etag(format!("/promotions/{p}")).await;
    let code = app
        .post(&format!("/promotions/{p}/qr-codes"))
        .key(RW)
        .json(&json!({"label": "Counted"}))
        .send()
        .await
        .ok();
    let after_add = etag(format!("/promotions/{p}")).await;
    assert_ne!(after_add, before);
    app.delete(&format!("/qr-codes/{}", code["id"].as_str().unwrap()))
        .key(RW)
        .send()
        .await;
    assert_ne!(etag(format!("/promotions/{p}")).await, after_add);
}
