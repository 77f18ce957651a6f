//! Retention: every table that grows with use has a bound by age and by rows per account, enforced
//! on the clock's tick and on every advance ([`super::time_driven::run`]).
//!
//! | table | by age | by rows |
//! |---|---|---|
//! | `events` | `max_age_days` (never one a pending delivery still needs) | `max_rows_per_account` per company |
//! | `webhook_deliveries` (+ attempts) | finished ones, `max_age_days` | finished ones, per company |
//! | `audit_log` | `max_age_days` | per account |
//! | `idempotency_keys` | `idempotency_hours` (never one in flight) | per credential |
//! | `playbacks` | rolled up after `playback_rollup_days` (deleted: `playback_days` holds their sums) | rolled up past the bound, per company |
//! | `playback_days` | `daily_totals_days` | one row per device, ad and day |
//! | `qr_scans` | moved into `qr_scan_counts` after `max_age_days` | `scans.detail_per_code` per code (at insert) |
//! | `qr_scan_counts` | `daily_totals_days` | one row per code, minute and agent class |
//!
//! Nothing is counted twice or lost from a total: scans are moved into their counters in the same
//! transaction that deletes them, and plays are added to their day's roll-up (`playback_days`) in
//! the transaction that writes them, so rolling them up is deleting them. Each batch is its own short write transaction of at
//! most `retention.batch_rows` rows, so requests interleave with pruning; on the system clock one
//! run stops after [`TICK_BUDGET`] and the next tick continues.

use crate::db::{Scoped, WriteIntent};
use crate::http::{ApiError, App};
use rusqlite::types::Value;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The wall time one tick may spend pruning; the rest waits for the next tick.
pub const TICK_BUDGET: Duration = Duration::from_millis(200);
/// On the system clock, the per-account row bounds are checked every this many ticks (each check
/// walks up to `max_rows_per_account` index entries per group).
const COUNT_CHECK_EVERY: u64 = 10;

/// How many runs this app has made (registered by `app::App::build`; absent: every run checks).
#[derive(Default)]
pub struct State {
    runs: AtomicU64,
    /// The last row-bound check removed rows or ran out of time: check again on the next tick
    /// instead of waiting [`COUNT_CHECK_EVERY`] ticks, so pruning keeps pace with a steady load.
    backlog: AtomicBool,
}

/// What one run removed or rolled up, per table.
#[derive(Debug, Default, Clone, Copy)]
pub struct Pruned {
    pub rows: u64,
    /// True when the run stopped at its time budget with work left.
    pub more: bool,
}

/// The longest pruning waits before a batch for writes waiting for the lock to take it.
const BATCH_YIELD: std::time::Duration = std::time::Duration::from_millis(5);

struct Run<'a> {
    app: &'a App,
    /// The database as the caller sees it (an advance's read scope, or none for the tick).
    db: Scoped<'a>,
    batch: i64,
    deadline: Option<Instant>,
    pruned: Pruned,
}

impl Run<'_> {
    fn out_of_time(&mut self) -> bool {
        let out = self.deadline.is_some_and(|d| Instant::now() >= d);
        self.pruned.more |= out;
        out
    }

    /// Runs `step` (one write transaction, returning the rows it handled) until it handles fewer
    /// than a batch or time is up.
    fn batches(
        &mut self,
        step: impl Fn(&rusqlite::Connection, i64) -> rusqlite::Result<usize>,
    ) -> Result<(), ApiError> {
        loop {
            if self.out_of_time() {
                return Ok(());
            }
            // After an advance, a write waiting for the lock goes in between two batches; else
            // the next batch's `BEGIN IMMEDIATE` won every race and the write waited for all of
            // them (70 ms after a 24 h advance of the 10x world). Briefly, and not on the tick:
            // a stream of writes held the tick's pruning, and the log's checkpoints, back
            // (`tenant_wal`).
            let db = self.db.db();
            if db.in_long_write() {
                db.yield_to_writers_for(BATCH_YIELD);
            }
            let batch = self.batch;
            let n = self.db.write(&WriteIntent::sandbox(), |tx| {
                step(tx, batch).map_err(crate::db::DbError::from)
            })?;
            self.pruned.rows += n as u64;
            if (n as i64) < batch {
                return Ok(());
            }
        }
    }

    /// Runs `sql` (`?1` a bound, `?2` the batch size, `?3` a group) in batches.
    fn delete(&mut self, sql: &str, bound: i64, group: Option<&str>) -> Result<(), ApiError> {
        self.delete_below(sql, Value::Integer(bound), group)
    }

    /// [`Run::delete`] with a bound of any SQL type (an id, an instant).
    fn delete_below(
        &mut self,
        sql: &str,
        bound: Value,
        group: Option<&str>,
    ) -> Result<(), ApiError> {
        self.batches(|tx, batch| {
            let group = group.map_or(Value::Null, |g| Value::Text(g.to_string()));
            let mut stmt = tx.prepare_cached(sql)?;
            // Statements without a group take two parameters only.
            let args = [bound.clone(), Value::Integer(batch), group];
            let n = stmt.parameter_count().min(args.len());
            stmt.execute(rusqlite::params_from_iter(&args[..n]))
        })
    }
}

