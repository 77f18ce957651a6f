//! One write transaction for a run of the timeline (an advance, a tick).
//!
//! [`super::Scoped::write_scope`] runs `f` with one connection set aside in a [`WriteScope`] the
//! call owns, and hands `f` a handle that borrows it (the run passes it to every source in
//! `timeline::Env`, and to the step hook): the first `write` of the handle opens one
//! `BEGIN IMMEDIATE` transaction on it, every later write joins that transaction, and every `conn`
//! of the handle reads on the same connection, so it sees the scope's uncommitted rows. Code
//! reaches the scope only through the handle it was passed. The scope commits once, when `f` succeeds: a day of the simulated fleet writes each hot page of the
//! write-ahead log once instead of once per write, and no other connection's page cache is
//! invalidated on the way.
//!
//! All or nothing: a write inside the scope is not a savepoint of its own (a savepoint copies every
//! page it first changes; that was a tenth of an advance). A write whose closure fails fails the
//! scope instead: every later write of it fails, and it can only roll back. A caller that swallowed
//! the error cannot commit half a write. Only a dry run's write ([`WriteIntent::dry_run`]) is a savepoint, rolled back
//! to at its end.
//!
//! Commit points. Work that acts outside the database or waits for another thread's write (a
//! webhook attempt sent, a drain waiting for the worker's record) runs in `Scoped::committed`: the
//! open transaction commits first, then the work runs outside the scope (the scope is paused
//! meanwhile, so the work's own writes, through the same handle too, commit as they would without
//! one), and later writes of the scope open a new transaction. A webhook is thus never sent before
//! the rows it reads have committed, and the write lock is never held across a network wait. The
//! after-commit hook ([`Tx::wake_after_commit`]) runs after the commit that made the asking write
//! visible, never for a write that rolled back.
//!
//! Transaction state. A writer that keeps something in memory for the open transaction (rows it
//! gathers over a run's steps and writes once, what it read once) keeps it as a
//! [`TransactionState`] of the scope (`Scoped::transaction_state`) rather than per thread: the state
//! is created at its first use in the transaction, written just before the transaction commits (at
//! the scope's end or at a commit point), and dropped with the transaction when it commits or
//! rolls back, so the next transaction starts without it.
//!
//! Failure. When `f` fails (or a write or a commit does), the open transaction rolls back: the
//! world is as it was at the scope's start or at its last commit point, never half a run. In-memory state that
//! follows the rows registers its undo with `Scoped::on_rollback` (the simulated scans' mark), and a
//! frozen clock moves back to the instant it showed at that start or commit point (a running clock
//! keeps running: what was rolled back falls due again and runs on the next tick or advance).
//! After SQLite itself abandoned the transaction (a full disk, an I/O error), every later write of
//! the scope fails rather than writing on top of a world that lost its earlier part.

use super::error::DbError;
use super::pool::Db;
use super::tx::{Tx, WriteIntent};
use rusqlite::Connection;
use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::rc::Rc;

type Undo = Box<dyn FnOnce()>;

/// What a writer keeps in memory for the write scope's open transaction (see the module): rows
/// held back to be written once, or what it read once and that no write of the transaction changes.
pub trait TransactionState: Default + Clone + 'static {
    /// Writes what the state holds back, on the transaction's connection, just before it commits;
    /// an error fails the commit (the scope then rolls back).
    fn before_commit(self, conn: &Connection) -> Result<(), DbError>;

    /// What the scope's next transaction may start with after a commit in the middle of the scope
    /// (a slice or a commit point), if no other connection commits in between: what the state
    /// read that only another writer could change (default: nothing, the next one starts empty).
    fn carried(&self) -> Option<Self> {
        None
    }
}

/// How long a change to the [`TransactionState`] a caller is handed lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kept {
    /// Until the open transaction commits (its state is written then) or rolls back.
    UntilCommit,
    /// Only for the call: in a dry run (a savepoint rolled back at its end) the caller works on a
    /// copy of the state, writes at once what it must write, and the state itself stays as it was.
    ThisCall,
}

/// One [`TransactionState`] of the open transaction, by type.
struct State {
    of: TypeId,
    /// Out while a caller works on it ([`WriteScope::transaction_state`]).
    state: Option<Box<dyn Any>>,
    /// [`TransactionState::before_commit`] of the state's type.
    before_commit: fn(Box<dyn Any>, &Connection) -> Result<(), DbError>,
    /// [`TransactionState::carried`] of the state's type, as a state.
    carried: fn(&dyn Any) -> Option<State>,
}

