//! REST resources, one module per area. Each module contributes its routes to the one route table
//! and the JSON Schemas its routes name to the OpenAPI document.
//!
//! A resource is a `#[derive(Serialize)]` struct whose field order is its JSON member order, read
//! from named columns by `from_row(&crud::Named)` and serialized straight into the response
//! (`Response::ok`, or `Response::page` for a list). Path ids are typed (`ctx.path::<DeviceId>()`);
//! field specs ([`crate::validate::Text`], [`crate::validate::OneOf`]) give a request schema and
//! its check; a query filter that takes one of a list is documented from the same const its handler
//! checks (`one_of_param(name, OneOf(LIST), …)`). What every company-owned resource does alike (owner and visibility, load,
//! delete) is in [`crud`]; an event is recorded with `events::record`, the one way. Resources of the layers below routes (the ledger's
//! transactions and balance) are typed there, with their times as RFC 3339 text.

pub mod account;
pub mod admin;
pub mod ads;
pub mod billing;
pub mod companies;
pub mod console;
pub mod crud;
pub mod date_range;
pub mod devices;
pub mod download;
pub mod events;
pub mod health;
pub mod home;
pub mod invoice_due;
pub mod landing;
pub mod landing_domains;
pub mod media;
pub mod media_usage;
pub mod mp4_header;
pub mod on_air;
pub mod openapi;
pub mod optional;
pub mod page_rows;
pub mod payload;
pub mod payloads;
pub mod plans;
pub mod promotions;
pub mod queries;
pub mod rendered;
pub mod retention;
pub mod scan;
pub mod search;
pub mod sign_in;
pub mod subscriptions;
pub mod time_driven;
pub mod tokens;
pub mod upload;
pub mod webhooks;

use crate::areas::Area;
use crate::http::router::Route;
use payload::Payload;
use payloads::Catalogue;
use serde_json::Value;

pub use optional::{nullable, present};

