//! The parts of the OpenAPI document that are not operations: info, servers, tags, security
//! schemes, response headers, the problem schema and its catalogue, and the named list envelopes.

use super::problems;
use serde_json::{json, Map, Value};

/// The tags that are not an area's, before the areas' (service, credentials) and after them.
const TAGS_BEFORE_AREAS: &[(&str, &str)] = &[
    ("service", "The service itself: health check and this reference."),
    ("credentials", "The calling credential: who am I (`GET /me`) and the internal-testing login that issues a JWT."),
];
const TAGS_AFTER_AREAS: &[(&str, &str)] = &[
    ("admin", "Account administration: API keys, service clients and the audit log. Needs the `admin` scope."),
    ("sandbox", "Controls of the sandbox itself (reset to the demo world). Not part of the production API."),
    ("mcp", "Operations that exist for the MCP server's two-step writes."),
    ("journal", "The request journal and the readiness report: what your client sent, how each request was answered, and whether the integration is ready to go live. Not part of the production API."),
];

/// Every tag an operation may carry, with its description (declared at the top level of the
/// document): an area's tag is its name and its description is the area's
/// ([`crate::areas::AreaSpec::description`]), in registry order. A route whose tag is missing
/// here fails `reference::every_operation_and_tag_is_described`.
pub fn tag_list() -> Vec<(&'static str, &'static str)> {
    let areas = crate::areas::Area::ALL
        .iter()
        .map(|a| (a.spec().name, a.spec().description));
    TAGS_BEFORE_AREAS
        .iter()
        .copied()
        .chain(areas)
        .chain(TAGS_AFTER_AREAS.iter().copied())
        .collect()
}

pub fn info() -> Value {
    json!({
        "title": "signage sandbox API",
        "version": env!("CARGO_PKG_VERSION"),
        "summary": "REST API of the local digital-signage sandbox.",
        "description": "A local pre-production sandbox of the digital-signage platform, over embedded SQLite with a demo world (companies, devices, ads, promotions) and demo credentials (`fixtures/demo-credentials.json`).\n\n**Authentication.** Send an API key in `X-API-KEY` (or as `Authorization: Bearer <key>`) *together with* its service client id in `X-Service-Client-Id`; or, for internal testing only, the JWT from `POST /auth/login` as a bearer token.\n\n**Lists** are newest first, paged with `limit` and `cursor` (the `next_cursor` of the previous page).\n\n**Writes** accept `Idempotency-Key`; edits and deletes honour `If-Match` with the `ETag` of the last read.\n\n**Errors** are RFC 9457 `application/problem+json`; each `type` is a page under `/problems/`. A human-readable reference is served at `/docs`.",
        "license": {"name": "MIT", "identifier": "MIT"},
        "contact": {"name": "signage maintainers (see README.md)"}
    })
}

pub fn servers() -> Value {
    json!([
        {"url": "http://{host}:{port}", "description": "A sandbox started with `signage serve` (default 127.0.0.1:8080).",
            "variables": {"host": {"default": "127.0.0.1", "description": "The address the sandbox listens on."},
                "port": {"default": "8080", "description": "The port (`--port`, `server.listen`)."}}},
        {"url": "/", "description": "The server this document was fetched from."}
    ])
}

pub fn tags() -> Value {
    tag_list()
        .into_iter()
        .map(|(name, description)| json!({"name": name, "description": description}))
        .collect()
}

pub fn security_schemes() -> Value {
    json!({
        "ApiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-API-KEY",
            "description": "An API key (`sgn_…`). Always sent together with `ClientId`: a key without its client id is 401 `missing_client_id`."},
        "ClientId": {"type": "apiKey", "in": "header", "name": "X-Service-Client-Id",
            "description": "The id of the service client the key belongs to (not a secret). Required with `ApiKeyHeader` or `BearerKey`; a different client's id is 401 `client_mismatch`."},
        "BearerKey": {"type": "http", "scheme": "bearer",
            "description": "The same API key as `Authorization: Bearer <key>`, with `ClientId`. Send the key in one scheme only: the key in both `X-API-KEY` and `Authorization` is accepted only when both are the same key."},
        "BearerJwt": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
            "description": "Login token from `POST /auth/login` (internal testing only). Needs no client id."}
    })
}

