//! [`Db`]: the SQLite file and its pool of connections, opened with the same pragmas (WAL, foreign
//! keys, busy timeout), migrated and loaded with the demo world on open, reset to it on demand.
//!
//! Short indexed queries run directly on the async workers; long work (reset, bulk writes) is run
//! by the caller on a blocking thread. The read and write scopes, the handle that carries them
//! ([`super::Scoped`]) and the snapshots extend [`Db`] from files above this one (`scope.rs`,
//! `write_scope.rs`, `scoped.rs`, `snapshot.rs`); what it holds of them (the snapshot index, the
//! checkpointer) and what it runs (migrations, fixtures, the kept world) lives in files below it.
//! It never imports `mod.rs`.

use super::error::DbError;
use super::snapshot_store::Store;
use super::tx::{Tx, WriteIntent};
use super::{checkpoint, fixtures, migrations, schema_facts, world};
use crate::random::Seeded;
use crate::time::Clock;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// How long a connection waits for another's write lock before its statement fails busy.
pub(super) const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Idle connections kept for reuse; more are opened on demand and the surplus is closed.
const MAX_IDLE: usize = 16;

pub struct Db {
    pub(super) path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// Set for `:memory:`: the throw-away file is removed when the database is dropped.
    throwaway: bool,
    /// The sandbox's snapshots of this database ([`super::snapshot`]).
    pub(super) snapshots: Store,
    /// Run after a write transaction that asked for it ([`Tx::wake_after_commit`]) has committed.
    pub(super) after_commit: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>>,
    /// `journal_size_limit` of every connection (bytes; negative: SQLite's default, no limit).
    wal_limit: std::sync::atomic::AtomicI64,
    /// Restores so far ([`Db::generation`]).
    pub(super) generation: std::sync::atomic::AtomicU64,
    /// The health check's own connection ([`Db::is_usable`]), opened by the first check.
    health: Mutex<Option<Connection>>,
    /// Checkpoints the write-ahead log off the request path ([`super::checkpoint`]).
    checkpointer: checkpoint::Checkpointer,
    /// The clock the database lives on, its app's: what its writes stamp and draw ids on, what
    /// loads the demo world at its instant, what a rolled-back run of the timeline puts back.
    clock: Arc<Clock>,
    /// The seeded generator of a seeded sandbox (`sandbox.seed`), which every draw of its writes
    /// comes from; `None` draws from the OS.
    seeded: Option<Arc<Seeded>>,
    /// Writers of the pool waiting for the write lock right now ([`Db::write_waiting`]): a long
    /// run of the timeline lets them in at its next slice ([`Db::yield_to_writers`]).
    writers_waiting: std::sync::atomic::AtomicUsize,
    /// Long writes under way that let waiting writers in between their pieces ([`Db::long_write`]).
    long_writes: std::sync::atomic::AtomicUsize,
}

/// A busy handler that retries every millisecond for at most `wait`: for a write waiting for the
/// lock during a long write (an advance's slices), which releases it only for a moment between
/// its pieces ([`Db::yield_to_writers`]). SQLite's `busy_timeout` sleeps longer the longer it waited (25 to
/// 100 ms apart past 30 ms), so such a write found the lock free only at its next try, up to a
/// hundred milliseconds after it was: the slowest writes during an advance waited 140-200 ms.
fn retry_soon(wait: std::time::Duration) -> impl FnMut(i32) -> bool + Send + 'static {
    let until = std::time::Instant::now() + wait;
    move |_tries| {
        if std::time::Instant::now() >= until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
        true
    }
}

/// The longest a long write (a slice of an advance, a batch of retention) waits at a time for
/// writers that wait for the lock ([`Db::yield_to_writers`]): past it, it goes on, so a flood of
/// writes slows an advance but never stops it.
const MOST_YIELDED: std::time::Duration = std::time::Duration::from_millis(200);

pub struct PooledConn<'a> {
    db: &'a Db,
    conn: Option<Connection>,
    /// The read scope ([`super::Scoped`]) whose connection this is: it goes back there.
    home: Option<&'a dyn Home>,
}

/// Where a scope's connection goes back to when its [`PooledConn`] is dropped (a read scope).
pub(super) trait Home {
    fn take_back(&self, db: &Db, conn: Connection);
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
            if let Some(home) = self.home {
                home.take_back(self.db, conn);
                return;
            }
            // A connection left inside a transaction (a panic mid-write) must not be reused.
            if !conn.is_autocommit() {
                return;
            }
            self.db.release(conn);
        }
    }
}

