//! What every company-owned resource does the same way: find the owner of an id and check the
//! route's action against it (invisible is 404), load one typed row, delete with `If-Match` and
//! record its deletion (with `events::record`, as every event is). Areas keep only what is their own (their columns, checks and side effects).

use crate::events;
use crate::http::{ApiError, Ctx, Response};
use crate::ids::TypedId;
use rusqlite::{Connection, OptionalExtension, Row};
use serde::{Serialize, Serializer};

/// A Unix time (seconds) that serializes as RFC 3339 (`2025-01-02T03:04:05Z`), as every
/// `*_at` field of the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Time(pub i64);

impl schemars::JsonSchema for Time {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Time".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "format": "date-time"})
    }
}

impl Serialize for Time {
    /// The text of [`crate::time::rfc3339`], written on the stack ([`crate::time::rfc3339_bytes`]).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match crate::time::rfc3339_bytes(self.0)
            .as_ref()
            .and_then(|b| std::str::from_utf8(b).ok())
        {
            Some(text) => s.serialize_str(text),
            None => s.serialize_str(&crate::time::rfc3339(self.0)),
        }
    }
}

/// The company that owns an object, and the object's version (its ETag).
#[derive(Debug, Clone)]
pub struct Owner {
    pub company: String,
    pub version: i64,
}

/// Runs `sql` (which selects `company_id` first, then whatever `rest` reads, `WHERE id = ?1`) for
/// `id`, and checks the route's action against the company: a missing or invisible object is the
/// same 404.
pub fn authorized_row<I: TypedId, T>(
    ctx: &Ctx<'_>,
    conn: &Connection,
    sql: &str,
    id: &I,
    rest: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<(String, T), ApiError> {
    let what = I::KIND.what();
    let (company, rest) = conn
        .prepare_cached(sql)?
        .query_row([id.as_str()], |r| Ok((r.get::<_, String>(0)?, rest(r)?)))
        .optional()?
        .ok_or_else(|| ApiError::not_found(what, id.as_str()))?;
    ctx.authorize_company(&company, what, id.as_str())?;
    Ok((company, rest))
}

/// The owner of `id` in `table` (a literal: `devices`, `ads`), checked against the route's
/// action; missing or invisible is 404.
pub fn authorized_owner<I: TypedId>(
    ctx: &Ctx<'_>,
    conn: &Connection,
    table: &'static str,
    id: &I,
) -> Result<Owner, ApiError> {
    let sql = format!("SELECT company_id, version FROM {table} WHERE id = ?1");
    let (company, version) = authorized_row(ctx, conn, &sql, id, |r| r.get(1))?;
    Ok(Owner { company, version })
}

/// One row read by `sql` (`… WHERE <id column> = ?1`) and mapped by `map`; missing is 404.
pub fn load<I: TypedId, T>(
    conn: &Connection,
    sql: &str,
    id: &I,
    map: impl FnOnce(&Named<'_, '_>) -> rusqlite::Result<T>,
) -> Result<T, ApiError> {
    let mut stmt = conn.prepare_cached(sql)?;
    let columns = Columns::of(&stmt);
    stmt.query_row([id.as_str()], |r| map(&Named::new(r, &columns)))
        .optional()?
        .ok_or_else(|| ApiError::not_found(I::KIND.what(), id.as_str()))
}

/// Deletes row `id` of `table` and records `<object>.deleted` with the deletion stub
/// `{"id", "object", "deleted": true}`.
pub fn delete_row<I: TypedId>(
    tx: &crate::db::Tx,
    table: &'static str,
    object: &'static str,
    company: &str,
    id: &I,
) -> Result<(), ApiError> {
    tx.prepare_cached(&format!("DELETE FROM {table} WHERE id = ?1"))?
        .execute([id.as_str()])?;
    let stub = super::payload::Deleted::of(id.as_str(), object);
    events::record(
        tx,
        company,
        &format!("{object}.deleted"),
        object,
        id.as_str(),
        &stub,
    )?;
    Ok(())
}

/// `DELETE /<area>/{id}` of a versioned resource: visible (else 404), `If-Match` against its
/// version, then [`delete_row`]. 204.
pub fn delete_versioned<I: TypedId>(
    ctx: &Ctx<'_>,
    table: &'static str,
    object: &'static str,
) -> Result<Response, ApiError> {
    let id: I = ctx.path()?;
    ctx.db.write(ctx.intent, |tx| {
        let owner = authorized_owner(ctx, tx, table, &id)?;
        ctx.check_if_match(owner.version)?;
        delete_row(tx, table, object, &owner.company, &id)?;
        Ok(Response::no_content())
    })
}

/// The column names of a statement, read once per query (not once per row and field, as
/// rusqlite's lookup by name does: that was a fifth of a list page). All names share one buffer
/// (two allocations a query, not one per column).
pub struct Columns {
    text: String,
    ends: Vec<usize>,
}

impl Columns {
    pub fn of(stmt: &rusqlite::Statement<'_>) -> Columns {
        let mut text = String::with_capacity(256);
        let mut ends = Vec::with_capacity(stmt.column_count());
        for name in stmt.column_names() {
            text.push_str(name);
            ends.push(text.len());
        }
        Columns { text, ends }
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn name(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }
}

/// A row read by column name: each lookup first tries the column after the one read last, so a
/// `from_row` that reads in `SELECT` order compares one name per field.
pub struct Named<'a, 'r> {
    row: &'a Row<'r>,
    columns: &'a Columns,
    next: std::cell::Cell<usize>,
}

impl<'a, 'r> Named<'a, 'r> {
    pub fn new(row: &'a Row<'r>, columns: &'a Columns) -> Self {
        Named {
            row,
            columns,
            next: std::cell::Cell::new(0),
        }
    }

    /// The row itself, for a reader that takes its columns by position.
    pub fn row(&self) -> &'a Row<'r> {
        self.row
    }

    /// The names of the row's columns.
    pub fn columns(&self) -> &'a Columns {
        self.columns
    }

    /// The value of column `name` (exactly as the `SELECT` names it, `AS` alias included).
    pub fn get<T: rusqlite::types::FromSql>(&self, name: &str) -> rusqlite::Result<T> {
        self.row.get(self.index(name)?)
    }

    /// The position of column `name`, looked for from the column after the one read last.
    fn index(&self, name: &str) -> rusqlite::Result<usize> {
        let n = self.columns.len();
        let start = self.next.get();
        for k in 0..n {
            let i = (start + k) % n;
            if self.columns.name(i) == name {
                self.next.set(i + 1);
                return Ok(i);
            }
        }
        Err(rusqlite::Error::InvalidColumnName(name.to_string()))
    }

    /// The text of column `name`, borrowed from the row (no copy): for a value written straight
    /// into an answer.
    pub fn str(&self, name: &str) -> rusqlite::Result<&'a str> {
        self.row
            .get_ref(self.index(name)?)?
            .as_str()
            .map_err(rusqlite::Error::from)
    }

    /// [`Named::str`] of a column that may be NULL.
    pub fn opt_str(&self, name: &str) -> rusqlite::Result<Option<&'a str>> {
        self.row
            .get_ref(self.index(name)?)?
            .as_str_or_null()
            .map_err(rusqlite::Error::from)
    }

    /// The text of column `name` if it is one of `words`, borrowed from the list (no
    /// allocation), else an owned copy: for columns whose values a `CHECK` keeps to a fixed list.
    pub fn word(
        &self,
        name: &str,
        words: &'static [&'static str],
    ) -> rusqlite::Result<std::borrow::Cow<'static, str>> {
        let n = self.columns.len();
        let start = self.next.get();
        for k in 0..n {
            let i = (start + k) % n;
            if self.columns.name(i) == name {
                self.next.set(i + 1);
                let text = self
                    .row
                    .get_ref(i)?
                    .as_str()
                    .map_err(rusqlite::Error::from)?;
                return Ok(match words.iter().find(|w| **w == text) {
                    Some(w) => std::borrow::Cow::Borrowed(w),
                    None => std::borrow::Cow::Owned(text.to_string()),
                });
            }
        }
        Err(rusqlite::Error::InvalidColumnName(name.to_string()))
    }
}

