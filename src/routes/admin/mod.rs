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
use crate::validate::{id_schema, text_schema, OneOf};
use audit::list_audit;
use clients::{create_client_route, get_client, list_clients};
use keys::{
    create_key_route, get_key, list_keys_route, revoke_key_route, rotate_key_route, KEY_STATUSES,
    MAX_GRACE_SECS,
};
use serde::Serialize;
use serde_json::{json, Value};

pub fn routes() -> Vec<Route> {
    vec![
        Route::get(
            "/api-clients",
            "listApiClients",
            Action::Admin,
            list_clients,
        )
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
        .tag("admin")
        .summary("Get one API client.")
        .describe("One API client by id: the integration its keys belong to.")
        .ok("ApiClient"),
        Route::get("/api-keys", "listApiKeys", Action::Admin, list_keys_route)
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
        .describe("Issues a new key for the same client and scopes, and keeps the old one valid for a grace period (default 24 hours) so deployments can switch over. The new `rawKey` is in this response only.")
        .body("ApiKeyRotate")
        .created("ApiKeyRotation"),
        Route::get("/audit-log", "listAuditLog", Action::Admin, list_audit)
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
    let ts = json!({"type":"string","format":"date-time"});
    let ts_null = json!({"type":["string","null"],"format":"date-time"});
    let key_props = json!({
        "id":{"type":"string","pattern":"^key_"},"object":{"const":"api_key"},"name":{"type":"string"},
        "client_id":{"type":"string"},"prefix":{"type":"string"},"last_four":{"type":"string"},
        "scopes":{"type":"array","items":{"type":"string"}},"companyScope":{"type":["string","null"]},
        "status":OneOf(KEY_STATUSES).schema(),
        "created_at":ts,"last_used_at":ts_null,"expires_at":ts_null,"revoked_at":ts_null,
        "replaced_by":{"type":["string","null"]}});
    let key_required = json!([
        "id",
        "object",
        "name",
        "client_id",
        "prefix",
        "last_four",
        "scopes",
        "companyScope",
        "status",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
        "replaced_by"
    ]);
    let mut with_secret = key_props.clone();
    with_secret["rawKey"] =
        json!({"type":"string","description":"The secret. Shown once; store it now."});
    let mut with_secret_required = key_required.clone();
    if let Some(a) = with_secret_required.as_array_mut() {
        a.push(json!("rawKey"));
    }
    vec![
        (
            "ApiClient",
            json!({"type":"object","additionalProperties":false,
            "required":["id","object","account_id","name","description","companyScope","created_at"],
            "properties":{"id":{"type":"string","pattern":"^cli_"},"object":{"const":"api_client"},
                "account_id":{"type":"string"},"name":{"type":"string"},"description":{"type":"string"},
                "companyScope":{"type":["string","null"],"description":"The company this client is bound to: its keys are all scoped to it."},
                "created_at":ts}}),
        ),
        (
            "ApiClientCreate",
            json!({"type":"object","additionalProperties":false,"required":["name"],
            "properties":{"name":text_schema(1, 100),
                          "description":text_schema(0, 500),
                          "companyScope":{"type":["string","null"],"pattern":crate::ids::Kind::Company.pattern()}}}),
        ),
        (
            "ApiKey",
            json!({"type":"object","additionalProperties":false,"required":key_required,"properties":key_props}),
        ),
        (
            "ApiKeyWithSecret",
            json!({"type":"object","additionalProperties":false,"required":with_secret_required,"properties":with_secret}),
        ),
        (
            "ApiKeyCreate",
            json!({"type":"object","additionalProperties":false,"required":["client_id","name","scopes"],
            "properties":{"client_id":id_schema(Kind::ApiClient),
                "name":text_schema(1, 100),
                "scopes":{"type":"array","minItems":1,"maxItems":20,"items":{"type":"string","enum":crate::auth::scopes::Scope::all_names()}},
                "companyScope":{"type":["string","null"],"pattern":crate::ids::Kind::Company.pattern()},
                "expires_at":{"type":["string","null"],"format":"date-time"}}}),
        ),
        (
            "ApiKeyRotate",
            json!({"type":"object","additionalProperties":false,
            "properties":{"grace_period_seconds":{"type":"integer","minimum":0,"maximum":MAX_GRACE_SECS}}}),
        ),
        (
            "ApiKeyRotation",
            json!({"type":"object","additionalProperties":false,"required":["object","new_key","previous_key"],
            "properties":{"object":{"const":"api_key_rotation"},"new_key":{"$ref":"#/components/schemas/ApiKeyWithSecret"},
                "previous_key":{"$ref":"#/components/schemas/ApiKey"}}}),
        ),
        (
            "AuditEntry",
            json!({"type":"object","additionalProperties":false,
            "required":["id","object","at","request_id","actor","client_id","method","route","status","outcome","count"],
            "properties":{"id":{"type":"string"},"object":{"const":"audit_entry"},"at":ts,"request_id":{"type":"string"},
                "actor":{"type":["string","null"]},"client_id":{"type":["string","null"]},"method":{"type":"string"},
                "route":{"type":"string"},"status":{"type":"integer"},"outcome":{"type":"string"},
                "count":{"type":"integer","minimum":1,"description":"Failures are aggregated per minute: how many requests this entry stands for (`at` and `request_id` are the first one's)."}}}),
        ),
        (
            "ResetResult",
            json!({"type":"object","additionalProperties":false,"required":["object","reset"],
            "properties":{"object":{"const":"sandbox_reset"},"reset":{"const":true}}}),
        ),
    ]
}
// ---- Sandbox ----------------------------------------------------------------------------------

/// The body of a reset: `{"object":"sandbox_reset","reset":true}`.
#[derive(Serialize)]
struct ResetResult {
    object: &'static str,
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
