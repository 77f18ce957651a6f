//! Sample objects for a path parameter, derived from the area registry and the schema: the
//! authorization matrix (`auth_matrix`) and the REST = MCP matrix (`mcp_tools`) both name an object
//! of a company for each `{param}` of a route, and a new area's routes get theirs without a line
//! here.
//!
//! A `{param}` after the path segment `previous` names a row of the table of the area whose
//! `paths` hold `previous` (`signage::areas`): the table named like the segment (`qr-codes` ->
//! `qr_codes`), or the area's only table. A row belongs to a company through its foreign keys, as
//! the account reset finds a row's account (`db::schema_facts`): its `company_id` (or another key
//! to `companies`), or a key to a row that belongs to one (a QR code through its promotion). A
//! table that reaches no company is a shared catalogue (`db::schema_facts::SHARED_TABLES`): any
//! row will do. The objects these rules would get wrong (an ad and a device it is assigned to,
//! objects kept in memory, credentials) are special cases of the tests themselves.

use crate::helpers::TestApp;
use signage::areas::Area;
use signage::db::schema_facts::{self, ForeignKey};
use std::collections::BTreeMap;

/// The objects a path parameter names, or why none can be found; the error names the
/// `(area, parameter)` the caller was looking for.
pub struct Objects {
    pub area: Area,
    pub table: &'static str,
    /// The condition "this row belongs to company `?1`", or `None` for a shared table.
    condition: Option<String>,
}

/// The area and table of the `{param}` after path segment `previous`, with how its rows belong to
/// a company. `Err` says what is missing, naming the area and the parameter.
pub fn objects_after(app: &TestApp, previous: &str, param: &str) -> Result<Objects, String> {
    let Some(area) = Area::of_path_segment(previous) else {
        return Err(format!(
            "(no area, {param}): no area of src/areas.rs has the path segment `{previous}`"
        ));
    };
    let tables = area.spec().tables;
    let named = previous.replace('-', "_");
    let table = match tables.iter().find(|t| **t == named) {
        Some(t) => *t,
        None if tables.len() == 1 => tables[0],
        None => {
            return Err(format!(
                "({area:?}, {param}): none of the area's tables {tables:?} is named like the \
                 path segment `{previous}`"
            ))
        }
    };
    let foreign_keys = schema_facts::foreign_keys(&app.app.db.conn().unwrap()).unwrap();
    let condition = company_condition(table, &foreign_keys, &mut Vec::new());
    if condition.is_none() && !schema_facts::SHARED_TABLES.contains(&table) {
        return Err(format!(
            "({area:?}, {param}): table {table} reaches no company through its foreign keys and \
             is not shared"
        ));
    }
    Ok(Objects {
        area,
        table,
        condition,
    })
}

impl Objects {
    /// The first row (by id) that belongs to `company` (any row of a shared table), or why there
    /// is none, naming the area and `param`.
    pub fn first_of(&self, app: &TestApp, company: &str, param: &str) -> Result<String, String> {
        let sql = format!(
            "SELECT min(id) FROM \"{}\" WHERE {}",
            self.table,
            self.condition.as_deref().unwrap_or("?1 = ?1")
        );
        app.sql(|c| c.query_row(&sql, [company], |r| r.get::<_, Option<String>>(0)))
            .ok_or_else(|| {
                let name: String = app.sql(|c| {
                    c.query_row("SELECT name FROM companies WHERE id = ?1", [company], |r| {
                        r.get(0)
                    })
                });
                format!(
                    "({:?}, {param}): {name} has no row in {} (give it one in \
                     fixtures/world.json)",
                    self.area, self.table
                )
            })
    }

    /// The first row of each company that has one, in the order of the companies' ids; every
    /// row of a shared table.
    pub fn first_of_each_company(&self, app: &TestApp) -> Vec<String> {
        let sql = match &self.condition {
            Some(condition) => format!(
                "SELECT first FROM (SELECT c.id AS company, (SELECT min(id) FROM \"{}\" WHERE {}) AS first
                   FROM companies c) WHERE first IS NOT NULL ORDER BY company",
                self.table,
                condition.replace("?1", "c.id")
            ),
            None => format!("SELECT id FROM \"{}\" ORDER BY id", self.table),
        };
        app.sql(|c| {
            let mut stmt = c.prepare(&sql)?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.collect::<Result<Vec<_>, _>>()
        })
    }
}

/// An id of the same kind as `id` that names nothing (`dev_0000000000000000000`).
pub fn missing_like(id: &str) -> String {
    let prefix = signage::ids::Kind::PREFIXES
        .iter()
        .filter(|p| id.starts_with(&format!("{p}_")))
        .max_by_key(|p| p.len())
        .unwrap_or_else(|| panic!("{id} has no known id prefix (src/ids.rs)"));
    format!("{prefix}_0000000000000000000")
}

/// The SQL condition "this row of `table` belongs to company `?1`": `id = ?1` for `companies`, its
/// key to `companies` (`company_id`), or else its first key to a table whose rows belong to a
/// company. `None` when no key leads to a company.
fn company_condition(
    table: &str,
    foreign_keys: &BTreeMap<String, Vec<ForeignKey>>,
    visiting: &mut Vec<String>,
) -> Option<String> {
    if table == "companies" {
        return Some("id = ?1".to_string());
    }
    if visiting.iter().any(|t| t == table) {
        return None;
    }
    let keys = foreign_keys.get(table).map(Vec::as_slice).unwrap_or(&[]);
    if let Some(fk) = keys
        .iter()
        .find(|fk| fk.parent == "companies" && fk.parent_column == "id")
    {
        return Some(format!("\"{}\" = ?1", fk.column));
    }
    visiting.push(table.to_string());
    let found = keys.iter().find_map(|fk| {
        let parent = company_condition(&fk.parent, foreign_keys, visiting)?;
        Some(format!(
            "\"{}\" IN (SELECT \"{}\" FROM \"{}\" WHERE {parent})",
            fk.column, fk.parent_column, fk.parent
        ))
    });
    visiting.pop();
    found
}
