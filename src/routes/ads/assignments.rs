//! An ad's assignments to devices (screens): assign, unassign.

use super::ad::authorized_owner;
use super::assignment::assignment;
use super::payloads::record_unassigned;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{AdId, Kind, TypedId};
use crate::routes::crud;
use crate::validate::Errors;
use rusqlite::OptionalExtension;
use schemars::JsonSchema;
use serde::Deserialize;

/// The device to put the ad on.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AdAssignmentCreate {
    #[schemars(transform = Kind::Device)]
    device_id: String,
}

pub(super) fn assign(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: AdId = ctx.path()?;
    // Visibility before the body: validating first would tell another company's id exists.
    authorized_owner(ctx, &*ctx.conn()?, &id)?;
    let input: AdAssignmentCreate = ctx.json()?;
    let mut errors = Errors::new();
    errors.id("/device_id", &input.device_id, Kind::Device);
    errors.finish()?;
    let device = input.device_id;

    let now = ctx.now();
    ctx.db.write(ctx.intent, |tx| {
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
        crate::events::record(tx, &company, "ad.assigned", "ad", &id, &assigned)?;
        Ok(Response::ok(&assigned))
    })
}

pub(super) fn unassign(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
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
    ctx.db.write(ctx.intent, |tx| {
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
        record_unassigned(tx, &ctx.app.settings, &company, &id, &device)?;
        Ok(Response::no_content())
    })
}
