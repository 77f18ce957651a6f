//! `/_sandbox/snapshots`: save the whole world under a name, restore it, list and delete. The
//! database's pages go to disk beside it ([`crate::db::snapshot`]), within a byte budget; the
//! rest of the world (the clock, the seeded streams, fault rules, the simulations' marks) is saved
//! beside them ([`super::world`]). A restore puts back exactly that — a frozen clock moves back to
//! the snapshot's instant — so what a test does after a restore does not depend on what ran
//! before it.

use crate::auth::Action;
use crate::db::snapshot::{Info, SnapshotError, MAX_SNAPSHOTS};
use crate::http::router::Route;
use crate::http::{ApiError, Ctx, Response};
use crate::routes::time_driven::timeline;
use crate::time::rfc3339;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a snapshot's name may be (as [`valid_name`] checks it).
const NAME_PATTERN: &str = "^[a-z0-9_-]{1,64}$";

pub fn routes() -> Vec<Route> {
    vec![
        Route::post(
            "/_sandbox/snapshots",
            "createSandboxSnapshot",
            Action::Sandbox,
            create,
        )
        .describe("Save the whole world of the sandbox under a name: the database (SQLite's online backup API, to a file beside it: every account, key, device, event, delivery and pending change), the clock (mode and instant), the seeded generator's streams, the fault rules and the simulations' marks. The sandbox operator's (scope `sandbox`). 409 `snapshot_exists`, `snapshot_limit` (100) or `snapshot_budget_exceeded` (`sandbox.snapshot_budget_bytes`, 512 MiB by default, for all snapshots together).")
        .tag("sandbox")
        .summary(
            "Save the whole world of the sandbox under a name (database, clock, generator, faults).",
        )
        .body("SandboxSnapshotNew")
        .created("SandboxSnapshot")
        .may_return(&[409])
        .not_idempotent()
        .blocking(),
        Route::get(
            "/_sandbox/snapshots",
            "listSandboxSnapshots",
            Action::Sandbox,
            list,
        )
        .no_tool("the sandbox operator's control of the instance, not account data")
        .describe("The saved snapshots by name, with when they were taken (sandbox clock) and their size. The sandbox operator's (scope `sandbox`).")
        .tag("sandbox")
        .summary("The saved snapshots, by name.")
        .ok("SandboxSnapshotSet"),
        Route::post(
            "/_sandbox/snapshots/{name}/restore",
            "restoreSandboxSnapshot",
            Action::Sandbox,
            restore,
        )
        .describe("Put the whole world back exactly as the snapshot saved it, in milliseconds (restore one before each test): the database, a frozen clock's instant (it moves back), the seeded streams, the fault rules and the simulations' marks; webhook attempts in flight are not recorded into it. The audit log and the request journal are history and are not rewound. A snapshot another binary version took is refused (409 `snapshot_version_mismatch`), so is one taken on another clock mode or seed setting (409 `snapshot_incompatible`). The sandbox operator's (scope `sandbox`).")
        .tag("sandbox")
        .summary("Put the whole world back exactly as a snapshot saved it, clock included.")
        .ok("SandboxSnapshotRestored")
        .may_return(&[409])
        .not_idempotent()
        .blocking(),
        Route::delete(
            "/_sandbox/snapshots/{name}",
            "deleteSandboxSnapshot",
            Action::Sandbox,
            delete,
        )
        .describe("Forget a snapshot and remove its files. The sandbox operator's (scope `sandbox`).")
        .tag("sandbox")
        .summary("Forget a snapshot.")
        .returns(204, None),
    ]
}

/// 1 to 64 of `a-z`, `0-9`, `-`, `_`.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

fn error(e: SnapshotError) -> ApiError {
    match e {
        SnapshotError::NotFound(name) => {
            ApiError::NotFound(format!("There is no snapshot named `{name}`."))
        }
        SnapshotError::Exists(name) => ApiError::ConflictCode {
            code: "snapshot_exists",
            detail: format!("A snapshot named `{name}` exists; delete it first to save another under that name."),
        },
        SnapshotError::Full => ApiError::ConflictCode {
            code: "snapshot_limit",
            detail: format!("This sandbox already holds {MAX_SNAPSHOTS} snapshots; delete some first."),
        },
        SnapshotError::Budget { used, needed, budget } => ApiError::ConflictCode {
            code: "snapshot_budget_exceeded",
            detail: format!("Snapshots may take {budget} bytes together (`sandbox.snapshot_budget_bytes`); {used} are in use and this one would bring them to {needed}. Delete some first."),
        },
        SnapshotError::Version { name, taken_with, running } => ApiError::ConflictCode {
            code: "snapshot_version_mismatch",
            detail: format!("Snapshot `{name}` was taken by {taken_with}, and this is {running}: a snapshot restores only into the binary version that took it. Delete it and take a new one."),
        },
        SnapshotError::Incompatible { code, detail } => ApiError::ConflictCode { code, detail },
        SnapshotError::Io(e) => ApiError::Internal(format!("snapshot files: {e}")),
        SnapshotError::Db(e) => ApiError::from(e),
    }
}

/// The `{name}` path parameter; a name that cannot exist is a plain 404.
fn path_name(ctx: &Ctx<'_>) -> Result<String, ApiError> {
    let name = ctx.param("name");
    if valid_name(name) {
        Ok(name.to_string())
    } else {
        Err(error(SnapshotError::NotFound(
            name.chars().take(64).collect(),
        )))
    }
}

