//! Ads: CRUD, linking to media and promotions, and assignment to devices.
//!
//! An ad, its media, its promotion and its devices always belong to one company: references in a
//! body are checked against the ad's company, and a reference that is not there (another company's
//! or nonexistent, indistinguishably) is a 422 on that field.
//!
//! The `version` (ETag) covers the ad's own fields; assignments are a relation of their own and do
//! not bump it, so assigning screens never invalidates an editor's `If-Match`.

use super::devices::{
    check_enum, check_id, check_text, id_schema, present, require_some, text_schema,
};
use crate::auth::{Action, Area, Level};
use crate::events;
use crate::http::ctx::PageRequest;
use crate::http::router::{param, Route};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{self, Kind};
use crate::time::rfc3339;
use crate::validate::Errors;
use rusqlite::{OptionalExtension, Row};
use serde::Deserialize;
use serde_json::{json, Value};

const READ: Action = Action::Use(Area::Ads, Level::Read);
const WRITE: Action = Action::Use(Area::Ads, Level::Write);

pub const STATUSES: &[&str] = &["draft", "active", "paused", "archived"];
/// `device_ids` in an ad lists at most this many; `device_count` has the total.
const MAX_DEVICE_IDS: i64 = 100;
const DEFAULT_DURATION_SECS: i64 = 15;

