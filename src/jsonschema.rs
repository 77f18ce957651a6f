//! A small JSON Schema checker: the subset of JSON Schema our own schemas use (`type`, `enum`,
//! `const`, lengths, bounds, `properties`, `required`, `additionalProperties`, `minProperties`,
//! `items`, and the id pattern). MCP checks tool arguments with it before a call; [`check_schema`]
//! refuses, at start-up, a schema that uses anything else (a typo such as `"maxLenght"` or
//! `"type": "strnig"` would otherwise be ignored and check nothing).
//!
//! Lowest layer: it knows JSON values and nothing of HTTP, routes or MCP.

use serde_json::{Map, Value};

/// `^[0-9A-Za-z_]+$`, checked by hand (no regex engine on the request path).
pub const ID_PATTERN: &str = "^[0-9A-Za-z_]+$";

/// The keywords a schema of ours may use; [`check_schema`] refuses any other.
const KEYWORDS: &[&str] = &[
    "type",
    "enum",
    "const",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "properties",
    "required",
    "additionalProperties",
    "minProperties",
    "maxProperties",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "default",
    "description",
    "title",
    "examples",
    "$ref",
    "anyOf",
    "oneOf",
    "allOf",
    "readOnly",
    "writeOnly",
    "deprecated",
    "nullable",
];

const TYPES: &[&str] = &[
    "string", "integer", "number", "boolean", "object", "array", "null",
];

/// Refuses a schema with an unknown keyword, an unknown type, or a malformed `properties`,
/// `required`, `enum` or `items`, naming where (`at`) it is.
pub fn check_schema(schema: &Value, at: &str) -> Result<(), String> {
    let Some(s) = schema.as_object() else {
        return Err(format!("{at}: a schema must be an object"));
    };
    for (k, v) in s {
        if !KEYWORDS.contains(&k.as_str()) {
            return Err(format!("{at}: unknown keyword `{k}`"));
        }
        match k.as_str() {
            "type" => {
                let ok = match v {
                    Value::String(t) => TYPES.contains(&t.as_str()),
                    Value::Array(ts) => {
                        !ts.is_empty()
                            && ts
                                .iter()
                                .all(|t| t.as_str().is_some_and(|t| TYPES.contains(&t)))
                    }
                    _ => false,
                };
                if !ok {
                    return Err(format!("{at}: unknown type {v}"));
                }
            }
            "properties" => {
                let Some(props) = v.as_object() else {
                    return Err(format!("{at}: `properties` must be an object"));
                };
                for (name, p) in props {
                    check_schema(p, &format!("{at}/{name}"))?;
                }
            }
            "items" => check_schema(v, &format!("{at}/items"))?,
            "additionalProperties" if !v.is_boolean() => {
                check_schema(v, &format!("{at}/additionalProperties"))?
            }
            "anyOf" | "oneOf" | "allOf" => {
                for (i, x) in v.as_array().into_iter().flatten().enumerate() {
                    check_schema(x, &format!("{at}/{k}/{i}"))?;
                }
            }
            "required" | "enum" if !v.is_array() => {
                return Err(format!("{at}: `{k}` must be an array"))
            }
            "minLength" | "maxLength" | "minProperties" | "maxProperties" | "minItems"
            | "maxItems"
                if !v.is_u64() =>
            {
                return Err(format!("{at}: `{k}` must be a non-negative integer"))
            }
            "minimum" | "maximum" if !v.is_number() => {
                return Err(format!("{at}: `{k}` must be a number"))
            }
            "pattern" | "format" | "description" | "title" | "$ref" if !v.is_string() => {
                return Err(format!("{at}: `{k}` must be a string"))
            }
            _ => {}
        }
    }
    Ok(())
}

/// The schema of what `T` serializes to: a response body. Every member it writes is required
/// (an `Option` is written as `null`), descriptions come from its doc comments.
pub fn response<T: schemars::JsonSchema>() -> Value {
    derived::<T>(schemars::generate::SchemaSettings::draft2020_12().for_serialize())
}

/// The schema of what `T` deserializes from: a request body. A member with a default is optional;
/// `#[serde(deny_unknown_fields)]` refuses any other.
pub fn body<T: schemars::JsonSchema>() -> Value {
    derived::<T>(schemars::generate::SchemaSettings::draft2020_12().for_deserialize())
}

/// `(name, schema)` of [`response`], named by the type (`#[schemars(rename = …)]` where the
/// component's name differs from the type's).
pub fn named_response<T: schemars::JsonSchema>() -> (&'static str, Value) {
    (leak_name::<T>(), response::<T>())
}

