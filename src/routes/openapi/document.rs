//! The OpenAPI 3.1 document, built from the route table: one operation per route.

use super::components::{self, problem_response};
use crate::auth::{Action, Level};
use crate::http::router::{RequestBody, Route, Router};
use crate::routes::payloads::Catalogue;
use hyper::Method;
use serde_json::{json, Map, Value};

fn header_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/headers/{name}")})
}

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// Who may call the operation, for its description.
fn access(action: Action) -> String {
    match action {
        Action::Public => "**Access:** public, no credential needed.".into(),
        Action::Authenticated => "**Access:** any valid credential.".into(),
        Action::Use(area, level) => {
            let scope = match level {
                Level::Read => format!("{}:read", area.name()),
                Level::Write => format!("{}:write", area.name()),
            };
            format!("**Access:** a credential with the `{scope}` scope (else 403 `missing-scope`). A company-scoped credential reaches only its own companies' objects; any other object is 404, exactly like a missing one.")
        }
        Action::Admin => "**Access:** the `admin` scope (else 403 `missing-scope`).".into(),
        Action::Sandbox => "**Access:** the `sandbox` scope of the sandbox operator (else 403 `missing-scope`); no account's `admin` implies it.".into(),
    }
}

/// The operation's description: the route's own text, who may call it, and what it honours.
fn description(route: &Route) -> String {
    let mut parts = vec![route.description.to_string(), access(route.action)];
    if route.idempotent && route.action != Action::Public {
        parts.push("**Retries:** send an `Idempotency-Key`; a retry with the same key and body gets the first response again (with `Idempotent-Replayed: true`).".into());
    }
    if route.conditional {
        parts.push("**Concurrency:** send the `ETag` of your last read in `If-Match`; if the resource changed since, the answer is 412 `precondition-failed` with its current ETag.".into());
    }
    parts.retain(|p| !p.is_empty());
    parts.join("\n\n")
}

fn parameters(route: &Route, enums: &mut Enums) -> Vec<Value> {
    let mut params: Vec<Value> = route
        .path_params()
        .map(|p| {
            let collection = route.path.split("/{").next().unwrap_or("");
            json!({"name": p, "in": "path", "required": true,
                "description": format!("The id of the object at `{collection}/{{{p}}}`."),
                "schema": {"type": "string", "minLength": 1, "maxLength": 100, "pattern": "^[0-9A-Za-z_]+$"}})
        })
        .collect();
    for q in &route.query {
        let mut schema = q.schema.0.clone();
        enums.hoist(&mut schema, route.tag, q.name);
        params.push(
            json!({"name": q.name, "in": "query", "required": q.required,
            "description": q.description, "schema": schema}),
        );
    }
    if route.idempotent && route.action != Action::Public {
        params.push(json!({"name": "Idempotency-Key", "in": "header", "required": false,
            "description": "Any unique string (a UUID, say) per logical request. A retry with the same key, method, path and body replays the first response instead of acting twice; the same key with another request is 409 `idempotency-key-reused`.",
            "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"}}));
    }
    if route.conditional {
        params.push(json!({"name": "If-Match", "in": "header", "required": false,
            "description": "Apply only if the resource still has this ETag (else 412). `*` or a comma-separated list of entity tags; any other value is 400.",
            "schema": {"type": "string", "pattern": crate::http::ctx::IF_MATCH_PATTERN}}));
    }
    if route.may_return.contains(&304) {
        params.push(json!({"name": "If-None-Match", "in": "header", "required": false,
            "description": "The ETag of the copy you hold: if it is still current the answer is 304 with no body.",
            "schema": {"type": "string"}}));
    }
    params
}

fn request_body(route: &Route) -> Option<Value> {
    match route.request {
        RequestBody::None => None,
        RequestBody::Json(schema) => Some(json!({"required": !route.body_optional,
            "content": {"application/json": {"schema": schema_ref(schema)}}})),
        RequestBody::Raw(types) => {
            let content: Map<String, Value> = types
                .iter()
                .map(|t| {
                    (
                        t.to_string(),
                        json!({"schema": {"type": "string", "format": "binary", "minLength": 1}}),
                    )
                })
                .collect();
            let mut content = content;
            if route.multipart {
                content.insert(
                    "multipart/form-data".into(),
                    json!({"schema": {"type": "object", "required": ["file"],
                        "properties": {"file": {"type": "string", "format": "binary",
                            "description": "The file, with its own Content-Type (one of the raw types)."}}},
                        "encoding": {"file": {"contentType": types.join(", ")}}}),
                );
            }
            Some(json!({"required": true, "content": content}))
        }
    }
}

