//! Devices (screens): CRUD, the ads assigned to them, heartbeats and playback diagnostics.
//!
//! A device's `status` is derived, never stored: `online` when its last heartbeat is at most
//! `device_offline_after_secs` old, `offline` when older, `never_seen` without one.
//!
//! The `version` (and so the ETag) covers what API clients edit (name, location, platform,
//! orientation, resolution). Heartbeats change telemetry only and leave it alone, so a screen
//! reporting every few seconds never turns an operator's `If-Match` edit into a 412.

use super::crud::{self, Time};
use super::present;
use crate::auth::{Action, Area, Level};
use crate::http::router::{param, Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{DeviceId, Kind, PlaybackErrorId, TypedId};
use crate::validate::{id_schema, Errors, OneOf, Text};
use rusqlite::OptionalExtension;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

const READ: Action = Action::Use(Area::Devices, Level::Read);
const WRITE: Action = Action::Use(Area::Devices, Level::Write);

/// The `platform` CHECK of the `devices` table.
pub const PLATFORMS: &[&str] = &[
    "android",
    "tizen",
    "webos",
    "brightsign",
    "windows",
    "linux",
];
pub const ORIENTATIONS: &[&str] = &["landscape", "portrait"];
pub const STATUSES: &[&str] = &["online", "offline", "never_seen"];

const NAME: Text = Text::new(1, 100);
const LOCATION: Text = Text::new(0, 200);
const PLAYBACK_MESSAGE: Text = Text::new(1, 500);
const PLATFORM: OneOf = OneOf(PLATFORMS);
const ORIENTATION: OneOf = OneOf(ORIENTATIONS);
const STATUS: OneOf = OneOf(STATUSES);

/// Playback errors kept per device; older ones are pruned on heartbeat so the table stays bounded.
const KEPT_PLAYBACK_ERRORS: i64 = 100;
/// Playback errors reported by one heartbeat, and shown by diagnostics.
const MAX_PLAYBACK_ERRORS: usize = 20;
const MAX_STORAGE_MB: i64 = 100_000_000;
const MAX_UPTIME_SECS: i64 = 3_153_600_000;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/devices", "listDevices", READ, list)
            .tool(Tool::read(
                "list_devices",
                "List devices",
                &[],
                "List screens (devices), newest first, optionally filtered by company and connection status (online, offline, never seen). Paged with `cursor`.",
            ))
            .tag("devices")
            .summary("List devices (screens), newest first. Filter by company and by derived status.")
            .paged_by(Kind::Device)
            .query(&[
                param("company_id", Kind::Company.schema(), "Only devices of this company."),
                param(
                    "status",
                    r#"{"type":"string","enum":["online","offline","never_seen"]}"#,
                    "`online`: heartbeat within the offline threshold; `offline`: older; `never_seen`: none yet.",
                ),
            ])
            .ok("DeviceList"),
        Route::post("/devices", "createDevice", WRITE, create)
            .tag("devices")
            .summary("Register a device in a company. Refused with 409 when the company's plan allows no more devices.")
            .body("DeviceCreate")
            .created("Device"),
        Route::get("/devices/{id}", "getDevice", READ, get)
            .tool(Tool::read(
                "get_device",
                "Get device",
                &[("device_id", "The device id (`dev_…`), as returned by list_devices.")],
                "Get one screen: name, location, platform, orientation, resolution, connection status and the ad it is playing.",
            ))
            .tag("devices")
            .summary("Get one device, with its derived status. Returns an ETag.")
            .ok("Device"),
        Route::patch("/devices/{id}", "updateDevice", WRITE, update)
            .tag("devices")
            .summary("Change a device's name, location, platform, orientation or resolution. Honours If-Match.")
            .body("DeviceUpdate")
            .ok("Device"),
        Route::delete("/devices/{id}", "deleteDevice", WRITE, delete)
            .tag("devices")
            .summary("Delete a device and its ad assignments. Honours If-Match."),
        Route::get("/devices/{id}/ads", "listDeviceAds", READ, list_ads)
            .tool(Tool::read(
                "list_device_ads",
                "List ads on a device",
                &[("device_id", "The device id (`dev_…`), as returned by list_devices.")],
                "List the ads assigned to one screen.",
            ))
            .tag("devices")
            .summary("List the ads assigned to a device, newest first.")
            .paged_by(Kind::Ad)
            .ok("AdList"),
        Route::get(
            "/devices/{id}/diagnostics",
            "getDeviceDiagnostics",
            READ,
            get_diagnostics,
        )
        .tool(Tool::read(
            "get_device_diagnostics",
            "Get device diagnostics",
            &[("device_id", "The device id (`dev_…`), as returned by list_devices.")],
            "Get playback diagnostics of one screen: last heartbeat, app version, storage, uptime and recent playback errors. Use it when a screen is offline or not showing the right content.",
        ))
        .tag("devices")
        .summary("Playback diagnostics: heartbeat age and status, current ad, recent playback errors, app version, storage, uptime.")
        .ok("DeviceDiagnostics"),
        Route::post(
            "/devices/{id}/heartbeat",
            "recordDeviceHeartbeat",
            WRITE,
            heartbeat,
        )
        .tag("devices")
        .summary("Record a heartbeat from the device (telemetry and playback errors); returns its diagnostics.")
        .body("DeviceHeartbeat")
        .ok("DeviceDiagnostics"),
    ]
}

