//! The two sizes of a tool definition.
//!
//! - **Compact** (what `tools/list` shows by default): a catalogue an assistant can afford to keep
//!   in context. What every tool would repeat is said once, by the server's instructions
//!   ([`crate::mcp::dispatch`]'s handshake): how `limit` and `cursor` page, what `q`, `from` and
//!   `to` take, that an `<object>_id` takes the id of that object, that a read's other optional
//!   arguments filter it, and what an update's `changes` holds. Input schemas keep every
//!   argument, type, enum, bound and description the model needs to call the tool beyond those
//!   conventions; they leave out what the conventions say and what only a validator needs (long
//!   text patterns, the patterns and length bounds of ids, the pattern of cursors), which the
//!   server still enforces and explains in its error. Output schemas keep the envelope the MCP
//!   layer defines (the change result) at its top level; an object's own fields are in the result
//!   itself, and in full mode. A read has none, and neither has a prepare tool: every one answers
//!   the same pending change, which the server's instructions describe.
//! - **Full** (`X-MCP-Schemas: full`): the REST contract in full, a subschema that repeats inside
//!   one tool's output moved once into `$defs` (confirm_change's results, say).
//!
//! Arguments are always validated against the full input schema.

use super::spec::Kind;
use super::tool::Tool;
use crate::jsonschema::ID_PATTERN;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// Where the house-style description of a prepare tool starts its two-step boilerplate, which
/// the compact form replaces by [`PREPARE_NOTE`] (the server instructions explain the steps).
const PREPARE_BOILERPLATE: &str = " This executes NOTHING";
pub const PREPARE_NOTE: &str = " Changes nothing until confirm_change.";
/// Annotation hints equal to the specification's defaults say nothing.
const DEFAULT_HINTS: [(&str, bool); 4] = [
    ("readOnlyHint", false),
    ("destructiveHint", true),
    ("idempotentHint", false),
    ("openWorldHint", true),
];

/// Patterns longer than this are enforced but not shown (the non-blank-text rule is 200 bytes).
const SHOWN_PATTERN_MAX: usize = 40;
/// An array argument's items enum longer than this is not shown (its description names them).
const LISTED_ITEMS_MAX: usize = 16;
/// What the server's instructions say of every `limit` (its range and default).
pub const LIMIT_MAX: u64 = 100;
pub const LIMIT_DEFAULT: u64 = 20;
/// A read's filter described in a few words ("Only ads of this company.") says what its name
/// and the instructions say.
const ONLY_FILTER_MAX: usize = 60;
/// A repeated subschema this large or larger goes to `$defs`.
const SHARED_MIN_BYTES: usize = 200;

/// The compact form of a full `tools/list` entry.
pub fn definition(full: &Value, kind: Kind) -> Value {
    let mut d = full.clone();
    if let Some(a) = d.get_mut("annotations").and_then(Value::as_object_mut) {
        // The tool's own `title` says it already.
        a.remove("title");
        for (hint, default) in DEFAULT_HINTS {
            if a.get(hint) == Some(&Value::Bool(default)) {
                a.remove(hint);
            }
        }
    }
    if kind == Kind::Prepare {
        let short = d["description"].as_str().and_then(|t| {
            t.find(PREPARE_BOILERPLATE)
                .map(|i| format!("{}{PREPARE_NOTE}", &t[..i]))
        });
        if let Some(short) = short {
            d["description"] = Value::String(short);
        }
    }
    if let Some(input) = d.get_mut("inputSchema") {
        compact_input(input, kind);
    }
    let output = d.get("outputSchema").and_then(|o| output(o, kind));
    match (output, d.as_object_mut()) {
        (Some(o), Some(m)) => {
            m.insert("outputSchema".into(), o);
        }
        (None, Some(m)) => {
            m.remove("outputSchema");
        }
        _ => {}
    }
    d
}

