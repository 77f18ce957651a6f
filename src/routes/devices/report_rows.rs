//! What the proof-of-play report counts over a range, row by row: the whole days' roll-up rows
//! (`playback_days`, schema V43), the first partial day's play rows, and the last partial day's
//! roll-up rows less its play rows after the range (schema V48: plays rolled up are deleted, so
//! the roll-up row is what is left of them). Rows come unsorted and ungrouped, their text borrowed from SQLite:
//! the report sums them in one pass keyed by small integers ([`super::report_tally`]), where a
//! `GROUP BY` over text ids sorted every partial day's play row (the costliest part of the report).

use crate::http::ApiError;

const DAY: i64 = 86_400;

/// One row that counts: its UTC day (days since the epoch), its screen and ad (the text columns'
/// bytes), its plays and seconds; its company is read when asked (once per screen).
pub(super) struct Row<'r> {
    pub day: i64,
    pub device_id: &'r [u8],
    pub ad_id: &'r [u8],
    pub plays: i64,
    pub seconds: i64,
    row: &'r rusqlite::Row<'r>,
}

impl Row<'_> {
    pub fn company_id(&self) -> rusqlite::Result<String> {
        self.row.get(1)
    }
}

/// Calls `each` for every row counted in `[from, to)` for `companies` (and the one ad, when
/// given). A play row counts in the range that holds its `started_at`, the plays rolled up (and
/// gone) in the range that holds the start of their day; a roll-up row is the sum of its day's
/// play rows and of those rolled up. So a day the range ends in counts its roll-up row less the
/// play rows from `to` to the day's end, and a (screen, ad) whose every row of that day is after
/// `to` is not met.
pub(super) fn each_row(
    conn: &rusqlite::Connection,
    companies: &[String],
    ad: Option<&str>,
    (from, to): (i64, i64),
    mut each: impl FnMut(Row<'_>) -> Result<(), ApiError>,
) -> Result<(), ApiError> {
    // [from, whole) is read row by row; [whole, tail) is whole days (empty when the range holds no
    // whole day); [tail, to), a day's start to `to`, is that day's roll-up less its rows after `to`
    // (none at all when `to` is now).
    let whole = (from.div_euclid(DAY) + i64::from(from.rem_euclid(DAY) != 0)) * DAY;
    let whole = whole.min(to);
    let tail = (to.div_euclid(DAY) * DAY).max(whole);
    let ceil_day = |t: i64| t.div_euclid(DAY) + i64::from(t.rem_euclid(DAY) != 0);
    let mut args: Vec<rusqlite::types::Value> = vec![
        from.into(),
        to.into(),
        whole.into(),
        tail.into(),
        ceil_day(tail).into(),
        ceil_day(to).into(),
        ad.map(str::to_string).into(),
    ];
    let marks = (args.len() + 1..=args.len() + companies.len())
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    args.extend(companies.iter().map(|c| c.clone().into()));
    // Each part walks an index in key order (company, then day or start), and no name is joined
    // per row; only the play rows after `to` in its day (none when `to` is now) are grouped.
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT day, company_id, device_id, ad_id, plays, seconds FROM playback_days
         WHERE company_id IN ({marks}) AND day >= ?3 / 86400 AND day < ?4 / 86400
           AND (?7 IS NULL OR ad_id = ?7)
         UNION ALL
         SELECT started_at / 86400, company_id, device_id, ad_id, plays, duration_seconds
         FROM playbacks
         WHERE company_id IN ({marks}) AND started_at >= ?1 AND started_at < ?3
           AND (?7 IS NULL OR ad_id = ?7)
         UNION ALL
         SELECT d.day, d.company_id, d.device_id, d.ad_id, d.plays - coalesce(x.plays, 0),
                d.seconds - coalesce(x.seconds, 0)
         FROM playback_days d LEFT JOIN
             (SELECT device_id, ad_id, sum(plays) AS plays, sum(duration_seconds) AS seconds,
                     count(*) AS rows
              FROM playbacks
              WHERE company_id IN ({marks}) AND started_at >= ?2 AND started_at < ?6 * 86400
                AND (?7 IS NULL OR ad_id = ?7)
              GROUP BY device_id, ad_id) x
             ON x.device_id = d.device_id AND x.ad_id = d.ad_id
         WHERE d.company_id IN ({marks}) AND d.day >= ?5 AND d.day < ?6
           AND (?7 IS NULL OR d.ad_id = ?7) AND d.rows > coalesce(x.rows, 0)"
    ))?;
    let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
    while let Some(r) = rows.next()? {
        each(Row {
            day: r.get(0)?,
            device_id: bytes(r, 2)?,
            ad_id: bytes(r, 3)?,
            plays: r.get(4)?,
            seconds: r.get(5)?,
            row: r,
        })?;
    }
    Ok(())
}

/// A text column's bytes, borrowed (the report reads thousands of ids and keeps a few hundred,
/// checked as text when kept).
fn bytes<'r>(r: &'r rusqlite::Row<'_>, i: usize) -> rusqlite::Result<&'r [u8]> {
    let value = r.get_ref(i)?;
    value
        .as_bytes()
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(i, value.data_type(), Box::new(e)))
}