fn valid_resolution(s: &str) -> bool {
    let Some((w, h)) = s.split_once('x') else {
        return false;
    };
    let ok = |p: &str| {
        (2..=5).contains(&p.len()) && !p.starts_with('0') && p.bytes().all(|c| c.is_ascii_digit())
    };
    ok(w) && ok(h)
}

const RESOLUTION_PATTERN: &str = "^[1-9][0-9]{1,4}x[1-9][0-9]{1,4}$";

fn app_version_ok(s: &str) -> bool {
    (1..=32).contains(&s.len())
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'+' | b'_' | b'-'))
}

fn error_code_ok(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    let nullable_str = json!({"type":["string","null"]});
    let ts = json!({"type":"string","format":"date-time"});
    let platform = PLATFORM.schema();
    let orientation = ORIENTATION.schema();
    let resolution = json!({"type":"string","pattern":RESOLUTION_PATTERN,"description":"WIDTHxHEIGHT in pixels, e.g. 1920x1080."});
    let status = STATUS.schema();
    vec![
        (
            "Device",
            json!({"type":"object","additionalProperties":false,
                "required":["id","object","company_id","name","location","platform","orientation","resolution",
                    "status","last_heartbeat_at","current_ad_id","app_version","assigned_ad_count","created_at","updated_at"],
                "properties":{"id":{"type":"string","pattern":"^dev_"},"object":{"const":"device"},
                    "company_id":{"type":"string"},"name":{"type":"string"},"location":{"type":"string"},
                    "platform":platform,"orientation":orientation,"resolution":{"type":"string"},
                    "status":status,"last_heartbeat_at":{"type":["string","null"],"format":"date-time"},
                    "current_ad_id":nullable_str,"app_version":nullable_str,
                    "assigned_ad_count":{"type":"integer","minimum":0},
                    "created_at":ts,"updated_at":ts}}),
        ),
        (
            "DeviceCreate",
            json!({"type":"object","additionalProperties":false,"required":["company_id","name","platform"],
                "properties":{"company_id":id_schema(Kind::Company),"name":NAME.schema(),
                    "location":LOCATION.schema(),"platform":platform,
                    "orientation":ORIENTATION.schema_default("landscape"),
                    "resolution":{"type":"string","pattern":RESOLUTION_PATTERN,"default":"1920x1080"}}}),
        ),
        (
            "DeviceUpdate",
            json!({"type":"object","additionalProperties":false,"minProperties":1,
                "properties":{"name":NAME.schema(),"location":LOCATION.schema(),
                    "platform":platform,"orientation":orientation,"resolution":resolution}}),
        ),
        (
            "DeviceHeartbeat",
            json!({"type":"object","additionalProperties":false,
                "properties":{
                    "app_version":{"type":"string","pattern":"^[0-9A-Za-z.+_-]{1,32}$"},
                    "current_ad_id":{"anyOf":[id_schema(Kind::Ad),{"type":"null"}],
                        "description":"The ad playing now; it must be assigned to this device."},
                    "storage_used_mb":{"type":"integer","minimum":0,"maximum":MAX_STORAGE_MB},
                    "storage_total_mb":{"type":"integer","minimum":1,"maximum":MAX_STORAGE_MB},
                    "uptime_seconds":{"type":"integer","minimum":0,"maximum":MAX_UPTIME_SECS},
                    "playback_errors":{"type":"array","maxItems":MAX_PLAYBACK_ERRORS,
                        "items":{"type":"object","additionalProperties":false,"required":["code","message"],
                            "properties":{"code":{"type":"string","pattern":"^[0-9A-Za-z._-]{1,64}$"},
                                "message":PLAYBACK_MESSAGE.schema(),
                                "ad_id":{"anyOf":[id_schema(Kind::Ad),{"type":"null"}]}}}}}}),
        ),
        (
            "DeviceDiagnostics",
            json!({"type":"object","additionalProperties":false,
                "required":["object","device_id","company_id","status","last_seen","seconds_since_heartbeat",
                    "offline_after_seconds","current_ad","recent_playback_errors","app_version","storage","uptime_seconds"],
                "properties":{"object":{"const":"device_diagnostics"},"device_id":{"type":"string"},
                    "company_id":{"type":"string"},"status":status,
                    "last_seen":{"type":["string","null"],"format":"date-time"},
                    "seconds_since_heartbeat":{"type":["integer","null"],"minimum":0},
                    "offline_after_seconds":{"type":"integer"},
                    "current_ad":{"oneOf":[{"type":"null"},{"type":"object","additionalProperties":false,
                        "required":["id","name"],"properties":{"id":{"type":"string"},"name":{"type":"string"}}}]},
                    "recent_playback_errors":{"type":"array","maxItems":MAX_PLAYBACK_ERRORS,
                        "items":{"type":"object","additionalProperties":false,
                            "required":["id","code","message","ad_id","occurred_at"],
                            "properties":{"id":{"type":"string"},"code":{"type":"string"},"message":{"type":"string"},
                                "ad_id":nullable_str,"occurred_at":ts}}},
                    "app_version":nullable_str,
                    "storage":{"type":"object","additionalProperties":false,"required":["used_mb","total_mb","free_percent"],
                        "properties":{"used_mb":{"type":["integer","null"]},"total_mb":{"type":["integer","null"]},
                            "free_percent":{"type":["number","null"],"minimum":0,"maximum":100}}},
                    "uptime_seconds":{"type":["integer","null"]}}}),
        ),
    ]
}

