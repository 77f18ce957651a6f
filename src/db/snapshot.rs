//! Snapshots of the whole database, kept in memory, made and restored with SQLite's online
//! backup API: a save copies every page into an in-memory database; a restore copies them back
//! into the live file as one write transaction, so every pooled connection sees the restored
//! state on its next statement (the backup bumps the schema cookie, and cached statements are
//! re-prepared), and no reader ever sees half of it.
//!
//! The audit log is history, not state: a restore puts back the audit rows written since the
//! snapshot was taken (a snapshot's audit log is a prefix of the live one), as the reset keeps it.
//! Nothing outside the database changes: the clock, MCP sessions, rate limits and fault rules.

use super::{Db, DbError};
use rusqlite::backup::{Backup, StepResult};
use rusqlite::types::Value;
use rusqlite::Connection;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most snapshots one sandbox holds (each costs about the size of the database in memory).
pub const MAX_SNAPSHOTS: usize = 20;

/// How long a save or restore waits for other connections' locks before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("no snapshot named `{0}`")]
    NotFound(String),
    #[error("a snapshot named `{0}` exists")]
    Exists(String),
    #[error("the sandbox holds {MAX_SNAPSHOTS} snapshots")]
    Full,
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<rusqlite::Error> for SnapshotError {
    fn from(e: rusqlite::Error) -> Self {
        SnapshotError::Db(DbError::from(e))
    }
}

/// What a snapshot is, for listing.
#[derive(Debug, Clone)]
pub struct Info {
    pub name: String,
    /// The sandbox clock when it was taken (Unix seconds).
    pub taken_at: i64,
    pub bytes: u64,
}

struct Snapshot {
    info: Info,
    pages: Connection,
    /// The highest audit row id it holds.
    audit_high: i64,
}

/// The snapshots of one database, by name.
#[derive(Default)]
pub struct Store {
    // A connection is not `Sync`; the mutex also keeps saves and restores one at a time.
    snapshots: Mutex<BTreeMap<String, Snapshot>>,
}

impl Store {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Snapshot>> {
        self.snapshots.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Copies every page of `from` into `to`, waiting out other connections' locks.
fn copy(from: &Connection, to: &mut Connection) -> Result<(), SnapshotError> {
    let backup = Backup::new(from, to)?;
    let started = Instant::now();
    loop {
        match backup.step(-1)? {
            StepResult::Done => return Ok(()),
            StepResult::More => {}
            StepResult::Busy | StepResult::Locked if started.elapsed() < LOCK_WAIT => {
                std::thread::sleep(Duration::from_millis(2));
            }
            StepResult::Busy | StepResult::Locked => {
                return Err(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                    Some("the database stayed locked".into()),
                )
                .into())
            }
            // A future variant: treat as not done yet.
            #[allow(unreachable_patterns)]
            _ => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

fn audit_high(conn: &Connection) -> Result<i64, rusqlite::Error> {
    conn.query_row("SELECT coalesce(max(id), 0) FROM audit_log", [], |r| {
        r.get(0)
    })
}

impl Db {
    /// Saves the whole database as snapshot `name` (taken at clock instant `at`). Call it on a
    /// blocking thread.
    pub fn snapshot_save(&self, name: &str, at: i64) -> Result<Info, SnapshotError> {
        let mut store = self.snapshots.lock();
        if store.contains_key(name) {
            return Err(SnapshotError::Exists(name.into()));
        }
        if store.len() >= MAX_SNAPSHOTS {
            return Err(SnapshotError::Full);
        }
        let live = self.conn()?;
        let mut pages = Connection::open_in_memory()?;
        copy(&live, &mut pages)?;
        drop(live);
        let bytes: i64 = pages.query_row(
            "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
            [],
            |r| r.get(0),
        )?;
        let info = Info {
            name: name.into(),
            taken_at: at,
            bytes: bytes.max(0) as u64,
        };
        let audit_high = audit_high(&pages)?;
        store.insert(
            name.into(),
            Snapshot {
                info: info.clone(),
                pages,
                audit_high,
            },
        );
        Ok(info)
    }

    /// Replaces the whole database with snapshot `name`, then puts back the audit rows written
    /// since it was taken. Call it on a blocking thread.
    pub fn snapshot_restore(&self, name: &str) -> Result<Info, SnapshotError> {
        let store = self.snapshots.lock();
        let snap = store
            .get(name)
            .ok_or_else(|| SnapshotError::NotFound(name.into()))?;
        let mut live = self.conn()?;
        let (columns, later) = audit_rows_after(&live, snap.audit_high)?;
        copy(&snap.pages, &mut live)?;
        if !later.is_empty() {
            let tx = live.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            put_back_audit(&tx, &columns, &later)?;
            tx.commit()?;
        }
        Ok(snap.info.clone())
    }

    /// Every snapshot, by name.
    pub fn snapshot_list(&self) -> Vec<Info> {
        self.snapshots
            .lock()
            .values()
            .map(|s| s.info.clone())
            .collect()
    }

    /// Forgets snapshot `name`; false when there is none.
    pub fn snapshot_delete(&self, name: &str) -> bool {
        self.snapshots.lock().remove(name).is_some()
    }
}

type Rows = Vec<Vec<Value>>;

fn audit_rows_after(conn: &Connection, high: i64) -> Result<(Vec<String>, Rows), SnapshotError> {
    let mut stmt = conn.prepare("SELECT * FROM audit_log WHERE id > ?1 ORDER BY id")?;
    let columns: Vec<String> = stmt.column_names().map(str::to_string).collect();
    let n = columns.len();
    let rows = stmt
        .query_map([high], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())?
        .collect::<Result<Rows, _>>()?;
    Ok((columns, rows))
}

/// Inserts the rows with their own ids; a row whose id was taken meanwhile (a request audited
/// between the copy and this transaction) gets a new one.
fn put_back_audit(
    tx: &rusqlite::Transaction<'_>,
    columns: &[String],
    rows: &Rows,
) -> Result<(), SnapshotError> {
    let quoted: Vec<String> = columns.iter().map(|c| format!("\"{c}\"")).collect();
    let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
    let mut with_id = tx.prepare(&format!(
        "INSERT OR IGNORE INTO audit_log ({}) VALUES ({})",
        quoted.join(", "),
        marks.join(", ")
    ))?;
    let id_at = columns.iter().position(|c| c == "id");
    let rest: Vec<usize> = (0..columns.len()).filter(|i| Some(*i) != id_at).collect();
    let mut without_id = tx.prepare(&format!(
        "INSERT INTO audit_log ({}) VALUES ({})",
        rest.iter()
            .map(|i| quoted[*i].as_str())
            .collect::<Vec<_>>()
            .join(", "),
        (1..=rest.len())
            .map(|i| format!("?{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    ))?;
    for row in rows {
        if with_id.execute(rusqlite::params_from_iter(row.iter()))? == 0 {
            without_id.execute(rusqlite::params_from_iter(rest.iter().map(|i| &row[*i])))?;
        }
    }
    Ok(())
}
