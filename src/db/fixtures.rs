//! The demo world: `fixtures/world.json`, compiled into the binary and loaded into a new database
//! (and again by reset).
//!
//! The file is a list of tables and rows; the loader is generic. Three special values keep the world
//! current and binary-safe: `{"$now": -3600}` is the load time plus an offset in seconds,
//! `{"$base64": "..."}` is a BLOB, and `{"$file": "lobby.jpg"}` is the BLOB of a file of
//! `fixtures/media/` (the photos and videos, embedded at build time).
//!
//! A row belongs to an account through the first parent its foreign keys name (read from the schema,
//! [`super::schema_facts`]), which lets a sandbox reset reload one account's rows and leave the
//! others alone.

use super::error::DbError;
use super::schema_facts::{self, ForeignKey};
use base64::Engine;
use rusqlite::types::Value as SqlValue;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

pub const WORLD_JSON: &str = include_str!("../../fixtures/world.json");

/// The photos and videos `{"$file": name}` refers to (drawn by `fixtures/media.py`, committed).
const MEDIA_FILES: &[(&str, &[u8])] = &[
    (
        "store-loop.mp4",
        include_bytes!("../../fixtures/media/store-loop.mp4"),
    ),
    (
        "produce-aisle.jpg",
        include_bytes!("../../fixtures/media/produce-aisle.jpg"),
    ),
    (
        "counter.png",
        include_bytes!("../../fixtures/media/counter.png"),
    ),
    (
        "harbour-loop.mp4",
        include_bytes!("../../fixtures/media/harbour-loop.mp4"),
    ),
    (
        "lobby.jpg",
        include_bytes!("../../fixtures/media/lobby.jpg"),
    ),
    ("cafe.jpg", include_bytes!("../../fixtures/media/cafe.jpg")),
];
pub const DEMO_CREDENTIALS_JSON: &str = include_str!("../../fixtures/demo-credentials.json");

#[derive(Deserialize)]
struct World {
    tables: Vec<Table>,
}

#[derive(Deserialize)]
struct Table {
    table: String,
    rows: Vec<serde_json::Map<String, Value>>,
}

