//! `GET /reports/proof-of-play`: plays and seconds per ad and per screen over a range, from the
//! players' reports and the simulated fleet alike. A row counts in the range that holds its
//! `started_at` (a simulated row's is the start of its clock hour).

use super::playbacks::{instant, DEFAULT_RANGE_SECS};
use crate::http::{ApiError, Ctx, Response};
use crate::routes::crud::Time;
use serde::Serialize;

#[derive(Serialize)]
struct Report {
    object: &'static str,
    company_id: Option<String>,
    from: Time,
    to: Time,
    plays: i64,
    seconds: i64,
    ads: Vec<AdLine>,
    devices: Vec<DeviceLine>,
}

#[derive(Serialize)]
struct AdLine {
    ad_id: String,
    name: String,
    company_id: String,
    plays: i64,
    seconds: i64,
    devices: i64,
}

#[derive(Serialize)]
struct DeviceLine {
    device_id: String,
    name: String,
    company_id: String,
    plays: i64,
    seconds: i64,
    ads: i64,
}

pub(super) fn proof_of_play(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let companies = ctx.list_companies()?;
    let to = instant(ctx, "to")?.unwrap_or_else(crate::time::now);
    let from = instant(ctx, "from")?.unwrap_or(to - DEFAULT_RANGE_SECS);
    // Any span: the sums read the plays stored in it by index, so a long window costs what it
    // holds. A window where `to` is not after `from` holds nothing: an empty report.
    let conn = ctx.app.db.conn()?;
    let marks = (3..3 + companies.len())
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut args: Vec<rusqlite::types::Value> = vec![from.into(), to.into()];
    args.extend(companies.iter().map(|c| c.clone().into()));
    // Both walk playbacks_by_company_started: the range of each company, nothing else.
    let ads = conn
        .prepare_cached(&format!(
            "SELECT p.ad_id, a.name, p.company_id, sum(p.plays), sum(p.duration_seconds),
                    count(DISTINCT p.device_id)
             FROM playbacks p JOIN ads a ON a.id = p.ad_id
             WHERE p.company_id IN ({marks}) AND p.started_at >= ?1 AND p.started_at < ?2
             GROUP BY p.ad_id ORDER BY p.ad_id"
        ))?
        .query_map(rusqlite::params_from_iter(args.iter()), |r| {
            Ok(AdLine {
                ad_id: r.get(0)?,
                name: r.get(1)?,
                company_id: r.get(2)?,
                plays: r.get(3)?,
                seconds: r.get(4)?,
                devices: r.get(5)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let devices = conn
        .prepare_cached(&format!(
            "SELECT p.device_id, d.name, p.company_id, sum(p.plays), sum(p.duration_seconds),
                    count(DISTINCT p.ad_id)
             FROM playbacks p JOIN devices d ON d.id = p.device_id
             WHERE p.company_id IN ({marks}) AND p.started_at >= ?1 AND p.started_at < ?2
             GROUP BY p.device_id ORDER BY p.device_id"
        ))?
        .query_map(rusqlite::params_from_iter(args.iter()), |r| {
            Ok(DeviceLine {
                device_id: r.get(0)?,
                name: r.get(1)?,
                company_id: r.get(2)?,
                plays: r.get(3)?,
                seconds: r.get(4)?,
                ads: r.get(5)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Response::ok(&Report {
        object: "proof_of_play_report",
        company_id: ctx.query("company_id").map(str::to_string),
        from: Time(from),
        to: Time(to),
        plays: ads.iter().map(|a| a.plays).sum(),
        seconds: ads.iter().map(|a| a.seconds).sum(),
        ads,
        devices,
    }))
}
