//! Invoices falling overdue as time passes ([`crate::timeline::Source`]): an `open` invoice whose
//! `due_at` passes becomes `overdue` (stored: it is the invoice's status, not derived on read), and
//! `invoice.overdue` is recorded with the invoice, in the same transaction, once.

use crate::db::DbError;
use crate::db::WriteIntent;
use crate::timeline::{failed, Env, Report, Source};

pub struct InvoiceDue;

pub const OVERDUE: &str = "invoice.overdue";

impl Source for InvoiceDue {
    fn name(&self) -> &'static str {
        "invoice_due"
    }

    fn settle(&self, env: &Env<'_>, at: i64) -> Result<(), DbError> {
        env.db.write(&WriteIntent::sandbox(), |tx| {
            tx.execute(
                "UPDATE invoices SET status = 'overdue' WHERE status = 'open' AND due_at <= ?1",
                [at],
            )?;
            Ok(())
        })
    }

    fn next_due(&self, env: &Env<'_>, until: i64) -> Result<Option<i64>, DbError> {
        let conn = env.db.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT min(due_at) FROM invoices WHERE status = 'open' AND due_at <= ?1",
        )?;
        Ok(stmt.query_row([until], |r| r.get(0))?)
    }

    fn run_due(&self, env: &Env<'_>, at: i64, report: &mut Report) -> Result<(), DbError> {
        env.db.write(&WriteIntent::sandbox(), |tx| {
            let due: Vec<(String, String)> = tx
                .prepare_cached(
                    "SELECT id, company_id FROM invoices WHERE status = 'open' AND due_at <= ?1
                     ORDER BY due_at, id",
                )?
                .query_map([at], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            for (id, company) in &due {
                tx.prepare_cached("UPDATE invoices SET status = 'overdue' WHERE id = ?1")?
                    .execute([id])?;
                let invoice = super::billing::load_invoice(tx, id).map_err(failed)?;
                crate::events::record(tx, company, OVERDUE, "invoice", id, &invoice)?;
            }
            report.count(OVERDUE, due.len() as u64);
            Ok(())
        })
    }
}
