//! What a snapshot keeps beside the database's pages, so that a restore puts back the whole world
//! and not only its rows: the clock (mode, instant, the id stamp), the seeded generator's stream
//! positions, the fault rules (counts and draws included), the simulated scans' mark. The fleet
//! simulation's marks live in the database (`device_simulations`) and come back with it; webhook
//! claims are released, as at start-up, since no attempt of the snapshot's instant is in flight
//! any more (an attempt in flight at the restore is not recorded: [`crate::db::Db::generation`]).
//!
//! Not kept, on purpose: rate-limit buckets, MCP sessions, request ids and anything journalling
//! requests: they describe the traffic, not the world, and a restore must not rewind them.

use crate::db::snapshot::SnapshotError;
use crate::http::faults::SavedRule;
use crate::http::App;
use crate::sandbox::simulated_scans::SimulatedScans;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Serialize, Deserialize)]
pub struct World {
    clock_mode: String,
    /// The clock's instant, milliseconds.
    now_ms: i64,
    /// The clock's last id stamp (millisecond, counter).
    id_stamp: (u64, u64),
    /// The seeded streams' positions; `None` in an unseeded sandbox.
    streams: Option<BTreeMap<String, u64>>,
    faults: Vec<SavedRule>,
    simulated_scans: Option<i64>,
}

/// The world as it stands (the caller holds the timeline still).
pub fn capture(app: &App) -> World {
    World {
        clock_mode: app.clock().mode().as_str().to_string(),
        now_ms: app.clock().now_millis(),
        id_stamp: app.clock().id_stamp(),
        streams: app.seeded().map(|g| g.positions()),
        faults: app.faults.save(),
        simulated_scans: app
            .extensions
            .get::<SimulatedScans>()
            .and_then(|s| s.mark()),
    }
}

fn incompatible(detail: String) -> SnapshotError {
    SnapshotError::Incompatible {
        code: "snapshot_incompatible",
        detail,
    }
}

/// Refuses a world this sandbox cannot take: another clock mode, a seed where there is none.
pub fn check(app: &App, saved: &serde_json::Value) -> Result<World, SnapshotError> {
    let world: World = serde_json::from_value(saved.clone())
        .map_err(|e| incompatible(format!("The snapshot's saved state is unreadable ({e}).")))?;
    let mode = app.clock().mode().as_str();
    if world.clock_mode != mode {
        return Err(incompatible(format!(
            "The snapshot was taken on a `{}` clock and this sandbox runs a `{mode}` one; restart it with the same `sandbox.clock` setting to restore it.",
            world.clock_mode
        )));
    }
    if world.streams.is_some() != app.seeded().is_some() {
        return Err(incompatible(
            "The snapshot was taken with a different `sandbox.seed` setting (seeded or not); restart with the same one to restore it.".into(),
        ));
    }
    Ok(world)
}

/// Puts a checked world back (the caller holds the timeline still, the pages just restored).
pub fn put_back(
    app: &App,
    db: crate::db::Scoped<'_>,
    world: World,
) -> Result<(), crate::db::DbError> {
    // A system clock keeps following the system time; only its id sequence comes back.
    app.clock().restore(world.now_ms, world.id_stamp);
    if let (Some(g), Some(streams)) = (app.seeded(), world.streams) {
        g.restore(streams);
    }
    app.faults.restore(world.faults);
    if let Some(scans) = app.extensions.get::<SimulatedScans>() {
        scans.set_mark(world.simulated_scans);
    }
    crate::webhooks::store::release_claims(db)?;
    Ok(())
}
