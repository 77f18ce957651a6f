//! Runs the platform's time-driven work (the [`crate::timeline`] and its sources: promotion
//! windows, key expiry, device presence, invoices due, webhook retries, and whatever else the app
//! registered at start-up) up to an instant. The system clock's tick calls it, so does an account
//! reset (to settle reloaded rows) and the sandbox's `POST /_sandbox/clock/advance`: time passing
//! is the platform's, moving the clock at will is the sandbox's.

use crate::db::Scoped;
use crate::http::{ApiError, App};
use crate::timeline::{Env, Report, StepHook, Timeline, TimelineError};
use std::sync::Arc;

/// The app's timeline (registered by `app::App::build`).
pub fn timeline(app: &App) -> Result<&Arc<Timeline>, ApiError> {
    app.extensions
        .get::<Arc<Timeline>>()
        .ok_or_else(|| ApiError::Internal("the timeline is not registered".into()))
}

/// Runs the app's timeline up to `until` (on the app's clock, `App::clock`), then prunes history
/// past its bounds ([`super::retention`]) and keeps the write-ahead log bounded. `db` is the
/// database as the caller sees it (a request's read scope, or none for the tick).
pub fn run(app: &App, db: Scoped<'_>, until: i64) -> Result<Report, ApiError> {
    run_each(app, db, until, &mut |_, _| Ok(()))
}

/// [`run`] for the system clock's tick: a second's run in one transaction, never sliced (a run that
/// let waiting writers in at every step held the tick back under a steady stream of writes, and
/// with it the log's checkpoints, `tenant_wal`).
pub fn tick(app: &App, db: Scoped<'_>, until: i64) -> Result<Report, ApiError> {
    run_sliced(app, db, until, &mut |_, _| Ok(()), 0)
}

/// [`run`], calling `after_step` after each step ([`Timeline::run_until_each`]). A hook that
/// stops the run keeps its reason and answers for it; here that is a 500.
pub fn run_each(
    app: &App,
    db: Scoped<'_>,
    until: i64,
    after_step: StepHook<'_>,
) -> Result<Report, ApiError> {
    let slice_rows = usize::try_from(app.settings.sandbox_advance_slice_rows).unwrap_or(usize::MAX);
    run_sliced(app, db, until, after_step, slice_rows)
}

/// [`run_each`], committing a slice every `slice_rows` new play rows (0: one transaction).
fn run_sliced(
    app: &App,
    db: Scoped<'_>,
    until: i64,
    after_step: StepHook<'_>,
    slice_rows: usize,
) -> Result<Report, ApiError> {
    let timeline = timeline(app)?;
    // A sliced run, and retention after it, let waiting writers in: they retry every millisecond
    // meanwhile to take the lock as soon as it is free (`Db::long_write`).
    let _long = (slice_rows > 0).then(|| db.db().long_write());
    // One write scope for the whole run, committed at its end, in slices between steps
    // (`Scoped::slice`) and before any webhook attempt (`Scoped::committed`); a failure rolls the
    // run back to its start or last commit. Every source reads and writes in it through the
    // handle in its `Env`.
    let report = db.write_scope(|db| {
        let env = Env {
            db,
            settings: &app.settings,
            slice_rows,
        };
        timeline
            .run_until_each(&env, app.clock(), until, after_step)
            .map_err(|e| match e {
                TimelineError::Db(e) => ApiError::from(e),
                other => ApiError::Internal(other.to_string()),
            })
    })?;
    // Housekeeping never fails the run it follows: a batch that could not run now runs next time.
    if let Err(err) = super::retention::prune(app, db, app.clock().now()) {
        tracing::warn!(error = %err, "retention: pruning failed; retried on the next run");
    }
    db.bound_wal(app.settings.wal_limit_bytes);
    Ok(report)
}

/// Settles every timeline source at the clock's now: the stored "last reported" states of rows just
/// loaded from the fixtures follow the clock, and nothing is recorded (see `Source::settle`).
pub fn settle(app: &App, db: Scoped<'_>) -> Result<(), ApiError> {
    let env = Env {
        db,
        settings: &app.settings,
        slice_rows: 0,
    };
    Ok(timeline(app)?.settle(&env, app.clock().now())?)
}
