//! The output schemas of the change tools (prepare, confirm, cancel), and `withheld`: data only,
//! read by the catalogue as well as the preview; it imports no sibling.

use crate::http::router::Withheld;
use serde_json::{json, Value};

/// The output of the prepare tools; `current` is the REST schema of the target.
pub fn schema(current: Value, target: Value) -> Value {
    json!({"type": "object", "additionalProperties": false,
        "required": ["object", "confirmation_id", "status", "tool", "operation", "target", "summary",
            "current", "after", "set_at_confirmation", "differences", "cost", "redacted_fields",
            "expires_at", "next_step"],
        "properties": {
            "object": {"const": "pending_change"},
            "confirmation_id": {"type": "string", "description": "Pass to confirm_change after the user confirms, or to cancel_change."},
            "status": {"const": "awaiting_confirmation"},
            "tool": {"type": "string"},
            "operation": {"type": "string", "description": "The REST operation the change will run."},
            "target": target,
            "summary": {"type": "string", "description": "The change in words a person decides on: the objects and company by name, what changes, the price in currency units, the balance after and every side effect."},
            "current": current,
            "after": {"type": "object", "description": "What confirm_change will return as `result` (a dry run of the write)."},
            "set_at_confirmation": {"type": "array", "items": {"type": "string"},
                "description": "Paths in `after` that only the confirmation sets (new ids, the time of the write, a receiver's answer); null in `after`."},
            "differences": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                "required": ["field", "current", "proposed"],
                "properties": {"field": {"type": "string"}, "current": {}, "proposed": {},
                    "set_at_confirmation": {"const": true}}}},
            "cost": cost_schema(),
            "redacted_fields": {"type": "array", "items": {"type": "string"},
                "description": "Every path of `current` and `after` whose shown value hides text that looks like a secret, changed or not; the value stored is the one sent, or the one already stored."},
            "withheld": withheld_schema(),
            "expires_at": {"type": "string", "format": "date-time"},
            "next_step": {"type": "string"}}})
}

/// `cost`: `null`, an activation's tokens against the balance, or a purchase's price.
pub fn cost_schema() -> Value {
    let int = json!({"type": ["integer", "null"]});
    let activation = json!({"type": "object", "additionalProperties": false,
        "required": ["tokens", "balance", "balance_after", "sufficient"],
        "properties": {"tokens": int, "balance": int, "balance_after": int,
            "sufficient": {"type": ["boolean", "null"]}}});
    let purchase = json!({"type": "object", "additionalProperties": false,
        "required": ["price_cents", "currency", "tokens_added", "balance", "balance_after", "invoice_line"],
        "properties": {"price_cents": int, "currency": {"type": ["string", "null"]},
            "tokens_added": int, "balance": int, "balance_after": int,
            "invoice_line": {"type": "object", "description": "The line the purchase adds to the open invoice."}}});
    json!({"anyOf": [{"type": "null"}, activation, purchase]})
}

/// `withheld`, in a preview and a confirmation: a field of the write's answer that MCP never
/// shows, and where the integrator reads it.
pub fn withheld_schema() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["field", "note"],
        "properties": {"field": {"type": "string"}, "note": {"type": "string"}}})
}

/// `withheld` in a confirmation: with `reveal`, the one-time link that shows the person the
/// withheld secret (`url` only when the assistant must pass it on).
fn confirmed_withheld_schema() -> Value {
    let mut s = withheld_schema();
    s["properties"]["reveal"] = json!({"type": "object", "additionalProperties": false,
        "required": ["expires_at", "instructions"],
        "properties": {"url": {"type": "string"}, "expires_at": {"type": "string", "format": "date-time"},
            "instructions": {"type": "string"}}});
    s
}

/// `withheld` as shown: the note with `{id}` replaced by the object's id when it is known.
pub fn withheld_value(w: &Withheld, answer: &Value) -> Value {
    let note = match answer["id"].as_str() {
        Some(id) => w.note.replace("{id}", id),
        None => w.note.to_string(),
    };
    json!({"field": w.field, "note": note})
}

fn target_schema(with_version: bool) -> Value {
    let mut s = json!({"type": "object", "additionalProperties": false, "required": ["type", "id"],
        "properties": {"type": {"type": "string"}, "id": {"type": "string"}}});
    if with_version {
        s["required"] = json!(["type", "id", "version"]);
        s["properties"]["version"] =
            json!({"type": "string", "description": "The ETag of the previewed state."});
    }
    s
}

/// The output of the prepare tools; `current` is the REST schema of the target.
pub fn preview_schema(current: Value) -> Value {
    schema(current, target_schema(true))
}

pub fn confirm_schema(result: Value) -> Value {
    json!({"type": "object", "additionalProperties": false,
        "required": ["object", "status", "confirmation_id", "tool", "operation", "target", "result"],
        "properties": {
            "object": {"const": "change_result"},
            "status": {"const": "applied"},
            "confirmation_id": {"type": "string"},
            "tool": {"type": "string"},
            "operation": {"type": "string"},
            "target": target_schema(false),
            "result": result,
            "cost": cost_schema(),
            "withheld": confirmed_withheld_schema()}})
}

pub fn cancel_schema() -> Value {
    json!({"type": "object", "additionalProperties": false,
        "required": ["object", "status", "confirmation_id"],
        "properties": {
            "object": {"const": "change_result"},
            "status": {"const": "cancelled"},
            "confirmation_id": {"type": "string"}}})
}
