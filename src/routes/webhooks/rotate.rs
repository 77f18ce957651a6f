//! `POST /webhooks/{id}/rotate-secret`: a new signing secret, shown once in the response. The
//! previous one keeps signing, as a second `v1,` signature in `webhook-signature`, for
//! `webhooks.rotation_grace_secs`, so a receiver can switch secrets without losing a delivery.

use super::access::WRITE;
use super::webhook::{load, load_visible, Webhook};
use crate::http::router::Route;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::{TypedId, WebhookId};

pub fn routes() -> Vec<Route> {
    vec![Route::post(
        "/webhooks/{id}/rotate-secret",
        "rotateWebhookSecret",
        WRITE,
        rotate,
    )
    .tool(super::tools::ROTATE)
    .describe("Replace a webhook's signing secret. The new `secret` is in this response only (`Cache-Control: no-store`); for `webhooks.rotation_grace_secs` deliveries carry two signatures, the new secret's first, so a receiver can switch without losing one. Needs `webhooks:write`. Emits `webhook.updated`.")
    .tag("webhooks")
    .summary("Replace the signing secret; the new `secret` is in this response only. The old one also signs for `webhooks.rotation_grace_secs`.")
    .ok("WebhookWithSecret")
    .not_idempotent()]
}

fn rotate(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let id: WebhookId = ctx.path()?;
    let secret = format!(
        "whsec_{}",
        crate::random::base62(ctx.seeded(), "webhook_secret", 32)
    );
    let now = ctx.now();
    let grace_until = now + ctx.app.settings.webhook_rotation_grace_secs;
    ctx.db.write(ctx.intent, |tx| {
        let current = load_visible(ctx, tx, &id)?;
        tx.prepare_cached(
            "UPDATE webhooks SET previous_secret = secret, previous_secret_expires_at = ?2,
                 secret = ?3, updated_at = ?4, version = version + 1 WHERE id = ?1",
        )?
        .execute(rusqlite::params![id.as_str(), grace_until, secret, now])?;
        let hook = load(tx, &id)?;
        crate::events::record(
            tx,
            &current.company_id,
            "webhook.updated",
            "webhook",
            &id,
            &hook,
        )?;
        let shown = Webhook {
            secret: Some(secret),
            ..hook
        };
        Ok(Response::ok(&shown)
            .with_etag(shown.version)
            .with_header("cache-control", "no-store"))
    })
}
