//! A promotion's create, read and update handlers.

use super::fields::{DESCRIPTION, MAX_ACTIVATION_COST, NAME, STATES};
use super::promotion::{load, load_visible, Promotion, PROMO_SELECT};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{Kind, PromotionId};
use crate::routes::queries::fetch_page;
use crate::time::parse_rfc3339;
use crate::validate::{url_pattern, Errors, UrlSchemes};
use schemars::JsonSchema;
use serde::Deserialize;

pub(super) fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let companies = ctx.list_companies()?;
    let now = ctx.now();
    // Each clause carries exactly one `?`, bound to now: `? BETWEEN starts_at AND ends_at - 1` is
    // "now in [starts_at, ends_at)" for whole seconds.
    let running = "(p.active = 1 AND ? BETWEEN p.starts_at AND p.ends_at - 1)";
    let not_running = "NOT (p.active = 1 AND ? BETWEEN p.starts_at AND p.ends_at - 1)";
    let mut filters: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    match ctx.query_bool("active")? {
        Some(true) => filters.push((running, now.into())),
        Some(false) => filters.push((not_running, now.into())),
        None => {}
    }
    if let Some(s) = ctx.query_enum("state", STATES)? {
        let clause = match s.as_str() {
            "expired" => "p.ends_at <= ?",
            "scheduled" => "(p.active = 1 AND p.starts_at > ?)",
            "active" => running,
            _ => "(p.active = 0 AND p.ends_at > ?)",
        };
        filters.push((clause, now.into()));
    }
    if let Some(like) = crate::routes::search::pattern(ctx)? {
        filters.push(("p.name LIKE ? ESCAPE '\\'", like));
    }
    let conn = ctx.conn()?;
    let rows = fetch_page(
        &conn,
        PROMO_SELECT,
        crate::routes::queries::Owner::with_account("p.company_id", "p.account_id"),
        "p.id",
        &companies,
        &filters,
        &page,
        |r| Promotion::from_row(r, now),
    )?;
    Ok(Response::page(rows, &page))
}

pub(super) fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: PromotionId = ctx.path()?;
    let conn = ctx.conn()?;
    let promo = load_visible(ctx, &conn, &id, ctx.now())?;
    Ok(Response::ok(&promo).with_etag(promo.version))
}

fn parse_time(errors: &mut Errors, field: &str, value: &str) -> Option<i64> {
    let t = parse_rfc3339(value);
    if t.is_none() {
        errors.push(
            field,
            "invalid_datetime",
            "Must be an RFC 3339 date-time, for example 2026-03-01T09:00:00Z.",
        );
    }
    t
}

/// Checks the free-text and numeric fields shared by create and update.
fn check_fields(
    errors: &mut Errors,
    name: Option<&str>,
    description: Option<&str>,
    landing_url: Option<&str>,
    discount: Option<i64>,
    cost: Option<i64>,
) {
    if let Some(n) = name {
        NAME.check(errors, "/name", n);
    }
    if let Some(d) = description {
        DESCRIPTION.check(errors, "/description", d);
    }
    if let Some(u) = landing_url {
        errors.url("/landing_url", u, UrlSchemes::Web);
    }
    if let Some(d) = discount {
        errors.range("/discount_percent", d, 1, 100);
    }
    if let Some(c) = cost {
        errors.range("/activation_cost_tokens", c, 0, MAX_ACTIVATION_COST);
    }
}

fn check_window(errors: &mut Errors, starts_at: i64, ends_at: i64) {
    if ends_at <= starts_at {
        errors.push("/ends_at", "before_start", "Must be after `starts_at`.");
    }
}