pub fn headers() -> Value {
    let string = json!({"type": "string"});
    json!({
        "RequestId": {"description": "Identifies the request in the server log; quote it when reporting a problem.", "schema": string},
        "ETag": {"description": "The strong entity tag of the resource's current version. Send it back in `If-Match` to change or delete exactly this version.", "schema": string},
        "IdempotentReplayed": {"description": "`true` when this response is the stored response of an earlier request with the same `Idempotency-Key`.", "schema": {"type": "string", "enum": ["true"]}},
        "RateLimit": {"description": "The credential's remaining quota (`\"default\";r=<remaining>;t=<seconds to reset>`), on every authenticated response.", "schema": string},
        "RateLimitPolicy": {"description": "The credential's quota policy (`\"default\";q=<burst>;w=<window>`), on every authenticated response.", "schema": string},
        "RetryAfter": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer", "minimum": 0}},
        "WWWAuthenticate": {"description": "The accepted schemes: `Bearer` (with `error` when a credential was refused) and `ApiKey` naming the header.", "schema": string},
        "Allow": {"description": "The methods this path takes.", "schema": string}
    })
}

/// The problem schema: `type` and `code` as named enums whose values are each described.
pub fn problem_schemas() -> Vec<(String, Value)> {
    let codes = problems::codes();
    let code_list: Vec<&str> = codes.iter().map(|c| c.code.as_ref()).collect();
    let code_text: Vec<String> = codes
        .iter()
        .map(|c| format!("- `{}`: {}", c.code, c.description))
        .collect();
    let types: Vec<String> = problems::TYPES
        .iter()
        .map(|t| format!("/problems/{}", t.slug))
        .collect();
    let type_text: Vec<String> = problems::TYPES
        .iter()
        .map(|t| format!("- `/problems/{}` ({}): {}", t.slug, t.status, t.description))
        .collect();
    vec![
        (
            "ProblemCode".into(),
            json!({"type": "string", "enum": code_list,
            "description": format!("Which fixed case of a problem this is, when the problem type has several:\n{}", code_text.join("\n"))}),
        ),
        (
            "ProblemType".into(),
            json!({"type": "string", "enum": types,
            "description": format!("The problem type, a URI reference relative to the server; each is a page:\n{}", type_text.join("\n"))}),
        ),
        (
            "FieldError".into(),
            crate::jsonschema::response::<crate::http::error::FieldError>(),
        ),
        (
            "Problem".into(),
            json!({"type":"object","required":["type","title","status","detail","request_id"],
            "description": "An RFC 9457 problem: every error response has this body, as `application/problem+json`.",
            "properties":{
                "type":{"$ref":"#/components/schemas/ProblemType","description":"The problem type; a page at this path describes it."},
                "title":{"type":"string","description":"A short summary of the problem type.","example":"Not found"},
                "status":{"type":"integer","description":"The HTTP status code.","example":404},
                "detail":{"type":"string","description":"What went wrong with this request, for a human.","example":"No device with id `dev_x` is visible to this credential."},
                "request_id":{"type":"string","description":"The `Request-Id` of the response.","example":"req_0m5d4ruo5fepbn59k9ts"},
                "code":{"$ref":"#/components/schemas/ProblemCode","description":"Which fixed case it is: a specific case where the type has several (401, some 400s), else the type's own slug with underscores (`not_found`)."},
                "missing_scope":{"type":"string","description":"403 `missing-scope`: the scope the credential lacks.","example":"devices:write"},
                "current_etag":{"type":"string","description":"412: the resource's current ETag.","example":"\"3\""},
                "balance":{"type":"integer","description":"402: the company's token balance.","example":5},
                "required":{"type":"integer","description":"402: what the operation costs.","example":10},
                "resource_id":{"type":["string","null"],"description":"409 `secret-not-replayable`: the id of what the first request created.","example":"key_0m5d4ruo5fepbn59k9ts"},
                "violated-policies":{"type":"array","items":{"type":"string"},"description":"429 `rate-limited`: the exceeded policies.","example":["default"]},
                "errors":{"type":"array","items":{"$ref":"#/components/schemas/FieldError"},"description":"422: each invalid field."}}}),
        ),
    ]
}

