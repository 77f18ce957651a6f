//! `GET /openapi.json`: the OpenAPI 3.1 document, generated from the route table.

use crate::auth::Action;
use crate::http::router::{RequestBody, Route, Router};
use crate::http::{ApiError, Ctx, Response};
use serde_json::{json, Map, Value};

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/openapi.json", "getOpenApi", Action::Public, get)
            .tag("service")
            .summary("This OpenAPI 3.1 document.")
            .ok("OpenApiDocument"),
    ]
}

fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    Ok(Response::ok(&document(&ctx.app.router)))
}

fn problem_schema() -> Value {
    json!({"type":"object","required":["type","title","status","detail","request_id"],
        "properties":{"type":{"type":"string","format":"uri"},"title":{"type":"string"},
            "status":{"type":"integer"},"detail":{"type":"string"},"request_id":{"type":"string"},
            "code":{"type":"string"},"missing_scope":{"type":"string"},"current_etag":{"type":"string"},
            "balance":{"type":"integer"},"required":{"type":"integer"},
            "errors":{"type":"array","items":{"type":"object","required":["field","code","message"],
                "properties":{"field":{"type":"string"},"code":{"type":"string"},"message":{"type":"string"}}}}}})
}

fn problem_response(description: &str) -> Value {
    json!({"description": description, "headers": {"Request-Id": {"$ref": "#/components/headers/RequestId"}},
        "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}})
}

fn list_schema(item: &str) -> Value {
    json!({"type":"object","additionalProperties":false,"required":["object","data","has_more","next_cursor"],
        "properties":{"object":{"const":"list"},"data":{"type":"array","items":{"$ref": format!("#/components/schemas/{item}")}},
            "has_more":{"type":"boolean"},"next_cursor":{"type":["string","null"]}}})
}

pub fn document(router: &Router) -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for route in router.routes() {
        if route.path == "/mcp" {
            continue; // JSON-RPC, documented in the README rather than as REST.
        }
        let mut op = Map::new();
        op.insert("operationId".into(), json!(route.operation_id));
        op.insert("summary".into(), json!(route.summary));
        if !route.tag.is_empty() {
            op.insert("tags".into(), json!([route.tag]));
        }
        let mut params: Vec<Value> = route
            .path_params()
            .map(|p| json!({"name": p, "in": "path", "required": true,
                "schema": {"type": "string", "minLength": 1, "maxLength": 100, "pattern": "^[0-9A-Za-z_]+$"}}))
            .collect();
        for q in &route.query {
            params.push(json!({"name": q.name, "in": "query", "required": q.required, "description": q.description, "schema": q.schema}));
        }
        if route.idempotent && route.action != Action::Public {
            params.push(json!({"name": "Idempotency-Key", "in": "header", "required": false,
                "description": "Replays the first response for a retried request.",
                "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"}}));
        }
        if route.conditional {
            params.push(
                json!({"name": "If-Match", "in": "header", "required": false,
                "description": "Apply only if the resource still has this ETag (else 412). `*` or a comma-separated list of entity tags; any other value is 400.",
                "schema": {"type": "string", "pattern": crate::http::ctx::IF_MATCH_PATTERN}}),
            );
        }
        if !params.is_empty() {
            op.insert("parameters".into(), json!(params));
        }
        match route.request {
            RequestBody::None => {}
            RequestBody::Json(schema) => {
                op.insert(
                    "requestBody".into(),
                    json!({"required": true, "content": {"application/json":
                    {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}}),
                );
            }
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
                op.insert(
                    "requestBody".into(),
                    json!({"required": true, "content": content}),
                );
            }
        }
        let mut responses = Map::new();
        let (status, schema) = route.success;
        let mut success = json!({"description": "Success", "headers": {"Request-Id": {"$ref": "#/components/headers/RequestId"}}});
        if let Some(schema) = schema {
            let s = if let Some(item) = schema.strip_suffix("List") {
                list_schema(item)
            } else {
                json!({"$ref": format!("#/components/schemas/{schema}")})
            };
            success["content"] = json!({"application/json": {"schema": s}});
        }
        if !route.produces.is_empty() {
            let content: Map<String, Value> = route
                .produces
                .iter()
                .map(|m| {
                    (
                        m.to_string(),
                        json!({"schema": {"type": "string", "format": "binary"}}),
                    )
                })
                .collect();
            success["content"] = Value::Object(content);
        }
        responses.insert(status.to_string(), success);
        responses.insert("400".into(), problem_response("Malformed request"));
        responses.insert("422".into(), problem_response("Validation failed"));
        if route.action != Action::Public {
            responses.insert(
                "401".into(),
                problem_response("Missing or invalid credential"),
            );
            responses.insert(
                "403".into(),
                problem_response("The credential lacks the scope"),
            );
            responses.insert(
                "429".into(),
                problem_response("Over the credential's rate limit (see Retry-After)"),
            );
        }
        if route.path.contains('{') || route.action != Action::Public {
            responses.insert(
                "404".into(),
                problem_response("Not found, or not visible to this credential"),
            );
        }
        responses.insert("405".into(), problem_response("Method not allowed"));
        if !matches!(route.request, RequestBody::None) || route.method == hyper::Method::POST {
            responses.insert("409".into(), problem_response("Conflict"));
            responses.insert("413".into(), problem_response("Body too large"));
            responses.insert("415".into(), problem_response("Unsupported media type"));
        }
        if route.conditional {
            responses.insert("412".into(), problem_response("If-Match did not match"));
        }
        if route.operation_id == "login" {
            responses.insert("401".into(), problem_response("Wrong username or password"));
            responses.insert("429".into(), problem_response("Too many failed logins"));
        }
        if route.method == hyper::Method::DELETE {
            responses.insert("409".into(), problem_response("The resource is in use"));
        }
        for status in &route.may_return {
            let description = match status {
                304 => "Not modified (If-None-Match matched)",
                402 => "Insufficient token balance",
                _ => "See the problem detail",
            };
            if *status == 304 {
                responses.insert("304".into(), json!({"description": description}));
            } else {
                responses.insert(status.to_string(), problem_response(description));
            }
        }
        responses.insert("500".into(), problem_response("Unexpected error"));
        responses.insert("503".into(), problem_response("Database unavailable"));
        op.insert("responses".into(), Value::Object(responses));
        match route.action {
            Action::Public => {
                op.insert("security".into(), json!([]));
            }
            _ => {
                op.insert("security".into(), json!([{"ApiKeyHeader": [], "ClientId": []}, {"BearerKey": [], "ClientId": []}, {"BearerJwt": []}]));
            }
        }
        let entry = paths
            .entry(route.path.to_string())
            .or_insert_with(|| json!({}));
        entry[route.method.as_str().to_lowercase()] = Value::Object(op);
    }
    let mut schemas: Map<String, Value> = router
        .schemas()
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    schemas.insert("Problem".into(), problem_schema());
    schemas.insert("OpenApiDocument".into(), json!({"type": "object"}));
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "signage sandbox API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "A local pre-production sandbox of the digital-signage platform. Every request acts as its credential: an API key plus client id, or the internal-testing login JWT. Lists are newest first with cursor pagination; errors are RFC 9457 problem+json."
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "headers": {"RequestId": {"description": "Identifies the request in the server log.", "schema": {"type": "string"}}},
            "securitySchemes": {
                "ApiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-API-KEY"},
                "ClientId": {"type": "apiKey", "in": "header", "name": "X-Service-Client-Id"},
                "BearerKey": {"type": "http", "scheme": "bearer", "description": "The API key as a bearer token."},
                "BearerJwt": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": "Login token from POST /auth/login (internal testing only)."}
            }
        }
    })
}
