//! The simulated fleet's proof-of-play rows, gathered in memory and written once.
//!
//! An advance is one write transaction of many steps (`db::write_scope`), and every step used to
//! write its plays at once: one `UPDATE` per open clock hour's row it added to (about 1,100 in a
//! demo day, each a search of the slot index and a rewrite of the row, 12 k instructions in SQLite
//! alone) plus the new rows of its hours. Held for the transaction instead ([`write`]), each row is
//! written once, just before the transaction commits (the rows are the transaction's state,
//! [`crate::db::Scoped::transaction_state`], which lives and dies with it): the
//! rows a step added to are still in memory at the next step, and only the rows stored before the
//! transaction began are looked up and updated.
//!
//! What is written does not change: the same rows with the same sums, and the new rows inserted in
//! the order the steps first wrote them, with the ids drawn at that moment and each step's clock as
//! `created_at` (so ids, rowids and every column match a step-by-step write). Nothing reads
//! `playbacks` during a timeline run (retention prunes after it commits). A commit in the middle
//! of a run (a slice, [`crate::db::Scoped::slice`], or a commit point,
//! [`crate::db::Scoped::committed`]) writes the held rows first: a reader then sees the plays up to
//! that step, the hour in progress with its plays so far, and the next transaction adds the rest
//! of that hour to its row, so the rows committed at the end are the same wherever slices end.
//! The new rows a call holds count as the slice's work ([`crate::db::Scoped::note_work`]).

use super::playables::{Playable, Slots};
use crate::db::{DbError, Kept, Scoped, TransactionState, Tx};
use crate::ids::PlaybackId;
use rusqlite::{Connection, OptionalExtension};
use std::collections::BTreeMap;
use std::rc::Rc;

/// New rows held at most before they are written anyway, so that a jump of months keeps a bounded
/// amount in memory (a demo day makes about 940).
const MAX_HELD: usize = 8_192;

/// One row to write: a new one (its id and `created_at`, fixed when the fleet first wrote it), or
/// a row stored before the transaction (its rowid) whose `plays` and `duration_seconds` grow by
/// these sums.
#[derive(Clone)]
struct Row {
    new: Result<(PlaybackId, i64), i64>,
    started_at: i64,
    plays: i64,
    seconds: i64,
}

/// Rows of slots of one list of playables, keyed like [`Slots`] (playable, clock hour).
#[derive(Default, Clone)]
pub(super) struct Rows {
    rows: BTreeMap<(usize, i64), Row>,
    /// The new rows, in the order they were first written: their ids and rowids follow it.
    order: Vec<(usize, i64)>,
}

impl Rows {
    /// Adds `slots` (of `playables`, written at `now`): to a row held already, or, for a slot of an
    /// hour that starts before `written_to` (rows were written for the instants before it), to the
    /// row stored for it if any; otherwise a new row. Returns the plays added.
    pub(super) fn add(
        &mut self,
        tx: &Tx,
        playables: &[Playable],
        slots: &Slots,
        written_to: i64,
        now: i64,
    ) -> Result<i64, DbError> {
        let mut plays = 0;
        // Prepared once for the call, not looked up in the statement cache for every slot. The
        // row of an hour written by an earlier transaction is the newest simulator row of its
        // screen and ad (the fleet writes their hours in turn, each row's id drawn when first
        // written): read newest first from an index by screen and ad (schema V47).
        let mut newest_row = tx.prepare_cached(
            "SELECT rowid, started_at FROM playbacks
             WHERE ad_id = ?2 AND device_id = ?1 AND source = 'simulator'
             ORDER BY id DESC LIMIT 1",
        )?;
        for (&key, slot) in slots {
            plays += slot.plays;
            if let Some(row) = self.rows.get_mut(&key) {
                row.plays += slot.plays;
                row.seconds += slot.seconds;
                continue;
            }
            let p = &playables[key.0];
            // An hour starting at `written_to` or later has no row yet (a step that stops on the
            // hour, as most do, looks nothing up).
            let stored = if key.1 < written_to {
                newest_row
                    .query_row(rusqlite::params![p.device, p.ad], |r| {
                        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
                    })
                    .optional()?
                    .filter(|&(_, started_at)| started_at == slot.started_at)
                    .map(|(rowid, _)| rowid)
            } else {
                None
            };
            let new = match stored {
                Some(rowid) => Err(rowid),
                None => {
                    self.order.push(key);
                    Ok((tx.generate::<PlaybackId>(), now))
                }
            };
            self.rows.insert(
                key,
                Row {
                    new,
                    started_at: slot.started_at,
                    plays: slot.plays,
                    seconds: slot.seconds,
                },
            );
        }
        Ok(plays)
    }

