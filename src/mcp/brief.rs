//! Lighter results: a page of events as an assistant reads it. `GET /events` answers each event
//! with `data`, the object as the event recorded it (a whole screen, ad or webhook; a scan's
//! codes and counters); fifty of them made a 63 KB `list_events` result, mostly QR scans, for
//! questions a few members answer. The tool result keeps each event's envelope (what, which
//! object by id and name, who, through which door, when) and cuts `data` to the few members
//! that say what happened ([`brief_data`]); the full event is the resource
//! `signage://events/{id}` ([`super::resources`]), named once in the result's text.
//!
//! The full output schema (`X-MCP-Schemas: full`) says the same ([`output_schema`]).

use super::call::Content;
use super::tool::Tool;
use serde_json::{Map, Value};

/// The operation whose items are cut, and the resource that holds one in full.
const BRIEFED: &[(&str, &str)] = &[("listEvents", "signage://events/{id}")];

/// Envelope members an event result leaves out: `object` is always `event`, and `resource_type`
/// is the first part of `type` (`qr_code.scanned`) or the id's prefix. (`actor` is left out
/// when null.)
const DROPPED: &[&str] = &["object", "resource_type"];

/// Members of `data` that say what happened, kept first when present.
const TELLING: &[&str] = &[
    "status",
    "state",
    "enabled",
    "active",
    "on_air",
    "agent_class",
    "scan_count",
    "balance",
    "tokens",
    "amount",
];

/// The most members a cut `data` keeps.
const KEPT: usize = 3;
/// A string longer than this is text for the full event, not for the brief.
const SHORT: usize = 40;

fn briefed(tool: &Tool) -> Option<&'static str> {
    let op = tool.route.as_ref().map(|r| r.operation_id)?;
    BRIEFED.iter().find(|(o, _)| *o == op).map(|(_, uri)| *uri)
}

/// What the result's text says besides the data, for a tool whose items are cut.
pub fn note(tool: &Tool) -> Option<String> {
    briefed(tool).map(|uri| {
        format!(" Each event's `data` is cut to a few members; `{uri}` (resources/read) is one event in full.")
    })
}

/// The result with each event cut to its brief.
pub fn cut(tool: &Tool, content: Content) -> Content {
    if briefed(tool).is_none() {
        return content;
    }
    let mut value = match content {
        Content::Value(v) => v,
        Content::Json(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) => v,
            Err(_) => return Content::Json(bytes),
        },
    };
    if let Some(items) = value.get_mut("data").and_then(Value::as_array_mut) {
        for item in items.iter_mut() {
            if let Some(event) = item.as_object_mut() {
                brief_event(event);
            }
        }
    }
    Content::Value(value)
}

fn brief_event(event: &mut Map<String, Value>) {
    for member in DROPPED {
        event.remove(*member);
    }
    // The sandbox's own events have no actor: `actor_name` says who.
    if event.get("actor").is_some_and(Value::is_null) {
        event.remove("actor");
    }
    let data = event.get("data").cloned().unwrap_or(Value::Null);
    let repeated = [
        event.get("resource_id").cloned(),
        event.get("resource_name").cloned(),
    ];
    event.insert("data".into(), brief_data(&data, &repeated));
}

/// `data` cut to at most [`KEPT`] members: the [`TELLING`] ones when it has any, else its first
/// numbers, booleans and short strings; never ids, times, nested objects or what the envelope
/// already says (`repeated`).
pub fn brief_data(data: &Value, repeated: &[Option<Value>]) -> Value {
    let Some(all) = data.as_object() else {
        return data.clone();
    };
    let plain = |key: &str, v: &Value| {
        let scalar = match v {
            Value::Bool(_) | Value::Number(_) => true,
            Value::String(s) => s.chars().count() <= SHORT,
            _ => false,
        };
        scalar
            && !matches!(key, "id" | "object")
            && !key.ends_with("_id")
            && !key.ends_with("_at")
            && !repeated.iter().flatten().any(|r| r == v)
    };
    let telling: Map<String, Value> = TELLING
        .iter()
        .filter_map(|k| all.get_key_value(*k))
        .filter(|(k, v)| plain(k, v))
        .take(KEPT)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !telling.is_empty() {
        return Value::Object(telling);
    }
    // Nothing says what happened by name: the first few short values.
    Value::Object(
        all.iter()
            .filter(|(k, v)| plain(k, v))
            .take(KEPT)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// The full output schema of a tool whose items are cut: without the dropped members, `data`
/// described as the brief it is.
pub fn output_schema(operation: &str, mut schema: Value) -> Value {
    let Some(uri) = BRIEFED
        .iter()
        .find(|(o, _)| *o == operation)
        .map(|(_, u)| *u)
    else {
        return schema;
    };
    let item = &mut schema["properties"]["data"]["items"];
    if let Some(props) = item.get_mut("properties").and_then(Value::as_object_mut) {
        for member in DROPPED {
            props.remove(*member);
        }
        props.insert(
            "data".into(),
            serde_json::json!({"type": "object", "description": format!(
                "At most {KEPT} members of the event's data that say what happened (status, counts, short values); the whole event is the resource `{uri}`.")}),
        );
    }
    if let Some(req) = item.get_mut("required").and_then(Value::as_array_mut) {
        req.retain(|r| !DROPPED.iter().any(|d| r == d) && r != "actor");
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_scan_keeps_what_happened_and_drops_ids_and_times() {
        let data = json!({"qr_code_id": "qr_1", "promotion_id": "promo_1", "code": "1cqWoslyf2",
            "scanned_at": "2026-12-08T18:59:20Z", "agent_class": "ios", "scan_count": 432,
            "scans_since_last_event": 1});
        assert_eq!(
            brief_data(&data, &[Some(json!("qr_1"))]),
            json!({"agent_class": "ios", "scan_count": 432})
        );
    }

    #[test]
    fn an_object_keeps_its_status_first_and_not_its_name() {
        let data = json!({"id": "dev_1", "object": "device", "name": "Deli Screen",
            "location": "Den Haag Spui store, deli counter", "platform": "linux",
            "orientation": "landscape", "resolution": "1920x1080", "status": "offline",
            "nested": {"a": 1}, "notes": "x".repeat(100)});
        let out = brief_data(&data, &[Some(json!("dev_1")), Some(json!("Deli Screen"))]);
        assert_eq!(out, json!({"status": "offline"}));
        // Without a telling member: the first short values, not the name the envelope has.
        let data = json!({"id": "tx_1", "description": "Deli Screen", "reason": "purchase",
            "pack": "Growth", "note": "x".repeat(100), "size": 3, "extra": true});
        assert_eq!(
            brief_data(&data, &[Some(json!("Deli Screen"))]),
            json!({"reason": "purchase", "pack": "Growth", "size": 3})
        );
        assert_eq!(brief_data(&json!(null), &[]), json!(null));
    }
}
