//! The demo world: `fixtures/world.json`, compiled into the binary and loaded into a new database
//! (and again by reset).
//!
//! The file is a list of tables and rows; the loader is generic. Two special values keep the world
//! current and binary-safe: `{"$now": -3600}` is the load time plus an offset in seconds, and
//! `{"$base64": "..."}` is a BLOB.

use super::DbError;
use base64::Engine;
use rusqlite::types::Value as SqlValue;
use serde::Deserialize;
use serde_json::Value;

pub const WORLD_JSON: &str = include_str!("../../fixtures/world.json");
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

/// Inserts the demo world inside the caller's transaction, with `now` as the time base.
pub fn load(tx: &rusqlite::Transaction<'_>, now: i64) -> Result<(), DbError> {
    let world: World =
        serde_json::from_str(WORLD_JSON).map_err(|e| DbError::Fixtures(e.to_string()))?;
    for table in &world.tables {
        if !is_identifier(&table.table) {
            return Err(DbError::Fixtures(format!("bad table name {}", table.table)));
        }
        for row in &table.rows {
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
    Ok(())
}