impl State {
    fn new<T: TransactionState>(state: T) -> State {
        State {
            of: TypeId::of::<T>(),
            state: Some(Box::new(state)),
            before_commit: |state, conn| match state.downcast::<T>() {
                Ok(state) => state.before_commit(conn),
                Err(_) => Ok(()),
            },
            carried: |state| {
                state
                    .downcast_ref::<T>()
                    .and_then(T::carried)
                    .map(State::new)
            },
        }
    }
}

/// The open part of a write scope: its connection, transaction and what follows them.
struct Open {
    conn: Rc<Connection>,
    /// `BEGIN IMMEDIATE` ran and nothing committed or rolled it back since.
    open: bool,
    /// SQLite abandoned the open transaction: the scope's later writes fail.
    broken: bool,
    /// A write of the open transaction asked for the after-commit hook.
    wake: bool,
    /// Undo of in-memory state changed along with the open transaction, run if it rolls back.
    undo: Vec<Undo>,
    /// The open transaction's [`TransactionState`]s, in the order they were first used: written
    /// in that order just before it commits, dropped with it either way.
    states: Vec<State>,
    /// The clock (ms) at the scope's start or its last commit: where a frozen clock goes back to.
    committed_at: i64,
    /// Rows the open transaction's writers hold or wrote ([`WriteScope::note_work`]): what a
    /// slice ([`super::Scoped::slice`]) measures.
    work: usize,
    /// What the last transaction's states carry into the next one ([`TransactionState::carried`]),
    /// and the connection's `data_version` after that commit: the next transaction takes them only
    /// if no other connection committed since.
    carried: Option<(Vec<State>, i64)>,
}

/// A timeline run's write scope (see the module): made by `Scoped::write_scope`, reached through
/// the handle it gives, never through the thread.
pub struct WriteScope {
    /// `None` once closed, and while a commit point's work runs outside it ([`WriteScope::committed`]).
    state: RefCell<Option<Open>>,
}

fn run(conn: &Connection, sql: &str) -> Result<(), DbError> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

/// The transaction was lost: SQLite rolled it back on its own (the connection is back in
/// autocommit mode).
fn lost() -> DbError {
    DbError::Sqlite(rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
        Some("the advance's write transaction was rolled back by an earlier failure".into()),
    ))
}

impl WriteScope {
    /// A scope with its own connection, nothing written yet.
    pub(super) fn open(db: &Db) -> Result<WriteScope, DbError> {
        let conn = db.fresh()?;
        Ok(WriteScope {
            state: RefCell::new(Some(Open {
                conn: Rc::new(conn),
                open: false,
                broken: false,
                wake: false,
                undo: Vec::new(),
                states: Vec::new(),
                committed_at: db.clock().now_millis(),
                work: 0,
                carried: None,
            })),
        })
    }

    /// The scope is open and not paused at a commit point: its writes join it.
    pub(super) fn active(&self) -> bool {
        self.state.borrow().is_some()
    }

    /// Ends the scope: commits its open transaction (`commit`) or rolls it back, undoing what
    /// follows it, and gives the connection back. Nothing when it is closed already.
    pub(super) fn close(&self, db: &Db, commit: bool) -> Result<(), DbError> {
        let Some(mut scope) = self.state.borrow_mut().take() else {
            return Ok(());
        };
        let mut result = Ok(());
        if commit && (scope.open || scope.broken) {
            result = commit_open(db, &mut scope);
        }
        if scope.open || scope.broken {
            if scope.open {
                let _ = run(&scope.conn, "ROLLBACK");
                scope.open = false;
            }
            undo(&mut scope, db.clock());
        }
        if let Ok(conn) = Rc::try_unwrap(scope.conn) {
            // A connection still inside a transaction (a rollback that failed) is not reused.
            if conn.is_autocommit() {
                db.release(conn);
            }
        }
        result
    }

