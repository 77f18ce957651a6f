//! The billing rule, one for the live platform and the demo world: a company is billed per UTC
//! calendar month. A month's invoice covers `[first second of the month, first second of the
//! next)`, is issued at its start (the subscription is charged in advance, dated the month's first
//! second, with the plan's tokens granted at the same instant) and is due
//! [`DUE_AFTER_PERIOD_SECS`] after the month ends. `ledger` writes live months by it;
//! [`align_fixture_invoices`] places the fixtures' invoices on the months before the load by it, so
//! every month is billed once, with no gap or overlap between the fixtures and live billing.

use super::error::DbError;
use crate::time::{parse_rfc3339, rfc3339};
use rusqlite::Connection;

/// An invoice is due 14 days after its month ends.
pub const DUE_AFTER_PERIOD_SECS: i64 = 14 * 86_400;

/// The first second of the UTC month holding `now`, and of the next one.
pub fn month_bounds(now: i64) -> (i64, i64) {
    let stamp = rfc3339(now);
    let year: i64 = stamp.get(0..4).and_then(|s| s.parse().ok()).unwrap_or(1970);
    let month: u32 = stamp.get(5..7).and_then(|s| s.parse().ok()).unwrap_or(1);
    let (ny, nm) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    let at = |y: i64, m: u32| parse_rfc3339(&format!("{y:04}-{m:02}-01T00:00:00Z"));
    let start = at(year, month).unwrap_or(now);
    let end = at(ny, nm).unwrap_or(now + 31 * 86_400);
    (start, end)
}

