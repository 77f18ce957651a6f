//! Ads: CRUD, linking to media and promotions, and assignment to devices.
//!
//! An ad, its media, its promotion and its devices always belong to one company: references in a
//! body are checked against the ad's company, and a reference that is not there (another company's
//! or nonexistent, indistinguishably) is a 404 whose detail names the field.
//!
//! The `version` (ETag) covers the ad's own fields; assignments are a relation of their own and do
//! not bump it, so assigning screens never invalidates an editor's `If-Match`.

use super::crud::{self, Time};
use super::present;
use crate::auth::{Action, Area, Level};
use crate::http::ctx::PageRequest;
use crate::http::router::{one_of_param, param, Change, Route, Tool};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{AdId, DeviceId, Kind, PromotionId, TypedId};
use crate::validate::{id_schema, Errors, OneOf, Text};
use rusqlite::OptionalExtension;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

const READ: Action = Action::Use(Area::Ads, Level::Read);
const WRITE: Action = Action::Use(Area::Ads, Level::Write);

pub const STATUSES: &[&str] = &["draft", "active", "paused", "archived"];
const STATUS: OneOf = OneOf(STATUSES);
const NAME: Text = Text::new(1, 100);
const HEADLINE: Text = Text::new(1, 200);
/// `device_ids` in an ad lists at most this many; `device_count` has the total.
const MAX_DEVICE_IDS: i64 = 100;
const DEFAULT_DURATION_SECS: i64 = 15;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/ads", "listAds", READ, list)
            .tool(Tool::read(
                "list_ads",
                "List ads",
                &[],
                "List ads, newest first, optionally filtered by company, device, status (draft, active, paused, archived) or promotion. Paged with `cursor`.",
            ))
            .tag("ads")
            .summary("List ads, newest first. Filter by company, assigned device, status or promotion.")
            .paged_by(Kind::Ad)
            .query(&[
                param("company_id", Kind::Company.schema(), "Only ads of this company."),
                param("device_id", Kind::Device.schema(), "Only ads assigned to this device."),
                one_of_param("status", STATUS, "Only ads in this status."),
                param("promotion_id", Kind::Promotion.schema(), "Only ads linked to this promotion."),
            ])
            .ok("AdList"),
        Route::post("/ads", "createAd", WRITE, create)
            .tag("ads")
            .summary("Create an ad in a company, optionally with media and a promotion of the same company.")
            .body("AdCreate")
            .created("Ad"),
        Route::get("/ads/{id}", "getAd", READ, get)
            .tool(Tool::read(
                "get_ad",
                "Get ad",
                &[("ad_id", "The ad id (`ad_…`), as returned by list_ads.")],
                "Get one ad: name, headline, status, media, linked promotion and duration. Use it before preparing a change to an ad.",
            ))
            .tag("ads")
            .summary("Get one ad with the devices it is assigned to. Returns an ETag.")
            .ok("Ad"),
        Route::patch("/ads/{id}", "updateAd", WRITE, update)
            .tool(Tool::prepare(
                "prepare_ad_change",
                "Prepare an ad change",
                &[("ad_id", "The ad to change (`ad_…`), as returned by list_ads.")],
                Change::Fields(&["name", "headline", "status", "media_id", "promotion_id", "duration_seconds"]),
                "Prepare a change to an ad (name, headline, status, media, linked promotion or duration). This executes NOTHING: it returns a preview (current state, proposed state, the differences) and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id. The id is single-use, bound to this API key and expires.",
            ))
            .tag("ads")
            .summary("Change an ad: name, headline, status, media, duration, or link/unlink a promotion (`promotion_id`, `null` to unlink). Honours If-Match.")
            .body("AdUpdate")
            .ok("Ad"),
        Route::delete("/ads/{id}", "deleteAd", WRITE, delete)
            .tag("ads")
            .summary("Delete an ad and its device assignments. Honours If-Match."),
        Route::post("/ads/{id}/devices", "assignAdToDevice", WRITE, assign)
            .tag("ads")
            .summary("Assign the ad to a device of the same company. Idempotent: assigning again returns the existing assignment.")
            .body("AdAssignmentCreate")
            .ok("AdAssignment"),
        Route::delete(
            "/ads/{id}/devices/{device_id}",
            "unassignAdFromDevice",
            WRITE,
            unassign,
        )
        .tag("ads")
        .summary("Remove the ad from a device. 404 when it is not assigned there."),
    ]
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    let nullable_str = json!({"type":["string","null"]});
    let ts = json!({"type":"string","format":"date-time"});
    let status = STATUS.schema();
    let duration = json!({"type":"integer","minimum":1,"maximum":3600});
    let media_ref = json!({"anyOf":[id_schema(Kind::Media),{"type":"null"}],
        "description":"Media of the same company, or null for none."});
    let promotion_ref = json!({"anyOf":[id_schema(Kind::Promotion),{"type":"null"}],
        "description":"Promotion of the same company to link, or null to unlink."});
    vec![
        (
            "Ad",
            json!({"type":"object","additionalProperties":false,
                "required":["id","object","company_id","name","headline","status","media_id","promotion_id",
                    "duration_seconds","device_ids","device_count","created_at","updated_at"],
                "properties":{"id":{"type":"string","pattern":"^ad_"},"object":{"const":"ad"},
                    "company_id":{"type":"string"},"name":{"type":"string"},"headline":{"type":"string"},
                    "status":status,"media_id":nullable_str,"promotion_id":nullable_str,
                    "duration_seconds":duration,
                    "device_ids":{"type":"array","maxItems":MAX_DEVICE_IDS,"items":{"type":"string"},
                        "description":"Devices the ad is assigned to (at most 100, ascending; see device_count)."},
                    "device_count":{"type":"integer","minimum":0},
                    "created_at":ts,"updated_at":ts}}),
        ),
        (
            "AdCreate",
            json!({"type":"object","additionalProperties":false,"required":["company_id","name","headline"],
                "properties":{"company_id":id_schema(Kind::Company),"name":NAME.schema(),
                    "headline":HEADLINE.schema(),
                    "status":STATUS.schema_default("draft"),
                    "media_id":media_ref,"promotion_id":promotion_ref,
                    "duration_seconds":{"type":"integer","minimum":1,"maximum":3600,"default":DEFAULT_DURATION_SECS}}}),
        ),
        (
            "AdUpdate",
            json!({"type":"object","additionalProperties":false,"minProperties":1,
                "properties":{"name":NAME.schema(),"headline":HEADLINE.schema(),"status":status,
                    "media_id":media_ref,"promotion_id":promotion_ref,"duration_seconds":duration}}),
        ),
        (
            "AdAssignmentCreate",
            json!({"type":"object","additionalProperties":false,"required":["device_id"],
                "properties":{"device_id":id_schema(Kind::Device)}}),
        ),
        (
            "AdAssignment",
            json!({"type":"object","additionalProperties":false,
                "required":["object","ad_id","device_id","company_id","assigned_at","newly_assigned"],
                "properties":{"object":{"const":"ad_assignment"},"ad_id":{"type":"string"},
                    "device_id":{"type":"string"},"company_id":{"type":"string"},"assigned_at":ts,
                    "newly_assigned":{"type":"boolean","description":"False when the ad was already assigned to the device."}}}),
        ),
    ]
}