/// A promotion to create (it starts inactive).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct PromotionCreate {
    #[schemars(transform = Kind::Company)]
    company_id: String,
    /// What people call it.
    #[schemars(transform = &NAME)]
    name: String,
    /// The offer, in words shown to people.
    #[schemars(transform = &DESCRIPTION)]
    description: String,
    /// Where its QR codes send people.
    // Absent or `null`: the sandbox's landing page.
    #[serde(default)]
    #[schemars(length(min = 8, max = 2048), regex(pattern = url_pattern(UrlSchemes::Web)))]
    landing_url: Option<String>,
    /// Percent off, or null for none.
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    discount_percent: Option<i64>,
    /// Tokens its activation will spend: the user's choice, no plan or pack sets it; ask.
    #[schemars(range(min = 0, max = MAX_ACTIVATION_COST))]
    activation_cost_tokens: i64,
    /// When it starts (RFC 3339).
    #[schemars(extend("format" = "date-time"))]
    starts_at: String,
    /// Must be after `starts_at`.
    #[schemars(extend("format" = "date-time"))]
    ends_at: String,
}

pub(super) fn create(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: PromotionCreate = ctx.json()?;
    let mut errors = Errors::new();
    if !crate::ids::is_valid(Kind::Company, &input.company_id) {
        errors.push(
            "/company_id",
            "invalid_id",
            "Must be a company id (`cmp_…`).",
        );
    }
    check_fields(
        &mut errors,
        Some(&input.name),
        Some(&input.description),
        input.landing_url.as_deref(),
        input.discount_percent,
        Some(input.activation_cost_tokens),
    );
    let starts = parse_time(&mut errors, "/starts_at", &input.starts_at);
    let ends = parse_time(&mut errors, "/ends_at", &input.ends_at);
    if let (Some(s), Some(e)) = (starts, ends) {
        check_window(&mut errors, s, e);
    }
    errors.finish()?;
    let (starts, ends) = (starts.unwrap_or_default(), ends.unwrap_or_default());
    let company = input.company_id.clone();
    ctx.authorize_company(&company, "company", &company)?;
    let id = ctx.generate::<PromotionId>();
    let now = ctx.now();
    ctx.db.write(ctx.intent, |tx| {
        if let Some(url) = &input.landing_url {
            let mut errors = Errors::new();
            let domains = crate::routes::landing_domains::of_company(tx, &company)?;
            crate::routes::landing_domains::check(&mut errors, "/landing_url", url, &domains);
            errors.finish()?;
        }
        tx.prepare_cached(
            "INSERT INTO promotions (id, company_id, name, description, landing_url, discount_percent,
                activation_cost_tokens, active, starts_at, ends_at, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8, ?9, ?10, ?10)",
        )?
        .execute(rusqlite::params![
            id,
            company,
            input.name.trim(),
            input.description.trim(),
            input.landing_url.as_deref().unwrap_or_default(),
            input.discount_percent,
            input.activation_cost_tokens,
            starts,
            ends,
            now
        ])?;
        let promo = load(tx, &id, now)?;
        crate::events::record(tx, &company, "promotion.created", "promotion", &id, &promo)?;
        Ok(Response::created(&promo).with_etag(promo.version))
    })
}

/// Promotion fields to change; absent fields keep their value. `null` is accepted only for
/// `discount_percent` (no discount) and `landing_url` (the sandbox's landing page).
// `null` is read (not refused by serde) so that a field that cannot be cleared is a 422 naming it.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1))]
pub(super) struct PromotionUpdate {
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "String", transform = &NAME)]
    name: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "String", transform = &DESCRIPTION)]
    description: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "Option<String>", length(min = 8, max = 2048), regex(pattern = url_pattern(UrlSchemes::Web)))]
    landing_url: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "Option<i64>", range(min = 1, max = 100))]
    discount_percent: Option<Option<i64>>,
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "i64", range(min = 0, max = MAX_ACTIVATION_COST))]
    activation_cost_tokens: Option<Option<i64>>,
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    starts_at: Option<Option<String>>,
    /// Must be after `starts_at`.
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    ends_at: Option<Option<String>>,
}

/// A non-nullable PATCH field: `null` is a 422 rather than silently "keep".
fn not_null<T>(errors: &mut Errors, field: &str, v: Option<Option<T>>) -> Option<T> {
    match v {
        Some(None) => {
            errors.push(field, "null", "Must not be null.");
            None
        }
        Some(Some(x)) => Some(x),
        None => None,
    }
}

