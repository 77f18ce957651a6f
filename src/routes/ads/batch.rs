//! `POST /ads/{id}/assignments`: assign an ad to many screens, and take it off others, in one
//! all-or-nothing write.
//!
//! Every device is checked before anything is written: a malformed, repeated or conflicting id
//! is a 422 naming each field, a device that is not in the ad's company (another company's or
//! none, indistinguishably) a 404 naming each one; then one `BEGIN IMMEDIATE` transaction writes
//! every change and records one event per screen that changes, as the one-screen routes do. A
//! screen already as asked is reported unchanged and emits nothing, so retrying is harmless.

use super::ad::authorized_owner;
use super::assignment::assignment;
use super::payloads::record_unassigned;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{AdId, Kind, TypedId};
use crate::routes::crud::{self, Time};
use crate::validate::Errors;
use rusqlite::{Connection, OptionalExtension};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The most screens one request may name, both lists together: the work (and the events, and
/// the webhook deliveries they fan out to) of one request stays bounded.
pub const MAX_BATCH_DEVICES: usize = 100;

/// At least one screen, at most 100 in both lists together, each named once.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "AdAssignmentBatchCreate", extend("minProperties" = 1))]
struct BatchInput {
    /// Screens (`dev_…`) of the ad's company to put the ad on.
    #[serde(default)]
    #[schemars(length(max = MAX_BATCH_DEVICES), inner(regex(pattern = Kind::Device.pattern())), extend("uniqueItems" = true))]
    assign_device_ids: Vec<String>,
    /// Screens (`dev_…`) of the ad's company to take the ad off.
    #[serde(default)]
    #[schemars(length(max = MAX_BATCH_DEVICES), inner(regex(pattern = Kind::Device.pattern())), extend("uniqueItems" = true))]
    unassign_device_ids: Vec<String>,
}

/// One screen of a batch, in the order asked (assignments first).
#[derive(Serialize, JsonSchema)]
struct Item {
    device_id: String,
    /// The ad is on the screen after the write.
    assigned: bool,
    /// False: it already was.
    changed: bool,
    /// When the assignment was made; null for a screen the ad is not on.
    assigned_at: Option<Time>,
}

/// Every screen asked for, assignments first, each with `changed`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "AdAssignmentBatch")]
struct Batch {
    #[schemars(extend("const" = "ad_assignment_batch"))]
    object: &'static str,
    ad_id: String,
    company_id: String,
    devices: Vec<Item>,
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        crate::jsonschema::named_body::<BatchInput>(),
        crate::jsonschema::named_response::<Batch>(),
    ]
}

/// The lists' shape: ids, no repeats (within or across the lists), within the bound.
fn check(input: &BatchInput) -> Result<(), ApiError> {
    let mut errors = Errors::new();
    let total = input.assign_device_ids.len() + input.unassign_device_ids.len();
    if total == 0 {
        errors.push(
            "",
            "empty",
            "Give at least one screen in `assign_device_ids` or `unassign_device_ids`.",
        );
    }
    if total > MAX_BATCH_DEVICES {
        errors.push(
            "",
            "too_many",
            format!("At most {MAX_BATCH_DEVICES} screens per request, both lists together; this one names {total}. Split it."),
        );
        // Past the bound, the ids are not checked one by one.
        return Ok(errors.finish()?);
    }
    let mut seen: Vec<&str> = Vec::with_capacity(total);
    for (list, ids) in [
        ("assign_device_ids", &input.assign_device_ids),
        ("unassign_device_ids", &input.unassign_device_ids),
    ] {
        for (i, id) in ids.iter().enumerate() {
            let field = format!("/{list}/{i}");
            errors.id(&field, id, Kind::Device);
            if seen.contains(&id.as_str()) {
                errors.push(
                    &field,
                    "duplicate",
                    "Each screen may be named once, in one of the two lists.",
                );
            }
            seen.push(id);
        }
    }
    errors.finish()?;
    Ok(())
}

