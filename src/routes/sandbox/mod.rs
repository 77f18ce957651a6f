//! The sandbox operator's controls of the whole instance, under `/_sandbox/` (scope `sandbox`,
//! which no account's `admin` implies; see [`crate::auth::scopes`]): the clock ([`clock`]),
//! injected faults ([`faults`]), snapshots of the whole state ([`snapshots`]) and the simulated
//! fleet's screens ([`fleet`]).
//! `sandbox.control = false` removes these routes (404), as it does the account reset.
//!
//! Every control call is audited, reads included: they act on every account at once.

pub mod clock;
pub mod faults;
pub mod fleet;
pub mod snapshots;

use crate::http::router::Route;
use serde_json::Value;

pub fn routes() -> Vec<Route> {
    [
        clock::routes(),
        faults::routes(),
        snapshots::routes(),
        fleet::routes(),
    ]
    .into_iter()
    .flatten()
    .map(Route::audited)
    .collect()
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    [
        clock::schemas(),
        faults::schemas(),
        snapshots::schemas(),
        fleet::schemas(),
    ]
    .into_iter()
    .flatten()
    .collect()
}
