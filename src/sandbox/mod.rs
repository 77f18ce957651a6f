//! The instrument around the platform: what only the sandbox adds to the digital-signage service
//! that production also runs (`crate::routes`, `crate::mcp`). It drives the platform through the
//! same router and `authorize` and the platform never imports it (`tests/layers.rs`); where the
//! platform's timeline runs a simulation, `app::App::build` hands the simulation to it at start-up.
//!
//! - the operator's controls under `/_sandbox/` (scope `sandbox`, which no account's `admin`
//!   implies; see [`crate::auth::scopes`]): the clock ([`clock`]), injected faults ([`faults`]),
//!   snapshots of the whole state ([`snapshots`]), the simulated fleet's screens ([`fleet`]) and
//!   the size of the world: companies added to an account, a plan's screen cap ([`tenants`]);
//! - the simulations the timeline runs as the clock moves: the fleet's heartbeats and plays
//!   ([`simulator`]) and QR scans of running promotions ([`simulated_scans`]).
//!
//! `sandbox.control = false` removes the routes (404), as it does the account reset. Every control
//! call is audited, reads included: they act on every account at once.

mod beats;
pub mod clock;
pub mod drills;
pub mod faults;
pub mod fleet;
pub mod history;
pub mod journal;
pub mod outbox;
mod playables;
mod plays;
pub mod readiness;
pub mod simulated_scans;
pub mod simulator;
pub mod sink;
pub mod snapshots;
pub mod tenants;
pub mod triggers;
pub mod world;

use crate::http::router::Route;
use serde_json::Value;

pub fn routes() -> Vec<Route> {
    [
        clock::routes(),
        faults::routes(),
        snapshots::routes(),
        fleet::routes(),
        tenants::routes(),
        outbox::routes(),
        triggers::routes(),
        drills::routes(),
    ]
    .into_iter()
    .flatten()
    .map(Route::audited)
    // The sink's receiving end is called by webhook deliveries, not by the operator: not audited.
    .chain(sink::routes().into_iter().map(|r| {
        if r.method == hyper::Method::POST {
            r
        } else {
            r.audited()
        }
    }))
    // The operator's journal and readiness reads are audited; an account's own reads are not.
    .chain(
        journal::routes::routes()
            .into_iter()
            .chain(readiness::routes())
            .map(|r| {
                if r.path.starts_with("/_sandbox/") {
                    r.audited()
                } else {
                    r
                }
            }),
    )
    .collect()
}

/// Installs what the sandbox observes the platform with: the request journal, handed to the
/// pipeline as its observer ([`crate::http::observe`]). With `sandbox.journal = false` the journal
/// is still opened (its reads and the drills' verdicts work) but observes nothing: the pipeline
/// then pays one map lookup per request, which is what the benchmark compares against.
/// Opens the request journal (see [`journal`]) and tells it the MCP tools' names.
pub fn open_journal(
    settings: &crate::config::Settings,
    router: &crate::http::router::Router,
) -> rusqlite::Result<std::sync::Arc<journal::Journal>> {
    let journal = std::sync::Arc::new(journal::Journal::open(settings)?);
    // The tools' names only: the catalogue (every tool's schemas, a fifth of a cold start) is built
    // by the first MCP request that needs it, from the same specs in the same order.
    journal.know_tools(
        crate::mcp::spec::specs(router)
            .into_iter()
            .map(|spec| spec.name),
    );
    Ok(journal)
}

/// Installs the request journal: it observes every request when `journal` is on.
pub fn install(app: &mut crate::http::App, journal: std::sync::Arc<journal::Journal>) {
    if app.settings.journal {
        app.extensions
            .insert(crate::http::observe::Observers(journal.clone()));
    }
    app.extensions.insert(journal);
    clock::note_clock(app);
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    [
        clock::schemas(),
        faults::schemas(),
        snapshots::schemas(),
        fleet::schemas(),
        tenants::schemas(),
        outbox::schemas(),
        sink::schemas(),
        triggers::schemas(),
        journal::routes::schemas(),
        drills::schemas(),
        readiness::schemas(),
    ]
    .into_iter()
    .flatten()
    .collect()
}
