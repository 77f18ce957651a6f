//! Switching a promotion on (which spends its token cost) and off (which refunds nothing).

use super::promotion::{load, load_visible};
use crate::http::{ApiError, Ctx, Response};
use crate::ids::PromotionId;
use crate::time::rfc3339;

/// Switches a promotion on or off inside one write transaction, after authorization and If-Match.
fn switch(ctx: &mut Ctx<'_>, on: bool) -> Result<Response, ApiError> {
    let id: PromotionId = ctx.path()?;
    let now = ctx.now();
    ctx.db.write(ctx.intent, |tx| {
        let current = load_visible(ctx, tx, &id, now)?;
        let company = current.company_id.as_str();
        ctx.check_if_match(current.version)?;
        if on && current.state == "expired" {
            return Err(ApiError::Conflict(format!(
                "Promotion `{id}` ended at {} and cannot be activated; change `ends_at` first.",
                rfc3339(current.ends_at.0)
            )));
        }
        if current.active == on {
            return Ok(Response::ok(&current).with_etag(current.version));
        }
        if on {
            let cost = current.activation_cost_tokens;
            crate::ledger::spend_for_promotion(tx, company, &id, &current.name, cost, now)?;
            tx.execute(
                "UPDATE promotions SET active = 1, activated_at = ?2, updated_at = ?2, version = version + 1 WHERE id = ?1",
                rusqlite::params![id, now],
            )?;
        } else {
            tx.execute(
                "UPDATE promotions SET active = 0, deactivated_at = ?2, updated_at = ?2, version = version + 1 WHERE id = ?1",
                rusqlite::params![id, now],
            )?;
        }
        let event = if on {
            "promotion.activated"
        } else {
            "promotion.deactivated"
        };
        let promo = load(tx, &id, now)?;
        crate::events::record(tx, company, event, "promotion", &id, &promo)?;
        // Switched on inside its window: it starts now (`promotion.started`); switched off: idle.
        super::timeline::rearm(tx, &id, now)?;
        Ok(Response::ok(&promo).with_etag(promo.version))
    })
}

pub(super) fn activate(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    switch(ctx, true)
}

pub(super) fn deactivate(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    switch(ctx, false)
}