/// `(name, schema)` of [`body`].
pub fn named_body<T: schemars::JsonSchema>() -> (&'static str, Value) {
    (leak_name::<T>(), body::<T>())
}

/// A field that is the named component `T`, by reference (`#[schemars(transform =
/// jsonschema::component::<T>)]`): the component is described once, where it is named; the
/// field keeps its own doc comment (what this member is), if it has one.
pub fn component<T: schemars::JsonSchema>(schema: &mut schemars::Schema) {
    let description = schema.remove("description");
    *schema = schemars::json_schema!({ "$ref": reference::<T>() });
    if let Some(description) = description {
        schema.insert("description".into(), description);
    }
}

/// A list field whose items are the named component `T`, by reference (`#[schemars(transform =
/// jsonschema::items::<T>)]`).
pub fn items<T: schemars::JsonSchema>(schema: &mut schemars::Schema) {
    schema.insert(
        "items".into(),
        serde_json::json!({ "$ref": reference::<T>() }),
    );
}

/// No `default` on a field's schema: `#[serde(default)]` of a struct whose default is "nothing
/// asked" (every member absent) says nothing a reader needs (`transform = jsonschema::no_default`).
pub fn no_default(schema: &mut schemars::Schema) {
    schema.remove("default");
}

fn reference<T: schemars::JsonSchema>() -> String {
    format!("#/components/schemas/{}", T::schema_name())
}

/// The component name of `T`: built once per type at start-up, so keeping it is bounded.
fn leak_name<T: schemars::JsonSchema>() -> &'static str {
    match T::schema_name() {
        std::borrow::Cow::Borrowed(name) => name,
        std::borrow::Cow::Owned(name) => Box::leak(name.into_boxed_str()),
    }
}

/// Lets a field's derived schema also take `null` (after a transform that set one `type`):
/// `#[schemars(transform = &TAGLINE, transform = or_null)]`.
pub fn or_null(schema: &mut schemars::Schema) {
    if let Some(Value::String(t)) = schema.get("type").cloned() {
        schema.insert("type".into(), serde_json::json!([t, "null"]));
    }
}

/// An HTTP status or a count whose range says nothing a reader needs: an integer, without the
/// bounds its Rust width derives (`transform = jsonschema::plain_integer`).
pub fn plain_integer(schema: &mut schemars::Schema) {
    schema.remove("minimum");
    schema.remove("maximum");
}

/// A member left out when it has no value (`#[serde(skip_serializing_if = "Option::is_none")]`)
/// is never `null`: `#[schemars(transform = jsonschema::absent_when_none)]` takes `null` out of
/// the type the `Option` derives.
pub fn absent_when_none(schema: &mut schemars::Schema) {
    if let Some(Value::Array(types)) = schema.get("type").cloned() {
        let kept: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
        let kept = match <[Value; 1]>::try_from(kept) {
            Ok([one]) => one,
            Err(many) => Value::Array(many),
        };
        schema.insert("type".into(), kept);
    }
}

/// A field whose value is a component with no Rust type of its own (an enum the document hoists
/// and names, `QrScanAgentClass`), by reference: `#[schemars(transform = Component("Name"))]`. A
/// field of a Rust type is [`component`]`::<T>`.
pub struct Component(pub &'static str);

impl schemars::transform::Transform for Component {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        let description = schema.remove("description");
        *schema = schemars::json_schema!({"$ref": format!("#/components/schemas/{}", self.0)});
        if let Some(description) = description {
            schema.insert("description".into(), description);
        }
    }
}

/// A list's item rule: `#[schemars(transform = Items(&OneOf(EVENT_TYPES)))]` applies the inner
/// transform to `items` (schemars' `inner(…)` takes only its own validation keywords).
pub struct Items<T>(pub T);

impl<T: schemars::transform::Transform> schemars::transform::Transform for Items<T> {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        if let Some(items) = schema.get_mut("items") {
            if let Ok(items) = <&mut schemars::Schema>::try_from(items) {
                self.0.transform(items);
            }
        }
    }
}

fn derived<T: schemars::JsonSchema>(settings: schemars::generate::SchemaSettings) -> Value {
    let settings = settings.with(|s| {
        s.meta_schema = None;
        s.inline_subschemas = true;
    });
    let mut value = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Some(root) = value.as_object_mut() {
        root.remove("title");
    }
    our_dialect(&mut value);
    value
}