fn success(route: &Route, lists: &mut Vec<String>) -> Value {
    let mut headers = json!({"Request-Id": header_ref("RequestId")});
    if route.etag {
        headers["ETag"] = header_ref("ETag");
    }
    if route.action != Action::Public {
        headers["RateLimit"] = header_ref("RateLimit");
        headers["RateLimit-Policy"] = header_ref("RateLimitPolicy");
        if route.idempotent {
            headers["Idempotent-Replayed"] = header_ref("IdempotentReplayed");
        }
    }
    let text = match route.success.0 {
        201 => "Created.",
        204 => "Done; no body.",
        _ => "Success.",
    };
    let mut out = json!({"description": text, "headers": headers});
    if let Some(schema) = route.success.1 {
        if let Some(item) = schema.strip_suffix("List") {
            if !lists.iter().any(|l| l == item) {
                lists.push(item.to_string());
            }
        }
        out["content"] = json!({"application/json": {"schema": schema_ref(schema)}});
    }
    if !route.produces.is_empty() {
        // A JSON answer stays beside the others (a report that also answers CSV on `Accept`).
        let mut content: Map<String, Value> =
            out["content"].as_object().cloned().unwrap_or_default();
        for m in &route.produces {
            let schema = if m.starts_with("text/csv") || m.starts_with("text/html") {
                json!({"type": "string"})
            } else {
                json!({"type": "string", "format": "binary"})
            };
            content.insert(m.to_string(), json!({ "schema": schema }));
        }
        out["content"] = Value::Object(content);
    }
    out
}

fn responses(route: &Route, lists: &mut Vec<String>) -> Map<String, Value> {
    let mut r = Map::new();
    r.insert(route.success.0.to_string(), success(route, lists));
    let mut add = |status: u16, text: &str| {
        r.insert(status.to_string(), problem_response(status, text));
    };
    add(400, "Malformed request.");
    add(422, "Validation failed: `errors` lists each invalid field.");
    if route.action != Action::Public {
        add(401, "Missing or invalid credential.");
        add(403, "The credential lacks the scope.");
        add(
            429,
            "Over the credential's rate limit: wait `Retry-After` seconds.",
        );
    }
    if route.path.contains('{') || route.action != Action::Public {
        add(404, "Not found, or not visible to this credential.");
    }
    add(405, "Method not allowed.");
    if !matches!(route.request, RequestBody::None) || route.method == Method::POST {
        add(
            409,
            "Conflict with the current state, or an Idempotency-Key misuse.",
        );
        add(413, "Body too large.");
        add(415, "Unsupported media type.");
    }
    if route.conditional {
        add(412, "If-Match did not match the current ETag.");
    }
    if route.operation_id == "login" {
        add(401, "Wrong username or password.");
        add(429, "Too many failed logins: wait `Retry-After` seconds.");
    }
    if route.method == Method::DELETE {
        add(409, "The resource is in use.");
    }
    for status in &route.may_return {
        match status {
            304 => {}
            402 => add(402, "Insufficient token balance."),
            s => add(*s, "See the problem detail."),
        }
    }
    add(500, "Unexpected error.");
    add(503, "Database busy or unavailable: retry shortly.");
    if route.may_return.contains(&304) {
        r.insert(
            "304".into(),
            json!({"description": "Not modified: the `If-None-Match` ETag is current.",
                "headers": {"ETag": header_ref("ETag"), "Request-Id": header_ref("RequestId")}}),
        );
    }
    r
}

/// Inline enums of query parameters, replaced by the named component of the same values.
struct Enums {
    found: Vec<(Vec<String>, String)>,
    named: Vec<(String, Value)>,
}

