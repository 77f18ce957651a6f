//! Ads: CRUD, linking to media and promotions, and assignment to devices.
//!
//! An ad, its media, its promotion and its devices always belong to one company: references in a
//! body are checked against the ad's company, and a reference that is not there (another company's
//! or nonexistent, indistinguishably) is a 404 whose detail names the field.
//!
//! The `version` (ETag) covers everything the ad shows, its screens (`device_ids`, `device_count`)
//! included: assigning or removing a screen, by any route or by deleting the screen, moves it
//! (triggers in `schema/V34__versions_cover_what_is_shown.sql`), so an `If-Match` or an MCP
//! preview taken before is stale.

mod ad;
mod ad_json;
mod assignment;
mod assignments;
mod batch;
mod fields;
mod list;
mod payloads;

use crate::auth::{Action, Area, Level};
use crate::http::router::{one_of_param, param, Change, Route, Tool};
use crate::ids::Kind;
use ad::{create, delete, get, update};
use assignments::{assign, unassign};
use fields::STATUS;
use list::list;
use serde_json::Value;

pub(crate) use ad::page_for_device;
pub use ad::Ad;
pub use ad_json::AdJson;
pub use fields::STATUSES;
pub use payloads::payloads;

const READ: Action = Action::Use(Area::Ads, Level::Read);
const WRITE: Action = Action::Use(Area::Ads, Level::Write);