fn to_sql(value: &Value, now: i64) -> Result<SqlValue, DbError> {
    Ok(match value {
        Value::Null => SqlValue::Null,
        Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => SqlValue::Integer(i),
            None => SqlValue::Real(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => SqlValue::Text(s.clone()),
        Value::Object(o) => {
            if let Some(offset) = o.get("$now").and_then(Value::as_i64) {
                SqlValue::Integer(now + offset)
            } else if let Some(name) = o.get("$file").and_then(Value::as_str) {
                let (_, bytes) = MEDIA_FILES
                    .iter()
                    .find(|(n, _)| *n == name)
                    .ok_or_else(|| DbError::Fixtures(format!("no media file {name}")))?;
                SqlValue::Blob(bytes.to_vec())
            } else if let Some(b64) = o.get("$base64").and_then(Value::as_str) {
                SqlValue::Blob(
                    base64::engine::general_purpose::STANDARD
                        .decode(b64)
                        .map_err(|e| DbError::Fixtures(format!("bad $base64: {e}")))?,
                )
            } else {
                return Err(DbError::Fixtures(format!("unknown special value {value}")));
            }
        }
        Value::Array(_) => return Err(DbError::Fixtures("arrays must be JSON-encoded".into())),
    })
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
}

fn world() -> Result<World, DbError> {
    serde_json::from_str(WORLD_JSON).map_err(|e| DbError::Fixtures(e.to_string()))
}

/// The account of every fixture row, `None` for global rows, in file order. A row's account is the
/// one of the first parent its foreign keys name; a row that names none (plans, token packs) is
/// global.
fn owners(
    world: &World,
    foreign_keys: &BTreeMap<String, Vec<ForeignKey>>,
) -> Vec<Vec<Option<String>>> {
    let mut by_id: HashMap<String, String> = HashMap::new();
    let mut out = Vec::new();
    for table in &world.tables {
        let mut rows = Vec::new();
        for row in &table.rows {
            let text = |c: &str| row.get(c).and_then(Value::as_str).map(String::from);
            let owner = if table.table == "accounts" {
                text("id")
            } else {
                let keys = foreign_keys.get(&table.table).map(Vec::as_slice);
                keys.unwrap_or(&[]).iter().find_map(|fk| {
                    let parent = text(&fk.column)?;
                    if fk.parent == "accounts" {
                        Some(parent)
                    } else {
                        by_id.get(&parent).cloned()
                    }
                })
            };
            if let (Some(id), Some(o)) = (text("id"), &owner) {
                by_id.insert(id, o.clone());
            }
            rows.push(owner);
        }
        out.push(rows);
    }
    out
}

/// The fixture tables in load order (parents first).
pub fn table_order() -> Result<Vec<String>, DbError> {
    Ok(world()?.tables.into_iter().map(|t| t.table).collect())
}

/// True when the fixtures define this account.
pub fn has_account(account: &str) -> Result<bool, DbError> {
    Ok(world()?
        .tables
        .iter()
        .filter(|t| t.table == "accounts")
        .flat_map(|t| &t.rows)
        .any(|r| r.get("id").and_then(Value::as_str) == Some(account)))
}

/// The time base of a world loaded at `now`: its minute. Fixture times are whole minutes (an
/// invoice is not "due 02:28:14"), whatever second the sandbox started at.
pub fn base_instant(now: i64) -> i64 {
    now - now.rem_euclid(60)
}

/// Inserts the demo world inside the caller's transaction, with `now`'s minute as the time base
/// ([`base_instant`]), its invoices on calendar months ([`super::billing_rule`]).
pub fn load(tx: &rusqlite::Connection, now: i64) -> Result<(), DbError> {
    let base = base_instant(now);
    load_where(tx, base, |_| true)?;
    super::billing_rule::align_fixture_invoices(tx, base, None)
}

/// [`load`] at exactly `anchor`, returning the columns of each table that hold `$now` instants (for
/// [`super::world::shift`], which then places the invoices on calendar months).
pub fn load_anchored(
    tx: &rusqlite::Connection,
    anchor: i64,
) -> Result<Vec<(String, Vec<String>)>, DbError> {
    load_where(tx, anchor, |_| true)
}

/// The columns of each table whose values are `$now` instants, in file order.
fn time_columns(world: &World) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for table in &world.tables {
        let mut columns: Vec<String> = Vec::new();
        for row in &table.rows {
            for (column, value) in row {
                let is_now = value.as_object().is_some_and(|o| o.contains_key("$now"));
                if is_now && !columns.contains(column) {
                    columns.push(column.clone());
                }
            }
        }
        if columns.is_empty() {
            continue;
        }
        match out.iter_mut().find(|(t, _)| *t == table.table) {
            Some((_, known)) => {
                for c in columns {
                    if !known.contains(&c) {
                        known.push(c);
                    }
                }
            }
            None => out.push((table.table.clone(), columns)),
        }
    }
    out
}

/// Inserts the fixture rows of one account (its companies and everything under them, its clients,
/// keys and users), and no global row.
pub fn load_account(tx: &rusqlite::Connection, now: i64, account: &str) -> Result<(), DbError> {
    let base = base_instant(now);
    load_where(tx, base, |owner| owner == Some(account))?;
    super::billing_rule::align_fixture_invoices(tx, base, Some(account))
}

fn load_where(
    tx: &rusqlite::Connection,
    now: i64,
    keep: impl Fn(Option<&str>) -> bool,
) -> Result<Vec<(String, Vec<String>)>, DbError> {
    let world = world()?;
    let owners = owners(&world, &schema_facts::foreign_keys(tx)?);
    let versioned_by_triggers = schema_facts::versioned_by_triggers(tx)?;
    let mut devices: Vec<&str> = Vec::new();
    // Rows whose version the schema's triggers move when related rows are inserted (an ad's
    // assignments, a promotion's QR codes): the demo world starts at the versions it states.
    let mut versioned: Vec<(&str, &str, i64)> = Vec::new();
    let mut accounts: Vec<&str> = Vec::new();
    for (table, owners) in world.tables.iter().zip(&owners) {
        if !is_identifier(&table.table) {
            return Err(DbError::Fixtures(format!("bad table name {}", table.table)));
        }
        for (row, owner) in table.rows.iter().zip(owners) {
            if !keep(owner.as_deref()) {
                continue;
            }
            if table.table == "devices" {
                devices.extend(row.get("id").and_then(Value::as_str));
            }
            if versioned_by_triggers.contains(&table.table) {
                if let Some(id) = row.get("id").and_then(Value::as_str) {
                    let version = row.get("version").and_then(Value::as_i64).unwrap_or(1);
                    versioned.push((&table.table, id, version));
                }
            }
            if table.table == "accounts" {
                accounts.extend(row.get("id").and_then(Value::as_str));
            }
            let columns: Vec<&str> = row.keys().map(String::as_str).collect();
            if let Some(bad) = columns.iter().find(|c| !is_identifier(c)) {
                return Err(DbError::Fixtures(format!("bad column name {bad}")));
            }
            let sql = format!(
                "INSERT INTO {} ({}) VALUES ({})",
                table.table,
                columns.join(", "),
                vec!["?"; columns.len()].join(", ")
            );
            let values = row
                .values()
                .map(|v| to_sql(v, now))
                .collect::<Result<Vec<_>, _>>()?;
            tx.prepare_cached(&sql)?
                .execute(rusqlite::params_from_iter(values))
                .map_err(|e| DbError::Fixtures(format!("{}: {e}", table.table)))?;
        }
    }
    for (table, id, version) in versioned {
        tx.prepare_cached(&format!("UPDATE {table} SET version = ?2 WHERE id = ?1"))?
            .execute(rusqlite::params![id, version])?;
    }
    fleet_profiles(tx, now, &devices)?;
    // Each account loaded owes its history (the sandbox writes it when it settles).
    let mut owed = tx.prepare_cached(
        "INSERT OR REPLACE INTO world_history (account_id, loaded_at, written_at) VALUES (?1, ?2, NULL)",
    )?;
    for account in accounts {
        owed.execute(rusqlite::params![account, now])?;
    }
    Ok(time_columns(&world))
}