/// One module of routes: the area it serves (none for the index, health, the document, the account and
/// admin), the routes it adds to the route table, the named schemas those routes refer to and
/// the entries of the webhook payload catalogue for the area's event types.
pub struct Module {
    pub name: &'static str,
    pub area: Option<Area>,
    pub routes: fn() -> Vec<Route>,
    pub schemas: fn() -> Vec<(&'static str, Value)>,
    pub payloads: fn() -> Vec<Payload>,
}

const fn module(
    name: &'static str,
    area: Option<Area>,
    routes: fn() -> Vec<Route>,
    schemas: fn() -> Vec<(&'static str, Value)>,
) -> Module {
    Module {
        name,
        area,
        routes,
        schemas,
        payloads: no_payloads,
    }
}

impl Module {
    /// The module's entries of the payload catalogue (one per event type of its area).
    const fn with_payloads(self, payloads: fn() -> Vec<Payload>) -> Module {
        Module { payloads, ..self }
    }
}

fn no_schemas() -> Vec<(&'static str, Value)> {
    Vec::new()
}

/// A module whose area records no events.
fn no_payloads() -> Vec<Payload> {
    Vec::new()
}

/// The route registry: every module of REST routes, one line each, in the order of the route
/// table and the OpenAPI document. An area's other facts (scope, ids, events, tables) are its entry
/// in [`crate::areas`]; a test checks that every area has exactly one module here.
pub const MODULES: &[Module] = &[
    module("home", None, home::routes, home::schemas),
    module("health", None, health::routes, health::schemas),
    module("openapi", None, openapi::routes, no_schemas),
    module("account", None, account::routes, account::schemas),
    module("sign_in", None, sign_in::routes, sign_in::schemas),
    module(
        "companies",
        Some(Area::Companies),
        companies::routes,
        companies::schemas,
    )
    .with_payloads(companies::payloads),
    module(
        "devices",
        Some(Area::Devices),
        devices::routes,
        devices::schemas,
    )
    .with_payloads(devices::payloads),
    module("ads", Some(Area::Ads), ads::routes, ads::schemas).with_payloads(ads::payloads),
    module("media", Some(Area::Media), media::routes, media::schemas)
        .with_payloads(media::payloads),
    module(
        "promotions",
        Some(Area::Promotions),
        promotions::routes,
        promotions::schemas,
    )
    .with_payloads(promotions::payloads),
    module("plans", Some(Area::Plans), plans::routes, plans::schemas),
    module(
        "tokens",
        Some(Area::Tokens),
        tokens::routes,
        tokens::schemas,
    )
    .with_payloads(tokens::payloads),
    module(
        "billing",
        Some(Area::Billing),
        billing::routes,
        billing::schemas,
    )
    .with_payloads(billing::payloads),
    module(
        "webhooks",
        Some(Area::Webhooks),
        webhooks_and_events,
        webhooks_and_events_schemas,
    )
    .with_payloads(webhooks::payloads),
    module("admin", None, admin::routes, admin::schemas),
    module("console", None, console::routes, console::schemas),
    module("scan", None, scan::routes, no_schemas),
    module("landing", None, landing::routes, no_schemas),
];

/// The webhooks area: its integrations, and the events they deliver ([`events`]).
fn webhooks_and_events() -> Vec<Route> {
    let mut routes = webhooks::routes();
    routes.extend(events::routes());
    routes
}

fn webhooks_and_events_schemas() -> Vec<(&'static str, Value)> {
    let mut schemas = webhooks::schemas();
    schemas.extend(events::schemas());
    schemas
}

/// Every REST route, module by module. The whole route table adds the MCP endpoint beside them
/// (`app::routes`): routes and mcp are siblings, neither imports the other.
pub fn all() -> Vec<Route> {
    MODULES.iter().flat_map(|m| (m.routes)()).collect()
}

/// Every named schema the routes refer to, registered on the router ([`Router::with_schemas`]).
///
/// [`Router::with_schemas`]: crate::http::router::Router::with_schemas
pub fn schemas() -> Vec<(&'static str, Value)> {
    MODULES.iter().flat_map(|m| (m.schemas)()).collect()
}

/// The webhook payload catalogue: every module's entries, made once per process. The pages that
/// list it (`GET /webhook-event-types`, the document's `webhooks`) are routes of this registry, so
/// they cannot read it from here without a circle: `app::App::build` puts it in the app's
/// extensions, where they find it ([`Catalogue::of`]). The layers above read it here.
pub fn payloads() -> &'static Catalogue {
    static CATALOGUE: std::sync::OnceLock<Catalogue> = std::sync::OnceLock::new();
    CATALOGUE.get_or_init(|| Catalogue::new(MODULES.iter().flat_map(|m| (m.payloads)())))
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// The query filters that take one of a fixed list document exactly the list their handlers
    /// check (the schemas are written as text beside the consts, so this keeps them together).
    #[test]
    fn enum_filters_document_the_lists_their_handlers_accept() {
        let router = crate::http::router::Router::new(super::all());
        let doc = super::openapi::document(&router, super::payloads());
        let cases: &[(&str, &str, &[&str])] = &[
            ("/devices", "status", super::devices::STATUSES),
            ("/ads", "status", super::ads::STATUSES),
            ("/media", "content_type", super::media::CONTENT_TYPES),
            ("/promotions", "state", super::promotions::STATES),
            ("/invoices", "status", super::billing::INVOICE_STATUSES),
            ("/tokens/transactions", "kind", crate::ledger::TX_KINDS),
        ];
        for (path, name, accepted) in cases {
            let params = doc["paths"][path]["get"]["parameters"]
                .as_array()
                .unwrap_or_else(|| panic!("{path} has no parameters"));
            let param = params
                .iter()
                .find(|p| p["name"] == *name)
                .unwrap_or_else(|| panic!("{path} has no `{name}`"));
            // Enums are named components: follow the `$ref`.
            let schema = match param["schema"]["$ref"].as_str() {
                Some(r) => doc
                    .pointer(r.trim_start_matches('#'))
                    .unwrap_or(&Value::Null),
                None => &param["schema"],
            };
            let documented: Vec<&str> = schema["enum"]
                .as_array()
                .unwrap_or_else(|| panic!("{path} `{name}` has no enum"))
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(&documented, accepted, "{path} `{name}`");
        }
    }
}
