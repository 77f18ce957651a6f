//! `GET /reports/proof-of-play`: plays and seconds per ad and per screen over a range, from the
//! players' reports and the simulated fleet alike. A row counts in the range that holds its
//! `started_at` (a simulated row's is the start of its clock hour). Plays older than
//! `retention.playback_rollup_days` are daily totals ([`crate::routes::retention`]): a total counts
//! in the range that holds the start of its UTC day.

use super::playbacks::{instant, DEFAULT_RANGE_SECS};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::Kind;
use crate::routes::crud::Time;
use rusqlite::OptionalExtension;
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
    status: String,
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
    let ad = ctx.query_id("ad_id", Kind::Ad)?;
    // Any span: the sums read the plays stored in it by index, so a long window costs what it
    // holds. A window where `to` is not after `from` holds nothing: an empty report.
    let conn = ctx.app.db.conn()?;
    let marks = (3..3 + companies.len())
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let ad_mark = 3 + companies.len();
    let mut args: Vec<rusqlite::types::Value> = vec![from.into(), to.into()];
    args.extend(companies.iter().map(|c| c.clone().into()));
    args.push(ad.clone().into());
    // An ad of a company the key cannot see reads like one that does not exist.
    if let Some(ad) = &ad {
        let company: Option<String> = conn
            .prepare_cached("SELECT company_id FROM ads WHERE id = ?1")?
            .query_row([ad.as_str()], |r| r.get(0))
            .optional()?;
        if !company.is_some_and(|c| companies.contains(&c)) {
            return Err(ApiError::not_found("ad", ad.as_str()));
        }
    }
    let filter = format!(" AND (?{ad_mark} IS NULL OR p.ad_id = ?{ad_mark})");
    let played = sums(&conn, "ad_id", "ads", "device_id", &marks, &filter, &args)?;
    // The ads that did not play in the range are lines too (what "did my ad run?" needs).
    let mut ads = silent_ads(&conn, &marks, ad_mark, &args)?;
    for l in played {
        if let Some(line) = ads.iter_mut().find(|a| a.ad_id == l.id) {
            line.plays = l.plays;
            line.seconds = l.seconds;
            line.devices = l.others;
        }
    }
    let devices = sums(
        &conn,
        "device_id",
        "devices",
        "ad_id",
        &marks,
        &filter,
        &args,
    )?
    .into_iter()
    .map(|l| DeviceLine {
        device_id: l.id,
        name: l.name,
        company_id: l.company_id,
        plays: l.plays,
        seconds: l.seconds,
        ads: l.others,
    })
    .collect();
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

/// Every ad of the companies (or the one asked for), with no plays yet, in id order.
fn silent_ads(
    conn: &rusqlite::Connection,
    marks: &str,
    ad_mark: usize,
    args: &[rusqlite::types::Value],
) -> Result<Vec<AdLine>, ApiError> {
    let rows = conn
        .prepare_cached(&format!(
            "SELECT id, name, company_id, status FROM ads
             WHERE company_id IN ({marks}) AND (?{ad_mark} IS NULL OR id = ?{ad_mark})
               AND ?1 IS NOT NULL AND ?2 IS NOT NULL -- every bound value is used once
             ORDER BY id"
        ))?
        .query_map(rusqlite::params_from_iter(args.iter()), |r| {
            Ok(AdLine {
                ad_id: r.get(0)?,
                name: r.get(1)?,
                company_id: r.get(2)?,
                status: r.get(3)?,
                plays: 0,
                seconds: 0,
                devices: 0,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// One line of a report before it is named for what it sums.
struct Sums {
    id: String,
    name: String,
    company_id: String,
    plays: i64,
    seconds: i64,
    /// Distinct values of the other key (devices that played an ad, ads a device played).
    others: i64,
}

/// Plays and seconds per `key` (`ad_id` or `device_id`, named from `table`) over the range and
/// companies bound in `args` (`?1` from, `?2` to, then the companies in `marks`). Walks
/// playbacks_by_company_started and the daily totals' key: the range of each company, nothing else.
fn sums(
    conn: &rusqlite::Connection,
    key: &str,
    table: &str,
    other: &str,
    marks: &str,
    filter: &str,
    args: &[rusqlite::types::Value],
) -> Result<Vec<Sums>, ApiError> {
    let rows = conn
        .prepare_cached(&format!(
            "SELECT p.{key}, t.name, p.company_id, sum(p.plays), sum(p.seconds),
                    count(DISTINCT p.{other})
             FROM (SELECT company_id, device_id, ad_id, plays, duration_seconds AS seconds
                   FROM playbacks
                   WHERE company_id IN ({marks}) AND started_at >= ?1 AND started_at < ?2
                   UNION ALL
                   SELECT company_id, device_id, ad_id, plays, seconds FROM playback_daily_totals
                   WHERE company_id IN ({marks}) AND day >= (?1 + 86399) / 86400 AND day < (?2 + 86399) / 86400) p
             JOIN {table} t ON t.id = p.{key}
             WHERE 1 = 1{filter}
             GROUP BY p.{key} ORDER BY p.{key}"
        ))?
        .query_map(rusqlite::params_from_iter(args.iter()), |r| {
            Ok(Sums {
                id: r.get(0)?,
                name: r.get(1)?,
                company_id: r.get(2)?,
                plays: r.get(3)?,
                seconds: r.get(4)?,
                others: r.get(5)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}
