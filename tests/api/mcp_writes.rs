//! Tests: mcp_writes. The two-step write state machine (prepare_* → confirm_change / cancel_change)
//! end to end: every step is a `tools/call` over POST /mcp, and every step is checked against the
//! database afterwards. "Nothing changed" means the tables a change can touch (ads, promotions,
//! token balances and transactions, domain events) are identical, row for row.

use crate::helpers::mcp::{call, call_err, call_ok, post, request, rpc, rpc_error, tool_names};
use crate::helpers::{company_id, demo, key, TestApp};
use rusqlite::types::ValueRef;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::time::Duration;

const WRITE_TOOLS: [&str; 9] = [
    "prepare_ad_change",
    "prepare_ad_assignment",
    "prepare_ad_unassignment",
    "prepare_promotion_change",
    "prepare_promotion_activation",
    "prepare_promotion_deactivation",
    "prepare_token_purchase",
    "confirm_change",
    "cancel_change",
];

/// Every table a confirmed ad or promotion change can write.
const TABLES: [&str; 5] = [
    "ads",
    "promotions",
    "token_balances",
    "token_transactions",
    "events",
];

const UNKNOWN_ID: &str = "No pending change with this confirmation_id is available to this API key. Nothing was applied. Prepare the change first.";
const ALREADY_USED: &str =
    "This confirmation_id was already used (it works once); nothing more was applied.";
/// The refusal of a replayed id whose confirmation applied nothing.
fn used_without_effect(outcome: &str) -> String {
    format!("This confirmation_id was already used, and that confirmation did not apply the change ({outcome}); nothing was applied. Prepare the change again.")
}
const CANCELLED: &str =
    "This change was cancelled; nothing was applied. Prepare it again if the user still wants it.";

// --- Reading the database.

/// Rows of a query as JSON objects keyed by column name.
fn rows(app: &TestApp, sql: &str, args: &[&str]) -> Vec<Value> {
    app.sql(|c| {
        let mut stmt = c.prepare(sql)?;
        let names: Vec<String> = stmt.column_names().map(String::from).collect();
        let mapped = stmt.query_map(rusqlite::params_from_iter(args.iter()), |r| {
            let mut m = Map::new();
            for (i, n) in names.iter().enumerate() {
                let v = match r.get_ref(i)? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(x) => json!(x),
                    ValueRef::Real(x) => json!(x),
                    ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
                    ValueRef::Blob(b) => json!(format!("<{} bytes>", b.len())),
                };
                m.insert(n.clone(), v);
            }
            Ok(Value::Object(m))
        })?;
        mapped.collect()
    })
}

fn snapshot(app: &TestApp) -> Value {
    let mut out = Map::new();
    for t in TABLES {
        out.insert(
            t.to_string(),
            Value::Array(rows(app, &format!("SELECT * FROM {t} ORDER BY 1"), &[])),
        );
    }
    Value::Object(out)
}

/// The rows that differ between two snapshots, per table that changed: `{"gone": [..], "new": [..]}`.
fn diff(before: &Value, after: &Value) -> Value {
    let mut out = Map::new();
    for t in TABLES {
        let (b, a) = (before[t].as_array().unwrap(), after[t].as_array().unwrap());
        let gone: Vec<&Value> = b.iter().filter(|r| !a.contains(r)).collect();
        let new: Vec<&Value> = a.iter().filter(|r| !b.contains(r)).collect();
        if !gone.is_empty() || !new.is_empty() {
            out.insert(t.to_string(), json!({"gone": gone, "new": new}));
        }
    }
    Value::Object(out)
}

/// The one row of `table` a change updated in place: (before, after).
fn updated_row(d: &Value, table: &str) -> (Value, Value) {
    let gone = d[table]["gone"].as_array().unwrap();
    let new = d[table]["new"].as_array().unwrap();
    assert_eq!((gone.len(), new.len()), (1, 1), "{table}: {d}");
    assert_eq!(gone[0]["id"], new[0]["id"]);
    (gone[0].clone(), new[0].clone())
}

/// `old` with these columns replaced, and `version` and `updated_at` taken from `new` after
/// checking the version went up by exactly one and the time did not go back.
fn expected_update(old: &Value, new: &Value, set: Value) -> Value {
    assert_eq!(
        new["version"].as_i64().unwrap(),
        old["version"].as_i64().unwrap() + 1
    );
    assert!(new["updated_at"].as_i64().unwrap() >= old["updated_at"].as_i64().unwrap());
    let mut e = old.clone();
    for (k, v) in set.as_object().unwrap() {
        e[k] = v.clone();
    }
    e["version"] = new["version"].clone();
    e["updated_at"] = new["updated_at"].clone();
    e
}

/// The ads changed (`{"gone", "new"}`) are ads of `promotion` whose version alone went up by one:
/// switching a promotion moves what its ads show (`on_air`).
fn only_versions_moved(ads: &Value, promotion: &str) {
    let (gone, new) = (
        ads["gone"].as_array().unwrap(),
        ads["new"].as_array().unwrap(),
    );
    assert!(!gone.is_empty());
    assert_eq!(gone.len(), new.len());
    for (old, new) in gone.iter().zip(new) {
        assert_eq!(old["promotion_id"], promotion);
        let mut expected = old.clone();
        expected["version"] = json!(old["version"].as_i64().unwrap() + 1);
        assert_eq!(new, &expected);
    }
}

