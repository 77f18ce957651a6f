//! The catalogue: each tool of [`super::spec`] with its route(s), the actions that make it visible,
//! and its `tools/list` definition, built from the route table at first use.
//!
//! Input schemas take the route's own path and query parameters (and, for a change, the fields of
//! its body schema); output schemas are the route's success schema with `$ref`s inlined from the
//! schemas the router carries. Neither can drift from the REST contract.

use super::envelope::{cancel_schema, confirm_schema, no_body_schema, preview_schema};
use super::spec::{self, Kind, ToolSpec};
use super::tool::Tool;
use crate::auth::{Action, Principal};
use crate::http::router::{Change, RequestBody, Route, Router};
use crate::jsonschema::ID_PATTERN;
use crate::redact;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

pub struct Catalog {
    pub tools: Vec<Tool>,
    /// The operations `confirm_change` can execute.
    pub write_operations: Vec<&'static str>,
    by_name: HashMap<&'static str, usize>,
}

impl Catalog {
    pub fn build(router: &Router) -> Catalog {
        let write_operations = spec::write_operations(router);
        let mut tools: Vec<Tool> = spec::specs(router)
            .into_iter()
            .map(|spec| build_tool(spec, router, &write_operations))
            .collect();
        super::compact::describe_changes_once(&mut tools);
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.spec.name, i))
            .collect();
        Catalog {
            tools,
            write_operations,
            by_name,
        }
    }

    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// How the answer of the GET route `operation` is redacted: the shape of the read tool that
    /// calls it, or undeclared.
    pub fn shape_of(&self, operation: &str) -> &redact::Shape {
        static ANY: redact::Shape = redact::Shape::Any;
        self.tools
            .iter()
            .find(|t| {
                t.spec.kind == Kind::Read
                    && t.route
                        .as_ref()
                        .is_some_and(|r| r.operation_id == operation)
            })
            .map_or(&ANY, |t| &t.shape)
    }

    /// The tools this principal may use, in catalogue order.
    pub fn visible<'a>(&'a self, p: &'a Principal) -> impl Iterator<Item = &'a Tool> + 'a {
        self.tools.iter().filter(move |t| t.allowed(p))
    }
}

fn build_tool(spec: ToolSpec, router: &Router, writes: &[&'static str]) -> Tool {
    let route = match spec.kind {
        Kind::Confirm | Kind::Cancel => None,
        _ => router.by_operation(spec.operation).cloned(),
    };
    let read_route = match spec.kind {
        Kind::Prepare => route
            .as_ref()
            .and_then(|w| spec::read_route(router, w))
            .cloned(),
        _ => None,
    };
    let actions: Vec<Action> = match spec.kind {
        Kind::Read => route.iter().map(|r| r.action).collect(),
        Kind::Prepare => match (&route, &read_route) {
            (Some(w), Some(_)) => vec![w.action],
            _ => Vec::new(),
        },
        Kind::Confirm | Kind::Cancel => writes
            .iter()
            .filter_map(|op| router.by_operation(op))
            .map(|r| r.action)
            .collect(),
    };
    let input_schema = input_schema(&spec, route.as_ref(), router);
    let output_schema = output_schema(&spec, route.as_ref(), read_route.as_ref(), router, writes);
    let shape = match (spec.kind, &output_schema) {
        (Kind::Read, Some(schema)) => redact::Shape::of_schema(schema),
        _ => redact::Shape::Any,
    };
    // A prepare tool changes nothing a user owns (it stores a confirmation only its caller can
    // use): read-only, so a client asks its user once, at confirm_change. Cancelling twice
    // answers the same (see `pending::cancel`).
    let (read_only, destructive, idempotent) = match spec.kind {
        Kind::Read | Kind::Prepare => (true, false, true),
        Kind::Confirm => (false, true, false),
        Kind::Cancel => (false, false, true),
    };
    // confirm_change may make the server send a request to a URL outside the sandbox (a webhook
    // test or redelivery); nothing else reaches past the sandbox.
    let open_world = spec.kind == Kind::Confirm;
    let mut annotations =
        json!({"title": spec.title, "readOnlyHint": read_only, "openWorldHint": open_world});
    if !read_only {
        annotations["destructiveHint"] = json!(destructive);
        annotations["idempotentHint"] = json!(idempotent);
    }
    let mut definition = json!({
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "inputSchema": input_schema,
    });
    if let Some(mut out) = output_schema {
        if let Some(r) = &route {
            out = super::links::output_schema(r.operation_id, out);
            out = super::brief::output_schema(r.operation_id, out);
        }
        let mut out = with_error_branch(out);
        super::compact::share_repeats(&mut out);
        definition["outputSchema"] = out;
    }
    definition["annotations"] = annotations;
    let compact = super::compact::definition(&definition, spec.kind);
    Tool {
        spec,
        route,
        read_route,
        actions,
        input_schema,
        definition,
        compact,
        shape,
    }
}

/// An output schema that also admits the structured content of an error result
/// ([`super::failure`]): an object schema of two branches, success or error. The root is MCP's
/// (an output schema is an object schema); each branch is derived from its type.
fn with_error_branch(success: Value) -> Value {
    let mut branch = success;
    if let Value::Object(m) = &mut branch {
        m.remove("type");
    }
    json!({"type": "object", "anyOf": [branch, super::failure::schema_branch()]})
}

fn id_schema(description: &str) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 100, "pattern": ID_PATTERN, "description": description})
}