pub(super) fn update(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: PromotionId = ctx.path()?;
    let now = ctx.now();
    {
        let conn = ctx.conn()?;
        load_visible(ctx, &conn, &id, now)?;
    }
    let input: PromotionUpdate = ctx.json()?;
    let mut errors = Errors::new();
    let empty = input.name.is_none()
        && input.description.is_none()
        && input.landing_url.is_none()
        && input.discount_percent.is_none()
        && input.activation_cost_tokens.is_none()
        && input.starts_at.is_none()
        && input.ends_at.is_none();
    if empty {
        errors.push("", "empty", "Give at least one field to change.");
    }
    let name = not_null(&mut errors, "/name", input.name);
    let description = not_null(&mut errors, "/description", input.description);
    // `Some(None)`: back to the sandbox's landing page.
    let landing_url = input.landing_url;
    let cost = not_null(
        &mut errors,
        "/activation_cost_tokens",
        input.activation_cost_tokens,
    );
    let starts_raw = not_null(&mut errors, "/starts_at", input.starts_at);
    let ends_raw = not_null(&mut errors, "/ends_at", input.ends_at);
    check_fields(
        &mut errors,
        name.as_deref(),
        description.as_deref(),
        landing_url.as_ref().and_then(|u| u.as_deref()),
        input.discount_percent.flatten(),
        cost,
    );
    let starts = starts_raw.and_then(|s| parse_time(&mut errors, "/starts_at", &s));
    let ends = ends_raw.and_then(|s| parse_time(&mut errors, "/ends_at", &s));
    errors.finish()?;

    let mut sets: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    if let Some(n) = &name {
        sets.push(("name", n.trim().to_string().into()));
    }
    if let Some(d) = &description {
        sets.push(("description", d.trim().to_string().into()));
    }
    if let Some(u) = &landing_url {
        sets.push(("landing_url", u.clone().unwrap_or_default().into()));
    }
    if let Some(d) = input.discount_percent {
        sets.push((
            "discount_percent",
            d.map_or(rusqlite::types::Value::Null, Into::into),
        ));
    }
    if let Some(c) = cost {
        sets.push(("activation_cost_tokens", c.into()));
    }
    if let Some(s) = starts {
        sets.push(("starts_at", s.into()));
    }
    if let Some(e) = ends {
        sets.push(("ends_at", e.into()));
    }

    ctx.db.write(ctx.intent, |tx| {
        let current = load_visible(ctx, tx, &id, now)?;
        let company = current.company_id;
        ctx.check_if_match(current.version)?;
        if let Some(Some(u)) = &landing_url {
            let mut errors = Errors::new();
            let domains = crate::routes::landing_domains::of_company(tx, &company)?;
            crate::routes::landing_domains::check(&mut errors, "/landing_url", u, &domains);
            errors.finish()?;
        }
        let old_window = (current.starts_at.0, current.ends_at.0);
        let (new_start, new_end) = (starts.unwrap_or(old_window.0), ends.unwrap_or(old_window.1));
        if new_end <= new_start && (starts.is_none() || ends.is_none()) {
            // The body alone is consistent; it is the stored window it clashes with.
            return Err(ApiError::Conflict(format!(
                "The promotion would end ({}) before it starts ({}); change both `starts_at` and `ends_at`.",
                crate::time::rfc3339(new_end),
                crate::time::rfc3339(new_start)
            )));
        }
        let mut errors = Errors::new();
        check_window(&mut errors, new_start, new_end);
        errors.finish()?;
        crate::routes::queries::update_versioned(tx, "promotions", "id", &id, now, &sets)?;
        let promo = load(tx, &id, now)?;
        crate::events::record(tx, &company, "promotion.updated", "promotion", &id, &promo)?;
        super::timeline::rearm(tx, &id, now)?;
        Ok(Response::ok(&promo).with_etag(promo.version))
    })
}
