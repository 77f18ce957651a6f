//! Webhook integrations of a company, and the catalogue of event types they can subscribe to.
//!
//! The signing secret is generated here and returned once, in the creation response; every other
//! response (and every event payload) carries only its last four characters.

use crate::auth::{Action, Area, Level};
use crate::events::{self, EVENT_TYPES};
use crate::http::router::{param, Route};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{self, Kind};
use crate::outbound::{self, TargetPolicy};
use crate::routes::fetch_page;
use crate::time::rfc3339;
use crate::validate::{is_url, text_schema, url_host, url_pattern, Errors, UrlSchemes};
use rusqlite::{Connection, OptionalExtension, Row};
use serde::Deserialize;
use serde_json::{json, Value};

const READ: Action = Action::Use(Area::Webhooks, Level::Read);
const WRITE: Action = Action::Use(Area::Webhooks, Level::Write);

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/webhooks", "listWebhooks", READ, list)
            .tag("webhooks")
            .summary("List webhook integrations of the visible companies (secrets masked).")
            .paged_by(Kind::Webhook)
            .query(&[param(
                "company_id",
                r#"{"type":"string","pattern":"^cmp_[0-9A-Za-z]{1,64}$"}"#,
                "Only webhooks of this company.",
            )])
            .ok("WebhookList"),
        Route::post("/webhooks", "createWebhook", WRITE, create)
            .tag("webhooks")
            .summary("Create a webhook. The signing `secret` is in this response only; store it now.")
            .body("WebhookCreate")
            .created("WebhookWithSecret"),
        Route::get("/webhooks/{id}", "getWebhook", READ, get)
            .tag("webhooks")
            .summary("Get one webhook (secret masked to its last four characters).")
            .ok("Webhook"),
        Route::patch("/webhooks/{id}", "updateWebhook", WRITE, update)
            .tag("webhooks")
            .summary("Update a webhook's URL, description, event types or enabled flag. Honours If-Match.")
            .body("WebhookUpdate")
            .ok("Webhook"),
        Route::delete("/webhooks/{id}", "deleteWebhook", WRITE, delete)
            .tag("webhooks")
            .summary("Delete a webhook. Honours If-Match."),
        Route::get(
            "/webhook-event-types",
            "listWebhookEventTypes",
            READ,
            event_types,
        )
        .tag("webhooks")
        .summary("The event types a webhook can subscribe to.")
        .ok("WebhookEventTypeList"),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    let ts = json!({"type":"string","format":"date-time"});
    let props = json!({"id":{"type":"string","pattern":"^wh_"},"object":{"const":"webhook"},
        "company_id":{"type":"string"},"url":{"type":"string"},"description":{"type":"string"},
        "event_types":{"type":"array","items":{"type":"string","enum":EVENT_TYPES}},
        "enabled":{"type":"boolean"},
        "secret_last4":{"type":"string","description":"The last four characters of the signing secret."},
        "created_at":ts,"updated_at":ts});
    let required = json!([
        "id",
        "object",
        "company_id",
        "url",
        "description",
        "event_types",
        "enabled",
        "secret_last4",
        "created_at",
        "updated_at"
    ]);
    let mut with_secret = props.clone();
    with_secret["secret"] = json!({"type":"string","pattern":"^whsec_[0-9A-Za-z]{32}$",
        "description":"The signing secret. Shown only in this response."});
    let mut with_secret_required = required.clone();
    if let Some(a) = with_secret_required.as_array_mut() {
        a.push(json!("secret"));
    }
    let fields = json!({
        "url":{"type":"string","minLength":9,"maxLength":2048,"pattern":url_pattern(UrlSchemes::HttpsOrLoopback),
            "description":"`https://…`, or `http://localhost` / `http://127.0.0.1` for local receivers. Never a link-local, multicast, unspecified, broadcast or cloud-metadata address (422); loopback and private ranges only while `webhooks.allow_private_targets` is on."},
        "description":text_schema(0, 500),
        "event_types":{"type":"array","minItems":1,"uniqueItems":true,
            "items":{"type":"string","enum":EVENT_TYPES}},
        "enabled":{"type":"boolean"}
    });
    let mut create_fields = fields.clone();
    create_fields["company_id"] = json!({"type":"string","pattern":"^cmp_[0-9A-Za-z]{1,64}$"});
    vec![
        (
            "Webhook",
            json!({"type":"object","additionalProperties":false,"required":required,"properties":props}),
        ),
        (
            "WebhookWithSecret",
            json!({"type":"object","additionalProperties":false,"required":with_secret_required,
                "properties":with_secret}),
        ),
        (
            "WebhookCreate",
            json!({"type":"object","additionalProperties":false,
                "required":["company_id","url","event_types"],"properties":create_fields}),
        ),
        (
            "WebhookUpdate",
            json!({"type":"object","additionalProperties":false,"minProperties":1,"properties":fields}),
        ),
        (
            "WebhookEventType",
            json!({"type":"object","additionalProperties":false,"required":["type","description"],
                "properties":{"type":{"type":"string","enum":EVENT_TYPES},"description":{"type":"string"}}}),
        ),
    ]
}

