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
mod report_keys;
mod report_rows;

use crate::auth::{Action, Area, Level};
use crate::http::router::{one_of_param, param, Change, Route, Tool};
use crate::ids::Kind;
use diagnostics::get_diagnostics;
pub(crate) use diagnostics::{record_playback_error, NewPlaybackError};
use fields::STATUS;
pub use fields::{ORIENTATIONS, PLATFORMS, STATUSES};
use handlers::{create, delete, get, list, list_ads, update};
use heartbeat::heartbeat;
pub use payloads::payloads;
use playbacks::SOURCE;
pub use presence::{heartbeat_arrived, heartbeats_arrived, DevicePresence, ONLINE};
use serde_json::Value;

const READ: Action = Action::Use(Area::Devices, Level::Read);
const WRITE: Action = Action::Use(Area::Devices, Level::Write);

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/devices", "listDevices", READ, list)
            .tool(Tool::read(
                "list_devices",
                "List devices",
                &[],
                "List screens (devices) with their connection status.",
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
                    &[("company_id", "The company (`cmp_…`).")],
                    Change::Body(&["company_id", "name", "location", "platform", "orientation", "resolution"]),
                    "Prepare registering a screen in a company; its plan limits how many. This executes NOTHING: it checks the screen as the write would and returns a preview and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
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
                "One screen: name, location, platform, orientation, resolution, connection status and the ad it plays.",
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
                "The ads assigned to a screen, with their status, headline and duration.",
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
            "Why a screen is offline or shows the wrong content: last heartbeat, app version, storage, uptime, recent playback errors.",
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
            "A screen's proof-of-play records: reported plays and the simulated fleet's hourly rows (one ad, one hour); `from`/`to` bound `started_at`.",
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
            "Plays and seconds per ad and per screen over `from`/`to` (default: the 7 days before now), for a company, an ad or all; ads that did not play show 0.",
        ))
        .tag("devices")
        .summary("Proof-of-play: plays and seconds per ad, per device and per day over a range (default: the last 7 days); CSV with `Accept: text/csv`.")
        .query(&[
            param("company_id", Kind::Company.schema(), "Only this company (default: every visible company)."),
            param("ad_id", Kind::Ad.schema(), "Only this ad (listed even with no plays)."),
            // Default (the tool and the operation say it): the 7 days before now.
            crate::routes::date_range::FROM,
            crate::routes::date_range::TO,
        ])
        .ok("ProofOfPlayReport")
        .produces("text/csv")
        // Reads every play of the range: on the blocking pool, never on an async worker.
        .blocking(),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::{named_body, named_response};
    let mut schemas = vec![
        named_response::<device::Device>(),
        named_body::<handlers::DeviceCreate>(),
        named_body::<handlers::DeviceUpdate>(),
        named_body::<heartbeat::Heartbeat>(),
        named_body::<playbacks::PlaybackCreate>(),
        named_response::<playbacks::Playback>(),
        named_response::<report::Report>(),
        named_response::<diagnostics::Diagnostics>(),
    ];
    schemas.extend(health::schemas());
    schemas
}
