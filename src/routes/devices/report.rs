//! `GET /reports/proof-of-play`: plays and seconds per ad, per screen and per UTC day over a range,
//! from the players' reports and the simulated fleet alike. A row counts in the range that holds its
//! `started_at` (a simulated row's is the start of its clock hour, or the first instant in that hour
//! its ad could play there). Plays older than `retention.playback_rollup_days` are rolled up
//! ([`crate::routes::retention`]): only their day's sums are left, which count in the range that
//! holds the start of their UTC day.
//!
//! With `Accept: text/csv` the same report answers as CSV (RFC 4180): one line per UTC day, screen
//! and ad that played, named, with its plays and seconds, as a download.

use super::playbacks::{instant, DEFAULT_RANGE_SECS};
use super::report_keys::{pair, Keys, Pairs};
use super::report_rows::{each_row, Row};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::Kind;
use crate::routes::crud::Time;
use rusqlite::OptionalExtension;
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::HashMap;

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
    /// With `company_id`: the seconds of the range, up to now, in which that company's stores were
    /// open by its opening hours (what each of its screens could have played); `null` for a report
    /// across companies.
    #[schemars(range(min = 0))]
    store_open_seconds: Option<i64>,
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
    let ad = ad.as_deref();
    if ctx
        .header("accept")
        .is_some_and(|a| a.to_ascii_lowercase().contains("text/csv"))
    {
        let lines = per_day(&conn, &companies, ad, (from, to))?;
        let name = format!(
            "proof-of-play-{}-{}-{}.csv",
            ctx.query("company_id").unwrap_or("all"),
            &crate::time::rfc3339(from)[..10],
            &crate::time::rfc3339(to - 1)[..10]
        );
        return Ok(Response::new(
            hyper::StatusCode::OK,
            "text/csv; charset=utf-8; header=present",
            lines,
        )
        .with_header(
            "content-disposition",
            &format!("attachment; filename=\"{name}\""),
        ));
    }
    // The ads that did not play in the range are lines too (what "did my ad run?" needs).
    let mut ads = silent_ads(&conn, &companies, ad)?;
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
    // One pass over the range's rows: each adds to its screen's, its ad's and its day's line; a
    // screen's ads and an ad's screens count the (screen, ad) pairs met.
    let mut ad_numbers: Keys<Option<usize>> = Keys::new();
    for (i, a) in ads.iter().enumerate() {
        ad_numbers.insert(&a.ad_id, Some(i));
    }
    let mut screens: Keys<DeviceLine> = Keys::new();
    let mut pairs = Pairs::default();
    let mut screen_named = conn.prepare_cached("SELECT name FROM devices WHERE id = ?1")?;
    let mut ad_named = conn.prepare_cached("SELECT name FROM ads WHERE id = ?1")?;
    each_row(&conn, &companies, ad, (from, to), |r| {
        let Some(screen) =
            screens.number(r.device_id, |id| screen_line(&mut screen_named, id, &r))?
        else {
            return Ok(());
        };
        // An ad of another company (or filtered out) counts for its screen and day, not as a line.
        let Some(played) =
            ad_numbers.number(r.ad_id, |id| Ok(name_of(&mut ad_named, id)?.map(|_| None)))?
        else {
            return Ok(());
        };
        let new_pair = i64::from(pairs.insert(pair(screen, played)));
        if let Some(line) = screens.get_mut(screen) {
            line.plays += r.plays;
            line.seconds += r.seconds;
            line.ads += new_pair;
        }
        if let Some(line) = ad_numbers
            .get(played)
            .copied()
            .flatten()
            .and_then(|i| ads.get_mut(i))
        {
            line.plays += r.plays;
            line.seconds += r.seconds;
            line.devices += new_pair;
        }
        if let Some(d) = usize::try_from(r.day - first)
            .ok()
            .and_then(|i| days.get_mut(i))
        {
            d.plays += r.plays;
            d.seconds += r.seconds;
        }
        Ok(())
    })?;
    let mut devices = screens.into_items();
    devices.sort_unstable_by(|a, b| a.device_id.cmp(&b.device_id));
    let store_open_seconds = match ctx.query("company_id") {
        Some(company) => Some(open_seconds(&conn, company, (from, to.min(ctx.now())))?),
        None => None,
    };
    Ok(Response::ok(&Report {
        object: "proof_of_play_report",
        company_id: ctx.query("company_id").map(str::to_string),
        from: Time(from),
        to: Time(to),
        plays: ads.iter().map(|a| a.plays).sum(),
        seconds: ads.iter().map(|a| a.seconds).sum(),
        store_open_seconds,
        days,
        ads,
        devices,
    }))
}

