//! The caller's own credential (`GET /me`) and the internal-testing login (`POST /auth/login`).

use crate::auth::authenticate::role_scopes;
use crate::auth::{password, Action, Actor};
use crate::http::error::AuthFailure;
use crate::http::router::{Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::routes::crud::Time;
use crate::validate::OneOf;
use rusqlite::OptionalExtension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kinds of caller `/me` describes (its `type`).
const CREDENTIAL_TYPES: &[&str] = &["api_key", "user"];

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/me", "getCredential", Action::Authenticated, me)
            .tool(Tool::read(
                "get_api_key_permissions",
                "API key permissions",
                &[],
                "This key's scopes (`read`, `write`, `<area>:read|write`, `admin`), company scope, visible companies, client id, expiry (never its secret): why something is hidden or refused.",
            ))
            .tag("credentials")
            .summary("Describe the calling credential: scopes, company scope, client id, expiry. Never the secret.")
            .describe("Tells an integration what its credential can do before it tries: the scopes, the company it is limited to (if any), its client id and when it expires. Use it to fail fast with a clear message when a key was issued with too few scopes.")
            .ok("Credential"),
        Route::post("/auth/login", "login", Action::Public, login)
            .tag("credentials")
            .summary("Internal testing only: exchange a username and password for a short-lived JWT.")
            .describe("For internal testing only: trades a demo user's username and password for a JWT (HS256, short-lived) to send as `Authorization: Bearer <jwt>`, with no client id. Repeated failures from one client are throttled (429 with `Retry-After`). Integrations use API keys instead.")
            .body("LoginRequest")
            .ok("LoginToken")
            .not_idempotent()
            .blocking(),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::{named_body, named_response};
    vec![
        named_response::<Credential<'_>>(),
        named_body::<LoginRequest>(),
        named_response::<LoginToken>(),
    ]
}

/// The calling credential as the server sees it: kind, scopes, company scope, client id and
/// expiry. Never the secret.
// The body of `GET /me`: the common members, then the `type` and what that kind of caller has.
#[derive(Serialize, JsonSchema)]
struct Credential<'a> {
    #[schemars(extend("const" = "credential"))]
    object: &'static str,
    account_id: &'a str,
    scopes: Vec<String>,
    #[serde(rename = "companyScope")]
    company_scope: Option<&'a str>,
    visible_company_ids: &'a [String],
    expires_at: Option<Time>,
    #[serde(flatten)]
    caller: Caller<'a>,
}

/// The calling key or user: `"type"` followed by that kind's own members (a key's id, client,
/// name and prefix; a user's id and username), the other kind's left out.
// One struct rather than a tagged enum so that its schema is the flat object the document has
// always shown (a tagged enum derives one branch per kind); `api_key` and `user` build it.
#[derive(Serialize, JsonSchema)]
struct Caller<'a> {
    #[serde(rename = "type")]
    #[schemars(transform = &OneOf(CREDENTIAL_TYPES))]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    key_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    client_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    prefix: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    user_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    username: Option<&'a str>,
}

impl<'a> Caller<'a> {
    fn api_key(key_id: &'a str, client_id: &'a str, name: String, prefix: String) -> Caller<'a> {
        Caller {
            kind: "api_key",
            key_id: Some(key_id),
            client_id: Some(client_id),
            name: Some(name),
            prefix: Some(prefix),
            user_id: None,
            username: None,
        }
    }

    fn user(user_id: &'a str, username: &'a str) -> Caller<'a> {
        Caller {
            kind: "user",
            key_id: None,
            client_id: None,
            name: None,
            prefix: None,
            user_id: Some(user_id),
            username: Some(username),
        }
    }
}