    /// Commits the scope's open transaction, if any, then runs `f` outside the scope (its writes
    /// commit on their own), and resumes the scope (see the module's commit points). Outside an
    /// active scope, just `f`.
    pub(super) fn committed<T, E>(&self, db: &Db, f: impl FnOnce() -> Result<T, E>) -> Result<T, E>
    where
        E: From<DbError>,
    {
        let taken = self.state.borrow_mut().take();
        let Some(mut scope) = taken else {
            return f();
        };
        if scope.open {
            // What the states read stays good for the next transaction unless another writer
            // commits meanwhile (checked when it opens).
            let carried: Vec<State> = scope
                .states
                .iter()
                .filter_map(|state| state.state.as_deref().and_then(state.carried))
                .collect();
            if let Err(e) = commit_open(db, &mut scope) {
                *self.state.borrow_mut() = Some(scope);
                return Err(E::from(e));
            }
            if !carried.is_empty() {
                match data_version(&scope.conn) {
                    Ok(version) => scope.carried = Some((carried, version)),
                    Err(e) => {
                        *self.state.borrow_mut() = Some(scope);
                        return Err(E::from(e));
                    }
                }
            }
        }
        struct Resume<'a>(&'a WriteScope, Option<Open>);
        impl Drop for Resume<'_> {
            fn drop(&mut self) {
                *self.0.state.borrow_mut() = self.1.take();
            }
        }
        let _resume = Resume(self, Some(scope));
        f()
    }

    /// Counts `rows` more of work in the open transaction (see [`super::Scoped::slice`]).
    pub(super) fn note_work(&self, rows: usize) {
        if let Some(scope) = self.state.borrow_mut().as_mut() {
            scope.work = scope.work.saturating_add(rows);
        }
    }

    /// The work counted in the open transaction; `None` with none open.
    pub(super) fn work(&self) -> Option<usize> {
        self.state
            .borrow()
            .as_ref()
            .filter(|s| s.open)
            .map(|s| s.work)
    }

    /// Registers `undo` to run if the scope's open transaction rolls back; with nothing open, the
    /// rows have committed already: `undo` is dropped.
    pub(super) fn on_rollback(&self, undo: impl FnOnce() + 'static) {
        if let Some(scope) = self.state.borrow_mut().as_mut().filter(|s| s.open) {
            scope.undo.push(Box::new(undo));
        }
    }

    /// Runs `f` on the open transaction's `T` (see [`super::Scoped::transaction_state`]).
    pub(super) fn transaction_state<T: TransactionState, R>(
        &self,
        tx: &Tx,
        f: impl FnOnce(&mut T, Kept) -> R,
    ) -> Option<R> {
        let dry = tx.dry_run();
        // Taken out of the scope while `f` runs, so that `f` may use the database (a use of `T`
        // meanwhile finds none, and writes at once).
        let (mut state, slot) = {
            let mut s = self.state.borrow_mut();
            let scope = s.as_mut().filter(|s| s.open && !s.broken)?;
            let slot = match scope.states.iter().position(|s| s.of == TypeId::of::<T>()) {
                Some(slot) => slot,
                None => {
                    scope.states.push(State::new(T::default()));
                    scope.states.len() - 1
                }
            };
            let held = scope.states[slot].state.take()?.downcast::<T>().ok()?;
            if dry {
                let copy = Box::new(T::clone(&held));
                scope.states[slot].state = Some(held);
                (copy, None)
            } else {
                (held, Some(slot))
            }
        };
        let Some(slot) = slot else {
            return Some(f(&mut state, Kept::ThisCall));
        };
        let out = f(&mut state, Kept::UntilCommit);
        let mut s = self.state.borrow_mut();
        let back = s
            .as_mut()
            .filter(|s| s.open)
            .and_then(|s| s.states.get_mut(slot))
            .filter(|s| s.of == TypeId::of::<T>() && s.state.is_none());
        // None when `f` ended the transaction (nothing does: it writes on its connection).
        if let Some(back) = back {
            back.state = Some(state);
        }
        Some(out)
    }

    /// The scope's connection for a read, while it is active.
    pub(super) fn conn(&self) -> Option<Rc<Connection>> {
        self.state.borrow().as_ref().map(|s| Rc::clone(&s.conn))
    }

    /// Runs the write `f` in the scope's transaction (opened first if need be); a dry run's as a
    /// savepoint, rolled back to.
    pub(super) fn write<T, E>(
        &self,
        db: &Db,
        intent: &WriteIntent,
        f: impl FnOnce(&Tx) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: From<DbError>,
    {
        let conn = (|| {
            let mut s = self.state.borrow_mut();
            let Some(scope) = s.as_mut() else {
                return Err(lost());
            };
            if scope.broken {
                return Err(lost());
            }
            if !scope.open {
                run(&scope.conn, "BEGIN IMMEDIATE")?;
                scope.open = true;
                if let Some((carried, version)) = scope.carried.take() {
                    if data_version(&scope.conn)? == version {
                        scope.states = carried;
                    }
                }
            }
            Ok(Rc::clone(&scope.conn))
        })();
        let conn = conn.map_err(E::from)?;
        if !intent.dry_run {
            // No savepoint (its page copies were a tenth of an advance): a write that fails fails
            // the scope instead, which then rolls back whole.
            let tx = Tx::new(&conn, intent, db.clock(), db.seeded());
            let out = f(&tx);
            let wake = tx.wants_wake();
            if let Some(scope) = self.state.borrow_mut().as_mut() {
                if out.is_err() || conn.is_autocommit() {
                    scope.broken = true;
                    scope.wake = false;
                } else if wake {
                    scope.wake = true;
                }
            }
            return out;
        }
        // A dry run keeps nothing of the write: a savepoint, rolled back to.
        if let Err(e) = run(&conn, "SAVEPOINT write") {
            self.check_open(&conn);
            return Err(E::from(e));
        }
        let tx = Tx::new(&conn, intent, db.clock(), db.seeded());
        let out = f(&tx);
        let wake = tx.wants_wake();
        let keep = out.is_ok() && !intent.dry_run;
        let ended = if keep {
            run(&conn, "RELEASE write")
        } else {
            run(&conn, "ROLLBACK TO write").and_then(|()| run(&conn, "RELEASE write"))
        };
        self.check_open(&conn);
        if let Err(e) = ended {
            // The savepoint is gone with the transaction: the write did not happen.
            return match out {
                Err(original) => Err(original),
                Ok(_) => Err(E::from(e)),
            };
        }
        if keep && wake {
            if let Some(scope) = self.state.borrow_mut().as_mut() {
                scope.wake = true;
            }
        }
        out
    }

    /// Marks the scope broken when its open transaction is gone.
    fn check_open(&self, conn: &Connection) {
        if conn.is_autocommit() {
            if let Some(scope) = self.state.borrow_mut().as_mut().filter(|s| s.open) {
                scope.open = false;
                scope.broken = true;
                scope.wake = false;
            }
        }
    }
}