/// An ad as the API returns it. Field order is the order of the JSON members.
#[derive(Serialize)]
pub struct Ad {
    id: String,
    object: &'static str,
    company_id: String,
    name: String,
    headline: String,
    status: String,
    media_id: Option<String>,
    promotion_id: Option<String>,
    duration_seconds: i64,
    device_ids: Vec<String>,
    device_count: i64,
    created_at: Time,
    updated_at: Time,
    /// The ETag's version; not a member of the body.
    #[serde(skip)]
    version: i64,
}

const AD_COLUMNS: &str = "a.id, a.company_id, a.name, a.headline, a.status, a.media_id,
        a.promotion_id, a.duration_seconds, a.created_at, a.updated_at, a.version,
        (SELECT count(*) FROM ad_assignments x WHERE x.ad_id = a.id) AS device_count,
        (SELECT group_concat(y.device_id) FROM
            (SELECT device_id FROM ad_assignments WHERE ad_id = a.id ORDER BY device_id LIMIT 100) y)
            AS device_ids";

impl Ad {
    /// Reads a row of [`AD_COLUMNS`] by column name.
    fn from_row(r: &crud::Named<'_, '_>) -> rusqlite::Result<Ad> {
        let mut device_ids: Vec<String> = r
            .get::<Option<String>>("device_ids")?
            .map(|s| s.split(',').map(String::from).collect())
            .unwrap_or_default();
        // group_concat keeps no guaranteed order.
        device_ids.sort();
        Ok(Ad {
            id: r.get("id")?,
            object: "ad",
            company_id: r.get("company_id")?,
            name: r.get("name")?,
            headline: r.get("headline")?,
            status: r.get("status")?,
            media_id: r.get("media_id")?,
            promotion_id: r.get("promotion_id")?,
            duration_seconds: r.get("duration_seconds")?,
            device_ids,
            device_count: r.get("device_count")?,
            created_at: Time(r.get("created_at")?),
            updated_at: Time(r.get("updated_at")?),
            version: r.get("version")?,
        })
    }
}

