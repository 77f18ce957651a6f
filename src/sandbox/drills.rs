//! Webhook drills (`POST /_sandbox/webhooks/{id}/drills`): deliveries a correct receiver must
//! handle, sent to the webhook's URL at once, with how it answered and a verdict. The verdicts
//! are kept in the journal's file (outside every snapshot) for the readiness report.
//!
//! Drills are signed with the webhook's own secrets by the platform's signer
//! ([`crate::webhooks::sign`]) and stamped with the wall clock, not the sandbox clock: they test
//! the receiver's real verification (a Standard Webhooks verifier accepts 5 minutes of skew),
//! whatever time the sandbox shows. Drill deliveries are `webhook.test` events; they are not in
//! the webhook's delivery log.

use crate::auth::Action;
use crate::http::router::Route;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{TypedId, WebhookId};
use crate::webhooks::send::{Client, Outcome};
use bytes::Bytes;
use rusqlite::OptionalExtension;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub const KINDS: &[&str] = &[
    "duplicate",
    "out_of_order",
    "bad_signature",
    "stale_timestamp",
    "rotation",
];

/// How old a stale drill's timestamp is (seconds): twice the 5 minutes verifiers tolerate.
pub const STALE_SECS: i64 = 600;

pub fn routes() -> Vec<Route> {
    vec![
        Route::post("/_sandbox/webhooks/{id}/drills", "runWebhookDrill", Action::Sandbox, run)
            .tag("sandbox")
            .summary("Send a webhook drill to the receiver and grade how it answered.")
            .describe("Sends, at once, deliveries a correct receiver must handle, and records its answers with a verdict (kept for the readiness report, outside every snapshot): `duplicate` (the same `webhook-id` twice: both must be 2xx), `out_of_order` (two events of one object, the newer first: both 2xx), `bad_signature` (signed with a wrong secret: must be refused with a 4xx), `stale_timestamp` (correctly signed, `webhook-timestamp` 10 minutes old: must be refused with a 4xx), `rotation` (during a secret rotation's grace period, signed with the new and the old secret: must be accepted, 2xx; 409 `no_rotation_in_progress` otherwise). Drills are `webhook.test` events stamped with the wall clock; each answer must also come within 5 s. The sandbox operator's (scope `sandbox`).")
            .body("WebhookDrillNew")
            .created("WebhookDrill")
            .may_return(&[409])
            .not_idempotent()
            .blocking(),
        Route::get("/_sandbox/webhooks/{id}/drills", "listWebhookDrills", Action::Sandbox, list)
            .tag("sandbox")
            .summary("The drills run against a webhook, newest first.")
            .describe("Every drill kept for this webhook (the journal's age limit applies), newest first, with its verdict and the receiver's answers. The sandbox operator's (scope `sandbox`).")
            .ok("WebhookDrillList"),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    let attempt = json!({"type":"object","required":["webhook_id","expected","status","latency_ms","error","pass"],
        "properties":{"webhook_id":{"type":"string","description":"The `webhook-id` header sent."},
            "expected":{"type":"string","enum":["2xx","4xx"],"description":"The answer a correct receiver gives."},
            "status":{"type":["integer","null"]},"latency_ms":{"type":"integer"},
            "error":{"type":["string","null"],"description":"Why no answer came (connection refused, timed out, ...)."},
            "pass":{"type":"boolean","description":"The answer was the expected one (and a 2xx came within 5 s)."}}});
    vec![
        (
            "WebhookDrillNew",
            json!({"type":"object","additionalProperties":false,"required":["kind"],
            "properties":{"kind":{"type":"string","enum":KINDS}}}),
        ),
        (
            "WebhookDrill",
            json!({"type":"object",
            "required":["object","id","webhook_id","company_id","account_id","kind","verdict","at","attempts"],
            "properties":{"object":{"const":"webhook_drill"},"id":{"type":"string"},
                "webhook_id":{"type":"string"},"company_id":{"type":"string"},"account_id":{"type":"string"},
                "kind":{"type":"string","enum":KINDS,"description":"The drill kind."},"verdict":{"type":"string","enum":["pass","fail"],"description":"`pass` when every answer was the expected one."},
                "at":{"type":"string","format":"date-time"},"attempts":{"type":"array","items":attempt}}}),
        ),
        (
            "WebhookDrillList",
            json!({"type":"object","additionalProperties":false,"required":["object","data","has_more","next_cursor"],
            "properties":{"object":{"const":"list"},"data":{"type":"array","items":{"$ref":"#/components/schemas/WebhookDrill"}},
                "has_more":{"const":false,"description":"Always false: the drills kept for a webhook are all on this page."},
                "next_cursor":{"const":null,"description":"Always null: there is no next page."}}}),
        ),
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewDrill {
    kind: String,
}

/// One delivery a drill sends and what it expects back.
struct Send {
    id: String,
    timestamp: i64,
    body: Bytes,
    secrets: Vec<String>,
    expect_2xx: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Attempt {
    pub webhook_id: String,
    pub expected: String,
    pub status: Option<u16>,
    pub latency_ms: i64,
    pub error: Option<String>,
    pub pass: bool,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Drill {
    pub object: String,
    pub id: String,
    pub webhook_id: String,
    pub company_id: String,
    pub account_id: String,
    pub kind: String,
    pub verdict: String,
    pub at: String,
    pub attempts: Vec<Attempt>,
}

struct Hook {
    company_id: String,
    account_id: String,
    url: String,
    secret: String,
    previous: Option<String>,
}

fn load(ctx: &Ctx<'_>, id: &str) -> Result<Hook, ApiError> {
    let conn = ctx.app.db.conn()?;
    let now = crate::time::now();
    conn.query_row(
        "SELECT w.company_id, c.account_id, w.url, w.secret,
                CASE WHEN w.previous_secret_expires_at > ?2 THEN w.previous_secret END
         FROM webhooks w JOIN companies c ON c.id = w.company_id WHERE w.id = ?1",
        rusqlite::params![id, now],
        |r| {
            Ok(Hook {
                company_id: r.get(0)?,
                account_id: r.get(1)?,
                url: r.get(2)?,
                secret: r.get(3)?,
                previous: r.get(4)?,
            })
        },
    )
    .optional()?
    .ok_or_else(|| ApiError::not_found("webhook", id))
}

fn message_id() -> String {
    format!("msg_drill_{}", crate::random::base62("webhook_drill", 20))
}

fn body(id: &str, webhook: &str, at: i64, data: Value) -> Bytes {
    let mut data = data;
    data["webhook_id"] = json!(webhook);
    Bytes::from(
        json!({"id": id, "type": "webhook.test", "timestamp": crate::time::rfc3339(at), "data": data})
            .to_string(),
    )
}

fn plan(kind: &str, webhook: &str, hook: &Hook, now: i64) -> Result<Vec<Send>, ApiError> {
    let current = vec![hook.secret.clone()];
    let one = |data: Value, at: i64, secrets: Vec<String>, expect_2xx: bool| {
        let id = message_id();
        Send {
            body: body(&id, webhook, at, data),
            id,
            timestamp: at,
            secrets,
            expect_2xx,
        }
    };
    Ok(match kind {
        "duplicate" => {
            let first = one(json!({"drill": "duplicate"}), now, current.clone(), true);
            let again = Send {
                id: first.id.clone(),
                timestamp: first.timestamp,
                body: first.body.clone(),
                secrets: current,
                expect_2xx: true,
            };
            vec![first, again]
        }
        "out_of_order" => vec![
            one(
                json!({"drill": "out_of_order", "object_id": webhook, "sequence": 2}),
                now,
                current.clone(),
                true,
            ),
            one(
                json!({"drill": "out_of_order", "object_id": webhook, "sequence": 1}),
                now - 60,
                current,
                true,
            ),
        ],
        "bad_signature" => {
            let wrong = format!("whsec_{}", crate::random::base62("webhook_drill", 32));
            vec![one(
                json!({"drill": "bad_signature"}),
                now,
                vec![wrong],
                false,
            )]
        }
        "stale_timestamp" => vec![one(
            json!({"drill": "stale_timestamp"}),
            now - STALE_SECS,
            current,
            false,
        )],
        "rotation" => {
            let Some(previous) = &hook.previous else {
                return Err(ApiError::ConflictCode {
                    code: "no_rotation_in_progress",
                    detail: format!("Webhook {webhook} is not within a secret rotation's grace period: rotate its secret first (POST /webhooks/{webhook}/rotate-secret), then run this drill."),
                });
            };
            vec![one(
                json!({"drill": "rotation"}),
                now,
                vec![hook.secret.clone(), previous.clone()],
                true,
            )]
        }
        _ => {
            return Err(ApiError::invalid(
                "/kind",
                "invalid_value",
                format!("`kind` must be one of: {}.", KINDS.join(", ")),
            ))
        }
    })
}

/// A drill attempt passes when the status is the expected class and (for 2xx) came within 5 s.
fn grade(send: &Send, outcome: &Outcome) -> Attempt {
    let pass = match outcome.status {
        Some(s) if send.expect_2xx => (200..300).contains(&s) && outcome.latency_ms <= 5_000,
        Some(s) => (400..500).contains(&s),
        None => false,
    };
    Attempt {
        webhook_id: send.id.clone(),
        expected: if send.expect_2xx { "2xx" } else { "4xx" }.into(),
        status: outcome.status,
        latency_ms: outcome.latency_ms,
        error: outcome.error.clone(),
        pass,
    }
}

/// Sends in order (a duplicate must arrive after its original), from this blocking thread.
fn send_all(client: &Client, url: &str, sends: &[Send]) -> Vec<Outcome> {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return Vec::new();
    };
    handle.block_on(async {
        let mut out = Vec::new();
        for s in sends {
            let headers = vec![
                ("webhook-id", s.id.clone()),
                ("webhook-timestamp", s.timestamp.to_string()),
                (
                    "webhook-signature",
                    crate::webhooks::sign::header(&s.secrets, &s.id, s.timestamp, &s.body),
                ),
            ];
            out.push(client.post(url, &headers, s.body.clone()).await);
        }
        out
    })
}

fn run(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: WebhookId = ctx.path()?;
    let new: NewDrill = ctx.json()?;
    let hook = load(ctx, id.as_str())?;
    let now = crate::http::observe::wall_millis() / 1000;
    let sends = plan(&new.kind, id.as_str(), &hook, now)?;
    let client = Client::new(&ctx.app.settings);
    let outcomes = send_all(&client, &hook.url, &sends);
    let attempts: Vec<Attempt> = sends
        .iter()
        .zip(outcomes.iter())
        .map(|(s, o)| grade(s, o))
        .collect();
    let verdict = if attempts.len() == sends.len() && attempts.iter().all(|a| a.pass) {
        "pass"
    } else {
        "fail"
    };
    let drill = Drill {
        object: "webhook_drill".into(),
        id: format!("drl_{}", crate::random::base62("webhook_drill", 16)),
        webhook_id: id.as_str().to_string(),
        company_id: hook.company_id,
        account_id: hook.account_id,
        kind: new.kind,
        verdict: verdict.into(),
        at: crate::time::rfc3339(crate::time::now()),
        attempts,
    };
    let journal = super::journal::routes::journal(ctx)?;
    let text = serde_json::to_string(&drill).unwrap_or_default();
    journal
        .write(|c| {
            c.execute(
                "INSERT INTO drills (id, account_id, company_id, webhook_id, kind, verdict, at_ms, wall_ms, body)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                rusqlite::params![drill.id, drill.account_id, drill.company_id, drill.webhook_id,
                    drill.kind, drill.verdict, crate::time::now_millis(), crate::http::observe::wall_millis(), text],
            )
        })
        .map_err(|e| ApiError::Internal(format!("journal: {e}")))?;
    Ok(Response::created(&drill))
}

/// The drills kept for one account (or one webhook), oldest first.
pub fn kept(
    conn: &rusqlite::Connection,
    account: &str,
    webhook: Option<&str>,
    not_before_wall_ms: i64,
) -> rusqlite::Result<Vec<Drill>> {
    let mut stmt = conn.prepare_cached(
        "SELECT body FROM drills WHERE account_id = ?1 AND (?2 IS NULL OR webhook_id = ?2)
           AND wall_ms >= ?3 ORDER BY seq",
    )?;
    let rows = stmt.query_map(
        rusqlite::params![account, webhook, not_before_wall_ms],
        |r| r.get::<_, String>(0),
    )?;
    let mut out = Vec::new();
    for text in rows {
        if let Ok(d) = serde_json::from_str::<Drill>(&text?) {
            out.push(d);
        }
    }
    Ok(out)
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: WebhookId = ctx.path()?;
    let hook = load(ctx, id.as_str())?;
    let journal = super::journal::routes::journal(ctx)?;
    let floor = journal.not_before_wall_ms();
    let mut drills = journal
        .read(|c| kept(c, &hook.account_id, Some(id.as_str()), floor))
        .map_err(|e| ApiError::Internal(format!("journal: {e}")))?;
    drills.reverse();
    Ok(Response::ok(
        &json!({"object": "list", "data": drills, "has_more": false, "next_cursor": null}),
    ))
}