/// Prunes every history table of `app` at `now` (an instant of its clock), through `db`, the
/// database as the caller sees it.
pub fn prune(app: &App, db: Scoped<'_>, now: i64) -> Result<Pruned, ApiError> {
    let s = &app.settings;
    let system = app.clock().mode() == crate::time::Mode::System;
    let state = app.extensions.get::<std::sync::Arc<State>>();
    let runs = state.map_or(0, |st| st.runs.fetch_add(1, Ordering::Relaxed));
    let backlog = state.is_some_and(|st| st.backlog.load(Ordering::Relaxed));
    let mut run = Run {
        app,
        db,
        batch: s.retention_batch_rows.min(i64::MAX as u64) as i64,
        deadline: system.then(|| Instant::now() + TICK_BUDGET),
        pruned: Pruned::default(),
    };
    let day = 86_400_i64;
    let age = |days: u64| now.saturating_sub((days as i64).saturating_mul(day));
    let old = age(s.retention_max_age_days);

    // By age: cheap, index-backed, every run.
    run.delete(
        "DELETE FROM idempotency_keys WHERE (actor, key) IN (SELECT actor, key FROM idempotency_keys
             WHERE created_at < ?1 AND status IS NOT NULL ORDER BY created_at LIMIT ?2)",
        now.saturating_sub((s.retention_idempotency_hours as i64).saturating_mul(3600)),
        None,
    )?;
    run.delete(
        "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries
             WHERE status <> 'pending' AND updated_at < ?1 LIMIT ?2)",
        old,
        None,
    )?;
    run.delete(
        "DELETE FROM events WHERE id IN (SELECT e.id FROM events e WHERE e.created_at < ?1
             AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id
                             AND d.status = 'pending')
             ORDER BY e.created_at LIMIT ?2)",
        old,
        None,
    )?;
    run.delete(
        "DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ?1 ORDER BY at LIMIT ?2)",
        old,
        None,
    )?;
    // Plays company by company, each an index range of playbacks_by_company_started (the
    // table keeps no index by age alone: each one was a b-tree write for every play); then the
    // company's roll-up rows past the age limit, a range of its key (company, day, ...).
    let rollup = age(s.retention_playback_rollup_days);
    let totals = age(s.retention_daily_totals_days);
    let companies = ids(&*db.conn()?, "SELECT id FROM companies")?;
    for company in companies {
        roll_up_playbacks(&mut run, rollup, &company)?;
        run.delete(
            "DELETE FROM playback_days WHERE (company_id, day, device_id, ad_id) IN
                 (SELECT company_id, day, device_id, ad_id FROM playback_days
                  WHERE company_id = ?3 AND day < ?1 / 86400 LIMIT ?2)",
            totals,
            Some(&company),
        )?;
    }
    count_old_scans(&mut run, old)?;
    run.delete(
        "DELETE FROM qr_scan_counts WHERE (qr_code_id, minute, agent_class) IN
             (SELECT qr_code_id, minute, agent_class FROM qr_scan_counts WHERE minute < ?1 / 60 LIMIT ?2)",
        totals,
        None,
    )?;

    // By rows per account: every run on a frozen clock (each advance); every few ticks otherwise,
    // or every tick while the last check left work or found some (a steady write load).
    if !system || backlog || runs.is_multiple_of(COUNT_CHECK_EVERY) {
        let before = run.pruned.rows;
        bound_rows(&mut run)?;
        if let Some(st) = state {
            let busy = run.pruned.more || run.pruned.rows > before;
            st.backlog.store(busy, Ordering::Relaxed);
        }
    }
    Ok(run.pruned)
}