/// A tool's arguments, or an update's `changes`: an object of the route's parameters and body
/// fields, which no Rust type holds (they are picked per tool from the route table).
pub(super) fn object_schema(properties: Map<String, Value>, required: Vec<String>) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

fn input_schema(spec: &ToolSpec, route: Option<&Route>, router: &Router) -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    for (name, description) in spec.path_args {
        props.insert(name.to_string(), id_schema(description));
        required.push(name.to_string());
    }
    match spec.kind {
        Kind::Read => {
            for q in route.map(|r| r.query.as_slice()).unwrap_or(&[]) {
                let mut s = as_boolean(&q.schema.0).unwrap_or_else(|| q.schema.0.clone());
                if !q.description.is_empty() {
                    s["description"] = json!(q.description);
                }
                props.insert(q.name.to_string(), s);
                if q.required {
                    required.push(q.name.to_string());
                }
            }
        }
        Kind::Prepare => match (spec.change, route) {
            (Some(Change::Fields(fields)), Some(route)) => {
                props.insert("changes".into(), changes_schema(route, fields, router));
                required.push("changes".into());
            }
            (Some(Change::Body(fields) | Change::Batch { fields, .. }), Some(route)) => {
                body_fields(route, fields, router, &mut props, &mut required);
            }
            (Some(Change::Upload { max_bytes }), Some(route)) => {
                upload_fields(route, max_bytes, &mut props, &mut required);
            }
            _ => {}
        },
        Kind::Confirm | Kind::Cancel => {
            props.insert(
                "confirmation_id".into(),
                json!({"type": "string", "minLength": 1, "maxLength": 100,
                    "description": "The `confirmation_id` a prepare_* tool returned."}),
            );
            required.push("confirmation_id".into());
        }
    }
    object_schema(props, required)
}

/// The named fields of the route's body schema as arguments of their own, required as the body
/// schema says; a field already given as a path argument keeps that argument.
fn body_fields(
    route: &Route,
    fields: &[&str],
    router: &Router,
    props: &mut Map<String, Value>,
    required: &mut Vec<String>,
) {
    let rest = match route.request {
        RequestBody::Json(name) => router.schema(name).map(|s| inline(s, router, 0)),
        _ => None,
    };
    let rest = rest.unwrap_or(Value::Null);
    let needed = rest["required"].as_array().cloned().unwrap_or_default();
    for field in fields {
        if props.contains_key(*field) {
            continue;
        }
        if let Some(s) = rest["properties"].get(*field) {
            props.insert(field.to_string(), s.clone());
            if needed.contains(&json!(field)) {
                required.push(field.to_string());
            }
        }
    }
}