/// The arguments of the assignment tools: the ad, then the screen.
const AD_AND_DEVICE: &[(&str, &str)] = &[
    ("ad_id", "The ad (`ad_…`)."),
    ("device_id", "The screen (`dev_…`) of the same company."),
];

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/ads", "listAds", READ, list)
            .tool(Tool::read(
                "list_ads",
                "List ads",
                &[],
                "List ads: status, headline, media, promotion, `on_air` (playing now) and `ends_at`; an ad also stops when its promotion ends.",
            ))
            .tag("ads")
            .summary("List ads, newest first. Filter by company, assigned device, status or promotion.")
            .describe("The ads of the visible companies, newest first. Filter by company, by the device they are assigned to, by status or by linked promotion.")
            .paged_by(Kind::Ad)
            .query(&[
                crate::routes::search::Q,
                param("company_id", Kind::Company.schema(), "Only ads of this company."),
                param("device_id", Kind::Device.schema(), "Only ads assigned to this device."),
                one_of_param("status", STATUS, "Only ads in this status."),
                param("promotion_id", Kind::Promotion.schema(), "Only ads linked to this promotion."),
            ])
            .ok("AdList"),
        Route::post("/ads", "createAd", WRITE, create)
            .tag("ads")
            .summary("Create an ad in a company, optionally with media and a promotion of the same company.")
            .tool(
                Tool::prepare(
                    "prepare_ad_creation",
                    "Prepare a new ad",
                    &[("company_id", "The company (`cmp_…`).")],
                    Change::Body(&["company_id", "name", "headline", "status", "media_id", "promotion_id", "duration_seconds", "starts_at", "ends_at"]),
                    "Prepare a new ad (a draft unless `status` says otherwise); put it on screens with prepare_ad_assignments. This executes NOTHING: it checks the ad as the write would and returns a preview and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
                )
                .reading("getCompany")
                .asking("Create an ad in {company}; it plays on no screen until it is assigned to one. Webhooks subscribed to ad.created are notified."),
            )
            .describe("Creates an ad (a draft unless `status` says otherwise), optionally with a media item and a promotion of the same company. Emits `ad.created`.")
            .etag()
            .body("AdCreate")
            .created("Ad"),
        Route::get("/ads/{id}", "getAd", READ, get)
            .tool(Tool::read(
                "get_ad",
                "Get ad",
                &[("ad_id", "The ad id (`ad_…`), as returned by list_ads.")],
                "One ad: name, headline, status, media, linked promotion, duration. Read it before preparing a change.",
            ))
            .tag("ads")
            .summary("Get one ad with the devices it is assigned to. Returns an ETag.")
            .describe("One ad with the devices it is assigned to, and its `ETag`.")
            .etag()
            .ok("Ad"),
        Route::patch("/ads/{id}", "updateAd", WRITE, update)
            .tool(Tool::prepare(
                "prepare_ad_change",
                "Prepare an ad change",
                &[("ad_id", "The ad (`ad_…`).")],
                Change::Fields(&["name", "headline", "status", "media_id", "promotion_id", "duration_seconds", "starts_at", "ends_at"]),
                "Prepare a change to an ad (`status`: `paused` pauses it, `active` resumes it). This executes NOTHING: it returns a preview (current state, proposed state, the differences) and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id. The id is single-use, bound to this API key and expires.",
            ).asking("Change the ad {target} of {company}; the screens that play it show the change. Webhooks subscribed to ad.updated are notified."))
            .tag("ads")
            .summary("Change an ad: name, headline, status, media, duration, or link/unlink a promotion (`promotion_id`, `null` to unlink). Honours If-Match.")
            .describe("Changes an ad; give only the fields to change. `promotion_id: null` unlinks its promotion. Emits `ad.updated`.")
            .etag()
            .body("AdUpdate")
            .ok("Ad"),
        Route::delete("/ads/{id}", "deleteAd", WRITE, delete)
            .tag("ads")
            .summary("Delete an ad and its device assignments. Honours If-Match.")
            .describe("Deletes an ad and its device assignments. Emits `ad.deleted`."),
        Route::post("/ads/{id}/devices", "assignAdToDevice", WRITE, assign)
            .tool(Tool::prepare(
                "prepare_ad_assignment",
                "Prepare assigning an ad to a screen",
                AD_AND_DEVICE,
                Change::Adds("device_ids", "device_id"),
                "Prepare putting an ad on a screen of its company, which then plays it. This executes NOTHING: it checks the assignment as the write would and returns a preview (the ad's `device_ids` now and after) and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id. One screen per call.",
            ).asking("Put the ad {target} of {company} on the screen {device_id}: the screen starts playing it. Webhooks subscribed to ad.assigned are notified."))
            .tag("ads")
            .summary("Assign the ad to a device of the same company. Idempotent: assigning again returns the existing assignment.")
            .describe("Puts the ad on a screen of the same company. Assigning it again returns the existing assignment (no duplicate, no second event). Emits `ad.assigned`.")
            .body("AdAssignmentCreate")
            .ok("AdAssignment"),
        Route::delete(
            "/ads/{id}/devices/{device_id}",
            "unassignAdFromDevice",
            WRITE,
            unassign,
        )
        .tool(Tool::prepare(
            "prepare_ad_unassignment",
            "Prepare removing an ad from a screen",
            AD_AND_DEVICE,
            Change::Removes("device_ids", "device_id"),
            "Prepare taking an ad off a screen, which stops playing it. This executes NOTHING: it returns a preview (the ad's `device_ids` now and after) and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
        ).asking("Take the ad {target} of {company} off the screen {device_id}: the screen stops playing it. Webhooks subscribed to ad.unassigned are notified."))
        .tag("ads")
        .summary("Remove the ad from a device. 404 when it is not assigned there.")
        .describe("Takes the ad off one screen; the ad and the device stay. Emits `ad.unassigned`."),
        Route::post("/ads/{id}/assignments", "changeAdAssignments", WRITE, batch::change)
            .tool(Tool::prepare(
                "prepare_ad_assignments",
                "Prepare putting an ad on (or off) many screens",
                &[("ad_id", "The ad (`ad_…`).")],
                Change::Batch {
                    fields: &["assign_device_ids", "unassign_device_ids"],
                    items: "devices",
                    key: "device_id",
                    flag: "assigned",
                },
                "Prepare putting an ad on and/or off up to 100 screens of its company, all or nothing. This executes NOTHING: it checks the change as the write would and returns a preview listing every screen and whether it changes, and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
            ).asking("Change which screens of {company} play the ad {target}, all or nothing. Webhooks subscribed to ad.assigned or ad.unassigned are notified for each screen that changes."))
            .tag("ads")
            .summary("Assign the ad to many screens and/or remove it from others, all or nothing (at most 100). Honours If-Match.")
            .describe("Puts the ad on every screen of `assign_device_ids` and takes it off every screen of `unassign_device_ids`, in one transaction: at most 100 screens in both lists together, each named once, all of the ad's company. A malformed, repeated or excess id is 422 and a screen that is not in the ad's company is 404, each naming the fields, and nothing is written. The answer lists every screen asked for with `changed` (false when it already was as asked, which emits nothing). Emits `ad.assigned` or `ad.unassigned` per screen that changes, as the one-screen routes do.")
            .conditional()
            .body("AdAssignmentBatchCreate")
            .ok("AdAssignmentBatch"),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::{named_body, named_response};
    let mut schemas = vec![
        named_response::<ad::Ad>(),
        named_body::<ad::AdCreate>(),
        named_body::<ad::AdUpdate>(),
        named_body::<assignments::AdAssignmentCreate>(),
        named_response::<assignment::Assignment<'static>>(),
    ];
    schemas.extend(batch::schemas());
    schemas
}
