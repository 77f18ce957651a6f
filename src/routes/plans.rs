//! Plans: the read-only subscription catalogue. It belongs to no company, so any credential with
//! `plans:read` sees all of it.

use crate::auth::{Action, Area, Level};
use crate::http::router::Route;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{self, Kind};
use crate::time::rfc3339;
use rusqlite::{OptionalExtension, Row};
use serde_json::{json, Value};

const READ: Action = Action::Use(Area::Plans, Level::Read);

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/plans", "listPlans", READ, list)
            .tag("plans")
            .summary("List the subscription plans (the catalogue).")
            .paged_by(Kind::Plan)
            .ok("PlanList"),
        Route::get("/plans/{id}", "getPlan", READ, get)
            .tag("plans")
            .summary("Get one plan.")
            .ok("Plan"),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![(
        "Plan",
        json!({"type":"object","additionalProperties":false,
            "required":["id","object","code","name","description","monthly_price_cents","currency",
                "max_devices","included_tokens_monthly","features","created_at"],
            "properties":{"id":{"type":"string","pattern":"^plan_"},"object":{"const":"plan"},
                "code":{"type":"string"},"name":{"type":"string"},"description":{"type":"string"},
                "monthly_price_cents":{"type":"integer","minimum":0},"currency":{"type":"string"},
                "max_devices":{"type":"integer","minimum":1},
                "included_tokens_monthly":{"type":"integer","minimum":0},
                "features":{"type":"array","items":{"type":"string"}},
                "created_at":{"type":"string","format":"date-time"}}}),
    )]
}

const PLAN_COLUMNS: &str =
    "id, code, name, description, monthly_price_cents, currency, max_devices,
    included_tokens_monthly, features, created_at";

fn plan_json(r: &Row<'_>) -> rusqlite::Result<Value> {
    let features: String = r.get(8)?;
    let features: Vec<String> = serde_json::from_str(&features).unwrap_or_default();
    Ok(json!({
        "id": r.get::<_, String>(0)?,
        "object": "plan",
        "code": r.get::<_, String>(1)?,
        "name": r.get::<_, String>(2)?,
        "description": r.get::<_, String>(3)?,
        "monthly_price_cents": r.get::<_, i64>(4)?,
        "currency": r.get::<_, String>(5)?,
        "max_devices": r.get::<_, i64>(6)?,
        "included_tokens_monthly": r.get::<_, i64>(7)?,
        "features": features,
        "created_at": rfc3339(r.get(9)?),
    }))
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let conn = ctx.app.db.conn()?;
    let rows = conn
        .prepare_cached(&format!(
            "SELECT {PLAN_COLUMNS} FROM plans WHERE id < ?1 ORDER BY id DESC LIMIT ?2"
        ))?
        .query_map(rusqlite::params![page.bound(), page.fetch()], plan_json)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Response::page(rows, &page))
}

fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = ctx.param("id").to_string();
    if !ids::is_valid(Kind::Plan, &id) {
        return Err(ApiError::not_found("plan", &id));
    }
    let conn = ctx.app.db.conn()?;
    let plan = conn
        .prepare_cached(&format!("SELECT {PLAN_COLUMNS} FROM plans WHERE id = ?1"))?
        .query_row([&id], plan_json)
        .optional()?
        .ok_or_else(|| ApiError::not_found("plan", &id))?;
    Ok(Response::ok(&plan))
}