fn describe(event_type: &str) -> &'static str {
    match event_type {
        "device.created" => "A screen was registered.",
        "device.updated" => "A screen's details changed.",
        "device.deleted" => "A screen was removed.",
        "device.heartbeat" => "A screen reported in.",
        "ad.created" => "An ad was created.",
        "ad.updated" => "An ad changed (content, status or schedule).",
        "ad.deleted" => "An ad was deleted.",
        "ad.assigned" => "An ad was assigned to a screen.",
        "ad.unassigned" => "An ad was removed from a screen.",
        "promotion.created" => "A promotion was created.",
        "promotion.updated" => "A promotion's details changed.",
        "promotion.activated" => "A promotion was switched on (its token cost was spent).",
        "promotion.deactivated" => "A promotion was switched off.",
        "media.created" => "A media item was uploaded.",
        "media.deleted" => "A media item was deleted.",
        "tokens.purchased" => "A token pack was bought.",
        "tokens.spent" => "Tokens were spent (promotion activation).",
        "branding.updated" => "A company's brand tokens changed.",
        "webhook.created" => "A webhook was created.",
        "webhook.updated" => "A webhook changed.",
        "webhook.deleted" => "A webhook was deleted.",
        _ => "An event.",
    }
}

const WEBHOOK_SELECT: &str = "SELECT w.id, w.company_id, w.url, w.description, w.event_types,
    w.enabled, w.secret, w.created_at, w.updated_at, w.version FROM webhooks w";

/// The public view of a webhook: the secret reduced to its last four characters.
fn webhook_json(r: &Row<'_>) -> rusqlite::Result<Value> {
    let types: String = r.get(4)?;
    let types: Vec<String> = serde_json::from_str(&types).unwrap_or_default();
    let secret: String = r.get(6)?;
    let last4: String = {
        let chars: Vec<char> = secret.chars().collect();
        chars[chars.len().saturating_sub(4)..].iter().collect()
    };
    Ok(json!({
        "id": r.get::<_, String>(0)?,
        "object": "webhook",
        "company_id": r.get::<_, String>(1)?,
        "url": r.get::<_, String>(2)?,
        "description": r.get::<_, String>(3)?,
        "event_types": types,
        "enabled": r.get::<_, i64>(5)? == 1,
        "secret_last4": last4,
        "created_at": rfc3339(r.get(7)?),
        "updated_at": rfc3339(r.get(8)?),
    }))
}

fn load(conn: &Connection, id: &str) -> Result<Option<(Value, i64)>, ApiError> {
    Ok(conn
        .prepare_cached(&format!("{WEBHOOK_SELECT} WHERE w.id = ?1"))?
        .query_row([id], |r| Ok((webhook_json(r)?, r.get::<_, i64>(9)?)))
        .optional()?)
}

/// Loads a webhook and checks its company against the route's action; missing and invisible are
/// the same 404.
fn load_visible(ctx: &Ctx<'_>, conn: &Connection, id: &str) -> Result<(Value, i64), ApiError> {
    if !ids::is_valid(Kind::Webhook, id) {
        return Err(ApiError::not_found("webhook", id));
    }
    let (hook, version) = load(conn, id)?.ok_or_else(|| ApiError::not_found("webhook", id))?;
    ctx.authorize_company(hook["company_id"].as_str().unwrap_or(""), "webhook", id)?;
    Ok((hook, version))
}

