//! `GET /webhook-event-types`: every event type the service can emit, what it means, the JSON
//! Schema of its delivery body and an example body, all from the catalogue
//! ([`crate::routes::payloads`]): the example is what the type's builder makes of the demo world.

use crate::http::{ApiError, Ctx, Response};
use crate::routes::payloads::Catalogue;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// An event type a webhook can subscribe to, what it means, its body's schema and an example.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "WebhookEventType")]
pub(super) struct EventType {
    #[serde(rename = "type")]
    #[schemars(transform = &crate::validate::OneOf(crate::events::EVENT_TYPES))]
    event_type: &'static str,
    description: &'static str,
    /// The kind of object the event is about (`resource_type` in `GET /events`).
    object_type: &'static str,
    /// The JSON Schema of a delivery body of this type; its `$ref`s point into this OpenAPI
    /// document's `components`.
    #[schemars(extend("type" = "object"))]
    schema: Value,
    /// A delivery body of this type, `{id, type, timestamp, data}`, made by the type's own payload
    /// builder from the demo world.
    #[schemars(extend("type" = "object"))]
    example: Value,
}

impl crate::http::response::Listed for EventType {
    fn list_key(&self) -> &str {
        self.event_type
    }
}

/// Every event type, on one page (the list is short and fixed; the route takes no `limit`).
pub(super) fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let catalogue = Catalogue::of(ctx.app)?;
    let examples = catalogue.examples();
    let data: Vec<EventType> = catalogue
        .entries()
        .iter()
        .map(|p| EventType {
            event_type: p.event_type,
            description: p.description,
            object_type: p.subject.resource,
            schema: catalogue.documented_schema(p),
            example: examples.get(p.event_type).cloned().unwrap_or(Value::Null),
        })
        .collect();
    let all = crate::http::ctx::PageRequest {
        limit: u32::try_from(data.len()).unwrap_or(u32::MAX),
        before: None,
        // One page holds them all: no cursor is ever given.
        tag: String::new(),
    };
    Ok(Response::page(data, &all))
}