/// Derived status of a device from its last heartbeat.
fn status_of(last_heartbeat: Option<i64>, now: i64, offline_after: i64) -> &'static str {
    match last_heartbeat {
        None => "never_seen",
        Some(t) if t >= now - offline_after => "online",
        Some(_) => "offline",
    }
}

/// A device as the API returns it. Field order is the order of the JSON members.
#[derive(Serialize)]
pub struct Device {
    id: String,
    object: &'static str,
    company_id: String,
    name: String,
    location: String,
    platform: String,
    orientation: String,
    resolution: String,
    status: &'static str,
    last_heartbeat_at: Option<Time>,
    current_ad_id: Option<String>,
    app_version: Option<String>,
    assigned_ad_count: i64,
    created_at: Time,
    updated_at: Time,
    /// The ETag's version; not a member of the body.
    #[serde(skip)]
    version: i64,
}

/// What a device's derived status is computed against.
#[derive(Clone, Copy)]
struct Clock {
    now: i64,
    offline_after: i64,
}

impl Clock {
    fn of(ctx: &Ctx<'_>) -> Clock {
        Clock {
            now: crate::time::now(),
            offline_after: ctx.app.settings.device_offline_after_secs,
        }
    }
}

/// In the order [`Device::from_row`] reads it (so each name is found at the first try).
const DEVICE_SELECT: &str = "SELECT d.last_heartbeat_at, d.id, d.company_id, d.name, d.location,
        d.platform, d.orientation, d.resolution, d.current_ad_id, d.app_version,
        (SELECT count(*) FROM ad_assignments x WHERE x.device_id = d.id) AS assigned_ad_count,
        d.created_at, d.updated_at, d.version
    FROM devices d";

