//! Devices (screens): CRUD, the ads assigned to them, heartbeats and playback diagnostics.
//!
//! A device's `status` is derived, never stored: `online` when its last heartbeat is at most
//! `device_offline_after_secs` old, `offline` when older, `never_seen` without one. What was last
//! announced of it (`device.offline`, `device.online`) is stored apart, in `presence`.
//!
//! The `version` (and so the ETag) covers what API clients edit (name, location, platform,
//! orientation, resolution). Heartbeats change telemetry only and leave it alone, so a screen
//! reporting every few seconds never turns an operator's `If-Match` edit into a 412.

mod device;
pub mod device_json;
mod diagnostics;
mod fields;
mod handlers;
mod health;
mod heartbeat;
mod payloads;
mod playbacks;
mod presence;
mod report;

use crate::auth::{Action, Area, Level};
use crate::http::router::{one_of_param, param, Change, Route, Tool};
use crate::ids::Kind;
use crate::validate::{described, id_schema, OneOf};
use diagnostics::get_diagnostics;
pub(crate) use fields::KEPT_PLAYBACK_ERRORS;
use fields::{
    LOCATION, MAX_PLAYBACK_ERRORS, MAX_STORAGE_MB, MAX_UPTIME_SECS, NAME, ORIENTATION, PLATFORM,
    PLAYBACK_MESSAGE, STATUS,
};
pub use fields::{ORIENTATIONS, PLATFORMS, STATUSES};
use handlers::{create, delete, get, list, list_ads, update};
use heartbeat::heartbeat;
pub use payloads::payloads;
use playbacks::{MAX_PLAY_SECS, SOURCES};
pub use presence::{heartbeat_arrived, heartbeats_arrived, DevicePresence, ONLINE};
use serde_json::{json, Value};

const READ: Action = Action::Use(Area::Devices, Level::Read);
const WRITE: Action = Action::Use(Area::Devices, Level::Write);