impl Enums {
    fn hoist(&mut self, schema: &mut Value, tag: &str, param: &str) {
        let name = format!("{}{}", components::pascal(tag), components::pascal(param));
        components::hoist(schema, &name, &mut self.found, &mut self.named);
    }
}

/// Names every inline string enum under `node` (an enum already named keeps its name).
fn hoist_all(node: &mut Value, enums: &mut Enums, name: &str) {
    components::hoist(node, name, &mut enums.found, &mut enums.named);
    match node {
        Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                hoist_all(v, enums, &format!("{name}{}", components::pascal(k)));
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|v| hoist_all(v, enums, name)),
        _ => {}
    }
}

fn operation(route: &Route, enums: &mut Enums, lists: &mut Vec<String>) -> Value {
    let mut op = Map::new();
    op.insert("operationId".into(), json!(route.operation_id));
    op.insert("summary".into(), json!(route.summary));
    op.insert("description".into(), json!(description(route)));
    if !route.tag.is_empty() {
        op.insert("tags".into(), json!([route.tag]));
    }
    let params = parameters(route, enums);
    if !params.is_empty() {
        op.insert("parameters".into(), json!(params));
    }
    if let Some(body) = request_body(route) {
        op.insert("requestBody".into(), body);
    }
    op.insert("responses".into(), Value::Object(responses(route, lists)));
    let security = match route.action {
        Action::Public => json!([]),
        _ => {
            json!([{"ApiKeyHeader": [], "ClientId": []}, {"BearerKey": [], "ClientId": []}, {"BearerJwt": []}])
        }
    };
    op.insert("security".into(), security);
    Value::Object(op)
}

/// Whether a route is an operation of the document (not `/mcp`, JSON-RPC documented in the
/// book's MCP pages, nor the reference pages).
pub fn documented(route: &Route) -> bool {
    route.path != "/mcp" && !route.hidden
}

/// The document of the routes of `router`, and of the event types of `catalogue` (its `webhooks`).
pub fn document(router: &Router, catalogue: &Catalogue) -> Value {
    let mut schemas: Map<String, Value> = router
        .schemas()
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    // A schema only served routes use (the one-time reveal's call) is no component of the
    // document: the router validates with it, the reference does not list it.
    let named = |r: &Route| {
        let body = match r.request {
            RequestBody::Json(s) => Some(s),
            _ => None,
        };
        body.into_iter().chain(r.success.1)
    };
    let listed: std::collections::HashSet<&str> = router
        .routes()
        .iter()
        .filter(|r| documented(r))
        .flat_map(named)
        .collect();
    for route in router.routes().iter().filter(|r| !documented(r)) {
        for name in named(route).filter(|n| !listed.contains(n)) {
            schemas.remove(name);
        }
    }
    let found = components::hoist_enums(&mut schemas);
    let mut enums = Enums {
        found,
        named: Vec::new(),
    };
    let mut lists = Vec::new();
    let mut paths: Map<String, Value> = Map::new();
    for route in router.routes().iter().filter(|r| documented(r)) {
        let op = operation(route, &mut enums, &mut lists);
        let entry = paths
            .entry(route.path.to_string())
            .or_insert_with(|| json!({}));
        entry[route.method.as_str().to_lowercase()] = op;
    }
    // The event payloads' enums are the components' (a webhook's event types, a scan's agent class).
    let mut webhooks = super::webhooks::webhooks(catalogue);
    hoist_all(&mut webhooks, &mut enums, "Event");
    for (name, schema) in enums.named {
        schemas.entry(name).or_insert(schema);
    }
    for item in lists {
        schemas
            .entry(format!("{item}List"))
            .or_insert_with(|| components::list_schema(&item));
    }
    for (name, schema) in components::problem_schemas() {
        schemas.insert(name, schema);
    }
    super::descriptions::describe(&mut schemas);
    schemas.insert(
        "OpenApiDocument".into(),
        json!({"type": "object", "description": "An OpenAPI 3.1 document."}),
    );
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": components::info(),
        "servers": components::servers(),
        "tags": components::tags(),
        "paths": paths,
        "components": {
            "schemas": schemas,
            "headers": components::headers(),
            "securitySchemes": components::security_schemes()
        }
    });
    super::examples::apply(&mut doc);
    doc["webhooks"] = webhooks;
    doc
}
