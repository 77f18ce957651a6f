//! Things happen as the sandbox clock moves (issue 10, item 2): promotion windows open and close,
//! keys expire (also at the end of a rotation grace period), devices go offline and come back,
//! invoices fall overdue, pending MCP confirmations expire. Each transition is recorded once, as a
//! domain event stamped with the instant it happened, and counted in the advance's answer.

use crate::helpers::mcp::call_ok;
use crate::helpers::{company_id, TestApp};
use crate::sandbox_clock::{frozen_without_fleet, FROZEN_AT};
use serde_json::{json, Value};
use std::collections::BTreeMap;

const HOUR: i64 = 3600;
pub(crate) const DAY: i64 = 86_400;

fn rfc(ts: i64) -> String {
    signage::time::rfc3339(ts)
}

pub(crate) async fn advance(app: &TestApp, seconds: i64) -> Value {
    app.post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({ "seconds": seconds }))
        .send()
        .await
        .ok()
}

/// Every recorded event from rowid `after` on: (rowid, type, resource id, company, created_at).
pub(crate) type Event = (i64, String, String, Option<String>, i64);

pub(crate) fn events_after(app: &TestApp, after: i64) -> Vec<Event> {
    app.sql(|c| {
        let mut stmt = c.prepare(
            "SELECT rowid, type, resource_id, company_id, created_at FROM events
             WHERE rowid > ?1 ORDER BY rowid",
        )?;
        let rows = stmt.query_map([after], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?;
        rows.collect()
    })
}

pub(crate) fn last_rowid(app: &TestApp) -> i64 {
    app.sql(|c| {
        c.query_row("SELECT coalesce(max(rowid), 0) FROM events", [], |r| {
            r.get(0)
        })
    })
}

/// Only the event types the timeline records (not the writes' own).
const TIMED: [&str; 7] = [
    "promotion.started",
    "promotion.ended",
    "api_key.expired",
    "device.offline",
    "device.online",
    "invoice.overdue",
    "mcp.confirmation_expired",
];

pub(crate) fn timed(events: &[Event]) -> Vec<&Event> {
    events
        .iter()
        .filter(|e| TIMED.contains(&e.1.as_str()))
        .collect()
}

fn counts(events: &[&Event]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for e in events {
        *out.entry(e.1.clone()).or_default() += 1;
    }
    out
}

/// A scheduled promotion of Northwind Grocers, switched on (cost 0): window [start, end).
async fn scheduled_promotion(app: &TestApp, start: i64, end: i64) -> String {
    let grocers = company_id("Northwind Grocers");
    let created = app
        .post("/promotions")
        .key("northwind-readwrite")
        .json(
            &json!({"company_id": grocers, "name": "Timeline test", "description": "",
            "landing_url": "https://www.northwind-grocers.example/timeline", "activation_cost_tokens": 0,
            "starts_at": rfc(start), "ends_at": rfc(end)}),
        )
        .send()
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    let on = app
        .post(&format!("/promotions/{id}/activate"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(on["state"], "scheduled");
    id
}

/// A new key of the Northwind admin's first client, expiring at `expires_at`: (id, raw key, client).
async fn expiring_key(app: &TestApp, expires_at: i64) -> (String, String, String) {
    let clients = app
        .get("/api-clients")
        .key("northwind-admin")
        .send()
        .await
        .ok();
    let client = clients["data"][0]["id"].as_str().unwrap().to_string();
    let key = app
        .post("/api-keys")
        .key("northwind-admin")
        .json(&json!({"client_id": client, "name": "expires mid-advance",
            "scopes": ["devices:read"], "expires_at": rfc(expires_at)}))
        .send()
        .await;
    assert_eq!(key.status, 201, "{}", key.text());
    let key = key.json();
    (
        key["id"].as_str().unwrap().to_string(),
        key["rawKey"].as_str().unwrap().to_string(),
        client,
    )
}

/// GET /devices with a raw key of `client`: the status.
async fn devices_with(app: &TestApp, raw: &str, client: &str) -> u16 {
    app.get("/devices")
        .header("x-api-key", raw)
        .header("x-service-client-id", client)
        .send()
        .await
        .status
        .as_u16()
}

#[tokio::test]
async fn a_multi_day_advance_fires_every_transition_once_and_in_time_order() {
    let app = frozen_without_fleet().await;
    let promo = scheduled_promotion(&app, FROZEN_AT + 2 * HOUR, FROZEN_AT + 2 * DAY).await;
    let (key_id, raw, client) = expiring_key(&app, FROZEN_AT + 5 * HOUR).await;
    // Usable before its expiry.
    assert_eq!(devices_with(&app, &raw, &client).await, 200);
    // A pending MCP confirmation (expires after `mcp.pending_change_ttl_secs`, 600 s).
    let grocers = company_id("Northwind Grocers");
    let ad: String = app.sql(|c| {
        c.query_row(
            "SELECT min(id) FROM ads WHERE company_id = ?1",
            [&grocers],
            |r| r.get(0),
        )
    });
    let preview = call_ok(
        &app,
        "northwind-readwrite",
        "prepare_ad_change",
        json!({"ad_id": ad, "changes": {"headline": "Changed by a confirmation"}}),
    )
    .await;
    assert_eq!(preview["status"], "awaiting_confirmation", "{preview}");
    let online_before: i64 = app.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM devices WHERE presence = 'online'",
            [],
            |r| r.get(0),
        )
    });
    assert!(online_before > 0);
    let open_due: Vec<i64> = app.sql(|c| {
        let mut s = c.prepare("SELECT due_at FROM invoices WHERE status = 'open'")?;
        let rows = s.query_map([], |r| r.get(0))?;
        rows.collect()
    });
    assert!(!open_due.is_empty());
    assert!(open_due
        .iter()
        .all(|&d| d > FROZEN_AT && d < FROZEN_AT + 45 * DAY));

    // Far enough for March's invoice to fall due (14 days after the month ends).
    let before = last_rowid(&app);
    let moved = advance(&app, 45 * DAY).await;
    let events = events_after(&app, before);
    let fired = timed(&events);

    // In time order: every event's instant is at or after the one recorded before it.
    for pair in fired.windows(2) {
        assert!(pair[0].4 <= pair[1].4, "{pair:?} out of time order");
    }
    // Each transition exactly once, at the instant it happened.
    let of = |t: &str, id: &str| {
        fired
            .iter()
            .filter(|e| e.1 == t && e.2 == id)
            .map(|e| e.4)
            .collect::<Vec<_>>()
    };
    assert_eq!(of("promotion.started", &promo), vec![FROZEN_AT + 2 * HOUR]);
    assert_eq!(of("promotion.ended", &promo), vec![FROZEN_AT + 2 * DAY]);
    assert_eq!(of("api_key.expired", &key_id), vec![FROZEN_AT + 5 * HOUR]);
    let offline_after = app.app.settings.device_offline_after_secs;
    let offline: Vec<&&Event> = fired.iter().filter(|e| e.1 == "device.offline").collect();
    assert_eq!(
        offline.len() as i64,
        online_before,
        "each online device once"
    );
    for e in &offline {
        let last: i64 = app.sql(|c| {
            c.query_row(
                "SELECT last_heartbeat_at FROM devices WHERE id = ?1",
                [&e.2],
                |r| r.get(0),
            )
        });
        assert_eq!(
            e.4,
            last + offline_after + 1,
            "offline the second after the threshold"
        );
    }
    let overdue: Vec<&&Event> = fired.iter().filter(|e| e.1 == "invoice.overdue").collect();
    assert_eq!(overdue.len(), open_due.len());
    let mut due_sorted = open_due.clone();
    due_sorted.sort();
    assert_eq!(overdue.iter().map(|e| e.4).collect::<Vec<_>>(), due_sorted);
    let expired_confirmations = of_type(&fired, "mcp.confirmation_expired");
    assert_eq!(expired_confirmations, vec![FROZEN_AT + 600]);

    // The advance's answer counts them, transitions and events alike.
    let expected = counts(&fired);
    for (t, n) in &expected {
        assert_eq!(moved["transitions"][t], json!(n), "{t}: {moved}");
        assert_eq!(moved["events"][t], json!(n), "{t}: {moved}");
    }
    assert!(!moved["transitions"]
        .as_object()
        .unwrap()
        .contains_key("device.online"));

    // Stored states moved: the promotion, the key, the invoice.
    let p = app
        .get(&format!("/promotions/{promo}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(p["state"], "expired");
    let k = app
        .get(&format!("/api-keys/{key_id}"))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert_eq!(k["status"], "expired");
    let invoices = app
        .get("/invoices?status=overdue")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert!(
        !invoices["data"].as_array().unwrap().is_empty(),
        "{invoices}"
    );
    assert!(invoices["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["status"] == "overdue"));
    // A late confirmation is told it expired.
    let late = crate::helpers::mcp::call(
        &app,
        "northwind-readwrite",
        "confirm_change",
        json!({"confirmation_id": preview["confirmation_id"]}),
    )
    .await;
    assert_eq!(late["isError"], true, "{late}");
    assert!(late.to_string().contains("expired at"), "{late}");

    // A second advance fires none of them again (only windows that close later, if any).
    let first: Vec<(String, String)> = fired.iter().map(|e| (e.1.clone(), e.2.clone())).collect();
    let before = last_rowid(&app);
    let again = advance(&app, 20 * DAY).await;
    let later = events_after(&app, before);
    for e in timed(&later) {
        assert!(
            !first.contains(&(e.1.clone(), e.2.clone())),
            "{e:?} fired twice: {again}"
        );
        assert!(
            e.4 > FROZEN_AT + 20 * DAY,
            "{e:?} was due in the first advance"
        );
    }
}

fn of_type(fired: &[&Event], t: &str) -> Vec<i64> {
    fired.iter().filter(|e| e.1 == t).map(|e| e.4).collect()
}

#[tokio::test]
async fn a_key_expiring_mid_advance_stops_authenticating_and_its_event_has_its_company_or_none() {
    let app = frozen_without_fleet().await;
    let (key_id, raw, client) = expiring_key(&app, FROZEN_AT + HOUR).await;
    assert_eq!(devices_with(&app, &raw, &client).await, 200);
    let before = last_rowid(&app);
    let moved = advance(&app, 2 * HOUR).await;
    assert_eq!(moved["transitions"]["api_key.expired"], 1, "{moved}");
    assert_eq!(devices_with(&app, &raw, &client).await, 401);
    let events = events_after(&app, before);
    let e = events
        .iter()
        .find(|e| e.1 == "api_key.expired")
        .expect("api_key.expired");
    assert_eq!(e.2, key_id);
    assert_eq!(
        e.3, None,
        "an account-wide key's expiry belongs to no company"
    );
    assert_eq!(e.4, FROZEN_AT + HOUR);
}

#[tokio::test]
async fn the_end_of_a_rotation_grace_period_is_an_expiry() {
    let app = frozen_without_fleet().await;
    let (key_id, raw, client) = expiring_key(&app, FROZEN_AT + 30 * DAY).await;
    let rotated = app
        .post(&format!("/api-keys/{key_id}/rotate"))
        .key("northwind-admin")
        .json(&json!({"grace_period_seconds": 600}))
        .send()
        .await;
    assert_eq!(rotated.status, 201, "{}", rotated.text());
    let successor = rotated.json()["new_key"]["rawKey"]
        .as_str()
        .unwrap()
        .to_string();
    let before = last_rowid(&app);
    let moved = advance(&app, 3600).await;
    assert_eq!(moved["transitions"]["api_key.expired"], 1, "{moved}");
    let payload: String = app.sql(|c| {
        c.query_row(
            "SELECT payload FROM events WHERE rowid > ?1 AND type = 'api_key.expired'",
            [before],
            |r| r.get(0),
        )
    });
    let payload: Value = serde_json::from_str(&payload).unwrap();
    assert_eq!(payload["reason"], "rotation_grace_ended");
    assert_eq!(payload["id"], key_id.as_str());
    assert_eq!(devices_with(&app, &raw, &client).await, 401);
    assert_eq!(devices_with(&app, &successor, &client).await, 200);
}

#[tokio::test]
async fn a_promotion_switched_on_inside_its_window_starts_at_once_and_ends_on_time() {
    let app = frozen_without_fleet().await;
    let grocers = company_id("Northwind Grocers");
    let created = app
        .post("/promotions")
        .key("northwind-readwrite")
        .json(
            &json!({"company_id": grocers, "name": "Running now", "description": "",
            "landing_url": "https://www.northwind-grocers.example/now", "activation_cost_tokens": 0,
            "starts_at": rfc(FROZEN_AT - HOUR), "ends_at": rfc(FROZEN_AT + HOUR)}),
        )
        .send()
        .await
        .ok();
    let id = created["id"].as_str().unwrap().to_string();
    let before = last_rowid(&app);
    let on = app
        .post(&format!("/promotions/{id}/activate"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    assert_eq!(on["state"], "active");
    let types: Vec<String> = events_after(&app, before)
        .into_iter()
        .map(|e| e.1)
        .collect();
    assert_eq!(types, ["promotion.activated", "promotion.started"]);
    // Deactivated and re-activated: started again (it runs again), never an `ended` for the pause.
    for path in ["deactivate", "activate"] {
        app.post(&format!("/promotions/{id}/{path}"))
            .key("northwind-readwrite")
            .send()
            .await
            .ok();
    }
    let moved = advance(&app, 2 * HOUR).await;
    assert_eq!(moved["transitions"]["promotion.ended"], 1, "{moved}");
    let mine: Vec<(String, i64)> = events_after(&app, before)
        .into_iter()
        .filter(|e| e.2 == id)
        .map(|e| (e.1, e.4))
        .collect();
    assert_eq!(
        mine,
        vec![
            ("promotion.activated".to_string(), FROZEN_AT),
            ("promotion.started".to_string(), FROZEN_AT),
            ("promotion.deactivated".to_string(), FROZEN_AT),
            ("promotion.activated".to_string(), FROZEN_AT),
            ("promotion.started".to_string(), FROZEN_AT),
            ("promotion.ended".to_string(), FROZEN_AT + HOUR),
        ]
    );
    let p = app
        .get(&format!("/promotions/{id}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(p["state"], "expired");
}

#[tokio::test]
async fn an_open_invoice_turns_overdue_at_its_due_date() {
    let app = frozen_without_fleet().await;
    let (id, due): (String, i64) = app.sql(|c| {
        c.query_row(
            "SELECT id, due_at FROM invoices WHERE status = 'open' ORDER BY due_at, id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    let company: String = app.sql(|c| {
        c.query_row(
            "SELECT company_id FROM invoices WHERE id = ?1",
            [&id],
            |r| r.get(0),
        )
    });
    let before = last_rowid(&app);
    advance(&app, due - FROZEN_AT - 1).await;
    let status: String = app.sql(|c| {
        c.query_row("SELECT status FROM invoices WHERE id = ?1", [&id], |r| {
            r.get(0)
        })
    });
    assert_eq!(status, "open", "one second before its due date");
    advance(&app, 1).await;
    let status: String = app.sql(|c| {
        c.query_row("SELECT status FROM invoices WHERE id = ?1", [&id], |r| {
            r.get(0)
        })
    });
    assert_eq!(status, "overdue");
    let e: Vec<Event> = events_after(&app, before)
        .into_iter()
        .filter(|e| e.1 == "invoice.overdue" && e.2 == id)
        .collect();
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].3.as_deref(), Some(company.as_str()));
    assert_eq!(e[0].4, due);
}