/// The seconds of `[from, to)` in which the stores of `company` were open, by its opening hours.
fn open_seconds(
    conn: &rusqlite::Connection,
    company: &str,
    (from, to): (i64, i64),
) -> Result<i64, ApiError> {
    let hours = conn
        .prepare_cached("SELECT opening_hours, timezone FROM companies WHERE id = ?1")?
        .query_row([company], |r| {
            Ok(crate::opening_hours::Hours::read(
                &r.get::<_, String>(0)?,
                &r.get::<_, String>(1)?,
            ))
        })
        .optional()?
        .ok_or_else(|| ApiError::not_found("company", company))?;
    Ok(hours.open_spans(from, to).iter().map(|(a, b)| b - a).sum())
}

/// The line of the screen `id`, met in the row `r` (its company is the row's), if it exists.
fn screen_line(
    named: &mut rusqlite::CachedStatement<'_>,
    id: &str,
    r: &Row<'_>,
) -> Result<Option<DeviceLine>, ApiError> {
    let Some(name) = name_of(named, id)? else {
        return Ok(None);
    };
    Ok(Some(DeviceLine {
        device_id: id.to_string(),
        name,
        company_id: r.company_id()?,
        plays: 0,
        seconds: 0,
        ads: 0,
    }))
}

/// The name of the row `id` names through `stmt` (`SELECT name … WHERE id = ?1`), if any.
fn name_of(stmt: &mut rusqlite::CachedStatement<'_>, id: &str) -> Result<Option<String>, ApiError> {
    Ok(stmt.query_row([id], |r| r.get(0)).optional()?)
}

const DAY: i64 = 86_400;
/// The longest range a report covers.
pub const MAX_RANGE_DAYS: i64 = 366;

/// What played on one UTC day, on one screen, of one ad.
struct PerDay<'k> {
    day: i64,
    screen: &'k DeviceLine,
    ad: &'k (String, String),
    plays: i64,
    seconds: i64,
}

/// The report's lines per UTC day, screen and ad over `[from, to)`, for `companies` (and the one
/// ad, when given): every row's sums by day, screen and ad, in one pass ([`each_row`]), then
/// ordered by day, screen name, screen id, ad name, ad id.
fn per_day(
    conn: &rusqlite::Connection,
    companies: &[String],
    ad: Option<&str>,
    (from, to): (i64, i64),
) -> Result<String, ApiError> {
    let mut screens: Keys<DeviceLine> = Keys::new();
    let mut ads: Keys<(String, String)> = Keys::new();
    let mut sums: HashMap<(i64, u32, u32), (i64, i64)> = HashMap::new();
    let mut screen_named = conn.prepare_cached("SELECT name FROM devices WHERE id = ?1")?;
    let mut ad_named = conn.prepare_cached("SELECT name FROM ads WHERE id = ?1")?;
    each_row(conn, companies, ad, (from, to), |r| {
        let Some(screen) =
            screens.number(r.device_id, |id| screen_line(&mut screen_named, id, &r))?
        else {
            return Ok(());
        };
        let Some(played) = ads.number(r.ad_id, |id| {
            Ok(name_of(&mut ad_named, id)?.map(|name| (id.to_string(), name)))
        })?
        else {
            return Ok(());
        };
        let sum = sums.entry((r.day, screen, played)).or_default();
        sum.0 += r.plays;
        sum.1 += r.seconds;
        Ok(())
    })?;
    let mut lines: Vec<PerDay<'_>> = sums
        .into_iter()
        .filter_map(|((day, screen, ad), (plays, seconds))| {
            Some(PerDay {
                day,
                screen: screens.get(screen)?,
                ad: ads.get(ad)?,
                plays,
                seconds,
            })
        })
        .collect();
    lines.sort_unstable_by(|a, b| {
        (a.day, &a.screen.name, &a.screen.device_id, &a.ad.1, &a.ad.0).cmp(&(
            b.day,
            &b.screen.name,
            &b.screen.device_id,
            &b.ad.1,
            &b.ad.0,
        ))
    });
    Ok(csv(&lines))
}

/// The report as CSV (RFC 4180, CRLF line ends): a header line, then one line per day, screen and
/// ad. Free text is quoted when it holds a comma, quote or line break, and a cell a spreadsheet
/// would run as a formula (`=`, `+`, `-`, `@`, tab, carriage return first) is prefixed with `'`.
fn csv(lines: &[PerDay<'_>]) -> String {
    let mut out =
        String::from("date,company_id,device_id,device_name,ad_id,ad_name,plays,seconds\r\n");
    for l in lines {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{}\r\n",
            &crate::time::rfc3339(l.day * DAY)[..10],
            l.screen.company_id,
            l.screen.device_id,
            cell(&l.screen.name),
            l.ad.0,
            cell(&l.ad.1),
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
    companies: &[String],
    ad: Option<&str>,
) -> Result<Vec<AdLine>, ApiError> {
    let marks = (2..2 + companies.len())
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut args: Vec<rusqlite::types::Value> = vec![ad.map(str::to_string).into()];
    args.extend(companies.iter().map(|c| c.clone().into()));
    let rows = conn
        .prepare_cached(&format!(
            "SELECT id, name, company_id, status FROM ads
             WHERE company_id IN ({marks}) AND (?1 IS NULL OR id = ?1)
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
