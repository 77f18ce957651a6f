//! One read transaction for a request's handler, and the cache generations read in it.
//!
//! [`Db::read_scope`] runs a handler with one connection set aside for its thread: every
//! [`Db::conn`] inside it gets that connection, the first read opens one `BEGIN` (deferred)
//! transaction on it, and the scope's end commits it. The handler then reads one state of the
//! database (and SQLite takes and drops its shared lock once, not once per statement). The
//! credential is checked before the body is read, outside any scope: the generation is one
//! statement, its own read, and a cache miss reads the key's rows after it.
//!
//! Writes keep their meaning. [`Db::write`] inside a scope first ends the read transaction, writes
//! on the same connection, and any later read opens a new one, which sees the write. A write made
//! while the scope's connection is checked out (held across the write) runs on another
//! connection, and the held one's read transaction ends as it comes back. A statement that writes
//! outside [`Db::write`] on the scope's connection would turn its read into a write transaction
//! held to the scope's end: debug builds refuse it there, release builds commit it then.
//!
//! [`Db::generations`] reads `cache_generations` (see `schema/V33__cache_generations.sql`) once
//! per read transaction: what the in-memory caches are checked against.

use super::error::DbError;
use super::pool::Db;
use rusqlite::Connection;
use std::cell::RefCell;

/// The generations of the cached kinds of rows, as one read saw them; equal generations mean equal
/// rows. `restores` is this process's count of snapshot restores ([`Db::generation`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Generations {
    /// API keys (all but `last_used_at`), API clients, companies.
    pub credentials: i64,
    /// Devices and ad assignments.
    pub devices: i64,
    pub restores: u64,
}

struct Scope {
    /// The address of the [`Db`] it belongs to.
    db: usize,
    /// The scope's connection while nobody holds it.
    conn: Option<Connection>,
    /// The connection is out, held by a [`super::PooledConn`].
    out: bool,
    /// A read transaction is open on it.
    reading: bool,
    /// A write committed elsewhere while the connection was out: end its read when it comes back.
    stale: bool,
    /// Read in the open read transaction.
    generations: Option<Generations>,
}

thread_local! {
    static SCOPE: RefCell<Option<Scope>> = const { RefCell::new(None) };
}

fn id(db: &Db) -> usize {
    db as *const Db as usize
}

/// Ends the read transaction of `conn`, if one is open.
fn end_read(conn: &Connection) -> Result<(), DbError> {
    if conn.is_autocommit() {
        return Ok(());
    }
    let wrote = matches!(
        conn.transaction_state(None::<&str>),
        Ok(rusqlite::TransactionState::Write)
    );
    debug_assert!(
        !wrote,
        "a statement wrote outside Db::write inside a read scope"
    );
    conn.prepare_cached("COMMIT")?.execute([])?;
    Ok(())
}

