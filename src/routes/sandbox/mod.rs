//! The sandbox operator's controls of the whole instance, under `/_sandbox/` (scope `sandbox`,
//! which no account's `admin` implies; see [`crate::auth::scopes`]): the clock ([`clock`]) and
//! the simulated fleet's screens ([`fleet`]).
//! `sandbox.control = false` removes these routes (404), as it does the account reset.
//!
//! Every control call is audited, reads included: they act on every account at once.

pub mod clock;
pub mod fleet;

use crate::http::router::Route;
use serde_json::Value;

pub fn routes() -> Vec<Route> {
    clock::routes()
        .into_iter()
        .chain(fleet::routes())
        .map(Route::audited)
        .collect()
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    let mut schemas = clock::schemas();
    schemas.extend(fleet::schemas());
    schemas
}
