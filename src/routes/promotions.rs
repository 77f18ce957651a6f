//! Promotions, their activation (which spends tokens) and their QR codes.
//!
//! Rules:
//! - `state` is derived at read time from the `active` flag and the window `[starts_at, ends_at)`:
//!   `expired` once `ends_at` has passed (whatever the flag), `scheduled` when switched on but not
//!   started, `active` when switched on and inside the window, `inactive` otherwise.
//! - Activation spends `activation_cost_tokens` in the same transaction that switches the flag on,
//!   so a promotion is never on without having been paid for, nor paid for without being on.
//!   Re-activating an active promotion is a free no-op; an expired one cannot be activated (409).
//! - Deactivation never refunds: the cost buys the activation, not a duration.

use super::crud::{self, Time};
use crate::auth::{Action, Area, Level};
use crate::http::response::Listed;
use crate::http::router::{param, Change, Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{Kind, PromotionId, QrCodeId, TypedId};
use crate::routes::fetch_page;
use crate::time::{parse_rfc3339, rfc3339};
use crate::validate::{id_schema, url_pattern, Errors, OneOf, Text, UrlSchemes};
use hyper::StatusCode;
use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

const READ: Action = Action::Use(Area::Promotions, Level::Read);
const WRITE: Action = Action::Use(Area::Promotions, Level::Write);

pub const STATES: &[&str] = &["active", "inactive", "expired", "scheduled"];
const NAME: Text = Text::new(1, 100);
const DESCRIPTION: Text = Text::new(0, 1000);
pub const MAX_ACTIVATION_COST: i64 = 100_000;

/// Pixels per QR module in the PNG, and the quiet zone in modules (the QR standard's minimum).
const PNG_SCALE: usize = 8;
const QUIET_ZONE: usize = 4;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/promotions", "listPromotions", READ, list)
            .tool(Tool::read(
                "list_promotions",
                "List promotions",
                &[],
                "List promotions, newest first, optionally filtered by company, whether they are active, or their state. Paged with `cursor`.",
            ))
            .tag("promotions")
            .summary("List promotions of the visible companies, newest first.")
            .paged_by(Kind::Promotion)
            .query(&[
                param(
                    "company_id",
                    Kind::Company.schema(),
                    "Only promotions of this company.",
                ),
                param(
                    "active",
                    r#"{"type":"string","enum":["true","false"]}"#,
                    "`true`: switched on and running now (state `active`); `false`: everything else.",
                ),
                param(
                    "state",
                    r#"{"type":"string","enum":["active","inactive","expired","scheduled"]}"#,
                    "Only promotions in this derived state.",
                ),
            ])
            .ok("PromotionList"),
        Route::post("/promotions", "createPromotion", WRITE, create)
            .tag("promotions")
            .summary("Create a promotion. It starts inactive; activating it spends its token cost.")
            .body("PromotionCreate")
            .created("Promotion"),
        Route::get("/promotions/{id}", "getPromotion", READ, get)
            .tool(Tool::read(
                "get_promotion",
                "Get promotion",
                &[("promotion_id", "The promotion id (`promo_…`), as returned by list_promotions.")],
                "Get one promotion: dates, discount, landing page, whether it is active and what activating it costs in tokens.",
            ))
            .tag("promotions")
            .summary("Get one promotion with its derived state and QR code count.")
            .ok("Promotion"),
        Route::patch("/promotions/{id}", "updatePromotion", WRITE, update)
            .tag("promotions")
            .summary("Update a promotion's details. Use activate/deactivate to switch it. Honours If-Match.")
            .body("PromotionUpdate")
            .ok("Promotion"),
        Route::post(
            "/promotions/{id}/activate",
            "activatePromotion",
            WRITE,
            activate,
        )
        .tool(Tool::prepare(
            "prepare_promotion_activation",
            "Prepare a promotion activation",
            &[("promotion_id", "The promotion (`promo_…`), as returned by list_promotions.")],
            Change::Sets("active", true),
            "Prepare the activation of a promotion. This executes NOTHING: it returns a preview with the token cost of the activation and the company's current balance, and a `confirmation_id`. Show the preview (including the cost) to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
        ))
        .tag("promotions")
        .summary("Activate a promotion, spending its `activation_cost_tokens` from the company's balance (402 if too low). Already active: no-op, no charge. Expired: 409. Honours If-Match.")
        .conditional()
        .may_return(&[402])
        .ok("Promotion"),
        Route::post(
            "/promotions/{id}/deactivate",
            "deactivatePromotion",
            WRITE,
            deactivate,
        )
        .tool(Tool::prepare(
            "prepare_promotion_deactivation",
            "Prepare a promotion deactivation",
            &[("promotion_id", "The promotion (`promo_…`), as returned by list_promotions.")],
            Change::Sets("active", false),
            "Prepare the deactivation of an active promotion. This executes NOTHING: it returns a preview and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
        ))
        .tag("promotions")
        .summary("Deactivate a promotion. Tokens spent on activation are not refunded. Honours If-Match.")
        .conditional()
        .ok("Promotion"),
        Route::get(
            "/promotions/{id}/qr-codes",
            "listPromotionQrCodes",
            READ,
            list_qr_codes,
        )
        .tool(Tool::read(
            "get_promotion_qr_codes",
            "Get promotion QR codes",
            &[("promotion_id", "The promotion id (`promo_…`), as returned by list_promotions.")],
            "List the QR codes of a promotion, with their target URLs and scan counts.",
        ))
        .tag("promotions")
        .summary("List a promotion's QR codes, each with an inline SVG image and the URL of its PNG.")
        .paged_by(Kind::QrCode)
        .ok("QrCodeList"),
        Route::get("/qr-codes/{id}/image", "getQrCodeImage", READ, qr_image)
            .tag("promotions")
            .summary("The QR code as an image: `format=svg` (default, image/svg+xml) or `format=png` (image/png, 8 px per module with a 4-module quiet zone).")
            .query(&[param(
                "format",
                r#"{"type":"string","enum":["svg","png"],"default":"svg"}"#,
                "`svg` (image/svg+xml) or `png` (image/png).",
            )])
            .produces("image/svg+xml")
            .produces("image/png"),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    let ts = json!({"type":"string","format":"date-time"});
    let ts_null = json!({"type":["string","null"],"format":"date-time"});
    let fields = json!({
        "name":NAME.schema(),
        "description":DESCRIPTION.schema(),
        "landing_url":{"type":"string","minLength":8,"maxLength":2048,"pattern":url_pattern(UrlSchemes::Web)},
        "discount_percent":{"type":["integer","null"],"minimum":1,"maximum":100},
        "activation_cost_tokens":{"type":"integer","minimum":0,"maximum":MAX_ACTIVATION_COST},
        "starts_at":{"type":"string","format":"date-time"},
        "ends_at":{"type":"string","format":"date-time","description":"Must be after `starts_at`."}
    });
    let mut create_fields = fields.clone();
    create_fields["company_id"] = id_schema(Kind::Company);
    vec![
        (
            "Promotion",
            json!({"type":"object","additionalProperties":false,
                "required":["id","object","company_id","name","description","landing_url","discount_percent",
                    "activation_cost_tokens","active","state","starts_at","ends_at","activated_at",
                    "deactivated_at","qr_code_count","created_at","updated_at"],
                "properties":{"id":{"type":"string","pattern":"^promo_"},"object":{"const":"promotion"},
                    "company_id":{"type":"string"},"name":{"type":"string"},"description":{"type":"string"},
                    "landing_url":{"type":"string"},
                    "discount_percent":{"type":["integer","null"],"minimum":1,"maximum":100},
                    "activation_cost_tokens":{"type":"integer","minimum":0},
                    "active":{"type":"boolean","description":"The on/off switch; see `state` for whether it runs now."},
                    "state":OneOf(STATES).schema(),
                    "starts_at":ts,"ends_at":ts,"activated_at":ts_null,"deactivated_at":ts_null,
                    "qr_code_count":{"type":"integer","minimum":0},
                    "created_at":ts,"updated_at":ts}}),
        ),
        (
            "PromotionCreate",
            json!({"type":"object","additionalProperties":false,
                "required":["company_id","name","description","landing_url","activation_cost_tokens","starts_at","ends_at"],
                "properties":create_fields}),
        ),
        (
            "PromotionUpdate",
            json!({"type":"object","additionalProperties":false,"minProperties":1,"properties":fields}),
        ),
        (
            "QrCode",
            json!({"type":"object","additionalProperties":false,
                "required":["id","object","promotion_id","label","target_url","scan_count","image_svg","image_png_url","created_at"],
                "properties":{"id":{"type":"string","pattern":"^qr_"},"object":{"const":"qr_code"},
                    "promotion_id":{"type":"string"},"label":{"type":"string"},"target_url":{"type":"string"},
                    "scan_count":{"type":"integer","minimum":0},
                    "image_svg":{"type":"string","description":"The QR code as an SVG document."},
                    "image_png_url":{"type":"string","description":"Path of the PNG rendering."},
                    "created_at":ts}}),
        ),
    ]
}

