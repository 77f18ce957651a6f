//! promotions: routes and schemas. (Filled in by the REST API issue.)

use crate::http::router::Route;
use serde_json::Value;

pub fn routes() -> Vec<Route> {
    Vec::new()
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    Vec::new()
}
