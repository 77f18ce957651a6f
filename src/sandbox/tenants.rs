//! `POST /_sandbox/accounts/{id}/companies` and `POST /_sandbox/plans/{id}/limits`: the operator
//! grows the world past what an account can do through the API, for a test that needs a big one
//! (an account with a hundred companies, a fleet of thousands of screens). No account creates a
//! company or changes a plan's limits; the operator does, here (scope `sandbox`, audited).

use crate::auth::Action;
use crate::http::router::Route;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{AccountId, CompanyId, Kind, PlanId, TypedId};
use crate::validate::Errors;
use rusqlite::OptionalExtension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The most companies one call adds.
pub const MAX_COMPANIES: i64 = 1000;
/// The highest screen cap a plan may be given.
pub const MAX_DEVICES: i64 = 1_000_000;

pub fn routes() -> Vec<Route> {
    vec![
        Route::post(
            "/_sandbox/accounts/{id}/companies",
            "addSandboxCompanies",
            Action::Sandbox,
            add_companies,
        )
        .tag("sandbox")
        .summary("Add empty companies to an account, to test with a big one.")
        .describe("Adds `count` (1 to 1000) new, empty companies to the account, on `plan_id` (default: the catalogue's plan with the most screens), each with a default branding and a token balance of 0; every credential of the account that is not limited to one company sees them from its next request. No account can create a company through the API: this is the operator's way to build an account with many companies for a test. 404 for an unknown account, 422 for a bad `count` or an unknown plan. The sandbox operator's (scope `sandbox`); audited.")
        .body("SandboxCompaniesAdd")
        .created("SandboxCompaniesAdded")
        .not_idempotent(),
        Route::post(
            "/_sandbox/plans/{id}/limits",
            "setSandboxPlanLimits",
            Action::Sandbox,
            set_plan_limits,
        )
        .tag("sandbox")
        .summary("Set a plan's screen cap, to build a fleet larger than the catalogue allows.")
        .describe("Sets how many screens each company on the plan may have (`max_devices`, 1 to 1000000), for every company on it at once; `GET /plans` shows the new cap. The catalogue's caps (10, 50, 500) stop a test's fleet at the 51st screen of a Business company: lift the cap here first. A cap below a company's screens keeps them but refuses the next one. 404 for an unknown plan, 422 for a bad `max_devices`. The sandbox operator's (scope `sandbox`); audited.")
        .body("SandboxPlanLimits")
        .ok("SandboxPlanLimitsSet"),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::{named_body, named_response};
    vec![
        named_body::<AddCompanies>(),
        named_response::<CompaniesAdded>(),
        named_body::<PlanLimits>(),
        named_response::<PlanLimitsSet>(),
    ]
}

/// How many companies to add, and on which plan.
// `count` is required, but optional to serde: a missing one is a 422 naming it.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SandboxCompaniesAdd", extend("required" = ["count"]))]
struct AddCompanies {
    /// How many companies to add.
    #[serde(default, deserialize_with = "crate::routes::present")]
    #[schemars(with = "i64", range(min = 1, max = MAX_COMPANIES))]
    count: Option<i64>,
    /// The plan of every new company. Default: the catalogue's plan with the most screens.
    #[serde(default, deserialize_with = "crate::routes::present")]
    #[schemars(with = "String", transform = Kind::Plan)]
    plan_id: Option<String>,
}

/// The companies added, in the order they were made.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SandboxCompaniesAdded")]
struct CompaniesAdded {
    #[schemars(extend("const" = "sandbox_companies_added"))]
    object: &'static str,
    /// The account the companies were added to.
    account_id: String,
    /// The plan every new company is on.
    plan_id: String,
    /// The account's companies now, the new ones included.
    companies: i64,
    /// The new companies' ids, in the order they were made.
    company_ids: Vec<String>,
}

/// A plan's new screen cap.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SandboxPlanLimits", extend("required" = ["max_devices"]))]
struct PlanLimits {
    /// Screens each company on the plan may have.
    #[serde(default, deserialize_with = "crate::routes::present")]
    #[schemars(with = "i64", range(min = 1, max = MAX_DEVICES))]
    max_devices: Option<i64>,
}

/// A plan's screen cap after the change.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SandboxPlanLimitsSet")]
struct PlanLimitsSet {
    #[schemars(extend("const" = "sandbox_plan_limits"))]
    object: &'static str,
    plan_id: String,
    /// The plan's code (`starter`, `business`, ...).
    code: String,
    /// Screens each company on the plan may have now.
    max_devices: i64,
    /// The cap before this change.
    previous_max_devices: i64,
}

fn add_companies(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let account: AccountId = ctx.path()?;
    let input: AddCompanies = ctx.json()?;
    let mut errors = Errors::new();
    match input.count {
        Some(n) => errors.range("/count", n, 1, MAX_COMPANIES),
        None => errors.push(
            "/count",
            "required",
            "How many companies to add: 1 to 1000.",
        ),
    }
    if let Some(plan) = &input.plan_id {
        errors.id("/plan_id", plan, Kind::Plan);
    }
    errors.finish()?;
    let count = input.count.unwrap_or_default();
    let ids: Vec<CompanyId> = (0..count).map(|_| ctx.generate::<CompanyId>()).collect();
    let now = ctx.now();
    ctx.db.write(ctx.intent, |tx| {
        tx.prepare_cached("SELECT 1 FROM accounts WHERE id = ?1")?
            .query_row([account.as_str()], |_| Ok(()))
            .optional()?
            .ok_or_else(|| ApiError::not_found("account", account.as_str()))?;
        let plan: String = match &input.plan_id {
            Some(p) => tx
                .prepare_cached("SELECT id FROM plans WHERE id = ?1")?
                .query_row([p], |r| r.get(0))
                .optional()?
                .ok_or_else(|| {
                    ApiError::invalid("/plan_id", "unknown_plan", "No plan has this id (`GET /plans`).")
                })?,
            None => tx
                .prepare_cached("SELECT id FROM plans ORDER BY max_devices DESC, id LIMIT 1")?
                .query_row([], |r| r.get(0))
                .optional()?
                .ok_or_else(|| ApiError::Internal("the plan catalogue is empty".into()))?,
        };
        let had: i64 = tx
            .prepare_cached("SELECT count(*) FROM companies WHERE account_id = ?1")?
            .query_row([account.as_str()], |r| r.get(0))?;
        let mut company = tx.prepare_cached(
            "INSERT INTO companies (id, account_id, plan_id, name, slug, industry, country, timezone,
                                    created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, 'Sandbox', 'NL', 'Europe/Amsterdam', ?6, ?6)",
        )?;
        let mut branding = tx.prepare_cached(
            "INSERT INTO brandings (company_id, primary_color, secondary_color, accent_color,
                                    background_color, text_color, heading_font, body_font,
                                    corner_radius_px, updated_at)
             VALUES (?1, '#1F6FEB', '#0B3D91', '#F5A623', '#FFFFFF', '#1B1F24', 'Inter', 'Inter',
                     8, ?2)",
        )?;
        let mut balance = tx.prepare_cached(
            "INSERT INTO token_balances (company_id, balance, updated_at) VALUES (?1, 0, ?2)",
        )?;
        for (n, id) in ids.iter().enumerate() {
            let number = had + n as i64 + 1;
            let slug = format!("sandbox-{}", id.as_str().to_ascii_lowercase().replace('_', "-"));
            company.execute(rusqlite::params![
                id.as_str(),
                account.as_str(),
                plan,
                format!("Sandbox company {number}"),
                slug,
                now
            ])?;
            branding.execute(rusqlite::params![id.as_str(), now])?;
            balance.execute(rusqlite::params![id.as_str(), now])?;
        }
        Ok(Response::created(&CompaniesAdded {
            object: "sandbox_companies_added",
            account_id: account.to_string(),
            plan_id: plan,
            companies: had + count,
            company_ids: ids.iter().map(|i| i.to_string()).collect(),
        }))
    })
}

fn set_plan_limits(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let plan: PlanId = ctx.path()?;
    let input: PlanLimits = ctx.json()?;
    let mut errors = Errors::new();
    match input.max_devices {
        Some(n) => errors.range("/max_devices", n, 1, MAX_DEVICES),
        None => errors.push(
            "/max_devices",
            "required",
            "The screens each company on the plan may have: 1 to 1000000.",
        ),
    }
    errors.finish()?;
    let max = input.max_devices.unwrap_or_default();
    ctx.db.write(ctx.intent, |tx| {
        let (code, previous): (String, i64) = tx
            .prepare_cached("SELECT code, max_devices FROM plans WHERE id = ?1")?
            .query_row([plan.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
            .ok_or_else(|| ApiError::not_found("plan", plan.as_str()))?;
        tx.prepare_cached("UPDATE plans SET max_devices = ?1 WHERE id = ?2")?
            .execute(rusqlite::params![max, plan.as_str()])?;
        Ok(Response::ok(&PlanLimitsSet {
            object: "sandbox_plan_limits",
            plan_id: plan.to_string(),
            code,
            max_devices: max,
            previous_max_devices: previous,
        }))
    })
}