/// The domain events a change recorded: (type, resource_id), in id order.
fn new_events(d: &Value) -> Vec<(String, String)> {
    assert_eq!(d["events"]["gone"], json!([]));
    d["events"]["new"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_string(),
                e["resource_id"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn sha256_hex(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The stored row of a confirmation id (looked up by its hash, the only form stored).
fn pending_row(app: &TestApp, confirmation_id: &str) -> Value {
    let mut found = rows(
        app,
        "SELECT * FROM mcp_pending_changes WHERE id_hash = ?1",
        &[&sha256_hex(confirmation_id)],
    );
    assert_eq!(found.len(), 1, "no stored row for {confirmation_id}");
    found.remove(0)
}

fn pending_count(app: &TestApp) -> i64 {
    app.sql(|c| c.query_row("SELECT count(*) FROM mcp_pending_changes", [], |r| r.get(0)))
}

/// (used, outcome) of a stored change.
fn state(app: &TestApp, confirmation_id: &str) -> (bool, Option<String>) {
    let r = pending_row(app, confirmation_id);
    (
        !r["used_at"].is_null(),
        r["outcome"].as_str().map(String::from),
    )
}

fn grocers_ad(app: &TestApp) -> String {
    let grocers = company_id("Northwind Grocers");
    app.sql(|c| {
        c.query_row(
            "SELECT min(id) FROM ads WHERE company_id = ?1",
            [&grocers],
            |r| r.get(0),
        )
    })
}

/// A current Northwind promotion with a non-zero cost the company can afford, (in)active:
/// (id, company_id, activation_cost_tokens).
fn northwind_promotion(app: &TestApp, active: bool) -> (String, String, i64) {
    let account = key("northwind-readwrite").account_id;
    let now = signage::time::wall_now();
    app.sql(|c| {
        c.query_row(
            "SELECT p.id, p.company_id, p.activation_cost_tokens FROM promotions p
             JOIN companies c ON c.id = p.company_id
             JOIN token_balances b ON b.company_id = p.company_id
             WHERE c.account_id = ?1 AND p.active = ?2 AND p.starts_at <= ?3 AND p.ends_at > ?3
               AND p.activation_cost_tokens BETWEEN 1 AND b.balance
             ORDER BY p.id LIMIT 1",
            rusqlite::params![account, active, now],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
    })
}

fn balance(app: &TestApp, company: &str) -> i64 {
    app.sql(|c| {
        c.query_row(
            "SELECT balance FROM token_balances WHERE company_id = ?1",
            [company],
            |r| r.get(0),
        )
    })
}

// --- Talking to the server.

/// A REST GET as the admin: (body, ETag).
async fn rest_get(app: &TestApp, path: &str) -> (Value, String) {
    let r = app.get(path).key("northwind-admin").send().await;
    let body = r.ok();
    (body, r.header("etag").expect("etag").to_string())
}

/// Prepares a change; returns the preview.
async fn prepare(app: &TestApp, key_name: &str, tool: &str, args: Value) -> Value {
    let preview = call_ok(app, key_name, tool, args).await;
    assert_eq!(preview["status"], "awaiting_confirmation", "{preview}");
    preview
}

async fn prepare_id(app: &TestApp, key_name: &str, tool: &str, args: Value) -> String {
    prepare(app, key_name, tool, args).await["confirmation_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `tools/call` with arbitrary credential headers (a login token, a rotated key); returns the
/// tool result.
async fn call_with(app: &TestApp, auth: &[(&str, &str)], tool: &str, args: Value) -> Value {
    let mut b = app
        .post("/mcp")
        .header("accept", "application/json")
        .header("mcp-protocol-version", "2025-11-25");
    for (n, v) in auth {
        b = b.header(n, v);
    }
    let r = b
        .json(&request(
            1,
            "tools/call",
            json!({"name": tool, "arguments": args}),
        ))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert!(v.get("error").is_none(), "{v}");
    v["result"].clone()
}

fn error_text(result: &Value) -> String {
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap().to_string();
    crate::helpers::mcp::assert_structured_error(result, &text);
    text
}

fn confirmation(id: &str) -> Value {
    json!({"confirmation_id": id})
}

// --- The tests.

#[tokio::test]
async fn prepare_executes_nothing_and_confirm_applies_exactly_once() {
    let app = TestApp::spawn().await;
    let ttl = app.app.settings.pending_change_ttl_secs as i64;
    let rw = key("northwind-readwrite");
    let ad = grocers_ad(&app);
    let (current, etag) = rest_get(&app, &format!("/ads/{ad}")).await;
    assert_ne!(current["headline"], "Fresh bread daily");
    assert_ne!(current["duration_seconds"], 12);
    let before = snapshot(&app);
    let args =
        json!({"ad_id": ad, "changes": {"headline": "Fresh bread daily", "duration_seconds": 12}});

    let t0 = signage::time::wall_now();
    let preview = prepare(
        &app,
        "northwind-readwrite",
        "prepare_ad_change",
        args.clone(),
    )
    .await;
    let id = preview["confirmation_id"].as_str().unwrap().to_string();
    assert!(id.starts_with("chg_") && id.len() == 36, "{id}");
    assert!(id[4..].bytes().all(|b| b.is_ascii_alphanumeric()), "{id}");
    let mut proposed = current.clone();
    proposed["headline"] = json!("Fresh bread daily");
    proposed["duration_seconds"] = json!(12);
    proposed["updated_at"] = Value::Null;
    let expires_at = preview["expires_at"].as_str().unwrap();
    let expires = signage::time::parse_rfc3339(expires_at).unwrap();
    assert!((t0 + ttl..=signage::time::wall_now() + ttl).contains(&expires));
    let next_step = preview["next_step"].as_str().unwrap();
    assert!(
        next_step.starts_with("Nothing has been changed yet.") && next_step.contains(&id),
        "{next_step}"
    );
    assert_eq!(
        preview,
        json!({
            "object": "pending_change",
            "confirmation_id": id,
            "status": "awaiting_confirmation",
            "tool": "prepare_ad_change",
            "operation": "updateAd",
            "target": {"type": "ad", "id": ad, "version": etag},
            "summary": format!(
                "Change the ad “{}” ({ad}) of “Northwind Grocers” ({}); the screens that play it show the change. Webhooks subscribed to ad.updated are notified. It changes headline from “{}” to “Fresh bread daily”; duration_seconds from {} to 12.",
                current["name"].as_str().unwrap(),
                current["company_id"].as_str().unwrap(),
                current["headline"].as_str().unwrap(),
                current["duration_seconds"]
            ),
            "current": current,
            "after": proposed,
            "set_at_confirmation": ["updated_at"],
            "differences": [
                {"field": "headline", "current": current["headline"], "proposed": "Fresh bread daily"},
                {"field": "duration_seconds", "current": current["duration_seconds"], "proposed": 12},
                {"field": "updated_at", "current": current["updated_at"], "proposed": null, "set_at_confirmation": true},
            ],
            "cost": null,
            "redacted_fields": [],
            "expires_at": expires_at,
            "next_step": next_step,
        })
    );

    // Prepared, not applied: the data is untouched, and the change is stored under the id's hash.
    assert_eq!(snapshot(&app), before);
    assert_eq!(pending_count(&app), 1);
    let stored = pending_row(&app, &id);
    assert!(!stored.to_string().contains(&id));
    let created = stored["created_at"].as_i64().unwrap();
    assert_eq!(
        stored,
        json!({
            "id_hash": sha256_hex(&id),
            "actor": rw.key_id,
            "client_id": rw.client_id,
            "tool": "prepare_ad_change",
            "arguments": args.to_string(),
            "operation": "updateAd",
            "target_type": "ad",
            "target_id": ad,
            "read_path": format!("/ads/{ad}"),
            "method": "PATCH",
            "path": format!("/ads/{ad}"),
            "body": args["changes"].to_string(),
            "version": etag,
            "created_at": created,
            "expires_at": expires,
            "used_at": null,
            "outcome": null,
            "shown": stored["shown"],
            "set_paths": "[\"updated_at\"]",
            "summary": preview["summary"],
            "cost": null,
            "balance_company": null,
            "balance": null,
        })
    );
    // What the preview showed is bound by a SHA-256 fingerprint, not kept.
    let shown = stored["shown"].as_str().unwrap();
    assert!(
        shown.len() == 64 && shown.bytes().all(|b| b.is_ascii_hexdigit()),
        "{shown}"
    );
    assert_eq!(expires - created, ttl);

    // Confirmed by the same key: applied once, exactly as previewed.
    let done = call_ok(
        &app,
        "northwind-readwrite",
        "confirm_change",
        confirmation(&id),
    )
    .await;
    let (now_ad, now_etag) = rest_get(&app, &format!("/ads/{ad}")).await;
    assert_eq!(
        done,
        json!({"object": "change_result", "status": "applied", "confirmation_id": id,
            "tool": "prepare_ad_change", "operation": "updateAd",
            "target": {"type": "ad", "id": ad}, "result": now_ad})
    );
    assert_eq!(now_ad["headline"], "Fresh bread daily");
    assert_eq!(now_ad["duration_seconds"], 12);
    assert_ne!(now_etag, etag);
    let after = snapshot(&app);
    let d = diff(&before, &after);
    assert_eq!(
        d.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["ads", "events"]
    );
    let (old, new) = updated_row(&d, "ads");
    assert_eq!(
        new,
        expected_update(
            &old,
            &new,
            json!({"headline": "Fresh bread daily", "duration_seconds": 12})
        )
    );
    assert_eq!(new_events(&d), [("ad.updated".to_string(), ad.clone())]);
    assert_eq!(state(&app, &id), (true, Some("applied".into())));
    // The write went through the REST pipeline as the key, and was audited as such.
    let audited = rows(
        &app,
        "SELECT actor, client_id, status FROM audit_log WHERE route = '/ads/{id}' AND method = 'PATCH'",
        &[],
    );
    assert_eq!(
        audited,
        [json!({"actor": rw.key_id, "client_id": rw.client_id, "status": 200})]
    );

    // A second confirmation, and a late cancellation, are refused and change nothing.
    let e = call_err(
        &app,
        "northwind-readwrite",
        "confirm_change",
        confirmation(&id),
    )
    .await;
    assert_eq!(e, ALREADY_USED);
    let e = call_err(
        &app,
        "northwind-readwrite",
        "cancel_change",
        confirmation(&id),
    )
    .await;
    assert_eq!(e, ALREADY_USED);
    assert_eq!(snapshot(&app), after);
    assert_eq!(state(&app, &id), (true, Some("applied".into())));

    // The same change again has nothing to change: refused up front, nothing stored.
    let e = call_err(&app, "northwind-readwrite", "prepare_ad_change", args).await;
    assert_eq!(
        e,
        format!("Nothing to change: the ad `{ad}` already has these values. Nothing was prepared.")
    );
    assert_eq!(pending_count(&app), 1);
    assert_eq!(snapshot(&app), after);
}

#[tokio::test]
async fn nothing_changes_without_a_confirmation() {
    let app = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    let (inactive, _, _) = northwind_promotion(&app, false);
    let (active, _, _) = northwind_promotion(&app, true);
    let before = snapshot(&app);
    let ids = [
        prepare_id(
            &app,
            "northwind-readwrite",
            "prepare_ad_change",
            json!({"ad_id": ad, "changes": {"status": "paused", "name": "Never confirmed"}}),
        )
        .await,
        prepare_id(
            &app,
            "northwind-grocers-write",
            "prepare_ad_change",
            json!({"ad_id": ad, "changes": {"headline": "Never confirmed"}}),
        )
        .await,
        prepare_id(
            &app,
            "northwind-readwrite",
            "prepare_promotion_activation",
            json!({"promotion_id": inactive}),
        )
        .await,
        prepare_id(
            &app,
            "northwind-readwrite",
            "prepare_promotion_deactivation",
            json!({"promotion_id": active}),
        )
        .await,
    ];
    // Other traffic in between (reads, listings, a confirmation of nothing) runs none of them.
    call_ok(&app, "northwind-readwrite", "get_ad", json!({"ad_id": ad})).await;
    rpc(&app, "northwind-readwrite", "tools/list", json!({})).await;
    let e = call_err(
        &app,
        "northwind-readwrite",
        "confirm_change",
        confirmation("chg_NotAnIdAnyoneWasGiven0000000000"),
    )
    .await;
    assert_eq!(e, UNKNOWN_ID);

    assert_eq!(snapshot(&app), before);
    assert_eq!(pending_count(&app), 4);
    for id in &ids {
        assert_eq!(state(&app, id), (false, None), "{id}");
    }
}

#[tokio::test]
async fn only_the_preparing_key_can_confirm_or_cancel() {
    let app = TestApp::spawn().await;
    let (promo, company, cost) = northwind_promotion(&app, false);
    let id = prepare_id(
        &app,
        "northwind-readwrite",
        "prepare_promotion_activation",
        json!({"promotion_id": promo}),
    )
    .await;
    let start = balance(&app, &company);
    let before = snapshot(&app);

    // Keys of the same account and of the other one, with or without a company scope or admin.
    for other in [
        "northwind-grocers-write",
        "northwind-admin",
        "northwind-ads-editor",
        "harborview-readwrite",
        "harborview-admin",
    ] {
        for tool in ["confirm_change", "cancel_change"] {
            let e = call_err(&app, other, tool, confirmation(&id)).await;
            assert_eq!(e, UNKNOWN_ID, "{other} {tool}");
        }
    }
    // A login token of the account's admin user.
    let (user, password) = demo().users[0].clone();
    let token = format!("Bearer {}", app.login(&user, &password).await);
    for tool in ["confirm_change", "cancel_change"] {
        let r = call_with(&app, &[("authorization", &token)], tool, confirmation(&id)).await;
        assert_eq!(error_text(&r), UNKNOWN_ID, "user {tool}");
    }
    // The replacement of the preparing key (rotated, the old one still in its grace period).
    let rw = key("northwind-readwrite");
    let rotation = app
        .post(&format!("/api-keys/{}/rotate", rw.key_id))
        .key("northwind-admin")
        .json(&json!({"grace_period_seconds": 3600}))
        .send()
        .await;
    assert_eq!(rotation.status, 201, "{}", rotation.text());
    let new_raw = rotation.json()["new_key"]["rawKey"]
        .as_str()
        .unwrap()
        .to_string();
    let replacement = [
        ("x-api-key", new_raw.as_str()),
        ("x-service-client-id", rw.client_id.as_str()),
    ];
    for tool in ["confirm_change", "cancel_change"] {
        let r = call_with(&app, &replacement, tool, confirmation(&id)).await;
        assert_eq!(error_text(&r), UNKNOWN_ID, "replacement key {tool}");
    }

    // None of that applied, cancelled or consumed anything.
    assert_eq!(snapshot(&app), before);
    assert_eq!(state(&app, &id), (false, None));

    // The preparing key still can.
    let done = call_ok(
        &app,
        "northwind-readwrite",
        "confirm_change",
        confirmation(&id),
    )
    .await;
    assert_eq!(done["status"], "applied");
    assert_eq!(done["result"]["active"], true);
    assert_eq!(balance(&app, &company), start - cost);
    assert_eq!(state(&app, &id), (true, Some("applied".into())));
}

#[tokio::test]
async fn an_expired_confirmation_does_nothing() {
    let app = TestApp::spawn_with(|l| l.pending_change_ttl_secs = Some(1)).await;
    let ad = grocers_ad(&app);
    let (promo, _, _) = northwind_promotion(&app, false);
    let before = snapshot(&app);
    let previews = [
        prepare(
            &app,
            "northwind-readwrite",
            "prepare_ad_change",
            json!({"ad_id": ad, "changes": {"headline": "Too late"}}),
        )
        .await,
        prepare(
            &app,
            "northwind-readwrite",
            "prepare_promotion_activation",
            json!({"promotion_id": promo}),
        )
        .await,
    ];
    for p in &previews {
        let row = pending_row(&app, p["confirmation_id"].as_str().unwrap());
        assert_eq!(
            row["expires_at"].as_i64().unwrap() - row["created_at"].as_i64().unwrap(),
            1
        );
    }
    // Expiry is in whole seconds: 1.5 s after preparing, `now` is past `expires_at`.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for p in &previews {
        let id = p["confirmation_id"].as_str().unwrap();
        let expected = format!(
            "This confirmation_id expired at {}; nothing was applied. Prepare the change again and ask the user to confirm.",
            p["expires_at"].as_str().unwrap()
        );
        for tool in ["confirm_change", "cancel_change"] {
            let e = call_err(&app, "northwind-readwrite", tool, confirmation(id)).await;
            assert_eq!(e, expected, "{tool}");
        }
        // Never used; the system clock's tick may already have marked it expired.
        let (used, outcome) = state(&app, id);
        assert!(!used && matches!(outcome.as_deref(), None | Some("expired")));
    }
    // Nothing changed, but for the record of the expiries themselves (timeline, item 2).
    let mut after = snapshot(&app);
    if let Some(events) = after["events"].as_array_mut() {
        events.retain(|e| e["type"] != "mcp.confirmation_expired");
    }
    assert_eq!(after, before);
}

/// Exactly once under a race: several confirmations of one id at the same time apply it once.
/// Replaying the confirming request later, byte for byte and with an `Idempotency-Key`, applies
/// nothing either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_and_replayed_confirmations_apply_once() {
    let app = TestApp::spawn().await;
    let (promo, company, cost) = northwind_promotion(&app, false);
    let id = prepare_id(
        &app,
        "northwind-readwrite",
        "prepare_promotion_activation",
        json!({"promotion_id": promo}),
    )
    .await;
    let before = snapshot(&app);
    let go = || {
        call(
            &app,
            "northwind-readwrite",
            "confirm_change",
            confirmation(&id),
        )
    };
    let (a, b, c, d) = tokio::join!(go(), go(), go(), go());
    let results = [a, b, c, d];
    let applied: Vec<&Value> = results.iter().filter(|r| r["isError"] == false).collect();
    assert_eq!(applied.len(), 1, "{results:?}");
    assert_eq!(applied[0]["structuredContent"]["status"], "applied");
    for r in results.iter().filter(|r| r["isError"] == true) {
        assert_eq!(error_text(r), ALREADY_USED);
    }
    let after = snapshot(&app);
    let diff_once = diff(&before, &after);
    let spent = diff_once["token_transactions"]["new"].as_array().unwrap();
    assert_eq!(spent.len(), 1, "{diff_once}");
    assert_eq!(spent[0]["amount"], -cost);
    assert_eq!(
        balance(&app, &company),
        spent[0]["balance_after"].as_i64().unwrap()
    );

    let msg = request(
        7,
        "tools/call",
        json!({"name": "confirm_change", "arguments": confirmation(&id)}),
    );
    for _ in 0..2 {
        let r = post(&app, "northwind-readwrite")
            .header("mcp-protocol-version", "2025-11-25")
            .header("idempotency-key", "confirm-once-please")
            .json(&msg)
            .send()
            .await;
        assert_eq!(r.status, 200);
        let v = r.json();
        assert_eq!(v["id"], 7);
        assert_eq!(error_text(&v["result"]), ALREADY_USED);
    }
    assert_eq!(snapshot(&app), after);
}

#[tokio::test]
async fn a_stale_preview_is_not_applied() {
    let app = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    let id = prepare_id(
        &app,
        "northwind-readwrite",
        "prepare_ad_change",
        json!({"ad_id": ad, "changes": {"name": "Renamed by MCP"}}),
    )
    .await;
    // Someone changes the ad over REST between the preview and the confirmation.
    app.patch(&format!("/ads/{ad}"))
        .key("northwind-admin")
        .json(&json!({"headline": "Changed meanwhile"}))
        .send()
        .await
        .ok();
    let changed = snapshot(&app);
    let e = call_err(
        &app,
        "northwind-readwrite",
        "confirm_change",
        confirmation(&id),
    )
    .await;
    assert!(
        e.starts_with(&format!("The ad `{ad}`, or what its preview showed (the outcome, the cost, the balance), changed since the preview, so nothing was applied. Here is what the change would do now (a fresh preview, in `preview`): Change the ad ")),
        "{e}"
    );
    assert_eq!(snapshot(&app), changed);
    assert_eq!(state(&app, &id), (true, Some("stale".into())));
    let e = call_err(
        &app,
        "northwind-readwrite",
        "confirm_change",
        confirmation(&id),
    )
    .await;
    assert_eq!(e, used_without_effect("stale"));
    assert_eq!(snapshot(&app), changed);

    // The same for a promotion activation: no tokens are spent.
    let (promo, _, _) = northwind_promotion(&app, false);
    let id = prepare_id(
        &app,
        "northwind-readwrite",
        "prepare_promotion_activation",
        json!({"promotion_id": promo}),
    )
    .await;
    app.patch(&format!("/promotions/{promo}"))
        .key("northwind-admin")
        .json(&json!({"description": "Reworded meanwhile."}))
        .send()
        .await
        .ok();
    let changed = snapshot(&app);
    let e = call_err(
        &app,
        "northwind-readwrite",
        "confirm_change",
        confirmation(&id),
    )
    .await;
    assert!(
        e.starts_with(&format!(
            "The promotion `{promo}`, or what its preview showed (the outcome, the cost, the balance), changed since the preview, so nothing was applied."
        )),
        "{e}"
    );
    assert_eq!(snapshot(&app), changed);
    assert_eq!(state(&app, &id), (true, Some("stale".into())));

    // A fresh preview of the changed ad shows the new state and can be confirmed.
    let preview = prepare(
        &app,
        "northwind-readwrite",
        "prepare_ad_change",
        json!({"ad_id": ad, "changes": {"name": "Renamed by MCP"}}),
    )
    .await;
    assert_eq!(preview["current"]["headline"], "Changed meanwhile");
    let done = call_ok(
        &app,
        "northwind-readwrite",
        "confirm_change",
        json!({"confirmation_id": preview["confirmation_id"]}),
    )
    .await;
    assert_eq!(done["result"]["name"], "Renamed by MCP");
    assert_eq!(done["result"]["headline"], "Changed meanwhile");
}

#[tokio::test]
async fn a_cancelled_change_cannot_be_confirmed() {
    let app = TestApp::spawn().await;
    let (promo, _, _) = northwind_promotion(&app, true);
    let before = snapshot(&app);
    let id = prepare_id(
        &app,
        "northwind-readwrite",
        "prepare_promotion_deactivation",
        json!({"promotion_id": promo}),
    )
    .await;
    let c = call_ok(
        &app,
        "northwind-readwrite",
        "cancel_change",
        confirmation(&id),
    )
    .await;
    assert_eq!(
        c,
        json!({"object": "change_result", "status": "cancelled", "confirmation_id": id})
    );
    assert_eq!(state(&app, &id), (true, Some("cancelled".into())));
    let e = call_err(
        &app,
        "northwind-readwrite",
        "confirm_change",
        confirmation(&id),
    )
    .await;
    assert_eq!(e, CANCELLED);
    // Cancelling again is idempotent (as annotated): the same answer, nothing else happens.
    let again = call_ok(
        &app,
        "northwind-readwrite",
        "cancel_change",
        confirmation(&id),
    )
    .await;
    assert_eq!(again, c);
    let tools = rpc(&app, "northwind-readwrite", "tools/list", json!({})).await;
    let cancel = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "cancel_change")
        .unwrap();
    assert_eq!(cancel["annotations"]["idempotentHint"], true);
    assert_eq!(snapshot(&app), before);
    assert_eq!(state(&app, &id), (true, Some("cancelled".into())));
}

#[tokio::test]
async fn confirmation_is_reauthorized_at_confirm_time() {
    let app = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    let rw = key("northwind-readwrite");
    let id = prepare_id(
        &app,
        "northwind-readwrite",
        "prepare_ad_change",
        json!({"ad_id": ad, "changes": {"headline": "Revoked"}}),
    )
    .await;
    let before = snapshot(&app);
    let revoked = app
        .post(&format!("/api-keys/{}/revoke", rw.key_id))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert_eq!(revoked["status"], "revoked");
    // The revoked key is refused before any tool runs: the HTTP 401 of the REST API.
    let r = post(&app, "northwind-readwrite")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&request(
            1,
            "tools/call",
            json!({"name": "confirm_change", "arguments": confirmation(&id)}),
        ))
        .send()
        .await;
    assert_eq!(r.problem(401)["code"], "revoked_key");
    assert!(r
        .header("www-authenticate")
        .is_some_and(|c| c.starts_with("Bearer")));
    assert_eq!(snapshot(&app), before);
    assert_eq!(state(&app, &id), (false, None));
}

#[tokio::test]
async fn a_target_gone_at_confirm_time_is_refused() {
    let app = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    let id = prepare_id(
        &app,
        "northwind-grocers-write",
        "prepare_ad_change",
        json!({"ad_id": ad, "changes": {"headline": "Deleted meanwhile"}}),
    )
    .await;
    let r = app
        .delete(&format!("/ads/{ad}"))
        .key("northwind-admin")
        .send()
        .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let gone = snapshot(&app);
    let e = call_err(
        &app,
        "northwind-grocers-write",
        "confirm_change",
        confirmation(&id),
    )
    .await;
    assert!(
        e.starts_with("Nothing was applied: HTTP 404 Not found"),
        "{e}"
    );
    assert!(e.contains(&ad), "{e}");
    assert_eq!(snapshot(&app), gone);
    assert_eq!(state(&app, &id), (true, Some("refused".into())));
}

#[tokio::test]
async fn keys_without_write_access_cannot_prepare_or_confirm() {
    let app = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    let (inactive, _, _) = northwind_promotion(&app, false);
    let (active, _, _) = northwind_promotion(&app, true);
    let id = prepare_id(
        &app,
        "northwind-readwrite",
        "prepare_promotion_activation",
        json!({"promotion_id": inactive}),
    )
    .await;
    let before = snapshot(&app);
    let calls = [
        (
            "prepare_ad_change",
            json!({"ad_id": ad, "changes": {"headline": "No"}}),
            "ads:write",
        ),
        (
            "prepare_promotion_activation",
            json!({"promotion_id": inactive}),
            "promotions:write",
        ),
        (
            "prepare_promotion_deactivation",
            json!({"promotion_id": active}),
            "promotions:write",
        ),
        // Any write scope will do; the message names them in catalogue order.
        ("confirm_change", confirmation(&id), "devices:write"),
        ("cancel_change", confirmation(&id), "devices:write"),
    ];
    for key_name in [
        "northwind-readonly",
        "northwind-pharmacy-read",
        "harborview-hotels-billing",
    ] {
        let listed = tool_names(&rpc(&app, key_name, "tools/list", json!({})).await);
        for w in WRITE_TOOLS {
            assert!(!listed.contains(&w.to_string()), "{key_name} {w}");
        }
        for (tool, args, scope) in &calls {
            let e = call_err(&app, key_name, tool, args.clone()).await;
            assert!(
                e.starts_with(&format!(
                    "This API key cannot use {tool}: it needs the `{scope}"
                )) && e.contains("Nothing was done"),
                "{key_name}: {e}"
            );
        }
    }
    // A key that may change ads but only read promotions.
    let listed = tool_names(&rpc(&app, "northwind-ads-editor", "tools/list", json!({})).await);
    assert!(listed.contains(&"prepare_ad_change".to_string()));
    assert!(listed.contains(&"confirm_change".to_string()));
    for (tool, args, _) in &calls[1..3] {
        assert!(!listed.contains(&tool.to_string()), "{tool}");
        let e = call_err(&app, "northwind-ads-editor", tool, args.clone()).await;
        assert!(
            e.starts_with(&format!(
                "This API key cannot use {tool}: it needs the `promotions:write` scope."
            )),
            "{e}"
        );
    }
    // Keys that cannot see the target get the REST 404 at prepare time, and nothing is stored.
    let pharmacy_ad: String = app.sql(|c| {
        c.query_row(
            "SELECT min(id) FROM ads WHERE company_id = ?1",
            [company_id("Northwind Pharmacy")],
            |r| r.get(0),
        )
    });
    for (key_name, target) in [
        ("northwind-grocers-write", &pharmacy_ad),
        ("harborview-readwrite", &ad),
    ] {
        let e = call_err(
            &app,
            key_name,
            "prepare_ad_change",
            json!({"ad_id": target, "changes": {"headline": "Not mine"}}),
        )
        .await;
        assert!(e.starts_with("HTTP 404 Not found"), "{key_name}: {e}");
    }
    let e = call_err(
        &app,
        "harborview-readwrite",
        "prepare_promotion_activation",
        json!({"promotion_id": inactive}),
    )
    .await;
    assert!(e.starts_with("HTTP 404 Not found"), "{e}");

    assert_eq!(snapshot(&app), before);
    assert_eq!(pending_count(&app), 1);
    assert_eq!(state(&app, &id), (false, None));
    // The refusals consumed nothing: the preparing key still confirms.
    let done = call_ok(
        &app,
        "northwind-readwrite",
        "confirm_change",
        confirmation(&id),
    )
    .await;
    assert_eq!(done["status"], "applied");
}

#[tokio::test]
async fn confirm_and_cancel_arguments_are_checked() {
    let app = TestApp::spawn().await;
    let (promo, _, _) = northwind_promotion(&app, false);
    let id = prepare_id(
        &app,
        "northwind-readwrite",
        "prepare_promotion_activation",
        json!({"promotion_id": promo}),
    )
    .await;
    let before = snapshot(&app);
    let long = format!("chg_{}", "x".repeat(97));
    for tool in ["confirm_change", "cancel_change"] {
        for (args, expected) in [
            (json!({}), "`confirmation_id` is required."),
            (
                json!({"confirmation_id": 42}),
                "`confirmation_id` must be of type string.",
            ),
            (
                json!({"confirmation_id": null}),
                "`confirmation_id` must be of type string.",
            ),
            (
                json!({"confirmation_id": [id]}),
                "`confirmation_id` must be of type string.",
            ),
            (
                json!({"confirmation_id": ""}),
                "`confirmation_id` is too short.",
            ),
            (
                json!({"confirmation_id": long}),
                "`confirmation_id` is too long.",
            ),
            // A valid id with an unknown field next to it is refused whole, and not used.
            (
                json!({"confirmation_id": id, "force": true}),
                "Unknown argument `force`; expected: confirmation_id.",
            ),
        ] {
            let e = call_err(&app, "northwind-readwrite", tool, args.clone()).await;
            assert_eq!(
                e,
                format!("Invalid arguments: {expected} Nothing was done."),
                "{tool} {args}"
            );
        }
        // No `arguments` at all is an empty argument object.
        let r = rpc(
            &app,
            "northwind-readwrite",
            "tools/call",
            json!({"name": tool}),
        )
        .await;
        assert_eq!(
            error_text(&r),
            "Invalid arguments: `confirmation_id` is required. Nothing was done."
        );
        // Malformed `tools/call` params are JSON-RPC errors.
        for params in [
            json!({"name": tool, "arguments": [id]}),
            json!({"name": tool, "arguments": id}),
            json!({"arguments": {"confirmation_id": id}}),
            json!({"name": format!("{tool}s"), "arguments": {"confirmation_id": id}}),
        ] {
            let err = rpc_error(&app, "northwind-readwrite", "tools/call", params.clone()).await;
            assert_eq!(err["code"], -32602, "{params}: {err}");
        }
        // A well-formed id nobody was given.
        let e = call_err(
            &app,
            "northwind-readwrite",
            tool,
            confirmation("chg_0000000000000000000000000000000"),
        )
        .await;
        assert_eq!(e, UNKNOWN_ID);
    }
    assert_eq!(snapshot(&app), before);
    assert_eq!(state(&app, &id), (false, None));
    // None of it touched the real id.
    let c = call_ok(
        &app,
        "northwind-readwrite",
        "cancel_change",
        confirmation(&id),
    )
    .await;
    assert_eq!(c["status"], "cancelled");
}

#[tokio::test]
async fn prepare_arguments_are_checked() {
    let app = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    let before = snapshot(&app);
    for (tool, args, expected) in [
        (
            "prepare_ad_change",
            json!({"ad_id": ad}),
            "`changes` is required.",
        ),
        (
            "prepare_ad_change",
            json!({"changes": {"name": "x"}}),
            "`ad_id` is required.",
        ),
        (
            "prepare_ad_change",
            json!({"ad_id": ad, "changes": {}}),
            "`changes` needs at least one field.",
        ),
        (
            "prepare_ad_change",
            json!({"ad_id": "../ads", "changes": {"name": "x"}}),
            "`ad_id` is not an id (letters, digits and `_`).",
        ),
        (
            "prepare_ad_change",
            json!({"ad_id": ad, "changes": {"duration_seconds": "ten"}}),
            "`changes/duration_seconds` must be of type integer.",
        ),
        (
            "prepare_ad_change",
            json!({"ad_id": ad, "changes": {"status": "deleted"}}),
            "`changes/status` must be one of \"draft\", \"active\", \"paused\", \"archived\".",
        ),
        (
            "prepare_promotion_activation",
            json!({"promotion_id": "promo_x", "cost": 0}),
            "Unknown argument `cost`; expected: promotion_id.",
        ),
        (
            "prepare_promotion_deactivation",
            json!({"promotion_id": 7}),
            "`promotion_id` must be of type string.",
        ),
    ] {
        let e = call_err(&app, "northwind-readwrite", tool, args.clone()).await;
        assert_eq!(
            e,
            format!("Invalid arguments: {expected} Nothing was done."),
            "{tool} {args}"
        );
    }
    // A change that would move the ad to another company is not an ad change field.
    let e = call_err(
        &app,
        "northwind-readwrite",
        "prepare_ad_change",
        json!({"ad_id": ad, "changes": {"company_id": company_id("Northwind Pharmacy")}}),
    )
    .await;
    assert!(
        e.starts_with("Invalid arguments: Unknown argument `changes/company_id`"),
        "{e}"
    );
    assert_eq!(snapshot(&app), before);
    assert_eq!(pending_count(&app), 0);
}

#[tokio::test]
async fn promotion_activation_through_confirm_spends_the_cost_once() {
    let app = TestApp::spawn().await;
    let (promo, company, cost) = northwind_promotion(&app, false);
    let start = balance(&app, &company);
    let (current, etag) = rest_get(&app, &format!("/promotions/{promo}")).await;
    let before = snapshot(&app);

    let preview = prepare(
        &app,
        "northwind-readwrite",
        "prepare_promotion_activation",
        json!({"promotion_id": promo}),
    )
    .await;
    assert_eq!(preview["operation"], "activatePromotion");
    assert_eq!(
        preview["target"],
        json!({"type": "promotion", "id": promo, "version": etag})
    );
    assert_eq!(preview["current"], current);
    assert_eq!(
        preview["differences"],
        json!([{"field": "active", "current": false, "proposed": true},
            {"field": "state", "current": current["state"], "proposed": "active"},
            {"field": "activated_at", "current": current["activated_at"], "proposed": null, "set_at_confirmation": true},
            {"field": "updated_at", "current": current["updated_at"], "proposed": null, "set_at_confirmation": true}])
    );
    assert_eq!(
        preview["cost"],
        json!({"tokens": cost, "balance": start, "balance_after": start - cost, "sufficient": true})
    );
    let id = preview["confirmation_id"].as_str().unwrap().to_string();
    let stored = pending_row(&app, &id);
    assert_eq!(
        (&stored["method"], &stored["path"], &stored["body"]),
        (
            &json!("POST"),
            &json!(format!("/promotions/{promo}/activate")),
            &Value::Null
        )
    );
    assert_eq!(snapshot(&app), before);

    let done = call_ok(
        &app,
        "northwind-readwrite",
        "confirm_change",
        confirmation(&id),
    )
    .await;
    let (now_promo, _) = rest_get(&app, &format!("/promotions/{promo}")).await;
    assert_eq!(done["result"], now_promo);
    assert_eq!(now_promo["active"], true);
    let after = snapshot(&app);
    let d = diff(&before, &after);
    assert_eq!(
        d.as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "ads",
            "promotions",
            "token_balances",
            "token_transactions",
            "events"
        ]
    );
    // The ads linked to the promotion show it on air now: only their versions moved.
    only_versions_moved(&d["ads"], &promo);
    let (old, new) = updated_row(&d, "promotions");
    assert!(new["activated_at"].as_i64().is_some());
    assert_eq!(
        new,
        expected_update(
            &old,
            &new,
            // Switched on inside its window: it runs at once (`promotion.started`).
            json!({"active": 1, "activated_at": new["activated_at"], "phase": "running"})
        )
    );
    assert_eq!(d["token_balances"]["gone"][0]["balance"], start);
    assert_eq!(
        d["token_balances"]["new"][0]["company_id"],
        company.as_str()
    );
    assert_eq!(d["token_balances"]["new"][0]["balance"], start - cost);
    assert_eq!(d["token_transactions"]["gone"], json!([]));
    let spent = d["token_transactions"]["new"].as_array().unwrap();
    assert_eq!(spent.len(), 1);
    assert_eq!(
        (
            &spent[0]["company_id"],
            &spent[0]["kind"],
            &spent[0]["amount"],
            &spent[0]["balance_after"],
            &spent[0]["promotion_id"]
        ),
        (
            &json!(company),
            &json!("spend"),
            &json!(-cost),
            &json!(start - cost),
            &json!(promo)
        )
    );
    let mut events = new_events(&d);
    events.sort();
    assert_eq!(
        events,
        [
            ("promotion.activated".to_string(), promo.clone()),
            ("promotion.started".to_string(), promo.clone()),
            (
                "tokens.spent".to_string(),
                spent[0]["id"].as_str().unwrap().to_string()
            ),
        ]
    );
    let rest_balance = app
        .get(&format!("/tokens/balance?company_id={company}"))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert_eq!(rest_balance["balance"], start - cost);

    // Replayed: refused, not charged again.
    let e = call_err(
        &app,
        "northwind-readwrite",
        "confirm_change",
        confirmation(&id),
    )
    .await;
    assert_eq!(e, ALREADY_USED);
    assert_eq!(snapshot(&app), after);
    // Activating an active promotion has nothing to change.
    let e = call_err(
        &app,
        "northwind-readwrite",
        "prepare_promotion_activation",
        json!({"promotion_id": promo}),
    )
    .await;
    assert!(e.starts_with("Nothing to change"), "{e}");

    // Deactivation through confirm: no cost shown, nothing refunded.
    let preview = prepare(
        &app,
        "northwind-readwrite",
        "prepare_promotion_deactivation",
        json!({"promotion_id": promo}),
    )
    .await;
    assert_eq!(preview["cost"], Value::Null);
    let current = &preview["current"];
    assert_eq!(
        preview["differences"],
        json!([{"field": "active", "current": true, "proposed": false},
            {"field": "state", "current": "active", "proposed": "inactive"},
            {"field": "deactivated_at", "current": current["deactivated_at"], "proposed": null, "set_at_confirmation": true},
            {"field": "updated_at", "current": current["updated_at"], "proposed": null, "set_at_confirmation": true}])
    );
    assert_eq!(snapshot(&app), after);
    call_ok(
        &app,
        "northwind-readwrite",
        "confirm_change",
        json!({"confirmation_id": preview["confirmation_id"]}),
    )
    .await;
    let d = diff(&after, &snapshot(&app));
    assert_eq!(
        d.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["ads", "promotions", "events"]
    );
    // Its ads are off air again: only their versions moved.
    only_versions_moved(&d["ads"], &promo);
    let (_, new) = updated_row(&d, "promotions");
    assert_eq!(new["active"], 0);
    assert_eq!(
        new_events(&d),
        [("promotion.deactivated".to_string(), promo.clone())]
    );
    assert_eq!(balance(&app, &company), start - cost);
}

/// The balance can fall between the preview (which checked it) and the confirmation: the
/// confirmation is then refused by the write itself, changes nothing, and its advice names no
/// action the assistant cannot take.
#[tokio::test]
async fn insufficient_tokens_at_confirm_are_a_tool_error_and_change_nothing() {
    let app = TestApp::spawn().await;
    let (promo, company, cost) = northwind_promotion(&app, false);
    let start = balance(&app, &company);
    let preview = prepare(
        &app,
        "northwind-readwrite",
        "prepare_promotion_activation",
        json!({"promotion_id": promo}),
    )
    .await;
    assert_eq!(
        preview["cost"],
        json!({"tokens": cost, "balance": start, "balance_after": start - cost, "sufficient": true})
    );
    app.app
        .db
        .write(
            &signage::db::WriteIntent::sandbox(),
            |tx| -> Result<(), signage::db::DbError> {
                tx.execute(
                    "UPDATE token_balances SET balance = ?1 WHERE company_id = ?2",
                    rusqlite::params![cost - 1, company],
                )?;
                Ok(())
            },
        )
        .unwrap();
    let before = snapshot(&app);
    let id = preview["confirmation_id"].as_str().unwrap();
    let e = call_err(
        &app,
        "northwind-readwrite",
        "confirm_change",
        confirmation(id),
    )
    .await;
    assert!(
        e.starts_with("Nothing was applied: HTTP 402 Insufficient tokens"),
        "{e}"
    );
    assert!(!e.contains("Buy a token pack first."), "{e}");
    assert_eq!(snapshot(&app), before);
    assert_eq!(state(&app, id), (true, Some("refused".into())));
    let e = call_err(
        &app,
        "northwind-readwrite",
        "confirm_change",
        confirmation(id),
    )
    .await;
    assert_eq!(e, used_without_effect("refused"));
    assert_eq!(snapshot(&app), before);
}

/// The balance is read with the caller's own permissions: a key that may activate promotions but
/// not read tokens sees the cost without the balance, and its confirmation still spends the cost.
#[tokio::test]
async fn the_balance_in_a_preview_needs_tokens_read() {
    let app = TestApp::spawn().await;
    let (promo, company, cost) = northwind_promotion(&app, false);
    let start = balance(&app, &company);
    let client = key("northwind-readwrite").client_id;
    let created = app
        .post("/api-keys")
        .key("northwind-admin")
        .json(&json!({"client_id": client, "name": "promotions only", "scopes": ["promotions:write"]}))
        .send()
        .await;
    assert_eq!(created.status, 201, "{}", created.text());
    let raw = created.json()["rawKey"].as_str().unwrap().to_string();
    let auth = [
        ("x-api-key", raw.as_str()),
        ("x-service-client-id", client.as_str()),
    ];
    let r = call_with(
        &app,
        &auth,
        "prepare_promotion_activation",
        json!({"promotion_id": promo}),
    )
    .await;
    assert_eq!(r["isError"], false, "{r}");
    let preview = &r["structuredContent"];
    assert_eq!(
        preview["cost"],
        json!({"tokens": cost, "balance": null, "balance_after": null, "sufficient": null})
    );
    let r = call_with(
        &app,
        &auth,
        "confirm_change",
        json!({"confirmation_id": preview["confirmation_id"]}),
    )
    .await;
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(balance(&app, &company), start - cost);
}