impl<'a> PooledConn<'a> {
    /// A connection of `db`'s pool (`home`: `None`) or of a read scope, which takes it back.
    pub(super) fn new(db: &'a Db, conn: Connection, home: Option<&'a dyn Home>) -> PooledConn<'a> {
        PooledConn {
            db,
            conn: Some(conn),
            home,
        }
    }
}

/// A connection from [`Db::conn`] or [`super::Scoped::conn`]: the pool's (or the read scope's),
/// or inside a write scope that scope's, shared with its writes so that reads see their rows.
pub enum Conn<'a> {
    Pooled(PooledConn<'a>),
    InWriteScope(std::rc::Rc<Connection>),
}

impl Deref for Conn<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        match self {
            Conn::Pooled(c) => c,
            Conn::InWriteScope(c) => c,
        }
    }
}

impl Conn<'_> {
    /// Whether this is a read scope's connection.
    pub(super) fn in_read_scope(&self) -> bool {
        matches!(self, Conn::Pooled(c) if c.home.is_some())
    }
}

/// What [`Db::open`] did, for the start-up log line.
#[derive(Debug, Clone, Copy)]
pub struct OpenReport {
    pub migrations_applied: usize,
    pub fixtures_loaded: bool,
}

impl Db {
    /// A throw-away in-memory database with the demo world, on the system clock, unseeded: the
    /// unit tests' database.
    #[cfg(test)]
    pub fn demo_in_memory() -> Db {
        match Db::open(":memory:", true, Arc::new(Clock::system()), None) {
            Ok((db, _)) => db,
            Err(e) => panic!("the demo world loads in memory: {e}"),
        }
    }

