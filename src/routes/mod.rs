//! REST resources, one module per area. Each module contributes its routes to the one route table
//! and the JSON Schemas its routes name to the OpenAPI document.
//!
//! A resource is a `#[derive(Serialize)]` struct whose field order is its JSON member order, read
//! from named columns by `from_row(&crud::Named)` and serialized straight into the response
//! (`Response::ok`, or `Response::page` for a list). Path ids are typed (`ctx.path::<DeviceId>()`);
//! field specs ([`crate::validate::Text`], [`crate::validate::OneOf`]) give a request schema and
//! its check. What every company-owned resource does alike (owner and visibility, load, delete,
//! events) is in [`crud`].

pub mod account;
pub mod admin;
pub mod ads;
pub mod billing;
pub mod companies;
pub mod crud;
pub mod devices;
pub mod health;
pub mod media;
pub mod openapi;
pub mod plans;
pub mod promotions;
pub mod tokens;
pub mod webhooks;

use crate::http::router::Route;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The whole route table, REST and MCP.
pub fn all() -> Vec<Route> {
    let mut routes = Vec::new();
    routes.extend(health::routes());
    routes.extend(openapi::routes());
    routes.extend(account::routes());
    routes.extend(companies::routes());
    routes.extend(devices::routes());
    routes.extend(ads::routes());
    routes.extend(media::routes());
    routes.extend(promotions::routes());
    routes.extend(plans::routes());
    routes.extend(tokens::routes());
    routes.extend(billing::routes());
    routes.extend(webhooks::routes());
    routes.extend(admin::routes());
    routes.extend(crate::mcp::routes());
    routes
}

/// Every named schema the routes refer to.
pub fn schemas() -> Vec<(&'static str, Value)> {
    let mut s = Vec::new();
    s.extend(health::schemas());
    s.extend(account::schemas());
    s.extend(companies::schemas());
    s.extend(devices::schemas());
    s.extend(ads::schemas());
    s.extend(media::schemas());
    s.extend(promotions::schemas());
    s.extend(plans::schemas());
    s.extend(tokens::schemas());
    s.extend(billing::schemas());
    s.extend(webhooks::schemas());
    s.extend(admin::schemas());
    s
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
    tx: &rusqlite::Transaction<'_>,
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

/// Runs a keyset-paged list query, newest first, restricted to `companies`.
///
/// `select` is everything before `WHERE` (for example `SELECT d.id, d.name FROM devices d`);
/// `company_col` and `id_col` name the company and id columns; `filters` are extra
/// `AND`-ed clauses, each with one `?` bound to its value. Fetches `page.fetch()` rows so that
/// [`crate::http::Response::page`] can tell whether more follow.
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
            let documented: Vec<&str> = param["schema"]["enum"]
                .as_array()
                .unwrap_or_else(|| panic!("{path} `{name}` has no enum"))
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(&documented, accepted, "{path} `{name}`");
        }
    }
}
