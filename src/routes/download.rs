//! A stored BLOB sent to an HTTP client as the client reads it (issue 31 item 2), the way uploads
//! arrive ([`crate::routes::upload`]): a 5 MiB media file is never held whole in memory to be
//! downloaded. Chunks are read with SQLite's incremental blob I/O and queued for the connection;
//! one read transaction fills the queue, and it ends as soon as the queue is full, so a slow
//! client never holds a snapshot (nor the write-ahead log) while the server waits for it. Once the
//! client has taken the queue, the next chunks are read from a fresh snapshot of the same row.
//!
//! An MCP read (which base64-encodes the bytes into its JSON answer anyway), a BLOB of one chunk,
//! or a request served outside a runtime gets the bytes whole.

use crate::http::stream::Streamed;
use crate::http::{ApiError, Ctx, Response};
use bytes::Bytes;
use rusqlite::{Connection, OptionalExtension};
use tokio::sync::mpsc::{self, error::TrySendError};

/// The chunk a BLOB is read and sent in.
pub const CHUNK: usize = 64 * 1024;
/// Chunks queued for a connection before reading stops to wait for the client. Reading starts
/// again only once the client has taken them all: each new read transaction finds its offset by
/// walking the BLOB's overflow pages from the start, so it should serve many chunks, not one.
const QUEUED: usize = 8;
/// Pages of the download connection's own cache (SQLite's default is 2 MB a connection; the pages
/// of a file sent once are not read again).
const CACHE_PAGES: i64 = 32;

/// Where a BLOB is: `column` of the row of `table` whose `key_column` is `key`. The names are
/// the caller's constants, never the client's.
pub struct Located {
    pub table: &'static str,
    pub column: &'static str,
    pub key_column: &'static str,
    pub key: String,
}

/// How far one read transaction got.
enum Filled {
    /// Every chunk is queued.
    Done,
    /// The row is gone or its BLOB changed size (deleted, or a snapshot restored meanwhile).
    Gone,
    /// The queue is full: this chunk waits, and the next one starts at the offset.
    Full(Bytes, usize),
    /// The client went away.
    Closed,
}

/// Reads `at`'s BLOB (of `len` bytes) from `offset` and queues its chunks while there is room.
fn fill(
    conn: &Connection,
    at: &Located,
    mut offset: usize,
    len: usize,
    queue: &mpsc::Sender<Bytes>,
) -> rusqlite::Result<Filled> {
    // One snapshot for finding the row and reading it.
    let tx = conn.unchecked_transaction()?;
    let rowid: Option<i64> = tx
        .prepare_cached(&format!(
            "SELECT rowid FROM {} WHERE {} = ?1",
            at.table, at.key_column
        ))?
        .query_row([&at.key], |r| r.get(0))
        .optional()?;
    let Some(rowid) = rowid else {
        return Ok(Filled::Gone);
    };
    let blob = tx.blob_open(rusqlite::MAIN_DB, at.table, at.column, rowid, true)?;
    if blob.len() != len {
        return Ok(Filled::Gone);
    }
    while offset < len {
        let mut chunk = vec![0u8; (len - offset).min(CHUNK)];
        blob.read_at_exact(&mut chunk, offset)?;
        offset += chunk.len();
        match queue.try_send(Bytes::from(chunk)) {
            Ok(()) => {}
            Err(TrySendError::Full(chunk)) => return Ok(Filled::Full(chunk, offset)),
            Err(TrySendError::Closed(_)) => return Ok(Filled::Closed),
        }
    }
    Ok(Filled::Done)
}

/// `resp` with `at`'s BLOB (of `len` bytes) as its body: sent as the client reads it when the
/// answer goes straight to a connection, else read whole. A row that is gone is 404.
pub fn respond(
    ctx: &Ctx<'_>,
    mut resp: Response,
    at: Located,
    len: usize,
) -> Result<Response, ApiError> {
    let runtime = tokio::runtime::Handle::try_current().ok();
    let Some(runtime) = runtime.filter(|_| ctx.direct && len > CHUNK) else {
        let conn = ctx.conn()?;
        let bytes: Option<Vec<u8>> = conn
            .prepare_cached(&format!(
                "SELECT {} FROM {} WHERE {} = ?1",
                at.column, at.table, at.key_column
            ))?
            .query_row([&at.key], |r| r.get(0))
            .optional()?;
        let bytes = bytes.ok_or_else(|| ApiError::not_found(at.table, &at.key))?;
        resp.body = Bytes::from(bytes);
        return Ok(resp);
    };
    // A connection of its own: the sending task outlives this request's pooled one.
    let conn = ctx.app.db.detached()?;
    conn.pragma_update(None, "cache_size", CACHE_PAGES)?;
    let (queue, body) = Streamed::channel(QUEUED);
    // The first chunks are read now, so a row already gone is a 404 rather than a cut body.
    let (mut waiting, mut offset) = match fill(&conn, &at, 0, len, &queue)? {
        Filled::Gone => return Err(ApiError::not_found(at.table, &at.key)),
        Filled::Full(chunk, offset) => (Some(chunk), offset),
        Filled::Done | Filled::Closed => (None, len),
    };
    resp.body = Bytes::new();
    resp.delivery.stream = Some(body);
    resp.set_header("content-length", &len.to_string());
    if waiting.is_some() {
        runtime.spawn(async move {
            while let Some(chunk) = waiting.take() {
                if queue.send(chunk).await.is_err() {
                    return;
                }
                // Until the client has taken every queued chunk (the permits are given back at
                // once: this task is the queue's only sender).
                if queue.reserve_many(QUEUED).await.is_err() {
                    return;
                }
                match fill(&conn, &at, offset, len, &queue) {
                    Ok(Filled::Full(chunk, next)) => (waiting, offset) = (Some(chunk), next),
                    Ok(Filled::Done | Filled::Closed) => {}
                    // The body ends short of its Content-Length: the client sees it cut, never
                    // other bytes.
                    Ok(Filled::Gone) => {
                        tracing::warn!(table = at.table, key = %at.key, "a download's row went away while it was sent");
                    }
                    Err(e) => {
                        tracing::warn!(table = at.table, key = %at.key, error = %e, "a download could not be read");
                    }
                }
            }
        });
    }
    Ok(resp)
}
