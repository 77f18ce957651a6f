//! Webhook integrations of a company, and the catalogue of event types they can subscribe to.
//!
//! The signing secret is generated here and returned once, in the creation (or rotation) response;
//! every other response (and every event payload) carries only its last four characters. Delivery
//! itself is [`crate::webhooks`]; the delivery log and its control are [`deliveries`]; the event
//! types and their examples are [`event_types`].

mod access;
pub mod deliveries;
mod event_types;
mod payloads;
mod rotate;
mod tools;
mod webhook;

pub use payloads::payloads;
pub use webhook::Webhook;
use webhook::{load, load_visible, WEBHOOK_SELECT};

use crate::events::EVENT_TYPES;
use crate::http::router::{param, Change, Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{Kind, WebhookId};
use crate::outbound::{self, TargetPolicy};
use crate::routes::queries::fetch_page;
use crate::validate::OneOf;
use crate::validate::{is_url, url_host, url_pattern, Errors, Text, UrlSchemes};
use access::{READ, WRITE};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

const DESCRIPTION: Text = Text::new(0, 500);

pub fn routes() -> Vec<Route> {
    let mut routes = vec![
        Route::get("/webhooks", "listWebhooks", READ, list)
            .tool(Tool::read(
                "list_webhooks",
                "List webhooks",
                &[],
                "Webhook integrations: target URL, event types, enabled. Signing secrets are never shown.",
            ))
            .tag("webhooks")
            .summary("List webhook integrations of the visible companies (secrets masked).")
            .describe("The webhook endpoints of the visible companies, with their event types and enabled flag; secrets are masked to their last four characters.")
            .paged_by(Kind::Webhook)
            .query(&[param(
                "company_id",
                Kind::Company.schema(),
                "Only webhooks of this company.",
            )])
            .ok("WebhookList"),
        Route::post("/webhooks", "createWebhook", WRITE, create)
            .tool(tools::CREATE)
            .tag("webhooks")
            .summary("Create a webhook. The signing `secret` is in this response only; store it now.")
            .describe("Registers an HTTPS endpoint to receive signed deliveries of the chosen event types. The signing `secret` is in this response only (it is never stored in a replayable form): keep it to verify signatures. Emits `webhook.created`. A company may have `webhooks.max_per_company` webhooks (16 by default): one more is 422 `webhook_limit` with the numbers.")
            .etag()
            .body("WebhookCreate")
            .created("WebhookWithSecret"),
        Route::get("/webhooks/{id}", "getWebhook", READ, get)
            .tool(Tool::read(
                "get_webhook",
                "Get webhook",
                &[("webhook_id", "The webhook id (`wh_…`), as returned by list_webhooks.")],
                "One webhook: URL, description, event types, enabled; its secret's last four characters only.",
            ))
            .tag("webhooks")
            .summary("Get one webhook (secret masked to its last four characters).")
            .describe("One webhook endpoint, its secret masked, and its `ETag`.")
            .etag()
            .ok("Webhook"),
        Route::patch("/webhooks/{id}", "updateWebhook", WRITE, update)
            .tool(Tool::prepare(
                "prepare_webhook_change",
                "Prepare a webhook change",
                &[("webhook_id", "The webhook (`wh_…`).")],
                Change::Fields(&["url", "description", "event_types", "enabled"]),
                "Prepare a change to a webhook (`enabled: false` pauses it). This executes NOTHING: it checks the change as the write would and returns a preview and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
            ).asking("Change the webhook {target} of {company}; deliveries follow the new settings from now on. Webhooks subscribed to webhook.updated are notified."))
            .tag("webhooks")
            .summary("Update a webhook's URL, description, event types or enabled flag. Honours If-Match.")
            .describe("Changes a webhook's URL, description, event types or enabled flag; give only the fields to change. Emits `webhook.updated`.")
            .etag()
            .body("WebhookUpdate")
            .ok("Webhook"),
        Route::delete("/webhooks/{id}", "deleteWebhook", WRITE, delete)
            .tool(tools::DELETE)
            .tag("webhooks")
            .summary("Delete a webhook. Honours If-Match.")
            .describe("Deletes a webhook endpoint; no further deliveries. Emits `webhook.deleted`."),
        Route::get(
            "/webhook-event-types",
            "listWebhookEventTypes",
            READ,
            event_types::list,
        )
        .no_tool("a fixed list, given in list_webhooks' results")
        .tag("webhooks")
        .summary("The event types a webhook can subscribe to, each with an example delivery body.")
        .describe("Every event type a webhook can subscribe to, each with a description and an example delivery body.")
        .ok("WebhookEventTypeList"),
    ];
    routes.extend(rotate::routes());
    routes.extend(deliveries::routes());
    routes
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    let (webhook, with_secret) = webhook::schemas();
    let mut out = vec![
        ("Webhook", webhook),
        ("WebhookWithSecret", with_secret),
        crate::jsonschema::named_body::<WebhookCreate>(),
        crate::jsonschema::named_body::<WebhookUpdate>(),
        crate::jsonschema::named_response::<event_types::EventType>(),
    ];
    out.extend(deliveries::schemas());
    out
}

/// The URL's shape, then its target: the host must not be an address webhooks may not reach
/// ([`crate::outbound`]; delivery checks the resolved addresses again).
fn check_url(ctx: &Ctx<'_>, errors: &mut Errors, value: &str) {
    if !is_url(value, UrlSchemes::HttpsOrLoopback) {
        errors.url("/url", value, UrlSchemes::HttpsOrLoopback);
        return;
    }
    let own_port = ctx
        .app
        .settings
        .public_base_url
        .as_deref()
        .and_then(|b| b.rsplit_once(':'))
        .and_then(|(_, p)| p.parse().ok());
    if outbound::self_sink(value, own_port).is_some() {
        return;
    }
    let policy = TargetPolicy {
        allow_private: ctx.app.settings.webhook_allow_private_targets,
    };
    if let Err(refusal) = outbound::check_host(url_host(value), policy) {
        errors.push("/url", refusal.code(), refusal.message());
    }
}

fn check_event_types(errors: &mut Errors, types: &[String]) {
    if types.is_empty() {
        errors.push("/event_types", "empty", "Give at least one event type.");
    }
    for (i, t) in types.iter().enumerate() {
        if !EVENT_TYPES.contains(&t.as_str()) {
            errors.push(
                &format!("/event_types/{i}"),
                "unknown_event_type",
                "Not an event type; see GET /webhook-event-types.",
            );
        } else if types[..i].contains(t) {
            errors.push(
                &format!("/event_types/{i}"),
                "duplicate",
                "Each event type may be listed once.",
            );
        }
    }
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let companies = ctx.list_companies()?;
    let conn = ctx.conn()?;
    let rows = fetch_page(
        &conn,
        WEBHOOK_SELECT,
        crate::routes::queries::Owner::with_account("w.company_id", "w.account_id"),
        "w.id",
        &companies,
        &[],
        &page,
        Webhook::from_row,
    )?;
    Ok(Response::page(rows, &page))
}

fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: WebhookId = ctx.path()?;
    let conn = ctx.conn()?;
    let hook = load_visible(ctx, &conn, &id)?;
    Ok(Response::ok(&hook).with_etag(hook.version))
}

