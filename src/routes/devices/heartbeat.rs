//! A device's heartbeat: telemetry and playback errors reported by the screen.

use super::device::{authorized_owner, Clock};
use super::diagnostics::{diagnostics, record_playback_error, NewPlaybackError};
use super::fields::{MAX_PLAYBACK_ERRORS, MAX_STORAGE_MB, MAX_UPTIME_SECS, PLAYBACK_MESSAGE};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{DeviceId, Kind, NullableId, TypedId};
use crate::routes::optional::present;
use crate::routes::payload::Subject;
use crate::validate::Errors;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

fn app_version_ok(s: &str) -> bool {
    (1..=32).contains(&s.len())
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'+' | b'_' | b'-'))
}

fn error_code_ok(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PlaybackErrorIn {
    #[schemars(regex(pattern = "^[0-9A-Za-z._-]{1,64}$"))]
    code: String,
    #[schemars(transform = &PLAYBACK_MESSAGE)]
    message: String,
    #[serde(default)]
    #[schemars(transform = NullableId(Kind::Ad))]
    ad_id: Option<String>,
}

/// What a screen's player reports: all members optional.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "DeviceHeartbeat")]
pub(super) struct Heartbeat {
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "String", regex(pattern = "^[0-9A-Za-z.+_-]{1,32}$"))]
    app_version: Option<String>,
    /// The ad playing now; it must be assigned to this device and on air (`on_air`).
    #[serde(default, deserialize_with = "crate::routes::optional::nullable")]
    #[schemars(with = "Option<String>", transform = NullableId(Kind::Ad))]
    current_ad_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "i64", range(min = 0, max = MAX_STORAGE_MB))]
    storage_used_mb: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "i64", range(min = 1, max = MAX_STORAGE_MB))]
    storage_total_mb: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "i64", range(min = 0, max = MAX_UPTIME_SECS))]
    uptime_seconds: Option<i64>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Vec<PlaybackErrorIn>", length(max = MAX_PLAYBACK_ERRORS))]
    playback_errors: Option<Vec<PlaybackErrorIn>>,
}

pub(super) fn heartbeat(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: DeviceId = ctx.path()?;
    // Visibility before the body: validating first would tell another company's id exists.
    authorized_owner(ctx, &*ctx.conn()?, &id)?;
    let input: Heartbeat = ctx.json()?;
    let mut errors = Errors::new();
    let mut sets: Vec<(&str, rusqlite::types::Value)> = Vec::new();
    if let Some(v) = &input.app_version {
        if !app_version_ok(v) {
            errors.push(
                "/app_version",
                "invalid_version",
                "Must be 1 to 32 characters of letters, digits and `.+_-`.",
            );
        }
        sets.push(("app_version", v.clone().into()));
    }
    match &input.current_ad_id {
        Some(Some(ad)) => {
            errors.id("/current_ad_id", ad, Kind::Ad);
            sets.push(("current_ad_id", ad.clone().into()));
        }
        Some(None) => sets.push(("current_ad_id", rusqlite::types::Value::Null)),
        None => {}
    }
    for (field, column, value, min) in [
        (
            "/storage_used_mb",
            "storage_used_mb",
            input.storage_used_mb,
            0,
        ),
        (
            "/storage_total_mb",
            "storage_total_mb",
            input.storage_total_mb,
            1,
        ),
        ("/uptime_seconds", "uptime_seconds", input.uptime_seconds, 0),
    ] {
        if let Some(v) = value {
            let max = if column == "uptime_seconds" {
                MAX_UPTIME_SECS
            } else {
                MAX_STORAGE_MB
            };
            errors.range(field, v, min, max);
            sets.push((column, v.into()));
        }
    }
    let reported = input.playback_errors.unwrap_or_default();
    if reported.len() > MAX_PLAYBACK_ERRORS {
        errors.push(
            "/playback_errors",
            "too_many",
            format!("At most {MAX_PLAYBACK_ERRORS} playback errors per heartbeat."),
        );
    }
    for (i, e) in reported.iter().enumerate() {
        if !error_code_ok(&e.code) {
            errors.push(
                &format!("/playback_errors/{i}/code"),
                "invalid_code",
                "Must be 1 to 64 characters of letters, digits and `._-`.",
            );
        }
        PLAYBACK_MESSAGE.check(
            &mut errors,
            &format!("/playback_errors/{i}/message"),
            &e.message,
        );
        if let Some(ad) = &e.ad_id {
            errors.id(&format!("/playback_errors/{i}/ad_id"), ad, Kind::Ad);
        }
    }
    errors.finish()?;

    let clock = Clock::of(ctx);
    let now = clock.now;
    ctx.db.write(ctx.intent, |tx| {
        let company = authorized_owner(ctx, tx, &id)?.company;
        if let Some(Some(ad)) = &input.current_ad_id {
            // The ad on screen now is one the screen plays now (`routes::on_air`).
            match crate::routes::on_air::on_screen(tx, id.as_str(), ad, now)? {
                None => {
                    return Err(ApiError::Conflict(format!(
                        "`/current_ad_id`: ad `{ad}` is not assigned to this device; assign it first."
                    )))
                }
                Some(false) => {
                    return Err(ApiError::Conflict(format!(
                        "`/current_ad_id`: ad `{ad}` is not on air now (see its `on_air`), so this device does not play it."
                    )))
                }
                Some(true) => {}
            }
        }
        for (i, e) in reported.iter().enumerate() {
            if let Some(ad) = &e.ad_id {
                let same_company = tx
                    .prepare_cached("SELECT 1 FROM ads WHERE id = ?1 AND company_id = ?2")?
                    .exists([ad, &company])?;
                if !same_company {
                    return Err(ApiError::NotFound(format!(
                        "`/playback_errors/{i}/ad_id`: no ad `{ad}` in the device's company."
                    )));
                }
            }
        }

        let mut assignments = vec![
            "last_heartbeat_at = ?2".to_string(),
            "updated_at = ?2".into(),
        ];
        assignments.extend(
            sets.iter()
                .enumerate()
                .map(|(i, (c, _))| format!("{c} = ?{}", i + 3)),
        );
        let sql = format!(
            "UPDATE devices SET {} WHERE id = ?1",
            assignments.join(", ")
        );
        let mut args: Vec<rusqlite::types::Value> = vec![id.to_string().into(), now.into()];
        args.extend(sets.iter().map(|(_, v)| v.clone()));
        tx.execute(&sql, rusqlite::params_from_iter(args))?;

        for e in &reported {
            let error = NewPlaybackError {
                code: &e.code,
                message: e.message.trim(),
                ad_id: e.ad_id.as_deref(),
            };
            record_playback_error(tx, &id, &error, now)?;
        }

        // A device reported offline is back: `device.online`, before its heartbeat's event.
        super::presence::heartbeat_arrived(tx, &id, &company, clock.offline_after)?;
        let diag = diagnostics(tx, &id, clock)?;
        let hints = json!({"playback_errors_reported": reported.len()});
        let no_hints = serde_json::Map::new();
        let subject = Subject {
            conn: tx,
            now: tx.now(),
            settings: &ctx.app.settings,
            company: &company,
            id: &id,
            hints: hints.as_object().unwrap_or(&no_hints),
        };
        let data = super::payloads::heartbeat(&subject)?;
        crate::events::record(tx, &company, "device.heartbeat", "device", &id, &data)?;
        Ok(Response::ok(&diag))
    })
}