    /// Opens (creating if needed) the database, applies pending migrations and, on a new database
    /// when `load_fixtures` is set, loads the demo world at the instant `clock` shows. The database
    /// lives on `clock` and, in a seeded sandbox, draws from `seeded` ([`Db::clock`]).
    pub fn open(
        database: &str,
        load_fixtures: bool,
        clock: Arc<Clock>,
        seeded: Option<Arc<Seeded>>,
    ) -> Result<(Db, OpenReport), DbError> {
        let throwaway = database == ":memory:";
        let path = if throwaway {
            // A real file rather than SQLite's :memory:, so that every pooled connection sees the same
            // data and WAL still applies. It lives in the temp dir and is removed on drop.
            // Unseeded: two sandboxes started with the same `--seed` must not share the file.
            std::env::temp_dir().join(format!(
                "signage-{}.db",
                crate::random::unseeded_hex::<12>()
            ))
        } else {
            PathBuf::from(database)
        };
        let db = Db::at(path, throwaway, clock, seeded);
        let runner = migrations::runner();
        let latest = migrations::latest_migration_of(&runner);
        // No file yet: the kept world's file is copied to where the database goes, whole (see
        // `world::Kept::place`); SQLite then opens a database that is already there.
        let mut kept = (load_fixtures && world::absent(&db.path))
            .then(|| world::Kept::locate(&runner))
            .flatten();
        let placed = kept.as_ref().and_then(|k| k.place(&db.path, latest));
        let mut conn = db.open_connection()?;
        let (fresh, empty): (bool, bool) = conn.query_row(
            "SELECT count(*) FILTER (WHERE name = 'refinery_schema_history') = 0, count(*) = 0
             FROM sqlite_master",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let fixtures_loaded = (fresh || placed.is_some()) && load_fixtures;
        // A new, empty database with the demo world: the kept world of this binary copied in, or
        // built and kept (see `world`). A file holding anything already is never overwritten.
        // Located once (a digest of every migration and the fixture file), for either way.
        if !(fixtures_loaded && empty) {
            kept = None;
        } else if kept.is_none() {
            kept = world::Kept::locate(&runner);
        }
        let copied = placed.or_else(|| kept.as_ref().and_then(|k| k.copy_into(&mut conn, latest)));
        let migrations_applied = match copied {
            Some(_) => runner.get_migrations().len(),
            None => runner
                .run(&mut *conn)
                .map_err(|e| DbError::Migration(e.to_string()))?
                .applied_migrations()
                .len(),
        };
        if fixtures_loaded {
            let columns = match copied {
                Some(columns) => columns,
                None => {
                    let columns = world::build(&mut conn)?;
                    if let Some(kept) = &kept {
                        kept.keep(&conn, &columns);
                    }
                    columns
                }
            };
            world::shift(&mut conn, &columns, db.clock.now())?;
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

    /// The clock the database lives on: its app's one clock, passed to whatever reads the time of
    /// this world (background work holds the database, a request its app).
    pub fn clock(&self) -> &Arc<Clock> {
        &self.clock
    }

    /// The seeded generator of a seeded sandbox, which every purposed draw of this world comes
    /// from; `None` draws from the OS.
    pub fn seeded(&self) -> Option<&Seeded> {
        self.seeded.as_deref()
    }

    /// A new id of `kind` on this database's clock and generator (for a row written outside a
    /// write's handle: the fixture loader, the simulations' held rows).
    pub fn new_id(&self, kind: crate::ids::Kind) -> String {
        crate::ids::new_id(&self.clock, self.seeded(), kind)
    }

    /// The handle of the database file at `path`, nothing opened yet (`throwaway`: removed on drop).
    fn at(path: PathBuf, throwaway: bool, clock: Arc<Clock>, seeded: Option<Arc<Seeded>>) -> Db {
        Db {
            clock,
            seeded,
            checkpointer: checkpoint::Checkpointer::new(path.clone()),
            path,
            idle: Mutex::new(Vec::new()),
            throwaway,
            snapshots: Store::default(),
            after_commit: std::sync::OnceLock::new(),
            wal_limit: std::sync::atomic::AtomicI64::new(-1),
            generation: Default::default(),
            health: Mutex::new(None),
            writers_waiting: Default::default(),
            long_writes: Default::default(),
        }
    }

    /// One account, plan and company (`acct_a`, `plan_a`, `cmp_a`), as every schema version since
    /// the first takes them: the rows a migration's test hangs its own on.
    #[cfg(test)]
    pub(super) const COMPANY_A: &'static str =
        "INSERT INTO accounts (id, name, created_at) VALUES ('acct_a', 'A', 0);
         INSERT INTO plans (id, code, name, description, monthly_price_cents, currency,
             max_devices, included_tokens_monthly, features, created_at)
             VALUES ('plan_a', 'a', 'A', 'd', 100, 'EUR', 10, 100, '[]', 0);
         INSERT INTO companies (id, account_id, plan_id, name, slug, industry, country, timezone,
             created_at, updated_at) VALUES ('cmp_a', 'acct_a', 'plan_a', 'A', 'a', 'Retail', 'NL',
             'Europe/Amsterdam', 0, 0);";

    /// A throw-away database migrated up to `version` only, for a migration's test: it writes rows
    /// as that version knew them, then runs the migrations after it.
    #[cfg(test)]
    pub(super) fn migrated_to(version: i32) -> Db {
        let path = std::env::temp_dir().join(format!(
            "signage-v{version}-{}.db",
            crate::random::hex::<8>(None, "test")
        ));
        let db = Db::at(path, true, Arc::new(Clock::system()), None);
        let mut conn = db.open_connection().unwrap();
        migrations::runner()
            .set_target(refinery::Target::Version(version))
            .run(&mut *conn)
            .unwrap();
        drop(conn);
        db
    }

    pub(super) fn open_connection(&self) -> Result<PooledConn<'_>, DbError> {
        Ok(PooledConn::new(self, self.open_raw()?, None))
    }

    /// A connection of its own, outside the pool and any read scope, with the same pragmas: for
    /// work that outlives the request that started it (a download sent at the client's pace).
    pub fn detached(&self) -> Result<Connection, DbError> {
        self.open_raw()
    }

    fn open_raw(&self) -> Result<Connection, DbError> {
        let mut conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        // Its commits ask the database's thread for checkpoints instead of running them.
        self.checkpointer.watch(&mut conn)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // `temp_store` stays at SQLite's default (a file, used only past a spill threshold). With
        // MEMORY, the statement journal of every write that can fail halfway (a multi-row insert
        // on a table with foreign keys, an update that fires a trigger) grows in 1 KiB pieces, one
        // allocation each, four per page it copies: 6 M of the 24 h advance's 64 M instructions.
        // The default copies pages into one 64 KiB buffer and spills past it to a file that SQLite
        // unlinks as it opens it, so it is never reachable by name and holds only pages of the
        // database itself; large sorts spill the same way instead of growing the process.
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             PRAGMA foreign_keys = ON;",
        )?;
        // With the query planner stability guarantee, SQLite keeps the plan of a cached statement
        // when new values are bound; without it, the bundled build (STAT4) re-prepares the auth and
        // list queries on every request, which cost ~40% of the CPU of an authenticated GET.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
            true,
        )?;
        conn.set_prepared_statement_cache_capacity(64);
        let limit = self.wal_limit.load(std::sync::atomic::Ordering::Relaxed);
        if limit >= 0 {
            // After a checkpoint resets the log, SQLite truncates the file back to this size.
            conn.pragma_update(None, "journal_size_limit", limit)?;
        }
        Ok(conn)
    }

    /// An idle connection from the pool, or a new one.
    pub(super) fn fresh(&self) -> Result<Connection, DbError> {
        let reused = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        match reused {
            Some(conn) => Ok(conn),
            None => self.open_raw(),
        }
    }

