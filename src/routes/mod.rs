//! REST resources, one module per area. Each module contributes its routes to the one route table
//! and the JSON Schemas its routes name to the OpenAPI document.
//!
//! A resource is a `#[derive(Serialize)]` struct whose field order is its JSON member order, read
//! from named columns by `from_row(&crud::Named)` and serialized straight into the response
//! (`Response::ok`, or `Response::page` for a list). Path ids are typed (`ctx.path::<DeviceId>()`);
//! field specs ([`crate::validate::Text`], [`crate::validate::OneOf`]) give a request schema and
//! its check; a query filter that takes one of a list is documented from the same const its handler
//! checks (`one_of_param(name, OneOf(LIST), …)`). What every company-owned resource does alike (owner and visibility, load,
//! delete, events) is in [`crud`]. Resources of the layers below routes (the ledger's
//! transactions and balance) are typed there, with their times as RFC 3339 text.

pub mod account;
pub mod admin;
pub mod ads;
pub mod billing;
pub mod companies;
pub mod console;
pub mod crud;
pub mod date_range;
pub mod devices;
pub mod download;
pub mod events;
pub mod health;
pub mod invoice_due;
pub mod landing;
pub mod landing_domains;
pub mod media;
pub mod media_usage;
pub mod openapi;
pub mod payloads;
pub mod plans;
pub mod promotions;
pub mod rendered;
pub mod retention;
pub mod scan;
pub mod search;
pub mod sign_in;
pub mod subscriptions;
pub mod time_driven;
pub mod tokens;
pub mod upload;
pub mod webhooks;

