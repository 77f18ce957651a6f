//! A list page written straight from its rows: each row's JSON object goes from the SQLite row into
//! the body ([`crate::json_write`]), with no typed row and no `serde` pass between (issue 48:
//! per row, the typed copy and its serialization cost more than reading it). The bytes are those
//! [`Response::page`] makes of the typed rows: debug builds build them too and compare, row by row.

use super::crud::Named;
use super::queries::{fetch_page, Owner};
use crate::http::ctx::{PageRequest, Reach};
use crate::http::response::PageWriter;
use crate::http::{ApiError, Response};

/// The statement of a page, as [`fetch_page`] takes it.
pub struct PageQuery<'q, 'o> {
    pub select: &'q str,
    pub owner: Owner<'o>,
    pub id_col: &'q str,
    pub companies: &'q Reach,
    pub filters: &'q [(&'q str, rusqlite::types::Value)],
}

/// Runs `query` and writes each row of the page with `write` (the row's JSON object, braces
/// included); the row past the page only tells that more follow. `typed` is the row as
/// [`Response::page`] would serialize it, read in debug builds only, to hold the bytes equal.
pub fn written_page<T: serde::Serialize>(
    conn: &rusqlite::Connection,
    query: PageQuery<'_, '_>,
    page: &PageRequest,
    mut write: impl FnMut(&Named<'_, '_>, &mut Vec<u8>) -> rusqlite::Result<()>,
    typed: impl Fn(&Named<'_, '_>) -> rusqlite::Result<T>,
) -> Result<Response, ApiError> {
    let limit = page.limit as usize;
    // About a row's JSON each (an event's is 700 bytes): a page is seldom copied to grow.
    let mut out = PageWriter::with_capacity(limit * 768);
    let mut written = 0usize;
    let ids: Vec<String> = fetch_page(
        conn,
        query.select,
        query.owner,
        query.id_col,
        query.companies,
        query.filters,
        page,
        |r| {
            let id: String = r.get("id")?;
            if written < limit {
                written += 1;
                let row = out.row();
                let start = row.len();
                write(&Named::new(r.row(), r.columns()), row)?;
                if cfg!(debug_assertions) {
                    let expected =
                        serde_json::to_vec(&typed(&Named::new(r.row(), r.columns()))?)
                            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
                    debug_assert_eq!(
                        String::from_utf8_lossy(&row[start..]),
                        String::from_utf8_lossy(&expected),
                        "a written row differs from its typed row's JSON"
                    );
                }
            }
            Ok(id)
        },
    )?;
    let has_more = ids.len() > limit;
    let last = ids[..ids.len().min(limit)].last().map(String::as_str);
    Ok(Response::page_written(
        out.finish(has_more, last, &page.tag),
    ))
}