/// An upload's arguments: the route's query parameters (a path argument keeps its own), and the
/// file inline: `content`, its `encoding`, and `content_type` among the route's raw body types.
fn upload_fields(
    route: &Route,
    max_bytes: usize,
    props: &mut Map<String, Value>,
    required: &mut Vec<String>,
) {
    for q in &route.query {
        if props.contains_key(q.name) {
            continue;
        }
        let mut s = q.schema.0.clone();
        if !q.description.is_empty() {
            s["description"] = json!(q.description);
        }
        props.insert(q.name.to_string(), s);
        if q.required {
            required.push(q.name.to_string());
        }
    }
    let types = match route.request {
        RequestBody::Raw(types) => types,
        _ => &[],
    };
    props.insert(
        "content_type".into(),
        json!({"type": "string", "enum": types, "description": "The file's type; its bytes must be of that type."}),
    );
    // Base64 of `max_bytes`, padded.
    let max_len = max_bytes.div_ceil(3) * 4;
    props.insert(
        "content".into(),
        json!({"type": "string", "minLength": 1, "maxLength": max_len,
            "description": format!("The file in base64 (or as text with `encoding: utf-8`), at most {max_bytes} bytes.")}),
    );
    props.insert(
        "encoding".into(),
        json!({"type": "string", "enum": ["base64", "utf-8"], "default": "base64",
            "description": "`utf-8` for a text format such as SVG."}),
    );
    required.extend(["content_type".to_string(), "content".to_string()]);
}

/// A query flag (`"true"` / `"false"`, a string on REST) is a boolean argument: the call passes
/// it back to REST as the string.
fn as_boolean(schema: &Value) -> Option<Value> {
    let flags = schema["type"] == "string"
        && schema["enum"].as_array().is_some_and(|e| {
            e.len() == 2 && e.contains(&json!("true")) && e.contains(&json!("false"))
        });
    flags.then(|| json!({"type": "boolean"}))
}

/// The `changes` argument: the named fields of the route's body schema, with their REST
/// constraints (a field the body schema lacks is left out; a test checks none is), and a
/// description naming the fields that `null` clears.
fn changes_schema(route: &Route, fields: &[&str], router: &Router) -> Value {
    let rest = match route.request {
        RequestBody::Json(name) => router.schema(name).map(|s| inline(s, router, 0)),
        _ => None,
    };
    let rest = rest.unwrap_or(Value::Null);
    let mut props = Map::new();
    for field in fields {
        if let Some(s) = rest["properties"].get(*field) {
            props.insert(field.to_string(), s.clone());
        }
    }
    let nullable: Vec<String> = props
        .iter()
        .filter(|(_, s)| accepts_null(s))
        .map(|(name, _)| format!("`{name}`"))
        .collect();
    let mut description = String::from("The fields to change and their new values; at least one.");
    if let Some((last, rest)) = nullable.split_last() {
        let list = if rest.is_empty() {
            last.clone()
        } else {
            format!("{} or {last}", rest.join(", "))
        };
        description.push_str(&format!(" `null` clears {list}."));
    }
    let mut schema = object_schema(props, Vec::new());
    if let Some(m) = schema.as_object_mut() {
        m.remove("required");
        m.insert("minProperties".into(), json!(1));
        m.insert("description".into(), json!(description));
    }
    schema
}

/// Whether a schema allows `null` (`"type": "null"`, a type list with it, or an `anyOf`/`oneOf`
/// branch that does).
fn accepts_null(schema: &Value) -> bool {
    let typed = match &schema["type"] {
        Value::String(t) => t == "null",
        Value::Array(ts) => ts.iter().any(|t| t == "null"),
        _ => false,
    };
    typed
        || ["anyOf", "oneOf"].iter().any(|k| {
            schema[*k]
                .as_array()
                .is_some_and(|branches| branches.iter().any(accepts_null))
        })
}

/// Replaces `#/components/schemas/X` references with the schemas themselves, and makes properties
/// whose values the redactor replaces accept the replacement.
pub fn inline(schema: &Value, router: &Router, depth: usize) -> Value {
    match schema {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                return match r.strip_prefix("#/components/schemas/") {
                    Some(name) if depth < 16 => router
                        .schema(name)
                        .map(|s| inline(s, router, depth + 1))
                        .unwrap_or_else(|| json!({})),
                    _ => json!({}),
                };
            }
            let mut out = Map::new();
            for (k, v) in m {
                if k == "properties" {
                    if let Value::Object(props) = v {
                        let props = props
                            .iter()
                            .map(|(name, s)| {
                                let s = if redact::is_secret_field(name) {
                                    json!({"type": ["string", "null"], "description": "Always redacted by the MCP server."})
                                } else {
                                    inline(s, router, depth)
                                };
                                (name.clone(), s)
                            })
                            .collect();
                        out.insert(k.clone(), Value::Object(props));
                        continue;
                    }
                }
                out.insert(k.clone(), inline(v, router, depth));
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| inline(v, router, depth)).collect())
        }
        other => other.clone(),
    }
}

