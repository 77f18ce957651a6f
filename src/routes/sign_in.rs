//! Sign-in links: one click opens a signed-in console (or a screen's player) in a new tab.
//!
//! - `POST /auth/sign-in-links` (any credential) makes a link for the caller itself:
//!   `{base}/console#signin=<token>` (or `/player/{device_id}…#signin=…`). The token rides in the
//!   URL's fragment, which a browser never sends to a server, writes into a `Referer` or a log.
//! - `POST /auth/sign-in` (public) trades the token for a session token (`Authorization: Bearer`):
//!   the credential the link was made for, with the scopes it had then (a key narrowed or revoked
//!   since narrows or ends the session on its next request).
//!
//! Rules:
//! - A link works once and for [`LINK_TTL_SECS`] seconds of the wall clock (moving the sandbox's
//!   clock neither ages nor refreshes it); only the SHA-256 of its token is kept, in memory (never in
//!   the database, a snapshot or a log), and a restart forgets every link.
//! - It is redeemed only where every route answers: a `Host` that is this server's, and no `Origin`
//!   of another site (403 `host_not_allowed` / `origin_not_allowed` before the handler runs, so the
//!   link is not used up; [`crate::http::site`]).
//! - Unknown, used or expired: 401 `invalid_sign_in_link`, the same answer for all three.
//! - The session lasts [`SESSION_TTL_SECS`] (wall clock). `signage demo` prints a link for the demo
//!   key with the `sandbox` scope added: the presenter's one console holds the operator's controls.
//! - At most [`MAX_LINKS`] links wait at once; past that, 429 until some are used or expire.

use crate::auth::{Action, AuthFailure};
use crate::http::router::Route;
use crate::http::{ApiError, Ctx, Response};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a link may wait to be opened.
pub const LINK_TTL_SECS: u64 = 10 * 60;
/// How long the session a link opens lasts (its token refuses a longer life).
pub use crate::auth::jwt::SESSION_TTL_SECS;
/// Links waiting at once, at most.
pub const MAX_LINKS: usize = 1000;

