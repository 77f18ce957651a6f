//! The demo console (`GET /console`) and the browser player (`GET /player/{device_id}`): static
//! pages embedded in the binary at build time (no Node toolchain, no CDN), which then call the same
//! REST API as any client with the credential the person signs in with (kept in the tab's
//! `sessionStorage`), or the session a sign-in link opened (`#signin=…`,
//! [`crate::routes::sign_in`]). The pages are public; everything they show comes from
//! authenticated API calls, so they see exactly what that credential may see.
//!
//! Served with a strict Content-Security-Policy: scripts and styles only from these files (no inline
//! code), images and media from the API or `blob:` URLs made from its answers, requests only to this
//! origin, and no framing. The scripts insert every API value as text, never as HTML.
//! `console.enabled = false` removes these routes (404).

mod reveal;

use crate::auth::Action;
use crate::http::router::{param, Route};
use crate::http::{ApiError, Ctx, Response};
use hyper::StatusCode;

const CONSOLE_HTML: &str = include_str!("assets/console.html");
const CONSOLE_JS: &str = include_str!("assets/console.js");
const CONSOLE_CSS: &str = include_str!("assets/console.css");
const COMMON_JS: &str = include_str!("assets/common.js");
const PLAYER_HTML: &str = include_str!("assets/player.html");
const PLAYER_JS: &str = include_str!("assets/player.js");
const PLAYER_CSS: &str = include_str!("assets/player.css");
const REVEAL_HTML: &str = include_str!("assets/reveal.html");

/// The console's view and furniture modules (ES modules that console.js imports): path, operation
/// id, summary, body.
const MODULES: &[(&str, &str, &str, &str)] = &[
    ("/console/ui.js", "getConsoleUiScript", "The console's page furniture: view area, problem boxes, dialogs, notices.", include_str!("assets/ui.js")),
    ("/console/live.js", "getConsoleLiveScript", "The console's live status: refresh timers, connection-lost banner, rate-limit notice, sandbox time.", include_str!("assets/live.js")),
    ("/console/charts.js", "getConsoleChartsScript", "The console's SVG charts: bars, day lines, stacked bar, sparkline.", include_str!("assets/charts.js")),
    ("/console/fleet.js", "getConsoleFleetScript", "The console's fleet view.", include_str!("assets/fleet.js")),
    ("/console/adsview.js", "getConsoleAdsScript", "The console's ads view.", include_str!("assets/adsview.js")),
    ("/console/promotions.js", "getConsolePromotionsScript", "The console's promotions view.", include_str!("assets/promotions.js")),
    ("/console/dashboard.js", "getConsoleDashboardScript", "The console's company overview with charts.", include_str!("assets/dashboard.js")),
    ("/console/feed.js", "getConsoleEventsScript", "The console's events feed.", include_str!("assets/feed.js")),
    ("/console/sandbox.js", "getConsoleSandboxScript", "The console's sandbox controls (clock, faults, snapshots).", include_str!("assets/sandbox.js")),
    ("/console/readiness.js", "getConsoleReadinessScript", "The console's readiness checklist and journal entry views.", include_str!("assets/readiness.js")),
    ("/console/forms.js", "getConsoleFormsScript", "The console's authoring forms (idempotent creates, If-Match changes, errors in words).", include_str!("assets/forms.js")),
    ("/console/reports.js", "getConsoleReportsScript", "The console's proof-of-play report with a date range and CSV download.", include_str!("assets/reports.js")),
    ("/console/media.js", "getConsoleMediaScript", "The console's media library: storage against the quota, drag-and-drop upload.", include_str!("assets/media.js")),
    ("/console/billing.js", "getConsoleBillingScript", "The console's tokens and billing views (revenue per month, invoices, storage) and an invoice as a printable document.", include_str!("assets/billing.js")),
    ("/console/webhooks.js", "getConsoleWebhooksScript", "The console's webhooks and their deliveries.", include_str!("assets/webhooks.js")),
    ("/console/reveal.js", "getConsoleRevealScript", "The one-time reveal page's script: trades the link's token for the secret, once, on a click.", include_str!("assets/reveal.js")),
];

/// The policy of every page and asset: nothing inline, nothing from elsewhere.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' blob: data:; media-src 'self' blob:; connect-src 'self'; form-action 'self'; \
base-uri 'none'; frame-ancestors 'none'";

/// The longest `slot` a player page accepts (an hour per ad).
const MAX_SLOT_SECS: u32 = 3600;

/// Every embedded asset: (path, content type, body).
pub const ASSETS: &[(&str, &str, &str)] = &[
    ("/console", "text/html; charset=utf-8", CONSOLE_HTML),
    (
        "/console/console.js",
        "text/javascript; charset=utf-8",
        CONSOLE_JS,
    ),
    (
        "/console/common.js",
        "text/javascript; charset=utf-8",
        COMMON_JS,
    ),
    (
        "/console/console.css",
        "text/css; charset=utf-8",
        CONSOLE_CSS,
    ),
    (
        "/console/player.js",
        "text/javascript; charset=utf-8",
        PLAYER_JS,
    ),
    ("/console/player.css", "text/css; charset=utf-8", PLAYER_CSS),
    (
        crate::http::reveals::PAGE,
        "text/html; charset=utf-8",
        REVEAL_HTML,
    ),
];

