//! What a write depends on besides its rows, passed with it: [`WriteIntent`] says who writes
//! ([`Origin`]), whether the write is a dry run (an MCP preview: every check runs, nothing is
//! kept) and how much later than its clock it reads the time, and the token balance a confirmed
//! change expects; [`Tx`] is the handle every [`super::Db::write`] closure gets, the transaction's
//! connection together with that intent, the clock and generator of the database it writes (its
//! time, its ids, its seeded draws) and what the write asks of its commit (waking the webhook
//! sender).
//!
//! A request's intent is its context's (`http::Ctx`), built by the pipeline from the request;
//! background writers (the timeline, the webhook worker, retention) write as [`Origin::sandbox`].

use crate::ids::{Kind, TypedId};
use crate::random::Seeded;
use crate::time::Clock;
use rusqlite::Connection;
use std::cell::Cell;
use std::ops::Deref;

/// Who writes: recorded on every event the write records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The key or user id (`key_…`, `usr_…`); never a secret.
    pub actor: Option<String>,
    /// `rest`, `mcp` or `sandbox`.
    pub via: &'static str,
}

impl Origin {
    /// The sandbox itself (the clock's transitions, the simulated fleet, the webhook worker).
    pub fn sandbox() -> Origin {
        Origin {
            actor: None,
            via: "sandbox",
        }
    }
}

/// The balance a confirmed MCP change expects of one company: the first posting for that company
/// in a write with this intent that finds another balance under the write lock writes nothing and
/// fails (a confirmed purchase or activation posts once).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpectedBalance {
    pub company_id: String,
    pub balance: i64,
}

/// What a write is for, beyond its rows (see the module).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteIntent {
    pub origin: Origin,
    /// Rolled back instead of committed; a write that also acts outside the database (sends a
    /// webhook) does not act, and says what it would do instead.
    pub dry_run: bool,
    /// A dry run made later: the time the write reads is its clock's plus this (ms). The second
    /// run of an MCP preview reads the time a minute on, so what a write stamps with its own time
    /// differs between the runs; 0 for every other write.
    pub later_ms: i64,
    pub expected_balance: Option<ExpectedBalance>,
}

impl WriteIntent {
    /// A write of the sandbox itself, kept, expecting nothing.
    pub fn sandbox() -> WriteIntent {
        WriteIntent::by(Origin::sandbox())
    }

    /// A kept write by `origin`, expecting nothing.
    pub fn by(origin: Origin) -> WriteIntent {
        WriteIntent {
            origin,
            dry_run: false,
            later_ms: 0,
            expected_balance: None,
        }
    }
}

/// The handle of one write transaction: derefs to its connection, so helpers that only run
/// statements take `&Connection`; those that record events or post to the ledger take `&Tx`.
pub struct Tx<'a> {
    conn: &'a Connection,
    intent: &'a WriteIntent,
    /// The clock of the database written: the write's time and its ids' stamps.
    clock: &'a Clock,
    /// The seeded generator of the database written, in a seeded sandbox.
    seeded: Option<&'a Seeded>,
    /// A statement of this write asked that the sender be woken once it commits.
    wake: Cell<bool>,
    /// The posting that met [`WriteIntent::expected_balance`] used it up.
    expectation_used: Cell<bool>,
}

impl Deref for Tx<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl<'a> Tx<'a> {
    pub(super) fn new(
        conn: &'a Connection,
        intent: &'a WriteIntent,
        clock: &'a Clock,
        seeded: Option<&'a Seeded>,
    ) -> Tx<'a> {
        Tx {
            conn,
            intent,
            clock,
            seeded,
            wake: Cell::new(false),
            expectation_used: Cell::new(false),
        }
    }

    pub fn origin(&self) -> &Origin {
        &self.intent.origin
    }

    pub fn dry_run(&self) -> bool {
        self.intent.dry_run
    }

    /// The write's time in Unix milliseconds: its clock's, read later by a dry run made later.
    pub fn now_millis(&self) -> i64 {
        self.clock.now_millis() + self.intent.later_ms
    }

    /// The write's time in Unix seconds ([`Tx::now_millis`]).
    pub fn now(&self) -> i64 {
        self.now_millis().div_euclid(1000)
    }

    /// The clock the write runs on (its app's).
    pub fn clock(&self) -> &'a Clock {
        self.clock
    }

    /// The seeded generator every purposed draw of the write comes from, in a seeded sandbox.
    pub fn seeded(&self) -> Option<&'a Seeded> {
        self.seeded
    }

    /// A new id of `kind`, drawn on the write's clock and generator.
    pub fn new_id(&self, kind: Kind) -> String {
        crate::ids::new_id(self.clock, self.seeded, kind)
    }

    /// A new typed id, drawn as [`Tx::new_id`].
    pub fn generate<T: TypedId>(&self) -> T {
        T::generate(self.clock, self.seeded)
    }

    /// Asks that the database's commit hook ([`super::Db::set_after_commit`]) run once this
    /// transaction has committed: the webhook outbox wakes its sender only when the new delivery
    /// is visible, and never for a write that rolled back.
    pub fn wake_after_commit(&self) {
        self.wake.set(true);
    }

    pub(super) fn wants_wake(&self) -> bool {
        self.wake.get()
    }

    /// The balance the intent expects of `company_id`, the first time a posting asks for it.
    pub fn take_expected_balance(&self, company_id: &str) -> Option<i64> {
        let expected = self.intent.expected_balance.as_ref()?;
        if expected.company_id != company_id || self.expectation_used.replace(true) {
            return None;
        }
        Some(expected.balance)
    }
}