    /// Keeps an idle connection for reuse (up to [`MAX_IDLE`]).
    pub(super) fn release(&self, conn: Connection) {
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < MAX_IDLE {
                idle.push(conn);
            }
        }
    }

    /// A connection of the pool (or a new one), outside any scope: for work that is no request's
    /// nor timeline run's (the workers, the command line). A request or a run reads through its
    /// [`super::Scoped`] handle.
    pub fn conn(&self) -> Result<Conn<'_>, DbError> {
        Ok(Conn::Pooled(PooledConn::new(self, self.fresh()?, None)))
    }

    /// Bounds the write-ahead log to `bytes` after each checkpoint (`journal_size_limit`) on every
    /// connection from now on: new ones are opened with it, idle ones are given it (one that
    /// refuses is closed). Not closed wholesale: closing the last connection checkpoints and
    /// removes the log, which at start-up is the whole new world written a second time.
    pub fn set_wal_limit(&self, bytes: u64) {
        let bytes = bytes.min(i64::MAX as u64) as i64;
        self.wal_limit
            .store(bytes, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut idle) = self.idle.lock() {
            idle.retain(|conn| {
                conn.pragma_update(None, "journal_size_limit", bytes)
                    .is_ok()
            });
        }
    }

    /// The size of the write-ahead log file (0 when there is none).
    pub fn wal_bytes(&self) -> u64 {
        let mut p = self.path.clone().into_os_string();
        p.push("-wal");
        std::fs::metadata(p).map_or(0, |m| m.len())
    }

    /// After a burst: when the log has grown past `limit` (readers kept the automatic checkpoints
    /// from resetting it), checkpoints it whole on `conn` and truncates it. A checkpoint that
    /// cannot finish (a reader still holds old pages) is tried again on the next call. Returns the
    /// log's size. Through [`super::Scoped::bound_wal`], which picks the connection.
    pub(super) fn bound_wal_on<'c>(
        &'c self,
        limit: u64,
        conn: impl FnOnce() -> Result<PooledConn<'c>, DbError>,
    ) -> u64 {
        let before = self.wal_bytes();
        if before <= limit {
            return before;
        }
        // Without waiting: a TRUNCATE checkpoint that waits for readers holds new writers back
        // meanwhile, so a busy one gives up at once and the next tick tries again.
        let done = conn().map(|conn| {
            let _ = conn.busy_timeout(std::time::Duration::ZERO);
            let result = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            });
            let _ = conn.busy_timeout(BUSY_TIMEOUT);
            result
        });
        let after = self.wal_bytes();
        tracing::info!(before, after, result = ?done.ok().and_then(|r| r.ok()), "write-ahead log checkpointed");
        after
    }

    /// Checkpoints run off the request path since the database was opened ([`checkpoint`]).
    pub fn checkpoints(&self) -> u64 {
        self.checkpointer.runs()
    }

    /// Checkpoints commits ran in place since the database was opened: none unless the thread
    /// fell far behind ([`checkpoint`]).
    pub fn inline_checkpoints(&self) -> u64 {
        self.checkpointer.inline()
    }

    /// Checkpoints run with writers held back since the database was opened ([`checkpoint`]).
    pub fn forced_checkpoints(&self) -> u64 {
        self.checkpointer.forced()
    }

    /// Sets the hook run after a write that called [`Tx::wake_after_commit`] commits (once per database).
    pub fn set_after_commit(&self, hook: Box<dyn Fn() + Send + Sync>) {
        let _ = self.after_commit.set(hook);
    }

    /// Runs the hook set by [`Db::set_after_commit`], if any: a write that asked has committed.
    pub(super) fn run_after_commit(&self) {
        if let Some(hook) = self.after_commit.get() {
            hook();
        }
    }

    /// Runs `f` inside a `BEGIN IMMEDIATE` transaction on a connection of the pool, outside any
    /// scope (see [`Db::conn`]): it takes the write lock up front, so two writers never deadlock
    /// upgrading a read lock, and commits only when `f` succeeds. A request or a timeline run
    /// writes through its [`super::Scoped`] handle. `intent` says who writes and how
    /// ([`WriteIntent`]): a dry run's write runs every check and is rolled back.
    pub fn write<T, E>(
        &self,
        intent: &WriteIntent,
        f: impl FnOnce(&Tx) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<DbError>,
    {
        let conn = self.fresh().map_err(E::from)?;
        self.write_on(PooledConn::new(self, conn, None), intent, f)
    }

    /// [`Db::write`] on `conn` (the pool's, or a read scope's with its read ended).
    pub(super) fn write_on<T, E>(
        &self,
        conn: PooledConn<'_>,
        intent: &WriteIntent,
        f: impl FnOnce(&Tx) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<DbError>,
    {
        self.write_waiting(conn, BUSY_TIMEOUT, intent, f)
    }

    /// [`Db::write_on`], waiting at most `wait` for another writer's lock (zero: not at all, the
    /// write fails busy at once).
    pub(super) fn write_waiting<T, E>(
        &self,
        mut conn: PooledConn<'_>,
        wait: std::time::Duration,
        intent: &WriteIntent,
        f: impl FnOnce(&Tx) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<DbError>,
    {
        // The wait matters only to take the lock (`BEGIN IMMEDIATE`); the connection waits as
        // every other does again as soon as it holds it, or failed to. During a long write that
        // lets writers in ([`Db::long_write`]) it retries every millisecond ([`retry_soon`])
        // rather than on SQLite's back-off. Not otherwise: writers retrying that often took every
        // gap a checkpoint's `RESTART` waits for, and a steady stream of them grew the log
        // (`tenant_wal`).
        if wait == BUSY_TIMEOUT && self.in_long_write() {
            conn.busy_handler(Some(retry_soon(BUSY_TIMEOUT)))
        } else {
            conn.busy_timeout(wait)
        }
        .map_err(|e| E::from(DbError::from(e)))?;
        // Counted while it waits for the lock, so that a long write holding it lets it in at its
        // next slice (a write that would not wait is not counted).
        let waiting = (!wait.is_zero()).then(|| Waiting::new(&self.writers_waiting));
        let failed = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
            Ok(tx) => {
                drop(waiting);
                tx.busy_timeout(BUSY_TIMEOUT)
                    .map_err(|e| E::from(DbError::from(e)))?;
                return self.write_in(tx, intent, f);
            }
            Err(e) => e,
        };
        drop(waiting);
        let _ = conn.busy_timeout(BUSY_TIMEOUT);
        Err(E::from(DbError::from(failed)))
    }

    /// Waits, while writers of the pool wait for the write lock, until they have it (at most
    /// [`MOST_YIELDED`]): called between two slices of a long write, with the lock released, so
    /// that a request's write waits for one slice rather than for the whole. SQLite's own wait is a
    /// retry after a sleep, and a writer that takes the lock again at once would win every time.
    pub fn yield_to_writers(&self) {
        self.yield_to_writers_for(MOST_YIELDED);
    }

    /// [`Db::yield_to_writers`], waiting at most `most`.
    pub fn yield_to_writers_for(&self, most: std::time::Duration) {
        use std::sync::atomic::Ordering;
        if self.writers_waiting.load(Ordering::Acquire) == 0 {
            return;
        }
        let until = std::time::Instant::now() + most;
        while self.writers_waiting.load(Ordering::Acquire) > 0 && std::time::Instant::now() < until
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Marks a long write under way, until the guard is dropped: one that lets writers waiting
    /// for the lock in between its pieces (a sliced advance, with its retention after it), so that
    /// they retry every millisecond meanwhile ([`retry_soon`]).
    pub fn long_write(&self) -> LongWrite<'_> {
        LongWrite(Waiting::new(&self.long_writes))
    }

    /// True while a long write is under way ([`Db::long_write`]).
    pub fn in_long_write(&self) -> bool {
        self.long_writes.load(std::sync::atomic::Ordering::Acquire) > 0
    }

    /// Writers of the pool waiting for the write lock now.
    pub fn writers_waiting(&self) -> usize {
        self.writers_waiting
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Runs `f` in `tx` (just begun) and commits when it succeeds (rolls back a dry run).
    fn write_in<T, E>(
        &self,
        tx: rusqlite::Transaction<'_>,
        intent: &WriteIntent,
        f: impl FnOnce(&Tx) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<DbError>,
    {
        let handle = Tx::new(&tx, intent, &self.clock, self.seeded());
        let out = f(&handle)?;
        let wake = handle.wants_wake();
        if intent.dry_run {
            // Dropping the transaction rolls it back: the checks ran, nothing is kept (nor sent).
            drop(tx);
            return Ok(out);
        }
        tx.commit().map_err(|e| E::from(DbError::from(e)))?;
        if wake {
            self.run_after_commit();
        }
        Ok(out)
    }

    /// True when the database opens a read transaction on its schema as it is now and that schema
    /// has the migrations' table (the health check). Its own statement on its own connection, never
    /// a request's read transaction: the answer is the database's now. The connection is the
    /// check's alone, so a probe neither waits for the pool nor opens a connection when the requests
    /// of the moment hold every pooled one; one that failed is closed, and the next check opens
    /// another.
    ///
    /// `LIMIT 0` reads no row: the statement begins its read transaction, where SQLite compares
    /// the schema it was prepared on with the database's and prepares it again on a change (so a
    /// table renamed or dropped since the last check fails it), then ends at once. A count of the
    /// rows did the same and then opened the table and walked it: 0.7 k instructions of 4.0 k.
    pub fn is_usable(&self) -> bool {
        let mut held = self.health.lock().unwrap_or_else(|e| e.into_inner());
        if held.is_none() {
            *held = self.open_raw().ok();
        }
        let usable = held.as_ref().is_some_and(|conn| {
            conn.prepare_cached("SELECT 1 FROM refinery_schema_history LIMIT 0")
                .and_then(|mut s| s.query([])?.next().map(|_| ()))
                .is_ok()
        });
        if !usable {
            *held = None;
        }
        usable
    }

    /// Replaces every row of the demo world with a fresh copy of the fixtures, in one transaction.
    /// Server secrets and the audit log are kept. The operator's reset (`signage reset`); an account
    /// admin resets only its account ([`super::Scoped::reset_account`]). Slow-ish: call it on a
    /// blocking thread.
    pub fn reset(&self) -> Result<(), DbError> {
        self.write(&WriteIntent::sandbox(), |tx| {
            tx.execute_batch("PRAGMA defer_foreign_keys = ON")?;
            let tables = user_tables(tx)?;
            for table in &tables {
                tx.execute(&format!("DELETE FROM \"{table}\""), [])?;
            }
            fixtures::load(tx, tx.now())
        })
    }
}

/// The rows of one account back to the fixtures, in the caller's write `tx` (see
/// [`super::Scoped::reset_account`]); `fixture_order` is the fixture tables' order, parents first.
pub(super) fn reset_account_rows(
    tx: &Tx,
    account: &str,
    fixture_order: &[String],
) -> Result<bool, DbError> {
    tx.execute_batch("PRAGMA defer_foreign_keys = ON")?;
    // Records kept per actor: the account's keys and users (and, where a record names
    // it, the account's service client).
    for table in schema_facts::PER_ACTOR_TABLES {
        let by_client = if table_columns(tx, table)?.iter().any(|c| c == "client_id") {
            " OR client_id IN (SELECT id FROM api_clients WHERE account_id = ?1)"
        } else {
            ""
        };
        tx.execute(
            &format!(
                "DELETE FROM {table} WHERE actor IN
                        (SELECT k.id FROM api_keys k JOIN api_clients c ON c.id = k.client_id
                         WHERE c.account_id = ?1)
                     OR actor IN (SELECT id FROM users WHERE account_id = ?1){by_client}"
            ),
            [account],
        )?;
    }
    // Every other row belongs to the account its foreign keys lead to: the conditions
    // are read from the schema, so a new table is covered, and one that reaches no
    // account (and is not declared shared) stops the reset rather than keep its rows.
    let owned_by_account = schema_facts::account_conditions(&schema_facts::foreign_keys(tx)?);
    // Tables the fixtures do not fill (events, ...) first, then the fixture tables children
    // first, so that no delete meets a RESTRICT reference (an ad's media).
    let mut tables: Vec<String> = user_tables(tx)?
        .into_iter()
        .filter(|t| !fixture_order.contains(t))
        .collect();
    tables.extend(fixture_order.iter().rev().cloned());
    for table in &tables {
        if schema_facts::SHARED_TABLES.contains(&table.as_str())
            || schema_facts::PER_ACTOR_TABLES.contains(&table.as_str())
        {
            continue;
        }
        let Some(owned) = owned_by_account.get(table) else {
            return Err(DbError::Fixtures(format!(
                "table {table} reaches no account through its foreign keys and is not \
                     declared shared (db::schema_facts::SHARED_TABLES)"
            )));
        };
        tx.execute(&format!("DELETE FROM \"{table}\" WHERE {owned}"), [account])?;
    }
    fixtures::load_account(tx, tx.now(), account)?;
    Ok(true)
}

/// Every table of the demo world: all but migrations bookkeeping, server secrets, the audit log
/// and the cache generations (which the deletes themselves move on).
fn user_tables(tx: &Connection) -> Result<Vec<String>, DbError> {
    let mut stmt = tx.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table'
         AND name NOT IN ('refinery_schema_history', 'server_secrets', 'audit_log',
                          'cache_generations')
         AND name NOT LIKE 'sqlite_%'",
    )?;
    let names = stmt.query_map([], |r| r.get(0))?;
    Ok(names.collect::<Result<_, _>>()?)
}

fn table_columns(tx: &Connection, table: &str) -> Result<Vec<String>, DbError> {
    let mut stmt = tx.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let names = stmt.query_map([table], |r| r.get(0))?;
    Ok(names.collect::<Result<_, _>>()?)
}

impl Drop for Db {
    fn drop(&mut self) {
        self.checkpointer.stop();
        if let Ok(mut idle) = self.idle.lock() {
            idle.clear();
        }
        if let Ok(mut health) = self.health.lock() {
            health.take();
        }
        if self.throwaway {
            self.remove_snapshot_files();
            for suffix in ["", "-wal", "-shm"] {
                let mut p = self.path.clone().into_os_string();
                p.push(suffix);
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// A long write under way while it lives ([`Db::long_write`]).
pub struct LongWrite<'a>(#[allow(dead_code)] Waiting<'a>);

/// A writer counted in [`Db::writers_waiting`] while it lives.
struct Waiting<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(count: &'a std::sync::atomic::AtomicUsize) -> Waiting<'a> {
        count.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size_limit(conn: &Connection) -> i64 {
        conn.query_row("PRAGMA journal_size_limit", [], |r| r.get(0))
            .unwrap()
    }

    /// The limit reaches the pooled connections without closing them (closing the last one would
    /// checkpoint and remove the log), and every connection opened later.
    #[test]
    fn a_wal_limit_reaches_idle_and_new_connections_alike() {
        let db = Db::migrated_to(1);
        let idle = db.fresh().unwrap();
        db.release(idle);
        db.set_wal_limit(123_456);
        let pooled = db.fresh().unwrap();
        assert_eq!(size_limit(&pooled), 123_456);
        let opened = db.fresh().unwrap();
        assert_eq!(size_limit(&opened), 123_456);
        assert!(
            db.wal_bytes() > 0,
            "the log was removed: a connection was closed"
        );
    }

    /// A commit past 1,000 log pages hands the checkpoint to the database's thread instead of
    /// running it (SQLite's automatic checkpoint is off on every connection); dropping the
    /// database stops the thread, closes its connection and removes a throw-away file.
    #[test]
    fn commits_hand_checkpoints_to_the_thread_which_stops_with_the_database() {
        let db = Db::migrated_to(1);
        let path = db.path().to_path_buf();
        let conn = db.fresh().unwrap();
        let auto: i64 = conn
            .query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))
            .unwrap();
        assert_eq!(auto, 0);
        db.release(conn);
        assert_eq!(db.checkpoints(), 0);
        db.write(&WriteIntent::sandbox(), |tx| {
            tx.execute_batch(
                "CREATE TABLE filler (b BLOB);
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1500)
                 INSERT INTO filler SELECT randomblob(4000) FROM n;",
            )?;
            Ok::<_, DbError>(())
        })
        .unwrap();
        let started = std::time::Instant::now();
        while db.checkpoints() == 0 {
            assert!(started.elapsed() < std::time::Duration::from_secs(10));
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(db.inline_checkpoints(), 0);
        drop(db);
        assert!(!path.exists(), "the throw-away file outlived its database");
    }

    /// A write whose statement journal outgrows its 64 KiB buffer spills into a file that has no
    /// name (opened unnamed, or unlinked as it is opened): while the transaction holds it open, no
    /// file of SQLite's is reachable by name in a temporary directory (it holds page images:
    /// key hashes, webhook secrets).
    /// The files this process holds open that SQLite's temporary files could be: directly in a
    /// temporary directory, named as SQLite names them (`etilqs_…`) or unnamed (`#<inode>`, an
    /// `O_TMPFILE`). Anything else there (a checkout cloned under /tmp, a test log, a file a test
    /// running beside this one opened) is not the statement's: (the open file, where it points).
    fn open_temp_files() -> Vec<(std::path::PathBuf, String)> {
        let mut dirs: Vec<String> = ["/var/tmp", "/usr/tmp", "/tmp"].map(String::from).into();
        for var in ["SQLITE_TMPDIR", "TMPDIR"] {
            if let Some(dir) = std::env::var_os(var) {
                dirs.push(dir.to_string_lossy().trim_end_matches('/').to_string());
            }
        }
        let sqlites = |target: &str| {
            dirs.iter().any(|dir| {
                target
                    .strip_prefix(dir.as_str())
                    .and_then(|rest| rest.strip_prefix('/'))
                    .is_some_and(|name| {
                        !name.contains('/')
                            && (name.starts_with("etilqs_") || name.starts_with('#'))
                    })
            })
        };
        std::fs::read_dir("/proc/self/fd")
            .map(|dir| {
                dir.filter_map(|e| {
                    let fd = e.ok()?.path();
                    let target = std::fs::read_link(&fd).ok()?;
                    Some((fd, target.to_string_lossy().into_owned()))
                })
                .filter(|(_, target)| sqlites(target))
                .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn a_spilled_statement_journal_is_never_a_named_file() {
        let db = Db::migrated_to(1);
        let conn = db.fresh().unwrap();
        let store: i64 = conn
            .query_row("PRAGMA temp_store", [], |r| r.get(0))
            .unwrap();
        assert_eq!(
            store, 0,
            "temp_store is SQLite's default on a pooled connection"
        );
        db.release(conn);
        // Files already open in a temporary directory (a log the test runner writes there, a
        // checkout cloned there) are not SQLite's: only what the statement opens is.
        let before: std::collections::HashSet<_> = open_temp_files().into_iter().collect();
        db.write(&WriteIntent::sandbox(), |tx| {
            // Rows with a foreign key, then one statement changing that key on all of them: it may
            // abort halfway, so it runs with a statement journal, which copies each page it first
            // changes (~100 pages, 400 KiB, that were there before it began).
            tx.execute_batch(
                "CREATE TABLE parent (id INTEGER PRIMARY KEY);
                 INSERT INTO parent VALUES (1), (2);
                 CREATE TABLE child (p INTEGER REFERENCES parent(id), b BLOB);
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
                 INSERT INTO child SELECT 1, randomblob(3000) FROM n;",
            )?;
            // A named file of someone else's, open meanwhile in the temporary directory (what a
            // checkout cloned there looks like): not SQLite's, so not counted.
            let probe = std::env::temp_dir().join(format!("checkout-{}", std::process::id()));
            let _held = std::fs::File::create(&probe).unwrap();
            tx.execute("UPDATE child SET p = 2, b = randomblob(3000)", [])?;
            let spilled: Vec<(std::path::PathBuf, String)> = open_temp_files()
                .into_iter()
                .filter(|file| !before.contains(file))
                .collect();
            assert!(
                !spilled.is_empty(),
                "the statement journal did not spill: the test checks nothing"
            );
            for (fd, target) in &spilled {
                assert!(target.ends_with(" (deleted)"), "{target} has a name");
                // Nor can another user open it while it has one (the fallback without O_TMPFILE).
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(fd).unwrap().permissions().mode();
                assert_eq!(mode & 0o077, 0, "{target} is open to others: {mode:o}");
            }
            let _ = std::fs::remove_file(&probe);
            Ok::<_, DbError>(())
        })
        .unwrap();
    }

    /// V4 rebuilds `invoices` (a new status); with foreign keys on, dropping the old table cascades
    /// to the charges, which the migration sets aside and puts back with the ledger's links.
    #[test]
    fn v4_keeps_every_charge_and_ledger_link_of_an_existing_database() {
        let db = Db::migrated_to(3);
        let mut conn = db.open_connection().unwrap();
        // A V3 database with an invoice, its charges and a ledger entry linked to one of them (written
        // as V3 knew them: today's fixtures have columns V3 lacks).
        conn.execute_batch(
            "INSERT INTO accounts VALUES ('acct_a', 'A', 0);
             INSERT INTO plans VALUES ('plan_a', 'a', 'A', 'd', 100, 'EUR', 10, 100, '[]', 0);
             INSERT INTO companies VALUES ('cmp_a', 'acct_a', 'plan_a', 'A', 'a', 'Retail', 'NL',
                 'Europe/Amsterdam', 0, 0, 1);
             INSERT INTO invoices VALUES ('inv_a', 'cmp_a', 'A-1', 'open', 'EUR', 0, 10, 10, 20, NULL, 10);
             INSERT INTO charges VALUES ('ch_a', 'cmp_a', 'inv_a', 'subscription', 's', 100, 'EUR', 5);
             INSERT INTO charges VALUES ('ch_b', 'cmp_a', 'inv_a', 'token_pack', 't', 50, 'EUR', 6);
             INSERT INTO token_transactions VALUES ('ttx_a', 'cmp_a', 'purchase', 100, 100, 'p',
                 NULL, NULL, 'ch_b', 6);",
        )
        .unwrap();
        let census = |c: &Connection| -> (i64, i64, i64) {
            c.query_row(
                "SELECT (SELECT count(*) FROM charges), (SELECT count(*) FROM invoices),
                        (SELECT count(*) FROM token_transactions WHERE charge_id IS NOT NULL)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap()
        };
        let before = census(&conn);
        assert!(before.0 > 0 && before.2 > 0, "{before:?}");
        migrations::runner().run(&mut *conn).unwrap();
        assert_eq!(census(&conn), before);
        let fk_errors: i64 = conn
            .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(fk_errors, 0);
        conn.execute("UPDATE invoices SET status = 'overdue'", [])
            .unwrap();
    }
}