/// A webhook endpoint to register.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WebhookCreate {
    #[schemars(transform = Kind::Company)]
    company_id: String,
    /// `https://…` (`http://localhost` or `127.0.0.1` for local receivers). No link-local,
    /// multicast or metadata address; private ones only with `webhooks.allow_private_targets`.
    #[schemars(length(min = 9, max = 2048), regex(pattern = url_pattern(UrlSchemes::HttpsOrLoopback)))]
    url: String,
    /// What the webhook is for (free text).
    #[serde(default)]
    #[schemars(transform = &DESCRIPTION)]
    description: String,
    /// Event types to deliver: the `type` values of `GET /events` (list_events).
    #[schemars(length(min = 1), transform = crate::jsonschema::Items(&OneOf(EVENT_TYPES)), extend("uniqueItems" = true))]
    event_types: Vec<String>,
    /// `false` pauses deliveries.
    #[serde(default = "yes")]
    enabled: bool,
}

fn yes() -> bool {
    true
}

fn create(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: WebhookCreate = ctx.json()?;
    let mut errors = Errors::new();
    if !crate::ids::is_valid(Kind::Company, &input.company_id) {
        errors.push(
            "/company_id",
            "invalid_id",
            "Must be a company id (`cmp_…`).",
        );
    }
    check_url(ctx, &mut errors, &input.url);
    DESCRIPTION.check(&mut errors, "/description", &input.description);
    check_event_types(&mut errors, &input.event_types);
    errors.finish()?;
    let company = input.company_id.clone();
    ctx.authorize_company(&company, "company", &company)?;
    let id = ctx.generate::<WebhookId>();
    let secret = format!(
        "whsec_{}",
        crate::random::base62(ctx.seeded(), "webhook_secret", 32)
    );
    let types =
        serde_json::to_string(&input.event_types).map_err(|e| ApiError::Internal(e.to_string()))?;
    let now = ctx.now();
    let limit = ctx.app.settings.webhook_max_per_company;
    ctx.db.write(ctx.intent, |tx| {
        // Counted in the write transaction, so two concurrent creates cannot both pass the bound.
        let used: i64 = tx
            .prepare_cached("SELECT count(*) FROM webhooks WHERE company_id = ?1")?
            .query_row([&company], |r| r.get(0))?;
        if used >= limit as i64 {
            return Err(ApiError::QuotaExceeded {
                code: "webhook_limit",
                detail: format!(
                    "This company already has {used} webhooks, the most it may have ({limit}); delete one first, or send several event types to one webhook."
                ),
                numbers: serde_json::json!({"limit": limit, "used": used, "requested": 1}),
            });
        }
        tx.prepare_cached(
            "INSERT INTO webhooks (id, company_id, url, description, event_types, enabled, secret, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
        )?
        .execute(rusqlite::params![
            id,
            company,
            input.url,
            input.description.trim(),
            types,
            i64::from(input.enabled),
            secret,
            now
        ])?;
        let hook = load(tx, &id)?;
        crate::events::record(tx, &company, "webhook.created", "webhook", &id, &hook)?;
        let shown = Webhook {
            secret: Some(secret),
            ..hook
        };
        Ok(Response::created(&shown)
            .with_etag(shown.version)
            .with_header("cache-control", "no-store"))
    })
}

