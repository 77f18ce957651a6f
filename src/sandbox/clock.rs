//! `GET /_sandbox/clock` and `POST /_sandbox/clock/advance`: read the clock, and move it forward,
//! running everything that falls due on the way ([`crate::timeline`]). A frozen clock jumps to the
//! new instant and stays; a running (system) one grows its offset and keeps running from there.
//! What falls due on the way is the sandbox's doing: its events say `via: sandbox`, not the key
//! that asked for the advance.

use crate::auth::Action;
use crate::http::router::Route;
use crate::http::{ApiError, App, Ctx, Response};
use crate::routes::time_driven::{run, run_each};
use crate::time::rfc3339;
use crate::timeline::{Report, TimelineError};
use crate::validate::OneOf;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The longest one advance may move the clock (a year): the work an advance does grows with the
/// span, so one request cannot ask for a century of it.
pub const MAX_ADVANCE_SECS: i64 = 366 * 86_400;

/// The clock's modes, as [`crate::time::Mode::as_str`] writes them.
const MODE: OneOf = OneOf(&["system", "frozen"]);

pub fn routes() -> Vec<Route> {
    vec![
        Route::get(
            "/_sandbox/clock",
            "getSandboxClock",
            Action::Sandbox,
            get_clock,
        )
        .no_tool("the sandbox operator's control of the instance, not account data")
        .tag("sandbox")
        .summary("The sandbox clock: the instant every part of the service reads, its mode and its offset.")
        .describe("The instant the whole sandbox believes it is (every timestamp, derived status and due job reads it), whether it runs (the system time plus `offset_seconds`) or is frozen, and the instant the demo fixtures are anchored to. Read it before comparing timestamps in a test.")
        .ok("SandboxClock"),
        Route::post(
            "/_sandbox/clock/advance",
            "advanceSandboxClock",
            Action::Sandbox,
            advance,
        )
        .tag("sandbox")
        .summary("Move the clock forward, running in time order everything that falls due.")
        .describe("Moves the clock forward by `seconds` or to `to`, stopping at each due instant on the way so that what falls due (devices going offline, scheduled promotions, deliveries) happens in time order, as it would have in real time; the events it produces say `via: sandbox`. A frozen clock stays at the new instant; a running (`system`) clock adds the jump to its `offset_seconds` and keeps running from there. Never backwards. Answers what moved and how many transitions and events it produced.")
        .body("SandboxClockAdvance")
        .ok("SandboxClockAdvanced")
        .not_idempotent()
        .blocking(),
    ]
}

/// The sandbox clock: the instant every part of the service reads, and its mode.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SandboxClock")]
struct ClockView {
    #[schemars(extend("const" = "sandbox_clock"))]
    object: &'static str,
    #[schemars(extend("format" = "date-time"))]
    now: String,
    /// `system` runs: the system time plus `offset_seconds`; `frozen` moves only through `POST
    /// /_sandbox/clock/advance`.
    #[schemars(transform = &MODE)]
    mode: &'static str,
    /// How far advances have moved a running clock ahead of the system time (it keeps running
    /// from there); 0 when frozen.
    #[schemars(range(min = 0))]
    offset_seconds: i64,
    /// The instant the sandbox started at: the demo fixtures are anchored to it.
    #[schemars(extend("format" = "date-time"))]
    started_at: String,
}

fn view(app: &App) -> ClockView {
    ClockView {
        object: "sandbox_clock",
        now: rfc3339(app.clock().now()),
        mode: app.clock().mode().as_str(),
        offset_seconds: app.clock().offset_millis().div_euclid(1000),
        started_at: rfc3339(app.clock().started_at()),
    }
}

fn get_clock(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    Ok(Response::ok(&view(ctx.app)))
}

/// Exactly one of `seconds` and `to`.
// `default` on `seconds` and `to` only tells the schema they are optional: serde reads an absent
// `Option` as `None` either way.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SandboxClockAdvance")]
struct Advance {
    /// How far to move the clock.
    #[serde(default)]
    #[schemars(with = "i64", range(min = 0, max = MAX_ADVANCE_SECS))]
    seconds: Option<i64>,
    /// The instant to move the clock to; not before its now.
    #[serde(default)]
    #[schemars(with = "String", extend("format" = "date-time"))]
    to: Option<String>,
    /// Before moving, at every stop on the way and at the end, send every webhook delivery due
    /// and wait until each outcome is recorded, as `POST /_sandbox/webhooks/drain` does; default
    /// false.
    // Drains the webhook outbox at every stop ([`super::outbox`]).
    #[serde(default)]
    drain: bool,
    /// With `drain`: how long the drains of this advance may wait in all (default 10000); when it
    /// passes the answer is 408 `drain_timeout` with the clock where it stopped.
    #[serde(default, deserialize_with = "crate::routes::present")]
    #[schemars(with = "u64", range(min = 1, max = super::outbox::MAX_TIMEOUT_MS))]
    drain_timeout_ms: Option<u64>,
}

/// What an advance of the clock did: from where to where, the due instants it stopped at, and
/// what happened on the way.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SandboxClockAdvanced")]
struct Advanced {
    #[schemars(extend("const" = "sandbox_clock_advance"))]
    object: &'static str,
    #[schemars(extend("format" = "date-time"))]
    from: String,
    #[schemars(extend("format" = "date-time"))]
    to: String,
    #[schemars(extend("format" = "date-time"))]
    now: String,
    #[schemars(transform = &MODE)]
    mode: &'static str,
    /// A running clock's offset after the advance; 0 when frozen.
    #[schemars(range(min = 0))]
    offset_seconds: i64,
    /// Due instants the clock stopped at on the way.
    steps: u64,
    transitions: BTreeMap<String, u64>,
    events: BTreeMap<String, u64>,
}