impl Device {
    /// Reads a row of [`DEVICE_SELECT`] by column name.
    fn from_row(r: &crud::Named<'_, '_>, clock: Clock) -> rusqlite::Result<Device> {
        let last: Option<i64> = r.get("last_heartbeat_at")?;
        Ok(Device {
            id: r.get("id")?,
            object: "device",
            company_id: r.get("company_id")?,
            name: r.get("name")?,
            location: r.get("location")?,
            platform: r.get("platform")?,
            orientation: r.get("orientation")?,
            resolution: r.get("resolution")?,
            status: status_of(last, clock.now, clock.offline_after),
            last_heartbeat_at: last.map(Time),
            current_ad_id: r.get("current_ad_id")?,
            app_version: r.get("app_version")?,
            assigned_ad_count: r.get("assigned_ad_count")?,
            created_at: Time(r.get("created_at")?),
            updated_at: Time(r.get("updated_at")?),
            version: r.get("version")?,
        })
    }
}

impl crate::http::response::Listed for Device {
    fn list_key(&self) -> &str {
        &self.id
    }
}

fn load(conn: &rusqlite::Connection, id: &DeviceId, clock: Clock) -> Result<Device, ApiError> {
    crud::load(conn, &format!("{DEVICE_SELECT} WHERE d.id = ?1"), id, |r| {
        Device::from_row(r, clock)
    })
}