impl crate::http::response::Listed for Ad {
    fn list_key(&self) -> &str {
        &self.id
    }
}

/// A page of the ads assigned to `device_id`, walked through the assignment key (device, ad) so
/// that the keyset stays on an index.
pub(crate) fn page_for_device(
    conn: &rusqlite::Connection,
    device_id: &str,
    companies: &[String],
    filters: &[(&str, rusqlite::types::Value)],
    page: &PageRequest,
) -> Result<Vec<Ad>, ApiError> {
    let mut all: Vec<(&str, rusqlite::types::Value)> =
        vec![("j.device_id = ?", device_id.to_string().into())];
    all.extend(filters.iter().cloned());
    crate::routes::fetch_page(
        conn,
        &format!("SELECT {AD_COLUMNS} FROM ad_assignments j JOIN ads a ON a.id = j.ad_id"),
        "a.company_id",
        "j.ad_id",
        companies,
        &all,
        page,
        Ad::from_row,
    )
}

fn load(conn: &rusqlite::Connection, id: &AdId) -> Result<Ad, ApiError> {
    crud::load(
        conn,
        &format!("SELECT {AD_COLUMNS} FROM ads a WHERE a.id = ?1"),
        id,
        Ad::from_row,
    )
}

/// The owner of a visible ad; missing or invisible is 404.
fn authorized_owner(
    ctx: &Ctx<'_>,
    conn: &rusqlite::Connection,
    id: &AdId,
) -> Result<crud::Owner, ApiError> {
    crud::authorized_owner(ctx, conn, "ads", id)
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let companies = ctx.list_companies()?;
    let status = ctx.query_enum("status", STATUSES)?;
    let promotion = ctx.query_id("promotion_id", Kind::Promotion)?;
    let device = ctx
        .query_id("device_id", Kind::Device)?
        .and_then(|d| DeviceId::parse(&d));
    let mut filters: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    if let Some(s) = status {
        filters.push(("a.status = ?", s.into()));
    }
    let conn = ctx.app.db.conn()?;
    if let Some(p) = promotion.and_then(|p| PromotionId::parse(&p)) {
        // Like the device filter: another company's promotion is a 404, not an empty list.
        crud::authorized_row(
            ctx,
            &conn,
            "SELECT company_id FROM promotions WHERE id = ?1",
            &p,
            |_| Ok(()),
        )?;
        filters.push(("a.promotion_id = ?", p.into_string().into()));
    }
    let rows = match device {
        Some(device) => {
            crud::authorized_owner(ctx, &conn, "devices", &device)?;
            page_for_device(&conn, &device, &companies, &filters, &page)?
        }
        None => crate::routes::fetch_page(
            &conn,
            &format!("SELECT {AD_COLUMNS} FROM ads a"),
            "a.company_id",
            "a.id",
            &companies,
            &filters,
            &page,
            Ad::from_row,
        )?,
    };
    Ok(Response::page(rows, &page))
}