fn me(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let p = ctx.principal()?;
    let caller = match &p.actor {
        Actor::ApiKey { key_id, client_id } => {
            let conn = ctx.conn()?;
            let (name, prefix): (String, String) = conn
                .prepare_cached("SELECT name, prefix FROM api_keys WHERE id = ?1")?
                .query_row([key_id], |r| Ok((r.get("name")?, r.get("prefix")?)))?;
            Caller::api_key(key_id, client_id, name, prefix)
        }
        Actor::User { user_id, username } => Caller::user(user_id, username),
    };
    let body = Credential {
        object: "credential",
        account_id: &p.account_id,
        scopes: p.scopes.names(),
        company_scope: p.company_scope.as_deref(),
        visible_company_ids: &p.visible_companies[..],
        expires_at: p.expires_at.map(Time),
        caller,
    };
    let written = body.to_json();
    debug_assert_eq!(
        String::from_utf8_lossy(&written),
        String::from_utf8_lossy(&serde_json::to_vec(&body).unwrap_or_default()),
        "GET /me is written as serde_json writes it"
    );
    Ok(
        Response::new(hyper::StatusCode::OK, "application/json", written)
            .with_header("cache-control", "no-store"),
    )
}

impl Credential<'_> {
    /// The body, byte for byte as `serde_json` writes it (debug builds compare on every call),
    /// written straight: the ids of the visible companies are copied as they are, where
    /// `serde_json` checks each of their bytes for escapes. An account of 100 companies writes
    /// 100 ids; that was most of what `GET /me` cost beyond an account of 2.
    fn to_json(&self) -> Vec<u8> {
        use crate::json_write as w;
        let ids: usize = self.visible_company_ids.iter().map(|c| c.len() + 3).sum();
        let mut out = Vec::with_capacity(384 + ids);
        out.push(b'{');
        w::key(&mut out, "object");
        w::plain(&mut out, self.object);
        out.push(b',');
        w::key(&mut out, "account_id");
        w::text(&mut out, self.account_id);
        out.push(b',');
        w::key(&mut out, "scopes");
        out.push(b'[');
        for (i, scope) in self.scopes.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            w::text(&mut out, scope);
        }
        out.extend_from_slice(b"],");
        w::key(&mut out, "companyScope");
        match self.company_scope {
            Some(c) => w::text(&mut out, c),
            None => out.extend_from_slice(b"null"),
        }
        out.push(b',');
        w::key(&mut out, "visible_company_ids");
        out.push(b'[');
        for (i, id) in self.visible_company_ids.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            // Company ids are `cmp_` and letters and digits (`ids::Kind::Company`): nothing to
            // escape, nothing to look for (debug builds assert it).
            w::plain(&mut out, id);
        }
        out.extend_from_slice(b"],");
        w::key(&mut out, "expires_at");
        w::opt_time(&mut out, self.expires_at.as_ref().map(|t| t.0));
        out.push(b',');
        let c = &self.caller;
        w::key(&mut out, "type");
        w::plain(&mut out, c.kind);
        let members = [
            ("key_id", c.key_id),
            ("client_id", c.client_id),
            ("name", c.name.as_deref()),
            ("prefix", c.prefix.as_deref()),
            ("user_id", c.user_id),
            ("username", c.username),
        ];
        for (name, value) in members {
            if let Some(v) = value {
                out.push(b',');
                w::key(&mut out, name);
                w::text(&mut out, v);
            }
        }
        out.push(b'}');
        out
    }
}

/// A short-lived JWT to send as `Authorization: Bearer <access_token>`.
// The body of a successful login (RFC 6749's token response).
#[derive(Serialize, JsonSchema)]
struct LoginToken {
    access_token: String,
    #[schemars(extend("const" = "Bearer"))]
    token_type: &'static str,
    expires_in: u64,
    scope: String,
}

/// The longest username and password a login takes (in bytes, checked before anything else).
const MAX_USERNAME: usize = 254;
const MAX_PASSWORD: usize = 1024;

