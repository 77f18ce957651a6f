//! The two-step MCP tools that create, delete and rotate the secret of a webhook, declared on
//! their routes in [`super::routes`] and [`super::rotate`]. The signing secret is never shown
//! through MCP (`withholding`): the confirmation hands it to the person through a one-time link.

use crate::http::router::{Change, Tool};

const WEBHOOK: &[(&str, &str)] = &[("webhook_id", "The webhook (`wh_…`).")];

/// Where a secret made through MCP is read: by the person, through the one-time link the
/// confirmation hands them (`withheld.reveal`), never by the assistant.
macro_rules! shown_to_the_person {
    () => {
        "After confirmation, `withheld.reveal` hands it to the user through a one-time link (their client shows it, or you pass the link on); it is never shown to you. Lost: rotate again."
    };
}

pub(super) const CREATE: Tool = Tool::prepare(
    "prepare_webhook_creation",
    "Prepare a new webhook",
    &[("company_id", "The company (`cmp_…`).")],
    Change::Body(&["company_id", "url", "description", "event_types", "enabled"]),
    "Prepare a new webhook: signed deliveries of the chosen event types to a URL. Its secret is never shown here. This executes NOTHING: it checks the webhook as the write would and returns a preview and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
)
.reading("getCompany")
.withholding(
    "secret",
    concat!("the webhook's first secret. ", shown_to_the_person!()),
)
.asking("Create a webhook of {company} that sends signed deliveries to {url}; its signing secret is shown to you once through a one-time link after you accept, never to the assistant. Webhooks subscribed to webhook.created are notified.");

pub(super) const DELETE: Tool = Tool::prepare(
    "prepare_webhook_deletion",
    "Prepare deleting a webhook",
    WEBHOOK,
    Change::Deletes,
    "Prepare deleting a webhook and its delivery log (pausing: prepare_webhook_change). This executes NOTHING: it returns a preview (the webhook as it is) and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
)
.asking("Delete the webhook {target} of {company} and its delivery log; nothing is sent to it any more. Webhooks subscribed to webhook.deleted are notified.");

pub(super) const ROTATE: Tool = Tool::prepare(
    "prepare_webhook_secret_rotation",
    "Prepare replacing a webhook's secret",
    WEBHOOK,
    Change::Body(&[]),
    "Prepare replacing a webhook's signing secret (after a leak); the old one still signs for a grace period. The new one is never shown here. This executes NOTHING: it returns a preview and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
)
.withholding(
    "secret",
    concat!(
        "the new secret; the old one keeps signing beside it for `webhooks.rotation_grace_secs`, then only the new one does. ",
        shown_to_the_person!()
    ),
)
.asking("Replace the signing secret of the webhook {target} of {company}; the old secret keeps signing beside the new one for {grace}, after which deliveries carry only the new one's signature. The new secret is shown to you once through a one-time link after you accept, never to the assistant: give it to the receiver within {grace} to keep verifying deliveries.");

pub(super) const TEST: Tool = Tool::prepare(
    "prepare_webhook_test",
    "Prepare a test delivery",
    WEBHOOK,
    Change::Body(&[]),
    "Prepare sending a `webhook.test` event now, to check a webhook's receiver. This executes NOTHING: it returns a preview and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
)
.asking("Send a webhook.test event to the webhook {target} of {company} now: the server makes one signed HTTP request to its URL, whatever event types it subscribes to and even if it is disabled. The delivery is recorded in its log.");

pub(super) const REDELIVER: Tool = Tool::prepare(
    "prepare_webhook_redelivery",
    "Prepare redelivering an event",
    &[
        ("webhook_id", "The webhook (`wh_…`)."),
        ("delivery_id", "The delivery (`whd_…`)."),
    ],
    Change::Body(&[]),
    "Prepare one more attempt of a webhook delivery, whatever its status. This executes NOTHING: it returns a preview and a `confirmation_id`. Show the preview to the user and ask for explicit confirmation; only if the user agrees, call confirm_change with the id.",
)
// The preview reads the webhook (where the delivery goes, bound by its version); the delivery's
// log is bound through the dry run's answer.
.reading("getWebhook")
.asking("Send the delivery {delivery_id} of the webhook {target} of {company} again now: the server makes one more signed HTTP request with the same event to its URL, and records the attempt.");