/// The connection's `PRAGMA data_version`: it changes when another connection commits.
fn data_version(conn: &Connection) -> Result<i64, DbError> {
    Ok(conn
        .prepare_cached("PRAGMA data_version")?
        .query_row([], |r| r.get(0))?)
}

/// Commits the scope's open transaction and runs the after-commit hook if a write asked; a failed
/// commit leaves it open (the caller rolls it back).
fn commit_open(db: &Db, scope: &mut Open) -> Result<(), DbError> {
    if scope.broken {
        return Err(lost());
    }
    // Held-back writes go in first, in the order the states were first used; one that fails
    // fails the commit, and the scope can then only roll back.
    for state in std::mem::take(&mut scope.states) {
        let Some(held) = state.state else { continue };
        if let Err(e) = (state.before_commit)(held, &scope.conn) {
            scope.broken = true;
            return Err(e);
        }
    }
    run(&scope.conn, "COMMIT")?;
    scope.open = false;
    scope.work = 0;
    scope.undo.clear();
    scope.committed_at = db.clock().now_millis();
    if std::mem::take(&mut scope.wake) {
        db.run_after_commit();
    }
    Ok(())
}

/// Runs the scope's undo list, newest first, and puts the database's clock (if frozen) back to
/// the last commit.
fn undo(scope: &mut Open, clock: &crate::time::Clock) {
    scope.states.clear();
    scope.carried = None;
    scope.work = 0;
    while let Some(undo) = scope.undo.pop() {
        undo();
    }
    scope.wake = false;
    clock.rewind(scope.committed_at);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Scoped;

    /// Counts of `n` rows to insert into a scratch table at commit.
    #[derive(Default, Clone)]
    struct Pending(Vec<i64>);

    impl TransactionState for Pending {
        fn before_commit(self, conn: &Connection) -> Result<(), DbError> {
            for n in self.0 {
                conn.execute("INSERT INTO pending_test (n) VALUES (?1)", [n])?;
            }
            Ok(())
        }
    }

    /// A read kept across a commit of the scope (a slice) unless another connection commits.
    #[derive(Default, Clone)]
    struct Read(Option<i64>);

    impl TransactionState for Read {
        fn before_commit(self, _conn: &Connection) -> Result<(), DbError> {
            Ok(())
        }

        fn carried(&self) -> Option<Self> {
            Some(self.clone())
        }
    }

    /// What the scope's states carry reaches its next transaction after a commit point, unless
    /// another connection committed in between; a rollback drops it.
    #[test]
    fn a_carried_state_survives_a_commit_unless_another_writer_commits() {
        let db = crate::db::Db::demo_in_memory();
        let db = db.unscoped();
        let real = WriteIntent::sandbox();
        let read = |db: Scoped<'_>| {
            db.write(&real, |tx| {
                Ok::<_, DbError>(db.transaction_state(tx, |r: &mut Read, _| r.0))
            })
        };
        let keep = |db: Scoped<'_>, n: i64| {
            db.write(&real, |tx| {
                Ok::<_, DbError>(db.transaction_state(tx, |r: &mut Read, _| r.0 = Some(n)))
            })
        };
        db.write_scope(|db| {
            keep(db, 7)?;
            db.committed(|| Ok::<_, DbError>(()))?;
            assert_eq!(read(db)?, Some(Some(7)), "not carried past a quiet commit");
            // Paused at a commit point, the handle writes on another connection.
            db.committed(|| {
                db.write(&real, |tx| {
                    tx.execute_batch("CREATE TABLE other_writer (n INTEGER)")
                        .map_err(DbError::from)
                })
            })?;
            assert_eq!(
                read(db)?,
                Some(None),
                "carried past another writer's commit"
            );
            Ok::<_, DbError>(())
        })
        .unwrap();
    }

    fn stored(db: Scoped<'_>) -> Vec<i64> {
        let conn = db.conn().unwrap();
        let mut stmt = conn
            .prepare("SELECT n FROM pending_test ORDER BY rowid")
            .unwrap();
        let rows = stmt.query_map([], |r| r.get(0)).unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    }

    fn hold(db: Scoped<'_>, tx: &Tx, n: i64) -> Option<Kept> {
        db.transaction_state(tx, |p: &mut Pending, kept| {
            p.0.push(n);
            kept
        })
    }

    /// The state is written at each commit (a commit point's too) and starts empty in the next
    /// transaction; a dry run's change does not stay; a rollback drops it unwritten.
    #[test]
    fn transaction_state_is_written_at_commit_and_dropped_on_rollback() {
        let db = crate::db::Db::demo_in_memory();
        let real = WriteIntent::sandbox();
        let dry = WriteIntent {
            dry_run: true,
            ..WriteIntent::sandbox()
        };
        db.write(&real, |tx| {
            tx.execute_batch("CREATE TABLE pending_test (n INTEGER)")
                .map_err(DbError::from)
        })
        .unwrap();
        let db = db.unscoped();
        db.write(&real, |tx| {
            assert_eq!(hold(db, tx, 0), None, "outside a scope");
            Ok::<_, DbError>(())
        })
        .unwrap();
        db.write_scope(|db| {
            db.write(&real, |tx| {
                assert_eq!(hold(db, tx, 1), Some(Kept::UntilCommit));
                Ok::<_, DbError>(())
            })?;
            db.write(&dry, |tx| {
                assert_eq!(hold(db, tx, 99), Some(Kept::ThisCall));
                Ok::<_, DbError>(())
            })?;
            assert!(stored(db).is_empty(), "written before the commit");
            db.committed(|| Ok::<_, DbError>(()))?;
            assert_eq!(stored(db), [1]);
            db.write(&real, |tx| Ok::<_, DbError>(hold(db, tx, 2)))?;
            Ok::<_, DbError>(())
        })
        .unwrap();
        assert_eq!(stored(db), [1, 2]);
        let failed = db.write_scope(|db| {
            db.write(&real, |tx| Ok::<_, DbError>(hold(db, tx, 3)))?;
            Err::<(), _>(DbError::from(rusqlite::Error::InvalidQuery))
        });
        assert!(failed.is_err());
        db.write_scope(|db| db.write(&real, |tx| Ok::<_, DbError>(hold(db, tx, 4))))
            .unwrap();
        assert_eq!(stored(db), [1, 2, 4]);
    }
}