impl Db {
    /// Runs `f` with one read transaction for every read it makes through this database on this
    /// thread (see the module). A scope already open on the thread is used as it is.
    pub fn read_scope<T>(&self, f: impl FnOnce() -> T) -> T {
        let opened = SCOPE.with_borrow_mut(|s| {
            if s.is_some() {
                return false;
            }
            *s = Some(Scope {
                db: id(self),
                conn: None,
                out: false,
                reading: false,
                stale: false,
                generations: None,
            });
            true
        });
        if !opened {
            return f();
        }
        struct Close<'a>(&'a Db);
        impl Drop for Close<'_> {
            fn drop(&mut self) {
                let scope = SCOPE.with_borrow_mut(Option::take);
                if let Some(conn) = scope.and_then(|s| s.conn) {
                    self.0.give_back(conn);
                }
            }
        }
        let _close = Close(self);
        f()
    }

    /// A connection back to the pool, its read transaction (if any) ended first; one that cannot
    /// end it is closed instead.
    pub(super) fn give_back(&self, conn: Connection) {
        if end_read(&conn).is_ok() {
            self.release(conn);
        }
    }

    /// The scope's connection for a read, its read transaction open: `None` outside a scope of
    /// this database, or while the scope's connection is held elsewhere.
    pub(super) fn scoped_for_read(&self) -> Result<Option<Connection>, DbError> {
        let taken = SCOPE.with_borrow_mut(|s| match s.as_mut() {
            Some(scope) if scope.db == id(self) && !scope.out => {
                scope.out = true;
                Some((scope.conn.take(), scope.reading))
            }
            _ => None,
        });
        let Some((conn, reading)) = taken else {
            return Ok(None);
        };
        let conn = match conn {
            Some(c) => c,
            None => match self.fresh() {
                Ok(c) => c,
                Err(e) => {
                    SCOPE.with_borrow_mut(|s| {
                        if let Some(scope) = s.as_mut() {
                            scope.out = false;
                        }
                    });
                    return Err(e);
                }
            },
        };
        if !reading {
            if let Err(e) = conn.prepare_cached("BEGIN").and_then(|mut s| s.execute([])) {
                self.return_scoped(conn);
                return Err(e.into());
            }
            SCOPE.with_borrow_mut(|s| {
                if let Some(scope) = s.as_mut() {
                    scope.reading = true;
                    scope.generations = None;
                }
            });
        }
        Ok(Some(conn))
    }

    /// The scope's connection for a write, its read transaction ended (later reads open a new
    /// one, which sees the write). `None` outside a scope; when the scope's connection is held,
    /// also `None`, and the held connection's read ends as it comes back.
    pub(super) fn scoped_for_write(&self) -> Result<Option<Connection>, DbError> {
        let taken = SCOPE.with_borrow_mut(|s| match s.as_mut() {
            Some(scope) if scope.db == id(self) => {
                scope.generations = None;
                if scope.out {
                    scope.stale = true;
                    return None;
                }
                scope.out = true;
                let reading = std::mem::replace(&mut scope.reading, false);
                Some((scope.conn.take(), reading))
            }
            _ => None,
        });
        let Some((conn, reading)) = taken else {
            return Ok(None);
        };
        let conn = match conn {
            Some(c) => c,
            None => self.fresh()?,
        };
        if reading {
            if let Err(e) = end_read(&conn) {
                // Not reusable in the scope: the next read takes a fresh one.
                drop(conn);
                SCOPE.with_borrow_mut(|s| {
                    if let Some(scope) = s.as_mut() {
                        scope.out = false;
                    }
                });
                return Err(e);
            }
        }
        Ok(Some(conn))
    }

    /// Ends the read transaction of this thread's read scope (now, or as its connection comes
    /// back): a write scope is about to write on another connection, and later reads must see it.
    pub(super) fn end_scoped_read(&self) {
        match self.scoped_for_write() {
            Ok(Some(conn)) => self.return_scoped(conn),
            Ok(None) => {}
            // The read could not be ended: the connection was dropped, the next read takes another.
            Err(_) => {}
        }
    }

    /// A scoped connection comes back: home to its scope, or (the scope has ended) to the pool.
    pub(super) fn return_scoped(&self, conn: Connection) {
        let back = SCOPE.with_borrow_mut(|s| match s.as_mut() {
            Some(scope) if scope.db == id(self) && scope.out => {
                scope.out = false;
                let stale = std::mem::replace(&mut scope.stale, false);
                if stale && scope.reading {
                    scope.reading = false;
                    scope.generations = None;
                    if end_read(&conn).is_err() {
                        return None;
                    }
                }
                scope.conn = Some(conn);
                None
            }
            _ => Some(conn),
        });
        if let Some(conn) = back {
            self.give_back(conn);
        }
    }

    /// The generations of the cached rows as this request's read transaction sees them (read once
    /// per read transaction; outside a scope, read now).
    pub fn generations(&self) -> Result<Generations, DbError> {
        let known = SCOPE.with_borrow(|s| {
            s.as_ref()
                .filter(|s| s.db == id(self) && s.reading && !s.stale)
                .and_then(|s| s.generations)
        });
        if let Some(g) = known {
            return Ok(g);
        }
        let conn = self.conn()?;
        let scoped = conn.in_read_scope();
        let (credentials, devices) = conn
            .prepare_cached("SELECT credentials, devices FROM cache_generations WHERE id = 1")?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let g = Generations {
            credentials,
            devices,
            restores: self.generation(),
        };
        drop(conn);
        SCOPE.with_borrow_mut(|s| {
            let same_read = |s: &&mut Scope| scoped && s.db == id(self) && s.reading && !s.stale;
            if let Some(scope) = s.as_mut().filter(same_read) {
                scope.generations = Some(g);
            }
        });
        Ok(g)
    }
}