/// A demo user's username and password (internal testing only).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LoginRequest {
    #[schemars(length(min = 1, max = MAX_USERNAME))]
    username: String,
    #[schemars(length(min = 1, max = MAX_PASSWORD))]
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
        || input.username.len() > MAX_USERNAME
        || input.password.is_empty()
        || input.password.len() > MAX_PASSWORD
    {
        return Err(ApiError::invalid(
            "",
            "invalid",
            "`username` (1–254) and `password` (1–1024 characters) are required.",
        ));
    }
    let address = ctx.peer.map(|a| a.to_string()).unwrap_or_default();
    // The throttle counts real elapsed time, not the sandbox clock (see `auth::throttle`).
    let throttle = &ctx.app.login_throttle;
    if let Some(wait) = throttle.retry_after(&input.username, &address) {
        return Err(ApiError::TooManyRequests {
            retry_after_secs: wait,
        });
    }
    let user = {
        let conn = ctx.conn()?;
        let found = conn
            .prepare_cached("SELECT id, password_hash, role FROM users WHERE username = ?1")?
            .query_row([&input.username], |r| {
                Ok((
                    r.get::<_, String>("id")?,
                    r.get::<_, String>("password_hash")?,
                    r.get::<_, String>("role")?,
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
        throttle.record_failure(&input.username, &address);
        return Err(ApiError::Unauthenticated(AuthFailure::InvalidCredentials));
    };
    throttle.record_success(&input.username);
    let token = ctx
        .app
        .jwt
        .issue(&user_id)
        .map_err(|e| ApiError::Internal(format!("signing login token: {e}")))?;
    Ok(Response::ok(&LoginToken {
        access_token: token,
        token_type: "Bearer",
        expires_in: ctx.app.jwt.ttl_secs,
        scope: role_scopes(&role).to_db(),
    })
    .with_header("cache-control", "no-store"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The members in the order of the `json!` this replaced: the common ones, then `type` and
    /// the caller's own.
    #[test]
    fn a_credential_lists_type_after_the_common_members() {
        let companies = vec!["cmp_1".to_string()];
        let body = |caller| Credential {
            object: "credential",
            account_id: "acct_1",
            scopes: vec!["read".into()],
            company_scope: None,
            visible_company_ids: &companies,
            expires_at: Some(Time(0)),
            caller,
        };
        let key = serde_json::to_string(&body(Caller::api_key(
            "key_1",
            "cli_1",
            "n".into(),
            "p".into(),
        )))
        .unwrap();
        assert_eq!(
            key,
            r#"{"object":"credential","account_id":"acct_1","scopes":["read"],"companyScope":null,"visible_company_ids":["cmp_1"],"expires_at":"1970-01-01T00:00:00Z","type":"api_key","key_id":"key_1","client_id":"cli_1","name":"n","prefix":"p"}"#
        );
        let user = serde_json::to_string(&body(Caller::user("usr_1", "u"))).unwrap();
        assert!(
            user.ends_with(r#""expires_at":"1970-01-01T00:00:00Z","type":"user","user_id":"usr_1","username":"u"}"#),
            "{user}"
        );
    }

    /// The body written straight is `serde_json`'s, byte for byte, for both kinds of caller,
    /// free text that needs escaping, a company scope, no expiry and many companies.
    #[test]
    fn the_written_body_is_serde_jsons() {
        let companies: Vec<String> = (0..100).map(|i| format!("cmp_{i:020}")).collect();
        for (scope, expires) in [
            (None, None),
            (Some("cmp_00000000000000000007"), Some(Time(1))),
        ] {
            for caller in [
                Caller::api_key(
                    "key_1",
                    "cli_1",
                    "CI \"nightly\"\tkey – ü".into(),
                    "sgn_test_ab".into(),
                ),
                Caller::user("usr_1", "o'brien\\x@example.com"),
            ] {
                let body = Credential {
                    object: "credential",
                    account_id: "acct_1",
                    scopes: vec!["read".into(), "devices:write".into()],
                    company_scope: scope,
                    visible_company_ids: &companies,
                    expires_at: expires,
                    caller,
                };
                assert_eq!(
                    String::from_utf8(body.to_json()).unwrap(),
                    serde_json::to_string(&body).unwrap()
                );
            }
        }
    }
}
