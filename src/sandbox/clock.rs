//! `GET /_sandbox/clock` and `POST /_sandbox/clock/advance`: read the clock, and move a frozen one
//! forward, running everything that falls due on the way ([`crate::timeline`]).

use crate::auth::Action;
use crate::http::router::Route;
use crate::http::{ApiError, App, Ctx, Response};
use crate::routes::time_driven::run;
use crate::time::{rfc3339, ClockError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The longest one advance may move the clock (a year): the work an advance does grows with the
/// span, so one request cannot ask for a century of it.
pub const MAX_ADVANCE_SECS: i64 = 366 * 86_400;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get(
            "/_sandbox/clock",
            "getSandboxClock",
            Action::Sandbox,
            get_clock,
        )
        .tag("sandbox")
        .summary("The sandbox clock: the instant every part of the service reads, and its mode.")
        .describe("The instant the whole sandbox believes it is (every timestamp, derived status and due job reads it), whether it follows the system time or is frozen, and the instant the demo fixtures are anchored to. Read it before comparing timestamps in a test.")
        .ok("SandboxClock"),
        Route::post(
            "/_sandbox/clock/advance",
            "advanceSandboxClock",
            Action::Sandbox,
            advance,
        )
        .tag("sandbox")
        .summary("Move a frozen clock forward, running in time order everything that falls due.")
        .describe("Moves a frozen clock forward by `seconds` or to `to`, stopping at each due instant on the way so that what falls due (devices going offline, scheduled promotions, deliveries) happens in time order, as it would have in real time. Answers what moved and how many transitions and events it produced. A clock that follows the system time cannot be moved (409).")
        .body("SandboxClockAdvance")
        .ok("SandboxClockAdvanced")
        .not_idempotent()
        .blocking(),
    ]
}

#[derive(Serialize)]
struct ClockView {
    object: &'static str,
    now: String,
    mode: &'static str,
    started_at: String,
}

fn view(app: &App) -> ClockView {
    ClockView {
        object: "sandbox_clock",
        now: rfc3339(app.clock.now()),
        mode: app.clock.mode().as_str(),
        started_at: rfc3339(app.clock.started_at()),
    }
}

fn get_clock(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    Ok(Response::ok(&view(ctx.app)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Advance {
    seconds: Option<i64>,
    to: Option<String>,
}

#[derive(Serialize)]
struct Advanced {
    object: &'static str,
    from: String,
    to: String,
    now: String,
    mode: &'static str,
    /// Due instants the clock stopped at on the way.
    steps: u64,
    transitions: BTreeMap<String, u64>,
    events: BTreeMap<String, u64>,
}

fn advance(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: Advance = ctx.json()?;
    let app = ctx.app;
    let from = app.clock.now();
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
    if let Err(ClockError::NotFrozen) = app.clock.set(from) {
        return Err(ApiError::ConflictCode {
            code: "clock_not_frozen",
            detail: "The sandbox follows the system clock, which cannot be moved. Start it frozen (`--clock 2026-03-02T09:00:00Z`, `sandbox.clock` or SIGNAGE_CLOCK) to control time.".into(),
        });
    }
    let report = run(app, until)?;
    Ok(Response::ok(&Advanced {
        object: "sandbox_clock_advance",
        from: rfc3339(from),
        to: rfc3339(until),
        now: rfc3339(app.clock.now()),
        mode: app.clock.mode().as_str(),
        steps: report.steps,
        transitions: report.transitions,
        events: report.events,
    }))
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    let ts = json!({"type":"string","format":"date-time"});
    let counts = json!({"type":"object","additionalProperties":{"type":"integer","minimum":0}});
    vec![
        (
            "SandboxClock",
            json!({"type":"object","additionalProperties":false,
            "required":["object","now","mode","started_at"],
            "properties":{"object":{"const":"sandbox_clock"},"now":ts,
                "mode":{"type":"string","enum":["system","frozen"],"description":"`system` follows the system time; `frozen` moves only through `POST /_sandbox/clock/advance`."},
                "started_at":{"type":"string","format":"date-time","description":"The instant the sandbox started at: the demo fixtures are anchored to it."}}}),
        ),
        (
            "SandboxClockAdvance",
            json!({"type":"object","additionalProperties":false,
            "description":"Exactly one of `seconds` and `to`.",
            "properties":{"seconds":{"type":"integer","minimum":0,"maximum":MAX_ADVANCE_SECS,"description":"How far to move the clock."},
                "to":{"type":"string","format":"date-time","description":"The instant to move the clock to; not before its now."}}}),
        ),
        (
            "SandboxClockAdvanced",
            json!({"type":"object","additionalProperties":false,
            "required":["object","from","to","now","mode","steps","transitions","events"],
            "properties":{"object":{"const":"sandbox_clock_advance"},"from":ts,"to":ts,"now":ts,
                "mode":{"type":"string","enum":["system","frozen"]},
                "steps":{"type":"integer","minimum":0,"description":"Due instants the clock stopped at on the way."},
                "transitions":counts,"events":counts}}),
        ),
    ]
}
