//! A device itself: its typed row, its derived status and the clock it is derived against, and
//! its loaders. Below the handlers and the area's payloads; it imports neither.

use super::fields::{ORIENTATION, ORIENTATIONS, PLATFORM, PLATFORMS, STATUS};
use crate::http::{ApiError, Ctx};
use crate::ids::{DeviceId, Kind, TypedId};
use crate::routes::crud::{self, Time};
use rusqlite::OptionalExtension;
use schemars::JsonSchema;
use serde::Serialize;

/// Derived status of a device from its last heartbeat.
pub(super) fn status_of(last_heartbeat: Option<i64>, now: i64, offline_after: i64) -> &'static str {
    match last_heartbeat {
        None => "never_seen",
        Some(t) if t >= now - offline_after => "online",
        Some(_) => "offline",
    }
}

/// A screen of a company, with its derived connection status.
// Field order is the order of the JSON members (list pages write the same bytes from
// [`super::device_json::DeviceJson`]).
#[derive(Serialize, JsonSchema)]
pub struct Device {
    #[schemars(transform = Kind::Device)]
    pub(super) id: String,
    #[schemars(extend("const" = "device"))]
    pub(super) object: &'static str,
    pub(super) company_id: String,
    pub(super) name: String,
    pub(super) location: String,
    #[schemars(transform = &PLATFORM)]
    pub(super) platform: std::borrow::Cow<'static, str>,
    #[schemars(transform = &ORIENTATION)]
    pub(super) orientation: std::borrow::Cow<'static, str>,
    pub(super) resolution: String,
    #[schemars(transform = &STATUS)]
    pub(super) status: &'static str,
    pub(super) last_heartbeat_at: Option<Time>,
    /// Age of the last heartbeat in seconds against the sandbox clock (a dashboard needs no clock
    /// of its own); `null`: never.
    #[schemars(range(min = 0))]
    pub(super) seconds_since_heartbeat: Option<i64>,
    pub(super) current_ad_id: Option<String>,
    pub(super) app_version: Option<String>,
    #[schemars(range(min = 0))]
    pub(super) assigned_ad_count: i64,
    pub(super) created_at: Time,
    pub(super) updated_at: Time,
    // The ETag's version; not a member of the body.
    #[serde(skip)]
    pub(super) version: i64,
}

/// What a device's derived status is computed against.
#[derive(Clone, Copy)]
pub(super) struct Clock {
    pub(super) now: i64,
    pub(super) offline_after: i64,
}

impl Clock {
    pub(super) fn of(ctx: &Ctx<'_>) -> Clock {
        Clock {
            now: ctx.now(),
            offline_after: ctx.app.settings.device_offline_after_secs,
        }
    }
}

/// The columns [`Device::from_row`] reads, by position.
const DEVICE_SELECT: &str = "SELECT d.last_heartbeat_at, d.id, d.company_id, d.name, d.location,
        d.platform, d.orientation, d.resolution, d.current_ad_id, d.app_version,
        (SELECT count(*) FROM ad_assignments x WHERE x.device_id = d.id) AS assigned_ad_count,
        d.created_at, d.updated_at, d.version
    FROM devices d";

impl Device {
    /// Reads a row of [`DEVICE_SELECT`] by column position.
    fn from_row(r: &rusqlite::Row<'_>, clock: Clock) -> rusqlite::Result<Device> {
        let last: Option<i64> = r.get(0)?;
        Ok(Device {
            id: r.get(1)?,
            object: "device",
            company_id: r.get(2)?,
            name: r.get(3)?,
            location: r.get(4)?,
            platform: crud::word_at(r, 5, PLATFORMS)?,
            orientation: crud::word_at(r, 6, ORIENTATIONS)?,
            resolution: r.get(7)?,
            status: status_of(last, clock.now, clock.offline_after),
            last_heartbeat_at: last.map(Time),
            seconds_since_heartbeat: last.map(|t| (clock.now - t).max(0)),
            current_ad_id: r.get(8)?,
            app_version: r.get(9)?,
            assigned_ad_count: r.get(10)?,
            created_at: Time(r.get(11)?),
            updated_at: Time(r.get(12)?),
            version: r.get(13)?,
        })
    }
}

impl crate::http::response::Listed for Device {
    fn list_key(&self) -> &str {
        &self.id
    }
}

pub(super) fn load(
    conn: &rusqlite::Connection,
    id: &DeviceId,
    clock: Clock,
) -> Result<Device, ApiError> {
    load_by_id(conn, id.as_str(), clock)?
        .ok_or_else(|| ApiError::not_found(DeviceId::KIND.what(), id.as_str()))
}

/// The device `id`, if it exists.
pub(super) fn load_by_id(
    conn: &rusqlite::Connection,
    id: &str,
    clock: Clock,
) -> Result<Option<Device>, ApiError> {
    Ok(conn
        .prepare_cached(&format!("{DEVICE_SELECT} WHERE d.id = ?1"))?
        .query_row([id], |r| Device::from_row(r, clock))
        .optional()?)
}

/// The owner of a visible device; missing or invisible is 404.
pub(super) fn authorized_owner(
    ctx: &Ctx<'_>,
    conn: &rusqlite::Connection,
    id: &DeviceId,
) -> Result<crud::Owner, ApiError> {
    crud::authorized_owner(ctx, conn, "devices", id)
}