/// The owner of a visible device; missing or invisible is 404.
fn authorized_owner(
    ctx: &Ctx<'_>,
    conn: &rusqlite::Connection,
    id: &DeviceId,
) -> Result<crud::Owner, ApiError> {
    crud::authorized_owner(ctx, conn, "devices", id)
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let companies = ctx.list_companies()?;
    let status = ctx.query_enum("status", STATUSES)?;
    let clock = Clock::of(ctx);
    let threshold = clock.now - clock.offline_after;
    let mut filters: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    match status.as_deref() {
        Some("online") => filters.push(("d.last_heartbeat_at >= ?", threshold.into())),
        Some("offline") => filters.push(("d.last_heartbeat_at < ?", threshold.into())),
        Some(_) => filters.push(("d.last_heartbeat_at IS ?", rusqlite::types::Value::Null)),
        None => {}
    }
    let conn = ctx.app.db.conn()?;
    let rows = crate::routes::fetch_page(
        &conn,
        DEVICE_SELECT,
        "d.company_id",
        "d.id",
        &companies,
        &filters,
        &page,
        |r| Device::from_row(r, clock),
    )?;
    Ok(Response::page(rows, &page))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceCreate {
    company_id: String,
    name: String,
    #[serde(default, deserialize_with = "present")]
    location: Option<String>,
    platform: String,
    #[serde(default, deserialize_with = "present")]
    orientation: Option<String>,
    #[serde(default, deserialize_with = "present")]
    resolution: Option<String>,
}

fn check_resolution(errors: &mut Errors, field: &str, value: &str) {
    if !valid_resolution(value) {
        errors.push(
            field,
            "invalid_resolution",
            "Must be WIDTHxHEIGHT in pixels (2–5 digits each), e.g. 1920x1080.",
        );
    }
}

fn create(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: DeviceCreate = ctx.json()?;
    let location = input.location.unwrap_or_default();
    let orientation = input.orientation.unwrap_or_else(|| "landscape".into());
    let resolution = input.resolution.unwrap_or_else(|| "1920x1080".into());
    let mut errors = Errors::new();
    errors.id("/company_id", &input.company_id, Kind::Company);
    NAME.check(&mut errors, "/name", &input.name);
    LOCATION.check(&mut errors, "/location", &location);
    PLATFORM.check(&mut errors, "/platform", &input.platform);
    ORIENTATION.check(&mut errors, "/orientation", &orientation);
    check_resolution(&mut errors, "/resolution", &resolution);
    errors.finish()?;
    let company = input.company_id;
    ctx.authorize_company(&company, "company", &company)?;

    let clock = Clock::of(ctx);
    let now = clock.now;
    let id = DeviceId::generate();
    ctx.app.db.write(|tx| {
        let (max, count): (i64, i64) = tx
            .prepare_cached(
                "SELECT p.max_devices, (SELECT count(*) FROM devices WHERE company_id = c.id)
                 FROM companies c JOIN plans p ON p.id = c.plan_id WHERE c.id = ?1",
            )?
            .query_row([&company], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
            .ok_or_else(|| ApiError::not_found("company", &company))?;
        if count >= max {
            return Err(ApiError::Conflict(format!(
                "The company's plan allows {max} devices and it has {count}. Delete a device or upgrade the plan first."
            )));
        }
        tx.prepare_cached(
            "INSERT INTO devices (id, company_id, name, location, platform, orientation, resolution,
                                  created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
        )?
        .execute(rusqlite::params![
            id,
            company,
            input.name.trim(),
            location.trim(),
            input.platform,
            orientation,
            resolution,
            now
        ])?;
        let device = load(tx, &id, clock)?;
        crud::record(tx, &company, "device.created", "device", &id, &device)?;
        Ok(Response::created(&device)
            .with_etag(device.version)
            .with_header("location", &format!("/devices/{id}")))
    })
}

fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: DeviceId = ctx.path()?;
    let conn = ctx.app.db.conn()?;
    authorized_owner(ctx, &conn, &id)?;
    let device = load(&conn, &id, Clock::of(ctx))?;
    Ok(Response::ok(&device).with_etag(device.version))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceUpdate {
    #[serde(default, deserialize_with = "present")]
    name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    location: Option<String>,
    #[serde(default, deserialize_with = "present")]
    platform: Option<String>,
    #[serde(default, deserialize_with = "present")]
    orientation: Option<String>,
    #[serde(default, deserialize_with = "present")]
    resolution: Option<String>,
}

fn update(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: DeviceId = ctx.path()?;
    // Visibility before the body: validating first would tell another company's id exists.
    authorized_owner(ctx, &*ctx.app.db.conn()?, &id)?;
    let input: DeviceUpdate = ctx.json()?;
    let mut errors = Errors::new();
    let mut sets: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    if let Some(v) = &input.name {
        NAME.check(&mut errors, "/name", v);
        sets.push(("name", v.trim().to_string().into()));
    }
    if let Some(v) = &input.location {
        LOCATION.check(&mut errors, "/location", v);
        sets.push(("location", v.trim().to_string().into()));
    }
    if let Some(v) = &input.platform {
        PLATFORM.check(&mut errors, "/platform", v);
        sets.push(("platform", v.clone().into()));
    }
    if let Some(v) = &input.orientation {
        ORIENTATION.check(&mut errors, "/orientation", v);
        sets.push(("orientation", v.clone().into()));
    }
    if let Some(v) = &input.resolution {
        check_resolution(&mut errors, "/resolution", v);
        sets.push(("resolution", v.clone().into()));
    }
    errors.require_some(!sets.is_empty());
    errors.finish()?;

    let clock = Clock::of(ctx);
    ctx.app.db.write(|tx| {
        let owner = authorized_owner(ctx, tx, &id)?;
        ctx.check_if_match(owner.version)?;
        crate::routes::update_versioned(tx, "devices", "id", &id, clock.now, &sets)?;
        let device = load(tx, &id, clock)?;
        crud::record(tx, &owner.company, "device.updated", "device", &id, &device)?;
        Ok(Response::ok(&device).with_etag(device.version))
    })
}

fn delete(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    crud::delete_versioned::<DeviceId>(ctx, "devices", "device")
}

fn list_ads(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: DeviceId = ctx.path()?;
    let page = ctx.page()?;
    let conn = ctx.app.db.conn()?;
    let owner = authorized_owner(ctx, &conn, &id)?;
    let rows = crate::routes::ads::page_for_device(&conn, &id, &[owner.company], &[], &page)?;
    Ok(Response::page(rows, &page))
}

/// A device's playback diagnostics. Field order is the order of the JSON members.
#[derive(Serialize)]
struct Diagnostics {
    object: &'static str,
    device_id: String,
    company_id: String,
    status: &'static str,
    last_seen: Option<Time>,
    seconds_since_heartbeat: Option<i64>,
    offline_after_seconds: i64,
    current_ad: Option<CurrentAd>,
    recent_playback_errors: Vec<PlaybackError>,
    app_version: Option<String>,
    storage: Storage,
    uptime_seconds: Option<i64>,
}

#[derive(Serialize)]
struct CurrentAd {
    id: String,
    name: String,
}

#[derive(Serialize)]
struct PlaybackError {
    id: String,
    code: String,
    message: String,
    ad_id: Option<String>,
    occurred_at: Time,
}

#[derive(Serialize)]
struct Storage {
    used_mb: Option<i64>,
    total_mb: Option<i64>,
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
fn diagnostics(
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

fn get_diagnostics(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: DeviceId = ctx.path()?;
    let conn = ctx.app.db.conn()?;
    authorized_owner(ctx, &conn, &id)?;
    let diag = diagnostics(&conn, &id, Clock::of(ctx))?;
    Ok(Response::ok(&diag))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlaybackErrorIn {
    code: String,
    message: String,
    #[serde(default)]
    ad_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Heartbeat {
    #[serde(default, deserialize_with = "present")]
    app_version: Option<String>,
    #[serde(default, deserialize_with = "crate::routes::nullable")]
    current_ad_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    storage_used_mb: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    storage_total_mb: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    uptime_seconds: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    playback_errors: Option<Vec<PlaybackErrorIn>>,
}

fn heartbeat(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: DeviceId = ctx.path()?;
    // Visibility before the body: validating first would tell another company's id exists.
    authorized_owner(ctx, &*ctx.app.db.conn()?, &id)?;
    let input: Heartbeat = ctx.json()?;
    let mut errors = Errors::new();
    let mut sets: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    if let Some(v) = &input.app_version {
        if !app_version_ok(v) {
            errors.push(
                "/app_version",
                "invalid_version",
                "Must be 1 to 32 characters of letters, digits and `.+_-`.",
            );
        }
        sets.push(("app_version", v.clone().into()));
    }
    match &input.current_ad_id {
        Some(Some(ad)) => {
            errors.id("/current_ad_id", ad, Kind::Ad);
            sets.push(("current_ad_id", ad.clone().into()));
        }
        Some(None) => sets.push(("current_ad_id", rusqlite::types::Value::Null)),
        None => {}
    }
    for (field, column, value, min) in [
        (
            "/storage_used_mb",
            "storage_used_mb",
            input.storage_used_mb,
            0,
        ),
        (
            "/storage_total_mb",
            "storage_total_mb",
            input.storage_total_mb,
            1,
        ),
        ("/uptime_seconds", "uptime_seconds", input.uptime_seconds, 0),
    ] {
        if let Some(v) = value {
            let max = if column == "uptime_seconds" {
                MAX_UPTIME_SECS
            } else {
                MAX_STORAGE_MB
            };
            errors.range(field, v, min, max);
            sets.push((column, v.into()));
        }
    }
    let reported = input.playback_errors.unwrap_or_default();
    if reported.len() > MAX_PLAYBACK_ERRORS {
        errors.push(
            "/playback_errors",
            "too_many",
            format!("At most {MAX_PLAYBACK_ERRORS} playback errors per heartbeat."),
        );
    }
    for (i, e) in reported.iter().enumerate() {
        if !error_code_ok(&e.code) {
            errors.push(
                &format!("/playback_errors/{i}/code"),
                "invalid_code",
                "Must be 1 to 64 characters of letters, digits and `._-`.",
            );
        }
        PLAYBACK_MESSAGE.check(
            &mut errors,
            &format!("/playback_errors/{i}/message"),
            &e.message,
        );
        if let Some(ad) = &e.ad_id {
            errors.id(&format!("/playback_errors/{i}/ad_id"), ad, Kind::Ad);
        }
    }
    errors.finish()?;

    let clock = Clock::of(ctx);
    let now = clock.now;
    ctx.app.db.write(|tx| {
        let company = authorized_owner(ctx, tx, &id)?.company;
        if let Some(Some(ad)) = &input.current_ad_id {
            let assigned = tx
                .prepare_cached("SELECT 1 FROM ad_assignments WHERE device_id = ?1 AND ad_id = ?2")?
                .exists([id.as_str(), ad])?;
            if !assigned {
                return Err(ApiError::Conflict(format!(
                    "`/current_ad_id`: ad `{ad}` is not assigned to this device; assign it first."
                )));
            }
        }
        for (i, e) in reported.iter().enumerate() {
            if let Some(ad) = &e.ad_id {
                let same_company = tx
                    .prepare_cached("SELECT 1 FROM ads WHERE id = ?1 AND company_id = ?2")?
                    .exists([ad, &company])?;
                if !same_company {
                    return Err(ApiError::NotFound(format!(
                        "`/playback_errors/{i}/ad_id`: no ad `{ad}` in the device's company."
                    )));
                }
            }
        }

        let mut assignments = vec![
            "last_heartbeat_at = ?2".to_string(),
            "updated_at = ?2".into(),
        ];
        assignments.extend(
            sets.iter()
                .enumerate()
                .map(|(i, (c, _))| format!("{c} = ?{}", i + 3)),
        );
        let sql = format!(
            "UPDATE devices SET {} WHERE id = ?1",
            assignments.join(", ")
        );
        let mut args: Vec<rusqlite::types::Value> = vec![id.to_string().into(), now.into()];
        args.extend(sets.iter().map(|(_, v)| v.clone()));
        tx.execute(&sql, rusqlite::params_from_iter(args))?;

        if !reported.is_empty() {
            let mut insert = tx.prepare_cached(
                "INSERT INTO playback_errors (id, device_id, ad_id, code, message, occurred_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for e in &reported {
                insert.execute(rusqlite::params![
                    PlaybackErrorId::generate(),
                    id,
                    e.ad_id,
                    e.code,
                    e.message.trim(),
                    now
                ])?;
            }
            tx.prepare_cached(
                "DELETE FROM playback_errors WHERE device_id = ?1 AND id NOT IN
                   (SELECT id FROM playback_errors WHERE device_id = ?1
                    ORDER BY occurred_at DESC, id DESC LIMIT ?2)",
            )?
            .execute(rusqlite::params![id, KEPT_PLAYBACK_ERRORS])?;
        }

        let diag = diagnostics(tx, &id, clock)?;
        crud::record(
            tx,
            &company,
            "device.heartbeat",
            "device",
            &id,
            &json!({
                "device_id": id,
                "last_seen": diag.last_seen,
                "app_version": diag.app_version,
                "current_ad_id": diag.current_ad.as_ref().map(|a| &a.id),
                "playback_errors_reported": reported.len(),
            }),
        )?;
        Ok(Response::ok(&diag))
    })
}