const SOURCE: OneOf = OneOf(SOURCES);

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/devices", "listDevices", READ, list)
            .tool(Tool::read(
                "list_devices",
                "List devices",
                &[],
                "List screens (devices), newest first, optionally filtered by company and connection status (online, offline, never seen).",
            ))
            .tag("devices")
            .summary("List devices (screens), newest first. Filter by company and by derived status.")
            .describe("The screens of the visible companies, newest first, with each one's derived connection status (`online`, `offline` after the offline threshold, `never_seen`), the age of its last heartbeat and the ad it reports playing: what a fleet dashboard draws, in one request per page. Filter with `company_id` and `status` to find screens that need attention.")
            .paged_by(Kind::Device)
            .query(&[
                crate::routes::search::Q,
                param("company_id", Kind::Company.schema(), "Only devices of this company."),
                one_of_param(
                    "status",
                    STATUS,
                    "`online`: heartbeat within the offline threshold; `offline`: older; `never_seen`: none yet.",
                ),
            ])
            .ok("DeviceList"),
        Route::post("/devices", "createDevice", WRITE, create)
            .tag("devices")
            .summary("Register a device in a company. Refused with 409 when the company's plan allows no more devices.")
            .tool(
                Tool::prepare(
                    "prepare_device_creation",
                    "Prepare registering a screen",
                    &[("company_id", "The company of the screen (`cmp_…`).")],
                    Change::Body(&["company_id", "name", "location", "platform", "orientation", "resolution"]),
                    "Prepare registering a screen (device) in a company; its plan limits how many. This executes NOTHING: it checks the screen as the write would and returns a preview and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
                )
                .reading("getCompany")
                .asking("Register a screen in {company}; it counts toward the plan's device limit and shows as never seen until it sends a heartbeat. Webhooks subscribed to device.created are notified."),
            )
            .describe("Registers a screen in a company. The plan's device limit applies (409 when reached). Emits `device.created`; the answer carries the device's `ETag`.")
            .etag()
            .body("DeviceCreate")
            .created("Device"),
        // Before `/devices/{id}`: the first matching route wins.
        health::route(),
        Route::get("/devices/{id}", "getDevice", READ, get)
            .tool(Tool::read(
                "get_device",
                "Get device",
                &[("device_id", "The device id (`dev_…`), as returned by list_devices.")],
                "Get one screen: name, location, platform, orientation, resolution, connection status and the ad it is playing.",
            ))
            .tag("devices")
            .summary("Get one device, with its derived status. Returns an ETag.")
            .describe("One screen with its derived status, last heartbeat, current ad and number of assigned ads. The `ETag` is the version of what API clients edit; heartbeats do not change it.")
            .etag()
            .ok("Device"),
        Route::patch("/devices/{id}", "updateDevice", WRITE, update)
            .tag("devices")
            .summary("Change a device's name, location, platform, orientation or resolution. Honours If-Match.")
            .describe("Changes what an operator edits (name, location, platform, orientation, resolution); give only the fields to change. Emits `device.updated`.")
            .etag()
            .body("DeviceUpdate")
            .ok("Device"),
        Route::delete("/devices/{id}", "deleteDevice", WRITE, delete)
            .tag("devices")
            .summary("Delete a device and its ad assignments. Honours If-Match.")
            .describe("Deletes a screen and its ad assignments (the ads themselves stay). Emits `device.deleted`."),
        Route::get("/devices/{id}/ads", "listDeviceAds", READ, list_ads)
            .tool(Tool::read(
                "list_device_ads",
                "List ads on a device",
                &[("device_id", "The device id (`dev_…`), as returned by list_devices.")],
                "List the ads assigned to one screen (device), newest first, with each ad's status, headline and duration.",
            ))
            .tag("devices")
            .summary("List the ads assigned to a device, newest first.")
            .describe("The ads assigned to one screen, newest first: what it will play.")
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
        .describe("Why a screen is not showing what you expect: heartbeat age and status against the offline threshold, the ad it reports playing, its recent playback errors, app version, storage and uptime.")
        .ok("DeviceDiagnostics"),
        Route::post(
            "/devices/{id}/heartbeat",
            "recordDeviceHeartbeat",
            WRITE,
            heartbeat,
        )
        .tag("devices")
        .summary("Record a heartbeat from the device (telemetry and playback errors); returns its diagnostics.")
        .describe("What a screen's player sends every few seconds: app version, current ad, storage, uptime and any playback errors since the last one. Marks the device online; does not change its `ETag`. Emits `device.heartbeat`; returns the device's diagnostics.")
        .body("DeviceHeartbeat")
        .ok("DeviceDiagnostics"),
        Route::post(
            "/devices/{id}/playbacks",
            "recordDevicePlayback",
            WRITE,
            playbacks::create,
        )
        .describe("Record one play a real player made (proof-of-play): the ad (assigned to this device, same company), when it started (not after the sandbox clock) and for how long. Needs `devices:write`. Emits `device.playback_recorded`. Errors: 404 for a device or ad the key cannot see, 409 `ad_not_assigned`, 409 `ad_not_on_air` (the ad was not on air when the play started), 422 for bad times (`in_future`; `before_ad`: before the ad was created).")
        .tag("devices")
        .summary("Record a play reported by the device's player: an ad assigned to it, when it started (not after now), how long it played.")
        .body("PlaybackCreate")
        .created("Playback"),
        Route::get(
            "/devices/{id}/playbacks",
            "listDevicePlaybacks",
            READ,
            playbacks::list,
        )
        .describe("The proof-of-play rows of one device, newest first by cursor: plays reported by a player (`source: player`, one play each) and hourly rows of the simulated fleet (`source: simulator`, `plays` in that hour). Filters `ad_id`, `from`/`to` (on `started_at`), `source`. Needs `devices:read`.")
        .tool(Tool::read(
            "list_device_playbacks",
            "List plays of a device",
            &[("device_id", "The device id (`dev_…`), as returned by list_devices.")],
            "Proof-of-play records of one screen, newest first: reported plays and the simulated fleet's hourly rows (one ad, one hour). Filter by ad, time (`from`/`to` on started_at) or source.",
        ))
        .tag("devices")
        .summary("List a device's proof-of-play records, newest first. Filter by ad, started_at range and source.")
        .paged_by(Kind::Playback)
        .query(&[
            param("ad_id", Kind::Ad.schema(), "Only plays of this ad."),
            crate::routes::date_range::FROM,
            crate::routes::date_range::TO,
            one_of_param("source", SOURCE, "`player`: reported with POST; `simulator`: the simulated fleet's hourly rows."),
        ])
        .ok("PlaybackList"),
        Route::get(
            "/reports/proof-of-play",
            "getProofOfPlayReport",
            READ,
            report::proof_of_play,
        )
        .describe("Plays and seconds played per ad, per device and per UTC day (`days`, every day the range touches) over `[from, to)` (default: the 7 days before now; at most 366 days, else 422 `range_too_long`), for one company or every visible one, whether a player reported them or the simulated fleet played them. With `Accept: text/csv` the answer is a CSV download instead: one line per day, screen and ad that played (`date,company_id,device_id,device_name,ad_id,ad_name,plays,seconds`). Needs `devices:read`.")
        .tool(Tool::read(
            "get_proof_of_play_report",
            "Proof-of-play report",
            &[],
            "Sum plays and seconds per ad and per screen over a time range (default: the week before now), for one company, one ad or all. Ads that did not play are listed with 0.",
        ))
        .tag("devices")
        .summary("Proof-of-play: plays and seconds per ad, per device and per day over a range (default: the last 7 days); CSV with `Accept: text/csv`.")
        .query(&[
            param("company_id", Kind::Company.schema(), "Only this company (default: every visible company)."),
            param("ad_id", Kind::Ad.schema(), "Only this ad (listed even with no plays)."),
            param("from", crate::routes::date_range::SCHEMA, "Start of the range: RFC 3339 (inclusive) or a date (`2026-11-01`, start of that day, UTC); default `to` minus 7 days."),
            param("to", crate::routes::date_range::SCHEMA, "End of the range: RFC 3339 (exclusive) or a date (`2026-11-30`: includes that whole day, UTC); default now."),
        ])
        .ok("ProofOfPlayReport")
        .produces("text/csv"),
    ]
}

