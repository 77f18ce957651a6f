//! Webhook drills (`POST /_sandbox/webhooks/{id}/drills`): deliveries a correct receiver must
//! handle, sent to the webhook's URL at once, with how it answered and a verdict. The verdicts
//! are kept in the journal's file (outside every snapshot) for the readiness report.
//!
//! Drills are signed with the webhook's own secrets by the platform's signer
//! ([`crate::webhooks::sign`]) and stamped with the wall clock, not the sandbox clock: they test
//! the receiver's real verification (a Standard Webhooks verifier accepts 5 minutes of skew),
//! whatever time the sandbox shows. They go out through the outbox's own client, so a webhook of
//! the built-in sink (`http://127.0.0.1:0/…`) is reached like any other. Drill deliveries are
//! `webhook.test` events; they are not in the webhook's delivery log.
//!
//! Drill ids and their deliveries' `webhook-id`s are numbered by a counter of the journal's file
//! ([`super::journal::store::next_number`]), not drawn from a seeded stream: a snapshot restore
//! rewinds those, and a drill of a later test must not take an earlier one's id. Each drill keeps
//! a digest of the webhook's URL: a webhook of the same id that points elsewhere (deleted, or
//! gone with a restore, and made again) is not the one that was drilled.

use crate::auth::Action;
use crate::http::router::Route;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{TypedId, WebhookId};
use crate::validate::OneOf;
use crate::webhooks::send::{Client, Outcome};
use bytes::Bytes;
use rusqlite::OptionalExtension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub const KINDS: &[&str] = &[
    "duplicate",
    "out_of_order",
    "bad_signature",
    "missing_signature",
    "stale_timestamp",
    "future_timestamp",
    "rotation",
];

/// How far a stale (or future) drill's timestamp is from now (seconds): twice the 5 minutes
/// verifiers tolerate.
pub const STALE_SECS: i64 = 600;

const KIND: OneOf = OneOf(KINDS);
/// A drill's verdicts, as [`run`] draws them.
const VERDICT: OneOf = OneOf(&["pass", "fail"]);
/// What a drill delivery expects back, as [`grade`] writes it.
const EXPECTED: OneOf = OneOf(&["2xx", "4xx"]);

