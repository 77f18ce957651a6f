//! A promotion itself: its typed row, its derived state, and its loaders. Below the handlers, the
//! windows' timeline and the area's payloads; it imports none of them.

use super::fields::STATES;
use crate::http::response::Listed;
use crate::http::{ApiError, Ctx};
use crate::ids::Kind;
use crate::ids::PromotionId;
use crate::routes::crud::{self, Time};
use crate::validate::OneOf;
use rusqlite::Connection;
use schemars::JsonSchema;
use serde::Serialize;

/// A time-boxed offer shown through QR codes, with its derived state.
// Field order is the order of the JSON members.
#[derive(Serialize, JsonSchema)]
pub struct Promotion {
    #[schemars(transform = Kind::Promotion)]
    id: String,
    #[schemars(extend("const" = "promotion"))]
    object: &'static str,
    pub(super) company_id: String,
    pub(super) name: String,
    description: String,
    // `None`: the sandbox's own landing page (stored as the empty string).
    pub(super) landing_url: Option<String>,
    #[schemars(range(min = 1, max = 100))]
    discount_percent: Option<i64>,
    #[schemars(range(min = 0))]
    pub(super) activation_cost_tokens: i64,
    /// The on/off switch; see `state` for whether it runs now.
    pub(super) active: bool,
    #[schemars(transform = &OneOf(STATES))]
    pub(super) state: &'static str,
    pub(super) starts_at: Time,
    pub(super) ends_at: Time,
    activated_at: Option<Time>,
    deactivated_at: Option<Time>,
    #[schemars(range(min = 0))]
    qr_code_count: i64,
    created_at: Time,
    updated_at: Time,
    // The ETag's version; not a member of the body.
    #[serde(skip)]
    pub(super) version: i64,
}

pub(super) const PROMO_SELECT: &str =
    "SELECT p.id, p.company_id, p.name, p.description, p.landing_url,
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
    pub(super) fn from_row(r: &crud::Named<'_, '_>, now: i64) -> rusqlite::Result<Promotion> {
        let active = r.get::<i64>("active")? == 1;
        let starts_at: i64 = r.get("starts_at")?;
        let ends_at: i64 = r.get("ends_at")?;
        Ok(Promotion {
            id: r.get("id")?,
            object: "promotion",
            company_id: r.get("company_id")?,
            name: r.get("name")?,
            description: r.get("description")?,
            landing_url: Some(r.get::<String>("landing_url")?).filter(|u| !u.is_empty()),
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
pub(crate) fn load(conn: &Connection, id: &PromotionId, now: i64) -> Result<Promotion, ApiError> {
    crud::load(conn, &format!("{PROMO_SELECT} WHERE p.id = ?1"), id, |r| {
        Promotion::from_row(r, now)
    })
}

/// Loads and authorizes a promotion: invisible or missing is the same 404.
pub(super) fn load_visible(
    ctx: &Ctx<'_>,
    conn: &Connection,
    id: &PromotionId,
    now: i64,
) -> Result<Promotion, ApiError> {
    let promo = load(conn, id, now)?;
    ctx.authorize_company(&promo.company_id, "promotion", id)?;
    Ok(promo)
}