const RESOLUTION_PATTERN: &str = "^[1-9][0-9]{1,4}x[1-9][0-9]{1,4}$";

pub fn schemas() -> Vec<(&'static str, Value)> {
    let nullable_str = json!({"type":["string","null"]});
    let ts = json!({"type":"string","format":"date-time"});
    let platform = PLATFORM.schema();
    let orientation = ORIENTATION.schema();
    let resolution = json!({"type":"string","pattern":RESOLUTION_PATTERN,"description":"WIDTHxHEIGHT in pixels, e.g. 1920x1080."});
    let status = STATUS.schema();
    let count = json!({"type":"integer","minimum":0});
    let playback = json!({"type":"object","additionalProperties":false,
        "required":["id","object","company_id","device_id","ad_id","source","started_at","duration_seconds","plays","created_at"],
        "properties":{"id":{"type":"string","pattern":"^pb_"},"object":{"const":"playback"},
            "company_id":{"type":"string"},"device_id":{"type":"string"},"ad_id":{"type":"string"},
            "source":SOURCE.schema(),
            "started_at":{"type":"string","format":"date-time","description":"A reported play's start; a simulated row's clock hour."},
            "duration_seconds":{"type":"integer","minimum":0,"description":"Seconds played (a simulated row: in its hour)."},
            "plays":{"type":"integer","minimum":0,"description":"1 for a reported play; the plays started in the hour for a simulated row."},
            "created_at":ts}});
    let mut schemas = vec![
        (
            "Device",
            json!({"type":"object","additionalProperties":false,
                "required":["id","object","company_id","name","location","platform","orientation","resolution",
                    "status","last_heartbeat_at","seconds_since_heartbeat","current_ad_id","app_version","assigned_ad_count","created_at","updated_at"],
                "properties":{"id":{"type":"string","pattern":"^dev_"},"object":{"const":"device"},
                    "company_id":{"type":"string"},"name":{"type":"string"},"location":{"type":"string"},
                    "platform":platform,"orientation":orientation,"resolution":{"type":"string"},
                    "status":status,"last_heartbeat_at":{"type":["string","null"],"format":"date-time"},
                    "seconds_since_heartbeat":{"type":["integer","null"],"minimum":0},
                    "current_ad_id":nullable_str,"app_version":nullable_str,
                    "assigned_ad_count":{"type":"integer","minimum":0},
                    "created_at":ts,"updated_at":ts}}),
        ),
        (
            "DeviceCreate",
            json!({"type":"object","additionalProperties":false,"required":["company_id","name","platform"],
                "properties":{"company_id":id_schema(Kind::Company),
                    "name":described(NAME.schema(), "What people call the screen."),
                    "location":described(LOCATION.schema(), "Where it hangs (free text)."),
                    "platform":described(platform.clone(), "The player software it runs."),
                    "orientation":described(ORIENTATION.schema_default("landscape"), "How the screen is mounted."),
                    "resolution":{"type":"string","pattern":RESOLUTION_PATTERN,"default":"1920x1080",
                        "description":"`WIDTHxHEIGHT` in pixels."}}}),
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
                        "description":"The ad playing now; it must be assigned to this device and on air (`on_air`)."},
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
            "PlaybackCreate",
            json!({"type":"object","additionalProperties":false,
                "required":["ad_id","started_at","duration_seconds"],
                "properties":{"ad_id":described(id_schema(Kind::Ad), "An ad assigned to this device."),
                    "started_at":{"type":"string","format":"date-time","description":"When the play started; not after the sandbox clock's now."},
                    "duration_seconds":{"type":"integer","minimum":1,"maximum":MAX_PLAY_SECS}}}),
        ),
        ("Playback", playback),
        (
            "ProofOfPlayReport",
            json!({"type":"object","additionalProperties":false,
                "required":["object","company_id","from","to","plays","seconds","days","ads","devices"],
                "properties":{"object":{"const":"proof_of_play_report"},"company_id":nullable_str,
                    "from":ts,"to":ts,"plays":count,"seconds":count,
                    "days":{"type":"array","description":"Every UTC day the range touches, oldest first (a day's plays count where they started).",
                        "items":{"type":"object","additionalProperties":false,"required":["date","plays","seconds"],
                        "properties":{"date":{"type":"string","format":"date"},"plays":count,"seconds":count}}},
                    "ads":{"type":"array","items":{"type":"object","additionalProperties":false,
                        "required":["ad_id","name","company_id","status","plays","seconds","devices"],
                        "properties":{"ad_id":{"type":"string"},"name":{"type":"string"},"company_id":{"type":"string"},
                            "status":{"type":"string","description":"The ad's status now (`draft`, `active`, `paused`, `archived`): only an active ad is expected to play."},
                            "plays":count,"seconds":count,"devices":count}}},
                    "devices":{"type":"array","items":{"type":"object","additionalProperties":false,
                        "required":["device_id","name","company_id","plays","seconds","ads"],
                        "properties":{"device_id":{"type":"string"},"name":{"type":"string"},"company_id":{"type":"string"},
                            "plays":count,"seconds":count,"ads":count}}}}}),
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
    ];
    schemas.extend(health::schemas());
    schemas
}