pub fn routes() -> Vec<Route> {
    vec![
        Route::post("/auth/sign-in-links", "createSignInLink", Action::Authenticated, create)
            .tag("credentials")
            .summary("Make a one-click sign-in link for the calling credential: the console or a screen's player, signed in, in a new tab.")
            .describe("Makes a link that signs a browser tab in as the calling credential (its current scopes, never more): `path` `/console` (default) or `/player/{device_id}` (a screen the credential sees, optionally with `?slot=N`). A player link signs in as that one screen: the player's scopes the credential holds, and only the player's operations on that screen (else 403 `screen-credential`). The token is in the URL's fragment; the link works once, within 10 minutes, at a loopback address or the public base URL. Answers the absolute `url` and the same-origin `path`. The token is never stored: an `Idempotency-Key` is not honoured.")
            .optional_body("SignInLinkRequest")
            .created("SignInLink")
            .not_idempotent(),
        Route::post("/auth/sign-in", "redeemSignInLink", Action::Public, redeem)
            .tag("credentials")
            .summary("Trade a sign-in link's token for a session token (once; at a loopback address or the public base URL only).")
            .describe("Redeems the token of a sign-in link (`#signin=…`) for a session token to send as `Authorization: Bearer`: the credential the link was made for, with the scopes it had then, for 12 hours. Works once, within 10 minutes of the link being made; 401 `invalid_sign_in_link` for an unknown, used or expired token; 403 `host_not_allowed` / `origin_not_allowed` (the rule of every route) when the request's `Host` or `Origin` is not this server's; the link is then not used up.")
            .body("SignInRequest")
            .ok("SignInSession")
            .may_return(&[401])
            .not_idempotent(),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::{named_body, named_response};
    vec![
        named_body::<LinkRequest>(),
        named_response::<MadeLink>(),
        named_body::<RedeemRequest>(),
        named_response::<Session>(),
    ]
}

/// One link waiting to be opened.
struct Link {
    /// `key_…` or `usr_…`.
    sub: String,
    scope: String,
    path: String,
    /// A player link's screen: its session acts for that screen only.
    device: Option<String>,
    expires: Instant,
}

/// The links waiting to be opened, by the SHA-256 of their token (registered by `app::App::build`).
#[derive(Default)]
pub struct SignInLinks {
    links: Mutex<HashMap<[u8; 32], Link>>,
}

/// Why a link could not be made.
#[derive(Debug, PartialEq, Eq)]
pub struct TooMany;

impl SignInLinks {
    /// A new link's token for `sub` with `scope`, opening `path`. A player link (`/player/{id}`)
    /// carries only what a screen needs, whoever makes it: the scopes of [`PLAYER_SCOPES`] that
    /// `scope` holds (never `sandbox`, never a write beyond the screen's own reports), bound to its
    /// one screen.
    pub fn mint(&self, sub: &str, scope: &str, path: &str) -> Result<String, TooMany> {
        let device = parse_path(path).and_then(|(_, device)| device);
        let scope = match &device {
            Some(_) => {
                let held = crate::auth::scopes::Scopes::parse_list(scope).unwrap_or_default();
                crate::auth::authenticate::session_scopes(PLAYER_SCOPES, &held).to_db()
            }
            None => scope.to_string(),
        };
        let token = crate::random::unseeded_hex::<32>();
        let now = Instant::now();
        // A poisoned lock only means a panic elsewhere; the map is plain data.
        let mut links = self.links.lock().unwrap_or_else(|e| e.into_inner());
        if links.len() >= MAX_LINKS {
            links.retain(|_, l| l.expires > now);
            if links.len() >= MAX_LINKS {
                return Err(TooMany);
            }
        }
        links.insert(
            digest(&token),
            Link {
                sub: sub.to_string(),
                scope,
                path: path.to_string(),
                device,
                expires: now + Duration::from_secs(LINK_TTL_SECS),
            },
        );
        Ok(token)
    }

    /// Takes the link of `token` (it works once): `None` when unknown, used or expired.
    fn take(&self, token: &str) -> Option<Link> {
        let mut links = self.links.lock().unwrap_or_else(|e| e.into_inner());
        let link = links.remove(&digest(token))?;
        (link.expires > Instant::now()).then_some(link)
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn links(ctx: &Ctx<'_>) -> Result<std::sync::Arc<SignInLinks>, ApiError> {
    ctx.app
        .extensions
        .get::<std::sync::Arc<SignInLinks>>()
        .cloned()
        .ok_or_else(|| ApiError::Internal("sign-in links are not registered".into()))
}

/// The base of every link: `server.public_base_url`, or the bound address.
pub fn base(settings: &crate::config::Settings) -> String {
    match &settings.public_base_url {
        Some(b) => b.trim_end_matches('/').to_string(),
        None => crate::config::public_base_url_for(settings.listen),
    }
}

/// `{base}{path}#signin={token}`.
pub fn url(settings: &crate::config::Settings, path: &str, token: &str) -> String {
    format!("{}{path}#signin={token}", base(settings))
}

/// What a screen's player does with its credential: read its screen, its company and branding,
/// the ads it plays with their media and QR codes; post its heartbeats and plays
/// ([`crate::auth::authorize::screen_may`] keeps it to those operations and that screen).
pub const PLAYER_SCOPES: &str = "devices:write companies:read ads:read media:read promotions:read";

/// What [`parse_path`] accepts, for the schema.
const PATH_PATTERN: &str = "^/(console|player/dev_[0-9A-Za-z]{1,64}(\\?slot=[0-9]{1,4})?)$";

/// Where the sign-in link opens: the console (default) or a screen's player.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SignInLinkRequest")]
struct LinkRequest {
    /// Where the link opens, signed in: `/console` (the default, also for `null`) or
    /// `/player/{device_id}`, optionally with `?slot=N`.
    #[serde(default)]
    #[schemars(length(max = 200), regex(pattern = PATH_PATTERN))]
    path: Option<String>,
}

/// A one-use sign-in link for the calling credential, valid for 10 minutes.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SignInLink")]
struct MadeLink {
    #[schemars(extend("const" = "sign_in_link"))]
    object: &'static str,
    /// The link under the public base URL: open it once, within 10 minutes.
    url: String,
    /// The same link without the scheme and host, for opening it on the caller's own origin.
    path: String,
    /// Wall-clock time after which the link no longer works.
    expires_at: crate::routes::crud::Time,
}

/// `/console`, or `/player/{device}` with an optional `?slot=N` (1 to 3600): the path and the
/// device it names, if any.
fn parse_path(path: &str) -> Option<(String, Option<String>)> {
    if path == "/console" {
        return Some((path.to_string(), None));
    }
    let rest = path.strip_prefix("/player/")?;
    let (device, query) = match rest.split_once('?') {
        Some((d, q)) => (d, Some(q)),
        None => (rest, None),
    };
    if !crate::ids::is_valid(crate::ids::Kind::Device, device) {
        return None;
    }
    if let Some(q) = query {
        let slot: u32 = q.strip_prefix("slot=")?.parse().ok()?;
        if !(1..=3600).contains(&slot) {
            return None;
        }
    }
    Some((path.to_string(), Some(device.to_string())))
}

fn create(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: LinkRequest = if ctx.body.iter().all(u8::is_ascii_whitespace) {
        LinkRequest { path: None }
    } else {
        ctx.json()?
    };
    let wanted = input.path.unwrap_or_else(|| "/console".into());
    let (path, device) = parse_path(&wanted).ok_or_else(|| {
        ApiError::invalid(
            "/path",
            "invalid_path",
            "Must be `/console` or `/player/{device_id}` (optionally with `?slot=N`, 1 to 3600).",
        )
    })?;
    if let Some(device) = &device {
        // A player link names a screen the caller sees; any other is the same 404.
        let company: Option<String> = {
            let conn = ctx.conn()?;
            let found = conn
                .prepare_cached("SELECT company_id FROM devices WHERE id = ?1")?
                .query_row([device], |r| r.get(0));
            rusqlite::OptionalExtension::optional(found)?
        };
        let company = company.ok_or_else(|| ApiError::not_found("device", device))?;
        ctx.authorize_company(&company, "device", device)?;
    }
    let principal = ctx.principal()?;
    let token = links(ctx)?
        .mint(principal.actor_id(), &principal.scopes.to_db(), &path)
        .map_err(|TooMany| ApiError::TooManyRequests {
            retry_after_secs: 60,
        })?;
    let expires = crate::time::wall_now() + LINK_TTL_SECS as i64;
    let made = MadeLink {
        object: "sign_in_link",
        url: url(&ctx.app.settings, &path, &token),
        path: format!("{path}#signin={token}"),
        expires_at: crate::routes::crud::Time(expires),
    };
    Ok(Response::created(&made).with_header("cache-control", "no-store"))
}

/// The token of a sign-in link (what follows `#signin=`).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SignInRequest")]
struct RedeemRequest {
    /// What follows `#signin=` in the link.
    #[schemars(length(min = 1, max = 200))]
    token: String,
}

/// A session token for the credential the link was made for, to send as `Authorization:
/// Bearer`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SignInSession")]
struct Session {
    access_token: String,
    #[schemars(extend("const" = "Bearer"))]
    token_type: &'static str,
    expires_in: i64,
    scope: String,
    /// Where the link was made to open.
    path: String,
}

fn redeem(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: RedeemRequest = ctx.json()?;
    let link = links(ctx)?
        .take(input.token.trim())
        .ok_or(ApiError::Unauthenticated(AuthFailure::InvalidSignInLink))?;
    let token = ctx
        .app
        .jwt
        .issue_session(&link.sub, &link.scope, link.device.as_deref())
        .map_err(|e| ApiError::Internal(format!("signing a session token: {e}")))?;
    Ok(Response::ok(&Session {
        access_token: token,
        token_type: "Bearer",
        expires_in: SESSION_TTL_SECS,
        scope: link.scope,
        path: link.path,
    })
    .with_header("cache-control", "no-store"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_works_once() {
        let links = SignInLinks::default();
        let token = links.mint("key_x", "read", "/console").unwrap();
        assert!(links.take("nope").is_none());
        assert_eq!(links.take(&token).map(|l| l.sub), Some("key_x".to_string()));
        assert!(links.take(&token).is_none());
    }

    #[test]
    fn paths_are_the_console_or_a_player() {
        assert!(parse_path("/console").is_some());
        let p = parse_path("/player/dev_0m5d4rura41qxb8vdg0l?slot=3").unwrap();
        assert_eq!(p.1.as_deref(), Some("dev_0m5d4rura41qxb8vdg0l"));
        for bad in [
            "/",
            "/console/x",
            "https://evil.example/console",
            "/player/x",
            "/player/dev_0m5d4rura41qxb8vdg0l?slot=0",
            "/player/dev_0m5d4rura41qxb8vdg0l?x=1",
        ] {
            assert!(parse_path(bad).is_none(), "{bad}");
        }
    }
}
