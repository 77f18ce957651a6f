//! [`Scoped`]: the database as one request or one timeline run sees it, passed to the code that
//! reads and writes for it.
//!
//! A request's read scope ([`Db::read_scope`], `scope.rs`) and a run's write scope
//! ([`Scoped::write_scope`], `write_scope.rs`) are values owned by the call that opened them; the
//! handle borrows them and goes down the call chain in the signatures (a handler's `http::Ctx`, a
//! timeline source's `timeline::Env`, the arguments of what they call). Every [`Scoped::conn`] and
//! [`Scoped::write`] of the handle then reads and writes in its scopes, exactly as the scopes'
//! modules describe; [`Db::conn`] and [`Db::write`] are the pool's, outside any scope, for work
//! that is no request's nor run's. Nothing of a scope is kept per thread.

use super::error::DbError;
use super::fixtures;
use super::pool::{self, Conn, Db, PooledConn};
use super::scope::{Generations, ReadScope};
use super::tx::{Tx, WriteIntent};
use super::write_scope::{Kept, TransactionState, WriteScope};

/// The database with the scopes of one request or timeline run (see the module). Copied freely:
/// it only borrows them.
#[derive(Clone, Copy)]
pub struct Scoped<'a> {
    db: &'a Db,
    read: Option<&'a ReadScope>,
    write: Option<&'a WriteScope>,
}

impl Db {
    /// This database outside any scope: every read and write on its own connection of the pool
    /// (the workers, the command line, start-up).
    pub fn unscoped(&self) -> Scoped<'_> {
        Scoped {
            db: self,
            read: None,
            write: None,
        }
    }

    /// Runs `f` with one read transaction for every read it makes through the handle it is given
    /// (see `scope.rs`); the scope ends, its connection back in the pool, when `f` returns.
    pub fn read_scope<T>(&self, f: impl FnOnce(Scoped<'_>) -> T) -> T {
        let scope = ReadScope::new();
        // Ends the scope also when `f` panics.
        struct Close<'a>(&'a Db, &'a ReadScope);
        impl Drop for Close<'_> {
            fn drop(&mut self) {
                self.1.close(self.0);
            }
        }
        let _close = Close(self, &scope);
        f(Scoped {
            db: self,
            read: Some(&scope),
            write: None,
        })
    }
}

