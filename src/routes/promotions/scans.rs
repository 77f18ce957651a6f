//! What scanning a promotion's QR codes left behind: a code's scans (a cursor list) and the
//! promotion's report (totals, scans per UTC day, per user-agent class and per code). The scans
//! themselves are recorded by the public short link, [`crate::routes::scan`]: one by one up to
//! `scans.detail_per_code` per code (the list), then as per-minute counters, which the report
//! adds in, so its numbers stay exact.

use super::promotion::load_visible;
use crate::http::response::Listed;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{PromotionId, QrCodeId, TypedId};
use crate::routes::crud::{self, Time};
use schemars::JsonSchema;
use serde::Serialize;

/// The user-agent classes a scan is counted under (see `crate::routes::scan::agent_class`).
pub const AGENT_CLASSES: &[&str] = &["ios", "android", "desktop", "bot", "other"];
/// Days the report's `scans_per_day` reaches back, today included.
pub const REPORT_DAYS: i64 = 90;

/// One scan of a QR code's short link: when, and the class of the scanning device. No IP address.
#[derive(Serialize, JsonSchema)]
pub(super) struct QrScan {
    #[schemars(transform = crate::ids::Kind::QrScan)]
    id: String,
    #[schemars(extend("const" = "qr_scan"))]
    object: &'static str,
    qr_code_id: String,
    scanned_at: Time,
    #[schemars(transform = &crate::validate::OneOf(AGENT_CLASSES))]
    agent_class: String,
}

impl Listed for QrScan {
    fn list_key(&self) -> &str {
        &self.id
    }
}

pub(super) fn list_scans(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let id: QrCodeId = ctx.path()?;
    let conn = ctx.conn()?;
    crud::authorized_row(
        ctx,
        &conn,
        "SELECT p.company_id FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id WHERE q.id = ?1",
        &id,
        |_| Ok(()),
    )?;
    let items = conn
        .prepare_cached(
            "SELECT id, scanned_at, agent_class FROM qr_scans
             WHERE qr_code_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
        )?
        .query_map(rusqlite::params![id, page.bound(), page.fetch()], |r| {
            Ok(QrScan {
                id: r.get(0)?,
                object: "qr_scan",
                qr_code_id: id.as_str().to_string(),
                scanned_at: Time(r.get(1)?),
                agent_class: r.get(2)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Response::page(items, &page))
}

#[derive(Serialize, JsonSchema)]
struct Day {
    #[schemars(extend("format" = "date"))]
    date: String,
    #[schemars(range(min = 1))]
    scans: i64,
}

#[derive(Serialize, JsonSchema)]
struct CodeTotal {
    #[schemars(transform = crate::ids::Kind::QrCode)]
    id: String,
    label: String,
    code: String,
    #[schemars(range(min = 0))]
    scan_count: i64,
    last_scanned_at: Option<Time>,
}

/// A promotion's scans: the total, per UTC day, per user-agent class and per code.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "PromotionReport")]
pub(super) struct Report {
    #[schemars(extend("const" = "promotion_report"))]
    object: &'static str,
    promotion_id: String,
    generated_at: Time,
    qr_code_count: usize,
    #[schemars(range(min = 0))]
    scan_count: i64,
    last_scanned_at: Option<Time>,
    scans_per_day: Vec<Day>,
    #[schemars(transform = count_per_agent_class)]
    scans_by_agent_class: serde_json::Map<String, serde_json::Value>,
    qr_codes: Vec<CodeTotal>,
}

/// `scans_by_agent_class`: a count under every class, each always present.
fn count_per_agent_class(schema: &mut schemars::Schema) {
    let properties: serde_json::Map<String, serde_json::Value> = AGENT_CLASSES
        .iter()
        .map(|k| {
            (
                k.to_string(),
                serde_json::json!({"type": "integer", "minimum": 0}),
            )
        })
        .collect();
    // The map's own schema says it is an object; its keys are the classes, each required.
    schema.insert("properties".into(), properties.into());
    schema.insert("required".into(), serde_json::json!(AGENT_CLASSES));
    schema.insert("additionalProperties".into(), false.into());
}

/// `YYYY-MM-DD` of a day number (days since 1970-01-01, UTC).
fn date_of(day: i64) -> String {
    let (y, m, d) = crate::time::civil_from_days(day);
    format!("{y:04}-{m:02}-{d:02}")
}

pub(super) fn report(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: PromotionId = ctx.path()?;
    let now = ctx.now();
    let conn = ctx.conn()?;
    load_visible(ctx, &conn, &id, now)?;
    let qr_codes = conn
        .prepare_cached(
            "SELECT id, label, code, scan_count, last_scanned_at FROM qr_codes
             WHERE promotion_id = ?1 ORDER BY id",
        )?
        .query_map([id.as_str()], |r| {
            Ok(CodeTotal {
                id: r.get(0)?,
                label: r.get(1)?,
                code: r.get(2)?,
                scan_count: r.get(3)?,
                last_scanned_at: r.get::<_, Option<i64>>(4)?.map(Time),
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let today = now.div_euclid(86_400);
    let from = (today - REPORT_DAYS + 1) * 86_400;
    let scans_per_day = conn
        .prepare_cached(
            "SELECT day, sum(n) FROM (
                 SELECT s.scanned_at / 86400 AS day, count(*) AS n FROM qr_scans s
                 JOIN qr_codes q ON q.id = s.qr_code_id
                 WHERE q.promotion_id = ?1 AND s.scanned_at >= ?2 AND s.scanned_at <= ?3
                 GROUP BY day
                 UNION ALL
                 SELECT c.minute / 1440 AS day, sum(c.scans) AS n FROM qr_scan_counts c
                 JOIN qr_codes q ON q.id = c.qr_code_id
                 WHERE q.promotion_id = ?1 AND c.minute >= ?2 / 60 AND c.minute <= ?3 / 60
                 GROUP BY day)
             GROUP BY day ORDER BY day",
        )?
        .query_map(rusqlite::params![id, from, now], |r| {
            Ok(Day {
                date: date_of(r.get(0)?),
                scans: r.get(1)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let mut by_class: serde_json::Map<String, serde_json::Value> = AGENT_CLASSES
        .iter()
        .map(|c| (c.to_string(), 0.into()))
        .collect();
    let counted = conn
        .prepare_cached(
            "SELECT agent_class, sum(n) FROM (
                 SELECT s.agent_class, count(*) AS n FROM qr_scans s
                 JOIN qr_codes q ON q.id = s.qr_code_id
                 WHERE q.promotion_id = ?1 GROUP BY s.agent_class
                 UNION ALL
                 SELECT c.agent_class, sum(c.scans) AS n FROM qr_scan_counts c
                 JOIN qr_codes q ON q.id = c.qr_code_id
                 WHERE q.promotion_id = ?1 GROUP BY c.agent_class)
             GROUP BY agent_class",
        )?
        .query_map([id.as_str()], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    for (class, n) in counted {
        by_class.insert(class, n.into());
    }
    let body = Report {
        object: "promotion_report",
        promotion_id: id.as_str().to_string(),
        generated_at: Time(now),
        qr_code_count: qr_codes.len(),
        scan_count: qr_codes.iter().map(|c| c.scan_count).sum(),
        last_scanned_at: qr_codes
            .iter()
            .filter_map(|c| c.last_scanned_at)
            .max_by_key(|t| t.0),
        scans_per_day,
        scans_by_agent_class: by_class,
        qr_codes,
    };
    Ok(Response::ok(&body))
}
