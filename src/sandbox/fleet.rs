//! `POST /_sandbox/devices/{id}/simulate`: the operator scripts one screen of the simulated fleet,
//! giving it a behaviour profile or a one-off playback error ([`super::simulator`]).

use super::simulator::{self, SETTABLE};
use crate::auth::Action;
use crate::http::router::Route;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{DeviceId, TypedId};
use crate::routes::crud::Time;
use crate::validate::{Errors, OneOf};
use rusqlite::OptionalExtension;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const EVENTS: &[&str] = &["playback_error"];
const DEFAULT_MESSAGE: &str = "Simulated playback error";
/// What a simulated playback error's `code` may be (as [`code_ok`] checks it).
const CODE_PATTERN: &str = "^[0-9A-Za-z._-]{1,64}$";
/// The longest message of a simulated playback error.
const MAX_MESSAGE: usize = 500;

pub fn routes() -> Vec<Route> {
    vec![Route::post(
        "/_sandbox/devices/{id}/simulate",
        "simulateSandboxDevice",
        Action::Sandbox,
        simulate,
    )
         .describe("Script a screen of the simulated fleet: give it a behaviour profile (steady, flaky, offline, failing_playback) from now on, or make it report a one-off playback error. The sandbox operator's (scope `sandbox`); audited.")
    .tag("sandbox")
    .summary("Script a screen of the simulated fleet: give it a behaviour profile, or make it report a playback error now.")
    .body("SandboxDeviceSimulate")
    .ok("SandboxDeviceSimulation")
    .not_idempotent()]
}

/// Exactly one of `profile` and `event` (with `code`, optionally `message`).
// `default` only tells the schema every member is optional: serde reads an absent `Option` as
// `None` either way.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SandboxDeviceSimulate")]
struct Simulate {
    /// `steady` heartbeats every 60 s and plays its ads; `flaky` also drops out 15 minutes every
    /// 12 hours; `failing_playback` also reports a playback error every 8 hours; `offline` goes
    /// silent.
    #[serde(default)]
    #[schemars(with = "String", transform = &OneOf(SETTABLE))]
    profile: Option<String>,
    /// A one-off event, recorded now.
    #[serde(default)]
    #[schemars(with = "String", transform = &OneOf(EVENTS))]
    event: Option<String>,
    #[serde(default)]
    #[schemars(with = "String", regex(pattern = CODE_PATTERN))]
    code: Option<String>,
    #[serde(default)]
    #[schemars(with = "String", length(min = 1, max = MAX_MESSAGE))]
    message: Option<String>,
}

/// A screen's behaviour in the simulated fleet after a change: its profile, or the one-off event
/// it reported.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SandboxDeviceSimulation")]
struct Simulation {
    #[schemars(extend("const" = "sandbox_device_simulation"))]
    object: &'static str,
    device_id: String,
    company_id: String,
    #[schemars(transform = &OneOf(simulator::PROFILES))]
    profile: String,
    profile_since: Time,
    next_transition_at: Option<Time>,
    playback_error: Option<RecordedError>,
}

#[derive(Serialize, JsonSchema)]
struct RecordedError {
    id: String,
    code: String,
    message: String,
    ad_id: Option<String>,
    occurred_at: Time,
}

fn code_ok(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

fn simulate(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: DeviceId = ctx.path()?;
    let input: Simulate = ctx.json()?;
    let mut errors = Errors::new();
    match (&input.profile, &input.event) {
        (Some(p), None) => {
            if input.code.is_some() || input.message.is_some() {
                errors.push(
                    "",
                    "unexpected_field",
                    "`code` and `message` go with `event`, not `profile`.",
                );
            }
            if p == "never_seen" {
                errors.push(
                    "/profile",
                    "invalid_value",
                    "A screen cannot be made never seen; give one of: steady, flaky, offline, failing_playback.",
                );
            } else {
                errors.one_of("/profile", p, SETTABLE);
            }
        }
        (None, Some(e)) => {
            errors.one_of("/event", e, EVENTS);
            match &input.code {
                Some(c) if code_ok(c) => {}
                _ => errors.push(
                    "/code",
                    "invalid_code",
                    "Required with `event`: 1 to 64 characters of letters, digits and `._-`.",
                ),
            }
            if let Some(m) = &input.message {
                if m.trim().is_empty() || m.chars().count() > MAX_MESSAGE {
                    errors.push("/message", "invalid_length", "Must be 1 to 500 characters.");
                }
            }
        }
        _ => errors.push(
            "",
            "one_of_required",
            "Give exactly one of `profile` (steady, flaky, offline, failing_playback) or `event` (playback_error, with `code`).",
        ),
    }
    errors.finish()?;
    let now = ctx.now();
    ctx.db.write(ctx.intent, |tx| {
        let company: String = tx
            .prepare_cached("SELECT company_id FROM devices WHERE id = ?1")?
            .query_row([id.as_str()], |r| r.get(0))
            .optional()?
            .ok_or_else(|| ApiError::not_found("device", id.as_str()))?;
        let mut recorded = None;
        if let Some(profile) = &input.profile {
            simulator::set_profile(ctx.db, tx, &id, profile, now)?;
        } else if let Some(code) = &input.code {
            let message = input
                .message
                .as_deref()
                .map(str::trim)
                .unwrap_or(DEFAULT_MESSAGE);
            let (error, ad) = simulator::record_error(tx, &id, code, message, now)?;
            recorded = Some(RecordedError {
                id: error.into_string(),
                code: code.clone(),
                message: message.to_string(),
                ad_id: ad,
                occurred_at: Time(now),
            });
        }
        let (profile, since, next): (Option<String>, Option<i64>, Option<i64>) = tx
            .prepare_cached(
                "SELECT profile, since_at, next_due_at FROM device_simulations WHERE device_id = ?1",
            )?
            .query_row([id.as_str()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?
            .unwrap_or((None, None, None));
        Ok(Response::ok(&Simulation {
            object: "sandbox_device_simulation",
            device_id: id.to_string(),
            company_id: company,
            profile: profile.unwrap_or_else(|| "never_seen".into()),
            profile_since: Time(since.unwrap_or(now)),
            next_transition_at: next.map(Time),
            playback_error: recorded,
        }))
    })
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::{named_body, named_response};
    vec![named_body::<Simulate>(), named_response::<Simulation>()]
}
