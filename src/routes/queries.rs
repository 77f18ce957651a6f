//! The SQL shapes every area's list and PATCH share: the keyset-paged list query ([`fetch_page`])
//! and the versioned update ([`update_versioned`]). Below the areas: it imports no area and not
//! the route registry (`routes/mod.rs`), only the row readers of [`super::crud`].

use super::crud::{Columns, Named};
use crate::http::ctx::Reach;

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

/// The columns that say whose a listed row is: its company's, and its account's where the table
/// keeps one (with an index on `(account_id, id)`).
#[derive(Clone, Copy)]
pub struct Owner<'a> {
    company: &'a str,
    account: Option<&'a str>,
}

impl<'a> Owner<'a> {
    /// A table whose rows also name their account (`account_col`), kept with an index on
    /// `(account_id, id)`: a list of the whole account reads that index alone.
    pub fn with_account(company_col: &'a str, account_col: &'a str) -> Owner<'a> {
        Owner {
            company: company_col,
            account: Some(account_col),
        }
    }
}

impl<'a> From<&'a str> for Owner<'a> {
    fn from(company_col: &'a str) -> Owner<'a> {
        Owner {
            company: company_col,
            account: None,
        }
    }
}

/// Runs a keyset-paged list query, newest first, restricted to `companies`.
///
/// `select` is everything before `WHERE` (for example `SELECT d.id, d.name FROM devices d`);
/// `owner` names the company column (and the account column, if the table has one) and `id_col`
/// the id column; `filters` are extra
/// `AND`-ed clauses, each with one `?` bound to its value. Fetches `page.fetch()` rows so that
/// [`crate::http::Response::page`] can tell whether more follow.
///
/// With a few companies, each company's rows come from their own statement
/// (`company_col = ?`), which reads the `(company_id, id)` index already in `id` order, and the
/// statements are merged by id here: the same rows in the same order as one
/// `company_col IN (...) ... ORDER BY id_col DESC` query, without SQLite sorting them in a temp
/// b-tree, and only the rows on the page are mapped.
///
/// A list of a whole account ([`Reach::whole_account`]) from a table that names its rows' account
/// reads the `(account_id, id)` index instead, one walk whatever the number of companies: its cost
/// does not grow with the account (issue 48).
// The arguments are the parts of one SQL statement; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub fn fetch_page<'o, T>(
    conn: &rusqlite::Connection,
    select: &str,
    owner: impl Into<Owner<'o>>,
    id_col: &str,
    companies: &Reach,
    filters: &[(&str, rusqlite::types::Value)],
    page: &crate::http::ctx::PageRequest,
    mut map: impl FnMut(&Named<'_, '_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>, crate::http::ApiError> {
    let owner = owner.into();
    let company_col = owner.company;
    if companies.is_empty() {
        return Ok(Vec::new());
    }
    if let (Some(account), Some(account_col)) = (companies.whole_account(), owner.account) {
        let mut sql = format!("{select} WHERE {account_col} = ? AND {id_col} < ?");
        let bound = page.bound();
        let fetch = page.fetch();
        let mut args: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(filters.len() + 3);
        args.push(&account);
        args.push(&bound);
        for (clause, value) in filters {
            sql.push_str(" AND ");
            sql.push_str(clause);
            args.push(value);
        }
        sql.push_str(&format!(" ORDER BY {id_col} DESC LIMIT ?"));
        args.push(&fetch);
        let mut stmt = conn.prepare_cached(&sql)?;
        let columns = Columns::of(&stmt);
        let rows = stmt.query_map(args.as_slice(), |r| map(&Named::new(r, &columns)))?;
        return Ok(rows.collect::<Result<Vec<_>, _>>()?);
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
    let columns = Columns::of(&stmt);
    let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
        map(&Named::new(r, &columns))
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
    map: &mut impl FnMut(&Named<'_, '_>) -> rusqlite::Result<T>,
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
    let columns = Columns::of(&stmts[0]);
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
            out.push(map(&Named::new(row, &columns))?);
        }
        *live = rows.next()?.is_some();
    }
    Ok(Some(out))
}
