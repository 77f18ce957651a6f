//! A company's token spending over a time window in one answer: opening and closing balance,
//! tokens added and spent, and the totals per kind of transaction.

use crate::auth::{Action, Area, Level};
use crate::http::router::{param, Param, Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::Kind;
use crate::ledger::TX_KINDS;
use crate::routes::crud::Time;
use crate::routes::date_range;
use crate::validate::OneOf;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

pub(super) fn route() -> Route {
    Route::get(
        "/tokens/summary",
        "getTokenSummary",
        Action::Use(Area::Tokens, Level::Read),
        summary,
    )
    .describe("A company's token ledger over `[from, to)` (default: the current UTC calendar month): opening and closing balance, tokens added and spent, and totals per kind. Needs `tokens:read`.")
    .tool(Tool::read(
        "get_token_summary",
        "Get token spend summary",
        &[],
        "A company's tokens over `from`/`to` (default: this UTC month): opening and closing balance, added (grants, purchases, refunds), spent, count and total per kind.",
    ))
    .tag("tokens")
    .summary("A company's token summary over `[from, to)`: opening and closing balance, added, spent, and totals per kind. Default window: the current UTC calendar month; with only `to`, the month it ends in.")
    .query(&[
        Param {
            required: true,
            ..param(
                "company_id",
                Kind::Company.schema(),
                "The company (`cmp_…`), as returned by list_companies.",
            )
        },
        date_range::FROM,
        date_range::TO,
    ])
    .ok("TokenSummary")
}

#[derive(Serialize, JsonSchema)]
struct KindTotal {
    #[schemars(transform = &OneOf(TX_KINDS))]
    kind: &'static str,
    #[schemars(range(min = 0))]
    count: i64,
    /// Sum of the amounts (negative for spending).
    tokens: i64,
}

/// A company's token ledger over a range: opening and closing balance, added, spent, totals per
/// kind.
#[derive(Serialize, JsonSchema)]
struct TokenSummary {
    #[schemars(extend("const" = "token_summary"))]
    object: &'static str,
    company_id: String,
    from: Time,
    /// Exclusive.
    to: Time,
    opening_balance: i64,
    closing_balance: i64,
    /// Tokens credited: grants, purchases, refunds.
    #[schemars(range(min = 0))]
    added: i64,
    /// Tokens debited, as a positive number.
    #[schemars(range(min = 0))]
    spent: i64,
    net: i64,
    #[schemars(range(min = 0))]
    transaction_count: i64,
    by_kind: Vec<KindTotal>,
}

/// The first second of the current UTC month.
fn month_start(now: i64) -> i64 {
    let stamp = crate::time::rfc3339(now);
    stamp
        .get(0..7)
        .and_then(|ym| crate::time::parse_rfc3339(&format!("{ym}-01T00:00:00Z")))
        .unwrap_or(now - now.rem_euclid(86_400))
}

fn summary(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let company = ctx.list_companies()?.first().cloned().unwrap_or_default();
    let window = date_range::window(ctx)?;
    // Defaults: the calendar month (UTC) of `to`, or the current one; no wall clock in the answer.
    let to = window
        .to
        .unwrap_or_else(|| month_start(month_start(ctx.now()) + 32 * 86_400));
    let from = window.from.unwrap_or_else(|| month_start(to - 1));
    // An empty window (`to` not after `from`) sums nothing: both balances are the one at `from`.
    let to = to.max(from);
    let conn = ctx.conn()?;
    let balance_before = |t: i64| -> Result<i64, ApiError> {
        Ok(conn
            .prepare_cached(
                "SELECT balance_after FROM token_transactions
                 WHERE company_id = ?1 AND created_at < ?2
                 ORDER BY created_at DESC, id DESC LIMIT 1",
            )?
            .query_row(rusqlite::params![company, t], |r| r.get(0))
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(0),
                e => Err(e),
            })?)
    };
    let opening_balance = balance_before(from)?;
    let closing_balance = balance_before(to)?;
    let mut by_kind: Vec<KindTotal> = TX_KINDS
        .iter()
        .map(|k| KindTotal {
            kind: k,
            count: 0,
            tokens: 0,
        })
        .collect();
    let (mut added, mut spent) = (0i64, 0i64);
    let mut stmt = conn.prepare_cached(
        "SELECT kind, count(*), sum(amount), sum(max(amount, 0)), sum(min(amount, 0))
         FROM token_transactions WHERE company_id = ?1 AND created_at >= ?2 AND created_at < ?3
         GROUP BY kind",
    )?;
    let rows = stmt.query_map(rusqlite::params![company, from, to], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, i64>(3)?,
            r.get::<_, i64>(4)?,
        ))
    })?;
    for row in rows {
        let (kind, count, tokens, plus, minus) = row?;
        if let Some(k) = by_kind.iter_mut().find(|k| k.kind == kind) {
            k.count = count;
            k.tokens = tokens;
        }
        added += plus;
        spent -= minus;
    }
    Ok(Response::ok(&TokenSummary {
        object: "token_summary",
        company_id: company,
        from: Time(from),
        to: Time(to),
        opening_balance,
        closing_balance,
        added,
        spent,
        net: added - spent,
        transaction_count: by_kind.iter().map(|k| k.count).sum(),
        by_kind,
    }))
}

pub(super) fn schemas() -> Vec<(&'static str, Value)> {
    vec![crate::jsonschema::named_response::<TokenSummary>()]
}
