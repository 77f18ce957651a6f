//! `GET /webhook-event-types`: every event type the service can emit (the area registry's), what it
//! means, and an example delivery body. Any event recorded for a company is deliverable: the outbox
//! matches on the type name, so a type added to the registry needs nothing here but, ideally, a
//! description (an unknown one reads "An event of this type.").

use crate::events::EVENT_TYPES;
use crate::http::{ApiError, Ctx, Response};
use serde::Serialize;
use serde_json::{json, Value};

pub(super) fn describe(event_type: &str) -> &'static str {
    match event_type {
        "device.created" => "A screen was registered.",
        "device.updated" => "A screen's details changed.",
        "device.deleted" => "A screen was removed.",
        "device.heartbeat" => "A screen reported in.",
        "device.offline" => "A screen stopped reporting in (sandbox clock).",
        "device.online" => "A screen reported in again after being offline.",
        "ad.created" => "An ad was created.",
        "ad.updated" => "An ad changed (content, status or schedule).",
        "ad.deleted" => "An ad was deleted.",
        "ad.assigned" => "An ad was assigned to a screen.",
        "ad.unassigned" => "An ad was removed from a screen.",
        "promotion.created" => "A promotion was created.",
        "promotion.updated" => "A promotion's details changed.",
        "promotion.activated" => "A promotion was switched on (its token cost was spent).",
        "promotion.deactivated" => "A promotion was switched off.",
        "promotion.started" => "A promotion's window opened (sandbox clock).",
        "promotion.ended" => "A promotion's window closed (sandbox clock).",
        "media.created" => "A media item was uploaded.",
        "media.deleted" => "A media item was deleted.",
        "tokens.purchased" => "A token pack was bought.",
        "tokens.spent" => "Tokens were spent (promotion activation).",
        "invoice.overdue" => "An invoice passed its due date unpaid (sandbox clock).",
        "branding.updated" => "A company's brand tokens changed.",
        "api_key.expired" => "An API key reached its expiry (sandbox clock).",
        "webhook.created" => "A webhook was created.",
        "webhook.updated" => "A webhook changed (including a secret rotation).",
        "webhook.deleted" => "A webhook was deleted.",
        "webhook.disabled" => "A webhook was disabled because its deliveries kept failing.",
        "webhook.test" => "A test event, sent with POST /webhooks/{id}/test to that webhook only.",
        "device.playback_recorded" => "A player reported a play (POST /devices/{id}/playbacks).",
        "qr_code.created" => "A QR code was made for a promotion.",
        "qr_code.deleted" => "A QR code was deleted.",
        "qr_code.scanned" => "A QR code's short link was opened (at most one event per code a minute; every scan counts).",
        "mcp.confirmation_expired" => "A prepared MCP change expired unconfirmed (sandbox clock).",
        _ => "An event of this type.",
    }
}

/// The `data` of an example: the object the event is about, as the REST API shows it (shortened).
fn example_data(event_type: &str) -> Value {
    let (object, action) = event_type.split_once('.').unwrap_or((event_type, ""));
    let (prefix, name) = match object {
        "device" => ("dev", "device"),
        "ad" => ("ad", "ad"),
        "promotion" => ("promo", "promotion"),
        "media" => ("med", "media"),
        "tokens" => ("ttx", "token_transaction"),
        "invoice" => ("inv", "invoice"),
        "branding" => ("cmp", "company"),
        "api_key" => ("key", "api_key"),
        "webhook" => ("wh", "webhook"),
        other => (other, other),
    };
    let id = format!("{prefix}_01JNQ8Z6Y0EXAMPLE0000000");
    if action == "deleted" {
        return json!({"id": id, "object": name, "deleted": true});
    }
    let mut data = json!({"id": id, "object": name, "company_id": "cmp_01JNQ8Z6Y0EXAMPLE0000000"});
    match event_type {
        "tokens.spent" => {
            data["kind"] = json!("spend");
            data["amount"] = json!(-50);
        }
        "tokens.purchased" => {
            data["kind"] = json!("purchase");
            data["amount"] = json!(500);
            data = json!({"transaction": data, "charge_id": "ch_01JNQ8Z6Y0EXAMPLE0000000",
                "invoice_id": "inv_01JNQ8Z6Y0EXAMPLE0000000"});
        }
        "webhook.test" => {
            data = json!({"webhook_id": id, "message": "A test event sent with POST /webhooks/{id}/test."});
        }
        _ if object == "webhook" => {
            data["url"] = json!("https://example.com/hooks/signage");
            data["enabled"] = json!(action != "disabled");
        }
        _ => {}
    }
    data
}

fn example(event_type: &str) -> Value {
    json!({
        "id": "evt_01JNQ8Z6Y0EXAMPLE0000000",
        "type": event_type,
        "timestamp": "2026-03-02T09:00:00Z",
        "data": example_data(event_type),
    })
}

/// An event type a webhook can subscribe to, what it means, and an example body.
#[derive(Serialize)]
struct EventType {
    #[serde(rename = "type")]
    event_type: &'static str,
    description: &'static str,
    example: Value,
}

impl crate::http::response::Listed for EventType {
    fn list_key(&self) -> &str {
        self.event_type
    }
}

/// Every event type, on one page (the list is short and fixed; the route takes no `limit`).
pub(super) fn list(_ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let data: Vec<EventType> = EVENT_TYPES
        .iter()
        .map(|t| EventType {
            event_type: t,
            description: describe(t),
            example: example(t),
        })
        .collect();
    let all = crate::http::ctx::PageRequest {
        limit: u32::try_from(data.len()).unwrap_or(u32::MAX),
        before: None,
    };
    Ok(Response::page(data, &all))
}
