//! A new database's demo world, built once and copied.
//!
//! Building the world is the migrations (a dozen files, each `ALTER TABLE` re-reading the schema)
//! and the fixtures (the world file parsed and ~700 rows inserted): nine tenths of a cold start.
//! So a new, empty database gets it the same way every time: the world as it stands at the fixed
//! instant [`ANCHOR`], then every time in it moved to the clock's now in one transaction
//! ([`shift`]). The first start builds that anchored world and keeps a copy of its pages (SQLite's
//! backup API) in the user's cache directory, `$XDG_CACHE_HOME/signage/worlds` or
//! `~/.cache/signage/worlds`; later starts copy it instead of building it. The copy's name is a
//! digest of everything the world is made from (the binary's version, every migration's name and
//! checksum, the fixture file), so a binary never takes another's world. Without a cache directory,
//! or when the copy cannot be read or written, the world is built in place: the same rows, slower.
//!
//! The copy holds the fixture rows only (demo keys as their SHA-256, as in the database); the
//! server's secrets are made after it, per database.

use super::error::DbError;
use super::fixtures;
use super::schema_facts;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use std::path::{Path, PathBuf};

/// The instant a kept world is built at (2026-01-01T00:00:00Z, a whole minute).
pub const ANCHOR: i64 = 1_767_225_600;

/// Columns holding an instant derived from the load time that the fixture file does not mark with
/// `$now` (the fleet's schedule, made at load time; the load instant the history is written from).
const DERIVED_TIMES: &[(&str, &[&str])] = &[
    ("device_simulations", &["since_at", "next_due_at"]),
    ("world_history", &["loaded_at"]),
];

/// Which columns of which tables hold load-time instants: the fixture file's `$now` columns and
/// [`DERIVED_TIMES`]. Kept beside the copy, so a start that copies parses no fixture file.
#[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
pub struct TimeColumns(pub Vec<(String, Vec<String>)>);

impl TimeColumns {
    fn with_derived(mut self) -> TimeColumns {
        for (table, columns) in DERIVED_TIMES {
            self.0.push((
                table.to_string(),
                columns.iter().map(|c| c.to_string()).collect(),
            ));
        }
        self
    }
}

/// Where a kept world lives: its pages and the time columns beside them.
pub struct Kept {
    pages: PathBuf,
    columns: PathBuf,
}

/// FNV-1a, 64 bits: a digest of the world's makings for a file name, not a security boundary (the
/// directory is the user's own).
fn fnv(hash: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *hash ^= u64::from(b);
        *hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
}

fn cache_dir() -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    std::env::var_os("XDG_CACHE_HOME")
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|h| h.join(".cache"))
        })
        .map(|base| base.join("signage").join("worlds"))
}

impl Kept {
    /// The kept world of this binary's migrations and fixtures (it may not exist yet).
    pub fn locate(migrations: &refinery::Runner) -> Option<Kept> {
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        fnv(&mut hash, b"signage world 1\0");
        fnv(&mut hash, env!("CARGO_PKG_VERSION").as_bytes());
        for m in migrations.get_migrations() {
            fnv(&mut hash, &m.version().to_le_bytes());
            fnv(&mut hash, m.name().as_bytes());
            fnv(&mut hash, &m.checksum().to_le_bytes());
        }
        fnv(&mut hash, &ANCHOR.to_le_bytes());
        fnv(&mut hash, fixtures::WORLD_JSON.as_bytes());
        let dir = cache_dir()?;
        Some(Kept {
            pages: dir.join(format!("world-{hash:016x}.sqlite")),
            columns: dir.join(format!("world-{hash:016x}.json")),
        })
    }

