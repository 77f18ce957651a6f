//! `GET /health`: the spec's health check. Public; no headers needed.

use crate::auth::Action;
use crate::http::router::{Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::validate::OneOf;
use hyper::StatusCode;
use schemars::JsonSchema;
use serde::Serialize;

pub fn routes() -> Vec<Route> {
    vec![Route::get("/health", "getHealth", Action::Public, health)
        .tool(Tool::read(
            "service_health_check",
            "Service health check",
            &[],
            "Is the service up? Also the MCP auth mode (`passthrough`: tools use your own API key). Call it first when tools fail unexpectedly.",
        ))
        .tag("service")
        .summary("Service health: `ok` and the MCP backend auth mode (`passthrough`).")
        .describe("Answers 200 `{\"ok\": true, ...}` while the server and its database are usable, else 503. Use it as a readiness probe before running a test suite against the sandbox; it needs no credential.")
        .ok("Health")]
}

pub fn schemas() -> Vec<(&'static str, serde_json::Value)> {
    vec![crate::jsonschema::named_response::<Health>()]
}

/// How the MCP server authenticates the REST calls of its tools: with the caller's own key.
const BACKEND_AUTH_MODES: OneOf = OneOf(&["passthrough"]);

/// Whether the service is up, and how the MCP server authenticates its calls.
#[derive(Serialize, JsonSchema)]
struct Health {
    ok: bool,
    #[serde(rename = "backendAuthMode")]
    #[schemars(transform = &BACKEND_AUTH_MODES)]
    backend_auth_mode: &'static str,
}

fn health(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    // One cached statement a call: the answer is the database's, never a remembered one.
    let ok = ctx.app.db.is_usable();
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    // The two possible bodies, serialized from the type once.
    static BODIES: std::sync::OnceLock<[bytes::Bytes; 2]> = std::sync::OnceLock::new();
    let bodies = BODIES.get_or_init(|| {
        [false, true].map(|ok| {
            let body = Health {
                ok,
                backend_auth_mode: "passthrough",
            };
            bytes::Bytes::from(serde_json::to_vec(&body).unwrap_or_default())
        })
    });
    let mut resp = Response::new(status, "application/json", bodies[usize::from(ok)].clone());
    resp.set_header_value(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    Ok(resp)
}