/// How long ago a fixture screen's heartbeat may be for its profile to be `steady` (older, yet
/// within [`FIXTURE_OFFLINE_SECS`]: `flaky`).
const FIXTURE_STEADY_SECS: i64 = 60;
/// A fixture screen whose heartbeat is older than this is `offline`.
const FIXTURE_OFFLINE_SECS: i64 = 3_600;

/// Gives the fixture devices just loaded their behaviour profile in the simulated fleet, derived
/// from its fixture row at load time `now`: no heartbeat is `never_seen`; one older than an hour
/// `offline`; playback errors on record `failing_playback`; a heartbeat a minute or more old
/// `flaky`; the rest `steady`. Flaky and failing screens are due at once, so the simulator
/// schedules their first transition (`sandbox::simulator`). Also starts the fleet's
/// heartbeat grid at `now` (rounded down to the minute) when it has none.
fn fleet_profiles(tx: &rusqlite::Connection, now: i64, devices: &[&str]) -> Result<(), DbError> {
    let mut derive = tx.prepare_cached(
        "INSERT OR IGNORE INTO device_simulations (device_id, profile, since_at, next_due_at, up)
         SELECT id, profile, ?1, CASE WHEN profile IN ('flaky', 'failing_playback') THEN ?1 END,
                profile IN ('steady', 'flaky', 'failing_playback')
         FROM (SELECT d.id, CASE
                 WHEN d.last_heartbeat_at IS NULL THEN 'never_seen'
                 WHEN d.last_heartbeat_at < ?1 - ?3 THEN 'offline'
                 WHEN EXISTS (SELECT 1 FROM playback_errors e WHERE e.device_id = d.id)
                   THEN 'failing_playback'
                 WHEN d.last_heartbeat_at <= ?1 - ?2 THEN 'flaky'
                 ELSE 'steady' END AS profile
               FROM devices d WHERE d.id = ?4)",
    )?;
    for device in devices {
        derive.execute(rusqlite::params![
            now,
            FIXTURE_STEADY_SECS,
            FIXTURE_OFFLINE_SECS,
            device
        ])?;
    }
    tx.prepare_cached("INSERT OR IGNORE INTO fleet_simulation (id, beat_at) VALUES (1, ?1)")?
        .execute([now.div_euclid(60) * 60])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_but_the_catalogue_belongs_to_an_account() {
        let world = world().unwrap();
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        super::super::migrations::runner().run(&mut conn).unwrap();
        let owners = owners(&world, &schema_facts::foreign_keys(&conn).unwrap());
        for (table, owners) in world.tables.iter().zip(&owners) {
            let global = ["plans", "token_packs"].contains(&table.table.as_str());
            for owner in owners {
                assert_eq!(owner.is_none(), global, "a row of {}", table.table);
            }
        }
        // Both accounts own rows of every account-owned table.
        let count = |a: &str| {
            owners
                .iter()
                .flatten()
                .filter(|o| o.as_deref() == Some(a))
                .count()
        };
        assert!(count("acct_0m5d4ruo0fb72isqzrb5") > 100);
        assert!(count("acct_0m5d4ruo1jwio9kty5ko") > 50);
    }
}