    /// Copies the kept world's file to `path`, where no file is, and returns its time columns;
    /// `None` when there is no usable copy or `path` appeared meanwhile (nothing is changed then).
    /// A copy of the file is cheaper than SQLite's backup into a new database: no page passes
    /// through a cache, a journal or the write-ahead log, and nothing waits for the disk.
    pub fn place(&self, path: &Path, latest: i64) -> Option<TimeColumns> {
        let columns: TimeColumns =
            serde_json::from_slice(&std::fs::read(&self.columns).ok()?).ok()?;
        let mut partial = path.as_os_str().to_owned();
        partial.push(format!(".{}.partial", crate::random::unseeded_hex::<8>()));
        let partial = PathBuf::from(partial);
        let placed = (|| {
            std::fs::copy(&self.pages, &partial).ok()?;
            let copy = Connection::open_with_flags(
                &partial,
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .ok()?;
            // Made a write-ahead-log database here, while the file is still private: the switch
            // then waits for no disk (nothing needs to survive a crash yet), where the database's
            // first connection would have journalled and synced it.
            copy.execute_batch("PRAGMA synchronous = OFF").ok()?;
            copy.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
                .ok()
                .filter(|mode| mode == "wal")?;
            // Only a copy whose schema is this binary's (its name says so; this says it was
            // finished).
            let schema: i64 = copy
                .query_row(
                    "SELECT coalesce(max(version), 0) FROM refinery_schema_history",
                    [],
                    |r| r.get(0),
                )
                .ok()?;
            // Closing it removes its (empty) log: the file is whole on its own.
            drop(copy);
            // A link is made only where no file is: a database that appeared meanwhile stays.
            (schema == latest && std::fs::hard_link(&partial, path).is_ok()).then_some(())
        })();
        for suffix in ["", "-wal", "-shm"] {
            let mut file = partial.clone().into_os_string();
            file.push(suffix);
            let _ = std::fs::remove_file(file);
        }
        placed.map(|()| columns)
    }

    /// Copies the kept world into `conn`'s database (new and empty) and returns its time columns;
    /// `None` when there is no usable copy (nothing is changed then).
    pub fn copy_into(&self, conn: &mut Connection, latest: i64) -> Option<TimeColumns> {
        let columns: TimeColumns =
            serde_json::from_slice(&std::fs::read(&self.columns).ok()?).ok()?;
        let pages = Connection::open_with_flags(
            &self.pages,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .ok()?;
        // Only a copy whose schema is this binary's (its name says so; this says it was finished).
        let schema: i64 = pages
            .query_row(
                "SELECT coalesce(max(version), 0) FROM refinery_schema_history",
                [],
                |r| r.get(0),
            )
            .ok()?;
        if schema != latest {
            return None;
        }
        let backup = rusqlite::backup::Backup::new(&pages, conn).ok()?;
        match backup.step(-1) {
            Ok(rusqlite::backup::StepResult::Done) => Some(columns),
            _ => None,
        }
    }

    /// Keeps a copy of `conn`'s database, just built at [`ANCHOR`]. Best effort: a start that
    /// cannot write its cache directory only builds the world again next time.
    pub fn keep(&self, conn: &Connection, columns: &TimeColumns) {
        if let Err(e) = self.try_keep(conn, columns) {
            tracing::debug!(error = %e, "the built world was not kept");
        }
    }

    fn try_keep(&self, conn: &Connection, columns: &TimeColumns) -> Result<(), DbError> {
        let dir = self.pages.parent().ok_or_else(|| io("no directory"))?;
        std::fs::create_dir_all(dir).map_err(|e| io(&e.to_string()))?;
        let unique = crate::random::unseeded_hex::<8>();
        let partial = |p: &Path| {
            let mut s = p.as_os_str().to_owned();
            s.push(format!(".{unique}.partial"));
            PathBuf::from(s)
        };
        let (pages, json) = (partial(&self.pages), partial(&self.columns));
        let written = (|| -> Result<(), DbError> {
            let text = serde_json::to_vec(columns).map_err(|e| io(&e.to_string()))?;
            std::fs::write(&json, text).map_err(|e| io(&e.to_string()))?;
            let mut file = Connection::open(&pages)?;
            let backup = rusqlite::backup::Backup::new(conn, &mut file)?;
            backup.step(-1)?;
            drop(backup);
            // A rollback-journal file: a copy reads it without making -wal and -shm files.
            file.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))?;
            drop(file);
            // The columns first: a reader that finds the pages finds them too (the same for every
            // copy of this world).
            std::fs::rename(&json, &self.columns).map_err(|e| io(&e.to_string()))?;
            std::fs::rename(&pages, &self.pages).map_err(|e| io(&e.to_string()))?;
            Ok(())
        })();
        let _ = std::fs::remove_file(&json);
        let _ = std::fs::remove_file(&pages);
        written
    }
}

