//! `POST /_sandbox/devices/{id}/simulate`: the operator scripts one screen of the simulated fleet,
//! giving it a behaviour profile or a one-off playback error ([`super::simulator`]).

use super::simulator::{self, SETTABLE};
use crate::auth::Action;
use crate::http::router::Route;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{DeviceId, TypedId};
use crate::routes::crud::Time;
use crate::validate::Errors;
use rusqlite::OptionalExtension;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub const EVENTS: &[&str] = &["playback_error"];
const DEFAULT_MESSAGE: &str = "Simulated playback error";

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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Simulate {
    profile: Option<String>,
    event: Option<String>,
    code: Option<String>,
    message: Option<String>,
}

#[derive(Serialize)]
struct Simulation {
    object: &'static str,
    device_id: String,
    company_id: String,
    profile: String,
    profile_since: Time,
    next_transition_at: Option<Time>,
    playback_error: Option<RecordedError>,
}

#[derive(Serialize)]
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
                if m.trim().is_empty() || m.chars().count() > 500 {
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
    let ts = json!({"type":"string","format":"date-time"});
    vec![
        (
            "SandboxDeviceSimulate",
            json!({"type":"object","additionalProperties":false,
            "description":"Exactly one of `profile` and `event` (with `code`, optionally `message`).",
            "properties":{
                "profile":{"type":"string","enum":SETTABLE,"description":"`steady` heartbeats every 60 s and plays its ads; `flaky` also drops out 15 minutes every 12 hours; `failing_playback` also reports a playback error every 8 hours; `offline` goes silent."},
                "event":{"type":"string","enum":EVENTS,"description":"A one-off event, recorded now."},
                "code":{"type":"string","pattern":"^[0-9A-Za-z._-]{1,64}$"},
                "message":{"type":"string","minLength":1,"maxLength":500}}}),
        ),
        (
            "SandboxDeviceSimulation",
            json!({"type":"object","additionalProperties":false,
            "required":["object","device_id","company_id","profile","profile_since","next_transition_at","playback_error"],
            "properties":{"object":{"const":"sandbox_device_simulation"},"device_id":{"type":"string"},
                "company_id":{"type":"string"},
                "profile":{"type":"string","enum":simulator::PROFILES},
                "profile_since":ts,
                "next_transition_at":{"type":["string","null"],"format":"date-time"},
                "playback_error":{"oneOf":[{"type":"null"},{"type":"object","additionalProperties":false,
                    "required":["id","code","message","ad_id","occurred_at"],
                    "properties":{"id":{"type":"string"},"code":{"type":"string"},"message":{"type":"string"},
                        "ad_id":{"type":["string","null"]},"occurred_at":ts}}]}}}),
        ),
    ]
}