/// At most 100 snapshots within `sandbox.snapshot_budget_bytes` together, kept on disk beside the
/// database until deleted (a throw-away database's go with it).
// The number is [`MAX_SNAPSHOTS`] (a test holds them together).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SandboxSnapshotNew")]
struct NewSnapshot {
    #[schemars(length(min = 1, max = 64), regex(pattern = NAME_PATTERN))]
    name: String,
}

/// A saved state of the whole sandbox: its name, when it was taken and its size.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SandboxSnapshot")]
struct View {
    #[schemars(extend("const" = "sandbox_snapshot"))]
    object: &'static str,
    #[schemars(length(min = 1, max = 64), regex(pattern = NAME_PATTERN))]
    name: String,
    /// The sandbox clock when it was saved.
    #[schemars(extend("format" = "date-time"))]
    taken_at: String,
    /// The size of the saved database, on disk beside the live one.
    bytes: u64,
    /// The binary version that took it; a snapshot restores only into that version.
    version: String,
}

fn view(info: Info) -> View {
    View {
        object: "sandbox_snapshot",
        name: info.name,
        taken_at: rfc3339(info.taken_at),
        bytes: info.bytes,
        version: info.version,
    }
}

fn create(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let input: NewSnapshot = ctx.json()?;
    if !valid_name(&input.name) {
        return Err(ApiError::invalid(
            "/name",
            "invalid",
            "1 to 64 characters of a-z, 0-9, `-` and `_`",
        ));
    }
    let app = ctx.app;
    // The timeline stands still while the world is copied: the pages and the rest agree.
    let info = timeline(app)?
        .exclusive(|| {
            let world = serde_json::to_value(super::world::capture(app))
                .map_err(|e| SnapshotError::Io(std::io::Error::other(e)))?;
            ctx.db.snapshot_save(&input.name, ctx.now(), world)
        })
        .map_err(error)?;
    Ok(Response::created(&view(info)))
}

/// Every saved snapshot of the sandbox.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SandboxSnapshotSet")]
struct List {
    #[schemars(extend("const" = "sandbox_snapshot_list"))]
    object: &'static str,
    #[schemars(length(max = MAX_SNAPSHOTS), transform = crate::jsonschema::items::<View>)]
    data: Vec<View>,
    /// The bytes all snapshots take on disk.
    bytes_used: u64,
    /// The bytes they may take together (`sandbox.snapshot_budget_bytes`).
    budget_bytes: u64,
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let data = ctx.app.db.snapshot_list().into_iter().map(view).collect();
    let (bytes_used, budget_bytes) = ctx.app.db.snapshot_usage();
    Ok(Response::ok(&List {
        object: "sandbox_snapshot_list",
        data,
        bytes_used,
        budget_bytes,
    }))
}

/// What a restore put back, and how long it took.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SandboxSnapshotRestored")]
struct Restored {
    #[schemars(extend("const" = "sandbox_snapshot_restore"))]
    object: &'static str,
    #[schemars(transform = crate::jsonschema::component::<View>)]
    snapshot: View,
    /// The clock after the restore: the snapshot's instant on a frozen clock.
    #[schemars(extend("format" = "date-time"))]
    now: String,
}

fn restore(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let name = path_name(ctx)?;
    let app = ctx.app;
    let started = std::time::Instant::now();
    let info = timeline(app)?
        .exclusive(|| {
            let mut checked = None;
            let (info, _) = ctx.db.snapshot_restore(&name, |saved| {
                checked = Some(super::world::check(app, saved)?);
                Ok(())
            })?;
            if let Some(world) = checked {
                super::world::put_back(app, ctx.db, world)?;
            }
            Ok::<_, SnapshotError>(info)
        })
        .map_err(error)?;
    let micros = started.elapsed().as_micros();
    // A frozen clock came back to the snapshot's instant.
    super::clock::note_clock(app);
    // Deliveries the snapshot held pending go out, as they would have from its instant.
    if let Some(outbox) = app
        .extensions
        .get::<std::sync::Arc<crate::webhooks::Outbox>>()
    {
        outbox.wake();
    }
    tracing::info!(snapshot = %name, micros, "snapshot restored");
    let resp = Response::ok(&Restored {
        object: "sandbox_snapshot_restore",
        snapshot: view(info),
        now: rfc3339(ctx.now()),
    });
    // Timing goes in a header, not the body, which stays byte-identical from run to run.
    Ok(resp.with_header(
        "server-timing",
        &format!("restore;dur={:.3}", micros as f64 / 1000.0),
    ))
}

fn delete(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let name = path_name(ctx)?;
    if ctx.app.db.snapshot_delete(&name) {
        Ok(Response::no_content())
    } else {
        Err(error(SnapshotError::NotFound(name)))
    }
}

pub fn schemas() -> Vec<(&'static str, Value)> {
    use crate::jsonschema::{named_body, named_response};
    vec![
        named_body::<NewSnapshot>(),
        named_response::<View>(),
        named_response::<List>(),
        named_response::<Restored>(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_snapshot_limit_is_the_enforced_one() {
        let schema = crate::jsonschema::body::<NewSnapshot>();
        let text = schema["description"].as_str().unwrap_or("");
        assert!(
            text.starts_with(&format!("At most {MAX_SNAPSHOTS} snapshots")),
            "{text}"
        );
    }
}
