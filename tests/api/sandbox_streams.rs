//! Streams per purpose (issue 19, items 1 and 2): in a seeded, frozen sandbox the ids, secrets,
//! QR codes and webhook deliveries a sequence of writes produces depend only on those writes and
//! the clock. Two real `signage serve` processes run the same write script; one of them also gets
//! what a real harness sends besides (readiness polls, a failed authentication, debugging reads,
//! an OPTIONS request, an operator read and a `Prefer: code=503` write that never runs). Every
//! write answer, every later list and every webhook delivery (body and `webhook-id`) must match.

use crate::sandbox_determinism::{demo, Sandbox};
use crate::webhook_receiver::Receiver;
use hyper::Method;
use serde_json::{json, Value};

const SUMMER_FRUIT: &str = "promo_0m5d4rupd28t6txsgbdb";
const PUBLIC_BASE: &str = "https://signage.test";

/// Requests a harness sends that must move nothing.
async fn noise(s: &Sandbox, round: usize) {
    let refs = |h: &[(String, String)]| -> Vec<(String, String)> { h.to_vec() };
    match round {
        0 => {
            for _ in 0..25 {
                let (status, _, _) = s.call(Method::GET, "/health", &[], None).await;
                assert_eq!(status, 200);
            }
        }
        1 => {
            let bad = [
                ("x-api-key", "sgn_live_nope_nope"),
                ("x-service-client-id", "cli_nope"),
            ];
            let (status, _, _) = s.call(Method::GET, "/ads", &bad, None).await;
            assert_eq!(status, 401);
        }
        2 => {
            for path in ["/ads?limit=5", "/devices?limit=5", "/webhooks"] {
                let h = refs(&demo("northwind-readwrite"));
                let h: Vec<(&str, &str)> =
                    h.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
                let (status, _, _) = s.call(Method::GET, path, &h, None).await;
                assert_eq!(status, 200, "{path}");
            }
        }
        3 => {
            let mut h = demo("northwind-readwrite");
            h.push(("prefer".into(), "code=503".into()));
            let h: Vec<(&str, &str)> = h.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
            let body = json!({"company_id": company(), "name": "never", "headline": "never"});
            let (status, headers, _) = s.call(Method::POST, "/ads", &h, Some(&body)).await;
            assert_eq!(status, 503);
            assert_eq!(
                headers.get("signage-fault").and_then(|v| v.to_str().ok()),
                Some("prefer")
            );
            let (status, _, _) = s.call(Method::OPTIONS, "/ads", &[], None).await;
            assert!(status < 500);
            let op = demo("sandbox-operator");
            let op: Vec<(&str, &str)> = op.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
            for path in ["/_sandbox/clock", "/_sandbox/faults", "/_sandbox/snapshots"] {
                let (status, _, _) = s.call(Method::GET, path, &op, None).await;
                assert_eq!(status, 200, "{path}");
            }
        }
        _ => {}
    }
}

fn company() -> String {
    crate::helpers::company_id("Northwind Grocers")
}

/// (label, status, body) of every write and of the lists read at the end.
type Answers = Vec<(String, u16, String)>;