/// A promotion as the API returns it. Field order is the order of the JSON members.
#[derive(Serialize)]
pub struct Promotion {
    id: String,
    object: &'static str,
    company_id: String,
    name: String,
    description: String,
    landing_url: String,
    discount_percent: Option<i64>,
    activation_cost_tokens: i64,
    active: bool,
    state: &'static str,
    starts_at: Time,
    ends_at: Time,
    activated_at: Option<Time>,
    deactivated_at: Option<Time>,
    qr_code_count: i64,
    created_at: Time,
    updated_at: Time,
    /// The ETag's version; not a member of the body.
    #[serde(skip)]
    version: i64,
}

const PROMO_SELECT: &str = "SELECT p.id, p.company_id, p.name, p.description, p.landing_url,
    p.discount_percent, p.activation_cost_tokens, p.active, p.starts_at, p.ends_at, p.activated_at,
    p.deactivated_at, p.created_at, p.updated_at, p.version,
    (SELECT count(*) FROM qr_codes q WHERE q.promotion_id = p.id) AS qr_code_count
    FROM promotions p";

/// The derived state at `now`; see the module documentation.
pub fn state(active: bool, starts_at: i64, ends_at: i64, now: i64) -> &'static str {
    if ends_at <= now {
        "expired"
    } else if active && starts_at > now {
        "scheduled"
    } else if active {
        "active"
    } else {
        "inactive"
    }
}

