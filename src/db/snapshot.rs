//! Snapshots of the whole database, kept on disk beside it, made and restored with SQLite's online
//! backup API: a save copies every page into a file of its own; a restore copies them back into
//! the live file as one write transaction, so every pooled connection sees the restored state on
//! its next statement (the backup bumps the schema cookie, and cached statements are re-prepared),
//! and no reader ever sees half of it.
//!
//! Files: `<database>.snapshots/<name>.sqlite` (the pages) and `<name>.json` (what it is: the
//! binary version that took it, when, its size, and an opaque `world` the caller saves beside the
//! pages: the clock, the generator, fault rules). A throw-away database's snapshots go with it; a
//! file database's stay, so a restarted sandbox still has them — and refuses those another binary
//! version took ([`SnapshotError::Version`]).
//!
//! Memory stays bounded whatever the snapshots: only their names and sizes are held; the pages
//! live on disk, within a budget of bytes ([`Store::configure`]).
//!
//! The audit log is history, not state: a restore puts back the audit rows written since the
//! snapshot was taken (a snapshot's audit log is a prefix of the live one), as the reset keeps it.

use super::pool::Db;
use super::scoped::Scoped;
use rusqlite::backup::{Backup, StepResult};
use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What the snapshot operations take and return, named here by their callers.
pub use super::snapshot_store::{Info, SnapshotError, MAX_SNAPSHOTS};

/// How long a save or restore waits for other connections' locks before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// The version a snapshot records: a snapshot restores only into the binary that took it.
pub fn binary_version() -> String {
    format!(
        "signage {} (schema V{})",
        env!("CARGO_PKG_VERSION"),
        super::migrations::latest_migration()
    )
}

/// The `.json` file beside a snapshot's pages.
#[derive(Serialize, Deserialize)]
struct Meta {
    #[serde(flatten)]
    info: Info,
    /// The highest audit row id the pages hold.
    audit_high: i64,
    /// What the caller saved beside the pages.
    world: serde_json::Value,
}

/// 1 to 64 of `a-z`, `0-9`, `-`, `_` (what the routes accept).
fn plain_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

fn pages_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.sqlite"))
}

fn meta_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.json"))
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

fn size_of(conn: &Connection) -> Result<u64, rusqlite::Error> {
    let bytes: i64 = conn.query_row(
        "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
        [],
        |r| r.get(0),
    )?;
    Ok(bytes.max(0) as u64)
}

impl Db {
    /// The directory the snapshots live in, beside the database file.
    fn snapshot_dir(&self) -> PathBuf {
        let mut dir = self.path.clone().into_os_string();
        dir.push(".snapshots");
        PathBuf::from(dir)
    }

    /// Sets the byte budget and reads the snapshots a previous run left beside a file database
    /// (those of another version are listed, and refused on restore).
    pub fn snapshots_configure(&self, budget_bytes: u64) {
        let dir = self.snapshot_dir();
        let mut state = self.snapshots.lock();
        state.budget = budget_bytes;
        state.index.clear();
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "json") {
                    let meta = std::fs::read(&path)
                        .ok()
                        .and_then(|b| serde_json::from_slice::<Meta>(&b).ok());
                    // Only a name this store could have written, matching its file: a name
                    // read back becomes a path again.
                    let stem = path.file_stem().and_then(|s| s.to_str());
                    if let Some(meta) = meta.filter(|m| Some(m.info.name.as_str()) == stem) {
                        if plain_name(&meta.info.name) {
                            state.index.insert(meta.info.name.clone(), meta.info);
                        }
                    }
                }
            }
        }
        state.dir = Some(dir);
    }
}