/// The route's success body as a JSON Schema (lists become the list envelope), if it is an object.
pub fn success_schema(route: &Route, router: &Router) -> Option<Value> {
    let name = route.success.1?;
    let schema = match name.strip_suffix("List") {
        Some(item) => crate::http::response::list_schema(inline(router.schema(item)?, router, 0)),
        _ => inline(router.schema(name)?, router, 0),
    };
    (schema.get("type").and_then(Value::as_str) == Some("object")).then_some(schema)
}

fn output_schema(
    spec: &ToolSpec,
    route: Option<&Route>,
    read_route: Option<&Route>,
    router: &Router,
    writes: &[&'static str],
) -> Option<Value> {
    match spec.kind {
        Kind::Read => success_schema(route?, router),
        Kind::Prepare => {
            let current = read_route
                .and_then(|r| success_schema(r, router))
                .unwrap_or_else(any_object);
            Some(preview_schema(current))
        }
        Kind::Confirm => {
            let routes: Vec<&Route> = writes
                .iter()
                .filter_map(|op| router.by_operation(op))
                .collect();
            let mut results: Vec<Value> = Vec::new();
            for r in &routes {
                let Some(mut s) = success_schema(r, router) else {
                    continue;
                };
                // A withheld field is never in a result (`confirm::confirm` removes it).
                if let Some(w) = r.tool.and_then(|t| t.withholds) {
                    withhold_in_schema(&mut s, w.field);
                }
                if !results.contains(&s) {
                    results.push(s);
                }
            }
            // A write answered without a body (`204`, an unassignment) reports `{ok, status}`.
            if routes.iter().any(|r| success_schema(r, router).is_none()) {
                results.push(no_body_schema());
            }
            let result = if results.is_empty() {
                any_object()
            } else {
                json!({"anyOf": results})
            };
            Some(confirm_schema(result))
        }
        Kind::Cancel => Some(cancel_schema()),
    }
}

/// An answer whose shape the route table does not say: any JSON object.
fn any_object() -> Value {
    crate::jsonschema::response::<Map<String, Value>>()
}

/// An object schema without one of its properties.
fn withhold_in_schema(schema: &mut Value, field: &str) {
    if let Some(props) = schema["properties"].as_object_mut() {
        props.remove(field);
    }
    if let Some(required) = schema["required"].as_array_mut() {
        required.retain(|r| r != field);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::router::{param, Tool as Decl};
    use crate::http::{ApiError, Ctx, Response};

    fn h(_: &mut Ctx<'_>) -> Result<Response, ApiError> {
        Ok(Response::no_content())
    }

    const THING: &[(&str, &str)] = &[("thing_id", "The thing (`thg_…`).")];
    const LONG: &str = "A description long enough for the completeness checks.";

    /// A small table of its own: the catalogue needs nothing but a router.
    fn router() -> Router {
        let read = Action::Authenticated;
        let write = Action::Admin;
        Router::new(vec![
            Route::get("/things", "listThings", read, h)
                .query(&[param(
                    "colour",
                    r#"{"type":"string","enum":["red","blue"]}"#,
                    "Only this colour.",
                )])
                .ok("ThingList")
                .tool(Decl::read("list_things", "List things", &[], LONG)),
            Route::get("/things/{id}", "getThing", read, h)
                .ok("Thing")
                .tool(Decl::read("get_thing", "Get thing", THING, LONG)),
            Route::patch("/things/{id}", "updateThing", write, h)
                .body("ThingUpdate")
                .ok("Thing")
                .tool(Decl::prepare(
                    "prepare_thing_change",
                    "Change a thing",
                    THING,
                    Change::Fields(&["name", "note", "size"]),
                    LONG,
                )),
            Route::post("/things/{id}/polish", "polishThing", write, h)
                .may_return(&[402])
                .ok("Thing")
                .tool(Decl::prepare(
                    "prepare_thing_polish",
                    "Polish a thing",
                    THING,
                    Change::Sets("polished", true),
                    LONG,
                )),
            // No GET for gadgets: its prepare tool has nothing to preview, and is never listed.
            Route::patch("/gadgets/{id}", "updateGadget", write, h).tool(Decl::prepare(
                "prepare_gadget",
                "Gadget",
                &[("gadget_id", "The gadget.")],
                Change::Sets("on", true),
                LONG,
            )),
        ])
        .with_schemas(vec![
            crate::jsonschema::named_response::<Thing>(),
            crate::jsonschema::named_body::<ThingUpdate>(),
        ])
    }

    /// The thing the table's routes answer.
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Thing {
        id: String,
        name: String,
        api_key: String,
    }

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct ThingUpdate {
        #[schemars(length(max = 10))]
        name: String,
        note: Option<String>,
        // Nullable as a branch rather than a type list: `null` clears it all the same.
        #[schemars(schema_with = "integer_or_null")]
        size: Option<i64>,
        colour: String,
    }

    fn integer_or_null(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"anyOf": [{"type": "integer"}, {"type": "null"}]})
    }

    #[test]
    fn the_catalogue_is_built_from_the_route_table() {
        let router = router();
        let c = Catalog::build(&router);
        let names: Vec<&str> = c.tools.iter().map(|t| t.spec.name).collect();
        assert_eq!(
            names,
            [
                "list_things",
                "get_thing",
                "prepare_thing_change",
                "prepare_thing_polish",
                "prepare_gadget",
                "confirm_change",
                "cancel_change"
            ]
        );
        assert_eq!(
            c.write_operations,
            ["updateThing", "polishThing", "updateGadget"]
        );

        // A read takes the route's query parameters, with their schema and description.
        let list = c.get("list_things").unwrap();
        assert_eq!(
            list.input_schema["properties"]["colour"],
            json!({"type": "string", "enum": ["red", "blue"], "description": "Only this colour."})
        );
        let out = &list.definition["outputSchema"]["anyOf"][0];
        assert_eq!(out["properties"]["object"]["const"], "list");
        let item = &out["properties"]["data"]["items"]["properties"];
        assert_eq!(item["name"], json!({"type": "string"}));
        assert_eq!(
            item["api_key"]["description"],
            "Always redacted by the MCP server."
        );

        let get = c.get("get_thing").unwrap();
        assert_eq!(get.input_schema["required"], json!(["thing_id"]));
        assert_eq!(
            get.input_schema["properties"]["thing_id"]["pattern"],
            ID_PATTERN
        );
        assert_eq!(get.actions, [Action::Authenticated]);
    }

    #[test]
    fn a_prepare_tool_follows_its_route() {
        let router = router();
        let c = Catalog::build(&router);
        let change = c.get("prepare_thing_change").unwrap();
        assert_eq!(change.spec.target_type(), "thing");
        assert_eq!(change.read_route.as_ref().unwrap().operation_id, "getThing");
        assert!(!spec::costs_tokens(change.route.as_ref().unwrap()));
        assert_eq!(
            change.input_schema["required"],
            json!(["thing_id", "changes"])
        );
        // Only the declared fields, with the REST constraints; the description is derived.
        let changes = &change.input_schema["properties"]["changes"];
        assert_eq!(
            changes["properties"],
            json!({"name": {"type": "string", "maxLength": 10}, "note": {"type": ["string", "null"]},
                "size": {"anyOf": [{"type": "integer"}, {"type": "null"}]}})
        );
        assert_eq!(
            changes["description"],
            "The fields to change and their new values; at least one. `null` clears `note` or `size`."
        );
        assert_eq!(
            change.definition["outputSchema"]["anyOf"][0]["properties"]["object"]["const"],
            "pending_change"
        );

        let polish = c.get("prepare_thing_polish").unwrap();
        assert_eq!(polish.read_route.as_ref().unwrap().operation_id, "getThing");
        assert!(spec::costs_tokens(polish.route.as_ref().unwrap()));
        assert_eq!(polish.input_schema["required"], json!(["thing_id"]));

        assert!(!c.get("prepare_gadget").unwrap().available());
        let confirm = c.get("confirm_change").unwrap();
        assert_eq!(confirm.actions, [Action::Admin; 3]);
        assert_eq!(confirm.required_scope(), "admin");
    }
}
