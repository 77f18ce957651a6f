//! What the proof-of-play report counts over a range, row by row: the whole days' roll-up rows
//! (`playback_days`, schema V43), and for the partial days at either end the play rows and the
//! last one's daily totals. Rows come unsorted and ungrouped, their text borrowed from SQLite:
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
/// given). A play row counts in the range that holds its `started_at`, a daily total or a
/// roll-up row in the range that holds the start of its day; the sum of a day's rows per screen
/// and ad is what summing every play row and total of it gives.
pub(super) fn each_row(
    conn: &rusqlite::Connection,
    companies: &[String],
    ad: Option<&str>,
    (from, to): (i64, i64),
    mut each: impl FnMut(Row<'_>) -> Result<(), ApiError>,
) -> Result<(), ApiError> {
    // [from, whole) and [tail, to) are read row by row; [whole, tail) is whole days (empty when the
    // range holds no whole day).
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
    // Each part walks an index in key order (company, then day or start); no part is grouped or
    // sorted, and no name is joined per row.
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
         SELECT started_at / 86400, company_id, device_id, ad_id, plays, duration_seconds
         FROM playbacks
         WHERE company_id IN ({marks}) AND started_at >= ?4 AND started_at < ?2
           AND (?7 IS NULL OR ad_id = ?7)
         UNION ALL
         SELECT day, company_id, device_id, ad_id, plays, seconds FROM playback_daily_totals
         WHERE company_id IN ({marks}) AND day >= ?5 AND day < ?6
           AND (?7 IS NULL OR ad_id = ?7)"
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
