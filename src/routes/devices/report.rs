//! `GET /reports/proof-of-play`: plays and seconds per ad, per screen and per UTC day over a range,
//! from the players' reports and the simulated fleet alike. A row counts in the range that holds its
//! `started_at` (a simulated row's is the start of its clock hour, or the first instant in that hour
//! its ad could play there). Plays older than `retention.playback_rollup_days` are daily totals
//! ([`crate::routes::retention`]): a total counts in the range that holds the start of its UTC day.
//!
//! With `Accept: text/csv` the same report answers as CSV (RFC 4180): one line per UTC day, screen
//! and ad that played, named, with its plays and seconds, as a download.

use super::playbacks::{instant, DEFAULT_RANGE_SECS};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::Kind;
use crate::routes::crud::Time;
use rusqlite::OptionalExtension;
use schemars::JsonSchema;
use serde::Serialize;

/// Plays and seconds played over a range, per ad and per device.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "ProofOfPlayReport")]
pub(super) struct Report {
    #[schemars(extend("const" = "proof_of_play_report"))]
    object: &'static str,
    company_id: Option<String>,
    from: Time,
    to: Time,
    #[schemars(range(min = 0))]
    plays: i64,
    #[schemars(range(min = 0))]
    seconds: i64,
    /// Every UTC day the range touches, oldest first (a day's plays count where they started).
    days: Vec<DayLine>,
    ads: Vec<AdLine>,
    devices: Vec<DeviceLine>,
}

#[derive(Serialize, JsonSchema)]
struct DayLine {
    #[schemars(extend("format" = "date"))]
    date: String,
    #[schemars(range(min = 0))]
    plays: i64,
    #[schemars(range(min = 0))]
    seconds: i64,
}

#[derive(Serialize, JsonSchema)]
struct AdLine {
    ad_id: String,
    name: String,
    company_id: String,
    /// The ad's status now (`draft`, `active`, `paused`, `archived`): only an active ad is expected to play.
    status: String,
    #[schemars(range(min = 0))]
    plays: i64,
    #[schemars(range(min = 0))]
    seconds: i64,
    #[schemars(range(min = 0))]
    devices: i64,
}

#[derive(Serialize, JsonSchema)]
struct DeviceLine {
    device_id: String,
    name: String,
    company_id: String,
    #[schemars(range(min = 0))]
    plays: i64,
    #[schemars(range(min = 0))]
    seconds: i64,
    #[schemars(range(min = 0))]
    ads: i64,
}

