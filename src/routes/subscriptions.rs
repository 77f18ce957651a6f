//! Subscriptions renewing as time passes ([`crate::timeline::Source`]): at the first second of each
//! UTC month the clock reaches, every company is charged its plan's monthly price (a
//! `subscription` charge on that month's invoice) and granted its plan's included tokens (a `grant`
//! in the ledger, `tokens.granted`), both dated the month's first second
//! ([`crate::ledger::renew_subscription`]). So "+1 day" across a month boundary bills the month,
//! and a jump over several months bills each of them, in order.
//!
//! `subscription_renewals` keeps, per company, the month up to which it was renewed. Settling (a
//! start, a reset) records the current month for companies without a row: the months before are
//! the fixtures' history, which carries its own charges and grants. A company created later without
//! a row counts as renewed through the month it was created in.

use crate::db::DbError;
use crate::db::WriteIntent;
use crate::ledger::{month_bounds, renew_subscription};
use crate::timeline::{failed, Env, Report, Source};

pub struct Subscriptions;

/// The next month start after each company's last renewal, for companies due at or before `until`.
const DUE: &str =
    "SELECT c.id, CAST(strftime('%s', coalesce(r.renewed_at, c.created_at), 'unixepoch',
         'start of month', '+1 month') AS INTEGER) AS due
     FROM companies c LEFT JOIN subscription_renewals r ON r.company_id = c.id
     WHERE due <= ?1 ORDER BY due, c.id";

impl Source for Subscriptions {
    fn name(&self) -> &'static str {
        "subscriptions"
    }

    fn settle(&self, env: &Env<'_>, at: i64) -> Result<(), DbError> {
        env.db.write(&WriteIntent::sandbox(), |tx| {
            tx.execute(
                "INSERT OR IGNORE INTO subscription_renewals (company_id, renewed_at)
                 SELECT id, ?1 FROM companies",
                [month_bounds(at).0],
            )?;
            Ok(())
        })
    }

    fn next_due(&self, env: &Env<'_>, until: i64) -> Result<Option<i64>, DbError> {
        let conn = env.db.conn()?;
        let mut stmt = conn.prepare_cached(&format!("SELECT min(due) FROM ({DUE})"))?;
        Ok(stmt.query_row([until], |r| r.get(0))?)
    }

    fn run_due(&self, env: &Env<'_>, at: i64, report: &mut Report) -> Result<(), DbError> {
        env.db.write(&WriteIntent::sandbox(), |tx| loop {
            let due: Vec<(String, i64)> = tx
                .prepare_cached(DUE)?
                .query_map([at], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            if due.is_empty() {
                return Ok(());
            }
            for (company, month) in &due {
                renew_subscription(tx, company, *month).map_err(failed)?;
                tx.prepare_cached(
                    "INSERT INTO subscription_renewals (company_id, renewed_at) VALUES (?1, ?2)
                         ON CONFLICT (company_id) DO UPDATE SET renewed_at = excluded.renewed_at",
                )?
                .execute(rusqlite::params![company, month])?;
            }
            report.count("subscription.renewed", due.len() as u64);
        })
    }
}
