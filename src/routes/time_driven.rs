//! Runs the platform's time-driven work (the [`crate::timeline`] and its sources: promotion
//! windows, key expiry, device presence, invoices due, webhook retries, and whatever else the app
//! registered at start-up) up to an instant. The system clock's tick calls it, so does an account
//! reset (to settle reloaded rows) and the sandbox's `POST /_sandbox/clock/advance`: time passing
//! is the platform's, moving the clock at will is the sandbox's.

use crate::http::{ApiError, App};
use crate::timeline::{Env, Report, Timeline, TimelineError};
use std::sync::Arc;

/// The app's timeline (registered by `app::App::build`).
pub fn timeline(app: &App) -> Result<&Arc<Timeline>, ApiError> {
    app.extensions
        .get::<Arc<Timeline>>()
        .ok_or_else(|| ApiError::Internal("the timeline is not registered".into()))
}

/// Runs the app's timeline up to `until` (the caller is inside `App::within`).
pub fn run(app: &App, until: i64) -> Result<Report, ApiError> {
    let env = Env {
        db: &app.db,
        settings: &app.settings,
    };
    timeline(app)?
        .run_until(&env, &app.clock, until)
        .map_err(|e| match e {
            TimelineError::Db(e) => ApiError::from(e),
            other => ApiError::Internal(other.to_string()),
        })
}

/// Settles every timeline source at the clock's now: the stored "last reported" states of rows just
/// loaded from the fixtures follow the clock, and nothing is recorded (see `Source::settle`).
pub fn settle(app: &App) -> Result<(), ApiError> {
    let env = Env {
        db: &app.db,
        settings: &app.settings,
    };
    Ok(timeline(app)?.settle(&env, app.clock.now())?)
}