impl Promotion {
    /// Reads a row of [`PROMO_SELECT`] by column name; `state` is derived at `now`.
    fn from_row(r: &crud::Named<'_, '_>, now: i64) -> rusqlite::Result<Promotion> {
        let active = r.get::<i64>("active")? == 1;
        let starts_at: i64 = r.get("starts_at")?;
        let ends_at: i64 = r.get("ends_at")?;
        Ok(Promotion {
            id: r.get("id")?,
            object: "promotion",
            company_id: r.get("company_id")?,
            name: r.get("name")?,
            description: r.get("description")?,
            landing_url: r.get("landing_url")?,
            discount_percent: r.get("discount_percent")?,
            activation_cost_tokens: r.get("activation_cost_tokens")?,
            active,
            state: state(active, starts_at, ends_at, now),
            starts_at: Time(starts_at),
            ends_at: Time(ends_at),
            activated_at: r.get::<Option<i64>>("activated_at")?.map(Time),
            deactivated_at: r.get::<Option<i64>>("deactivated_at")?.map(Time),
            qr_code_count: r.get("qr_code_count")?,
            created_at: Time(r.get("created_at")?),
            updated_at: Time(r.get("updated_at")?),
            version: r.get("version")?,
        })
    }
}

impl Listed for Promotion {
    fn list_key(&self) -> &str {
        &self.id
    }
}

/// A promotion, unauthorized: callers check `company_id` before using it. Missing is 404.
fn load(conn: &Connection, id: &PromotionId, now: i64) -> Result<Promotion, ApiError> {
    crud::load(conn, &format!("{PROMO_SELECT} WHERE p.id = ?1"), id, |r| {
        Promotion::from_row(r, now)
    })
}

/// Loads and authorizes a promotion: invisible or missing is the same 404.
fn load_visible(
    ctx: &Ctx<'_>,
    conn: &Connection,
    id: &PromotionId,
    now: i64,
) -> Result<Promotion, ApiError> {
    let promo = load(conn, id, now)?;
    ctx.authorize_company(&promo.company_id, "promotion", id)?;
    Ok(promo)
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let companies = ctx.list_companies()?;
    let now = crate::time::now();
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
    let conn = ctx.app.db.conn()?;
    let rows = fetch_page(
        &conn,
        PROMO_SELECT,
        "p.company_id",
        "p.id",
        &companies,
        &filters,
        &page,
        |r| Promotion::from_row(r, now),
    )?;
    Ok(Response::page(rows, &page))
}

fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: PromotionId = ctx.path()?;
    let conn = ctx.app.db.conn()?;
    let promo = load_visible(ctx, &conn, &id, crate::time::now())?;
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PromotionCreate {
    company_id: String,
    name: String,
    description: String,
    landing_url: String,
    #[serde(default)]
    discount_percent: Option<i64>,
    activation_cost_tokens: i64,
    starts_at: String,
    ends_at: String,
}