/// Checks that media and promotion references belong to `company`. A reference outside it is a
/// 404 like any invisible object: the body cannot tell another company's id from a missing one.
fn check_references(
    tx: &rusqlite::Connection,
    company: &str,
    media: Option<&str>,
    promotion: Option<&str>,
) -> Result<(), ApiError> {
    if let Some(m) = media {
        let ok = tx
            .prepare_cached("SELECT 1 FROM media WHERE id = ?1 AND company_id = ?2")?
            .exists([m, company])?;
        if !ok {
            return Err(ApiError::NotFound(format!(
                "`/media_id`: no media `{m}` in the ad's company."
            )));
        }
    }
    if let Some(p) = promotion {
        let ok = tx
            .prepare_cached("SELECT 1 FROM promotions WHERE id = ?1 AND company_id = ?2")?
            .exists([p, company])?;
        if !ok {
            return Err(ApiError::NotFound(format!(
                "`/promotion_id`: no promotion `{p}` in the ad's company."
            )));
        }
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AdCreate {
    company_id: String,
    name: String,
    headline: String,
    #[serde(default, deserialize_with = "present")]
    status: Option<String>,
    #[serde(default)]
    media_id: Option<String>,
    #[serde(default)]
    promotion_id: Option<String>,
    #[serde(default, deserialize_with = "present")]
    duration_seconds: Option<i64>,
}

fn create(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: AdCreate = ctx.json()?;
    let status = input.status.unwrap_or_else(|| "draft".into());
    let duration = input.duration_seconds.unwrap_or(DEFAULT_DURATION_SECS);
    let mut errors = Errors::new();
    errors.id("/company_id", &input.company_id, Kind::Company);
    NAME.check(&mut errors, "/name", &input.name);
    HEADLINE.check(&mut errors, "/headline", &input.headline);
    STATUS.check(&mut errors, "/status", &status);
    if let Some(m) = &input.media_id {
        errors.id("/media_id", m, Kind::Media);
    }
    if let Some(p) = &input.promotion_id {
        errors.id("/promotion_id", p, Kind::Promotion);
    }
    errors.range("/duration_seconds", duration, 1, 3600);
    errors.finish()?;
    let company = input.company_id;
    ctx.authorize_company(&company, "company", &company)?;

    let now = crate::time::now();
    let id = AdId::generate();
    ctx.app.db.write(|tx| {
        check_references(
            tx,
            &company,
            input.media_id.as_deref(),
            input.promotion_id.as_deref(),
        )?;
        tx.prepare_cached(
            "INSERT INTO ads (id, company_id, name, status, headline, media_id, promotion_id,
                              duration_seconds, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)",
        )?
        .execute(rusqlite::params![
            id,
            company,
            input.name.trim(),
            status,
            input.headline.trim(),
            input.media_id,
            input.promotion_id,
            duration,
            now
        ])?;
        let ad = load(tx, &id)?;
        crud::record(tx, &company, "ad.created", "ad", &id, &ad)?;
        Ok(Response::created(&ad)
            .with_etag(ad.version)
            .with_header("location", &format!("/ads/{id}")))
    })
}

fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: AdId = ctx.path()?;
    let conn = ctx.app.db.conn()?;
    authorized_owner(ctx, &conn, &id)?;
    let ad = load(&conn, &id)?;
    Ok(Response::ok(&ad).with_etag(ad.version))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AdUpdate {
    #[serde(default, deserialize_with = "present")]
    name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    headline: Option<String>,
    #[serde(default, deserialize_with = "present")]
    status: Option<String>,
    #[serde(default, deserialize_with = "crate::routes::nullable")]
    media_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::routes::nullable")]
    promotion_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    duration_seconds: Option<i64>,
}

fn update(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: AdId = ctx.path()?;
    // Visibility before the body: validating first would tell another company's id exists.
    authorized_owner(ctx, &*ctx.app.db.conn()?, &id)?;
    let input: AdUpdate = ctx.json()?;
    let mut errors = Errors::new();
    let mut sets: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    if let Some(v) = &input.name {
        NAME.check(&mut errors, "/name", v);
        sets.push(("name", v.trim().to_string().into()));
    }
    if let Some(v) = &input.headline {
        HEADLINE.check(&mut errors, "/headline", v);
        sets.push(("headline", v.trim().to_string().into()));
    }
    if let Some(v) = &input.status {
        STATUS.check(&mut errors, "/status", v);
        sets.push(("status", v.clone().into()));
    }
    for (field, column, value, kind) in [
        ("/media_id", "media_id", &input.media_id, Kind::Media),
        (
            "/promotion_id",
            "promotion_id",
            &input.promotion_id,
            Kind::Promotion,
        ),
    ] {
        match value {
            Some(Some(v)) => {
                errors.id(field, v, kind);
                sets.push((column, v.clone().into()));
            }
            Some(None) => sets.push((column, rusqlite::types::Value::Null)),
            None => {}
        }
    }
    if let Some(v) = input.duration_seconds {
        errors.range("/duration_seconds", v, 1, 3600);
        sets.push(("duration_seconds", v.into()));
    }
    errors.require_some(!sets.is_empty());
    errors.finish()?;

    let now = crate::time::now();
    ctx.app.db.write(|tx| {
        let owner = authorized_owner(ctx, tx, &id)?;
        ctx.check_if_match(owner.version)?;
        check_references(
            tx,
            &owner.company,
            input.media_id.as_ref().and_then(|m| m.as_deref()),
            input.promotion_id.as_ref().and_then(|p| p.as_deref()),
        )?;
        crate::routes::update_versioned(tx, "ads", "id", &id, now, &sets)?;
        let ad = load(tx, &id)?;
        crud::record(tx, &owner.company, "ad.updated", "ad", &id, &ad)?;
        Ok(Response::ok(&ad).with_etag(ad.version))
    })
}

fn delete(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    crud::delete_versioned::<AdId>(ctx, "ads", "ad")
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AdAssignmentCreate {
    device_id: String,
}

/// An ad's assignment to a device. Field order is the order of the JSON members.
#[derive(Serialize)]
struct Assignment<'a> {
    object: &'static str,
    ad_id: &'a str,
    device_id: &'a str,
    company_id: &'a str,
    assigned_at: Time,
    newly_assigned: bool,
}

fn assignment<'a>(
    ad: &'a str,
    device: &'a str,
    company: &'a str,
    at: i64,
    newly: bool,
) -> Assignment<'a> {
    Assignment {
        object: "ad_assignment",
        ad_id: ad,
        device_id: device,
        company_id: company,
        assigned_at: Time(at),
        newly_assigned: newly,
    }
}

