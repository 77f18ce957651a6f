//! The promotions area's event payloads ([`crate::routes::payloads`]): a promotion as `GET
//! /promotions/{id}` shows it, a QR code without its image, and a code's scans.

use crate::http::ApiError;
use crate::ids::{Kind, PromotionId};
use crate::routes::payload::{schema_ref, to_data, Payload, Subject, SubjectKind};
use serde_json::{json, Value};

/// The subject of the events about a promotion (`resource_type` `promotion`).
pub const PROMOTION: SubjectKind = SubjectKind {
    kind: Kind::Promotion,
    resource: "promotion",
    table: "promotions o",
    company: "o.company_id",
};

/// The subject of the events about a QR code (`resource_type` `qr_code`): its company is its
/// promotion's.
pub const QR_CODE: SubjectKind = SubjectKind {
    kind: Kind::QrCode,
    resource: "qr_code",
    table: "qr_codes o JOIN promotions p ON p.id = o.promotion_id",
    company: "p.company_id",
};

pub fn payloads() -> Vec<Payload> {
    let promotion = |t, d| Payload::new(t, d, &PROMOTION, schema_ref("Promotion"), shown);
    vec![
        promotion("promotion.created", "A promotion was created."),
        promotion("promotion.updated", "A promotion's details changed."),
        promotion("promotion.activated", "A promotion was switched on (its token cost was spent)."),
        promotion("promotion.deactivated", "A promotion was switched off."),
        promotion("promotion.started", "A promotion's window opened (sandbox clock)."),
        promotion("promotion.ended", "A promotion's window closed (sandbox clock)."),
        Payload::new("qr_code.created", "A QR code was made for a promotion: the code without its image.", &QR_CODE, qr_code_schema(), qr_created),
        Payload::deleted("qr_code.deleted", "A QR code was deleted.", &QR_CODE),
        Payload::new("qr_code.scanned", "A QR code's short link was opened (at most one event per code a minute; every scan counts).", &QR_CODE, scanned_schema(), scanned)
            .example_where("o.scan_count > 0")
            .example_hints(json!({"agent_class": "ios", "scans_since_last_event": 1})),
    ]
}

fn shown(s: &Subject<'_>) -> Result<Value, ApiError> {
    let id = PromotionId::parse(s.id).ok_or_else(|| ApiError::not_found("promotion", s.id))?;
    to_data(&super::promotion::load(s.conn, &id, s.now)?)
}

fn qr_created(s: &Subject<'_>) -> Result<Value, ApiError> {
    super::qr_codes::created_data(s.settings, s.conn, s.id)
}

/// The `QrCode` schema without `image_svg`.
fn qr_code_schema() -> Value {
    let mut schema = crate::jsonschema::response::<super::qr_codes::QrCode>();
    if let Some(props) = schema["properties"].as_object_mut() {
        props.remove("image_svg");
    }
    if let Some(required) = schema["required"].as_array_mut() {
        required.retain(|r| r != "image_svg");
    }
    schema
}

/// `qr_code.scanned`: hints `agent_class` (of the scan; `other` if not given) and
/// `scans_since_last_event`.
fn scanned(s: &Subject<'_>) -> Result<Value, ApiError> {
    let class = match s.hint_str("agent_class") {
        None => "other",
        Some(c) => super::scans::AGENT_CLASSES
            .iter()
            .copied()
            .find(|k| *k == c)
            .ok_or_else(|| {
                ApiError::invalid(
                    "/data/agent_class",
                    "invalid_enum",
                    format!("must be one of {}", super::scans::AGENT_CLASSES.join(", ")),
                )
            })?,
    };
    let since = s
        .hints
        .get("scans_since_last_event")
        .and_then(Value::as_i64);
    Ok(crate::routes::scan::scanned_data(
        s.conn, s.id, class, since, s.now,
    )?)
}

fn scanned_schema() -> Value {
    crate::jsonschema::response::<crate::routes::scan::Scanned<'_>>()
}