/// The URL's shape, then its target: the host must not be an address webhooks may not reach
/// ([`crate::outbound`]; delivery checks the resolved addresses again).
fn check_url(ctx: &Ctx<'_>, errors: &mut Errors, value: &str) {
    if !is_url(value, UrlSchemes::HttpsOrLoopback) {
        errors.url("/url", value, UrlSchemes::HttpsOrLoopback);
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
    let conn = ctx.app.db.conn()?;
    let rows = fetch_page(
        &conn,
        WEBHOOK_SELECT,
        "w.company_id",
        "w.id",
        &companies,
        &[],
        &page,
        webhook_json,
    )?;
    Ok(Response::page(rows, &page))
}

fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    let conn = ctx.app.db.conn()?;
    let (hook, version) = load_visible(ctx, &conn, &id)?;
    Ok(Response::ok(&hook).with_etag(version))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookCreate {
    company_id: String,
    url: String,
    #[serde(default)]
    description: String,
    event_types: Vec<String>,
    #[serde(default = "yes")]
    enabled: bool,
}

fn yes() -> bool {
    true
}

fn create(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: WebhookCreate = ctx.json()?;
    let mut errors = Errors::new();
    if !ids::is_valid(Kind::Company, &input.company_id) {
        errors.push(
            "/company_id",
            "invalid_id",
            "Must be a company id (`cmp_…`).",
        );
    }
    check_url(ctx, &mut errors, &input.url);
    errors.text("/description", &input.description, 0, 500);
    check_event_types(&mut errors, &input.event_types);
    errors.finish()?;
    let company = input.company_id.clone();
    ctx.authorize_company(&company, "company", &company)?;
    let id = ids::new_id(Kind::Webhook);
    let secret = format!("whsec_{}", crate::random::base62(32));
    let types =
        serde_json::to_string(&input.event_types).map_err(|e| ApiError::Internal(e.to_string()))?;
    let now = crate::time::now();
    ctx.app.db.write(|tx| {
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
        let (hook, version) =
            load(tx, &id)?.ok_or_else(|| ApiError::Internal("webhook vanished".into()))?;
        events::record(tx, &company, "webhook.created", "webhook", &id, &hook)?;
        let mut shown = hook;
        shown["secret"] = json!(secret);
        Ok(Response::created(&shown)
            .with_etag(version)
            .with_header("cache-control", "no-store"))
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookUpdate {
    #[serde(default, deserialize_with = "crate::routes::nullable")]
    url: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::routes::nullable")]
    description: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::routes::nullable")]
    event_types: Option<Option<Vec<String>>>,
    #[serde(default, deserialize_with = "crate::routes::nullable")]
    enabled: Option<Option<bool>>,
}

fn update(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    {
        let conn = ctx.app.db.conn()?;
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
            errors.text("/description", &d, 0, 500);
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
    let now = crate::time::now();
    ctx.app.db.write(|tx| {
        let (current, version) =
            load(tx, &id)?.ok_or_else(|| ApiError::not_found("webhook", &id))?;
        let company = current["company_id"].as_str().unwrap_or("").to_string();
        ctx.authorize_company(&company, "webhook", &id)?;
        ctx.check_if_match(version)?;
        crate::routes::update_versioned(tx, "webhooks", "id", &id, now, &sets)?;
        let (hook, version) = load(tx, &id)?.ok_or_else(|| ApiError::not_found("webhook", &id))?;
        events::record(tx, &company, "webhook.updated", "webhook", &id, &hook)?;
        Ok(Response::ok(&hook).with_etag(version))
    })
}

fn delete(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    if !ids::is_valid(Kind::Webhook, &id) {
        return Err(ApiError::not_found("webhook", &id));
    }
    ctx.app.db.write(|tx| {
        let (current, version) =
            load(tx, &id)?.ok_or_else(|| ApiError::not_found("webhook", &id))?;
        let company = current["company_id"].as_str().unwrap_or("").to_string();
        ctx.authorize_company(&company, "webhook", &id)?;
        ctx.check_if_match(version)?;
        tx.execute("DELETE FROM webhooks WHERE id = ?1", [&id])?;
        events::record(tx, &company, "webhook.deleted", "webhook", &id, &current)?;
        Ok(Response::no_content())
    })
}

fn event_types(_ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let data: Vec<Value> = EVENT_TYPES
        .iter()
        .map(|t| json!({"type": t, "description": describe(t)}))
        .collect();
    Ok(Response::ok(
        &json!({"object": "list", "data": data, "has_more": false, "next_cursor": null}),
    ))
}
