//! Storage: the SQLite file, its connections, migrations and the demo fixtures.
//!
//! Connections come from a small pool of idle connections, each opened with the same pragmas (WAL,
//! foreign keys, busy timeout). Short indexed queries run directly on the async workers; long work
//! (reset, bulk writes) is run by the caller on a blocking thread.

pub mod fixtures;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::sync::Mutex;

mod embedded {
    refinery::embed_migrations!("schema");
}

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("migration failed: {0}")]
    Migration(String),
    #[error("fixtures: {0}")]
    Fixtures(String),
}

/// Idle connections kept for reuse; more are opened on demand and the surplus is closed.
const MAX_IDLE: usize = 16;

pub struct Db {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// Set for `:memory:`: the throw-away file is removed when the database is dropped.
    throwaway: bool,
}

pub struct PooledConn<'a> {
    db: &'a Db,
    conn: Option<Connection>,
}

impl Deref for PooledConn<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn
            .as_ref()
            .unwrap_or_else(|| unreachable!("connection taken before drop"))
    }
}

impl DerefMut for PooledConn<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        self.conn
            .as_mut()
            .unwrap_or_else(|| unreachable!("connection taken before drop"))
    }
}

impl Drop for PooledConn<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            // A connection left inside a transaction (a panic mid-write) must not be reused.
            if !conn.is_autocommit() {
                return;
            }
            if let Ok(mut idle) = self.db.idle.lock() {
                if idle.len() < MAX_IDLE {
                    idle.push(conn);
                }
            }
        }
    }
}

/// What [`Db::open`] did, for the start-up log line.
#[derive(Debug, Clone, Copy)]
pub struct OpenReport {
    pub migrations_applied: usize,
    pub fixtures_loaded: bool,
}

impl Db {
    /// Opens (creating if needed) the database, applies pending migrations and, on a new database
    /// when `load_fixtures` is set, loads the demo world.
    pub fn open(database: &str, load_fixtures: bool) -> Result<(Db, OpenReport), DbError> {
        let throwaway = database == ":memory:";
        let path = if throwaway {
            // A real file rather than SQLite's :memory:, so that every pooled connection sees the same
            // data and WAL still applies. It lives in the temp dir and is removed on drop.
            std::env::temp_dir().join(format!("signage-{}.db", crate::random::hex::<12>()))
        } else {
            PathBuf::from(database)
        };
        let db = Db {
            path,
            idle: Mutex::new(Vec::new()),
            throwaway,
        };
        let mut conn = db.open_connection()?;
        let fresh: bool = conn.query_row(
            "SELECT count(*) = 0 FROM sqlite_master WHERE name = 'refinery_schema_history'",
            [],
            |r| r.get(0),
        )?;
        let report = embedded::migrations::runner()
            .run(&mut *conn)
            .map_err(|e| DbError::Migration(e.to_string()))?;
        let migrations_applied = report.applied_migrations().len();
        let fixtures_loaded = fresh && load_fixtures;
        if fixtures_loaded {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            fixtures::load(&tx, crate::time::now())?;
            tx.commit()?;
        }
        drop(conn);
        Ok((
            db,
            OpenReport {
                migrations_applied,
                fixtures_loaded,
            },
        ))
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    fn open_connection(&self) -> Result<PooledConn<'_>, DbError> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             PRAGMA foreign_keys = ON;
             PRAGMA temp_store = MEMORY;",
        )?;
        // With the query planner stability guarantee, SQLite keeps the plan of a cached statement
        // when new values are bound; without it, the bundled build (STAT4) re-prepares the auth and
        // list queries on every request, which cost ~40% of the CPU of an authenticated GET.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
            true,
        )?;
        conn.set_prepared_statement_cache_capacity(64);
        Ok(PooledConn {
            db: self,
            conn: Some(conn),
        })
    }

    /// A connection from the pool (or a new one).
    pub fn conn(&self) -> Result<PooledConn<'_>, DbError> {
        let reused = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        match reused {
            Some(conn) => Ok(PooledConn {
                db: self,
                conn: Some(conn),
            }),
            None => self.open_connection(),
        }
    }

    /// Runs `f` inside a `BEGIN IMMEDIATE` transaction: it takes the write lock up front, so two
    /// writers never deadlock upgrading a read lock, and commits only when `f` succeeds.
    pub fn write<T, E>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<DbError>,
    {
        let mut conn = self.conn().map_err(E::from)?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| E::from(DbError::from(e)))?;
        let out = f(&tx)?;
        tx.commit().map_err(|e| E::from(DbError::from(e)))?;
        Ok(out)
    }

    /// True when the database answers a trivial query (the health check).
    pub fn is_usable(&self) -> bool {
        match self.conn() {
            Ok(conn) => conn
                .query_row("SELECT count(*) FROM refinery_schema_history", [], |r| {
                    r.get::<_, i64>(0)
                })
                .is_ok(),
            Err(_) => false,
        }
    }

    /// Replaces every row of the demo world with a fresh copy of the fixtures, in one transaction.
    /// Server secrets and the audit log are kept. Slow-ish: call it on a blocking thread.
    pub fn reset(&self) -> Result<(), DbError> {
        self.write(|tx| {
            tx.execute_batch("PRAGMA defer_foreign_keys = ON")?;
            let tables: Vec<String> = {
                let mut stmt = tx.prepare(
                    "SELECT name FROM sqlite_master WHERE type = 'table'
                     AND name NOT IN ('refinery_schema_history', 'server_secrets', 'audit_log')
                     AND name NOT LIKE 'sqlite_%'",
                )?;
                let names = stmt.query_map([], |r| r.get(0))?;
                names.collect::<Result<_, _>>()?
            };
            for table in &tables {
                tx.execute(&format!("DELETE FROM \"{table}\""), [])?;
            }
            fixtures::load(tx, crate::time::now())
        })
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.clear();
        }
        if self.throwaway {
            for suffix in ["", "-wal", "-shm"] {
                let mut p = self.path.clone().into_os_string();
                p.push(suffix);
                let _ = std::fs::remove_file(p);
            }
        }
    }
}