    /// Writes the rows: the stored ones' sums added, the new ones inserted in their order, many
    /// rows to a statement.
    pub(super) fn write(&self, tx: &Connection, playables: &[Playable]) -> Result<(), DbError> {
        let mut add = tx.prepare_cached(
            "UPDATE playbacks SET plays = plays + ?2, duration_seconds = duration_seconds + ?3
             WHERE rowid = ?1",
        )?;
        for row in self.rows.values() {
            if let Err(rowid) = row.new {
                add.execute(rusqlite::params![rowid, row.plays, row.seconds])?;
            }
        }
        let new: Vec<(&PlaybackId, i64, &Playable, &Row)> = self
            .order
            .iter()
            .filter_map(|key| {
                let row = self.rows.get(key)?;
                let (id, created) = row.new.as_ref().ok()?;
                Some((id, *created, &playables[key.0], row))
            })
            .collect();
        let insert = crate::db::bulk::Insert {
            // OR FAIL: nothing in the statement can abort, so it keeps no statement journal (the
            // table's keys are checked at commit, schema V38); a row that breaks a rule fails the
            // write, and with it the transaction.
            head: "INSERT OR FAIL INTO playbacks (id, company_id, device_id, ad_id, source,
                                                  started_at, duration_seconds, plays, created_at)",
            row: "(?, ?, ?, ?, 'simulator', ?, ?, ?, ?)",
            params: 8,
            tail: "",
        };
        insert.run(tx, &new, |stmt, i, (id, created, p, row)| {
            stmt.raw_bind_parameter(i, id)?;
            stmt.raw_bind_parameter(i + 1, &p.company)?;
            stmt.raw_bind_parameter(i + 2, &p.device)?;
            stmt.raw_bind_parameter(i + 3, &p.ad)?;
            stmt.raw_bind_parameter(i + 4, row.started_at)?;
            stmt.raw_bind_parameter(i + 5, row.seconds)?;
            stmt.raw_bind_parameter(i + 6, row.plays)?;
            stmt.raw_bind_parameter(i + 7, *created)
        })?;
        self.add_to_days(tx, playables)
    }

    /// Adds the rows' sums to their days' roll-up (`playback_days`, schema V43), in the same
    /// transaction: one upsert per day, screen and ad (a day of a screen's ad is up to 24 hourly
    /// rows), in the table's key order.
    fn add_to_days(&self, tx: &Connection, playables: &[Playable]) -> Result<(), DbError> {
        let mut days: BTreeMap<(&str, i64, usize), Day> = BTreeMap::new();
        for (&(i, _), row) in &self.rows {
            let day = days
                .entry((
                    playables[i].company.as_str(),
                    row.started_at.div_euclid(DAY),
                    i,
                ))
                .or_default();
            day.plays += row.plays;
            day.seconds += row.seconds;
            day.rows += i64::from(row.new.is_ok());
        }
        let days: Vec<_> = days.into_iter().collect();
        add_to_days(tx, &days, |&i| &playables[i])
    }
}

const DAY: i64 = 86_400;

/// What a write adds to one day of a screen's ad: plays, seconds and new play rows.
#[derive(Default, Clone, Copy)]
pub(super) struct Day {
    pub(super) plays: i64,
    pub(super) seconds: i64,
    pub(super) rows: i64,
}

