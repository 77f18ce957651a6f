//! Administration (scope `admin`): API clients ([`clients`]), API keys ([`keys`]: create, list,
//! revoke, rotate), the audit log, and the sandbox reset of the caller's account. The client and key
//! operations are plain functions over the database so that the CLI (`signage keys …`) runs exactly
//! the same code as REST; every one of them asks [`crate::auth::reach::may_manage`] who may.

pub mod audit;
pub mod clients;
mod key_expiry;
pub mod keys;

pub use key_expiry::KeyExpiry;

use crate::auth::Action;
use crate::http::router::{param, Route, LIMIT_PARAM};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::Kind;
use audit::list_audit;
use clients::{create_client_route, get_client, list_clients};
use keys::{create_key_route, get_key, list_keys_route, revoke_key_route, rotate_key_route};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get(
            "/api-clients",
            "listApiClients",
            Action::Admin,
            list_clients,
        )
        .no_tool("admin: account administration stays on REST")
        .tag("admin")
        .summary("List the account's API clients.")
        .describe("The account's API clients (one per integration); each key belongs to one client, whose id is sent as `X-Service-Client-Id`.")
        .paged_by(Kind::ApiClient)
        .ok("ApiClientList"),
        Route::post(
            "/api-clients",
            "createApiClient",
            Action::Admin,
            create_client_route,
        )
        .tag("admin")
        .summary("Create an API client (one integration).")
        .describe("Creates an API client for a new integration; then create its keys with `POST /api-keys`.")
        .body("ApiClientCreate")
        .created("ApiClient"),
        Route::get(
            "/api-clients/{id}",
            "getApiClient",
            Action::Admin,
            get_client,
        )
        .no_tool("admin: account administration stays on REST")
        .tag("admin")
        .summary("Get one API client.")
        .describe("One API client by id: the integration its keys belong to.")
        .ok("ApiClient"),
        Route::get("/api-keys", "listApiKeys", Action::Admin, list_keys_route)
            .no_tool("admin: account administration stays on REST")
            .tag("admin")
            .summary("List API keys: prefix and last four only, never the secret.")
            .describe("The account's API keys with their scopes, company scope, status and expiry: the prefix and last four characters only, never the secret.")
            .paged_by(Kind::ApiKey)
            .query(&[param(
                "client_id",
                Kind::ApiClient.schema(),
                "Only keys of this client.",
            )])
            .ok("ApiKeyList"),
        Route::post("/api-keys", "createApiKey", Action::Admin, create_key_route)
            .tag("admin")
            .summary("Create an API key. `rawKey` is in this response only.")
            .describe("Creates a key for a client with the given scopes (never more than the caller's own) and optional company scope and expiry. The secret `rawKey` is in this response only.")
            .body("ApiKeyCreate")
            .created("ApiKeyWithSecret"),
        Route::get("/api-keys/{id}", "getApiKey", Action::Admin, get_key)
            .no_tool("admin: account administration stays on REST")
            .tag("admin")
            .summary("Get one API key (no secret).")
            .describe("One API key's metadata (no secret).")
            .ok("ApiKey"),
        Route::post(
            "/api-keys/{id}/revoke",
            "revokeApiKey",
            Action::Admin,
            revoke_key_route,
        )
        .tag("admin")
        .summary("Revoke a key; it fails from the very next request.")
        .describe("Revokes a key at once: its very next request is 401 `revoked_key`.")
        .ok("ApiKey"),
        Route::post(
            "/api-keys/{id}/rotate",
            "rotateApiKey",
            Action::Admin,
            rotate_key_route,
        )
        .tag("admin")
        .summary(
            "Rotate a key: a new key now, the old one valid for a grace period (default 24 h).",
        )
        .describe("Issues a new key for the same client and scopes, and keeps the old one valid for a grace period (default 24 hours) so deployments can switch over. The new `rawKey` is in this response only. A key rotates once (409 after), so a retried rotation can never rotate twice: it needs no `Idempotency-Key`, and one cannot replay it (the answer held a secret).")
        .once_only("a key rotates once: a second rotation is 409, whatever the client sends")
        .body("ApiKeyRotate")
        .created("ApiKeyRotation"),
        Route::get("/audit-log", "listAuditLog", Action::Admin, list_audit)
            .no_tool("admin: account administration stays on REST")
            .tag("admin")
            .summary("The audit log of the account's writes and failures (failures aggregated per minute).")
            .describe("Who did what: every write and every refused credential of the account, newest first (repeated failures aggregated per minute).")
            // Audit entries have integer ids, so the cursor is a number.
            .query(&[
                LIMIT_PARAM,
                param(
                    "cursor",
                    crate::http::router::NUMERIC_CURSOR_SCHEMA,
                    "The `next_cursor` of the previous page (an entry id and the tag of the page's filters).",
                ),
            ])
            .ok("AuditEntryList"),
        Route::post("/_sandbox/reset", "resetSandbox", Action::Admin, reset)
            .tag("sandbox")
            .summary("Restore the caller's account to the demo fixtures; other accounts are untouched.")
            .describe("Puts the caller's account back to the demo fixtures (other accounts are untouched): use it between test runs. Needs an account-wide admin credential.")
            .ok("ResetResult")
            .not_idempotent()
            .blocking(),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::{named_body, named_response};
    vec![
        named_response::<clients::ApiClient>(),
        named_body::<clients::ClientCreate>(),
        named_response::<keys::ApiKey>(),
        named_response::<keys::ApiKeyWithSecret>(),
        named_body::<keys::KeyCreate>(),
        named_body::<keys::Rotate>(),
        named_response::<keys::ApiKeyRotation>(),
        named_response::<audit::AuditEntry>(),
        named_response::<ResetResult>(),
    ]
}
// ---- Sandbox ----------------------------------------------------------------------------------

/// What a sandbox reset restored.
// The body of a reset: `{"object":"sandbox_reset","reset":true}`.
#[derive(Serialize, JsonSchema)]
struct ResetResult {
    #[schemars(extend("const" = "sandbox_reset"))]
    object: &'static str,
    #[schemars(extend("const" = true))]
    reset: bool,
}

/// Restores the caller's account (and nothing else) to the fixtures. A full reset of the sandbox is
/// the operator's (`signage reset`).
fn reset(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let p = ctx.principal()?;
    if p.company_scope.is_some() {
        return Err(ApiError::AccountAdminRequired);
    }
    let account = p.account_id.clone();
    if !ctx.db.reset_account(ctx.intent, &account)? {
        return Err(ApiError::Conflict(format!(
            "Account `{account}` is not part of the demo fixtures, so there is nothing to reset it to."
        )));
    }
    // The reloaded rows start consistent with the clock: nothing fires for them at the next tick.
    crate::routes::time_driven::settle(ctx.app, ctx.db)?;
    Ok(Response::ok(&ResetResult {
        object: "sandbox_reset",
        reset: true,
    }))
}
