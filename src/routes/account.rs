//! The caller's own credential (`GET /me`) and the internal-testing login (`POST /auth/login`).

use crate::auth::authenticate::role_scopes;
use crate::auth::{password, Action, Actor};
use crate::http::error::AuthFailure;
use crate::http::router::{Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::time::rfc3339;
use rusqlite::OptionalExtension;
use serde::Deserialize;
use serde_json::{json, Value};

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/me", "getCredential", Action::Authenticated, me)
            .tool(Tool::read(
                "get_api_key_permissions",
                "API key permissions",
                &[],
                "Describe the API key this connection uses: its scopes (`read`, `write`, `<area>:read|write`, `admin`), its company scope, the companies it can see, its client id and its expiry. Use it to explain why something is not visible or not allowed. Never returns the secret.",
            ))
            .tag("credentials")
            .summary("Describe the calling credential: scopes, company scope, client id, expiry. Never the secret.")
            .ok("Credential"),
        Route::post("/auth/login", "login", Action::Public, login)
            .tag("credentials")
            .summary("Internal testing only: exchange a username and password for a short-lived JWT.")
            .body("LoginRequest")
            .ok("LoginToken")
            .not_idempotent()
            .blocking(),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        (
            "Credential",
            json!({"type":"object","additionalProperties":false,
                "required":["object","type","account_id","scopes","companyScope","visible_company_ids","expires_at"],
                "properties":{"object":{"const":"credential"},"type":{"type":"string","enum":["api_key","user"]},
                    "key_id":{"type":"string"},"name":{"type":"string"},"prefix":{"type":"string"},"client_id":{"type":"string"},
                    "user_id":{"type":"string"},"username":{"type":"string"},
                    "account_id":{"type":"string"},"scopes":{"type":"array","items":{"type":"string"}},
                    "companyScope":{"type":["string","null"]},
                    "visible_company_ids":{"type":"array","items":{"type":"string"}},
                    "expires_at":{"type":["string","null"],"format":"date-time"}}}),
        ),
        (
            "LoginRequest",
            json!({"type":"object","additionalProperties":false,"required":["username","password"],
                "properties":{"username":{"type":"string","minLength":1,"maxLength":254},
                              "password":{"type":"string","minLength":1,"maxLength":1024}}}),
        ),
        (
            "LoginToken",
            json!({"type":"object","additionalProperties":false,"required":["access_token","token_type","expires_in"],
                "properties":{"access_token":{"type":"string"},"token_type":{"const":"Bearer"},
                              "expires_in":{"type":"integer"},"scope":{"type":"string"}}}),
        ),
    ]
}

fn me(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let p = ctx.principal()?;
    let mut body = json!({
        "object": "credential",
        "account_id": p.account_id,
        "scopes": p.scopes.names(),
        "companyScope": p.company_scope,
        "visible_company_ids": p.visible_companies,
        "expires_at": p.expires_at.map(rfc3339),
    });
    match &p.actor {
        Actor::ApiKey { key_id, client_id } => {
            let conn = ctx.app.db.conn()?;
            let (name, prefix): (String, String) = conn
                .prepare_cached("SELECT name, prefix FROM api_keys WHERE id = ?1")?
                .query_row([key_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
            body["type"] = json!("api_key");
            body["key_id"] = json!(key_id);
            body["client_id"] = json!(client_id);
            body["name"] = json!(name);
            body["prefix"] = json!(prefix);
        }
        Actor::User { user_id, username } => {
            body["type"] = json!("user");
            body["user_id"] = json!(user_id);
            body["username"] = json!(username);
        }
    }
    Ok(Response::ok(&body).with_header("cache-control", "no-store"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginRequest {
    username: String,
    password: String,
}

fn login(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    if !ctx.app.settings.login_enabled {
        return Err(ApiError::NotFound(
            "There is no resource at `/auth/login`.".into(),
        ));
    }
    let input: LoginRequest = ctx.json()?;
    if input.username.is_empty()
        || input.username.len() > 254
        || input.password.is_empty()
        || input.password.len() > 1024
    {
        return Err(ApiError::invalid(
            "",
            "invalid",
            "`username` (1–254) and `password` (1–1024 characters) are required.",
        ));
    }
    let address = ctx.peer.map(|a| a.to_string()).unwrap_or_default();
    let now = crate::time::now();
    let throttle = &ctx.app.login_throttle;
    if let Some(wait) = throttle.retry_after(&input.username, &address, now) {
        return Err(ApiError::TooManyRequests {
            retry_after_secs: wait,
        });
    }
    let user = {
        let conn = ctx.app.db.conn()?;
        let found = conn
            .prepare_cached("SELECT id, password_hash, role FROM users WHERE username = ?1")?
            .query_row([&input.username], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .optional()?;
        found
    };
    let verified = match &user {
        Some((_, hash, _)) => password::verify(&input.password, hash),
        None => {
            // Same cost as a wrong password, so timing does not reveal which usernames exist.
            let _ = password::verify(&input.password, password::DUMMY_HASH);
            false
        }
    };
    let Some((user_id, _, role)) = user.filter(|_| verified) else {
        throttle.record_failure(&input.username, &address, now);
        return Err(ApiError::Unauthenticated(AuthFailure::InvalidCredentials));
    };
    throttle.record_success(&input.username);
    let token = ctx
        .app
        .jwt
        .issue(&user_id, now)
        .map_err(|e| ApiError::Internal(format!("signing login token: {e}")))?;
    Ok(Response::ok(&json!({
        "access_token": token,
        "token_type": "Bearer",
        "expires_in": ctx.app.jwt.ttl_secs,
        "scope": role_scopes(&role).to_db(),
    }))
    .with_header("cache-control", "no-store"))
}