/// Brings a derived schema to the subset [`check_schema`] accepts and the documents have always
/// used: no storage formats (`int64`, `uint32`: a JSON number has no width), no `type` beside a
/// `const`, no empty `default`, and an object that lists its properties takes no others.
fn our_dialect(schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if obj.get("format").and_then(Value::as_str).is_some_and(|f| {
        f.starts_with("int") || f.starts_with("uint") || f == "double" || f == "float"
    }) {
        obj.remove("format");
    }
    // `#[serde(default)]` says "absent is empty" (`None`, `""`, `[]`), which a reader assumes
    // anyway; and a doc comment's line breaks are the source's, not paragraphs.
    // A `const` says its type already (the hand-written schemas never repeated it).
    if obj.contains_key("const") {
        obj.remove("type");
    }
    let says_nothing = |v: &Value| {
        v.is_null() || v.as_str() == Some("") || v.as_array().is_some_and(Vec::is_empty)
    };
    if obj.get("default").is_some_and(says_nothing) {
        obj.remove("default");
    }
    if let Some(Value::String(text)) = obj.get_mut("description") {
        *text = unwrap_lines(text);
    }
    if obj.contains_key("properties") && !obj.contains_key("additionalProperties") {
        obj.insert("additionalProperties".into(), Value::Bool(false));
    }
    for (key, sub) in obj.iter_mut() {
        match key.as_str() {
            "properties" => sub
                .as_object_mut()
                .into_iter()
                .flat_map(|m| m.values_mut())
                .for_each(our_dialect),
            "items" | "additionalProperties" => our_dialect(sub),
            "anyOf" | "oneOf" | "allOf" => sub
                .as_array_mut()
                .into_iter()
                .flatten()
                .for_each(our_dialect),
            _ => {}
        }
    }
}

