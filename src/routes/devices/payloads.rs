//! The devices area's event payloads ([`crate::routes::payloads`]): a screen as `GET
//! /devices/{id}` shows it (created, updated, offline, online), its heartbeat summary, and a
//! recorded play.

use super::device::{self, Clock};
use super::diagnostics::diagnostics;
use crate::http::ApiError;
use crate::ids::{DeviceId, Kind, PlaybackId, TypedId};
use crate::routes::crud::Time;
use crate::routes::payload::{schema_ref, to_data, Payload, Subject, SubjectKind};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};

/// The subject of the events about a screen (`resource_type` `device`).
pub const DEVICE: SubjectKind = SubjectKind {
    kind: Kind::Device,
    resource: "device",
    table: "devices o",
    company: "o.company_id",
};

/// The subject of the events about a recorded play (`resource_type` `playback`).
pub const PLAYBACK: SubjectKind = SubjectKind {
    kind: Kind::Playback,
    resource: "playback",
    table: "playbacks o",
    company: "o.company_id",
};

pub fn payloads() -> Vec<Payload> {
    vec![
        Payload::new("device.created", "A screen was registered.", &DEVICE, schema_ref("Device"), shown),
        Payload::new("device.updated", "A screen's details changed.", &DEVICE, schema_ref("Device"), shown),
        Payload::deleted("device.deleted", "A screen was removed.", &DEVICE),
        Payload::new("device.heartbeat", "A screen reported in: its heartbeat's summary.", &DEVICE, heartbeat_schema(), heartbeat)
            .example_hints(json!({"playback_errors_reported": 0})),
        Payload::new("device.offline", "A screen stopped reporting in (sandbox clock): the screen, `status` `offline`, the second its last heartbeat became older than `devices.offline_after_secs`.", &DEVICE, schema_ref("Device"), shown)
            .example_where("o.last_heartbeat_at < (SELECT max(last_heartbeat_at) FROM devices) - 3600"),
        Payload::new("device.online", "A screen reported in again after being reported offline: the screen, `status` `online`.", &DEVICE, schema_ref("Device"), shown)
            .example_where("o.last_heartbeat_at >= (SELECT max(last_heartbeat_at) FROM devices) - 60"),
        Payload::new("device.playback_recorded", "A player reported a play (POST /devices/{id}/playbacks): the play.", &PLAYBACK, schema_ref("Playback"), recorded),
    ]
}

/// A screen as `GET /devices/{id}` shows it, its status judged at the clock's now against
/// `offline_after`: the `data` of `device.created|updated|offline|online`.
pub(crate) fn device_data(
    conn: &rusqlite::Connection,
    id: &str,
    offline_after: i64,
    now: i64,
) -> Result<Value, ApiError> {
    let id = DeviceId::parse(id).ok_or_else(|| ApiError::not_found("device", id))?;
    let clock = Clock { now, offline_after };
    to_data(&device::load(conn, &id, clock)?)
}

fn shown(s: &Subject<'_>) -> Result<Value, ApiError> {
    device_data(s.conn, s.id, s.settings.device_offline_after_secs, s.now)
}

/// `device.heartbeat`: what the screen reported, from its diagnostics; hint
/// `playback_errors_reported` (how many errors the heartbeat carried, 0 if not given).
pub(super) fn heartbeat(s: &Subject<'_>) -> Result<Value, ApiError> {
    let id = DeviceId::parse(s.id).ok_or_else(|| ApiError::not_found("device", s.id))?;
    let clock = Clock {
        now: s.now,
        offline_after: s.settings.device_offline_after_secs,
    };
    let diag = diagnostics(s.conn, &id, clock)?;
    let reported = s
        .hints
        .get("playback_errors_reported")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    to_data(&Heartbeat {
        device_id: id.as_str(),
        last_seen: diag.last_seen,
        app_version: diag.app_version,
        current_ad_id: diag.current_ad.map(|a| a.id),
        playback_errors_reported: reported,
    })
}

// The `data` of `device.heartbeat`: no description of its own (the event type's says what it is).
// Field order is the order of the JSON members.
#[derive(Serialize, JsonSchema)]
struct Heartbeat<'a> {
    #[schemars(transform = Kind::Device)]
    device_id: &'a str,
    /// The heartbeat's instant.
    last_seen: Option<Time>,
    app_version: Option<String>,
    /// The ad the screen reports playing.
    current_ad_id: Option<String>,
    /// How many playback errors the heartbeat carried.
    playback_errors_reported: u64,
}

fn heartbeat_schema() -> Value {
    crate::jsonschema::response::<Heartbeat<'_>>()
}

/// The play a `device.playback_recorded` names.
fn playback_id(id: &str) -> Result<PlaybackId, ApiError> {
    PlaybackId::parse(id).ok_or_else(|| ApiError::not_found("playback", id))
}

/// `device.playback_recorded`: the play as `POST /devices/{id}/playbacks` answered it.
fn recorded(s: &Subject<'_>) -> Result<Value, ApiError> {
    to_data(&super::playbacks::load(s.conn, &playback_id(s.id)?)?)
}
