//! Fleet health: per company, how many screens are online, offline and never seen, and the
//! offline ones with how long they have been silent and their last playback error, longest
//! down first. The answer to "which screens are down?" in one request.
//!
//! Works on heartbeats alone: `offline` is the same threshold as a device's `status`
//! (`device_offline_after_secs`).

use super::device::Clock;
use crate::auth::{Action, Area, Level};
use crate::http::router::{param, Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::Kind;
use crate::routes::crud::Time;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// Offline screens listed per company; the rest are counted in `offline_not_listed`.
pub const MAX_OFFLINE_LISTED: i64 = 50;

pub(super) fn route() -> Route {
    Route::get(
        "/devices/health",
        "getFleetHealth",
        Action::Use(Area::Devices, Level::Read),
        fleet_health,
    )
    .describe("One answer to 'how is my fleet?': per visible company (or the one in `company_id`), how many screens are online, offline and never seen, and the offline screens with their last heartbeat age and last playback error, longest down first (at most 50 per company). Needs `devices:read`.")
    .tool(Tool::read(
        "get_fleet_health",
        "Get fleet health",
        &[],
        "Which screens are down? Per company: counts online, offline, never seen; the offline ones longest silent first, with heartbeat age and last playback error.",
    ))
    .tag("devices")
    .summary("Fleet health per company: online/offline/never-seen counts and the offline screens, longest down first, with their last heartbeat age and last playback error.")
    .query(&[param(
        "company_id",
        Kind::Company.schema(),
        "Only this company (default: every company the key can see).",
    )])
    .ok("FleetHealth")
}

/// Per company: how many screens are online, offline and never seen, and the offline ones,
/// longest down first.
#[derive(Serialize, JsonSchema)]
struct FleetHealth {
    #[schemars(extend("const" = "fleet_health"))]
    object: &'static str,
    /// A screen silent longer than this is offline.
    offline_after_seconds: i64,
    companies: Vec<CompanyHealth>,
}

#[derive(Serialize, JsonSchema)]
struct CompanyHealth {
    company_id: String,
    company_name: String,
    #[schemars(range(min = 0))]
    total: i64,
    #[schemars(range(min = 0))]
    online: i64,
    #[schemars(range(min = 0))]
    offline: i64,
    #[schemars(range(min = 0))]
    never_seen: i64,
    /// Offline screens, longest silent first.
    #[schemars(length(max = MAX_OFFLINE_LISTED))]
    offline_devices: Vec<OfflineDevice>,
    /// Offline screens beyond the ones listed.
    #[schemars(range(min = 0))]
    offline_not_listed: i64,
}

#[derive(Serialize, JsonSchema)]
struct OfflineDevice {
    device_id: String,
    name: String,
    location: String,
    last_heartbeat_at: Time,
    #[schemars(range(min = 0))]
    seconds_since_heartbeat: i64,
    last_playback_error: Option<LastError>,
}

#[derive(Serialize, JsonSchema)]
struct LastError {
    code: String,
    message: String,
    occurred_at: Time,
}

fn fleet_health(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let companies = ctx.list_companies()?;
    let Clock { now, offline_after } = Clock::of(ctx);
    let threshold = now - offline_after;
    let conn = ctx.conn()?;
    let mut out = Vec::with_capacity(companies.len());
    for company in &companies {
        let (name, total, online, never_seen): (String, i64, i64, i64) = conn
            .prepare_cached(
                "SELECT c.name, count(d.id),
                        coalesce(sum(d.last_heartbeat_at >= ?2), 0),
                        coalesce(sum(d.id IS NOT NULL AND d.last_heartbeat_at IS NULL), 0)
                 FROM companies c LEFT JOIN devices d ON d.company_id = c.id
                 WHERE c.id = ?1 GROUP BY c.id",
            )?
            .query_row(rusqlite::params![company, threshold], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?;
        let offline = total - online - never_seen;
        let offline_devices = conn
            .prepare_cached(
                "SELECT d.id, d.name, d.location, d.last_heartbeat_at, e.code, e.message, e.occurred_at
                 FROM devices d
                 LEFT JOIN playback_errors e ON e.id = (
                     SELECT x.id FROM playback_errors x WHERE x.device_id = d.id
                     ORDER BY x.occurred_at DESC, x.id DESC LIMIT 1)
                 WHERE d.company_id = ?1 AND d.last_heartbeat_at < ?2
                 ORDER BY d.last_heartbeat_at ASC, d.id ASC LIMIT ?3",
            )?
            .query_map(
                rusqlite::params![company, threshold, MAX_OFFLINE_LISTED],
                |r| {
                    let last: i64 = r.get(3)?;
                    let error = match (r.get(4)?, r.get(5)?, r.get(6)?) {
                        (Some(code), Some(message), Some(at)) => Some(LastError {
                            code,
                            message,
                            occurred_at: Time(at),
                        }),
                        _ => None,
                    };
                    Ok(OfflineDevice {
                        device_id: r.get(0)?,
                        name: r.get(1)?,
                        location: r.get(2)?,
                        last_heartbeat_at: Time(last),
                        seconds_since_heartbeat: (now - last).max(0),
                        last_playback_error: error,
                    })
                },
            )?
            .collect::<Result<Vec<_>, _>>()?;
        out.push(CompanyHealth {
            company_id: company.clone(),
            company_name: name,
            total,
            online,
            offline,
            never_seen,
            offline_not_listed: offline - offline_devices.len() as i64,
            offline_devices,
        });
    }
    Ok(Response::ok(&FleetHealth {
        object: "fleet_health",
        offline_after_seconds: offline_after,
        companies: out,
    }))
}

pub(super) fn schemas() -> Vec<(&'static str, Value)> {
    vec![crate::jsonschema::named_response::<FleetHealth>()]
}
