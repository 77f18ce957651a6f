//! Facts read from the migrated schema itself rather than listed beside it: which account a row
//! belongs to (its foreign keys, followed up to `accounts`) and which tables' `version` the
//! schema's triggers move. A new table or trigger is then covered by the reset, the fixture loader
//! and the world's shift without a line anywhere else; a table that reaches no account and is not
//! declared shared is an error, not a table the account reset silently leaves alone.

use super::error::DbError;
use rusqlite::Connection;
use std::collections::{BTreeMap, BTreeSet};

/// Tables whose rows belong to no account: the global catalogue (plans, token packs) and the
/// fleet's one heartbeat grid.
pub const SHARED_TABLES: &[&str] = &["plans", "token_packs", "fleet_simulation"];

/// Tables whose rows belong to a credential (an API key or a user) rather than to an object: the
/// account reset deletes them by actor.
pub const PER_ACTOR_TABLES: &[&str] = &["idempotency_keys", "mcp_pending_changes"];

/// One foreign key: the child's column, the parent table and the parent's column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignKey {
    pub column: String,
    pub parent: String,
    pub parent_column: String,
}

/// Every table's foreign keys, in the order SQLite lists them.
pub fn foreign_keys(conn: &Connection) -> Result<BTreeMap<String, Vec<ForeignKey>>, DbError> {
    let mut stmt = conn.prepare(
        "SELECT m.name, f.\"from\", f.\"table\", f.\"to\"
         FROM sqlite_master m, pragma_foreign_key_list(m.name) f
         WHERE m.type = 'table' ORDER BY m.name, f.id, f.seq",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, Option<String>>(3)?,
        ))
    })?;
    let mut out: BTreeMap<String, Vec<ForeignKey>> = BTreeMap::new();
    for row in rows {
        let (table, column, parent, to) = row?;
        // A key that names no parent column references the parent's primary key.
        let parent_column = match to {
            Some(c) => c,
            None => primary_key(conn, &parent)?,
        };
        out.entry(table).or_default().push(ForeignKey {
            column,
            parent,
            parent_column,
        });
    }
    Ok(out)
}

fn primary_key(conn: &Connection, table: &str) -> Result<String, DbError> {
    Ok(conn.query_row(
        "SELECT name FROM pragma_table_info(?1) WHERE pk = 1",
        [table],
        |r| r.get(0),
    )?)
}

/// For each table reachable from `accounts` through foreign keys, the SQL condition "this row
/// belongs to account `?1`": `accounts` is `id = ?1`; any other table's is the OR of its keys whose
/// parent belongs to an account (`company_id IN (SELECT id FROM companies WHERE account_id = ?1)`),
/// so a row is found through whichever parent it names. Tables that reach no account are absent.
pub fn account_conditions(
    foreign_keys: &BTreeMap<String, Vec<ForeignKey>>,
) -> BTreeMap<String, String> {
    let mut known = BTreeMap::new();
    for table in foreign_keys.keys() {
        condition(table, foreign_keys, &mut known, &mut BTreeSet::new());
    }
    known.insert("accounts".to_string(), Some("id = ?1".to_string()));
    known
        .into_iter()
        .filter_map(|(t, c)| c.map(|c| (t, c)))
        .collect()
}

fn condition(
    table: &str,
    foreign_keys: &BTreeMap<String, Vec<ForeignKey>>,
    known: &mut BTreeMap<String, Option<String>>,
    visiting: &mut BTreeSet<String>,
) -> Option<String> {
    if table == "accounts" {
        return Some("id = ?1".to_string());
    }
    if let Some(c) = known.get(table) {
        return c.clone();
    }
    // A loop of keys (a key replaced by another key) adds no owner the other keys do not.
    if !visiting.insert(table.to_string()) {
        return None;
    }
    let mut terms = Vec::new();
    for fk in foreign_keys.get(table).map(Vec::as_slice).unwrap_or(&[]) {
        if fk.parent == "accounts" && fk.parent_column == "id" {
            terms.push(format!("\"{}\" = ?1", fk.column));
            continue;
        }
        if let Some(parent) = condition(&fk.parent, foreign_keys, known, visiting) {
            terms.push(format!(
                "\"{}\" IN (SELECT \"{}\" FROM \"{}\" WHERE {parent})",
                fk.column, fk.parent_column, fk.parent
            ));
        }
    }
    visiting.remove(table);
    let found = (!terms.is_empty()).then(|| terms.join(" OR "));
    known.insert(table.to_string(), found.clone());
    found
}

/// The tables whose `version` one of the schema's triggers moves (`UPDATE ads SET version = …`
/// in a trigger on another table: what a resource shows lives in rows of another table). Loading
/// or shifting the demo world puts back the versions the world states.
pub fn versioned_by_triggers(conn: &Connection) -> Result<Vec<String>, DbError> {
    let mut stmt = conn.prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger'")?;
    let bodies = stmt.query_map([], |r| r.get::<_, Option<String>>(0))?;
    let mut tables = BTreeSet::new();
    for body in bodies {
        let body = body?.unwrap_or_default().to_ascii_lowercase();
        let words: Vec<&str> = body
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        for w in words.windows(4) {
            if w[0] == "update" && w[2] == "set" && w[3] == "version" {
                tables.insert(w[1].to_string());
            }
        }
    }
    Ok(tables.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn migrated() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::migrations::runner().run(&mut conn).unwrap();
        conn
    }

    /// The account reset finds every row of an account through the foreign keys: a table added
    /// without a key to its owner (and not declared shared or per actor) fails here, before it
    /// fails a reset.
    #[test]
    fn every_table_reaches_an_account_or_is_declared_shared() {
        let conn = migrated();
        let owned = account_conditions(&foreign_keys(&conn).unwrap());
        let tables: Vec<String> = conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
                 AND name NOT IN ('refinery_schema_history', 'server_secrets', 'audit_log',
                                  'cache_generations')",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for table in &tables {
            let declared = SHARED_TABLES.contains(&table.as_str())
                || PER_ACTOR_TABLES.contains(&table.as_str());
            assert!(
                owned.contains_key(table) != declared,
                "{table}: reaches an account: {}, declared shared or per actor: {declared}",
                owned.contains_key(table)
            );
        }
        for declared in SHARED_TABLES.iter().chain(PER_ACTOR_TABLES) {
            assert!(tables.iter().any(|t| t == declared), "{declared} is gone");
        }
    }

    /// A row is found through whichever parent it names: a key's company or its client.
    #[test]
    fn a_condition_follows_every_key_up_to_the_account() {
        let owned = account_conditions(&foreign_keys(&migrated()).unwrap());
        assert_eq!(owned["accounts"], "id = ?1");
        assert_eq!(
            owned["companies"], "\"account_id\" = ?1",
            "the plan a company names belongs to no account"
        );
        let keys = &owned["api_keys"];
        assert!(keys.contains("\"company_id\" IN (SELECT \"id\" FROM \"companies\""));
        assert!(keys.contains("\"client_id\" IN (SELECT \"id\" FROM \"api_clients\""));
    }

    #[test]
    fn the_triggers_name_the_tables_whose_version_they_move() {
        assert_eq!(
            versioned_by_triggers(&migrated()).unwrap(),
            ["ads", "devices", "promotions"]
        );
    }
}