impl<'a> Scoped<'a> {
    /// The database itself, for what no scope changes (snapshots' bookkeeping, the health check).
    pub fn db(&self) -> &'a Db {
        self.db
    }

    /// The database's clock ([`Db::clock`]).
    pub fn clock(&self) -> &'a std::sync::Arc<crate::time::Clock> {
        self.db.clock()
    }

    /// The database's seeded generator in a seeded sandbox ([`Db::seeded`]).
    pub fn seeded(&self) -> Option<&'a crate::random::Seeded> {
        self.db.seeded()
    }

    /// The write scope, while it is open and not paused at a commit point.
    fn writing(&self) -> Option<&'a WriteScope> {
        self.write.filter(|w| w.active())
    }

    /// A connection: the write scope's inside one, else the read scope's inside one, else one from
    /// the pool (or a new one).
    pub fn conn(&self) -> Result<Conn<'a>, DbError> {
        if let Some(conn) = self.writing().and_then(WriteScope::conn) {
            return Ok(Conn::InWriteScope(conn));
        }
        if let Some(read) = self.read {
            if let Some(conn) = read.for_read(self.db)? {
                return Ok(Conn::Pooled(PooledConn::new(self.db, conn, Some(read))));
            }
        }
        Ok(Conn::Pooled(PooledConn::new(
            self.db,
            self.db.fresh()?,
            None,
        )))
    }

    /// A connection to write on outside a write scope: the read scope's with its read
    /// transaction ended, or one from the pool.
    pub(super) fn conn_for_write(&self) -> Result<PooledConn<'a>, DbError> {
        if let Some(read) = self.read {
            if let Some(conn) = read.for_write(self.db)? {
                return Ok(PooledConn::new(self.db, conn, Some(read)));
            }
        }
        Ok(PooledConn::new(self.db, self.db.fresh()?, None))
    }

    /// Runs `f` inside a `BEGIN IMMEDIATE` transaction, as [`Db::write`] does; inside a read
    /// scope, on its connection with its read ended first (later reads see the write). Inside a
    /// write scope it joins the scope's transaction instead, which commits at the scope's end; a
    /// failed `f` fails the whole scope, which rolls back (see `write_scope.rs`).
    pub fn write<T, E>(
        &self,
        intent: &WriteIntent,
        f: impl FnOnce(&Tx) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<DbError>,
    {
        self.write_waiting(super::pool::BUSY_TIMEOUT, intent, f)
    }

    /// [`Scoped::write`] for a write that may be skipped (a usage stamp): when another writer
    /// holds the lock (a clock advance's run, say) it fails busy at once instead of waiting for
    /// it. Inside a write scope it joins the scope, as `write` does.
    pub fn write_unless_busy<T, E>(
        &self,
        intent: &WriteIntent,
        f: impl FnOnce(&Tx) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<DbError>,
    {
        self.write_waiting(std::time::Duration::ZERO, intent, f)
    }

    /// Both of the above: join the write scope, else write on this handle's connection, waiting
    /// at most `wait` for another writer's lock.
    fn write_waiting<T, E>(
        &self,
        wait: std::time::Duration,
        intent: &WriteIntent,
        f: impl FnOnce(&Tx) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<DbError>,
    {
        if let Some(scope) = self.writing() {
            return scope.write(self.db, intent, f);
        }
        let conn = self.conn_for_write().map_err(E::from)?;
        self.db.write_waiting(conn, wait, intent, f)
    }

    /// Runs `f` with every write through the handle it is given in one transaction, committed
    /// when `f` succeeds and rolled back when it fails (see `write_scope.rs`). A write scope
    /// already open in this handle is used as it is. The read scope's read ends first: reads
    /// after the run see what it wrote.
    pub fn write_scope<T, E>(&self, f: impl FnOnce(Scoped<'_>) -> Result<T, E>) -> Result<T, E>
    where
        E: From<DbError>,
    {
        if self.writing().is_some() {
            return f(*self);
        }
        if let Some(read) = self.read {
            read.end_read(self.db);
        }
        let scope = WriteScope::open(self.db).map_err(E::from)?;
        // Ends the scope also when `f` panics: an open transaction is rolled back.
        struct Close<'a>(&'a Db, &'a WriteScope);
        impl Drop for Close<'_> {
            fn drop(&mut self) {
                let _ = self.1.close(self.0, false);
            }
        }
        let close = Close(self.db, &scope);
        let out = f(Scoped {
            db: self.db,
            read: self.read,
            write: Some(&scope),
        });
        let ok = out.is_ok();
        let closed = scope.close(self.db, ok);
        drop(close);
        match closed {
            Err(e) if ok => Err(E::from(e)),
            _ => out,
        }
    }

    /// Commits the write scope's open transaction, if any, then runs `f` outside the scope (its
    /// writes, through this handle too, commit on their own), and resumes the scope: for work that
    /// acts outside the database (a webhook attempt) or waits for another thread's write. Outside a
    /// write scope, just `f`.
    pub fn committed<T, E>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, E>
    where
        E: From<DbError>,
    {
        match self.writing() {
            Some(scope) => scope.committed(self.db, f),
            None => f(),
        }
    }

    /// Counts `rows` written (or held to be written at commit) in the write scope's open
    /// transaction: what [`Scoped::slice`] weighs. Nothing outside a write scope.
    pub fn note_work(&self, rows: usize) {
        if let Some(scope) = self.writing() {
            scope.note_work(rows);
        }
    }

    /// Ends a slice of a long write scope (a run of the timeline) between two of its steps:
    /// commits its open transaction when it counted at least `rows` of work ([`Scoped::note_work`])
    /// or when a writer of the pool waits for the lock (`rows` 0: never), then lets waiting writers in
    /// ([`Db::yield_to_writers`]) before the scope's next write opens the next transaction. True
    /// when it committed. What the scope writes does not depend on where its slices end (its
    /// writers hold nothing across a commit that a later step would write differently).
    pub fn slice(&self, rows: usize) -> Result<bool, DbError> {
        let Some(scope) = self.writing() else {
            return Ok(false);
        };
        let Some(work) = scope.work() else {
            return Ok(false);
        };
        if rows == 0 || (work < rows && self.db.writers_waiting() == 0) {
            return Ok(false);
        }
        scope.committed(self.db, || {
            self.db.yield_to_writers();
            Ok::<_, DbError>(())
        })?;
        Ok(true)
    }

    /// Registers `undo` to run if the write scope's transaction rolls back (in-memory state changed
    /// along with its rows). Outside a write scope, or with nothing open, the rows have committed
    /// already: `undo` is dropped.
    pub fn on_rollback(&self, undo: impl FnOnce() + 'static) {
        if let Some(scope) = self.writing() {
            scope.on_rollback(undo);
        }
    }

    /// Runs `f` on the open transaction's `T` (created at its first use, see `write_scope.rs`),
    /// with how long what `f` changes lasts: until the transaction commits, or, for a dry run's
    /// `tx`, only for this call (`f` gets a copy). `None`, without running `f`, outside a write
    /// scope or with no transaction open (the caller writes at once).
    pub fn transaction_state<T: TransactionState, R>(
        &self,
        tx: &Tx,
        f: impl FnOnce(&mut T, Kept) -> R,
    ) -> Option<R> {
        self.writing()?.transaction_state(tx, f)
    }

    /// The generations of the cached rows as this handle's read transaction sees them (read once
    /// per read transaction; outside a read scope, read now).
    pub fn generations(&self) -> Result<Generations, DbError> {
        if let Some(g) = self.read.and_then(ReadScope::known_generations) {
            return Ok(g);
        }
        let conn = self.conn()?;
        let scoped = conn.in_read_scope();
        let (credentials, devices, ads) = conn
            .prepare_cached("SELECT credentials, devices, ads FROM cache_generations WHERE id = 1")?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        let g = Generations {
            credentials,
            devices,
            ads,
            restores: self.db.generation(),
        };
        drop(conn);
        if let Some(read) = self.read.filter(|_| scoped) {
            read.keep_generations(g);
        }
        Ok(g)
    }

    /// Bounds the write-ahead log after a burst ([`Db::bound_wal_on`]'s checkpoint), on the read
    /// scope's connection (its read ended) or the pool's.
    pub fn bound_wal(&self, limit: u64) -> u64 {
        self.db.bound_wal_on(limit, || self.conn_for_write())
    }

    /// Restores one account to the fixtures, in one write: deletes every row it owns (its
    /// companies and everything under them, its API clients, keys and users, their idempotency
    /// records and pending MCP changes) and reloads its fixture rows. Other accounts, the global
    /// catalogue, server secrets and the audit log are untouched. Returns `false`, changing nothing,
    /// when the fixtures do not define the account (a dry run's `intent` keeps nothing). Call it on
    /// a blocking thread.
    pub fn reset_account(&self, intent: &WriteIntent, account: &str) -> Result<bool, DbError> {
        if !fixtures::has_account(account)? {
            return Ok(false);
        }
        let fixture_order = fixtures::table_order()?;
        self.write(intent, |tx| {
            pool::reset_account_rows(tx, account, &fixture_order)
        })
    }
}
