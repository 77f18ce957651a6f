//! Plans: the read-only subscription catalogue. It belongs to no company, so any credential with
//! `plans:read` sees all of it.

use super::crud::{self, Time};
use crate::auth::{Action, Area, Level};
use crate::http::router::{Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{Kind, PlanId};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

const READ: Action = Action::Use(Area::Plans, Level::Read);

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/plans", "listPlans", READ, list)
            .tool(Tool::read(
                "list_plans",
                "List plans",
                &[],
                "The subscription plans the key can see: price, screen limit, monthly tokens, features.",
            ))
            .tag("plans")
            .summary("List the subscription plans (the catalogue).")
            .describe("The subscription plans and the limits each sets (devices per company and more). The same for every credential.")
            .paged_by(Kind::Plan)
            .ok("PlanList"),
        Route::get("/plans/{id}", "getPlan", READ, get)
            .tool(Tool::read(
                "get_plan",
                "Get plan",
                &[("plan_id", "The plan id (`plan_…`), as returned by list_plans or shown on a company.")],
                "One subscription plan: monthly price, screen limit, tokens included each month, features.",
            ))
            .tag("plans")
            .summary("Get one plan.")
            .describe("One plan and its limits.")
            .ok("Plan"),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![crate::jsonschema::named_response::<Plan>()]
}

const PLAN_COLUMNS: &str =
    "id, code, name, description, monthly_price_cents, currency, max_devices,
    included_tokens_monthly, features, created_at";

/// A subscription plan and the limits it sets.
// Field order is the order of the JSON members.
#[derive(Serialize, JsonSchema)]
pub struct Plan {
    #[schemars(transform = Kind::Plan)]
    id: String,
    #[schemars(extend("const" = "plan"))]
    object: &'static str,
    code: String,
    name: String,
    description: String,
    #[schemars(range(min = 0))]
    monthly_price_cents: i64,
    currency: String,
    #[schemars(range(min = 1))]
    max_devices: i64,
    #[schemars(range(min = 0))]
    included_tokens_monthly: i64,
    features: Vec<String>,
    created_at: Time,
}

impl Plan {
    /// Reads a row of [`PLAN_COLUMNS`] by column name.
    fn from_row(r: &crud::Named<'_, '_>) -> rusqlite::Result<Plan> {
        let features: String = r.get("features")?;
        Ok(Plan {
            id: r.get("id")?,
            object: "plan",
            code: r.get("code")?,
            name: r.get("name")?,
            description: r.get("description")?,
            monthly_price_cents: r.get("monthly_price_cents")?,
            currency: r.get("currency")?,
            max_devices: r.get("max_devices")?,
            included_tokens_monthly: r.get("included_tokens_monthly")?,
            features: serde_json::from_str(&features).unwrap_or_default(),
            created_at: Time(r.get("created_at")?),
        })
    }
}

impl crate::http::response::Listed for Plan {
    fn list_key(&self) -> &str {
        &self.id
    }
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let conn = ctx.conn()?;
    let rows = crud::query_all(
        &conn,
        &format!("SELECT {PLAN_COLUMNS} FROM plans WHERE id < ?1 ORDER BY id DESC LIMIT ?2"),
        rusqlite::params![page.bound(), page.fetch()],
        Plan::from_row,
    )?;
    Ok(Response::page(rows, &page))
}

fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: PlanId = ctx.path()?;
    let conn = ctx.conn()?;
    let plan = crud::load(
        &conn,
        &format!("SELECT {PLAN_COLUMNS} FROM plans WHERE id = ?1"),
        &id,
        Plan::from_row,
    )?;
    Ok(Response::ok(&plan))
}
