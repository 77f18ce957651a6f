//! An ad itself: its typed row, its references (media, promotion), and CRUD.

use super::fields::{
    DEFAULT_DURATION_SECS, HEADLINE, MAX_DEVICE_IDS, MAX_DURATION_SECS, NAME, STATUS,
};
use crate::http::ctx::PageRequest;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{AdId, Kind, NullableId};
use crate::routes::crud::{self, Time};
use crate::routes::on_air::Run;
use crate::routes::optional::present;
use crate::validate::Errors;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An ad of a company: headline, media, linked promotion, and the devices it is assigned to.
// Field order is the order of the JSON members.
#[derive(Serialize, JsonSchema)]
pub struct Ad {
    #[schemars(transform = Kind::Ad)]
    pub(super) id: String,
    #[schemars(extend("const" = "ad"))]
    pub(super) object: &'static str,
    pub(super) company_id: String,
    pub(super) name: String,
    pub(super) headline: String,
    #[schemars(transform = &STATUS)]
    pub(super) status: String,
    pub(super) media_id: Option<String>,
    pub(super) promotion_id: Option<String>,
    #[schemars(range(min = 1, max = MAX_DURATION_SECS))]
    pub(super) duration_seconds: i64,
    /// When the ad may first play; `null`: as soon as it is active.
    pub(super) starts_at: Option<Time>,
    /// When it stops playing; `null`: until it is paused or archived.
    pub(super) ends_at: Option<Time>,
    /// Whether screens play it now: active, within its dates, and its promotion (if any) switched
    /// on and within its window (`routes::on_air`, the one definition).
    pub(super) on_air: bool,
    /// Devices the ad is assigned to (at most 100, ascending; see device_count).
    #[schemars(length(max = MAX_DEVICE_IDS))]
    pub(super) device_ids: Vec<String>,
    #[schemars(range(min = 0))]
    pub(super) device_count: i64,
    pub(super) created_at: Time,
    pub(super) updated_at: Time,
    // The ETag's version; not a member of the body.
    #[serde(skip)]
    pub(super) version: i64,
    // What `on_air` is judged from, at any instant (`routes::on_air`); not a member of the body.
    #[serde(skip)]
    pub(super) run: Run,
}

const AD_COLUMNS: &str = "a.id, a.company_id, a.name, a.headline, a.status, a.media_id,
        a.promotion_id, a.duration_seconds, a.starts_at, a.ends_at, a.created_at, a.updated_at,
        a.version, r.switched_on, r.runs_from, r.runs_until,
        (SELECT count(*) FROM ad_assignments x WHERE x.ad_id = a.id) AS device_count,
        (SELECT group_concat(y.device_id) FROM
            (SELECT device_id FROM ad_assignments WHERE ad_id = a.id ORDER BY device_id LIMIT 100) y)
            AS device_ids";

/// The ads of [`AD_COLUMNS`], each with its run (`ad_runs`, one row per ad): joined once, not a
/// lookup of the view per column of the run (three per listed ad).
const ADS_WITH_RUNS: &str = "ads a JOIN ad_runs r ON r.ad_id = a.id";

impl Ad {
    /// Reads a row of [`AD_COLUMNS`] by column name.
    /// Reads a row, the promotion's window judged at `now`.
    fn from_row(r: &crud::Named<'_, '_>, now: i64) -> rusqlite::Result<Ad> {
        let mut device_ids: Vec<String> = r
            .get::<Option<String>>("device_ids")?
            .map(|s| s.split(',').map(String::from).collect())
            .unwrap_or_default();
        // group_concat keeps no guaranteed order.
        device_ids.sort();
        let status: String = r.get("status")?;
        let starts_at: Option<i64> = r.get("starts_at")?;
        let ends_at: Option<i64> = r.get("ends_at")?;
        // What a screen plays, defined once (`routes::on_air`).
        let run = Run {
            switched_on: r.get("switched_on")?,
            from: r.get("runs_from")?,
            until: r.get("runs_until")?,
        };
        Ok(Ad {
            id: r.get("id")?,
            object: "ad",
            company_id: r.get("company_id")?,
            name: r.get("name")?,
            headline: r.get("headline")?,
            status,
            media_id: r.get("media_id")?,
            promotion_id: r.get("promotion_id")?,
            duration_seconds: r.get("duration_seconds")?,
            starts_at: starts_at.map(Time),
            ends_at: ends_at.map(Time),
            on_air: run.plays_at(now),
            device_ids,
            device_count: r.get("device_count")?,
            created_at: Time(r.get("created_at")?),
            updated_at: Time(r.get("updated_at")?),
            version: r.get("version")?,
            run,
        })
    }
}