pub(super) fn change(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: AdId = ctx.path()?;
    // Visibility before the body: validating first would tell another company's id exists.
    authorized_owner(ctx, &*ctx.conn()?, &id)?;
    let input: BatchInput = ctx.json()?;
    check(&input)?;
    let now = ctx.now();
    ctx.db.write(ctx.intent, |tx| {
        let (company, (version, status)): (String, (i64, String)) = crud::authorized_row(
            ctx,
            tx,
            "SELECT company_id, version, status FROM ads WHERE id = ?1",
            &id,
            |r| Ok((r.get(1)?, r.get(2)?)),
        )?;
        ctx.check_if_match(version)?;
        require_same_company(tx, &input, &company)?;
        let mut devices = Vec::new();
        for device in &input.assign_device_ids {
            devices.push(assign_one(tx, &id, device, &company, &status, now)?);
        }
        for device in &input.unassign_device_ids {
            devices.push(unassign_one(ctx, tx, &id, device, &company)?);
        }
        let batch = Batch {
            object: "ad_assignment_batch",
            ad_id: id.as_str().to_string(),
            company_id: company,
            devices,
        };
        Ok(Response::ok(&batch))
    })
}

/// Every screen must be one of the ad's company; the 404 names each that is not.
fn require_same_company(
    tx: &Connection,
    input: &BatchInput,
    company: &str,
) -> Result<(), ApiError> {
    let mut stmt = tx.prepare_cached("SELECT 1 FROM devices WHERE id = ?1 AND company_id = ?2")?;
    let mut missing = Vec::new();
    for (list, ids) in [
        ("assign_device_ids", &input.assign_device_ids),
        ("unassign_device_ids", &input.unassign_device_ids),
    ] {
        for (i, device) in ids.iter().enumerate() {
            if !stmt.exists([device.as_str(), company])? {
                missing.push(format!("`/{list}/{i}` (`{device}`)"));
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let shown = missing.len().min(5);
    let more = match missing.len() - shown {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    Err(ApiError::NotFound(format!(
        "No device in the ad's company for {}{more}. Nothing was changed.",
        missing[..shown].join(", ")
    )))
}

fn assign_one(
    tx: &crate::db::Tx,
    ad: &AdId,
    device: &str,
    company: &str,
    status: &str,
    now: i64,
) -> Result<Item, ApiError> {
    let existing: Option<i64> = tx
        .prepare_cached(
            "SELECT assigned_at FROM ad_assignments WHERE device_id = ?1 AND ad_id = ?2",
        )?
        .query_row([device, ad.as_str()], |r| r.get(0))
        .optional()?;
    let item = |changed, at| Item {
        device_id: device.to_string(),
        assigned: true,
        changed,
        assigned_at: Some(Time(at)),
    };
    if let Some(at) = existing {
        return Ok(item(false, at));
    }
    if status == "archived" {
        return Err(ApiError::Conflict(
            "An archived ad cannot be assigned to screens; change its status first. Nothing was changed.".into(),
        ));
    }
    tx.prepare_cached(
        "INSERT INTO ad_assignments (device_id, ad_id, assigned_at) VALUES (?1, ?2, ?3)",
    )?
    .execute(rusqlite::params![device, ad, now])?;
    let assigned = assignment(ad, device, company, now, true);
    crate::events::record(tx, company, "ad.assigned", "ad", ad, &assigned)?;
    Ok(item(true, now))
}

fn unassign_one(
    ctx: &Ctx<'_>,
    tx: &crate::db::Tx,
    ad: &AdId,
    device: &str,
    company: &str,
) -> Result<Item, ApiError> {
    let removed = tx
        .prepare_cached("DELETE FROM ad_assignments WHERE device_id = ?1 AND ad_id = ?2")?
        .execute([device, ad.as_str()])?;
    if removed > 0 {
        // A device only reports ads assigned to it as playing; keep that true.
        tx.prepare_cached(
            "UPDATE devices SET current_ad_id = NULL WHERE id = ?1 AND current_ad_id = ?2",
        )?
        .execute([device, ad.as_str()])?;
        record_unassigned(tx, &ctx.app.settings, company, ad, device)?;
    }
    Ok(Item {
        device_id: device.to_string(),
        assigned: false,
        changed: removed > 0,
        assigned_at: None,
    })
}