pub fn routes() -> Vec<Route> {
    vec![
        Route::post("/_sandbox/webhooks/{id}/drills", "runWebhookDrill", Action::Sandbox, run)
            .tag("sandbox")
            .summary("Send a webhook drill to the receiver and grade how it answered.")
            .describe("Sends, at once, deliveries a correct receiver must handle, and records its answers with a verdict (kept for the readiness report, outside every snapshot): `duplicate` (the same `webhook-id` twice: both must be 2xx), `out_of_order` (two events of one object, the newer first: both 2xx), `bad_signature` (signed with a wrong secret: must be refused with a 4xx), `missing_signature` (no `webhook-signature` header at all: must be refused with a 4xx), `stale_timestamp` (correctly signed, `webhook-timestamp` 10 minutes old: must be refused with a 4xx), `future_timestamp` (correctly signed, `webhook-timestamp` 10 minutes ahead: must be refused with a 4xx), `rotation` (during a secret rotation's grace period, signed with the new and the old secret: must be accepted, 2xx; 409 `no_rotation_in_progress` otherwise). Drills are `webhook.test` events stamped with the wall clock; an answer that should be 2xx must also come within 5 s. The sandbox operator's (scope `sandbox`).")
            .body("WebhookDrillNew")
            .created("WebhookDrill")
            .may_return(&[409])
            .not_idempotent()
            .blocking(),
        Route::get("/_sandbox/webhooks/{id}/drills", "listWebhookDrills", Action::Sandbox, list)
            .no_tool("the sandbox operator's control of the instance, not account data")
            .tag("sandbox")
            .summary("The drills run against a webhook, newest first.")
            .describe("Every drill kept for this webhook (the journal's age limit applies), newest first, with its verdict and the receiver's answers. The sandbox operator's (scope `sandbox`).")
            .ok("WebhookDrillList"),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::{named_body, named_response};
    vec![
        named_body::<NewDrill>(),
        named_response::<Drill>(),
        named_response::<DrillList>(),
    ]
}

/// Which webhook drill to run.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "WebhookDrillNew")]
struct NewDrill {
    #[schemars(transform = &KIND)]
    kind: String,
}

/// One delivery a drill sends and what it expects back.
struct Send {
    id: String,
    timestamp: i64,
    body: Bytes,
    /// The secrets it is signed with; none: no `webhook-signature` header at all.
    secrets: Vec<String>,
    expect_2xx: bool,
}

// Open to members it does not list (`additionalProperties` is not false), as documented before
// its schema was derived; so is [`Drill`].
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
pub struct Attempt {
    /// The `webhook-id` header sent.
    pub webhook_id: String,
    /// The answer a correct receiver gives.
    #[schemars(transform = &EXPECTED)]
    pub expected: String,
    pub status: Option<u16>,
    pub latency_ms: i64,
    /// Why no answer came (connection refused, timed out, ...).
    pub error: Option<String>,
    /// The answer was the expected one (and a 2xx came within 5 s).
    pub pass: bool,
}

/// A webhook drill: what was sent, how the receiver answered each delivery, and the verdict.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[schemars(rename = "WebhookDrill", extend("additionalProperties" = true))]
pub struct Drill {
    #[schemars(extend("const" = "webhook_drill"))]
    pub object: String,
    pub id: String,
    pub webhook_id: String,
    pub company_id: String,
    pub account_id: String,
    /// The drill kind.
    #[schemars(transform = &KIND)]
    pub kind: String,
    /// `pass` when every answer was the expected one.
    #[schemars(transform = &VERDICT)]
    pub verdict: String,
    #[schemars(extend("format" = "date-time"))]
    pub at: String,
    pub attempts: Vec<Attempt>,
    /// A digest of the webhook's URL when it was drilled (kept beside the drill, not shown).
    #[serde(skip)]
    pub url_digest: Option<String>,
    /// The journal's mark when it ran: a report `after` a mark counts only later drills.
    #[serde(skip)]
    pub journal_seq: i64,
}

/// What a drill keeps of the URL it was sent to: a digest (a URL may carry credentials).
pub fn url_digest(url: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(url.as_bytes());
    d[..12].iter().map(|b| format!("{b:02x}")).collect()
}

struct Hook {
    company_id: String,
    account_id: String,
    url: String,
    secret: String,
    previous: Option<String>,
}

fn load(ctx: &Ctx<'_>, id: &str) -> Result<Hook, ApiError> {
    let conn = ctx.conn()?;
    let now = ctx.now();
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

/// The `webhook-id` of the `n`th delivery of drill number `drill`: unique across restores.
fn message_id(drill: i64, n: usize) -> String {
    format!("msg_drill_{drill}_{n}")
}

fn body(id: &str, webhook: &str, at: i64, data: Value) -> Bytes {
    let mut data = data;
    data["webhook_id"] = json!(webhook);
    Bytes::from(
        json!({"id": id, "type": "webhook.test", "timestamp": crate::time::rfc3339(at), "data": data})
            .to_string(),
    )
}

fn plan(
    kind: &str,
    webhook: &str,
    hook: &Hook,
    now: i64,
    number: i64,
    seeded: Option<&crate::random::Seeded>,
) -> Result<Vec<Send>, ApiError> {
    let current = vec![hook.secret.clone()];
    let sent = std::cell::Cell::new(0);
    let one = |data: Value, at: i64, secrets: Vec<String>, expect_2xx: bool| {
        sent.set(sent.get() + 1);
        let id = message_id(number, sent.get());
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
            let wrong = format!(
                "whsec_{}",
                crate::random::base62(seeded, "webhook_drill", 32)
            );
            vec![one(
                json!({"drill": "bad_signature"}),
                now,
                vec![wrong],
                false,
            )]
        }
        "missing_signature" => vec![one(
            json!({"drill": "missing_signature"}),
            now,
            Vec::new(),
            false,
        )],
        "stale_timestamp" => vec![one(
            json!({"drill": "stale_timestamp"}),
            now - STALE_SECS,
            current,
            false,
        )],
        "future_timestamp" => vec![one(
            json!({"drill": "future_timestamp"}),
            now + STALE_SECS,
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
            let mut headers = vec![
                ("webhook-id", s.id.clone()),
                ("webhook-timestamp", s.timestamp.to_string()),
            ];
            if !s.secrets.is_empty() {
                headers.push((
                    "webhook-signature",
                    crate::webhooks::sign::header(&s.secrets, &s.id, s.timestamp, &s.body),
                ));
            }
            out.push(client.post(url, &headers, s.body.clone()).await);
        }
        out
    })
}

fn run(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: WebhookId = ctx.path()?;
    let new: NewDrill = ctx.json()?;
    let hook = load(ctx, id.as_str())?;
    let journal = super::journal::routes::journal(ctx)?;
    let journal_err = |e: rusqlite::Error| ApiError::Internal(format!("journal: {e}"));
    if !KINDS.contains(&new.kind.as_str()) {
        return Err(ApiError::invalid(
            "/kind",
            "invalid_value",
            format!("`kind` must be one of: {}.", KINDS.join(", ")),
        ));
    }
    let now = crate::http::observe::wall_millis() / 1000;
    let number = journal
        .write(|c| super::journal::store::next_number(c, "drill"))
        .map_err(journal_err)?;
    let sends = plan(&new.kind, id.as_str(), &hook, now, number, ctx.seeded())?;
    // The outbox's client knows where this sandbox listens: a sink URL (port 0) reaches it.
    let outbox = ctx
        .app
        .extensions
        .get::<std::sync::Arc<crate::webhooks::Outbox>>()
        .cloned();
    let own_client;
    let client = match &outbox {
        Some(o) => &o.client,
        None => {
            own_client = Client::new(&ctx.app.settings);
            &own_client
        }
    };
    let outcomes = send_all(client, &hook.url, &sends);
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
        id: drill_id(number),
        webhook_id: id.as_str().to_string(),
        company_id: hook.company_id,
        account_id: hook.account_id,
        kind: new.kind,
        verdict: verdict.into(),
        at: crate::time::rfc3339(ctx.now()),
        attempts,
        url_digest: Some(url_digest(&hook.url)),
        journal_seq: journal.mark(),
    };
    let text = serde_json::to_string(&drill).unwrap_or_default();
    journal
        .write(|c| {
            c.execute(
                "INSERT INTO drills (id, account_id, company_id, webhook_id, kind, verdict, at_ms, wall_ms, body,
                                     url_digest, journal_seq)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                rusqlite::params![drill.id, drill.account_id, drill.company_id, drill.webhook_id,
                    drill.kind, drill.verdict, ctx.now_millis(), crate::http::observe::wall_millis(), text,
                    drill.url_digest, drill.journal_seq],
            )
        })
        .map_err(journal_err)?;
    Ok(Response::created(&drill))
}

