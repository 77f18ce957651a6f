//! The request journal: every REST request and every MCP tool call, per account, with what a
//! test needs to assert on its client's behaviour and what a person needs to answer "why did
//! `req_…` fail?" ([`routes`]).
//!
//! Off the request's path: the pipeline hands each observation to the [`Journal`] ([`observer`]),
//! which only pushes it on a queue. A writer thread takes the queue every 100 ms, redacts it
//! ([`record`]) and encodes it into segments ([`codec`]) held in memory; it writes them into the
//! journal's own SQLite file ([`store`]), beside the database and outside every snapshot (a restore
//! never rewinds it), when the traffic pauses, every `WRITE_AFTER` (2 s) at the latest, and before
//! every read, so a client reads its own requests at once. The ring applies in memory too: at
//! benchmark rates most entries are dropped before they reach the file, whose I/O was what
//! journaling cost once the encoding was cheap.

mod codec;
mod observer;
pub mod record;
pub mod routes;
pub mod scrub;
pub mod store;
mod summary;

pub use observer::Journal;
pub use store::path_for;
