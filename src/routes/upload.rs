//! An uploaded file, wherever its bytes are: in the request body (in memory), or streamed by the
//! server to a temporary file ([`crate::http::spool`], what `POST /media` gets). Either way it is
//! the raw body under its `Content-Type`, or the `file` part of a `multipart/form-data` body
//! under the part's `Content-Type` (what generated clients send). The handler asks for what it
//! checks (the first bytes, the digest, whether it is UTF-8 text holding a marker) and copies the
//! file into its destination in chunks, so a spooled file is never held in memory whole.

use crate::http::multipart;
use crate::http::spool::{Spool, CHUNK};
use crate::http::{ApiError, Ctx};
use bytes::Bytes;
use sha2::{Digest, Sha256};
use std::ops::Range;
use std::sync::Arc;

/// Where the file's bytes are.
enum Place {
    Memory(Bytes),
    Spooled(Arc<Spool>),
}

/// The file as sent.
pub struct Sent {
    pub content_type: String,
    bytes: Place,
    /// The file's range in the body (all of it, or the `file` part).
    range: Range<usize>,
}

fn unreadable(e: std::io::Error) -> ApiError {
    ApiError::Internal(format!("reading back an upload: {e}"))
}

impl Sent {
    /// The file of `ctx`'s request. A multipart body without a `file` part is 422; a malformed
    /// one 400.
    pub fn of(ctx: &Ctx<'_>) -> Result<Sent, ApiError> {
        let declared = ctx.header("content-type").unwrap_or("");
        let bytes = match &ctx.spool {
            Some(spool) => Place::Spooled(spool.clone()),
            None => Place::Memory(ctx.body.clone()),
        };
        let len = match &bytes {
            Place::Memory(b) => b.len(),
            Place::Spooled(s) => s.len() as usize,
        };
        let Some(boundary) = multipart::boundary(declared) else {
            return Ok(Sent {
                content_type: declared.to_string(),
                bytes,
                range: 0..len,
            });
        };
        let parts = match &bytes {
            Place::Memory(b) => multipart::parse(b, &boundary),
            Place::Spooled(s) => multipart::parse_from(s.as_ref(), &boundary),
        }
        .map_err(|e| ApiError::BadRequest(format!("Malformed multipart/form-data body: {e}.")))?;
        let file = parts
            .into_iter()
            .find(|p| p.name == "file")
            .ok_or_else(|| {
                ApiError::invalid("file", "required", "Send the file as the form part `file`.")
            })?;
        Ok(Sent {
            content_type: file.content_type.unwrap_or_default(),
            bytes,
            range: file.body,
        })
    }

    pub fn len(&self) -> usize {
        self.range.len()
    }

    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    /// The first `n` bytes (fewer when the file is shorter).
    pub fn head(&self, n: usize) -> Result<Vec<u8>, ApiError> {
        let end = self.range.start + n.min(self.len());
        match &self.bytes {
            Place::Memory(b) => Ok(b[self.range.start..end].to_vec()),
            Place::Spooled(s) => s
                .read_range(self.range.start as u64, end as u64)
                .map_err(unreadable),
        }
    }

    /// Up to `n` bytes of the file from `offset` (fewer at its end, none past it).
    pub fn read_at(&self, offset: u64, n: u64) -> Result<Vec<u8>, ApiError> {
        let len = self.len() as u64;
        let start = self.range.start + offset.min(len) as usize;
        let end = self.range.start + offset.saturating_add(n).min(len) as usize;
        match &self.bytes {
            Place::Memory(b) => Ok(b[start..end].to_vec()),
            Place::Spooled(s) => s.read_range(start as u64, end as u64).map_err(unreadable),
        }
    }

    /// Calls `each` with the file's bytes in order, at most [`CHUNK`] at a time.
    pub fn for_each_chunk(
        &self,
        mut each: impl FnMut(&[u8]) -> Result<(), ApiError>,
    ) -> Result<(), ApiError> {
        match &self.bytes {
            Place::Memory(b) => b[self.range.clone()].chunks(CHUNK).try_for_each(each),
            Place::Spooled(s) => {
                let mut failed = None;
                s.for_each_chunk(self.range.start as u64, self.range.end as u64, |c| {
                    each(c).map_err(|e| {
                        failed = Some(e);
                        std::io::Error::other("stopped")
                    })
                })
                .map_err(|e| failed.take().unwrap_or_else(|| unreadable(e)))
            }
        }
    }

    /// The SHA-256 of the file, lower-case hex (a whole spooled body's was taken as it arrived).
    pub fn sha256_hex(&self) -> Result<String, ApiError> {
        if let Place::Spooled(s) = &self.bytes {
            if self.range == (0..s.len() as usize) {
                return Ok(s.sha256_hex());
            }
        }
        let mut hash = Sha256::new();
        self.for_each_chunk(|c| {
            hash.update(c);
            Ok(())
        })?;
        Ok(format!("{:x}", hash.finalize()))
    }

    /// True when the file is UTF-8 text throughout and contains `marker`.
    pub fn is_text_with(&self, marker: &[u8]) -> Result<bool, ApiError> {
        let mut valid = true;
        let mut found = false;
        // Bytes of a character cut at a chunk's end, and the tail kept to find a cut marker.
        let mut carry: Vec<u8> = Vec::new();
        let mut tail: Vec<u8> = Vec::new();
        self.for_each_chunk(|c| {
            if !valid {
                return Ok(());
            }
            let mut text = std::mem::take(&mut carry);
            text.extend_from_slice(c);
            let upto = match std::str::from_utf8(&text) {
                Ok(_) => text.len(),
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                Err(_) => {
                    valid = false;
                    return Ok(());
                }
            };
            carry = text[upto..].to_vec();
            tail.extend_from_slice(&text[..upto]);
            if !found && tail.windows(marker.len()).any(|w| w == marker) {
                found = true;
            }
            let keep = tail.len().saturating_sub(marker.len());
            tail.drain(..keep);
            Ok(())
        })?;
        Ok(valid && carry.is_empty() && found)
    }

    /// The bytes to bind when the file is in memory; `None` when it is spooled (copy it with
    /// [`Sent::write_into`]).
    pub fn in_memory(&self) -> Option<&[u8]> {
        match &self.bytes {
            Place::Memory(b) => Some(&b[self.range.clone()]),
            Place::Spooled(_) => None,
        }
    }

    /// Copies the file into the BLOB `column` of `table`'s row `rowid`, which must have been made
    /// with `zeroblob(len)`, chunk by chunk.
    pub fn write_into(
        &self,
        tx: &rusqlite::Connection,
        table: &str,
        column: &str,
        rowid: i64,
    ) -> Result<(), ApiError> {
        use std::io::Write;
        let mut blob = tx
            .blob_open(rusqlite::MAIN_DB, table, column, rowid, false)
            .map_err(crate::db::DbError::from)?;
        self.for_each_chunk(|c| {
            blob.write_all(c)
                .map_err(|e| ApiError::Internal(format!("writing an upload: {e}")))
        })
    }
}
