//! What a [`super::pool::Db`] holds of its snapshots: their index (names, sizes, the byte budget)
//! and the error of a snapshot operation. Data only, below the pool that holds it and the
//! operations in `snapshot.rs` that use it; it imports no file of `db` but the error.

use super::error::DbError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The most snapshots one sandbox lists (a bound on the listing; the bytes have their own budget).
pub const MAX_SNAPSHOTS: usize = 100;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("no snapshot named `{0}`")]
    NotFound(String),
    #[error("a snapshot named `{0}` exists")]
    Exists(String),
    #[error("the sandbox holds {MAX_SNAPSHOTS} snapshots")]
    Full,
    #[error("the snapshots would take {needed} bytes of a budget of {budget} ({used} in use)")]
    Budget { used: u64, needed: u64, budget: u64 },
    #[error("snapshot `{name}` was taken by {taken_with}; this is {running}")]
    Version {
        name: String,
        taken_with: String,
        running: String,
    },
    /// The snapshot cannot be put back into this sandbox (the caller's check of its world).
    #[error("{detail}")]
    Incompatible { code: &'static str, detail: String },
    #[error("snapshot files: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<rusqlite::Error> for SnapshotError {
    fn from(e: rusqlite::Error) -> Self {
        SnapshotError::Db(DbError::from(e))
    }
}

/// What a snapshot is, for listing.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Info {
    pub name: String,
    /// The sandbox clock when it was taken (Unix seconds).
    pub taken_at: i64,
    pub bytes: u64,
    /// The binary that took it ([`binary_version`]).
    pub version: String,
}

/// The snapshots of one database, by name: their directory, budget and index.
#[derive(Default)]
pub struct Store {
    // One save, restore or delete at a time.
    state: Mutex<State>,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) dir: Option<PathBuf>,
    pub(super) budget: u64,
    pub(super) index: BTreeMap<String, Info>,
}

impl Store {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    pub(super) fn dir(&self) -> Result<&Path, SnapshotError> {
        self.dir
            .as_deref()
            .ok_or_else(|| SnapshotError::Io(std::io::Error::other("snapshots not configured")))
    }
    pub(super) fn used(&self) -> u64 {
        self.index.values().map(|i| i.bytes).sum()
    }
}
