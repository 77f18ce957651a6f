//! The instrument around the platform: what only the sandbox adds to the digital-signage service
//! that production also runs (`crate::routes`, `crate::mcp`). It drives the platform through the
//! same router and `authorize` and the platform never imports it (`tests/layers.rs`); where the
//! platform's timeline runs a simulation, `app::App::build` hands the simulation to it at start-up.
//!
//! - the operator's controls under `/_sandbox/` (scope `sandbox`, which no account's `admin`
//!   implies; see [`crate::auth::scopes`]): the clock ([`clock`]), injected faults ([`faults`]),
//!   snapshots of the whole state ([`snapshots`]) and the simulated fleet's screens ([`fleet`]);
//! - the simulations the timeline runs as the clock moves: the fleet's heartbeats and plays
//!   ([`simulator`]) and QR scans of running promotions ([`simulated_scans`]).
//!
//! `sandbox.control = false` removes the routes (404), as it does the account reset. Every control
//! call is audited, reads included: they act on every account at once.

pub mod clock;
pub mod faults;
pub mod fleet;
pub mod simulated_scans;
pub mod simulator;
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
