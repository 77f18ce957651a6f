//! Examples from the demo world. `reference/examples.json` holds what a fresh sandbox, frozen at
//! [`CLOCK`], answers to one GET of each operation (captured and checked by
//! `tests/api/examples.rs`). From it the document gets: each GET's response example, path and
//! query parameter examples (the very ids of that request), and an example for every property of
//! every schema (the first non-null value seen under that schema; request bodies take the values
//! of the resource they create). What no GET shows comes from [`HAND`].

use serde_json::{json, Map, Value};

/// The instant the examples were captured at (`--clock`).
pub const CLOCK: &str = "2026-03-02T09:00:00Z";

/// The captured answers: `{"operations": {operationId: {"url": …, "body": …}}}`.
pub const CAPTURED: &str = include_str!("../../../reference/examples.json");

/// Property examples no GET shows (request-only members), by `Schema.property` or `property`.
const HAND: &[(&str, &str)] = &[
    ("LoginRequest.username", r#""alice@northwind.example""#),
    ("LoginRequest.password", r#""demo-password""#),
    ("password", r#""demo-password""#),
    ("seconds", "3600"),
    ("opens", r#""07:00""#),
    ("closes", r#""22:00""#),
    ("to", r#""2026-03-02T10:00:00Z""#),
    ("from", r#""2026-03-02T09:00:00Z""#),
    ("steps", "1"),
    ("grace_period_seconds", "86400"),
    ("storage_used_mb", "1200"),
    ("storage_total_mb", "16000"),
    ("uptime_seconds", "86400"),
    ("message", r#""Decoder stalled for 2 s""#),
    ("code", r#""decoder_stall""#),
    ("app_version", r#""4.2.1""#),
    ("current_ad_id", "null"),
    ("ad_id", r#""ad_0m5d4ruqi18cjcj48y9u""#),
    ("device_id", r#""dev_0m5d4rurmze0pyeznyp2""#),
    ("expires_at", "null"),
    ("companyScope", "null"),
    ("description", r#""Orders to the ERP""#),
    ("url", r#""https://hooks.northwind.example/signage""#),
    ("enabled", "true"),
    ("name", r#""Lobby screen""#),
    ("label", r#""Till system""#),
    ("secret", r#""whsec_8Jq2mV4xT7bN1cR5kW9zL3pD6hF0sY2a""#),
    ("rawKey", r#""sgn_test_…""#),
    ("access_token", r#""eyJhbGciOiJIUzI1NiJ9…""#),
    ("token_type", r#""Bearer""#),
    ("expires_in", "900"),
    ("filename", r#""hero.png""#),
    (
        "WebhookCreate.url",
        r#""https://hooks.northwind.example/signage""#,
    ),
    ("WebhookCreate.description", r#""Orders to the ERP""#),
    (
        "WebhookUpdate.url",
        r#""https://hooks.northwind.example/signage""#,
    ),
    ("WebhookUpdate.description", r#""Orders to the ERP""#),
    ("Credential.user_id", r#""usr_0m5d4ruo5fepbn59k9ts""#),
    ("Credential.username", r#""alice@northwind.example""#),
    ("LoginToken.scope", r#""companies:read devices:read""#),
    ("AdAssignment.ad_id", r#""ad_0m5d4ruqi18cjcj48y9u""#),
    ("AdAssignment.assigned_at", r#""2026-03-02T09:00:00Z""#),
    ("AdAssignment.newly_assigned", "true"),
    ("AdAssignmentBatch.assigned", "true"),
    ("AdAssignmentBatch.changed", "true"),
    (
        "AdAssignmentBatchCreate.assign_device_ids[]",
        r#""dev_0m5d4rurmze0pyeznyp2""#,
    ),
    ("revoked_at", "null"),
    ("replaced_by", "null"),
    ("occurred_at", r#""2026-03-02T08:55:00Z""#),
    ("AuditEntry.at", r#""2026-03-02T09:00:00Z""#),
    ("AuditEntry.request_id", r#""req_0m5d4ruo5fepbn59k9ts""#),
    ("AuditEntry.actor", r#""key_northwind_admin""#),
    ("AuditEntry.client_id", r#""cli_0m5d4ruo5fepbn59k9ts""#),
    ("AuditEntry.method", r#""PATCH""#),
    ("AuditEntry.route", r#""/companies/{id}/branding""#),
    ("AuditEntry.status", "200"),
    ("AuditEntry.outcome", r#""ok""#),
    ("AuditEntry.count", "1"),
    ("AuditEntry.id", r#""1""#),
    ("audit-log.cursor", r#""1""#),
    // Objects a fresh sandbox has none of yet (plays, deliveries, fault rules, snapshots).
    ("Playback.ad_id", r#""ad_0m5d4ruqi18cjcj48y9u""#),
    ("ProofOfPlayReport.ad_id", r#""ad_0m5d4ruqi18cjcj48y9u""#),
    ("QrCodeCreate.term", r#""spring""#),
    ("devices", "2"),
    ("ads", "3"),
    ("n", "1"),
    ("at", r#""2026-03-02T09:00:05.120Z""#),
    ("http_status", "200"),
    ("latency_ms", "42"),
    ("response", r#""ok""#),
    ("error", "null"),
    ("operation_id", r#""listDevices""#),
    ("Playback.id", r#""pb_0mm8k2a1b00000000000""#),
    ("SandboxFault.id", r#""flt_0mm8k2a1b00000000000""#),
    ("status", "503"),
    ("retry_after", "30"),
    ("detail", r#""Injected for a resilience test""#),
    ("delay_ms", "2000"),
    ("path", r#""/devices/*""#),
    ("times", "3"),
    ("probability", "0.5"),
    ("remaining", "2"),
    ("fired", "1"),
    ("taken_at", r#""2026-03-02T09:00:00Z""#),
    ("bytes", "421888"),
    ("SandboxSnapshot.version", r#""signage 0.1.0 (schema V12)""#),
    ("bytes_used", "421888"),
    ("budget_bytes", "536870912"),
    ("profile_since", r#""2026-03-02T09:00:00Z""#),
    ("next_transition_at", r#""2026-03-02T21:00:00Z""#),
    ("q", r#""entrance""#),
    (
        "devices/{id}/playbacks.cursor",
        r#""pb_0mm8k2a1b00000000000""#,
    ),
    (
        "webhooks/{id}/deliveries.cursor",
        r#""whd_0mm8k2a1b00000000000""#,
    ),
    ("faults.id", r#""flt_0mm8k2a1b00000000000""#),
    ("snapshots.name", r#""clean""#),
    // Outbox control, triggers and the sink (a fresh sandbox has sent nothing yet).
    ("WebhookEventType.object_type", r#""device""#),
    ("drain", "true"),
    ("drain_timeout_ms", "10000"),
    ("timeout_ms", "10000"),
    ("sent", "1"),
    ("succeeded", "1"),
    ("awaited", "0"),
    ("pending", "0"),
    ("SandboxWebhookDrained.next_attempt_at", "null"),
    ("sink", r#""northwind-grocers""#),
    ("received_at", r#""2026-03-02T09:00:00Z""#),
    ("webhook_id_header", r#""evt_0mm8k2a1b00000000000""#),
    ("webhook_timestamp", r#""1772442000""#),
    ("verified", "true"),
    ("reason", "null"),
    ("body_truncated", "false"),
    ("object_id", r#""dev_0m5d4rureym798sap7hi""#),
    ("SandboxEvent.actor", r#""key_SbxOperator00001""#),
    (
        "_sandbox/deliveries.cursor",
        r#""whd_0mm8k2a1b00000000000""#,
    ),
    ("sink.name", r#""northwind-grocers""#),
    ("q.code", r#""WTkzNhfZoa""#),
    (
        "CompanyUpdate.allowed_landing_domains[]",
        r#""northwind-grocers.example""#,
    ),
    // The request journal's filters and a drill's answers (a fresh sandbox has none).
    ("idempotency_key", r#""order-7""#),
    (
        "test_name",
        r#""tests/test_orders.py::test_retries_with_one_key""#,
    ),
    ("duplicate", "false"),
    ("tool", r#""list_devices""#),
    ("since", r#""2026-03-02T09:00:00Z""#),
    ("until", r#""2026-03-02T10:00:00Z""#),
    ("pass", "true"),
    // Sign-in links (a fresh sandbox has made none) and an ad's own dates (no fixture ad has any).
    ("SignInLinkRequest.path", r#""/console""#),
    (
        "SignInLink.url",
        r#""http://192.168.1.20:8080/console#signin=3f9c0a7be21d4c85a6f0e9b2d7c14a3e8f5b6a9c0d1e2f3a4b5c6d7e8f9a0b1c""#,
    ),
    (
        "SignInLink.path",
        r#""/console#signin=3f9c0a7be21d4c85a6f0e9b2d7c14a3e8f5b6a9c0d1e2f3a4b5c6d7e8f9a0b1c""#,
    ),
    ("SignInLink.expires_at", r#""2026-03-02T09:10:00Z""#),
    (
        "SignInRequest.token",
        r#""3f9c0a7be21d4c85a6f0e9b2d7c14a3e8f5b6a9c0d1e2f3a4b5c6d7e8f9a0b1c""#,
    ),
    ("SignInSession.scope", r#""read write sandbox""#),
    ("SignInSession.path", r#""/console""#),
    ("SignInSession.expires_in", "43200"),
    (
        "SecretRevealRequest.token",
        r#""8d1e4b7a0c3f96e25b8a7d4c1f0e9b6a3d2c5f8e7b4a1d0c9f6e3b2a5d8c7f4e""#,
    ),
    ("SecretReveal.field", r#""secret""#),
    ("SecretReveal.grace", r#""24 hours""#),
    ("Ad.starts_at", "null"),
    ("Ad.ends_at", "null"),
    ("AdCreate.starts_at", r#""2026-03-02T17:00:00Z""#),
    ("AdCreate.ends_at", r#""2026-03-16T17:00:00Z""#),
    ("AdUpdate.starts_at", r#""2026-03-02T17:00:00Z""#),
    ("AdUpdate.ends_at", r#""2026-03-16T17:00:00Z""#),
    ("landing_url", "null"),
    ("accounts.id", r#""acct_0m5d4ruo0fb72isqzrb5""#),
    ("SandboxCompaniesAdd.count", "98"),
    ("SandboxCompaniesAdded.companies", "100"),
    ("SandboxPlanLimitsSet.previous_max_devices", "50"),
];

fn hand(key: &str) -> Option<Value> {
    HAND.iter()
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| serde_json::from_str(v).ok())
}

/// An id for a property whose pattern is an id prefix (`^evt_`) or a kind's whole id pattern
/// ([`crate::ids::Kind::pattern`]) that no GET of a fresh sandbox shows (events, deliveries, sink
/// receipts): the prefix and a fixed, well-formed tail.
fn id_of_pattern(schema: &Value) -> Option<Value> {
    let pattern = schema["pattern"].as_str()?.strip_prefix('^')?;
    let (kind, tail) = pattern.split_once('_')?;
    (!kind.is_empty()
        && kind.bytes().all(|b| b.is_ascii_lowercase())
        && (tail.is_empty() || tail == "[0-9A-Za-z]{1,64}$"))
        .then(|| json!(format!("{kind}_0m5d4s1k2x7q9w3e5r7t")))
}

/// Whether `v` fits `schema` as far as our validator reads it (type, enum, bounds).
fn fits(v: &Value, schema: &Value) -> bool {
    crate::jsonschema::validate(v, schema, "").is_ok() && matches_pattern(v, schema)
}

/// Whether a string fits the schema's `pattern` (our validator reads only the id pattern; an
/// example borrowed from another property must not show a value its own schema refuses).
/// Regexes are compiled only here, while the document is built, never on the request path.
fn matches_pattern(v: &Value, schema: &Value) -> bool {
    let (Some(text), Some(pattern)) = (v.as_str(), schema["pattern"].as_str()) else {
        return true;
    };
    thread_local! {
        static COMPILED: std::cell::RefCell<std::collections::HashMap<String, Option<regex::Regex>>> =
            std::cell::RefCell::default();
    }
    COMPILED.with(|c| {
        c.borrow_mut()
            .entry(pattern.to_string())
            .or_insert_with(|| regex::Regex::new(pattern).ok())
            .as_ref()
            .is_some_and(|re| re.is_match(text))
    })
}

fn component<'a>(schema: &Value, schemas: &'a Map<String, Value>) -> Option<(&'a str, &'a Value)> {
    let name = schema.get("$ref")?.as_str()?.rsplit('/').next()?;
    schemas.get_key_value(name).map(|(k, v)| (k.as_str(), v))
}

/// Fills `into` with the values of `v`, keeping values already there unless they are null.
fn merge(into: &mut Value, v: &Value) {
    match (into, v) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, x) in b {
                match a.get_mut(k) {
                    Some(existing) if !existing.is_null() => merge(existing, x),
                    _ => {
                        a.insert(k.clone(), x.clone());
                    }
                }
            }
        }
        (slot @ Value::Null, x) => *slot = x.clone(),
        _ => {}
    }
}

/// Collects, per component, the merged values of every instance of it in `v`.
fn harvest(
    v: &Value,
    schema: &Value,
    schemas: &Map<String, Value>,
    out: &mut Map<String, Value>,
    depth: usize,
) {
    if depth > 16 {
        return;
    }
    let (schema, name) = match component(schema, schemas) {
        Some((name, s)) => (s, Some(name)),
        None => (schema, None),
    };
    if let Some(name) = name {
        merge(out.entry(name).or_insert(Value::Null), v);
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if let Some(p) = schema["properties"].get(k) {
                    harvest(x, p, schemas, out, depth + 1);
                }
            }
        }
        Value::Array(a) => {
            for x in a {
                harvest(x, &schema["items"], schemas, out, depth + 1);
            }
        }
        _ => {}
    }
}

/// A property that holds one value (a string, number or boolean, or a constant).
pub(crate) fn is_scalar(schema: &Value) -> bool {
    let scalar = |t: &str| matches!(t, "string" | "integer" | "number" | "boolean");
    match &schema["type"] {
        Value::String(t) => scalar(t),
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(scalar),
        _ => schema.get("const").is_some(),
    }
}

/// Sets `example` on each property of `schema` that has none: from `seen` (this schema's own
/// values), else from any schema's value of the same property name, else [`HAND`].
fn fill(owner: &str, schema: &mut Value, seen: &Value, by_name: &Map<String, Value>) {
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (name, prop) in props.iter_mut() {
        let own = seen.get(name).cloned();
        if let Some(c) = prop.get("const").cloned() {
            prop["example"] = c;
        } else if is_scalar(prop) && prop.get("example").is_none() {
            let value = own
                .clone()
                .filter(|v| !v.is_null() && fits(v, prop))
                .or_else(|| hand(&format!("{owner}.{name}")).filter(|v| fits(v, prop)))
                .or_else(|| by_name.get(name).filter(|v| fits(v, prop)).cloned())
                .or_else(|| hand(name).filter(|v| fits(v, prop)))
                .or_else(|| id_of_pattern(prop))
                .or(own.clone().filter(|v| fits(v, prop)));
            if let Some(v) = value {
                prop["example"] = v;
            }
        }
        let nested_seen = own.unwrap_or(Value::Null);
        if prop.get("properties").is_some() {
            fill(owner, prop, &nested_seen, by_name);
        }
        for key in ["anyOf", "oneOf"] {
            for branch in prop
                .get_mut(key)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if branch.get("properties").is_some() {
                    fill(owner, branch, &nested_seen, by_name);
                }
            }
        }
        if let Some(items) = prop.get_mut("items") {
            let first = nested_seen.get(0).cloned().unwrap_or(Value::Null);
            if items.get("properties").is_some() {
                fill(owner, items, &first, by_name);
            } else if items.get("example").is_none() {
                // A list of scalars in a request body: its item only when given by hand.
                if let Some(v) = hand(&format!("{owner}.{name}[]")) {
                    items["example"] = v;
                }
            }
        }
    }
}

/// Every scalar value under a property name, anywhere in the harvest (the first non-null).
fn values_by_name(v: &Value, out: &mut Map<String, Value>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if !x.is_null() && !x.is_object() && !x.is_array() && !out.contains_key(k) {
                    out.insert(k.clone(), x.clone());
                }
                values_by_name(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| values_by_name(x, out)),
        _ => {}
    }
}

/// An example value of `schema`: what a GET showed of that component, else its own example,
/// else one built member by member.
fn example_of(
    schema: &Value,
    schemas: &Map<String, Value>,
    seen: &Map<String, Value>,
    depth: usize,
) -> Option<Value> {
    if depth > 12 {
        return None;
    }
    if let Some((name, target)) = component(schema, schemas) {
        if let Some(v) = seen.get(name).filter(|v| !v.is_null()) {
            if fits(v, target) {
                return Some(v.clone());
            }
        }
        return example_of(target, schemas, seen, depth + 1);
    }
    if let Some(e) = schema.get("example").or_else(|| schema.get("const")) {
        return Some(e.clone());
    }
    if let Some(first) = schema["enum"].get(0) {
        return Some(first.clone());
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(branches) = schema[key].as_array() {
            return branches
                .iter()
                .filter(|b| b["type"] != "null")
                .find_map(|b| example_of(b, schemas, seen, depth + 1))
                .or(Some(Value::Null));
        }
    }
    if let Some(props) = schema["properties"].as_object() {
        let mut out = Map::new();
        for (name, p) in props {
            if let Some(v) = example_of(p, schemas, seen, depth + 1) {
                out.insert(name.clone(), v);
            }
        }
        return Some(Value::Object(out));
    }
    match &schema["type"] {
        Value::String(t) if t == "array" => Some(
            example_of(&schema["items"], schemas, seen, depth + 1)
                .map_or_else(|| json!([]), |v| json!([v])),
        ),
        Value::String(t) if t == "object" => Some(json!({})),
        Value::Array(ts) if ts.contains(&json!("null")) => Some(Value::Null),
        _ => None,
    }
}

/// An example body for a request schema: each property that has an example.
fn body_example(schema: &Value, schemas: &Map<String, Value>) -> Value {
    let schema = component(schema, schemas).map_or(schema, |(_, s)| s);
    let mut out = Map::new();
    for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
        let prop = component(prop, schemas).map_or(prop, |(_, s)| s);
        if let Some(e) = prop.get("example") {
            out.insert(name.clone(), e.clone());
        } else if let Some(values) = prop["enum"].as_array() {
            out.insert(name.clone(), values[0].clone());
        } else if prop["type"] == "array" {
            let items = component(&prop["items"], schemas).map_or(&prop["items"], |(_, s)| s);
            if let Some(first) = items["enum"].get(0).or_else(|| items.get("example")) {
                out.insert(name.clone(), json!([first]));
            }
        } else if prop.get("properties").is_some() {
            // A nested object (a fault rule's `match`): its own members' examples.
            out.insert(name.clone(), body_example(prop, schemas));
        } else if let Some(first) = prop["oneOf"].get(0).or_else(|| prop["anyOf"].get(0)) {
            // One of several shapes (a fault rule's `action`): the first.
            let first = component(first, schemas).map_or(first, |(_, s)| s);
            if first.get("properties").is_some() {
                out.insert(name.clone(), body_example(first, schemas));
            }
        }
    }
    Value::Object(out)
}

/// Adds the examples to the document.
pub fn apply(doc: &mut Value) {
    let Ok(captured) = serde_json::from_str::<Value>(CAPTURED) else {
        return;
    };
    let Some(ops) = captured["operations"].as_object() else {
        return;
    };
    let schemas = doc["components"]["schemas"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut seen = Map::new();
    let mut params = Vec::new();
    let mut captured_names = Map::new();
    values_by_name(&captured["operations"], &mut captured_names);
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for (template, item) in paths.iter() {
        for op in item.as_object().into_iter().flat_map(|m| m.values()) {
            if let Some(c) = op["operationId"].as_str().and_then(|id| ops.get(id)) {
                request_values(template, c, &mut params);
            }
        }
    }
    for (template, item) in paths.iter_mut() {
        for op in item
            .as_object_mut()
            .into_iter()
            .flat_map(|m| m.values_mut())
        {
            parameter_examples(template, &params, &captured_names, &schemas, op);
            let Some(c) = op["operationId"].as_str().and_then(|id| ops.get(id)) else {
                continue;
            };
            let url = c["url"].as_str().unwrap_or("");
            let media = op
                .pointer_mut("/responses/200/content/application~1json")
                .filter(|m| m.is_object());
            if let Some(media) = media {
                harvest(&c["body"], &media["schema"], &schemas, &mut seen, 0);
                media["examples"] = json!({"fresh_sandbox": {
                    "summary": format!("GET {url} on a fresh sandbox (clock frozen at {CLOCK})"),
                    "value": c["body"]}});
            }
        }
    }
    let mut by_name = Map::new();
    values_by_name(&Value::Object(seen.clone()), &mut by_name);
    let Some(components) = doc["components"]["schemas"].as_object_mut() else {
        return;
    };
    for (name, schema) in components.iter_mut() {
        // `WebhookWithSecret`, `DeviceCreate`: the values of the resource they extend or create.
        let own = (1..=name.len())
            .rev()
            .filter_map(|n| name.get(..n).and_then(|base| seen.get(base)))
            .find(|v| !v.is_null())
            .cloned()
            .unwrap_or(Value::Null);
        fill(name, schema, &own, &by_name);
        // A named enum: its first value (a property that refers to it is then shown with one).
        if schema.get("example").is_none() {
            if let Some(first) = schema["enum"].get(0).cloned() {
                schema["example"] = first;
            }
        }
    }
    let schemas = components.clone();
    for item in doc["paths"]
        .as_object_mut()
        .into_iter()
        .flat_map(|m| m.values_mut())
    {
        for op in item
            .as_object_mut()
            .into_iter()
            .flat_map(|m| m.values_mut())
        {
            let media = op
                .pointer_mut("/requestBody/content/application~1json")
                .filter(|m| m.is_object());
            if let Some(media) = media {
                media["example"] = body_example(&media["schema"], &schemas);
            }
            // Writes: the resource as a GET showed it, else one built from property examples.
            for status in ["200", "201"] {
                let pointer = format!("/responses/{status}/content/application~1json");
                if let Some(media) = op.pointer_mut(&pointer).filter(|m| m.is_object()) {
                    if media.get("examples").is_none() && media.get("example").is_none() {
                        if let Some(e) = example_of(&media["schema"], &schemas, &seen, 0) {
                            media["example"] = e;
                        }
                    }
                }
            }
        }
    }
}

/// The parameter values of a captured request, keyed by the path segment before them (path
/// parameters: `("devices", "id")`) or by an empty segment (query parameters), plus a `cursor`:
/// the id of the last row of a captured list page.
fn request_values(template: &str, captured: &Value, out: &mut Vec<(String, String, Value)>) {
    let url = captured["url"].as_str().unwrap_or("");
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let segments: Vec<&str> = template.split('/').collect();
    for (i, (t, v)) in segments.iter().zip(path.split('/')).enumerate() {
        if let Some(name) = t.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
            let before = if i > 0 { segments[i - 1] } else { "" };
            push(out, before, name, json!(v));
        }
    }
    for (k, v) in query.split('&').filter_map(|kv| kv.split_once('=')) {
        let value = v.parse::<i64>().map_or(json!(v), |n| json!(n));
        push(out, "", k, value);
    }
    if let Some(rows) = captured["body"]["data"].as_array() {
        if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
            push(out, template, "cursor", last["id"].clone());
            let collection = segments.last().copied().unwrap_or("");
            push(out, collection, "id", first["id"].clone());
        }
    }
}

fn push(out: &mut Vec<(String, String, Value)>, at: &str, name: &str, v: Value) {
    if !out.iter().any(|(a, n, _)| a == at && n == name) {
        out.push((at.to_string(), name.to_string(), v));
    }
}

/// Header parameters every write may take.
const HEADER_EXAMPLES: &[(&str, &str)] = &[
    ("Idempotency-Key", "5f0c6a9e-3b1d-4c55-9a57-3c1f2d8e9b10"),
    ("If-Match", "\"v1\""),
    ("If-None-Match", "\"v1\""),
];

/// Sets each parameter's example: the value of a captured request (the same collection's id for
/// a path parameter, the same name for a query parameter), else the enum's first value, else the
/// documented default.
fn parameter_examples(
    template: &str,
    params: &[(String, String, Value)],
    by_name: &Map<String, Value>,
    schemas: &Map<String, Value>,
    op: &mut Value,
) {
    let segments: Vec<&str> = template.split('/').collect();
    for p in op
        .get_mut("parameters")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let name = p["name"].as_str().unwrap_or("").to_string();
        let find = |at: &str| {
            params
                .iter()
                .find(|(a, n, _)| a == at && *n == name)
                .map(|(_, _, v)| v.clone())
        };
        let schema = component(&p["schema"], schemas).map_or(&p["schema"], |(_, s)| s);
        let value = match p["in"].as_str() {
            Some("path") => {
                let at = segments
                    .iter()
                    .position(|s| *s == format!("{{{name}}}"))
                    .filter(|i| *i > 0)
                    .map_or("", |i| segments[i - 1]);
                find(at)
                    .or_else(|| {
                        params
                            .iter()
                            .find(|(a, n, _)| a == at && n == "id")
                            .map(|(_, _, v)| v.clone())
                    })
                    .or_else(|| hand(&format!("{at}.{name}")))
            }
            Some("query") if name == "cursor" => find(template)
                .or_else(|| hand(&format!("{}.cursor", template.trim_start_matches('/')))),
            Some("query") => find("")
                .or_else(|| schema["enum"].get(0).cloned())
                .or_else(|| by_name.get(&name).filter(|v| fits(v, schema)).cloned())
                .or_else(|| {
                    // A query value is text: `503` for a `status` filter typed as a string.
                    hand(&name)
                        .map(|v| match v {
                            Value::Number(n) if schema["type"] == "string" => json!(n.to_string()),
                            other => other,
                        })
                        .filter(|v| fits(v, schema))
                }),
            Some("header") => HEADER_EXAMPLES
                .iter()
                .find(|(h, _)| *h == name)
                .map(|(_, v)| json!(v)),
            _ => None,
        };
        let value = value
            .or_else(|| schema["enum"].get(0).cloned())
            .or_else(|| {
                p["schema"]["default"]
                    .as_str()
                    .map(|_| p["schema"]["default"].clone())
            })
            .or_else(|| p["schema"]["default"].as_i64().map(|n| json!(n)));
        if let Some(v) = value {
            p["example"] = v;
        }
    }
}
