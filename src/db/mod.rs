//! Storage: the SQLite file, its connections, migrations and the demo fixtures.
//!
//! Connections come from a small pool of idle connections, each opened with the same pragmas (WAL,
//! foreign keys, busy timeout). Short indexed queries run directly on the async workers; long work
//! (reset, bulk writes) is run by the caller on a blocking thread.
//!
//! A request or a timeline run reads and writes through the [`Scoped`] handle it was passed
//! (`scoped.rs`), which carries its read scope (`scope.rs`) or write scope (`write_scope.rs`);
//! [`Db::conn`] and [`Db::write`] are the pool's, for work that is neither.
//!
//! `mod.rs` only declares the files and re-exports what callers name as `crate::db::…`: the
//! [`Db`] type and its pool live in `pool.rs`.

pub mod billing_rule;
pub mod bulk;
mod checkpoint;
mod error;
pub mod fixtures;
mod migrations;
mod pool;
pub mod schema_facts;
mod scope;
mod scoped;
pub mod snapshot;
mod snapshot_store;
mod tx;
#[cfg(test)]
mod v31_tests;
#[cfg(test)]
mod v35_tests;
#[cfg(test)]
mod v38_tests;
pub mod world;
mod write_scope;

pub use error::DbError;
pub use migrations::latest_migration;
pub use pool::{Conn, Db, OpenReport, PooledConn};
pub use scope::Generations;
pub use scoped::Scoped;
pub use tx::{ExpectedBalance, Origin, Tx, WriteIntent};
pub use write_scope::{Kept, TransactionState};
