//! The webhooks area's event payloads ([`crate::routes::payloads`]): a webhook as `GET
//! /webhooks/{id}` shows it (secret masked), why it was disabled, and the test event.

use super::webhook::{load, Webhook};
use crate::http::ApiError;
use crate::ids::{Kind, WebhookId};
use crate::routes::payload::{schema_ref, to_data, Payload, Subject, SubjectKind};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};

/// The subject of the events about a webhook (`resource_type` `webhook`).
pub const WEBHOOK: SubjectKind = SubjectKind {
    kind: Kind::Webhook,
    resource: "webhook",
    table: "webhooks o",
    company: "o.company_id",
};

pub fn payloads() -> Vec<Payload> {
    vec![
        Payload::new("webhook.created", "A webhook was created.", &WEBHOOK, schema_ref("Webhook"), shown),
        Payload::new("webhook.updated", "A webhook changed (including a secret rotation).", &WEBHOOK, schema_ref("Webhook"), shown),
        Payload::new("webhook.deleted", "A webhook was deleted: the webhook as it was (secret masked), since it can no longer be read.", &WEBHOOK, schema_ref("Webhook"), shown),
        Payload::new("webhook.disabled", "A webhook was disabled because its deliveries kept failing: the webhook and `disabled_reason`.", &WEBHOOK, disabled_schema(), disabled)
            .takes(&["failing_since"])
            .example_hints(json!({"failing_since": "2026-02-25T09:00:00Z"})),
        Payload::new("webhook.test", "A test event, sent with POST /webhooks/{id}/test to that webhook only.", &WEBHOOK, test_schema(), test),
    ]
}

fn webhook(s: &Subject<'_>) -> Result<Webhook, ApiError> {
    let id = WebhookId::parse(s.id).ok_or_else(|| ApiError::not_found("webhook", s.id))?;
    load(s.conn, &id)
}

fn shown(s: &Subject<'_>) -> Result<Value, ApiError> {
    to_data(&webhook(s)?)
}

/// `webhook.disabled`: hint `failing_since` (RFC 3339; default: when its attempts began failing,
/// or now).
fn disabled(s: &Subject<'_>) -> Result<Value, ApiError> {
    let mut data = to_data(&webhook(s)?)?;
    let since = match s.hint_str("failing_since") {
        Some(at) => crate::time::parse_rfc3339(at).ok_or_else(|| {
            ApiError::invalid(
                "/data/failing_since",
                "invalid_format",
                "must be an RFC 3339 instant",
            )
        })?,
        None => s
            .conn
            .prepare_cached("SELECT failing_since FROM webhooks WHERE id = ?1")?
            .query_row([s.id], |r| r.get::<_, Option<i64>>(0))?
            .unwrap_or(s.now),
    };
    data["disabled_reason"] = json!(crate::webhooks::store::disabled_reason(since));
    Ok(data)
}

fn disabled_schema() -> Value {
    let (mut schema, _) = super::webhook::schemas();
    // The enum by its component's name, as the document names it.
    schema["properties"]["event_types"]["items"] = schema_ref("WebhookEventTypes");
    schema["properties"]["disabled_reason"] =
        json!({"type":"string","description":"Why: since when every attempt failed."});
    if let Some(required) = schema["required"].as_array_mut() {
        required.push(json!("disabled_reason"));
    }
    schema
}

/// `webhook.test`: the webhook it is sent to.
pub(super) fn test(s: &Subject<'_>) -> Result<Value, ApiError> {
    to_data(&TestEvent {
        webhook_id: s.id,
        message: "A test event sent with POST /webhooks/{id}/test.",
        webhook: webhook(s)?,
    })
}

// The `data` of `webhook.test`: no description of its own (the event type's says what it is).
// Field order is the order of the JSON members.
#[derive(Serialize, JsonSchema)]
struct TestEvent<'a> {
    #[schemars(transform = Kind::Webhook)]
    webhook_id: &'a str,
    message: &'static str,
    /// The webhook the test is sent to, as `GET /webhooks/{id}` shows it.
    #[schemars(transform = crate::jsonschema::component::<Webhook>)]
    webhook: Webhook,
}

fn test_schema() -> Value {
    crate::jsonschema::response::<TestEvent<'_>>()
}