/// The ids `sql` selects (one text column): the owners whose rows retention bounds.
fn ids(conn: &rusqlite::Connection, sql: &str) -> Result<Vec<String>, ApiError> {
    let rows = conn
        .prepare_cached(sql)?
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Rolls up the plays of `company` that started before `bound`, oldest first: deletes them, their
/// sums being in their days' roll-up rows (`playback_days`) since they were written. A range of
/// playbacks_by_company_started, in its order (a tie in `started_at` goes by rowid, as the index
/// holds it, so no batch sorts), picked by the rowid the index holds beside each entry: each
/// picked row is one seek of the table.
fn roll_up_playbacks(run: &mut Run<'_>, bound: i64, company: &str) -> Result<(), ApiError> {
    run.delete(
        "DELETE FROM playbacks WHERE rowid IN (SELECT rowid FROM playbacks
             WHERE company_id = ?3 AND started_at < ?1 ORDER BY started_at, rowid LIMIT ?2)",
        bound,
        Some(company),
    )
}

/// Moves scan detail older than `old` into the per-minute counters.
fn count_old_scans(run: &mut Run<'_>, old: i64) -> Result<(), ApiError> {
    let pick = "SELECT id FROM qr_scans WHERE scanned_at < ?1 ORDER BY scanned_at LIMIT ?2";
    let upsert = format!(
        "INSERT INTO qr_scan_counts (qr_code_id, minute, agent_class, scans)
         SELECT qr_code_id, scanned_at / 60, agent_class, count(*) FROM qr_scans
         WHERE id IN ({pick}) GROUP BY qr_code_id, scanned_at / 60, agent_class
         ON CONFLICT (qr_code_id, minute, agent_class) DO UPDATE SET scans = scans + excluded.scans"
    );
    let delete = format!("DELETE FROM qr_scans WHERE id IN ({pick})");
    run.batches(|tx, batch| {
        tx.prepare_cached(&upsert)?
            .execute(rusqlite::params![old, batch])?;
        tx.prepare_cached(&delete)?
            .execute(rusqlite::params![old, batch])
    })
}