async fn script(s: &Sandbox, receiver: &Receiver, noisy: bool) -> Answers {
    let mut out: Answers = Vec::new();
    let mut round = 0;
    let port = format!("127.0.0.1:{}", receiver.port);
    macro_rules! call {
        ($label:expr, $method:expr, $path:expr, $key:expr, $body:expr) => {{
            if noisy {
                noise(s, round).await;
            }
            round += 1;
            let h = demo($key);
            let h: Vec<(&str, &str)> = h.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
            let path: String = $path;
            let (status, _, body) = s.call($method, path.as_str(), &h, $body).await;
            // The receivers listen on different ports: the only difference allowed.
            let text = String::from_utf8_lossy(&body).replace(&port, "RECEIVER");
            out.push(($label.to_string(), status, text.clone()));
            serde_json::from_str::<Value>(&text).unwrap_or(Value::Null)
        }};
    }
    // The fixture webhooks point at hosts that never answer: their retries would race the
    // delivery worker against the advance (which attempts it counts), whatever the seed. Both
    // instances switch them off first, as writes.
    for admin in ["northwind-admin", "harborview-admin"] {
        let h = demo(admin);
        let h: Vec<(&str, &str)> = h.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let (_, _, list) = s.call(Method::GET, "/webhooks", &h, None).await;
        let list: Value = serde_json::from_slice(&list).unwrap();
        for hook in list["data"].as_array().unwrap() {
            let path = format!("/webhooks/{}", hook["id"].as_str().unwrap());
            let body = json!({"enabled": false});
            let (status, _, _) = s.call(Method::PATCH, &path, &h, Some(&body)).await;
            assert_eq!(status, 200, "{path}");
        }
    }
    let cmp = company();
    let hook = call!(
        "POST /webhooks",
        Method::POST,
        "/webhooks".to_string(),
        "northwind-readwrite",
        Some(&json!({"company_id": cmp, "url": receiver.url("/hook"),
            "event_types": ["ad.created", "ad.updated", "qr_code.created", "promotion.updated"]}))
    );
    assert!(hook["secret"]
        .as_str()
        .is_some_and(|s| s.starts_with("whsec_")));
    let ad = call!(
        "POST /ads",
        Method::POST,
        "/ads".to_string(),
        "northwind-readwrite",
        Some(&json!({"company_id": cmp, "name": "Streams", "headline": "One"}))
    );
    let ad_id = ad["id"].as_str().unwrap_or_default().to_string();
    call!(
        "PATCH /ads",
        Method::PATCH,
        format!("/ads/{ad_id}"),
        "northwind-readwrite",
        Some(&json!({"headline": "Two"}))
    );
    call!(
        "POST /qr-codes",
        Method::POST,
        format!("/promotions/{SUMMER_FRUIT}/qr-codes"),
        "northwind-readwrite",
        Some(&json!({"label": "Door"}))
    );
    let client = crate::helpers::key("northwind-admin").client_id;
    call!(
        "POST /api-keys",
        Method::POST,
        "/api-keys".to_string(),
        "northwind-admin",
        Some(&json!({"client_id": client, "name": "streams", "scopes": ["read"]}))
    );
    call!(
        "POST /ads (2)",
        Method::POST,
        "/ads".to_string(),
        "northwind-readwrite",
        Some(&json!({"company_id": cmp, "name": "Streams 2", "headline": "Three"}))
    );
    // Every first attempt is in before the clock moves.
    receiver.wait_for(4).await;
    call!(
        "advance",
        Method::POST,
        "/_sandbox/clock/advance".to_string(),
        "sandbox-operator",
        Some(&json!({"seconds": 86_400}))
    );
    // The lists afterwards.
    for path in [
        "/ads?limit=100".to_string(),
        "/webhooks".to_string(),
        format!("/promotions/{SUMMER_FRUIT}/qr-codes"),
        format!("/promotions/{SUMMER_FRUIT}/report"),
        "/events?limit=100".to_string(),
    ] {
        let h = demo("northwind-admin");
        let h: Vec<(&str, &str)> = h.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let (status, _, body) = s.call(Method::GET, &path, &h, None).await;
        out.push((
            format!("GET {path}"),
            status,
            String::from_utf8_lossy(&body).replace(&port, "RECEIVER"),
        ));
    }
    assert_eq!(round, 7);
    out
}

#[tokio::test]
async fn unrelated_requests_shift_no_id_secret_code_or_delivery() {
    let env = [("SIGNAGE_PUBLIC_BASE_URL", PUBLIC_BASE)];
    let (quiet, noisy) = (
        Sandbox::start_with(Some(11), &env),
        Sandbox::start_with(Some(11), &env),
    );
    let (rq, rn) = (Receiver::start().await, Receiver::start().await);
    let a = script(&quiet, &rq, false).await;
    let b = script(&noisy, &rn, true).await;
    assert_eq!(a.len(), b.len());
    for ((label, sa, ba), (_, sb, bb)) in a.iter().zip(&b) {
        assert!(*sa < 300, "`{label}` failed: {sa} {ba}");
        assert_eq!(sa, sb, "`{label}` status");
        assert_eq!(ba, bb, "`{label}` differs after unrelated requests");
    }
    // The QR code carries the seeded code and the configured public base, the same on both.
    let qr: Value = serde_json::from_str(&a[3].2).unwrap();
    let code = qr["code"].as_str().unwrap();
    assert_eq!(qr["short_url"], format!("{PUBLIC_BASE}/q/{code}"));

    // Deliveries: ad.created x2, ad.updated, qr_code.created, each once.
    let (da, db) = (rq.wait_for(4).await, rn.wait_for(4).await);
    let key = |r: &crate::webhook_receiver::Received| {
        (r.header("webhook-id").to_string(), r.body.clone())
    };
    let mut da: Vec<_> = da.iter().map(key).collect();
    let mut db: Vec<_> = db.iter().map(key).collect();
    da.sort();
    db.sort();
    assert_eq!(da.len(), 4);
    assert!(da.iter().all(|(id, _)| id.starts_with("evt_")));
    assert_eq!(da, db, "the deliveries differ (webhook-id or body)");
}

#[tokio::test]
async fn another_seed_gives_other_ids_and_codes() {
    let env = [("SIGNAGE_PUBLIC_BASE_URL", PUBLIC_BASE)];
    let (a, b) = (
        Sandbox::start_with(Some(11), &env),
        Sandbox::start_with(Some(12), &env),
    );
    let h = demo("northwind-readwrite");
    let h: Vec<(&str, &str)> = h.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let body = json!({"label": "Door"});
    let path = format!("/promotions/{SUMMER_FRUIT}/qr-codes");
    let (sa, _, ba) = a.call(Method::POST, &path, &h, Some(&body)).await;
    let (sb, _, bb) = b.call(Method::POST, &path, &h, Some(&body)).await;
    assert_eq!((sa, sb), (201, 201));
    let (va, vb): (Value, Value) = (
        serde_json::from_slice(&ba).unwrap(),
        serde_json::from_slice(&bb).unwrap(),
    );
    assert_ne!(va["code"], vb["code"]);
    assert_ne!(va["id"], vb["id"]);
}
