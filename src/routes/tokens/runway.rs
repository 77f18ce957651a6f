//! "Is my balance low?": a company's token balance against its recent daily spend, with the days
//! it lasts at that pace.

use crate::auth::{Action, Area, Level};
use crate::http::router::{param, Param, Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::Kind;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// The spend averaged: the last 30 days.
const WINDOW_DAYS: i64 = 30;
/// A balance that lasts fewer days than this (at the recent pace) is low.
const LOW_DAYS: f64 = 14.0;

pub(super) fn route() -> Route {
    Route::get(
        "/tokens/runway",
        "getTokenRunway",
        Action::Use(Area::Tokens, Level::Read),
        runway,
    )
    .describe("A company's balance against its average daily spend over the last 30 days: the days the balance lasts at that pace, the day it runs out, and `low` (under 14 days, or nothing left). Needs `tokens:read`.")
    .tool(Tool::read(
        "get_token_runway",
        "Is the token balance low?",
        &[],
        "A company's balance against its average daily token spend (last 30 days): days left, run-out date, and `low`.",
    ))
    .tag("tokens")
    .summary("Token runway: balance, average daily spend over the last 30 days, days left and whether the balance is low.")
    .query(&[Param {
        required: true,
        ..param(
            "company_id",
            Kind::Company.schema(),
            "The company (`cmp_…`), as returned by list_companies.",
        )
    }])
    .ok("TokenRunway")
}

/// A company's token balance against its recent daily spend.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "TokenRunway")]
struct Runway {
    #[schemars(extend("const" = "token_runway"))]
    object: &'static str,
    company_id: String,
    balance: i64,
    /// The days the spend is averaged over.
    #[schemars(range(min = 1))]
    window_days: i64,
    /// Tokens spent in the last `window_days` days.
    #[schemars(range(min = 0))]
    spent_in_window: i64,
    /// Average tokens spent per day over the window.
    #[schemars(range(min = 0))]
    daily_burn: f64,
    /// Days the balance lasts at that pace; null when nothing was spent.
    #[schemars(range(min = 0))]
    days_left: Option<f64>,
    /// The day (UTC) the balance runs out at that pace.
    #[schemars(extend("format" = "date"))]
    runs_out_on: Option<String>,
    /// Nothing left, or fewer than `low_below_days` days left.
    low: bool,
    /// The threshold of `low`, in days.
    #[schemars(range(min = 0))]
    low_below_days: f64,
}

fn runway(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let company = ctx.list_companies()?.first().cloned().unwrap_or_default();
    let now = ctx.now();
    let conn = ctx.conn()?;
    let balance = crate::ledger::balance(&conn, &company)?.balance;
    let spent: i64 = conn
        .prepare_cached(
            "SELECT coalesce(-sum(amount), 0) FROM token_transactions
             WHERE company_id = ?1 AND kind = 'spend' AND created_at >= ?2 AND created_at < ?3",
        )?
        .query_row(
            rusqlite::params![company, now - WINDOW_DAYS * 86_400, now + 1],
            |r| r.get(0),
        )?;
    let daily_burn = (spent.max(0) as f64 / WINDOW_DAYS as f64 * 100.0).round() / 100.0;
    let days_left = (daily_burn > 0.0).then(|| (balance as f64 / daily_burn * 10.0).floor() / 10.0);
    let runs_out_on = days_left.map(|d| {
        let stamp = crate::time::rfc3339(now + (d * 86_400.0) as i64);
        stamp.get(..10).unwrap_or(&stamp).to_string()
    });
    Ok(Response::ok(&Runway {
        object: "token_runway",
        company_id: company,
        balance,
        window_days: WINDOW_DAYS,
        spent_in_window: spent,
        daily_burn,
        days_left,
        runs_out_on,
        low: balance <= 0 || days_left.is_some_and(|d| d < LOW_DAYS),
        low_below_days: LOW_DAYS,
    }))
}

pub(super) fn schemas() -> Vec<(&'static str, Value)> {
    vec![crate::jsonschema::named_response::<Runway>()]
}
