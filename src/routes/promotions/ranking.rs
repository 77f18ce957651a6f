//! "Which QR codes scan most?" across every promotion the key can see: one ranked answer.

use crate::auth::{Action, Area, Level};
use crate::http::router::{param, Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::Kind;
use crate::routes::crud::Time;
use crate::routes::date_range;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

const DEFAULT_LIMIT: i64 = 10;
const MAX_LIMIT: i64 = 100;

pub(super) fn route() -> Route {
    Route::get("/qr-codes/ranking", "getQrCodeRanking",
        Action::Use(Area::Promotions, Level::Read),
        ranking,
    )
        .describe("The QR codes of every visible company's promotions (or one company's), ranked by scans: all time, or scans in `[from, to)` when either is given. Ties: the code made first ranks first. Needs `promotions:read`.")
        .tool(Tool::read(
            "rank_qr_codes",
            "Top QR codes",
            &[],
            "Rank QR codes across the account (or one company) by scans, all time or in a date range.",
        ))
        .tag("promotions")
        .summary("QR codes ranked by scans across the visible companies: all time, or within `[from, to)`.")
        .query(&[
            param("company_id", Kind::Company.schema(), "Only this company (default: every visible company)."),
            date_range::FROM,
            date_range::TO,
            param("limit", r#"{"type":"integer","minimum":1,"maximum":100,"default":10}"#, "How many codes (1-100, default 10)."),
        ])
        .ok("QrCodeRanking")
}

#[derive(Serialize, JsonSchema)]
struct Ranked {
    /// 1 for the most scanned.
    #[schemars(range(min = 1))]
    rank: i64,
    qr_code_id: String,
    label: String,
    /// The link the code encodes (`GET /q/{code}`).
    #[schemars(extend("format" = "uri"))]
    short_url: String,
    promotion_id: String,
    /// The name of the code's promotion.
    promotion_name: String,
    company_id: String,
    /// All time, or in the window.
    #[schemars(range(min = 0))]
    scans: i64,
    last_scanned_at: Option<Time>,
}

/// QR codes ranked by scans, most scanned first; `from`/`to` are the window, null for all time.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "QrCodeRanking")]
struct Ranking {
    #[schemars(extend("const" = "qr_code_ranking"))]
    object: &'static str,
    from: Option<Time>,
    to: Option<Time>,
    /// The codes, most scanned first (ties: the code made first).
    codes: Vec<Ranked>,
}

fn ranking(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let companies = ctx.list_companies()?;
    let window = date_range::window(ctx)?;
    let limit = match ctx.query("limit") {
        None => DEFAULT_LIMIT,
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| {
                ApiError::invalid(
                    "limit",
                    "out_of_range",
                    "`limit` must be an integer from 1 to 100.",
                )
            })?,
    };
    let marks = (4..4 + companies.len())
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    // All time: the stored count. A window: the scans in it, by (qr_code_id, scanned_at).
    let sql = format!(
        "SELECT q.id, q.label, q.code, q.promotion_id, p.name, p.company_id,
                CASE WHEN ?1 IS NULL AND ?2 IS NULL THEN q.scan_count
                ELSE (SELECT count(*) FROM qr_scans s WHERE s.qr_code_id = q.id
                      AND s.scanned_at >= coalesce(?1, -1e18) AND s.scanned_at < coalesce(?2, 1e18))
                END AS scans,
                q.last_scanned_at
         FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id
         WHERE p.company_id IN ({marks})
         ORDER BY scans DESC, q.id LIMIT ?3"
    );
    let mut args: Vec<rusqlite::types::Value> =
        vec![window.from.into(), window.to.into(), limit.into()];
    args.extend(companies.iter().map(|c| c.clone().into()));
    let settings = &ctx.app.settings;
    let conn = ctx.conn()?;
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
        Ok(Ranked {
            rank: 0,
            qr_code_id: r.get(0)?,
            label: r.get(1)?,
            short_url: super::links::short_url(settings, &r.get::<_, String>(2)?),
            promotion_id: r.get(3)?,
            promotion_name: r.get(4)?,
            company_id: r.get(5)?,
            scans: r.get(6)?,
            last_scanned_at: r.get::<_, Option<i64>>(7)?.map(Time),
        })
    })?;
    let mut codes = rows.collect::<Result<Vec<_>, _>>()?;
    for (i, c) in codes.iter_mut().enumerate() {
        c.rank = i as i64 + 1;
    }
    Ok(Response::ok(&Ranking {
        object: "qr_code_ranking",
        from: window.from.map(Time),
        to: window.to.map(Time),
        codes,
    }))
}

pub(super) fn schemas() -> Vec<(&'static str, Value)> {
    vec![crate::jsonschema::named_response::<Ranking>()]
}