/// Keeps at most `max_rows_per_account` rows of each history table per owner, the oldest going
/// first (plays are rolled up, not deleted). A table of at most that many rows in all is skipped.
fn bound_rows(run: &mut Run<'_>) -> Result<(), ApiError> {
    let max = run
        .app
        .settings
        .retention_max_rows_per_account
        .min(i64::MAX as u64) as i64;
    // No group holds more rows than its table, so a table of at most `max` rows has none to cut:
    // its count walks the pages of its smallest index, where the groups' cutoffs walk every row.
    let over = |table: &str| -> Result<bool, ApiError> {
        let conn = run.db.conn()?;
        let rows: i64 = conn
            .prepare_cached(&format!("SELECT count(*) FROM {table}"))?
            .query_row([], |r| r.get(0))?;
        Ok(rows > max)
    };
    let events = over("events")?;
    let deliveries = over("webhook_deliveries")?;
    let playbacks = over("playbacks")?;
    let audit = over("audit_log")?;
    let idempotency = over("idempotency_keys")?;
    if !(events || deliveries || playbacks || audit || idempotency) {
        return Ok(());
    }
    let (companies, accounts, actors) = {
        let conn = run.db.conn()?;
        (
            ids(&conn, "SELECT id FROM companies")?,
            ids(&conn, "SELECT id FROM accounts")?,
            ids(
                &conn,
                "SELECT id FROM api_keys UNION ALL SELECT id FROM users",
            )?,
        )
    };
    // The newest `max` rows of a group stay: everything before the `max`-th newest goes. The
    // cutoff (the `max`-th newest) is found once per group and run, one index walk; the batches
    // then delete below it, each an index range from the oldest row. Where the order is by an
    // instant in seconds, the row id (or key) breaks ties, so a burst within one second is cut exactly.
    for company in companies
        .iter()
        .filter(|_| events || deliveries || playbacks)
    {
        if events {
            keep_newest(
                run,
                "SELECT id FROM events WHERE company_id = ?2 ORDER BY id DESC LIMIT 1 OFFSET ?1 - 1",
                "DELETE FROM events WHERE id IN (SELECT e.id FROM events e WHERE e.company_id = ?3
                     AND e.id < ?1
                     AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id
                                     AND d.status = 'pending')
                     ORDER BY e.id LIMIT ?2)",
                max,
                Some(company),
            )?;
        }
        if deliveries {
            keep_newest(
                run,
                "SELECT rowid FROM webhook_deliveries WHERE company_id = ?2 AND status <> 'pending'
             ORDER BY updated_at DESC, rowid DESC LIMIT 1 OFFSET ?1 - 1",
                "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries
                     WHERE company_id = ?3 AND status <> 'pending' AND (updated_at, rowid) <
                         (SELECT updated_at, rowid FROM webhook_deliveries WHERE rowid = ?1)
                     ORDER BY updated_at, rowid LIMIT ?2)",
                max,
                Some(company),
            )?;
        }
        if !playbacks {
            continue;
        }
        if let Some(Value::Integer(cutoff)) = cutoff(
            run,
            "SELECT started_at FROM playbacks WHERE company_id = ?2
             ORDER BY started_at DESC LIMIT 1 OFFSET ?1 - 1",
            max,
            Some(company),
        )? {
            roll_up_playbacks(run, cutoff, company)?;
        }
    }
    // Events of no company (account-level) are one group.
    if events {
        keep_newest(
            run,
            "SELECT id FROM events WHERE company_id IS NULL ORDER BY id DESC LIMIT 1 OFFSET ?1 - 1",
            "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE company_id IS NULL
                 AND id < ?1 ORDER BY id LIMIT ?2)",
            max,
            None,
        )?;
    }
    for account in accounts.iter().filter(|_| audit) {
        keep_newest(
            run,
            "SELECT id FROM audit_log WHERE account_id = ?2 ORDER BY id DESC LIMIT 1 OFFSET ?1 - 1",
            "DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE account_id = ?3
                     AND id < ?1 ORDER BY id LIMIT ?2)",
            max,
            Some(account),
        )?;
    }
    // Entries of no account (unknown keys) are one group.
    if audit {
        keep_newest(
            run,
            "SELECT id FROM audit_log WHERE account_id IS NULL ORDER BY id DESC LIMIT 1 OFFSET ?1 - 1",
            "DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE account_id IS NULL
                 AND id < ?1 ORDER BY id LIMIT ?2)",
            max,
            None,
        )?;
    }
    for actor in actors.iter().filter(|_| idempotency) {
        keep_newest(
            run,
            // A table without row ids: its key (the index's suffix) breaks the ties.
            "SELECT key FROM idempotency_keys WHERE actor = ?2
             ORDER BY created_at DESC, key DESC LIMIT 1 OFFSET ?1 - 1",
            "DELETE FROM idempotency_keys WHERE (actor, key) IN (SELECT actor, key
                     FROM idempotency_keys WHERE actor = ?3 AND status IS NOT NULL
                     AND (created_at, key) < (SELECT created_at, key FROM idempotency_keys
                                              WHERE actor = ?3 AND key = ?1)
                     ORDER BY created_at, key LIMIT ?2)",
            max,
            Some(actor),
        )?;
    }
    Ok(())
}

/// Keeps the newest `max` rows of a group: finds the cutoff (`find`: `?1` the bound, `?2` the
/// group) once, then deletes below it in batches (`delete`: `?1` the cutoff, `?2` the batch size,
/// `?3` the group).
fn keep_newest(
    run: &mut Run<'_>,
    find: &str,
    delete: &str,
    max: i64,
    group: Option<&str>,
) -> Result<(), ApiError> {
    match cutoff(run, find, max, group)? {
        Some(cutoff) => run.delete_below(delete, cutoff, group),
        None => Ok(()),
    }
}

/// The `max`-th newest key of a group (`sql`: `?1` the bound, `?2` the group), or `None` when the
/// group holds fewer rows (nothing to prune) or the run is out of time.
fn cutoff(
    run: &mut Run<'_>,
    sql: &str,
    max: i64,
    group: Option<&str>,
) -> Result<Option<Value>, ApiError> {
    if run.out_of_time() {
        return Ok(None);
    }
    let conn = run.db.conn()?;
    let mut stmt = conn.prepare_cached(sql)?;
    let args = [
        Value::Integer(max),
        group.map_or(Value::Null, |g| Value::Text(g.to_string())),
    ];
    let n = stmt.parameter_count().min(args.len());
    let found = stmt
        .query_row(rusqlite::params_from_iter(&args[..n]), |r| {
            r.get::<_, Value>(0)
        })
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(e),
        })?;
    Ok(found)
}