impl crate::http::response::Listed for Ad {
    fn list_key(&self) -> &str {
        &self.id
    }
}

/// A page of the ads assigned to `device_id` (of `company`: a screen carries its company's ads
/// only), walked through the assignment key (device, ad) so that the keyset stays on an index.
pub(crate) fn page_for_device(
    conn: &rusqlite::Connection,
    device_id: &str,
    company: &str,
    filters: &[(&str, rusqlite::types::Value)],
    page: &PageRequest,
    now: i64,
) -> Result<Vec<Ad>, ApiError> {
    let mut all: Vec<(&str, rusqlite::types::Value)> =
        vec![("j.device_id = ?", device_id.to_string().into())];
    all.extend(filters.iter().cloned());
    crate::routes::queries::fetch_page(
        conn,
        &format!(
            "SELECT {AD_COLUMNS} FROM ad_assignments j JOIN ads a ON a.id = j.ad_id
             JOIN ad_runs r ON r.ad_id = a.id"
        ),
        "a.company_id",
        "j.ad_id",
        &crate::http::ctx::Reach::companies(std::sync::Arc::from([company.to_string()])),
        &all,
        page,
        |r| Ad::from_row(r, now),
    )
}

pub(super) fn load(conn: &rusqlite::Connection, id: &AdId, now: i64) -> Result<Ad, ApiError> {
    crud::load(
        conn,
        &format!("SELECT {AD_COLUMNS} FROM {ADS_WITH_RUNS} WHERE a.id = ?1"),
        id,
        |r| Ad::from_row(r, now),
    )
}

/// The owner of a visible ad; missing or invisible is 404.
pub(super) fn authorized_owner(
    ctx: &Ctx<'_>,
    conn: &rusqlite::Connection,
    id: &AdId,
) -> Result<crud::Owner, ApiError> {
    crud::authorized_owner(ctx, conn, "ads", id)
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

/// An ad to create.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AdCreate {
    #[schemars(transform = Kind::Company)]
    company_id: String,
    /// What people call the ad.
    #[schemars(transform = &NAME)]
    name: String,
    /// The text the screens show.
    #[schemars(transform = &HEADLINE)]
    headline: String,
    /// `active` to play once on a screen.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "String", transform = &STATUS, extend("default" = "draft"))]
    status: Option<String>,
    /// Media of the same company, or null for none.
    #[serde(default)]
    #[schemars(transform = NullableId(Kind::Media))]
    media_id: Option<String>,
    /// Promotion of the same company to link, or null to unlink.
    #[serde(default)]
    #[schemars(transform = NullableId(Kind::Promotion))]
    promotion_id: Option<String>,
    /// Seconds on screen per play.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "i64", range(min = 1, max = MAX_DURATION_SECS), extend("default" = DEFAULT_DURATION_SECS))]
    duration_seconds: Option<i64>,
    /// RFC 3339; null for none.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    starts_at: Option<String>,
    /// RFC 3339; null for none.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
    ends_at: Option<String>,
}

/// An optional RFC 3339 date of an ad (`None`: not given or `null`).
fn ad_time(errors: &mut Errors, field: &str, value: Option<&str>) -> Option<i64> {
    let value = value?;
    let t = crate::time::parse_rfc3339(value);
    if t.is_none() {
        errors.push(
            field,
            "invalid_datetime",
            "Must be an RFC 3339 date-time, for example 2026-03-01T09:00:00Z, or null.",
        );
    }
    t
}

fn check_dates(errors: &mut Errors, starts: Option<i64>, ends: Option<i64>) {
    if let (Some(s), Some(e)) = (starts, ends) {
        if e <= s {
            errors.push("/ends_at", "before_start", "Must be after `starts_at`.");
        }
    }
}

