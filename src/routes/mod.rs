//! REST resources, one module per area. Each module contributes its routes to the one route table
//! and the JSON Schemas its routes name to the OpenAPI document.

pub mod account;
pub mod admin;
pub mod ads;
pub mod billing;
pub mod companies;
pub mod devices;
pub mod health;
pub mod media;
pub mod openapi;
pub mod plans;
pub mod promotions;
pub mod tokens;
pub mod webhooks;

use crate::http::router::Route;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The whole route table, REST and MCP.
pub fn all() -> Vec<Route> {
    let mut routes = Vec::new();
    routes.extend(health::routes());
    routes.extend(openapi::routes());
    routes.extend(account::routes());
    routes.extend(companies::routes());
    routes.extend(devices::routes());
    routes.extend(ads::routes());
    routes.extend(media::routes());
    routes.extend(promotions::routes());
    routes.extend(plans::routes());
    routes.extend(tokens::routes());
    routes.extend(billing::routes());
    routes.extend(webhooks::routes());
    routes.extend(admin::routes());
    routes.extend(crate::mcp::routes());
    routes
}

/// Every named schema the routes refer to.
pub fn schemas() -> Vec<(&'static str, Value)> {
    let mut s = Vec::new();
    s.extend(health::schemas());
    s.extend(account::schemas());
    s.extend(companies::schemas());
    s.extend(devices::schemas());
    s.extend(ads::schemas());
    s.extend(media::schemas());
    s.extend(promotions::schemas());
    s.extend(plans::schemas());
    s.extend(tokens::schemas());
    s.extend(billing::schemas());
    s.extend(webhooks::schemas());
    s.extend(admin::schemas());
    s
}

/// For PATCH fields where `null` (clear) differs from absent (keep): absent -> `None`,
/// `null` -> `Some(None)`. Use with `#[serde(default, deserialize_with = "nullable")]`.
pub fn nullable<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}