pub fn routes() -> Vec<Route> {
    vec![
        Route::get("/ads", "listAds", READ, list)
            .tag("ads")
            .summary("List ads, newest first. Filter by company, assigned device, status or promotion.")
            .paged_by(Kind::Ad)
            .query(&[
                param("company_id", r#"{"type":"string","pattern":"^cmp_[0-9A-Za-z]{1,64}$"}"#, "Only ads of this company."),
                param("device_id", r#"{"type":"string","pattern":"^dev_[0-9A-Za-z]{1,64}$"}"#, "Only ads assigned to this device."),
                param("status", r#"{"type":"string","enum":["draft","active","paused","archived"]}"#, "Only ads in this status."),
                param("promotion_id", r#"{"type":"string","pattern":"^promo_[0-9A-Za-z]{1,64}$"}"#, "Only ads linked to this promotion."),
            ])
            .ok("AdList"),
        Route::post("/ads", "createAd", WRITE, create)
            .tag("ads")
            .summary("Create an ad in a company, optionally with media and a promotion of the same company.")
            .body("AdCreate")
            .created("Ad"),
        Route::get("/ads/{id}", "getAd", READ, get)
            .tag("ads")
            .summary("Get one ad with the devices it is assigned to. Returns an ETag.")
            .ok("Ad"),
        Route::patch("/ads/{id}", "updateAd", WRITE, update)
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
    let status = json!({"type":"string","enum":STATUSES});
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
                "properties":{"company_id":id_schema(Kind::Company),"name":text_schema(1, 100),
                    "headline":text_schema(1, 200),
                    "status":{"type":"string","enum":STATUSES,"default":"draft"},
                    "media_id":media_ref,"promotion_id":promotion_ref,
                    "duration_seconds":{"type":"integer","minimum":1,"maximum":3600,"default":DEFAULT_DURATION_SECS}}}),
        ),
        (
            "AdUpdate",
            json!({"type":"object","additionalProperties":false,"minProperties":1,
                "properties":{"name":text_schema(1, 100),"headline":text_schema(1, 200),"status":status,
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

const AD_COLUMNS: &str = "a.id, a.company_id, a.name, a.headline, a.status, a.media_id,
        a.promotion_id, a.duration_seconds, a.created_at, a.updated_at, a.version,
        (SELECT count(*) FROM ad_assignments x WHERE x.ad_id = a.id),
        (SELECT group_concat(y.device_id) FROM
            (SELECT device_id FROM ad_assignments WHERE ad_id = a.id ORDER BY device_id LIMIT 100) y)";

fn ad_json(r: &Row<'_>) -> rusqlite::Result<Value> {
    let mut device_ids: Vec<String> = r
        .get::<_, Option<String>>(12)?
        .map(|s| s.split(',').map(String::from).collect())
        .unwrap_or_default();
    // group_concat keeps no guaranteed order.
    device_ids.sort();
    Ok(json!({
        "id": r.get::<_, String>(0)?,
        "object": "ad",
        "company_id": r.get::<_, String>(1)?,
        "name": r.get::<_, String>(2)?,
        "headline": r.get::<_, String>(3)?,
        "status": r.get::<_, String>(4)?,
        "media_id": r.get::<_, Option<String>>(5)?,
        "promotion_id": r.get::<_, Option<String>>(6)?,
        "duration_seconds": r.get::<_, i64>(7)?,
        "device_ids": device_ids,
        "device_count": r.get::<_, i64>(11)?,
        "created_at": rfc3339(r.get(8)?),
        "updated_at": rfc3339(r.get(9)?),
    }))
}

/// A page of the ads assigned to `device_id`, walked through the assignment key (device, ad) so
/// that the keyset stays on an index.
pub(crate) fn page_for_device(
    conn: &rusqlite::Connection,
    device_id: &str,
    companies: &[String],
    filters: &[(&str, rusqlite::types::Value)],
    page: &PageRequest,
) -> Result<Vec<Value>, ApiError> {
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
        ad_json,
    )
}

fn load(conn: &rusqlite::Connection, id: &str) -> Result<Option<(Value, i64)>, ApiError> {
    Ok(conn
        .prepare_cached(&format!("SELECT {AD_COLUMNS} FROM ads a WHERE a.id = ?1"))?
        .query_row([id], |r| Ok((ad_json(r)?, r.get::<_, i64>(10)?)))
        .optional()?)
}

fn path_id(ctx: &Ctx<'_>) -> Result<String, ApiError> {
    ctx.path::<ids::AdId>().map(ids::AdId::into_string)
}

/// Company, status and version of a visible ad; invisible or missing is 404.
fn authorized_owner(
    ctx: &Ctx<'_>,
    conn: &rusqlite::Connection,
    id: &str,
) -> Result<(String, String, i64), ApiError> {
    let (company, status, version): (String, String, i64) = conn
        .prepare_cached("SELECT company_id, status, version FROM ads WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?
        .ok_or_else(|| ApiError::not_found("ad", id))?;
    ctx.authorize_company(&company, "ad", id)?;
    Ok((company, status, version))
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let page = ctx.page()?;
    let companies = ctx.list_companies()?;
    let status = ctx.query_enum("status", STATUSES)?;
    let promotion = ctx.query_id("promotion_id", Kind::Promotion)?;
    let device = ctx.query_id("device_id", Kind::Device)?;
    let mut filters: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    if let Some(s) = status {
        filters.push(("a.status = ?", s.into()));
    }
    let conn = ctx.app.db.conn()?;
    if let Some(p) = promotion {
        // Like the device filter: another company's promotion is a 404, not an empty list.
        let company: String = conn
            .prepare_cached("SELECT company_id FROM promotions WHERE id = ?1")?
            .query_row([&p], |r| r.get(0))
            .optional()?
            .ok_or_else(|| ApiError::not_found("promotion", &p))?;
        ctx.authorize_company(&company, "promotion", &p)?;
        filters.push(("a.promotion_id = ?", p.into()));
    }
    let rows = match device {
        Some(device) => {
            let (company, _) = super::devices::owner(&conn, &device)?
                .ok_or_else(|| ApiError::not_found("device", &device))?;
            ctx.authorize_company(&company, "device", &device)?;
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
            ad_json,
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
    check_id(&mut errors, "/company_id", &input.company_id, Kind::Company);
    check_text(&mut errors, "/name", &input.name, 1, 100);
    check_text(&mut errors, "/headline", &input.headline, 1, 200);
    check_enum(&mut errors, "/status", &status, STATUSES);
    if let Some(m) = &input.media_id {
        check_id(&mut errors, "/media_id", m, Kind::Media);
    }
    if let Some(p) = &input.promotion_id {
        check_id(&mut errors, "/promotion_id", p, Kind::Promotion);
    }
    errors.range("/duration_seconds", duration, 1, 3600);
    errors.finish()?;
    let company = input.company_id;
    ctx.authorize_company(&company, "company", &company)?;

    let now = crate::time::now();
    let id = ids::new_id(Kind::Ad);
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
        let (ad, version) = load(tx, &id)?.ok_or_else(|| ApiError::not_found("ad", &id))?;
        events::record(tx, &company, "ad.created", "ad", &id, &ad)?;
        Ok(Response::created(&ad)
            .with_etag(version)
            .with_header("location", &format!("/ads/{id}")))
    })
}

fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = path_id(ctx)?;
    let conn = ctx.app.db.conn()?;
    authorized_owner(ctx, &conn, &id)?;
    let (ad, version) = load(&conn, &id)?.ok_or_else(|| ApiError::not_found("ad", &id))?;
    Ok(Response::ok(&ad).with_etag(version))
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
    let id = path_id(ctx)?;
    // Visibility before the body: validating first would tell another company's id exists.
    authorized_owner(ctx, &*ctx.app.db.conn()?, &id)?;
    let input: AdUpdate = ctx.json()?;
    let mut errors = Errors::new();
    let mut sets: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    if let Some(v) = &input.name {
        check_text(&mut errors, "/name", v, 1, 100);
        sets.push(("name", v.trim().to_string().into()));
    }
    if let Some(v) = &input.headline {
        check_text(&mut errors, "/headline", v, 1, 200);
        sets.push(("headline", v.trim().to_string().into()));
    }
    if let Some(v) = &input.status {
        check_enum(&mut errors, "/status", v, STATUSES);
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
                check_id(&mut errors, field, v, kind);
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
    require_some(&mut errors, !sets.is_empty());
    errors.finish()?;

    let now = crate::time::now();
    ctx.app.db.write(|tx| {
        let (company, _, version) = authorized_owner(ctx, tx, &id)?;
        ctx.check_if_match(version)?;
        check_references(
            tx,
            &company,
            input.media_id.as_ref().and_then(|m| m.as_deref()),
            input.promotion_id.as_ref().and_then(|p| p.as_deref()),
        )?;
        crate::routes::update_versioned(tx, "ads", "id", &id, now, &sets)?;
        let (ad, version) = load(tx, &id)?.ok_or_else(|| ApiError::not_found("ad", &id))?;
        events::record(tx, &company, "ad.updated", "ad", &id, &ad)?;
        Ok(Response::ok(&ad).with_etag(version))
    })
}

fn delete(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = path_id(ctx)?;
    ctx.app.db.write(|tx| {
        let (company, _, version) = authorized_owner(ctx, tx, &id)?;
        ctx.check_if_match(version)?;
        tx.prepare_cached("DELETE FROM ads WHERE id = ?1")?
            .execute([&id])?;
        events::record(
            tx,
            &company,
            "ad.deleted",
            "ad",
            &id,
            &json!({"id": id, "object": "ad", "deleted": true}),
        )?;
        Ok(Response::no_content())
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AdAssignmentCreate {
    device_id: String,
}

fn assignment_json(ad: &str, device: &str, company: &str, at: i64, newly: bool) -> Value {
    json!({
        "object": "ad_assignment",
        "ad_id": ad,
        "device_id": device,
        "company_id": company,
        "assigned_at": rfc3339(at),
        "newly_assigned": newly,
    })
}

fn assign(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = path_id(ctx)?;
    // Visibility before the body: validating first would tell another company's id exists.
    authorized_owner(ctx, &*ctx.app.db.conn()?, &id)?;
    let input: AdAssignmentCreate = ctx.json()?;
    let mut errors = Errors::new();
    check_id(&mut errors, "/device_id", &input.device_id, Kind::Device);
    errors.finish()?;
    let device = input.device_id;

    let now = crate::time::now();
    ctx.app.db.write(|tx| {
        let (company, status, _) = authorized_owner(ctx, tx, &id)?;
        let same_company = tx
            .prepare_cached("SELECT 1 FROM devices WHERE id = ?1 AND company_id = ?2")?
            .exists([&device, &company])?;
        if !same_company {
            return Err(ApiError::NotFound(format!(
                "`/device_id`: no device `{device}` in the ad's company."
            )));
        }
        let existing: Option<i64> = tx
            .prepare_cached(
                "SELECT assigned_at FROM ad_assignments WHERE device_id = ?1 AND ad_id = ?2",
            )?
            .query_row([&device, &id], |r| r.get(0))
            .optional()?;
        if let Some(at) = existing {
            return Ok(Response::ok(&assignment_json(
                &id, &device, &company, at, false,
            )));
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
        let assignment = assignment_json(&id, &device, &company, now, true);
        events::record(tx, &company, "ad.assigned", "ad", &id, &assignment)?;
        Ok(Response::ok(&assignment))
    })
}

fn unassign(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id = path_id(ctx)?;
    let device = ctx.param("device_id").to_string();
    let not_assigned = || {
        ApiError::NotFound(format!(
            "The ad `{id}` is not assigned to a device with id `{}`.",
            device.chars().take(40).collect::<String>()
        ))
    };
    if !ids::is_valid(Kind::Device, &device) {
        return Err(ApiError::not_found("device", &device));
    }
    ctx.app.db.write(|tx| {
        let (company, _, version) = authorized_owner(ctx, tx, &id)?;
        ctx.check_if_match(version)?;
        let removed = tx
            .prepare_cached("DELETE FROM ad_assignments WHERE device_id = ?1 AND ad_id = ?2")?
            .execute([&device, &id])?;
        if removed == 0 {
            return Err(not_assigned());
        }
        // A device only reports ads assigned to it as playing; keep that true.
        tx.prepare_cached(
            "UPDATE devices SET current_ad_id = NULL WHERE id = ?1 AND current_ad_id = ?2",
        )?
        .execute([&device, &id])?;
        events::record(
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
