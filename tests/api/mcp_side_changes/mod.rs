//! Tests: mcp_side_changes. A preview is bound to everything it shows (issue 30 §1). For every
//! prepare tool, each kind of change that can be made on the side to what its preview shows
//! (its target, the target's relations, the company, the balance, the clock, a referenced object)
//! is made between the preview and the confirmation, through REST, the bulk route or MCP, and the
//! confirmation must then apply nothing: `stale_preview` with a fresh preview to show (which
//! applies once confirmed), or a refusal when the change can no longer be made at all. With no
//! side change, the same confirmation applies.
//!
//! The matrix is printed (`cargo test --test api mcp_side_changes:: -- --nocapture`). One module
//! per family of tools: `ads`, `creations`, `promotions` (and tokens), `webhooks`; `versions` is
//! the REST side of the same rule (ETags).

mod ads;
mod creations;
mod promotions;
mod versions;
mod webhooks;

use crate::helpers::mcp::{call, call_ok};
use crate::helpers::{company_id, TestApp};
use serde_json::{json, Value};

pub(super) const RW: &str = "northwind-readwrite";
pub(super) const ADMIN: &str = "northwind-admin";
const OPERATOR: &str = "sandbox-operator";

/// What the confirmation must do after the side change.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Expect {
    Applied,
    /// `stale_preview` (412) carrying a fresh preview, which applies when confirmed.
    StaleWithFresh,
    /// `stale_preview` (412) saying the change cannot be prepared again as it stands.
    StaleNoFresh,
    /// Refused with this code: the change cannot be made any more.
    Refused(&'static str),
}

/// A change made on the side, between the preview and the confirmation.
pub(super) enum Side {
    None,
    /// A REST request as a key.
    Rest(&'static str, &'static str, String, Option<Value>),
    /// A write made through MCP by another key: prepare then confirm.
    Mcp(&'static str, Value),
    /// The sandbox clock moves forward.
    Clock(i64),
}

impl Side {
    pub(super) fn rest(method: &'static str, path: String, body: Option<Value>) -> Side {
        Side::Rest(ADMIN, method, path, body)
    }

    pub(super) async fn apply(&self, app: &TestApp) {
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
pub(super) async fn cell(
    app: &TestApp,
    tool: &str,
    args: Value,
    what: &str,
    side: Side,
    expect: Expect,
) {
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
pub(super) async fn spawn() -> TestApp {
    TestApp::spawn_with(|l| l.rate_limit_per_second = Some(0.0)).await
}

/// A new promotion of Northwind Grocers, running, switched off, costing `cost` tokens.
pub(super) async fn new_promotion(app: &TestApp, cost: i64) -> String {
    app.post("/promotions")
        .key(ADMIN)
        .json(&json!({"company_id": grocers(), "name": format!("Costs {cost}"), "description": "x",
            "landing_url": "https://www.northwind-grocers.example/new", "activation_cost_tokens": cost,
            "starts_at": signage::time::rfc3339(signage::time::wall_now() - 3600), "ends_at": "2031-01-01T00:00:00Z"}))
        .send()
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

pub(super) fn one(app: &TestApp, sql: &str, args: &[&dyn rusqlite::ToSql]) -> String {
    app.sql(|c| c.query_row(sql, args, |r| r.get(0)))
}

pub(super) fn grocers() -> String {
    company_id("Northwind Grocers")
}

/// An ad of Northwind Grocers with at least one screen, and a screen of its company it is not on.
pub(super) fn ad_and_free_screen(app: &TestApp) -> (String, String, String) {
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
pub(super) fn another_free_screen(app: &TestApp, ad: &str, not: &str) -> String {
    one(
        app,
        "SELECT min(d.id) FROM devices d WHERE d.company_id = ?1 AND d.id <> ?3
           AND NOT EXISTS (SELECT 1 FROM ad_assignments y WHERE y.ad_id = ?2 AND y.device_id = d.id)",
        &[&grocers(), &ad, &not],
    )
}

pub(super) fn company_edit(app: &TestApp, n: usize) -> Side {
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

pub(super) fn northwind_promotion(app: &TestApp, active: bool) -> String {
    let now = signage::time::wall_now();
    one(
        app,
        "SELECT min(p.id) FROM promotions p JOIN token_balances b ON b.company_id = p.company_id
         WHERE p.company_id = ?1 AND p.active = ?2 AND p.starts_at <= ?3 AND p.ends_at > ?3
           AND p.activation_cost_tokens BETWEEN 1 AND b.balance",
        &[&grocers(), &active, &now],
    )
}

pub(super) fn pack(app: &TestApp) -> String {
    one(app, "SELECT min(id) FROM token_packs", &[])
}