/// True when there is no database at `path` yet: no file, and no write-ahead log of one.
pub fn absent(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    matches!(std::fs::symlink_metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
        && matches!(std::fs::symlink_metadata(&wal), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

fn io(what: &str) -> DbError {
    DbError::Fixtures(format!("keeping the world: {what}"))
}

/// Builds the world at [`ANCHOR`] into `conn`'s migrated database, in one transaction; returns its
/// time columns.
pub fn build(conn: &mut Connection) -> Result<TimeColumns, DbError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let columns = fixtures::load_anchored(&tx, ANCHOR)?;
    tx.commit()?;
    Ok(TimeColumns(columns).with_derived())
}

/// Moves every load-time instant of a world built at [`ANCHOR`] to `now`'s minute and places its
/// invoices on calendar months, in one transaction: the rows are then exactly those of a world
/// loaded at `now` (a test holds the two equal).
pub fn shift(conn: &mut Connection, columns: &TimeColumns, now: i64) -> Result<(), DbError> {
    let now = fixtures::base_instant(now);
    let delta = now - ANCHOR;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Moving a promotion's window moves the version of its ads (a trigger: what they show may
    // change), but moving every instant by the same delta changes nothing anyone sees: every table
    // whose version a trigger moves keeps the versions the world states.
    let versioned = schema_facts::versioned_by_triggers(&tx)?;
    for table in &versioned {
        tx.execute_batch(&format!(
            "CREATE TEMP TABLE \"shift_versions_{table}\" AS SELECT id, version FROM \"{table}\""
        ))?;
    }
    for (table, cols) in &columns.0 {
        let sets: Vec<String> = cols
            .iter()
            .map(|c| format!("\"{c}\" = \"{c}\" + ?1"))
            .collect();
        tx.execute(
            &format!("UPDATE \"{table}\" SET {}", sets.join(", ")),
            [delta],
        )?;
    }
    // The fleet's heartbeat grid starts at the load time's minute.
    tx.execute(
        "UPDATE fleet_simulation SET beat_at = ?1",
        [now.div_euclid(60) * 60],
    )?;
    // Only the rows a trigger moved are written back (an update of a device moves its cache
    // generation).
    for table in &versioned {
        tx.execute_batch(&format!(
            "UPDATE \"{table}\" SET version = (SELECT k.version FROM \"shift_versions_{table}\" k
                 WHERE k.id = \"{table}\".id)
                 WHERE id IN (SELECT k.id FROM \"shift_versions_{table}\" k
                     WHERE k.id = \"{table}\".id AND k.version IS NOT \"{table}\".version);
             DROP TABLE \"shift_versions_{table}\";"
        ))?;
    }
    super::billing_rule::align_fixture_invoices(&tx, now, None)?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn migrated(dir: &Path, name: &str) -> Connection {
        let mut conn = Connection::open(dir.join(name)).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;")
            .unwrap();
        super::super::migrations::runner().run(&mut conn).unwrap();
        conn
    }

    /// Every row of every table but the migrations' bookkeeping and the cache generations.
    fn rows(conn: &Connection) -> Vec<(String, Vec<Vec<rusqlite::types::Value>>)> {
        let tables: Vec<String> = conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
                 AND name NOT IN ('refinery_schema_history', 'cache_generations') ORDER BY name",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        tables
            .into_iter()
            .map(|t| {
                let mut stmt = conn.prepare(&format!("SELECT * FROM \"{t}\"")).unwrap();
                let n = stmt.column_count();
                let mut rows: Vec<Vec<rusqlite::types::Value>> = stmt
                    .query_map([], |r| (0..n).map(|i| r.get(i)).collect())
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                rows.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
                (t, rows)
            })
            .collect()
    }

    #[test]
    fn a_kept_world_moved_to_now_is_the_world_loaded_at_now() {
        let dir = std::env::temp_dir().join(format!(
            "signage-world-{}",
            crate::random::unseeded_hex::<8>()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        // Not a whole minute, and far from the anchor: every kind of instant moves.
        let now = 1_790_000_017;
        let mut direct = migrated(&dir, "direct.db");
        let tx = direct.transaction().unwrap();
        fixtures::load(&tx, now).unwrap();
        tx.commit().unwrap();
        let expected = rows(&direct);
        assert!(expected.iter().map(|(_, r)| r.len()).sum::<usize>() > 700);

        let mut built = migrated(&dir, "built.db");
        let columns = build(&mut built).unwrap();
        let kept = Kept {
            pages: dir.join("world.sqlite"),
            columns: dir.join("world.json"),
        };
        kept.keep(&built, &columns);
        shift(&mut built, &columns, now).unwrap();
        assert!(rows(&built) == expected, "built at the anchor, then moved");

        let mut copied = Connection::open(dir.join("copied.db")).unwrap();
        copied.execute_batch("PRAGMA journal_mode = WAL;").unwrap();
        let latest = super::super::migrations::latest_migration();
        let columns = kept.copy_into(&mut copied, latest).expect("a usable copy");
        shift(&mut copied, &columns, now).unwrap();
        assert!(rows(&copied) == expected, "copied, then moved");
        // The kept file placed where no database is, then moved: the same rows.
        let placed_path = dir.join("placed.db");
        let columns = kept.place(&placed_path, latest).expect("placed");
        let mut placed = Connection::open(&placed_path).unwrap();
        placed.execute_batch("PRAGMA journal_mode = WAL;").unwrap();
        shift(&mut placed, &columns, now).unwrap();
        assert!(rows(&placed) == expected, "placed, then moved");
        // A file already there is never replaced, whatever it holds; nor is a copy of another
        // schema placed.
        let taken = dir.join("taken.db");
        std::fs::write(&taken, b"someone else's").unwrap();
        assert!(kept.place(&taken, latest).is_none());
        assert_eq!(std::fs::read(&taken).unwrap(), b"someone else's");
        assert!(kept.place(&dir.join("newer.db"), latest + 1).is_none());
        assert!(!dir.join("newer.db").exists());
        let leftovers = std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".partial")
            })
            .count();
        assert_eq!(leftovers, 0, "a partial copy (or its log) was left behind");
        assert!(!absent(&taken) && absent(&dir.join("nothing.db")));
        // A copy of another schema is not taken.
        let mut other = Connection::open(dir.join("other.db")).unwrap();
        assert!(kept.copy_into(&mut other, latest + 1).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
