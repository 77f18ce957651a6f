//! A device's playback diagnostics: heartbeat age and status, current ad, recent errors.

use super::device::{authorized_owner, status_of, Clock};
use super::fields::{KEPT_PLAYBACK_ERRORS, MAX_PLAYBACK_ERRORS, STATUS};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::DeviceId;
use crate::routes::crud::{self, Time};
use schemars::JsonSchema;
use serde::Serialize;

/// Why a screen shows what it shows: heartbeat age, current ad, storage, uptime and recent
/// playback errors.
// Field order is the order of the JSON members.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "DeviceDiagnostics")]
pub(super) struct Diagnostics {
    #[schemars(extend("const" = "device_diagnostics"))]
    object: &'static str,
    device_id: String,
    company_id: String,
    #[schemars(transform = &STATUS)]
    status: &'static str,
    pub(super) last_seen: Option<Time>,
    #[schemars(range(min = 0))]
    seconds_since_heartbeat: Option<i64>,
    offline_after_seconds: i64,
    pub(super) current_ad: Option<CurrentAd>,
    #[schemars(length(max = MAX_PLAYBACK_ERRORS))]
    recent_playback_errors: Vec<PlaybackError>,
    pub(super) app_version: Option<String>,
    storage: Storage,
    uptime_seconds: Option<i64>,
}

#[derive(Serialize, JsonSchema)]
pub(super) struct CurrentAd {
    pub(super) id: String,
    name: String,
}

#[derive(Serialize, JsonSchema)]
struct PlaybackError {
    id: String,
    code: String,
    message: String,
    ad_id: Option<String>,
    occurred_at: Time,
}

#[derive(Serialize, JsonSchema)]
struct Storage {
    used_mb: Option<i64>,
    total_mb: Option<i64>,
    #[schemars(range(min = 0, max = 100))]
    free_percent: Option<f64>,
}

/// Free share of storage in percent, to one decimal; none without a positive total.
fn free_percent(used: Option<i64>, total: Option<i64>) -> Option<f64> {
    match (used, total) {
        (Some(u), Some(t)) if t > 0 => {
            let free = (t - u).clamp(0, t) as f64 / t as f64 * 100.0;
            Some((free * 10.0).round() / 10.0)
        }
        _ => None,
    }
}

/// The diagnostics of a device (which must exist).
pub(super) fn diagnostics(
    conn: &rusqlite::Connection,
    id: &DeviceId,
    clock: Clock,
) -> Result<Diagnostics, ApiError> {
    let Clock { now, offline_after } = clock;
    let mut diag = crud::load(
        conn,
        "SELECT d.company_id, d.last_heartbeat_at, d.current_ad_id, a.name AS current_ad_name,
                d.app_version, d.storage_used_mb, d.storage_total_mb, d.uptime_seconds
         FROM devices d LEFT JOIN ads a ON a.id = d.current_ad_id WHERE d.id = ?1",
        id,
        |r| {
            let last: Option<i64> = r.get("last_heartbeat_at")?;
            let current_ad = match (r.get("current_ad_id")?, r.get("current_ad_name")?) {
                (Some(id), Some(name)) => Some(CurrentAd { id, name }),
                _ => None,
            };
            let used: Option<i64> = r.get("storage_used_mb")?;
            let total: Option<i64> = r.get("storage_total_mb")?;
            Ok(Diagnostics {
                object: "device_diagnostics",
                device_id: id.to_string(),
                company_id: r.get("company_id")?,
                status: status_of(last, now, offline_after),
                last_seen: last.map(Time),
                seconds_since_heartbeat: last.map(|t| (now - t).max(0)),
                offline_after_seconds: offline_after,
                current_ad,
                recent_playback_errors: Vec::new(),
                app_version: r.get("app_version")?,
                storage: Storage {
                    used_mb: used,
                    total_mb: total,
                    free_percent: free_percent(used, total),
                },
                uptime_seconds: r.get("uptime_seconds")?,
            })
        },
    )?;
    diag.recent_playback_errors = conn
        .prepare_cached(
            "SELECT id, code, message, ad_id, occurred_at FROM playback_errors
             WHERE device_id = ?1 ORDER BY occurred_at DESC, id DESC LIMIT ?2",
        )?
        .query_map(rusqlite::params![id, MAX_PLAYBACK_ERRORS as i64], |r| {
            Ok(PlaybackError {
                id: r.get("id")?,
                code: r.get("code")?,
                message: r.get("message")?,
                ad_id: r.get("ad_id")?,
                occurred_at: Time(r.get("occurred_at")?),
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(diag)
}

pub(super) fn get_diagnostics(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: DeviceId = ctx.path()?;
    let conn = ctx.conn()?;
    authorized_owner(ctx, &conn, &id)?;
    let diag = diagnostics(&conn, &id, Clock::of(ctx))?;
    Ok(Response::ok(&diag))
}

/// A playback error to record: its code, message and the ad it names, if any.
pub(crate) struct NewPlaybackError<'a> {
    pub code: &'a str,
    pub message: &'a str,
    pub ad_id: Option<&'a str>,
}

/// Records `error` of `device` at `at`, and keeps only the device's latest
/// [`KEPT_PLAYBACK_ERRORS`] (newest first by `occurred_at`, then id):
/// the one rule of what diagnostics keep, for a player's heartbeat and the fleet alike.
///
/// The prune walks the device's errors newest first in `playback_errors_by_device_time` and skips
/// the kept ones; what is left (one row, once the device has its fill) is deleted by rowid.
pub(crate) fn record_playback_error(
    tx: &crate::db::Tx,
    device: &str,
    error: &NewPlaybackError<'_>,
    at: i64,
) -> Result<crate::ids::PlaybackErrorId, crate::db::DbError> {
    let id: crate::ids::PlaybackErrorId = tx.generate();
    tx.prepare_cached(
        "INSERT INTO playback_errors (id, device_id, ad_id, code, message, occurred_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(rusqlite::params![
        id,
        device,
        error.ad_id,
        error.code,
        error.message,
        at
    ])?;
    tx.prepare_cached(
        "DELETE FROM playback_errors WHERE rowid IN
           (SELECT rowid FROM playback_errors WHERE device_id = ?1
            ORDER BY occurred_at DESC, id DESC LIMIT -1 OFFSET ?2)",
    )?
    .execute(rusqlite::params![device, KEPT_PLAYBACK_ERRORS])?;
    Ok(id)
}