use crate::areas::Area;
use crate::http::router::Route;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// One module of routes: the area it serves (none for health, the document, the account and
/// admin), the routes it adds to the route table and the named schemas those routes refer to.
pub struct Module {
    pub name: &'static str,
    pub area: Option<Area>,
    pub routes: fn() -> Vec<Route>,
    pub schemas: fn() -> Vec<(&'static str, Value)>,
}

const fn module(
    name: &'static str,
    area: Option<Area>,
    routes: fn() -> Vec<Route>,
    schemas: fn() -> Vec<(&'static str, Value)>,
) -> Module {
    Module {
        name,
        area,
        routes,
        schemas,
    }
}

fn no_schemas() -> Vec<(&'static str, Value)> {
    Vec::new()
}

/// The route registry: every module of REST routes, one line each, in the order of the route
/// table and the OpenAPI document. An area's other facts (scope, ids, events, tables) are its entry
/// in [`crate::areas`]; a test checks that every area has exactly one module here.
pub const MODULES: &[Module] = &[
    module("health", None, health::routes, health::schemas),
    module("openapi", None, openapi::routes, no_schemas),
    module("account", None, account::routes, account::schemas),
    module("sign_in", None, sign_in::routes, sign_in::schemas),
    module(
        "companies",
        Some(Area::Companies),
        companies::routes,
        companies::schemas,
    ),
    module(
        "devices",
        Some(Area::Devices),
        devices::routes,
        devices::schemas,
    ),
    module("ads", Some(Area::Ads), ads::routes, ads::schemas),
    module("media", Some(Area::Media), media::routes, media::schemas),
    module(
        "promotions",
        Some(Area::Promotions),
        promotions::routes,
        promotions::schemas,
    ),
    module("plans", Some(Area::Plans), plans::routes, plans::schemas),
    module(
        "tokens",
        Some(Area::Tokens),
        tokens::routes,
        tokens::schemas,
    ),
    module(
        "billing",
        Some(Area::Billing),
        billing::routes,
        billing::schemas,
    ),
    module(
        "webhooks",
        Some(Area::Webhooks),
        webhooks_and_events,
        webhooks_and_events_schemas,
    ),
    module("admin", None, admin::routes, admin::schemas),
    module("console", None, console::routes, no_schemas),
    module("scan", None, scan::routes, no_schemas),
    module("landing", None, landing::routes, no_schemas),
];

/// The webhooks area: its integrations, and the events they deliver ([`events`]).
fn webhooks_and_events() -> Vec<Route> {
    let mut routes = webhooks::routes();
    routes.extend(events::routes());
    routes
}

fn webhooks_and_events_schemas() -> Vec<(&'static str, Value)> {
    let mut schemas = webhooks::schemas();
    schemas.extend(events::schemas());
    schemas
}

/// Every REST route, module by module. The whole route table adds the MCP endpoint beside them
/// (`app::routes`): routes and mcp are siblings, neither imports the other.
pub fn all() -> Vec<Route> {
    MODULES.iter().flat_map(|m| (m.routes)()).collect()
}

/// Every named schema the routes refer to, registered on the router ([`Router::with_schemas`]).
///
/// [`Router::with_schemas`]: crate::http::router::Router::with_schemas
pub fn schemas() -> Vec<(&'static str, Value)> {
    MODULES.iter().flat_map(|m| (m.schemas)()).collect()
}

/// For PATCH fields where `null` (clear) differs from absent (keep): absent -> `None`,
/// `null` -> `Some(None)`. Use with `#[serde(default, deserialize_with = "nullable")]`.
pub fn nullable<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// For optional fields that may be absent but not `null`: with `#[serde(default, deserialize_with
/// = "present")]`, `null` is a type error naming the field instead of silently meaning "absent".
pub fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// `UPDATE table SET <sets>, version = version + 1, updated_at = now WHERE key = id`: the one
/// shape of every PATCH, which bumps the version behind the resource's ETag. Column names come
/// from the handlers' own literals, never from input.
pub fn update_versioned(
    tx: &rusqlite::Connection,
    table: &str,
    key: &str,
    id: &str,
    now: i64,
    sets: &[(&str, rusqlite::types::Value)],
) -> rusqlite::Result<()> {
    let assignments: Vec<String> = sets
        .iter()
        .enumerate()
        .map(|(i, (column, _))| format!("{column} = ?{}", i + 3))
        .collect();
    let sql = format!(
        "UPDATE {table} SET {}, version = version + 1, updated_at = ?2 WHERE {key} = ?1",
        assignments.join(", ")
    );
    let mut args: Vec<rusqlite::types::Value> = vec![id.to_string().into(), now.into()];
    args.extend(sets.iter().map(|(_, v)| v.clone()));
    tx.execute(&sql, rusqlite::params_from_iter(args))?;
    Ok(())
}

/// Up to this many companies, [`fetch_page`] walks each company's `(company_id, id)` index in
/// order and merges the walks; with more, one `IN (...)` query sorts its matches instead (one
/// cached statement per company would crowd the connection's statement cache).
const MERGE_MAX_COMPANIES: usize = 4;

/// Runs a keyset-paged list query, newest first, restricted to `companies`.
///
/// `select` is everything before `WHERE` (for example `SELECT d.id, d.name FROM devices d`);
/// `company_col` and `id_col` name the company and id columns; `filters` are extra
/// `AND`-ed clauses, each with one `?` bound to its value. Fetches `page.fetch()` rows so that
/// [`crate::http::Response::page`] can tell whether more follow.
///
/// With a few companies, each company's rows come from their own statement
/// (`company_col = ?`), which reads the `(company_id, id)` index already in `id` order, and the
/// statements are merged by id here: the same rows in the same order as one
/// `company_col IN (...) ... ORDER BY id_col DESC` query, without SQLite sorting them in a temp
/// b-tree, and only the rows on the page are mapped.
// The arguments are the parts of one SQL statement; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub fn fetch_page<T>(
    conn: &rusqlite::Connection,
    select: &str,
    company_col: &str,
    id_col: &str,
    companies: &[String],
    filters: &[(&str, rusqlite::types::Value)],
    page: &crate::http::ctx::PageRequest,
    mut map: impl FnMut(&crud::Named<'_, '_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>, crate::http::ApiError> {
    if companies.is_empty() {
        return Ok(Vec::new());
    }
    if companies.len() > 1 && companies.len() <= MERGE_MAX_COMPANIES {
        let merged = merge_page(
            conn,
            select,
            company_col,
            id_col,
            companies,
            filters,
            page,
            &mut map,
        )?;
        if let Some(rows) = merged {
            return Ok(rows);
        }
    }
    let mut sql = format!(
        "{select} WHERE {company_col} IN ({}) AND {id_col} < ?",
        vec!["?"; companies.len()].join(", ")
    );
    let mut args: Vec<rusqlite::types::Value> =
        companies.iter().map(|c| c.clone().into()).collect();
    args.push(page.bound().to_string().into());
    for (clause, value) in filters {
        sql.push_str(" AND ");
        sql.push_str(clause);
        args.push(value.clone());
    }
    sql.push_str(&format!(" ORDER BY {id_col} DESC LIMIT ?"));
    args.push(page.fetch().into());
    let mut stmt = conn.prepare_cached(&sql)?;
    let columns = crud::Columns::of(&stmt);
    let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
        map(&crud::Named::new(r, &columns))
    })?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

/// [`fetch_page`] for 2..=[`MERGE_MAX_COMPANIES`] companies: one index walk per company, merged.
/// `None` when the `SELECT` has no column named as `id_col` (`j.ad_id` read as `a.id`, say), so
/// rows cannot be compared here: the caller runs the one sorting query instead.
#[allow(clippy::too_many_arguments)]
fn merge_page<T>(
    conn: &rusqlite::Connection,
    select: &str,
    company_col: &str,
    id_col: &str,
    companies: &[String],
    filters: &[(&str, rusqlite::types::Value)],
    page: &crate::http::ctx::PageRequest,
    map: &mut impl FnMut(&crud::Named<'_, '_>) -> rusqlite::Result<T>,
) -> Result<Option<Vec<T>>, crate::http::ApiError> {
    let mut sql = format!("{select} WHERE {company_col} = ? AND {id_col} < ?");
    for (clause, _) in filters {
        sql.push_str(" AND ");
        sql.push_str(clause);
    }
    sql.push_str(&format!(" ORDER BY {id_col} DESC LIMIT ?"));
    let base = sql.len();
    let bound = page.bound().to_string();
    let fetch = page.fetch();
    // One statement per arm: the same text twice would be one cache entry, re-prepared per call.
    let mut stmts = Vec::with_capacity(companies.len());
    for arm in 0..companies.len() {
        sql.truncate(base);
        sql.push_str(&format!(" -- {arm}"));
        stmts.push(conn.prepare_cached(&sql)?);
    }
    let columns = crud::Columns::of(&stmts[0]);
    let id_name = id_col.rsplit('.').next().unwrap_or(id_col);
    let Ok(id_at) = stmts[0].column_index(id_name) else {
        return Ok(None);
    };
    let mut arms = Vec::with_capacity(companies.len());
    for (stmt, company) in stmts.iter_mut().zip(companies) {
        let mut args: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(filters.len() + 3);
        args.push(company);
        args.push(&bound);
        for (_, value) in filters {
            args.push(value);
        }
        args.push(&fetch);
        let mut rows = stmt.query(args.as_slice())?;
        let first = rows.next()?.is_some();
        arms.push((rows, first));
    }
    use rusqlite::fallible_streaming_iterator::FallibleStreamingIterator;
    let mut out = Vec::with_capacity(usize::try_from(fetch).unwrap_or(0));
    while (out.len() as i64) < fetch {
        // The live arm whose current row has the greatest id (ids are unique across arms).
        let mut best: Option<(usize, &str)> = None;
        for (i, (rows, live)) in arms.iter().enumerate() {
            if !*live {
                continue;
            }
            let Some(row) = rows.get() else { continue };
            let id = row
                .get_ref(id_at)?
                .as_str()
                .map_err(rusqlite::Error::from)?;
            if best.is_none_or(|(_, b)| id > b) {
                best = Some((i, id));
            }
        }
        let Some((i, _)) = best else { break };
        let (rows, live) = &mut arms[i];
        if let Some(row) = rows.get() {
            out.push(map(&crud::Named::new(row, &columns))?);
        }
        *live = rows.next()?.is_some();
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// The query filters that take one of a fixed list document exactly the list their handlers
    /// check (the schemas are written as text beside the consts, so this keeps them together).
    #[test]
    fn enum_filters_document_the_lists_their_handlers_accept() {
        let doc = super::openapi::document(&crate::http::router::Router::new(super::all()));
        let cases: &[(&str, &str, &[&str])] = &[
            ("/devices", "status", super::devices::STATUSES),
            ("/ads", "status", super::ads::STATUSES),
            ("/media", "content_type", super::media::CONTENT_TYPES),
            ("/promotions", "state", super::promotions::STATES),
            ("/invoices", "status", super::billing::INVOICE_STATUSES),
            ("/tokens/transactions", "kind", crate::ledger::TX_KINDS),
        ];
        for (path, name, accepted) in cases {
            let params = doc["paths"][path]["get"]["parameters"]
                .as_array()
                .unwrap_or_else(|| panic!("{path} has no parameters"));
            let param = params
                .iter()
                .find(|p| p["name"] == *name)
                .unwrap_or_else(|| panic!("{path} has no `{name}`"));
            // Enums are named components: follow the `$ref`.
            let schema = match param["schema"]["$ref"].as_str() {
                Some(r) => doc
                    .pointer(r.trim_start_matches('#'))
                    .unwrap_or(&Value::Null),
                None => &param["schema"],
            };
            let documented: Vec<&str> = schema["enum"]
                .as_array()
                .unwrap_or_else(|| panic!("{path} `{name}` has no enum"))
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(&documented, accepted, "{path} `{name}`");
        }
    }
}