fn advance(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: Advance = ctx.json()?;
    let app = ctx.app;
    let from = app.clock().now();
    let until = match (input.seconds, input.to.as_deref()) {
        (Some(secs), None) => {
            if !(0..=MAX_ADVANCE_SECS).contains(&secs) {
                return Err(ApiError::invalid(
                    "/seconds",
                    "out_of_range",
                    format!("must be between 0 and {MAX_ADVANCE_SECS} (one year); the clock never moves back"),
                ));
            }
            from + secs
        }
        (None, Some(to)) => {
            let Some(at) = crate::time::parse_rfc3339(to) else {
                return Err(ApiError::invalid(
                    "/to",
                    "invalid_format",
                    "must be an RFC 3339 instant such as 2026-03-03T09:00:00Z",
                ));
            };
            if at < from {
                return Err(ApiError::ConflictCode {
                    code: "clock_backwards",
                    detail: format!(
                        "The clock shows {} and never moves back; `to` ({}) is earlier. Restore a snapshot to return to an earlier state.",
                        rfc3339(from),
                        rfc3339(at)
                    ),
                });
            }
            if at - from > MAX_ADVANCE_SECS {
                return Err(ApiError::invalid(
                    "/to",
                    "out_of_range",
                    format!("must be at most {MAX_ADVANCE_SECS} seconds (one year) after the clock's now; advance in several steps"),
                ));
            }
            at
        }
        _ => {
            return Err(ApiError::invalid(
                "",
                "one_of_required",
                "give exactly one of `seconds` (how far to move) or `to` (an RFC 3339 instant)",
            ))
        }
    };
    // A running clock moves by exactly the jump asked, however long the run takes. What falls due
    // on the way is the sandbox's doing, not the caller's: the timeline and the webhook worker
    // write as the sandbox (`WriteIntent::sandbox`).
    let offset_before = app.clock().offset_millis();
    let advance = || -> Result<Report, ApiError> {
        if !input.drain {
            // What is already due (the first attempts of events just written, on the wire or not
            // yet) is settled before the clock moves, so the advance runs the same retries at the
            // same instants however quickly it follows the write. Bounded by one attempt's time;
            // past it the advance goes on (a receiver that hangs delays it, never stops it).
            let wait = std::time::Duration::from_millis(app.settings.webhook_timeout_millis + 1000);
            if let Err(e) =
                super::outbox::drain_at(app, ctx.db, from, std::time::Instant::now() + wait)
            {
                tracing::warn!(error = %e, "advance: deliveries due before it still unsettled");
            }
            // Every attempt that falls due on the way is the run's to send (and count), never
            // the worker's by a race with its commits.
            let _left = super::outbox::outbox(app)?.leave_first_attempts();
            return run(app, ctx.db, until);
        }
        let deadline = super::outbox::deadline(input.drain_timeout_ms, "/drain_timeout_ms")?;
        // First what is due before the clock moves (an attempt on the wire is recorded, and its
        // retry scheduled, at the instant it was made), then at every stop and at the end.
        super::outbox::drain_at(app, ctx.db, from, deadline)?;
        let mut stopped: Option<ApiError> = None;
        // Each stop drains in the run's write scope (its commit point lets the worker record).
        let ran = run_each(app, ctx.db, until, &mut |db, at| {
            super::outbox::drain_at(app, db, at, deadline).map_err(|e| {
                stopped = Some(e);
                TimelineError::Stopped
            })?;
            Ok(())
        });
        match (ran, stopped) {
            (_, Some(e)) => Err(e),
            (ran, None) => ran,
        }
    };
    let report = advance()?;
    app.clock()
        .ensure_offset(offset_before.saturating_add((until - from).saturating_mul(1000)));
    note_clock(app);
    Ok(Response::ok(&Advanced {
        object: "sandbox_clock_advance",
        from: rfc3339(from),
        to: rfc3339(until),
        now: rfc3339(app.clock().now()),
        mode: app.clock().mode().as_str(),
        offset_seconds: app.clock().offset_millis().div_euclid(1000),
        steps: report.steps,
        transitions: report.transitions,
        events: report.events,
    }))
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::{named_body, named_response};
    vec![
        named_response::<ClockView>(),
        named_body::<Advance>(),
        named_response::<Advanced>(),
    ]
}

/// Notes the sandbox clock in the journal's file (at start-up, and whenever an advance or a
/// restore moves it), so that `signage readiness`, which reads the file without a server, reports
/// the sandbox's now rather than the system's.
pub fn note_clock(app: &crate::http::App) {
    let Some(journal) = app
        .extensions
        .get::<std::sync::Arc<super::journal::Journal>>()
    else {
        return;
    };
    let clock = app.clock();
    let frozen = (clock.mode() == crate::time::Mode::Frozen).then(|| clock.now_millis());
    let offset = clock.offset_millis();
    if let Err(e) = journal.write(|conn| super::journal::store::note_clock(conn, frozen, offset)) {
        tracing::warn!(error = %e, "the sandbox clock could not be noted in the request journal");
    }
}

#[cfg(test)]
mod tests {
    use crate::time::Mode;

    #[test]
    fn the_documented_modes_are_the_clocks() {
        for mode in [Mode::System, Mode::Frozen] {
            assert!(super::MODE.0.contains(&mode.as_str()), "{mode:?}");
        }
        assert_eq!(super::MODE.0.len(), 2);
    }
}
