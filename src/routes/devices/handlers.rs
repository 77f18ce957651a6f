//! A device's CRUD handlers, and the ads assigned to it.

use super::device::{authorized_owner, load, load_by_id, Clock};
use super::device_json::DeviceJson;
use super::fields::{LOCATION, NAME, ORIENTATION, PLATFORM, RESOLUTION_PATTERN, STATUSES};
use crate::http::response::PageWriter;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{DeviceId, Kind};
use crate::routes::crud;
use crate::routes::optional::present;
use crate::routes::rendered::{self, Rendered};
use crate::validate::Errors;
use rusqlite::OptionalExtension;
use schemars::JsonSchema;
use serde::Deserialize;

pub(super) fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
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
    if let Some(like) = crate::routes::search::pattern(ctx)? {
        filters.push(("d.name LIKE ? ESCAPE '\\'", like));
    }
    // The page's ids by index, then each device's JSON as rendered at this generation of the
    // devices (rendered now when not kept), with the clock's members filled in.
    let generations = ctx.db.generations()?;
    let stamp = (generations.devices, generations.restores);
    let conn = ctx.conn()?;
    let ids: Vec<String> = crate::routes::queries::fetch_page(
        &conn,
        "SELECT d.id FROM devices d",
        crate::routes::queries::Owner::with_account("d.company_id", "d.account_id"),
        "d.id",
        &companies,
        &filters,
        &page,
        |r| r.row().get(0),
    )?;
    let limit = (page.limit as usize).min(ids.len());
    let cache = ctx
        .app
        .extensions
        .get::<std::sync::Arc<Rendered<DeviceJson>>>()
        .ok_or_else(|| ApiError::Internal("the devices' rendered rows are not set up".into()))?;
    let rows = rendered::rows(cache, &ids[..limit], stamp, |id| {
        let device = load_by_id(&conn, id, clock)?
            .ok_or_else(|| ApiError::Internal(format!("device {id} vanished within a read")))?;
        DeviceJson::render(&device)
            .ok_or_else(|| ApiError::Internal(format!("device {id}'s JSON has no status")))
    })?;
    let mut page_out = PageWriter::with_capacity(rows.iter().map(|r| r.len() + 1).sum());
    for row in &rows {
        row.write(page_out.row(), clock);
    }
    let has_more = ids.len() > limit;
    let last = ids[..limit].last().map(String::as_str);
    Ok(Response::page_written(
        page_out.finish(has_more, last, &page.tag),
    ))
}

/// A screen to register in a company.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct DeviceCreate {
    #[schemars(transform = Kind::Company)]
    company_id: String,
    /// What people call the screen.
    #[schemars(transform = &NAME)]
    name: String,
    /// Where it hangs (free text).
    #[serde(default, deserialize_with = "present")]
    #[schemars(transform = &LOCATION)]
    location: Option<String>,
    /// The player software it runs.
    #[schemars(transform = &PLATFORM)]
    platform: String,
    /// How the screen is mounted.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "String", transform = &ORIENTATION, extend("default" = "landscape"))]
    orientation: Option<String>,
    /// `WIDTHxHEIGHT` in pixels.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "String", regex(pattern = RESOLUTION_PATTERN), extend("default" = "1920x1080"))]
    resolution: Option<String>,
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

fn check_resolution(errors: &mut Errors, field: &str, value: &str) {
    if !valid_resolution(value) {
        errors.push(
            field,
            "invalid_resolution",
            "Must be WIDTHxHEIGHT in pixels (2–5 digits each), e.g. 1920x1080.",
        );
    }
}

pub(super) fn create(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
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
    let id = ctx.generate::<DeviceId>();
    ctx.db.write(ctx.intent, |tx| {
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
        crate::events::record(tx, &company, "device.created", "device", &id, &device)?;
        Ok(Response::created(&device)
            .with_etag(device.version)
            .with_header("location", &format!("/devices/{id}")))
    })
}

pub(super) fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: DeviceId = ctx.path()?;
    let conn = ctx.conn()?;
    authorized_owner(ctx, &conn, &id)?;
    let device = load(&conn, &id, Clock::of(ctx))?;
    Ok(Response::ok(&device).with_etag(device.version))
}

/// Device fields to change; absent fields keep their value.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1))]
pub(super) struct DeviceUpdate {
    #[serde(default, deserialize_with = "present")]
    #[schemars(transform = &NAME)]
    name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(transform = &LOCATION)]
    location: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "String", transform = &PLATFORM)]
    platform: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "String", transform = &ORIENTATION)]
    orientation: Option<String>,
    /// WIDTHxHEIGHT in pixels, e.g. 1920x1080.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "String", regex(pattern = RESOLUTION_PATTERN))]
    resolution: Option<String>,
}

pub(super) fn update(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: DeviceId = ctx.path()?;
    // Visibility before the body: validating first would tell another company's id exists.
    authorized_owner(ctx, &*ctx.conn()?, &id)?;
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
    ctx.db.write(ctx.intent, |tx| {
        let owner = authorized_owner(ctx, tx, &id)?;
        ctx.check_if_match(owner.version)?;
        crate::routes::queries::update_versioned(tx, "devices", "id", &id, clock.now, &sets)?;
        let device = load(tx, &id, clock)?;
        crate::events::record(tx, &owner.company, "device.updated", "device", &id, &device)?;
        Ok(Response::ok(&device).with_etag(device.version))
    })
}

pub(super) fn delete(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    crud::delete_versioned::<DeviceId>(ctx, "devices", "device")
}

pub(super) fn list_ads(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: DeviceId = ctx.path()?;
    let page = ctx.page()?;
    let conn = ctx.conn()?;
    let owner = authorized_owner(ctx, &conn, &id)?;
    let rows =
        crate::routes::ads::page_for_device(&conn, &id, &owner.company, &[], &page, ctx.now())?;
    Ok(Response::page(rows, &page))
}