/// The content type of every module in [`MODULES`].
const MODULE_TYPE: &str = "text/javascript; charset=utf-8";

pub fn routes() -> Vec<Route> {
    let mut routes = vec![
        page("/console", "getConsole", "The demo console: a single page over this REST API (sign in with an API key or the login user).", "text/html"),
        page("/console/console.js", "getConsoleScript", "The console's script.", "text/javascript"),
        page("/console/common.js", "getConsoleCommonScript", "The script the console and the player share (credential, API calls, text-only DOM).", "text/javascript"),
        page("/console/console.css", "getConsoleStyles", "The console's styles.", "text/css"),
        page("/console/player.js", "getPlayerScript", "The browser player's script.", "text/javascript"),
        page("/console/player.css", "getPlayerStyles", "The browser player's styles.", "text/css"),
        page(crate::http::reveals::PAGE, "getSecretRevealPage", "A one-time page that shows a secret made through MCP (a rotated webhook secret) to the person, never to the assistant.", "text/html"),
        Route::post(crate::http::reveals::PAGE, "revealSecret", Action::Public, reveal_secret)
            .tag("console")
            .summary("Trade the token of a one-time reveal link (`/console/reveal#…`) for its secret: once, within `mcp.secret_reveal_ttl_secs`; 410 `secret_reveal_gone` after.")
            .body("SecretRevealRequest")
            .ok("SecretReveal")
            .may_return(&[410])
            .not_idempotent()
            .hidden(),
        Route::get("/player/{device_id}", "getPlayer", Action::Public, player)
            .no_tool("an HTML page that acts as a screen, not data")
            .tag("console")
            .summary("A full-screen page that behaves as this screen: plays its active ads, sends heartbeats and proof-of-play.")
            .query(&[param(
                "slot",
                r#"{"type":"integer","minimum":1,"maximum":3600}"#,
                "Seconds each ad is shown, instead of its own duration (demos and tests).",
            )])
            .produces("text/html")
            .hidden(),
    ];
    routes.extend(
        MODULES
            .iter()
            .map(|(path, op, summary, _)| page(path, op, summary, "text/javascript")),
    );
    routes
}

fn page(path: &'static str, op: &'static str, summary: &'static str, media: &'static str) -> Route {
    // Pages for people, not API operations: listed in the book's endpoints page, left out of the OpenAPI document.
    Route::get(path, op, Action::Public, asset)
        .no_tool("a page of the console, or its script or stylesheet: for people, not data")
        .tag("console")
        .summary(summary)
        .produces(media)
        .hidden()
}

pub fn schemas() -> Vec<(&'static str, serde_json::Value)> {
    reveal::schemas()
}

fn with_policy(resp: Response) -> Response {
    with_policy_cached(resp, "no-cache")
}

/// The policy, and how a cache may keep the answer: the reveal page and its secret never.
fn with_policy_cached(resp: Response, cache: &'static str) -> Response {
    resp.with_header("content-security-policy", CSP)
        .with_header("referrer-policy", "no-referrer")
        .with_header("cache-control", cache)
}

fn reveal_secret(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    reveal::redeem(ctx).map(|r| with_policy_cached(r, "no-store"))
}

fn asset(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let path = ctx.route.path;
    let (content_type, body) = ASSETS
        .iter()
        .find(|(p, _, _)| *p == path)
        .map(|(_, t, b)| (*t, *b))
        .or_else(|| {
            MODULES
                .iter()
                .find(|(p, _, _, _)| *p == path)
                .map(|(_, _, _, b)| (MODULE_TYPE, *b))
        })
        .ok_or_else(|| ApiError::NotFound(format!("There is no console asset at `{path}`.")))?;
    let cache = if path == crate::http::reveals::PAGE {
        "no-store"
    } else {
        "no-cache"
    };
    Ok(with_policy_cached(
        Response::new(StatusCode::OK, content_type, body),
        cache,
    ))
}

fn player(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("device_id");
    if !crate::ids::is_valid(crate::ids::Kind::Device, id) {
        return Err(ApiError::NotFound(
            "A player page is at /player/{device_id}, with the id of a device (`dev_…`).".into(),
        ));
    }
    if let Some(slot) = ctx.query("slot") {
        if !slot
            .parse::<u32>()
            .is_ok_and(|s| (1..=MAX_SLOT_SECS).contains(&s))
        {
            return Err(ApiError::invalid(
                "slot",
                "out_of_range",
                format!("must be a whole number of seconds from 1 to {MAX_SLOT_SECS}"),
            ));
        }
    }
    Ok(with_policy(Response::new(
        StatusCode::OK,
        "text/html; charset=utf-8",
        PLAYER_HTML,
    )))
}