fn assign(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: AdId = ctx.path()?;
    // Visibility before the body: validating first would tell another company's id exists.
    authorized_owner(ctx, &*ctx.app.db.conn()?, &id)?;
    let input: AdAssignmentCreate = ctx.json()?;
    let mut errors = Errors::new();
    errors.id("/device_id", &input.device_id, Kind::Device);
    errors.finish()?;
    let device = input.device_id;

    let now = crate::time::now();
    ctx.app.db.write(|tx| {
        let (company, status): (String, String) = crud::authorized_row(
            ctx,
            tx,
            "SELECT company_id, status FROM ads WHERE id = ?1",
            &id,
            |r| r.get(1),
        )?;
        let same_company = tx
            .prepare_cached("SELECT 1 FROM devices WHERE id = ?1 AND company_id = ?2")?
            .exists([device.as_str(), company.as_str()])?;
        if !same_company {
            return Err(ApiError::NotFound(format!(
                "`/device_id`: no device `{device}` in the ad's company."
            )));
        }
        let existing: Option<i64> = tx
            .prepare_cached(
                "SELECT assigned_at FROM ad_assignments WHERE device_id = ?1 AND ad_id = ?2",
            )?
            .query_row([device.as_str(), id.as_str()], |r| r.get(0))
            .optional()?;
        if let Some(at) = existing {
            return Ok(Response::ok(&assignment(&id, &device, &company, at, false)));
        }
        if status == "archived" {
            return Err(ApiError::Conflict(
                "An archived ad cannot be assigned to devices; change its status first.".into(),
            ));
        }
        tx.prepare_cached(
            "INSERT INTO ad_assignments (device_id, ad_id, assigned_at) VALUES (?1, ?2, ?3)",
        )?
        .execute(rusqlite::params![device, id, now])?;
        let assigned = assignment(&id, &device, &company, now, true);
        crud::record(tx, &company, "ad.assigned", "ad", &id, &assigned)?;
        Ok(Response::ok(&assigned))
    })
}

fn unassign(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: AdId = ctx.path()?;
    let device = ctx.param("device_id").to_string();
    let not_assigned = || {
        ApiError::NotFound(format!(
            "The ad `{id}` is not assigned to a device with id `{}`.",
            device.chars().take(40).collect::<String>()
        ))
    };
    if !crate::ids::is_valid(Kind::Device, &device) {
        return Err(ApiError::not_found("device", &device));
    }
    ctx.app.db.write(|tx| {
        let crud::Owner { company, version } = authorized_owner(ctx, tx, &id)?;
        ctx.check_if_match(version)?;
        let removed = tx
            .prepare_cached("DELETE FROM ad_assignments WHERE device_id = ?1 AND ad_id = ?2")?
            .execute([device.as_str(), id.as_str()])?;
        if removed == 0 {
            return Err(not_assigned());
        }
        // A device only reports ads assigned to it as playing; keep that true.
        tx.prepare_cached(
            "UPDATE devices SET current_ad_id = NULL WHERE id = ?1 AND current_ad_id = ?2",
        )?
        .execute([device.as_str(), id.as_str()])?;
        crud::record(
            tx,
            &company,
            "ad.unassigned",
            "ad",
            &id,
            &json!({"object": "ad_assignment", "ad_id": id, "device_id": device, "company_id": company}),
        )?;
        Ok(Response::no_content())
    })
}