fn compact_input(schema: &mut Value, kind: Kind) {
    let Some(m) = schema.as_object_mut() else {
        return;
    };
    // Unknown arguments are refused by name anyway; the flag only costs bytes on every tool.
    if m.get("additionalProperties") == Some(&Value::Bool(false))
        && !m.contains_key("minProperties")
    {
        m.remove("additionalProperties");
    }
    if m.get("required")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        m.remove("required");
    }
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        for (name, p) in props.iter_mut() {
            match name.as_str() {
                // The server's instructions say how cursors are passed.
                "cursor" => *p = json!({"type": "string"}),
                // The instructions give a limit's range and default; a bound or default of its
                // own stays.
                "limit" => {
                    if let Some(pm) = p.as_object_mut() {
                        pm.remove("description");
                        pm.remove("minimum");
                        if pm.get("maximum") == Some(&json!(LIMIT_MAX)) {
                            pm.remove("maximum");
                        }
                        if pm.get("default") == Some(&json!(LIMIT_DEFAULT)) {
                            pm.remove("default");
                        }
                    }
                }
                // The changes of an update: at least one (`minProperties`), `null` clears a
                // nullable field (its type says which): the instructions say both once. An
                // unknown field is refused by name, as an unknown argument is.
                "changes" => {
                    compact_property(p);
                    if let Some(pm) = p.as_object_mut() {
                        pm.remove("description");
                        pm.remove("additionalProperties");
                    }
                }
                _ => {
                    compact_property(p);
                    if let Some(pm) = p.as_object_mut() {
                        let said_once = pm
                            .get("description")
                            .and_then(Value::as_str)
                            .is_some_and(|d| said_by_convention(name, d, kind));
                        if said_once {
                            pm.remove("description");
                            // The instructions say what `from` and `to` take: RFC 3339 or a date,
                            // which `format: date-time` would deny.
                            if matches!(name.as_str(), "from" | "to") {
                                pm.remove("format");
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Whether an argument's description only says what the server's instructions say for every
/// tool: the shared `q`, `from` and `to` filters, an id argument that only names its object
/// ("The device id, as returned by list_devices.": its pattern names the kind), and a read's
/// optional filter ("Only ads of this company.").
fn said_by_convention(name: &str, description: &str, kind: Kind) -> bool {
    use crate::routes::{date_range, search};
    match name {
        "q" => return description == search::Q.description,
        "from" => return description == date_range::FROM_DESCRIPTION,
        "to" => return description == date_range::TO_DESCRIPTION,
        _ => {}
    }
    if name.ends_with("_id") && names_only_its_object(description) {
        return true;
    }
    kind == Kind::Read
        && description.starts_with("Only ")
        && !description.contains('`')
        && description.len() <= ONLY_FILTER_MAX
}

/// "The device id, as returned by list_devices." or "The promotion.": a few words naming the
/// object, once the id's kind (now its pattern) is out of the description.
fn names_only_its_object(description: &str) -> bool {
    let head = [", as returned by ", ", from "]
        .iter()
        .filter_map(|sep| description.find(sep))
        .min()
        .map_or(description, |i| &description[..i]);
    let head = head.trim_end_matches('.');
    let Some(object) = head.strip_prefix("The ") else {
        return false;
    };
    let object = object.strip_suffix(" id").unwrap_or(object);
    object.split(' ').count() <= 2
}

fn compact_property(p: &mut Value) {
    let Some(m) = p.as_object_mut() else {
        return;
    };
    // An id argument (the generic id pattern, or one kind's: `^cmp_[0-9A-Za-z]{1,64}$`): its
    // name says which object, and the instructions say ids come from the list_ and get_ tools;
    // its kind (`cmp_…`) in the description or the pattern says it again, its length bounds
    // only a validator needs.
    let id_pattern = m
        .get("pattern")
        .and_then(Value::as_str)
        .is_some_and(|p| p == ID_PATTERN || is_kind_pattern(p));
    if id_pattern {
        for k in ["pattern", "minLength", "maxLength"] {
            m.remove(k);
        }
    }
    let unmarked = m
        .get("description")
        .and_then(Value::as_str)
        .and_then(without_id_kind);
    if let Some(description) = unmarked {
        m.insert("description".into(), Value::String(description));
    }
    // Text may not be empty: a caller never sends empty text on purpose, the error says it.
    if m.get("minLength") == Some(&json!(1)) {
        m.remove("minLength");
    }
    // The optional-text rule (no control characters) says nothing a caller would break.
    let no_control = crate::validate::text_pattern(false);
    if m.get("pattern")
        .and_then(Value::as_str)
        .is_some_and(|s| s.len() > SHOWN_PATTERN_MAX || s == no_control)
    {
        m.remove("pattern");
    }
    for k in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = m.get_mut(k) {
            branches.iter_mut().for_each(compact_property);
        }
    }
    // `anyOf: [{string, …}, {null}]` says the same as `type: [string, null]` with the string's
    // keywords (they apply to strings only).
    let nullable_string = match m.get("anyOf").and_then(Value::as_array) {
        Some(b) if b.len() == 2 && b[1] == json!({"type": "null"}) && b[0]["type"] == "string" => {
            b[0].as_object().cloned()
        }
        _ => None,
    };
    if let Some(string) = nullable_string {
        m.remove("anyOf");
        for (k, v) in string {
            if k != "type" {
                m.insert(k, v);
            }
        }
        m.insert("type".into(), json!(["string", "null"]));
    }
    // An array of ids: its items are ids as well. A long list of allowed items (the event
    // types) is left out; the property's description says where the names are listed.
    if let Some(items) = m.get_mut("items") {
        let long = items["enum"]
            .as_array()
            .is_some_and(|e| e.len() > LISTED_ITEMS_MAX);
        if long && m.contains_key("description") {
            m.insert("items".into(), json!({"type": "string"}));
        } else if let Some(items) = m.get_mut("items") {
            compact_property(items);
        }
    }
    if m.contains_key("properties") {
        compact_input(p, Kind::Prepare);
    }
}

/// A description without the kind of id it names: "The device." for "The device (`dev_…`).",
/// "Screens of the ad's company." for "Screens (`dev_…`) of the ad's company."
fn without_id_kind(description: &str) -> Option<String> {
    let start = description.find(" (`")?;
    let rest = &description[start + 3..];
    let end = rest.find("…`)")?;
    let prefix = &rest[..end];
    let kind = prefix.strip_suffix('_')?;
    if kind.is_empty() || !kind.bytes().all(|b| b.is_ascii_lowercase()) {
        return None;
    }
    let after = &rest[end + "…`)".len()..];
    Some(format!("{}{after}", &description[..start]))
}

/// Whether a pattern is that of one kind of id, `^cmp_[0-9A-Za-z]{1,64}$`.
fn is_kind_pattern(pattern: &str) -> bool {
    let Some((prefix, tail)) = pattern
        .strip_prefix('^')
        .and_then(|rest| rest.split_once('_'))
    else {
        return false;
    };
    tail == "[0-9A-Za-z]{1,64}$"
        && !prefix.is_empty()
        && prefix.bytes().all(|b| b.is_ascii_lowercase())
}

/// The compact output schema: the top level of the change result confirm_change answers; nothing
/// for a read (its REST object is in the result, and in full mode), a prepare tool (the pending
/// change is the same for every one, described by the instructions) or cancel_change (its
/// description says what it answers).
fn output(full: &Value, kind: Kind) -> Option<Value> {
    if matches!(kind, Kind::Read | Kind::Prepare | Kind::Cancel) {
        return None;
    }
    // The envelope with its structured-error branch: each branch's top level.
    if let Some(branches) = full.get("anyOf").and_then(Value::as_array) {
        let shallow: Vec<Value> = branches.iter().filter_map(shallow_object).collect();
        // The root as the full schema has it (MCP's: an object schema).
        return Some(json!({"type": full["type"], "anyOf": shallow}));
    }
    shallow_object(full)
}

fn shallow_object(full: &Value) -> Option<Value> {
    let props = full["properties"].as_object()?;
    let shallow: Map<String, Value> = props
        .iter()
        .map(|(name, s)| (name.clone(), top_level(s)))
        .collect();
    // A branch of the envelope: the root already says the type.
    Some(json!({"properties": shallow}))
}

/// A property reduced to its constant or its JSON type(s).
fn top_level(s: &Value) -> Value {
    if let Some(c) = s.get("const") {
        return json!({"const": c});
    }
    if let Some(t) = s.get("type") {
        return json!({"type": t});
    }
    let branches = s.get("anyOf").or_else(|| s.get("oneOf"));
    let mut types: Vec<Value> = Vec::new();
    for b in branches.and_then(Value::as_array).into_iter().flatten() {
        match b.get("type") {
            Some(Value::String(t)) => types.push(json!(t)),
            Some(Value::Array(ts)) => types.extend(ts.iter().cloned()),
            _ => return json!({}),
        }
    }
    types.dedup();
    match types.len() {
        0 => json!({}),
        1 => json!({"type": types[0]}),
        _ => json!({"type": types}),
    }
}

/// A field of a prepare tool's `changes` that its object's creation tool describes in the same
/// words (`url` of prepare_webhook_change, of prepare_webhook_creation) is described there only;
/// the instructions say so. Only where whoever sees the one tool sees the other (same actions).
pub fn describe_changes_once(tools: &mut [Tool]) {
    let creations: HashMap<String, (Vec<crate::auth::Action>, Value)> = tools
        .iter()
        .filter(|t| t.spec.kind == Kind::Prepare)
        .map(|t| {
            let props = t.compact["inputSchema"]["properties"].clone();
            (t.spec.name.to_string(), (t.actions.clone(), props))
        })
        .collect();
    for t in tools.iter_mut().filter(|t| t.spec.kind == Kind::Prepare) {
        let creation = format!("prepare_{}_creation", t.spec.target_type());
        let Some((actions, created)) = creations.get(&creation) else {
            continue;
        };
        if *actions != t.actions {
            continue;
        }
        let fields = t
            .compact
            .pointer_mut("/inputSchema/properties/changes/properties")
            .and_then(Value::as_object_mut);
        for (name, field) in fields.into_iter().flatten() {
            let same = field
                .get("description")
                .is_some_and(|d| created[name].get("description") == Some(d));
            if let (true, Some(f)) = (same, field.as_object_mut()) {
                f.remove("description");
            }
        }
    }
}

/// Moves every object subschema of at least [`SHARED_MIN_BYTES`] that occurs more than once into
/// `$defs`, replacing each occurrence by a `$ref`. The root must be an object schema.
pub fn share_repeats(schema: &mut Value) {
    dedupe_branches(schema);
    let mut seen: HashMap<String, usize> = HashMap::new();
    count(schema, &mut seen, true);
    let mut repeated: Vec<String> = seen
        .into_iter()
        .filter(|(s, n)| *n > 1 && s.len() >= SHARED_MIN_BYTES)
        .map(|(s, _)| s)
        .collect();
    if repeated.is_empty() {
        return;
    }
    // Largest first, so a repeated schema inside a larger repeated one is shared from inside it.
    repeated.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    let mut names: HashMap<String, String> = HashMap::new();
    let mut defs = Map::new();
    for (i, text) in repeated.iter().enumerate() {
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            continue;
        };
        let name = v["properties"]["object"]["const"]
            .as_str()
            .filter(|n| !defs.contains_key(*n))
            .map_or_else(|| format!("shared{i}"), str::to_string);
        names.insert(text.clone(), name.clone());
        defs.insert(name, v);
    }
    replace(schema, &names, true);
    for v in defs.values_mut() {
        replace(v, &names, true);
    }
    if let Some(m) = schema.as_object_mut() {
        m.insert("$defs".into(), Value::Object(defs));
    }
}

/// `anyOf: [A, A, B]` is `anyOf: [A, B]`.
fn dedupe_branches(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Array(branches)) = m.get_mut("anyOf") {
                let mut kept: Vec<Value> = Vec::with_capacity(branches.len());
                for b in branches.drain(..) {
                    if !kept.contains(&b) {
                        kept.push(b);
                    }
                }
                *branches = kept;
            }
            m.values_mut().for_each(dedupe_branches);
        }
        Value::Array(items) => items.iter_mut().for_each(dedupe_branches),
        _ => {}
    }
}

fn count(v: &Value, seen: &mut HashMap<String, usize>, root: bool) {
    match v {
        Value::Object(m) => {
            if !root && m.get("type") == Some(&json!("object")) {
                *seen.entry(v.to_string()).or_default() += 1;
            }
            m.values().for_each(|c| count(c, seen, false));
        }
        Value::Array(items) => items.iter().for_each(|c| count(c, seen, false)),
        _ => {}
    }
}

fn replace(v: &mut Value, names: &HashMap<String, String>, root: bool) {
    if !root {
        if let Some(name) = names.get(&v.to_string()) {
            *v = json!({"$ref": format!("#/$defs/{name}")});
            return;
        }
    }
    match v {
        Value::Object(m) => m.values_mut().for_each(|c| replace(c, names, false)),
        Value::Array(items) => items.iter_mut().for_each(|c| replace(c, names, false)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tool's arguments as the catalogue builds them (an object of the route's parameters,
    /// which no Rust type holds), from these parameter schemas.
    fn arguments(properties: Value) -> Value {
        let Value::Object(properties) = properties else {
            panic!("properties")
        };
        crate::mcp::catalogue::object_schema(properties, Vec::new())
    }

    #[test]
    fn compact_inputs_keep_what_a_caller_needs() {
        use crate::routes::date_range::FROM_DESCRIPTION;
        let mut changes = arguments(json!({
            "name": {"type": "string", "maxLength": 9, "pattern": "x".repeat(50)},
            "media_id": {"anyOf": [{"type": "string", "pattern": "^med_"}, {"type": "null"}]}}));
        changes["minProperties"] = json!(1);
        changes["description"] = json!("The fields to change.");
        let input = arguments(json!({
            "device_id": {"type": "string", "minLength": 1, "maxLength": 100, "pattern": ID_PATTERN, "description": "The device id (`dev_…`), as returned by list_devices."},
            "ad_id": {"type": "string", "minLength": 1, "maxLength": 100, "pattern": ID_PATTERN, "description": "The ad (`ad_…`) to show first."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20, "description": "How many."},
            "cursor": {"type": "string", "pattern": "^dev_[0-9A-Za-z]{1,64}$", "description": "Long text."},
            "company_id": {"type": "string", "pattern": "^cmp_[0-9A-Za-z]{1,64}$", "description": "Only this company."},
            "from": {"type": "string", "format": "date-time", "description": FROM_DESCRIPTION},
            "status": {"type": "string", "enum": ["on", "off"], "description": "Only things in this status."},
            "colour": {"type": "string", "enum": ["red", "blue"], "description": "`red`: hot; `blue`: cold."},
            "changes": changes}));
        assert_eq!(input["required"], json!([]));
        // A read's output: the REST object's schema.
        let device = crate::jsonschema::response::<Device>();
        let full = json!({"name": "t", "annotations": {"title": "T", "readOnlyHint": true},
            "inputSchema": input, "outputSchema": device});
        let c = definition(&full, Kind::Read);
        assert_eq!(c["annotations"], json!({"readOnlyHint": true}));
        let write = json!({"description": "Prepare x. This executes NOTHING: blah.",
            "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false}});
        let cw = definition(&write, Kind::Prepare);
        assert_eq!(
            cw["annotations"],
            json!({"destructiveHint": false, "openWorldHint": false})
        );
        assert_eq!(cw["description"], format!("Prepare x.{PREPARE_NOTE}"));
        let p = &c["inputSchema"]["properties"];
        // An id that only names its object: its name and the instructions say it.
        assert_eq!(p["device_id"], json!({"type": "string"}));
        assert_eq!(p["company_id"], json!({"type": "string"}));
        // One that says more keeps that.
        assert_eq!(
            p["ad_id"],
            json!({"type": "string", "description": "The ad to show first."})
        );
        // The limit of the instructions; the shared `from`.
        assert_eq!(p["limit"], json!({"type": "integer"}));
        assert_eq!(p["from"], json!({"type": "string"}));
        assert_eq!(p["cursor"], json!({"type": "string"}));
        // A read's filter says what its name says; a description of its values stays.
        assert_eq!(
            p["status"],
            json!({"type": "string", "enum": ["on", "off"]})
        );
        assert_eq!(p["colour"], full["inputSchema"]["properties"]["colour"]);
        assert!(c["inputSchema"].get("additionalProperties").is_none());
        // At least one, and only the fields' types: the instructions say the rest.
        let mut changes = arguments(json!({
            "name": {"type": "string", "maxLength": 9},
            "media_id": {"type": ["string", "null"], "pattern": "^med_"}}));
        let m = changes.as_object_mut().unwrap();
        m.remove("additionalProperties");
        m.remove("required");
        m.insert("minProperties".into(), json!(1));
        assert_eq!(p["changes"], changes);
        assert!(c["inputSchema"].get("required").is_none());
        assert!(
            c.get("outputSchema").is_none(),
            "a read of one object has none"
        );
        // A limit of its own keeps its own bounds.
        let mut own = full.clone();
        own["inputSchema"]["properties"]["limit"]["default"] = json!(10);
        let c = definition(&own, Kind::Read);
        assert_eq!(
            c["inputSchema"]["properties"]["limit"],
            json!({"type": "integer", "default": 10})
        );
    }

    /// The limit the instructions describe is every list route's.
    #[test]
    fn the_limit_of_the_instructions_is_the_routes() {
        let p = crate::http::router::LIMIT_PARAM;
        let schema: Value = match p.schema {
            crate::http::router::ParamSchema::Json(s) => serde_json::from_str(s).unwrap(),
            _ => panic!("a JSON schema"),
        };
        assert_eq!(schema["maximum"], json!(LIMIT_MAX));
        assert_eq!(schema["default"], json!(LIMIT_DEFAULT));
    }

    /// A read's answer, for its output schema.
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Device {
        #[schemars(regex(pattern = "^dev_"))]
        id: String,
    }

    #[test]
    fn compact_outputs_keep_the_envelope() {
        let preview = crate::mcp::envelope::preview_schema(json!({}));
        assert!(output(&preview, Kind::Read).is_none());
        // Every prepare tool answers the same pending change: described once, by the instructions.
        assert!(output(&preview, Kind::Prepare).is_none());
        let out = output(&preview, Kind::Confirm).unwrap();
        assert_eq!(
            out["properties"]["object"],
            json!({"const": "pending_change"})
        );
        assert_eq!(out["properties"]["differences"], json!({"type": "array"}));
        assert_eq!(
            out["properties"]["cost"],
            json!({"type": ["null", "object"]})
        );
        assert_eq!(out["properties"]["current"], json!({}));
        // With its structured-error branch, each branch's top level under the full root's type.
        let mut error = crate::mcp::failure::schema_branch();
        error["properties"]["preview"] = json!({"type": ["object", "null"]});
        let both = json!({"type": preview["type"], "anyOf": [preview, error]});
        let out = output(&both, Kind::Confirm).unwrap();
        assert_eq!(out["type"], preview["type"]);
        assert_eq!(
            out["anyOf"][0]["properties"]["object"],
            json!({"const": "pending_change"})
        );
        assert_eq!(
            out["anyOf"][1]["properties"]["preview"],
            json!({"type": ["object", "null"]})
        );
    }

    /// An object the confirmations answer, with a description long enough to be shared.
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Ad {
        #[schemars(extend("const" = "ad"))]
        object: &'static str,
        /// The ad's name, as its company wrote it: shown on the console and in every preview of
        /// a change to the ad, and long enough that its schema is worth sharing once.
        name: String,
    }

    /// What a change answers: the ad, the same ad again, or any object; and the ad before.
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Answer {
        result: Outcome,
        before: Ad,
    }

    #[derive(schemars::JsonSchema)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum Outcome {
        Ad(Ad),
        Again(Ad),
        Other(Map<String, Value>),
    }

    #[test]
    fn repeated_subschemas_are_shared() {
        let ad = crate::jsonschema::response::<Ad>();
        let mut s = crate::jsonschema::response::<Answer>();
        let other = s["properties"]["result"]["anyOf"][2].clone();
        assert_eq!(s["properties"]["result"]["anyOf"][0], ad);
        assert!(ad.to_string().len() >= SHARED_MIN_BYTES);
        share_repeats(&mut s);
        assert_eq!(
            s["properties"]["result"]["anyOf"],
            json!([{"$ref": "#/$defs/ad"}, other])
        );
        assert_eq!(s["properties"]["before"]["$ref"], "#/$defs/ad");
        assert_eq!(s["$defs"]["ad"], ad);
    }
}
