//! Time passing: what the sandbox does as its clock moves.
//!
//! Things happen on their own in the sandbox: a promotion's window opens and closes, a key expires,
//! a screen stops heartbeating, an invoice falls overdue, the simulated fleet plays ads, a webhook
//! retry falls due. Each kind is a [`Source`]; the [`Timeline`] runs them in time order up to an
//! instant. On the system clock a background tick runs it up to "now" every
//! `sandbox.tick_millis`; `POST /_sandbox/clock/advance` (on either clock) runs it up to the new
//! instant, moving the clock to each due instant in turn, so advancing by a day fires exactly what a
//! day of real time would, in the same order, and every event carries the instant it happened at.
//!
//! The loop, to the target instant `until`:
//! 1. ask every source for its earliest due instant at or before `until`; none: stop;
//! 2. move the clock to that instant `at` (never back; a running clock by growing its offset);
//! 3. let every source catch up its continuous activity to `at` (the fleet's heartbeats and plays,
//!    written in bulk rather than one step per heartbeat);
//! 4. run every source that has something due at or before `at`; repeat.
//!
//! Then every source catches up to `until`, and the clock shows `until` (a running one runs on). Sources live with the
//! areas they change (routes, mcp, webhooks) and are registered once, by `app::App::build`.
//!
//! The caller (`routes::time_driven::run_each`) runs it all inside one write scope
//! (`Scoped::write_scope`), whose handle every source gets in its [`Env`] (and the step hook as its
//! argument): every source's writes join its open transaction, reads see the steps before, and a
//! failure rolls the run back to its start or to its last commit. It commits between two steps
//! once `sandbox.advance_slice_rows` new play rows wait or a request's write waits for the lock
//! (`Scoped::slice`), and before a webhook leaves the process: a reader meanwhile sees the clock
//! at the step being run and the world as of the last slice (plays up to its step, the hour in
//! progress then included); the run writes the same rows wherever its slices end.
//! What a source keeps in memory for the run (the fleet's held heartbeats and plays, its
//! playables) is state of that transaction (`Scoped::transaction_state`), written at its commit and
//! dropped with it, never state of the thread.

use crate::config::Settings;
use crate::db::{DbError, Scoped};
use crate::time::Clock;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// What a source may use: the database as the run sees it (inside its write scope, see
/// `routes::time_driven::run_each`) and the settings. The clock is the database's (`Db::clock`,
/// what its writes read through `Tx::now`), set to the instant being run.
pub struct Env<'a> {
    pub db: Scoped<'a>,
    pub settings: &'a Settings,
    /// New play rows after which the run commits a slice between two steps, and whether it does
    /// when a request's write waits (`Scoped::slice`); 0: never (the tick's short runs).
    pub slice_rows: usize,
}

/// One kind of thing that happens as time passes.
pub trait Source: Send + Sync {
    /// A short name, for logs and errors.
    fn name(&self) -> &'static str;

    /// Brings continuous activity up to `at` (called before anything due at `at` runs). Most
    /// sources have none.
    fn catch_up(&self, _env: &Env<'_>, _at: i64, _report: &mut Report) -> Result<(), DbError> {
        Ok(())
    }

    /// Brings the stored "last reported" state in line with the clock at `at` WITHOUT recording
    /// anything: run at every start (fixtures just loaded, a database just migrated, or what fell
    /// due while the sandbox was stopped) and after a reset, so a sandbox starts consistent and
    /// fires nothing at start-up. Most sources need none.
    fn settle(&self, _env: &Env<'_>, _at: i64) -> Result<(), DbError> {
        Ok(())
    }

