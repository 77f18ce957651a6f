//! The ads area's event payloads ([`crate::routes::payloads`]): an ad as `GET /ads/{id}` shows it,
//! and its assignment to a screen.

use super::assignment::assignment;
use crate::http::ApiError;
use crate::ids::{AdId, Kind};
use crate::routes::payload::{schema_ref, to_data, Payload, Subject, SubjectKind};
use rusqlite::OptionalExtension;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// The subject of the events about an ad (`resource_type` `ad`).
pub const AD: SubjectKind = SubjectKind {
    kind: Kind::Ad,
    resource: "ad",
    table: "ads o",
    company: "o.company_id",
};

pub fn payloads() -> Vec<Payload> {
    vec![
        Payload::new(
            "ad.created",
            "An ad was created.",
            &AD,
            schema_ref("Ad"),
            shown,
        ),
        Payload::new(
            "ad.updated",
            "An ad changed (content, status or schedule).",
            &AD,
            schema_ref("Ad"),
            shown,
        ),
        Payload::deleted("ad.deleted", "An ad was deleted.", &AD),
        Payload::new(
            "ad.assigned",
            "An ad was assigned to a screen: the assignment.",
            &AD,
            schema_ref("AdAssignment"),
            assigned,
        )
        .takes(&["device_id"])
        .example_where("EXISTS (SELECT 1 FROM ad_assignments x WHERE x.ad_id = o.id)"),
        Payload::new(
            "ad.unassigned",
            "An ad was removed from a screen.",
            &AD,
            unassigned_schema(),
            unassigned,
        )
        .takes(&["device_id"])
        .example_where("EXISTS (SELECT 1 FROM ad_assignments x WHERE x.ad_id = o.id)"),
    ]
}

fn ad_id(id: &str) -> Result<AdId, ApiError> {
    AdId::parse(id).ok_or_else(|| ApiError::not_found("ad", id))
}

fn shown(s: &Subject<'_>) -> Result<Value, ApiError> {
    to_data(&super::ad::load(s.conn, &ad_id(s.id)?, s.now)?)
}

/// The screen an assignment event names: hint `device_id` (a screen of the ad's company), else
/// the screen the ad was assigned to last.
fn device_of(s: &Subject<'_>) -> Result<String, ApiError> {
    match s.hint_str("device_id") {
        Some(device) => {
            let company: Option<String> = s
                .conn
                .prepare_cached("SELECT company_id FROM devices WHERE id = ?1")?
                .query_row([device], |r| r.get(0))
                .optional()?;
            if company.as_deref() != Some(s.company) {
                return Err(ApiError::invalid(
                    "/data/device_id",
                    "not_found",
                    format!("No screen `{device}` in company `{}`.", s.company),
                ));
            }
            Ok(device.to_string())
        }
        None => s
            .conn
            .prepare_cached(
                "SELECT device_id FROM ad_assignments WHERE ad_id = ?1
                 ORDER BY assigned_at DESC, device_id DESC LIMIT 1",
            )?
            .query_row([s.id], |r| r.get(0))
            .optional()?
            .ok_or_else(|| {
                ApiError::invalid(
                    "/data/device_id",
                    "required",
                    "The ad is assigned to no screen: name one in `data.device_id`.",
                )
            }),
    }
}

/// `ad.assigned`: the assignment as `POST /ads/{id}/devices` answers it (`newly_assigned` true).
fn assigned(s: &Subject<'_>) -> Result<Value, ApiError> {
    let device = device_of(s)?;
    let at: i64 = s
        .conn
        .prepare_cached(
            "SELECT assigned_at FROM ad_assignments WHERE ad_id = ?1 AND device_id = ?2",
        )?
        .query_row([s.id, device.as_str()], |r| r.get(0))
        .optional()?
        .ok_or_else(|| {
            ApiError::invalid(
                "/data/device_id",
                "not_assigned",
                format!("The ad is not assigned to `{device}`."),
            )
        })?;
    to_data(&assignment(s.id, &device, s.company, at, true))
}

/// Records `ad.unassigned` for `ad` leaving `device`, in the write `tx` that removed the
/// assignment: the one-screen route and the batch emit the same event the same way.
pub(super) fn record_unassigned(
    tx: &crate::db::Tx,
    settings: &crate::config::Settings,
    company: &str,
    ad: &str,
    device: &str,
) -> Result<(), ApiError> {
    let mut hints = serde_json::Map::new();
    hints.insert("device_id".into(), device.into());
    let subject = Subject {
        conn: tx,
        now: tx.now(),
        settings,
        company,
        id: ad,
        hints: &hints,
    };
    let data = unassigned(&subject)?;
    crate::events::record(tx, company, "ad.unassigned", "ad", ad, &data)?;
    Ok(())
}

/// `ad.unassigned`: which ad left which screen.
pub(super) fn unassigned(s: &Subject<'_>) -> Result<Value, ApiError> {
    let device = device_of(s)?;
    to_data(&Unassigned {
        object: "ad_assignment",
        ad_id: s.id,
        device_id: device,
        company_id: s.company,
    })
}

// The `data` of `ad.unassigned`: no description of its own (the event type's says what it is).
// Field order is the order of the JSON members.
#[derive(Serialize, JsonSchema)]
struct Unassigned<'a> {
    #[schemars(extend("const" = "ad_assignment"))]
    object: &'static str,
    #[schemars(transform = Kind::Ad)]
    ad_id: &'a str,
    #[schemars(transform = Kind::Device)]
    device_id: String,
    #[schemars(transform = Kind::Company)]
    company_id: &'a str,
}

fn unassigned_schema() -> Value {
    crate::jsonschema::response::<Unassigned<'_>>()
}