pub(super) fn create(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
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
    errors.range("/duration_seconds", duration, 1, MAX_DURATION_SECS);
    let starts = ad_time(&mut errors, "/starts_at", input.starts_at.as_deref());
    let ends = ad_time(&mut errors, "/ends_at", input.ends_at.as_deref());
    check_dates(&mut errors, starts, ends);
    errors.finish()?;
    let company = input.company_id;
    ctx.authorize_company(&company, "company", &company)?;

    let now = ctx.now();
    let id = ctx.generate::<AdId>();
    ctx.db.write(ctx.intent, |tx| {
        check_references(
            tx,
            &company,
            input.media_id.as_deref(),
            input.promotion_id.as_deref(),
        )?;
        tx.prepare_cached(
            "INSERT INTO ads (id, company_id, name, status, headline, media_id, promotion_id,
                              duration_seconds, starts_at, ends_at, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11)",
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
            starts,
            ends,
            now
        ])?;
        let ad = load(tx, &id, tx.now())?;
        crate::events::record(tx, &company, "ad.created", "ad", &id, &ad)?;
        Ok(Response::created(&ad)
            .with_etag(ad.version)
            .with_header("location", &format!("/ads/{id}")))
    })
}

pub(super) fn get(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: AdId = ctx.path()?;
    let conn = ctx.conn()?;
    authorized_owner(ctx, &conn, &id)?;
    let ad = load(&conn, &id, ctx.now())?;
    Ok(Response::ok(&ad).with_etag(ad.version))
}

/// Ad fields to change; absent fields keep their value.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1))]
pub(super) struct AdUpdate {
    #[serde(default, deserialize_with = "present")]
    #[schemars(transform = &NAME)]
    name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(transform = &HEADLINE)]
    headline: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "String", transform = &STATUS)]
    status: Option<String>,
    /// Media of the same company, or null for none.
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "Option<String>", transform = NullableId(Kind::Media))]
    media_id: Option<Option<String>>,
    /// Promotion of the same company to link, or null to unlink.
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "Option<String>", transform = NullableId(Kind::Promotion))]
    promotion_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "i64", range(min = 1, max = MAX_DURATION_SECS))]
    duration_seconds: Option<i64>,
    /// RFC 3339; null for none.
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    starts_at: Option<Option<String>>,
    /// RFC 3339; null for none.
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "Option<String>", extend("format" = "date-time"))]
    ends_at: Option<Option<String>>,
}

pub(super) fn update(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: AdId = ctx.path()?;
    // Visibility before the body: validating first would tell another company's id exists.
    authorized_owner(ctx, &*ctx.conn()?, &id)?;
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
        errors.range("/duration_seconds", v, 1, MAX_DURATION_SECS);
        sets.push(("duration_seconds", v.into()));
    }
    // `Some(None)`: the date is cleared; `Some(Some(t))`: set.
    let mut dates: [Option<Option<i64>>; 2] = [None, None];
    for (i, (field, column, value)) in [
        ("/starts_at", "starts_at", &input.starts_at),
        ("/ends_at", "ends_at", &input.ends_at),
    ]
    .into_iter()
    .enumerate()
    {
        if let Some(v) = value {
            let t = ad_time(&mut errors, field, v.as_deref());
            dates[i] = Some(t);
            sets.push((column, t.map_or(rusqlite::types::Value::Null, Into::into)));
        }
    }
    errors.require_some(!sets.is_empty());
    errors.finish()?;

    let now = ctx.now();
    ctx.db.write(ctx.intent, |tx| {
        let owner = authorized_owner(ctx, tx, &id)?;
        ctx.check_if_match(owner.version)?;
        if dates.iter().any(Option::is_some) {
            // The dates as they will stand: a body that moves one may clash with the stored other.
            let (stored_start, stored_end): (Option<i64>, Option<i64>) = tx
                .prepare_cached("SELECT starts_at, ends_at FROM ads WHERE id = ?1")?
                .query_row([&id], |r| Ok((r.get(0)?, r.get(1)?)))?;
            let mut errors = Errors::new();
            check_dates(
                &mut errors,
                dates[0].unwrap_or(stored_start),
                dates[1].unwrap_or(stored_end),
            );
            errors.finish()?;
        }
        check_references(
            tx,
            &owner.company,
            input.media_id.as_ref().and_then(|m| m.as_deref()),
            input.promotion_id.as_ref().and_then(|p| p.as_deref()),
        )?;
        crate::routes::queries::update_versioned(tx, "ads", "id", &id, now, &sets)?;
        let ad = load(tx, &id, tx.now())?;
        crate::events::record(tx, &owner.company, "ad.updated", "ad", &id, &ad)?;
        Ok(Response::ok(&ad).with_etag(ad.version))
    })
}

pub(super) fn delete(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    crud::delete_versioned::<AdId>(ctx, "ads", "ad")
}
