//! `/_sandbox/snapshots`: save the whole state under a name, restore it, list and delete
//! ([`crate::db::snapshot`]). A restore keeps the clock where it is (a frozen clock never moves
//! back): whatever falls due between the snapshot's instant and now runs on the next advance or
//! tick.

use crate::auth::Action;
use crate::db::snapshot::{Info, SnapshotError, MAX_SNAPSHOTS};
use crate::http::router::Route;
use crate::http::{ApiError, Ctx, Response};
use crate::time::rfc3339;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub fn routes() -> Vec<Route> {
    vec![
        Route::post(
            "/_sandbox/snapshots",
            "createSandboxSnapshot",
            Action::Sandbox,
            create,
        )
        .describe("Save the whole state of the sandbox under a name (SQLite's online backup API, into memory): every account, key, device, event and pending change. The sandbox operator's (scope `sandbox`). 409 `snapshot_exists` or `snapshot_limit` (20).")
        .tag("sandbox")
        .summary(
            "Save the whole state of the sandbox under a name (SQLite's online backup, in memory).",
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
        .describe("Put the whole state back as the snapshot saved it, in milliseconds (restore one before each test). The clock keeps its time (it never moves back); what falls due since runs on the next advance. The sandbox operator's (scope `sandbox`).")
        .tag("sandbox")
        .summary("Put the whole state back as a snapshot saved it; the clock keeps its time.")
        .ok("SandboxSnapshotRestored")
        .not_idempotent()
        .blocking(),
        Route::delete(
            "/_sandbox/snapshots/{name}",
            "deleteSandboxSnapshot",
            Action::Sandbox,
            delete,
        )
        .describe("Forget a snapshot. The sandbox operator's (scope `sandbox`).")
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewSnapshot {
    name: String,
}

#[derive(Serialize)]
struct View {
    object: &'static str,
    name: String,
    taken_at: String,
    bytes: u64,
}

fn view(info: Info) -> View {
    View {
        object: "sandbox_snapshot",
        name: info.name,
        taken_at: rfc3339(info.taken_at),
        bytes: info.bytes,
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
    let info = ctx
        .app
        .db
        .snapshot_save(&input.name, crate::time::now())
        .map_err(error)?;
    Ok(Response::created(&view(info)))
}

#[derive(Serialize)]
struct List {
    object: &'static str,
    data: Vec<View>,
}

fn list(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let data = ctx.app.db.snapshot_list().into_iter().map(view).collect();
    Ok(Response::ok(&List {
        object: "sandbox_snapshot_list",
        data,
    }))
}

#[derive(Serialize)]
struct Restored {
    object: &'static str,
    snapshot: View,
    /// The clock, which a restore leaves where it is.
    now: String,
}

fn restore(ctx: &mut Ctx<'_>) -> Result<Response, ApiError> {
    let name = path_name(ctx)?;
    let started = std::time::Instant::now();
    let info = ctx.app.db.snapshot_restore(&name).map_err(error)?;
    let micros = started.elapsed().as_micros();
    tracing::info!(snapshot = %name, micros, "snapshot restored");
    let resp = Response::ok(&Restored {
        object: "sandbox_snapshot_restore",
        snapshot: view(info),
        now: rfc3339(crate::time::now()),
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
    let name = json!({"type":"string","minLength":1,"maxLength":64,"pattern":"^[a-z0-9_-]{1,64}$"});
    let snapshot = json!({"type":"object","additionalProperties":false,
        "required":["object","name","taken_at","bytes"],
        "properties":{"object":{"const":"sandbox_snapshot"},"name":name,
            "taken_at":{"type":"string","format":"date-time","description":"The sandbox clock when it was saved."},
            "bytes":{"type":"integer","minimum":0,"description":"The size of the saved database, held in memory."}}});
    vec![
        (
            "SandboxSnapshotNew",
            json!({"type":"object","additionalProperties":false,"required":["name"],
            "description":format!("At most {MAX_SNAPSHOTS} snapshots, kept in memory until deleted or the process stops."),
            "properties":{"name":name}}),
        ),
        ("SandboxSnapshot", snapshot),
        (
            "SandboxSnapshotSet",
            json!({"type":"object","additionalProperties":false,"required":["object","data"],
            "properties":{"object":{"const":"sandbox_snapshot_list"},
                "data":{"type":"array","maxItems":MAX_SNAPSHOTS,"items":{"$ref":"#/components/schemas/SandboxSnapshot"}}}}),
        ),
        (
            "SandboxSnapshotRestored",
            json!({"type":"object","additionalProperties":false,"required":["object","snapshot","now"],
            "properties":{"object":{"const":"sandbox_snapshot_restore"},
                "snapshot":{"$ref":"#/components/schemas/SandboxSnapshot"},
                "now":{"type":"string","format":"date-time","description":"The clock, which a restore leaves where it is."}}}),
        ),
    ]
}