/// Places the fixture invoices just loaded (of every company, or of `account`'s) on calendar
/// months by the billing rule: a company's newest invoice is the month holding `now` (open), the
/// one before it the month before, and so on. Each invoice takes its month's period, issue and due
/// instants; its subscription charge moves to the month's first second; a payment keeps its delay
/// after the month's end, to the minute (at most `now`, itself a whole minute); every other charge
/// (token packs, overage) goes on the invoice of the month it was made in; the charges' ids follow
/// their dates; and each invoice is numbered by its month ([`month_number`]). The token ledger is left as the fixtures wrote it: moving its grants would
/// reorder it, and its balances must stay an unbroken chain that never goes below zero.
pub fn align_fixture_invoices(
    conn: &Connection,
    now: i64,
    account: Option<&str>,
) -> Result<(), DbError> {
    let companies: Vec<String> = conn
        .prepare("SELECT id FROM companies WHERE ?1 IS NULL OR account_id = ?1 ORDER BY id")?
        .query_map([account], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for company in &companies {
        let invoices: Vec<(String, i64, Option<i64>)> = conn
            .prepare(
                "SELECT id, issued_at, paid_at FROM invoices WHERE company_id = ?1
                 ORDER BY period_start DESC, id DESC",
            )?
            .query_map([company], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        let numbers: Vec<String> = conn
            .prepare(
                "SELECT number FROM invoices WHERE company_id = ?1
                 ORDER BY period_start DESC, id DESC",
            )?
            .query_map([company], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        // Numbers are renewed below; first out of the way, since they are unique service-wide.
        conn.execute(
            "UPDATE invoices SET number = 'renumbering:' || id WHERE company_id = ?1",
            [company],
        )?;
        let mut month = month_bounds(now).0;
        for ((invoice, issued, paid), number) in invoices.iter().zip(&numbers) {
            let (start, end) = month_bounds(month);
            // Whole minutes, as every billing instant.
            let paid = paid.map(|p| (end + (p - issued).max(0) / 60 * 60).min(now).max(start));
            conn.execute(
                "UPDATE invoices SET period_start = ?2, period_end = ?3, issued_at = ?2,
                     created_at = ?2, due_at = ?4, paid_at = ?5, number = ?6 WHERE id = ?1",
                rusqlite::params![
                    invoice,
                    start,
                    end,
                    end + DUE_AFTER_PERIOD_SECS,
                    paid,
                    month_number(number, start)
                ],
            )?;
            conn.execute(
                "UPDATE charges SET created_at = ?2 WHERE invoice_id = ?1 AND kind = 'subscription'",
                rusqlite::params![invoice, start],
            )?;
            month = month_bounds(start - 1).0;
        }
        conn.execute(
            "UPDATE charges SET invoice_id = (SELECT i.id FROM invoices i
                 WHERE i.company_id = charges.company_id
                   AND charges.created_at >= i.period_start AND charges.created_at < i.period_end)
             WHERE company_id = ?1 AND kind <> 'subscription' AND EXISTS (SELECT 1 FROM invoices i
                 WHERE i.company_id = charges.company_id
                   AND charges.created_at >= i.period_start AND charges.created_at < i.period_end)",
            [company],
        )?;
        ids_in_date_order(conn, company)?;
    }
    Ok(())
}

/// A fixture invoice's number for the month starting at `start`: its prefix, the month's year and
/// the month as the sequence (`NWG-2027-0001` for January 2027), so live billing, which numbers
/// `<PREFIX>-<YEAR>-<NNNN>` on from the year's highest, goes on with the next month's.
fn month_number(number: &str, start: i64) -> String {
    let prefix = number.split('-').next().unwrap_or("INV");
    let stamp = rfc3339(start);
    let (year, month) = (
        stamp.get(0..4).unwrap_or("1970"),
        stamp.get(5..7).unwrap_or("01"),
    );
    format!("{prefix}-{year}-00{month}")
}

/// Gives the company's charges their ids again so that id order is date order (a list of charges is
/// newest first by id, as live charges are written in time order): the ids are the same set,
/// handed out by `(created_at, id)`, and the ledger's `charge_id` follows its charge.
fn ids_in_date_order(conn: &Connection, company: &str) -> Result<(), DbError> {
    let by_id: Vec<String> = conn
        .prepare("SELECT id FROM charges WHERE company_id = ?1 ORDER BY id")?
        .query_map([company], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let by_date: Vec<String> = conn
        .prepare("SELECT id FROM charges WHERE company_id = ?1 ORDER BY created_at, id")?
        .query_map([company], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    if by_id == by_date {
        return Ok(());
    }
    // The ledger points at charges while they are renamed: checked at commit.
    conn.execute_batch("PRAGMA defer_foreign_keys = ON")?;
    for (old, new) in by_date.iter().zip(&by_id).filter(|(old, new)| old != new) {
        let temporary = format!("renumbering:{new}");
        conn.execute(
            "UPDATE charges SET id = ?2 WHERE id = ?1",
            rusqlite::params![old, temporary],
        )?;
        conn.execute(
            "UPDATE token_transactions SET charge_id = ?2 WHERE charge_id = ?1",
            rusqlite::params![old, temporary],
        )?;
    }
    for table in ["charges", "token_transactions"] {
        let column = if table == "charges" {
            "id"
        } else {
            "charge_id"
        };
        conn.execute(
            &format!(
                "UPDATE {table} SET {column} = substr({column}, 13)
                 WHERE {column} LIKE 'renumbering:%'"
            ),
            [],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The demo world loaded at `at`: every company's invoices tile whole months up to the one
    /// holding `at`, each with one subscription charge on its first second and every charge inside
    /// its month; charge ids in date order.
    fn assert_loaded_at(at: &str) {
        let now = parse_rfc3339(at).unwrap();
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::migrations::runner().run(&mut conn).unwrap();
        let tx = conn.transaction().unwrap();
        super::super::fixtures::load(&tx, now).unwrap();
        tx.commit().unwrap();
        let companies: Vec<String> = conn
            .prepare("SELECT id FROM companies")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for company in &companies {
            let months: Vec<(String, i64, i64, i64)> = conn
                .prepare(
                    "SELECT id, period_start, period_end, due_at FROM invoices
                     WHERE company_id = ?1 ORDER BY period_start",
                )
                .unwrap()
                .query_map([company], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(months.len(), 3, "{at}");
            let last = &months[2];
            assert!(
                last.1 <= now && now < last.2,
                "{at}: the newest month holds the load"
            );
            for pair in months.windows(2) {
                assert_eq!(pair[0].2, pair[1].1, "{at}: months tile");
            }
            for (id, start, end, due) in &months {
                let number: String = conn
                    .query_row("SELECT number FROM invoices WHERE id = ?1", [id], |r| {
                        r.get(0)
                    })
                    .unwrap();
                let stamp = rfc3339(*start);
                assert!(
                    number.ends_with(&format!("-{}-00{}", &stamp[..4], &stamp[5..7])),
                    "{at}: {number} for {stamp}"
                );
                assert_eq!(month_bounds(*start), (*start, *end), "{at}: a whole month");
                assert_eq!(*due, end + DUE_AFTER_PERIOD_SECS);
                let (subscriptions, outside): (i64, i64) = conn
                    .query_row(
                        "SELECT sum(kind = 'subscription' AND created_at = ?2),
                                sum(created_at < ?2 OR created_at >= min(?3, ?4 + 1))
                         FROM charges WHERE invoice_id = ?1",
                        rusqlite::params![id, start, end, now],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .unwrap();
                assert_eq!(
                    (subscriptions, outside),
                    (1, 0),
                    "{at}: {}",
                    rfc3339(*start)
                );
            }
            let dates: Vec<i64> = conn
                .prepare("SELECT created_at FROM charges WHERE company_id = ?1 ORDER BY id")
                .unwrap()
                .query_map([company], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert!(dates.windows(2).all(|w| w[0] <= w[1]), "{at}: {dates:?}");
        }
    }

    #[test]
    fn the_fixtures_bill_whole_months_whatever_the_load_date() {
        // The shortest two months before (January and February), a year's turn, a month's first
        // and last minute, the middle of a month.
        for at in [
            "2027-03-01T00:00:30Z",
            "2027-01-01T00:00:00Z",
            "2026-12-31T23:59:59Z",
            "2026-12-07T14:28:14Z",
            "2028-03-01T00:05:00Z",
        ] {
            assert_loaded_at(at);
        }
    }
}