fn create(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
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
        Some(&input.landing_url),
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
    let id = PromotionId::generate();
    let now = crate::time::now();
    ctx.app.db.write(|tx| {
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
            input.landing_url,
            input.discount_percent,
            input.activation_cost_tokens,
            starts,
            ends,
            now
        ])?;
        let promo = load(tx, &id, now)?;
        crud::record(tx, &company, "promotion.created", "promotion", &id, &promo)?;
        Ok(Response::created(&promo).with_etag(promo.version))
    })
}

/// PATCH fields: absent keeps, a value sets. `null` is accepted only for `discount_percent`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PromotionUpdate {
    #[serde(default, deserialize_with = "crate::routes::nullable")]
    name: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::routes::nullable")]
    description: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::routes::nullable")]
    landing_url: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::routes::nullable")]
    discount_percent: Option<Option<i64>>,
    #[serde(default, deserialize_with = "crate::routes::nullable")]
    activation_cost_tokens: Option<Option<i64>>,
    #[serde(default, deserialize_with = "crate::routes::nullable")]
    starts_at: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::routes::nullable")]
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

fn update(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: PromotionId = ctx.path()?;
    let now = crate::time::now();
    {
        let conn = ctx.app.db.conn()?;
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
    let landing_url = not_null(&mut errors, "/landing_url", input.landing_url);
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
        landing_url.as_deref(),
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
        sets.push(("landing_url", u.clone().into()));
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

    ctx.app.db.write(|tx| {
        let current = load_visible(ctx, tx, &id, now)?;
        let company = current.company_id;
        ctx.check_if_match(current.version)?;
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
        crate::routes::update_versioned(tx, "promotions", "id", &id, now, &sets)?;
        let promo = load(tx, &id, now)?;
        crud::record(tx, &company, "promotion.updated", "promotion", &id, &promo)?;
        Ok(Response::ok(&promo).with_etag(promo.version))
    })
}

/// Switches a promotion on or off inside one write transaction, after authorization and If-Match.
fn switch(ctx: &mut Ctx<'_>, on: bool) -> Result<Response, ApiError> {
    let id: PromotionId = ctx.path()?;
    let now = crate::time::now();
    ctx.app.db.write(|tx| {
        let current = load_visible(ctx, tx, &id, now)?;
        let company = current.company_id.as_str();
        ctx.check_if_match(current.version)?;
        if on && current.state == "expired" {
            return Err(ApiError::Conflict(format!(
                "Promotion `{id}` ended at {} and cannot be activated; change `ends_at` first.",
                rfc3339(current.ends_at.0)
            )));
        }
        if current.active == on {
            return Ok(Response::ok(&current).with_etag(current.version));
        }
        if on {
            let cost = current.activation_cost_tokens;
            crate::ledger::spend_for_promotion(tx, company, &id, &current.name, cost, now)?;
            tx.execute(
                "UPDATE promotions SET active = 1, activated_at = ?2, updated_at = ?2, version = version + 1 WHERE id = ?1",
                rusqlite::params![id, now],
            )?;
        } else {
            tx.execute(
                "UPDATE promotions SET active = 0, deactivated_at = ?2, updated_at = ?2, version = version + 1 WHERE id = ?1",
                rusqlite::params![id, now],
            )?;
        }
        let promo = load(tx, &id, now)?;
        let event = if on {
            "promotion.activated"
        } else {
            "promotion.deactivated"
        };
        crud::record(tx, company, event, "promotion", &id, &promo)?;
        Ok(Response::ok(&promo).with_etag(promo.version))
    })
}

fn activate(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    switch(ctx, true)
}

fn deactivate(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    switch(ctx, false)
}

// ---- QR codes ---------------------------------------------------------------------------------

fn qr_code(target_url: &str) -> Result<qrcode::QrCode, ApiError> {
    qrcode::QrCode::new(target_url.as_bytes())
        .map_err(|e| ApiError::Internal(format!("cannot encode QR code: {e}")))
}

/// The code as SVG: one user unit per module in the view box (so the module grid is exact), drawn
/// at the PNG's pixel size by default.
pub fn qr_svg(target_url: &str) -> Result<String, ApiError> {
    let code = qr_code(target_url)?;
    let units = code.width() + 2 * QUIET_ZONE;
    let svg = code
        .render::<qrcode::render::svg::Color>()
        .quiet_zone(true)
        .module_dimensions(1, 1)
        .build();
    let px = units * PNG_SCALE;
    Ok(svg.replacen(
        &format!(r#"width="{units}" height="{units}" viewBox"#),
        &format!(r#"width="{px}" height="{px}" viewBox"#),
        1,
    ))
}

/// The code as an 8-bit greyscale PNG: black modules on white, [`PNG_SCALE`] px per module.
pub fn qr_png(target_url: &str) -> Result<Vec<u8>, ApiError> {
    let code = qr_code(target_url)?;
    let modules = code.width();
    let colors = code.to_colors();
    let side = (modules + 2 * QUIET_ZONE) * PNG_SCALE;
    let mut pixels = vec![255u8; side * side];
    for (i, color) in colors.iter().enumerate() {
        if *color != qrcode::Color::Dark {
            continue;
        }
        let (mx, my) = (i % modules + QUIET_ZONE, i / modules + QUIET_ZONE);
        for y in my * PNG_SCALE..(my + 1) * PNG_SCALE {
            let row = y * side;
            pixels[row + mx * PNG_SCALE..row + (mx + 1) * PNG_SCALE].fill(0);
        }
    }
    let side = u32::try_from(side).map_err(|_| ApiError::Internal("QR code too large".into()))?;
    let png_err = |e: png::EncodingError| ApiError::Internal(format!("PNG encoding failed: {e}"));
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, side, side);
        encoder.set_color(png::ColorType::Grayscale);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(png_err)?;
        writer.write_image_data(&pixels).map_err(png_err)?;
        writer.finish().map_err(png_err)?;
    }
    Ok(out)
}

/// A QR code as the API returns it. Field order is the order of the JSON members.
#[derive(Serialize)]
struct QrCode {
    id: String,
    object: &'static str,
    promotion_id: String,
    label: String,
    image_svg: String,
    image_png_url: String,
    target_url: String,
    scan_count: i64,
    created_at: Time,
}

impl Listed for QrCode {
    fn list_key(&self) -> &str {
        &self.id
    }
}

fn list_qr_codes(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let raw_id = ctx.param("id").to_string();
    let page = ctx.page()?;
    // After the page: a bad `limit` is reported before an unknown id, as it always was.
    let id: PromotionId =
        PromotionId::parse(&raw_id).ok_or_else(|| ApiError::not_found("promotion", &raw_id))?;
    let conn = ctx.app.db.conn()?;
    load_visible(ctx, &conn, &id, crate::time::now())?;
    let rows: Vec<(String, String, String, i64, i64)> = conn
        .prepare_cached(
            "SELECT id, label, target_url, scan_count, created_at FROM qr_codes
             WHERE promotion_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
        )?
        .query_map(rusqlite::params![id, page.bound(), page.fetch()], |r| {
            Ok((
                r.get("id")?,
                r.get("label")?,
                r.get("target_url")?,
                r.get("scan_count")?,
                r.get("created_at")?,
            ))
        })?
        .collect::<Result<_, _>>()?;
    let mut items = Vec::with_capacity(rows.len());
    for (qr_id, label, target_url, scan_count, created_at) in rows {
        items.push(QrCode {
            object: "qr_code",
            promotion_id: id.to_string(),
            label,
            image_svg: qr_svg(&target_url)?,
            image_png_url: format!("/qr-codes/{qr_id}/image?format=png"),
            id: qr_id,
            target_url,
            scan_count,
            created_at: Time(created_at),
        });
    }
    Ok(Response::page(items, &page))
}

fn qr_image(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let format = ctx
        .query_enum("format", &["svg", "png"])?
        .unwrap_or_else(|| "svg".into());
    // After the format: a bad `format` is reported before an unknown id, as it always was.
    let id: QrCodeId = ctx.path()?;
    let conn = ctx.app.db.conn()?;
    let (_, target_url): (String, String) = crud::authorized_row(
        ctx,
        &conn,
        "SELECT p.company_id, q.target_url FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id
         WHERE q.id = ?1",
        &id,
        |r| r.get(1),
    )?;
    let resp = if format == "png" {
        Response::new(StatusCode::OK, "image/png", qr_png(&target_url)?)
    } else {
        Response::new(StatusCode::OK, "image/svg+xml", qr_svg(&target_url)?)
    };
    Ok(resp.with_header("cache-control", "private, max-age=300"))
}