/// A doc comment's text as one paragraph per blank-line-separated block.
fn unwrap_lines(text: &str) -> String {
    text.split("\n\n")
        .map(|paragraph| {
            paragraph
                .split('\n')
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Checks tool arguments (a JSON object) against a tool's input schema.
pub fn validate_arguments(args: &Map<String, Value>, schema: &Value) -> Result<(), String> {
    match schema.as_object() {
        Some(s) => validate_object(args, s, ""),
        None => Ok(()),
    }
}

/// Checks a value against a schema (the subset of JSON Schema our schemas use). Patterns other
/// than the id pattern are left to the REST validation behind the tool.
pub fn validate(v: &Value, schema: &Value, at: &str) -> Result<(), String> {
    let Some(s) = schema.as_object() else {
        return Ok(());
    };
    if let Some(t) = s.get("type") {
        let types: Vec<&str> = match t {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| has_type(v, t)) {
            // The allowed values, when there are few: what a caller needs to get it right.
            let values = match s.get("enum").and_then(Value::as_array) {
                Some(allowed) => {
                    let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
                    format!(" (one of {})", list.join(", "))
                }
                None if types == ["boolean"] => " (`true` or `false`, without quotes)".into(),
                None => String::new(),
            };
            return Err(format!(
                "`{}` must be of type {}{values}.",
                name(at),
                types.join(" or "),
            ));
        }
    }
    if let Some(allowed) = s.get("enum").and_then(Value::as_array) {
        if !allowed.contains(v) {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Err(format!(
                "`{}` must be one of {}.",
                name(at),
                list.join(", ")
            ));
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            return Err(format!("`{}` must be {c}.", name(at)));
        }
    }
    match v {
        Value::String(text) => {
            let len = text.chars().count() as u64;
            if s.get("minLength")
                .and_then(Value::as_u64)
                .is_some_and(|m| len < m)
            {
                return Err(format!("`{}` is too short.", name(at)));
            }
            if s.get("maxLength")
                .and_then(Value::as_u64)
                .is_some_and(|m| len > m)
            {
                return Err(format!("`{}` is too long.", name(at)));
            }
            if s.get("pattern").and_then(Value::as_str) == Some(ID_PATTERN)
                && !text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return Err(format!(
                    "`{}` is not an id (letters, digits and `_`).",
                    name(at)
                ));
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if s.get("minimum")
                .and_then(Value::as_f64)
                .is_some_and(|m| x < m)
            {
                return Err(format!("`{}` must be at least {}.", name(at), s["minimum"]));
            }
            if s.get("maximum")
                .and_then(Value::as_f64)
                .is_some_and(|m| x > m)
            {
                return Err(format!("`{}` must be at most {}.", name(at), s["maximum"]));
            }
        }
        Value::Object(obj) => validate_object(obj, s, at)?,
        Value::Array(items) => {
            if let Some(item) = s.get("items") {
                for (i, x) in items.iter().enumerate() {
                    validate(x, item, &format!("{at}/{i}"))?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn validate_object(
    obj: &Map<String, Value>,
    s: &Map<String, Value>,
    at: &str,
) -> Result<(), String> {
    let props = s.get("properties").and_then(Value::as_object);
    for req in s
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(r) = req.as_str() {
            if !obj.contains_key(r) {
                return Err(format!("`{}` is required.", name(&format!("{at}/{r}"))));
            }
        }
    }
    if s.get("minProperties")
        .and_then(Value::as_u64)
        .is_some_and(|m| (obj.len() as u64) < m)
    {
        return Err(format!("`{}` needs at least one field.", name(at)));
    }
    for (k, x) in obj {
        let path = format!("{at}/{k}");
        match props.and_then(|p| p.get(k)) {
            Some(ps) => validate(x, ps, &path)?,
            None => match s.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    let known: Vec<&str> = props
                        .map(|p| p.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    return Err(if known.is_empty() {
                        format!(
                            "Unknown argument `{}`: this tool takes no arguments.",
                            name(&path)
                        )
                    } else {
                        format!(
                            "Unknown argument `{}`; expected: {}.",
                            name(&path),
                            known.join(", ")
                        )
                    });
                }
                Some(extra @ Value::Object(_)) => validate(x, extra, &path)?,
                _ => {}
            },
        }
    }
    Ok(())
}

fn name(pointer: &str) -> &str {
    let p = pointer.trim_start_matches('/');
    if p.is_empty() {
        "arguments"
    } else {
        p
    }
}

fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "string" => v.is_string(),
        "integer" => {
            v.as_i64().is_some()
                || v.as_u64().is_some()
                || v.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "null" => v.is_null(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A tool's arguments: an ad, and the changes to it (at least one).
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Arguments {
        #[schemars(regex(pattern = ID_PATTERN))]
        ad_id: String,
        #[schemars(extend("minProperties" = 1))]
        changes: Option<Changes>,
    }

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Changes {
        #[schemars(extend("enum" = ["draft", "active"]))]
        status: Option<String>,
        #[schemars(range(min = 1, max = 3600))]
        duration_seconds: Option<u32>,
    }

    #[test]
    fn validation_names_the_argument() {
        let schema = body::<Arguments>();
        assert_eq!(schema["required"], json!(["ad_id"]));
        assert!(check_schema(&schema, "test").is_ok());
        assert!(validate(
            &json!({"ad_id":"ad_1","changes":{"status":"draft"}}),
            &schema,
            ""
        )
        .is_ok());
        let e = validate(&json!({"ad_id":"ad_1","x":1}), &schema, "").unwrap_err();
        assert!(e.contains("Unknown argument `x`"), "{e}");
        let e = validate(&json!({}), &schema, "").unwrap_err();
        assert!(e.contains("`ad_id` is required"), "{e}");
        let e = validate(&json!({"ad_id":"../x"}), &schema, "").unwrap_err();
        assert!(e.contains("not an id"), "{e}");
        let e = validate(
            &json!({"ad_id":"a","changes":{"status":"gone"}}),
            &schema,
            "",
        )
        .unwrap_err();
        assert!(e.contains("changes/status"), "{e}");
        let e = validate(
            &json!({"ad_id":"a","changes":{"duration_seconds":0}}),
            &schema,
            "",
        )
        .unwrap_err();
        assert!(e.contains("at least 1"), "{e}");
        let e = validate(&json!({"ad_id":"a","changes":{}}), &schema, "").unwrap_err();
        assert!(e.contains("at least one"), "{e}");
    }

    #[test]
    fn a_schema_typo_is_refused() {
        for (bad, says) in [
            (json!({"type": "strnig"}), "unknown type"),
            (json!({"type": ["string", 1]}), "unknown type"),
            (
                json!({"type": "string", "maxLenght": 5}),
                "unknown keyword `maxLenght`",
            ),
            (
                json!({"type": "integer", "minimum": "1"}),
                "must be a number",
            ),
            (json!({"type": "string", "enum": "a"}), "must be an array"),
            (
                json!({"properties": {"x": {"tpye": "string"}}}),
                "q/x: unknown keyword",
            ),
            (json!("string"), "must be an object"),
        ] {
            let e = check_schema(&bad, "q").unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        assert!(check_schema(
            &json!({"type": ["string", "null"], "maxLength": 100, "description": "d"}),
            "q"
        )
        .is_ok());
    }
}