pub(super) fn proof_of_play(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let companies = ctx.list_companies()?;
    let to = instant(ctx, "to")?.unwrap_or_else(|| ctx.now());
    let from = instant(ctx, "from")?.unwrap_or(to - DEFAULT_RANGE_SECS);
    if to - from > MAX_RANGE_DAYS * DAY {
        return Err(ApiError::invalid(
            "from",
            "range_too_long",
            format!("The range may span at most {MAX_RANGE_DAYS} days (a year, a day of which per line of `days`); ask for it in parts."),
        ));
    }
    let ad = ctx.query_id("ad_id", Kind::Ad)?;
    // Any span: the sums read the plays stored in it by index, so a long window costs what it
    // holds. A window where `to` is not after `from` holds nothing: an empty report.
    let conn = ctx.conn()?;
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
    if ctx
        .header("accept")
        .is_some_and(|a| a.to_ascii_lowercase().contains("text/csv"))
    {
        let lines = per_day(&conn, &marks, &filter, &args, (from, to), true)?;
        let name = format!(
            "proof-of-play-{}-{}-{}.csv",
            ctx.query("company_id").unwrap_or("all"),
            &crate::time::rfc3339(from)[..10],
            &crate::time::rfc3339(to - 1)[..10]
        );
        return Ok(Response::new(
            hyper::StatusCode::OK,
            "text/csv; charset=utf-8; header=present",
            csv(&lines),
        )
        .with_header(
            "content-disposition",
            &format!("attachment; filename=\"{name}\""),
        ));
    }
    // One pass over the range's plays and daily totals (per day, screen and ad); the ads', the
    // screens' and the days' lines are sums of its lines.
    let lines = per_day(&conn, &marks, &filter, &args, (from, to), false)?;
    // The ads that did not play in the range are lines too (what "did my ad run?" needs).
    let mut ads = silent_ads(&conn, &marks, ad_mark, &args)?;
    let ad_at: std::collections::HashMap<String, usize> = ads
        .iter()
        .enumerate()
        .map(|(i, a)| (a.ad_id.clone(), i))
        .collect();
    let mut devices: std::collections::BTreeMap<&str, DeviceLine> = Default::default();
    let mut pairs: std::collections::HashSet<(&str, &str)> = Default::default();
    let mut days: Vec<DayLine> = Vec::new();
    if to > from {
        for day in from.div_euclid(DAY)..=(to - 1).div_euclid(DAY) {
            days.push(DayLine {
                date: crate::time::rfc3339(day * DAY)[..10].to_string(),
                plays: 0,
                seconds: 0,
            });
        }
    }
    let first = from.div_euclid(DAY);
    for l in &lines {
        let new_pair = pairs.insert((l.device_id.as_str(), l.ad_id.as_str()));
        if let Some(ad) = ad_at.get(&l.ad_id).and_then(|&i| ads.get_mut(i)) {
            ad.plays += l.plays;
            ad.seconds += l.seconds;
            ad.devices += i64::from(new_pair);
        }
        let device = devices
            .entry(l.device_id.as_str())
            .or_insert_with(|| DeviceLine {
                device_id: l.device_id.clone(),
                name: l.device.clone(),
                company_id: l.company_id.clone(),
                plays: 0,
                seconds: 0,
                ads: 0,
            });
        device.plays += l.plays;
        device.seconds += l.seconds;
        device.ads += i64::from(new_pair);
        if let Some(d) = usize::try_from(l.day - first)
            .ok()
            .and_then(|i| days.get_mut(i))
        {
            d.plays += l.plays;
            d.seconds += l.seconds;
        }
    }
    let devices: Vec<DeviceLine> = devices.into_values().collect();
    Ok(Response::ok(&Report {
        object: "proof_of_play_report",
        company_id: ctx.query("company_id").map(str::to_string),
        from: Time(from),
        to: Time(to),
        plays: ads.iter().map(|a| a.plays).sum(),
        seconds: ads.iter().map(|a| a.seconds).sum(),
        days,
        ads,
        devices,
    }))
}

const DAY: i64 = 86_400;
/// The longest range a report covers.
pub const MAX_RANGE_DAYS: i64 = 366;

/// What played on one UTC day, on one screen, of one ad.
struct PerDay {
    day: i64,
    company_id: String,
    device_id: String,
    device: String,
    ad_id: String,
    ad: String,
    plays: i64,
    seconds: i64,
}

