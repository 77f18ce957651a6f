//! One read transaction for a request's handler, and the cache generations read in it.
//!
//! [`Db::read_scope`] runs a handler with one connection set aside for it, in a [`ReadScope`] the
//! call owns, and hands the handler a [`super::Scoped`] handle that borrows it (the pipeline puts
//! it in the request's `http::Ctx`; an MCP tool call's internal request gets the handle of the
//! HTTP request that carries it). Every [`super::Scoped::conn`] of the handle gets that
//! connection, the first read opens one `BEGIN` (deferred) transaction on it, and the scope's end
//! commits it. The handler then reads one state of the database (and SQLite takes and drops its
//! shared lock once, not once per statement). The credential is checked before the body is read,
//! outside any scope: the generation is one statement, its own read, and a cache miss reads the
//! key's rows after it.
//!
//! Writes keep their meaning. [`super::Scoped::write`] inside a scope first ends the read
//! transaction, writes on the same connection, and any later read opens a new one, which sees the
//! write. A write made while the scope's connection is checked out (held across the write) runs on
//! another connection, and the held one's read transaction ends as it comes back. A statement that
//! writes outside a `write` on the scope's connection would turn its read into a write transaction
//! held to the scope's end: debug builds refuse it there, release builds commit it then.
//!
//! [`super::Scoped::generations`] reads `cache_generations` (see
//! `schema/V33__cache_generations.sql`) once per read transaction: what the in-memory caches are
//! checked against.

use super::error::DbError;
use super::pool::{Db, Home};
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
    /// Ads, ad assignments, and the switch and window of promotions (what an ad's row shows).
    pub ads: i64,
    pub restores: u64,
}

/// A request's read scope (see the module): made by [`Db::read_scope`], reached through the
/// [`super::Scoped`] handle it gives, never through the thread.
pub struct ReadScope {
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
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
    /// A connection back to the pool, its read transaction (if any) ended first; one that cannot
    /// end it is closed instead.
    pub(super) fn give_back(&self, conn: Connection) {
        if end_read(&conn).is_ok() {
            self.release(conn);
        }
    }
}

impl ReadScope {
    /// A scope with nothing read yet: its first read takes a connection.
    pub(super) fn new() -> ReadScope {
        ReadScope {
            state: RefCell::new(State::default()),
        }
    }

    /// Ends the scope: its connection back to the pool, its read transaction ended.
    pub(super) fn close(&self, db: &Db) {
        let conn = self.state.borrow_mut().conn.take();
        if let Some(conn) = conn {
            db.give_back(conn);
        }
    }

    /// The scope's connection for a read, its read transaction open: `None` while the scope's
    /// connection is held elsewhere.
    pub(super) fn for_read(&self, db: &Db) -> Result<Option<Connection>, DbError> {
        let taken = {
            let mut scope = self.state.borrow_mut();
            if scope.out {
                None
            } else {
                scope.out = true;
                Some((scope.conn.take(), scope.reading))
            }
        };
        let Some((conn, reading)) = taken else {
            return Ok(None);
        };
        let conn = match conn {
            Some(c) => c,
            None => match db.fresh() {
                Ok(c) => c,
                Err(e) => {
                    self.state.borrow_mut().out = false;
                    return Err(e);
                }
            },
        };
        if !reading {
            if let Err(e) = conn.prepare_cached("BEGIN").and_then(|mut s| s.execute([])) {
                self.take_back(db, conn);
                return Err(e.into());
            }
            let mut scope = self.state.borrow_mut();
            scope.reading = true;
            scope.generations = None;
        }
        Ok(Some(conn))
    }

    /// The scope's connection for a write, its read transaction ended (later reads open a new
    /// one, which sees the write). When the scope's connection is held, `None`, and the held
    /// connection's read ends as it comes back.
    pub(super) fn for_write(&self, db: &Db) -> Result<Option<Connection>, DbError> {
        let taken = {
            let mut scope = self.state.borrow_mut();
            scope.generations = None;
            if scope.out {
                scope.stale = true;
                None
            } else {
                scope.out = true;
                let reading = std::mem::replace(&mut scope.reading, false);
                Some((scope.conn.take(), reading))
            }
        };
        let Some((conn, reading)) = taken else {
            return Ok(None);
        };
        let conn = match conn {
            Some(c) => c,
            None => match db.fresh() {
                Ok(c) => c,
                Err(e) => {
                    self.state.borrow_mut().out = false;
                    return Err(e);
                }
            },
        };
        if reading {
            if let Err(e) = end_read(&conn) {
                // Not reusable in the scope: the next read takes a fresh one.
                drop(conn);
                self.state.borrow_mut().out = false;
                return Err(e);
            }
        }
        Ok(Some(conn))
    }

    /// Ends the scope's read transaction (now, or as its connection comes back): a write scope is
    /// about to write on another connection, and later reads must see it.
    pub(super) fn end_read(&self, db: &Db) {
        match self.for_write(db) {
            Ok(Some(conn)) => self.take_back(db, conn),
            Ok(None) => {}
            // The read could not be ended: the connection was dropped, the next read takes another.
            Err(_) => {}
        }
    }

    /// The generations read in the open read transaction, if they were.
    pub(super) fn known_generations(&self) -> Option<Generations> {
        let scope = self.state.borrow();
        scope.generations.filter(|_| scope.reading && !scope.stale)
    }

    /// Keeps `g`, read on the scope's connection, for the rest of the open read transaction.
    pub(super) fn keep_generations(&self, g: Generations) {
        let mut scope = self.state.borrow_mut();
        if scope.reading && !scope.stale {
            scope.generations = Some(g);
        }
    }
}

impl Home for ReadScope {
    /// The scope's connection comes back from a [`super::PooledConn`].
    fn take_back(&self, db: &Db, conn: Connection) {
        let mut scope = self.state.borrow_mut();
        if !scope.out {
            drop(scope);
            db.give_back(conn);
            return;
        }
        scope.out = false;
        let stale = std::mem::replace(&mut scope.stale, false);
        if stale && scope.reading {
            scope.reading = false;
            scope.generations = None;
            if end_read(&conn).is_err() {
                return;
            }
        }
        scope.conn = Some(conn);
    }
}
