//! Proof-of-play: a player reports its plays (`POST /devices/{id}/playbacks`), a screen's plays
//! are listed (`GET /devices/{id}/playbacks`), and summed per ad and per screen over a range
//! (`GET /reports/proof-of-play`). The simulated fleet writes the same rows
//! ([`super::simulator`]), one per ad, screen and clock hour.

use super::device::{authorized_owner, Clock};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{DeviceId, Kind, PlaybackId, TypedId};
use crate::routes::crud::{self, Time};
use crate::validate::Errors;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The longest play one report may claim (a day).
pub const MAX_PLAY_SECS: i64 = 86_400;
/// What a report covers without `from`: the week before `to`.
pub const DEFAULT_RANGE_SECS: i64 = 7 * 86_400;
pub const SOURCES: &[&str] = &["player", "simulator"];
pub(super) const SOURCE: crate::validate::OneOf = crate::validate::OneOf(SOURCES);

/// One proof-of-play row of a device: a play a player reported (`plays: 1`) or an hour of the
/// simulated fleet's plays of one ad.
// Field order is the order of the JSON members.
#[derive(Serialize, JsonSchema)]
pub struct Playback {
    #[schemars(transform = Kind::Playback)]
    id: String,
    #[schemars(extend("const" = "playback"))]
    object: &'static str,
    company_id: String,
    device_id: String,
    ad_id: String,
    #[schemars(transform = &SOURCE)]
    source: String,
    /// A reported play's start; a simulated row's clock hour.
    started_at: Time,
    /// Seconds played (a simulated row: in its hour).
    #[schemars(range(min = 0))]
    duration_seconds: i64,
    /// 1 for a reported play; the plays started in the hour for a simulated row.
    #[schemars(range(min = 0))]
    plays: i64,
    created_at: Time,
}

const PLAYBACK_SELECT: &str = "SELECT id, company_id, device_id, ad_id, source, started_at,
        duration_seconds, plays, created_at FROM playbacks";

impl Playback {
    fn from_row(r: &crud::Named<'_, '_>) -> rusqlite::Result<Playback> {
        Ok(Playback {
            id: r.get("id")?,
            object: "playback",
            company_id: r.get("company_id")?,
            device_id: r.get("device_id")?,
            ad_id: r.get("ad_id")?,
            source: r.get("source")?,
            started_at: Time(r.get("started_at")?),
            duration_seconds: r.get("duration_seconds")?,
            plays: r.get("plays")?,
            created_at: Time(r.get("created_at")?),
        })
    }
}

impl crate::http::response::Listed for Playback {
    fn list_key(&self) -> &str {
        &self.id
    }
}

/// A play a screen's player reports.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct PlaybackCreate {
    /// An ad assigned to this device.
    #[schemars(transform = Kind::Ad)]
    ad_id: String,
    /// When the play started; not after the sandbox clock's now.
    #[schemars(extend("format" = "date-time"))]
    started_at: String,
    #[schemars(range(min = 1, max = MAX_PLAY_SECS))]
    duration_seconds: i64,
}