/// A problem response of `status`: its description lists the problem types it may be.
pub fn problem_response(status: u16, description: &str) -> Value {
    let kinds: Vec<&problems::ProblemType> = problems::TYPES
        .iter()
        .filter(|t| t.status == status)
        .collect();
    let mut text = description.to_string();
    if !kinds.is_empty() {
        let links: Vec<String> = kinds
            .iter()
            .map(|t| format!("[`{}`](/problems/{})", t.slug, t.slug))
            .collect();
        text.push_str(&format!(" Problem type: {}.", links.join(", ")));
    }
    let mut headers = json!({"Request-Id": {"$ref": "#/components/headers/RequestId"}});
    match status {
        401 => {
            headers["WWW-Authenticate"] = json!({"$ref": "#/components/headers/WWWAuthenticate"})
        }
        405 => headers["Allow"] = json!({"$ref": "#/components/headers/Allow"}),
        412 => headers["ETag"] = json!({"$ref": "#/components/headers/ETag"}),
        429 | 503 => headers["Retry-After"] = json!({"$ref": "#/components/headers/RetryAfter"}),
        _ => {}
    }
    let mut media = json!({"schema": {"$ref": "#/components/schemas/Problem"}});
    if let Some(t) = kinds.first() {
        media["example"] = json!({"type": format!("/problems/{}", t.slug), "title": t.title,
            "status": status, "detail": t.description, "request_id": "req_0m5d4ruo5fepbn59k9ts"});
    }
    json!({"description": text, "headers": headers,
        "content": {"application/problem+json": media}})
}

/// The list envelope of `item`: `{object: "list", data: [item], has_more, next_cursor}`.
pub fn list_schema(item: &str) -> Value {
    let mut schema =
        crate::http::response::list_schema(json!({"$ref": format!("#/components/schemas/{item}")}));
    schema["description"] = json!(format!("A page of `{item}` objects, newest first."));
    schema
}

/// Moves every inline string enum of the component schemas into a named component, referenced
/// everywhere the same set of values appears (`DevicePlatform` once, for `Device`,
/// `DeviceCreate` and `DeviceUpdate`). The name is the first schema's name and the property's.
/// Returns value set → component name, for the query parameters.
pub fn hoist_enums(schemas: &mut Map<String, Value>) -> Vec<(Vec<String>, String)> {
    let mut found: Vec<(Vec<String>, String)> = Vec::new();
    let mut named: Vec<(String, Value)> = Vec::new();
    let names: Vec<String> = schemas.keys().cloned().collect();
    for name in names {
        if let Some(schema) = schemas.get_mut(&name) {
            for_each_property(schema, &name, &mut |owner, prop, node| {
                hoist(
                    node,
                    &format!("{owner}{}", pascal(prop)),
                    &mut found,
                    &mut named,
                )
            });
        }
    }
    for (name, schema) in named {
        schemas.entry(name).or_insert(schema);
    }
    found
}

/// Replaces an enum schema by a `$ref` to the component of its values (created if new).
pub fn hoist(
    node: &mut Value,
    name: &str,
    found: &mut Vec<(Vec<String>, String)>,
    named: &mut Vec<(String, Value)>,
) {
    let Some(obj) = node.as_object_mut() else {
        return;
    };
    if obj.get("type") != Some(&json!("string")) {
        return;
    }
    let Some(values) = obj.get("enum").and_then(Value::as_array) else {
        return;
    };
    let mut key: Vec<String> = values
        .iter()
        .filter_map(|v| v.as_str().map(String::from))
        .collect();
    key.sort();
    let target = match found.iter().find(|(k, _)| *k == key) {
        Some((_, n)) => n.clone(),
        None => {
            let mut n = name.to_string();
            while named.iter().any(|(x, _)| *x == n) {
                n.push('_');
            }
            let values = obj.get("enum").cloned().unwrap_or(Value::Null);
            named.push((n.clone(), json!({"type": "string", "enum": values})));
            found.push((key, n.clone()));
            n
        }
    };
    obj.remove("type");
    obj.remove("enum");
    obj.insert(
        "$ref".into(),
        json!(format!("#/components/schemas/{target}")),
    );
}

/// Calls `f(owner, property, schema)` for each property of `schema` and of the objects nested in
/// it (array items, `anyOf`/`oneOf` branches); the owner of a nested object's properties is its
/// parent property's name.
fn for_each_property(schema: &mut Value, owner: &str, f: &mut dyn FnMut(&str, &str, &mut Value)) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for (prop, sub) in props.iter_mut() {
            f(owner, prop, sub);
            for_each_property(sub, &format!("{owner}{}", pascal(prop)), f);
        }
    }
    if let Some(items) = obj.get_mut("items") {
        f(owner, "", items);
        for_each_property(items, owner, f);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = obj.get_mut(key) {
            for b in branches {
                f(owner, "", b);
                for_each_property(b, owner, f);
            }
        }
    }
}

/// `event_types` → `EventTypes`.
pub fn pascal(s: &str) -> String {
    s.split(['_', '-', '.'])
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(first) => first.to_uppercase().chain(c).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}
