//! The document's `webhooks`: one entry per event type, the request signage sends to a receiver,
//! its body's schema and an example, both from the payload catalogue
//! ([`crate::routes::payloads`]), the same as `GET /webhook-event-types`.

use crate::routes::payloads::Catalogue;
use serde_json::{json, Map, Value};

/// The section of the catalogue's types (whose examples it makes once).
pub fn webhooks(catalogue: &Catalogue) -> Value {
    let examples = catalogue.examples();
    let header = |name: &str, description: &str| {
        json!({"name": name, "in": "header", "required": true, "description": description,
            "schema": {"type": "string"}})
    };
    let headers = json!([
        header("webhook-id", "The event id (`evt_…`), the same on every attempt: deduplicate by it."),
        header("webhook-timestamp", "Unix seconds of the attempt."),
        header("webhook-signature", "`v1,<base64 HMAC-SHA256 of \"{webhook-id}.{webhook-timestamp}.{body}\">` keyed with the secret's base64 after `whsec_`; two, space-separated, during a rotation's grace."),
    ]);
    let mut out = Map::new();
    for p in catalogue.entries() {
        let example = examples.get(p.event_type).cloned().unwrap_or(Value::Null);
        let schema = catalogue.documented_schema(p);
        let operation = json!({
            "operationId": format!("event_{}", p.event_type.replace('.', "_")),
            "tags": ["webhooks"],
            "summary": p.description,
            "description": format!("Sent to every enabled webhook of the company that subscribes to `{}`. The body is the type's schema; `data` is built by the same code that records the event.", p.event_type),
            "parameters": headers,
            // A receiver authenticates the sender by the `webhook-signature` header, not by an
            // OpenAPI security scheme; stated so, rather than left for a reader to guess.
            "security": [],
            "requestBody": {"required": true, "content": {"application/json": {
                "schema": schema,
                "example": example}}},
            "responses": {"2XX": {"description": "Received. Any other status, a redirect, or no answer within `webhooks.timeout_millis` fails the attempt, which is retried."}}
        });
        out.insert(p.event_type.to_string(), json!({"post": operation}));
    }
    Value::Object(out)
}