/// Webhook fields to change; absent fields keep their value.
// `null` is read (not refused by serde) so that it is a 422 naming the field.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1))]
struct WebhookUpdate {
    /// `https://…` (`http://localhost` or `127.0.0.1` for local receivers). No link-local,
    /// multicast or metadata address; private ones only with `webhooks.allow_private_targets`.
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "String", length(min = 9, max = 2048), regex(pattern = url_pattern(UrlSchemes::HttpsOrLoopback)))]
    url: Option<Option<String>>,
    /// What the webhook is for (free text).
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "String", transform = &DESCRIPTION)]
    description: Option<Option<String>>,
    /// Event types to deliver: the `type` values of `GET /events` (list_events).
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "Vec<String>", length(min = 1), transform = crate::jsonschema::Items(&OneOf(EVENT_TYPES)), extend("uniqueItems" = true))]
    event_types: Option<Option<Vec<String>>>,
    /// `false` pauses deliveries.
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "bool")]
    enabled: Option<Option<bool>>,
}

fn update(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: WebhookId = ctx.path()?;
    {
        let conn = ctx.conn()?;
        load_visible(ctx, &conn, &id)?;
    }
    let input: WebhookUpdate = ctx.json()?;
    let mut errors = Errors::new();
    let mut sets: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    if input.url.is_none()
        && input.description.is_none()
        && input.event_types.is_none()
        && input.enabled.is_none()
    {
        errors.push("", "empty", "Give at least one field to change.");
    }
    let null = |errors: &mut Errors, field: &str| errors.push(field, "null", "Must not be null.");
    match input.url {
        Some(Some(u)) => {
            check_url(ctx, &mut errors, &u);
            sets.push(("url", u.into()));
        }
        Some(None) => null(&mut errors, "/url"),
        None => {}
    }
    match input.description {
        Some(Some(d)) => {
            DESCRIPTION.check(&mut errors, "/description", &d);
            sets.push(("description", d.trim().to_string().into()));
        }
        Some(None) => null(&mut errors, "/description"),
        None => {}
    }
    match input.event_types {
        Some(Some(t)) => {
            check_event_types(&mut errors, &t);
            let json = serde_json::to_string(&t).map_err(|e| ApiError::Internal(e.to_string()))?;
            sets.push(("event_types", json.into()));
        }
        Some(None) => null(&mut errors, "/event_types"),
        None => {}
    }
    match input.enabled {
        Some(Some(e)) => sets.push(("enabled", i64::from(e).into())),
        Some(None) => null(&mut errors, "/enabled"),
        None => {}
    }
    errors.finish()?;
    let now = ctx.now();
    ctx.db.write(ctx.intent, |tx| {
        let current = load_visible(ctx, tx, &id)?;
        let company = current.company_id;
        ctx.check_if_match(current.version)?;
        crate::routes::queries::update_versioned(tx, "webhooks", "id", &id, now, &sets)?;
        let hook = load(tx, &id)?;
        crate::events::record(tx, &company, "webhook.updated", "webhook", &id, &hook)?;
        Ok(Response::ok(&hook).with_etag(hook.version))
    })
}

fn delete(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: WebhookId = ctx.path()?;
    ctx.db.write(ctx.intent, |tx| {
        let current = load_visible(ctx, tx, &id)?;
        ctx.check_if_match(current.version)?;
        tx.execute("DELETE FROM webhooks WHERE id = ?1", [&id])?;
        // The deletion event carries the whole (masked) webhook, not the usual stub.
        crate::events::record(
            tx,
            &current.company_id,
            "webhook.deleted",
            "webhook",
            &id,
            &current,
        )?;
        Ok(Response::no_content())
    })
}