/// Plays and seconds per UTC day, screen and ad over the range `[from, to)` and the companies
/// bound in `args` (as [`sums`]); `ordered`, by day, then screen name, then ad name.
///
/// A day wholly inside the range is read from its roll-up (`playback_days`, one row per company,
/// day, screen and ad, kept as plays are written: schema V43); only the partial days at either end
/// read play rows, and the last one its daily totals (a total counts in the range that holds the
/// start of its day). The lines are those of summing every play row and total of the range.
fn per_day(
    conn: &rusqlite::Connection,
    marks: &str,
    filter: &str,
    args: &[rusqlite::types::Value],
    (from, to): (i64, i64),
    ordered: bool,
) -> Result<Vec<PerDay>, ApiError> {
    // [from, whole) and [tail, to) are read row by row; [whole, tail) is whole days (empty when the
    // range holds no whole day).
    let whole = (from.div_euclid(DAY) + i64::from(from.rem_euclid(DAY) != 0)) * DAY;
    let whole = whole.min(to);
    let tail = (to.div_euclid(DAY) * DAY).max(whole);
    let ceil_day = |t: i64| t.div_euclid(DAY) + i64::from(t.rem_euclid(DAY) != 0);
    let n = args.len();
    let (w, t, td, te) = (n + 1, n + 2, n + 3, n + 4);
    let mut args = args.to_vec();
    args.extend([
        whole.into(),
        tail.into(),
        ceil_day(tail).into(),
        ceil_day(to).into(),
    ]);
    // The whole days' rows are one per day, screen and ad already; only the partial days' play
    // rows and totals are grouped. The report's sums do not depend on the lines' order: only the
    // CSV, which lists them, sorts them.
    let order = if ordered {
        "ORDER BY p.day, d.name, d.id, a.name, a.id"
    } else {
        ""
    };
    let rows = conn
        .prepare_cached(&format!(
            "SELECT p.day, p.company_id, p.device_id, d.name, p.ad_id, a.name, p.plays, p.seconds
             FROM (SELECT day, company_id, device_id, ad_id, plays, seconds FROM playback_days
                   WHERE company_id IN ({marks}) AND day >= ?{w} / 86400 AND day < ?{t} / 86400
                   UNION ALL
                   SELECT day, company_id, device_id, ad_id, sum(plays) AS plays,
                          sum(seconds) AS seconds
                   FROM (SELECT started_at / 86400 AS day, company_id, device_id, ad_id, plays,
                                duration_seconds AS seconds
                         FROM playbacks
                         WHERE company_id IN ({marks}) AND started_at >= ?1 AND started_at < ?{w}
                         UNION ALL
                         SELECT started_at / 86400 AS day, company_id, device_id, ad_id, plays,
                                duration_seconds AS seconds
                         FROM playbacks
                         WHERE company_id IN ({marks}) AND started_at >= ?{t} AND started_at < ?2
                         UNION ALL
                         SELECT day, company_id, device_id, ad_id, plays, seconds
                         FROM playback_daily_totals
                         WHERE company_id IN ({marks}) AND day >= ?{td} AND day < ?{te})
                   GROUP BY day, device_id, ad_id) p
             JOIN devices d ON d.id = p.device_id
             JOIN ads a ON a.id = p.ad_id
             WHERE 1 = 1{filter}
             {order}"
        ))?
        .query_map(rusqlite::params_from_iter(args.iter()), |r| {
            Ok(PerDay {
                day: r.get(0)?,
                company_id: r.get(1)?,
                device_id: r.get(2)?,
                device: r.get(3)?,
                ad_id: r.get(4)?,
                ad: r.get(5)?,
                plays: r.get(6)?,
                seconds: r.get(7)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The report as CSV (RFC 4180, CRLF line ends): a header line, then one line per day, screen and
/// ad. Free text is quoted when it holds a comma, quote or line break, and a cell a spreadsheet
/// would run as a formula (`=`, `+`, `-`, `@`, tab, carriage return first) is prefixed with `'`.
fn csv(lines: &[PerDay]) -> String {
    let mut out =
        String::from("date,company_id,device_id,device_name,ad_id,ad_name,plays,seconds\r\n");
    for l in lines {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{}\r\n",
            &crate::time::rfc3339(l.day * DAY)[..10],
            l.company_id,
            l.device_id,
            cell(&l.device),
            l.ad_id,
            cell(&l.ad),
            l.plays,
            l.seconds
        ));
    }
    out
}

fn cell(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_string()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
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

#[cfg(test)]
mod tests {
    use super::cell;

    #[test]
    fn csv_cells_are_quoted_and_never_formulas() {
        assert_eq!(cell("Entrance Screen 1"), "Entrance Screen 1");
        assert_eq!(cell("Fruit, berries"), "\"Fruit, berries\"");
        assert_eq!(cell("The \"best\""), "\"The \"\"best\"\"\"");
        assert_eq!(cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(cell("-5"), "'-5");
    }
}