    /// The earliest instant at which something of this source is due, if anything is due at or
    /// before `until`. It may be in the past (something overdue); it must stop being reported once
    /// [`Source::run_due`] has run it.
    fn next_due(&self, env: &Env<'_>, until: i64) -> Result<Option<i64>, DbError>;

    /// Runs everything of this source due at or before `at`, recording a domain event for each
    /// transition and counting it in `report`.
    fn run_due(&self, env: &Env<'_>, at: i64, report: &mut Report) -> Result<(), DbError>;
}

/// What happened while the clock moved: transitions counted by the sources, and the domain events
/// recorded meanwhile (by type, whoever recorded them).
#[derive(Debug, Default, Serialize)]
pub struct Report {
    /// Due instants the timeline stopped at.
    pub steps: u64,
    pub transitions: BTreeMap<String, u64>,
    pub events: BTreeMap<String, u64>,
}

impl Report {
    pub fn count(&mut self, transition: &str, n: u64) {
        if n > 0 {
            *self.transitions.entry(transition.to_string()).or_default() += n;
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    #[error(transparent)]
    Db(#[from] DbError),
    /// A source kept reporting something due after running it: a bug, stopped rather than looped.
    #[error("the timeline did not settle: {0} steps without reaching the target instant")]
    Runaway(u64),
    /// The caller's step hook stopped the run (it keeps its own reason).
    #[error("stopped at a step")]
    Stopped,
}

/// Called after each step of a run (and at its end) with the run's database (inside its write
/// scope) and the step's instant; an error stops the run there.
pub type StepHook<'a> = &'a mut dyn FnMut(Scoped<'_>, i64) -> Result<(), TimelineError>;

/// Due instants one run may stop at before giving up (a source that never settles).
const MAX_STEPS: u64 = 100_000;

/// The registered sources, run one at a time.
pub struct Timeline {
    sources: Vec<Box<dyn Source>>,
    /// One run at a time: the tick and an advance (or two advances) never interleave.
    running: Mutex<()>,
}

impl Timeline {
    pub fn new(sources: Vec<Box<dyn Source>>) -> Timeline {
        Timeline {
            sources,
            running: Mutex::new(()),
        }
    }

    /// Runs `f` while no run of the timeline is under way (the tick's or an advance's), and none
    /// starts: a snapshot restore replaces the world under it.
    pub fn exclusive<R>(&self, f: impl FnOnce() -> R) -> R {
        let _running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        f()
    }

    /// Settles every source at `at` (see [`Source::settle`]): nothing is recorded.
    pub fn settle(&self, env: &Env<'_>, at: i64) -> Result<(), DbError> {
        let _running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        for source in &self.sources {
            source.settle(env, at)?;
        }
        Ok(())
    }

    /// Runs everything due up to `until`, in time order, moving the clock there (a frozen one jumps,
    /// a running one grows its offset; see `Clock::set`).
    /// `clock` is the database's (`env.db`).
    pub fn run_until(
        &self,
        env: &Env<'_>,
        clock: &Clock,
        until: i64,
    ) -> Result<Report, TimelineError> {
        self.run_until_each(env, clock, until, &mut |_, _| Ok(()))
    }

    /// [`Timeline::run_until`], calling `after_step` once everything due at a step has run, and
    /// once at the end (the sandbox drains the webhook outbox there).
    pub fn run_until_each(
        &self,
        env: &Env<'_>,
        clock: &Clock,
        until: i64,
        after_step: StepHook<'_>,
    ) -> Result<Report, TimelineError> {
        // A poisoned lock only means an earlier run panicked; the database is the state, not the lock.
        let _running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let events_before = max_event_rowid(env.db)?;
        let mut report = Report::default();
        loop {
            let mut next: Option<i64> = None;
            for source in &self.sources {
                if let Some(at) = source.next_due(env, until)? {
                    next = Some(next.map_or(at, |n| n.min(at)));
                }
            }
            let Some(due) = next else { break };
            report.steps += 1;
            if report.steps > MAX_STEPS {
                return Err(TimelineError::Runaway(MAX_STEPS));
            }
            // Something overdue runs now: the clock never moves back.
            let at = due.max(clock.now());
            let _ = clock.set(at);
            for source in &self.sources {
                source.catch_up(env, at, &mut report)?;
            }
            for source in &self.sources {
                if source.next_due(env, at)?.is_some() {
                    source.run_due(env, at, &mut report)?;
                }
            }
            after_step(env.db, at)?;
            // Between two steps the run may commit what it wrote so far and let waiting writers
            // in (`Scoped::slice`): a request's write waits for a slice, not for the whole run.
            // The rows written do not depend on where the slices end.
            env.db.slice(env.slice_rows)?;
        }
        let end = until.max(clock.now());
        let _ = clock.set(end);
        for source in &self.sources {
            source.catch_up(env, end, &mut report)?;
        }
        after_step(env.db, end)?;
        report.events = events_since(env.db, events_before)?;
        Ok(report)
    }
}

fn max_event_rowid(db: Scoped<'_>) -> Result<i64, DbError> {
    let conn = db.conn()?;
    let mut stmt = conn.prepare_cached("SELECT coalesce(max(rowid), 0) FROM events")?;
    Ok(stmt.query_row([], |r| r.get(0))?)
}

fn events_since(db: Scoped<'_>, rowid: i64) -> Result<BTreeMap<String, u64>, DbError> {
    let conn = db.conn()?;
    let mut stmt =
        conn.prepare_cached("SELECT type, count(*) FROM events WHERE rowid > ?1 GROUP BY type")?;
    let rows = stmt.query_map([rowid], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
    })?;
    let mut out = BTreeMap::new();
    for row in rows {
        let (t, n) = row?;
        out.insert(t, n.max(0) as u64);
    }
    Ok(out)
}

/// A source's failure that is not SQLite's own (a payload that would not build), as a [`DbError`].
pub fn failed(what: impl std::fmt::Display) -> DbError {
    DbError::Sqlite(rusqlite::Error::ToSqlConversionFailure(Box::new(
        std::io::Error::other(what.to_string()),
    )))
}