/// A save and a restore read and write through the request's handle: a save copies what its read
/// transaction sees, a restore ends that read first (later reads see the restored world).
impl Scoped<'_> {
    /// Saves the whole database as snapshot `name` (taken at clock instant `at`), with `world`
    /// beside it. Call it on a blocking thread.
    pub fn snapshot_save(
        &self,
        name: &str,
        at: i64,
        world: serde_json::Value,
    ) -> Result<Info, SnapshotError> {
        let mut state = self.db().snapshots.lock();
        if state.index.contains_key(name) {
            return Err(SnapshotError::Exists(name.into()));
        }
        if state.index.len() >= MAX_SNAPSHOTS {
            return Err(SnapshotError::Full);
        }
        let dir = state.dir()?.to_path_buf();
        let live = self.conn()?;
        let (used, budget) = (state.used(), state.budget);
        let estimate = size_of(&live)?;
        if used + estimate > budget {
            return Err(SnapshotError::Budget {
                used,
                needed: used + estimate,
                budget,
            });
        }
        std::fs::create_dir_all(&dir)?;
        let pages = pages_path(&dir, name);
        let partial = dir.join(format!("{name}.sqlite.partial"));
        let _ = std::fs::remove_file(&partial);
        let written = (|| {
            let mut file = Connection::open(&partial)?;
            copy(&live, &mut file)?;
            // A rollback-journal file, not WAL (which the copied header says): a restore then
            // reads it without creating, checkpointing and removing -wal and -shm files.
            file.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))?;
            let high = audit_high(&file)?;
            let bytes = size_of(&file)?;
            drop(file);
            Ok::<_, SnapshotError>((high, bytes))
        })();
        drop(live);
        let (audit_high, bytes) = match written {
            Ok(v) => v,
            Err(e) => {
                let _ = std::fs::remove_file(&partial);
                return Err(e);
            }
        };
        if used + bytes > budget {
            let _ = std::fs::remove_file(&partial);
            return Err(SnapshotError::Budget {
                used,
                needed: used + bytes,
                budget,
            });
        }
        std::fs::rename(&partial, &pages)?;
        let info = Info {
            name: name.into(),
            taken_at: at,
            bytes,
            version: binary_version(),
        };
        let meta = Meta {
            info: info.clone(),
            audit_high,
            world,
        };
        let json = serde_json::to_vec(&meta).map_err(std::io::Error::other)?;
        if let Err(e) = std::fs::write(meta_path(&dir, name), json) {
            let _ = std::fs::remove_file(&pages);
            return Err(e.into());
        }
        state.index.insert(name.into(), info.clone());
        Ok(info)
    }

    /// Replaces the whole database with snapshot `name`, then puts back the audit rows written
    /// since it was taken. `check` sees the world saved beside the pages before anything changes,
    /// and may refuse it. Returns the snapshot and that world. Call it on a blocking thread.
    pub fn snapshot_restore(
        &self,
        name: &str,
        check: impl FnOnce(&serde_json::Value) -> Result<(), SnapshotError>,
    ) -> Result<(Info, serde_json::Value), SnapshotError> {
        let state = self.db().snapshots.lock();
        let info = state
            .index
            .get(name)
            .ok_or_else(|| SnapshotError::NotFound(name.into()))?;
        let running = binary_version();
        if info.version != running {
            return Err(SnapshotError::Version {
                name: name.into(),
                taken_with: info.version.clone(),
                running,
            });
        }
        let dir = state.dir()?;
        let meta: Meta = serde_json::from_slice(&std::fs::read(meta_path(dir, name))?)
            .map_err(std::io::Error::other)?;
        let pages = Connection::open_with_flags(
            pages_path(dir, name),
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        let mut live = self.conn_for_write()?;
        check(&meta.world)?;
        let (columns, later) = audit_rows_after(&live, meta.audit_high)?;
        self.db()
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        copy(&pages, &mut live)?;
        // Again once copied: work claimed while the copy waited for the write lock is stale too.
        self.db()
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        let tx = live.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        put_back_audit(&tx, &columns, &later)?;
        // The restored rows are older than what the caches may hold: new generations (the
        // snapshot's own would also do, being random, but a restore says so outright).
        tx.execute(
            "UPDATE cache_generations SET credentials = random(), devices = random(), ads = random()",
            [],
        )?;
        tx.commit()?;
        Ok((meta.info, meta.world))
    }
}

impl Db {
    /// Every snapshot, by name.
    pub fn snapshot_list(&self) -> Vec<Info> {
        self.snapshots.lock().index.values().cloned().collect()
    }

    /// The byte budget and what the snapshots use of it.
    pub fn snapshot_usage(&self) -> (u64, u64) {
        let state = self.snapshots.lock();
        (state.used(), state.budget)
    }

    /// Forgets snapshot `name` and removes its files; false when there is none.
    pub fn snapshot_delete(&self, name: &str) -> bool {
        let mut state = self.snapshots.lock();
        if state.index.remove(name).is_none() {
            return false;
        }
        if let Some(dir) = &state.dir {
            let _ = std::fs::remove_file(meta_path(dir, name));
            let _ = std::fs::remove_file(pages_path(dir, name));
        }
        true
    }

    /// How many restores this database has seen: work claimed before a restore (a webhook
    /// attempt in flight) checks it before recording, so it never writes into the restored world.
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Removes a throw-away database's snapshots (on drop).
    pub(super) fn remove_snapshot_files(&self) {
        let dir = self.snapshot_dir();
        let _ = std::fs::remove_dir_all(dir);
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
    tx: &rusqlite::Connection,
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