/// Upserts `days` (keyed by a company, a UTC day and whatever `playable` maps to its screen and
/// ad) into the daily roll-up the proof-of-play report reads (`playback_days`, schema V43), many
/// rows to a statement.
pub(super) fn add_to_days<'p, K>(
    tx: &Connection,
    days: &[((&str, i64, K), Day)],
    playable: impl Fn(&K) -> &'p Playable,
) -> Result<(), DbError> {
    let insert = crate::db::bulk::Insert {
        // OR FAIL, as the plays' insert: the keys are checked at commit, so nothing here aborts
        // and no statement journal is kept.
        head: "INSERT OR FAIL INTO playback_days
                   (company_id, day, device_id, ad_id, plays, seconds, rows)",
        row: "(?, ?, ?, ?, ?, ?, ?)",
        params: 7,
        tail: "ON CONFLICT (company_id, day, device_id, ad_id) DO UPDATE SET
             plays = plays + excluded.plays, seconds = seconds + excluded.seconds,
             rows = rows + excluded.rows",
    };
    insert.run(tx, days, |stmt, at, ((company, day, key), sums)| {
        let p = playable(key);
        stmt.raw_bind_parameter(at, *company)?;
        stmt.raw_bind_parameter(at + 1, day)?;
        stmt.raw_bind_parameter(at + 2, &p.device)?;
        stmt.raw_bind_parameter(at + 3, &p.ad)?;
        stmt.raw_bind_parameter(at + 4, sums.plays)?;
        stmt.raw_bind_parameter(at + 5, sums.seconds)?;
        stmt.raw_bind_parameter(at + 6, sums.rows)
    })
}

/// The rows held for the write scope's open transaction and the playables they refer to: its
/// [`TransactionState`], written just before it commits.
#[derive(Default, Clone)]
struct HeldPlays {
    playables: Option<Rc<Vec<Playable>>>,
    rows: Rows,
}

impl TransactionState for HeldPlays {
    fn before_commit(self, conn: &Connection) -> Result<(), DbError> {
        match self.playables {
            Some(playables) => self.rows.write(conn, &playables),
            None => Ok(()),
        }
    }
}

/// Adds `slots` (of `playables`, written at `now`; rows were written for the instants before
/// `written_to`) to the rows of the write scope's open transaction, written when it commits;
/// outside a scope, at once. Returns the plays added.
pub(super) fn write(
    db: Scoped<'_>,
    tx: &Tx,
    playables: &Rc<Vec<Playable>>,
    slots: &Slots,
    written_to: i64,
    now: i64,
) -> Result<i64, DbError> {
    let held = db.transaction_state(tx, |held: &mut HeldPlays, kept| {
        if held
            .playables
            .as_ref()
            .is_some_and(|p| !Rc::ptr_eq(p, playables))
        {
            // The fleet's screens changed in this transaction: the rows of the old list go in first.
            std::mem::take(held).before_commit(tx)?;
        }
        held.playables.get_or_insert_with(|| Rc::clone(playables));
        let before = held.rows.order.len();
        let plays = held.rows.add(tx, playables, slots, written_to, now)?;
        let new = held.rows.order.len() - before;
        // A dry run writes its copy of the rows at once (and keeps what was held); past
        // `MAX_HELD` new rows, what is held is written now.
        if kept == Kept::ThisCall || held.rows.order.len() >= MAX_HELD {
            std::mem::take(held).before_commit(tx)?;
        }
        Ok::<_, DbError>((plays, new))
    });
    if let Some(held) = held {
        let (plays, new) = held?;
        // The run commits a slice once enough new rows wait (`Scoped::slice`).
        db.note_work(new);
        return Ok(plays);
    }
    let mut rows = Rows::default();
    let plays = rows.add(tx, playables, slots, written_to, now)?;
    rows.write(tx, playables)?;
    Ok(plays)
}