/// `drl_` and the drill's number in 16 base-62 digits.
fn drill_id(number: i64) -> String {
    let mut n = u64::try_from(number).unwrap_or(0);
    let mut digits = [b'0'; 16];
    for slot in digits.iter_mut().rev() {
        *slot = crate::random::BASE62[(n % 62) as usize];
        n /= 62;
    }
    format!("drl_{}", String::from_utf8_lossy(&digits))
}

/// The drills kept for one account (or one webhook), oldest first; with `after`, only those run
/// after that journal mark.
pub fn kept(
    conn: &rusqlite::Connection,
    account: &str,
    webhook: Option<&str>,
    not_before_wall_ms: i64,
    after: Option<i64>,
) -> rusqlite::Result<Vec<Drill>> {
    let mut stmt = conn.prepare_cached(
        "SELECT body, url_digest, journal_seq FROM drills
         WHERE account_id = ?1 AND (?2 IS NULL OR webhook_id = ?2)
           AND wall_ms >= ?3 AND journal_seq > ?4 ORDER BY seq",
    )?;
    let rows = stmt.query_map(
        rusqlite::params![account, webhook, not_before_wall_ms, after.unwrap_or(-1)],
        |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, i64>(2)?,
            ))
        },
    )?;
    let mut out = Vec::new();
    for row in rows {
        let (text, url_digest, journal_seq) = row?;
        if let Ok(mut d) = serde_json::from_str::<Drill>(&text) {
            d.url_digest = url_digest;
            d.journal_seq = journal_seq;
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
        .read(|c| kept(c, &hook.account_id, Some(id.as_str()), floor, None))
        .map_err(|e| ApiError::Internal(format!("journal: {e}")))?;
    drills.reverse();
    Ok(Response::ok(&DrillList {
        object: "list",
        data: drills,
        has_more: false,
        next_cursor: (),
    }))
}

/// The drills kept for one webhook, newest first.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "WebhookDrillList")]
struct DrillList {
    #[schemars(extend("const" = "list"))]
    object: &'static str,
    #[schemars(transform = crate::jsonschema::items::<Drill>)]
    data: Vec<Drill>,
    /// Always false: the drills kept for a webhook are all on this page.
    #[schemars(extend("const" = false))]
    has_more: bool,
    /// Always null: there is no next page.
    #[schemars(extend("const" = null))]
    next_cursor: (),
}