/// The text of column `i` if it is one of `words`, borrowed from the list (no allocation), else an
/// owned copy: for columns whose values a `CHECK` keeps to a fixed list.
pub fn word_at(
    row: &Row<'_>,
    i: usize,
    words: &'static [&'static str],
) -> rusqlite::Result<std::borrow::Cow<'static, str>> {
    let text = row.get_ref(i)?.as_str().map_err(rusqlite::Error::from)?;
    Ok(match words.iter().find(|w| **w == text) {
        Some(w) => std::borrow::Cow::Borrowed(w),
        None => std::borrow::Cow::Owned(text.to_string()),
    })
}

/// Every row of `sql` with `params`, each read by name through `map`.
pub fn query_all<T>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    mut map: impl FnMut(&Named<'_, '_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>, ApiError> {
    let mut stmt = conn.prepare_cached(sql)?;
    let columns = Columns::of(&stmt);
    let rows = stmt
        .query_map(params, |r| map(&Named::new(r, &columns)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_serializes_as_rfc3339_does() {
        for t in [
            0,
            1,
            86_399,
            951_782_400,
            1_764_107_201,
            253_402_300_799,
            -1,
            -62_167_219_200,
            253_402_300_800,
        ] {
            let json = serde_json::to_string(&Time(t)).unwrap();
            assert_eq!(json, format!("\"{}\"", crate::time::rfc3339(t)), "{t}");
        }
    }
}