pub(super) fn create(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: DeviceId = ctx.path()?;
    // Visibility before the body: validating first would tell another company's id exists.
    authorized_owner(ctx, &*ctx.conn()?, &id)?;
    let input: PlaybackCreate = ctx.json()?;
    let now = Clock::of(ctx).now;
    let mut errors = Errors::new();
    errors.id("/ad_id", &input.ad_id, Kind::Ad);
    errors.range(
        "/duration_seconds",
        input.duration_seconds,
        1,
        MAX_PLAY_SECS,
    );
    let started = crate::time::parse_rfc3339(&input.started_at);
    match started {
        None => errors.push(
            "/started_at",
            "invalid_format",
            "Must be an RFC 3339 instant such as 2026-03-02T09:00:00Z.",
        ),
        Some(t) if t > now => errors.push(
            "/started_at",
            "in_future",
            format!(
                "Must not be after the sandbox clock's now ({}).",
                crate::time::rfc3339(now)
            ),
        ),
        Some(_) => {}
    }
    errors.finish()?;
    let started = started.unwrap_or(now);
    ctx.db.write(ctx.intent, |tx| {
        let company = authorized_owner(ctx, tx, &id)?.company;
        let created: Option<i64> = rusqlite::OptionalExtension::optional(
            tx.prepare_cached("SELECT created_at FROM ads WHERE id = ?1 AND company_id = ?2")?
                .query_row([&input.ad_id, &company], |r| r.get(0)),
        )?;
        let Some(created) = created else {
            return Err(ApiError::NotFound(format!(
                "`/ad_id`: no ad `{}` in the device's company.",
                input.ad_id
            )));
        };
        if started < created {
            // No play predates the ad it reports.
            return Err(ApiError::invalid(
                "/started_at",
                "before_ad",
                format!(
                    "Must not be before the ad was created ({}).",
                    crate::time::rfc3339(created)
                ),
            ));
        }
        // A play is of an ad the screen played when it started (`routes::on_air`).
        match crate::routes::on_air::on_screen(tx, id.as_str(), &input.ad_id, started)? {
            None => {
                return Err(ApiError::ConflictCode {
                    code: "ad_not_assigned",
                    detail: format!(
                        "`/ad_id`: ad `{}` is not assigned to this device; assign it first.",
                        input.ad_id
                    ),
                })
            }
            Some(false) => {
                return Err(ApiError::ConflictCode {
                    code: "ad_not_on_air",
                    detail: format!(
                        "`/ad_id`: ad `{}` was not on air at `/started_at` (it must be active, within its dates, and its promotion, if any, switched on and within its window).",
                        input.ad_id
                    ),
                })
            }
            Some(true) => {}
        }
        let pb = ctx.generate::<PlaybackId>();
        tx.prepare_cached(
            "INSERT INTO playbacks (id, company_id, device_id, ad_id, source, started_at,
                                    duration_seconds, plays, created_at)
             VALUES (?1, ?2, ?3, ?4, 'player', ?5, ?6, 1, ?7)",
        )?
        .execute(rusqlite::params![
            pb,
            company,
            id,
            input.ad_id,
            started,
            input.duration_seconds,
            now
        ])?;
        // The play's day in the report's daily roll-up (schema V43), in the same transaction.
        tx.prepare_cached(
            "INSERT INTO playback_days (company_id, day, device_id, ad_id, plays, seconds, rows)
             VALUES (?1, ?2 / 86400, ?3, ?4, 1, ?5, 1)
             ON CONFLICT (company_id, day, device_id, ad_id) DO UPDATE SET
                 plays = plays + 1, seconds = seconds + excluded.seconds, rows = rows + 1",
        )?
        .execute(rusqlite::params![
            company,
            started,
            id,
            input.ad_id,
            input.duration_seconds
        ])?;
        let playback = crud::load(tx, &format!("{PLAYBACK_SELECT} WHERE id = ?1"), &pb, |r| {
            Playback::from_row(r)
        })?;
        crate::events::record(
            tx,
            &company,
            "device.playback_recorded",
            "playback",
            &pb,
            &playback,
        )?;
        Ok(Response::created(&playback))
    })
}

/// A play as `POST /devices/{id}/playbacks` answered it: the `data` of `device.playback_recorded`.
pub(super) fn load(conn: &rusqlite::Connection, id: &PlaybackId) -> Result<Playback, ApiError> {
    crud::load(
        conn,
        &format!("{PLAYBACK_SELECT} WHERE id = ?1"),
        id,
        Playback::from_row,
    )
}

/// An optional RFC 3339 query parameter.
/// `from` or `to`: RFC 3339, or a date as every date filter takes it (see `date_range`).
pub(super) fn instant(ctx: &Ctx<'_>, name: &str) -> Result<Option<i64>, ApiError> {
    crate::routes::date_range::bound(ctx, name, name == "to")
}

pub(super) fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: DeviceId = ctx.path()?;
    let page = ctx.page()?;
    let from = instant(ctx, "from")?;
    let to = instant(ctx, "to")?;
    // A window where `to` is not after `from` holds nothing: an empty page, as for the ledger's
    // and billing's date filters.
    let ad = match ctx.query("ad_id") {
        Some(a) if !crate::ids::is_valid(Kind::Ad, a) => {
            return Err(ApiError::invalid(
                "ad_id",
                "invalid_id",
                "Not an ad id (`ad_…`).",
            ))
        }
        other => other.map(str::to_string),
    };
    let source = ctx.query_enum("source", SOURCES)?;
    let conn = ctx.conn()?;
    authorized_owner(ctx, &conn, &id)?;
    let mut sql = format!("{PLAYBACK_SELECT} WHERE device_id = ? AND id < ?");
    let mut args: Vec<rusqlite::types::Value> =
        vec![id.to_string().into(), page.bound().to_string().into()];
    for (clause, value) in [
        (" AND ad_id = ?", ad.map(rusqlite::types::Value::from)),
        (" AND started_at >= ?", from.map(Into::into)),
        (" AND started_at < ?", to.map(Into::into)),
        (" AND source = ?", source.map(Into::into)),
    ] {
        if let Some(v) = value {
            sql.push_str(clause);
            args.push(v);
        }
    }
    sql.push_str(" ORDER BY id DESC LIMIT ?");
    args.push(page.fetch().into());
    let mut stmt = conn.prepare_cached(&sql)?;
    let columns = crud::Columns::of(&stmt);
    let rows = stmt
        .query_map(rusqlite::params_from_iter(args), |r| {
            Playback::from_row(&crud::Named::new(r, &columns))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Response::page(rows, &page))
}
