//! The simulated fleet's heartbeats: written at each step for the screens whose heartbeat someone
//! reads in the run, held until the transaction commits for the screens nobody reads it of.
//!
//! An advance is one write transaction of many steps (`db::write_scope`); at each step the fleet
//! moves every playing screen's `last_heartbeat_at` to the step's grid beat. A day of the demo
//! fleet is 17 steps of ~20 screens, and each screen's row update cost ~18 k instructions (the
//! row, the offline index, the cache-generation trigger): a tenth of the advance.
//!
//! Within the run's transaction, a screen's heartbeat is read only:
//! - by the offline check ([`crate::routes::devices::DevicePresence`]), which skips the screens
//!   the fleet keeps up (`device_simulations.up = 1`);
//! - by the online check ([`crate::routes::devices::heartbeats_arrived`]), which looks only at
//!   screens not online;
//! - by the `data` of `device.online` and `device.offline`, which are about those two kinds of
//!   screen.
//!
//! So a screen that is online and kept up has its beats held ([`hold`]): only its latest one is
//! kept, and it is written once, just before the transaction commits (at the run's end or at a
//! commit point: the held beats are the transaction's state, [`crate::db::Scoped::transaction_state`],
//! dropped with it if it rolls back). A fleet transition that stops keeping a screen
//! up (a flaky screen dropping out), the only write that does, writes that screen's held beat first
//! ([`release`]). What is committed does not
//! change: the same `last_heartbeat_at`, `updated_at` and `current_ad_id` as a write at every step.
//! A dry run, or a write outside a run, writes at once; a dry run's write of held beats (rolled back
//! with it) leaves them held.

use crate::db::{DbError, Kept, Scoped, TransactionState, Tx};
use rusqlite::Connection;
use std::collections::BTreeMap;

/// One heartbeat: the instant, and the ad to show as playing (`Some`: the screen was up at the
/// step's grid beat and reports the ad it plays then, `None` among them; `None`: it keeps the ad it
/// showed).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Beat {
    pub at: i64,
    pub ad: Option<Option<String>>,
}

impl Beat {
    /// `later` on top of this one: its instant, and its ad if it reports one.
    fn then(&mut self, later: Beat) {
        self.at = later.at;
        if later.ad.is_some() {
            self.ad = later.ad;
        }
    }
}

/// The beats held for the write scope's open transaction, by screen: its
/// [`TransactionState`], written just before it commits.
#[derive(Default, Clone)]
struct HeldBeats(BTreeMap<String, Beat>);

impl TransactionState for HeldBeats {
    fn before_commit(self, conn: &Connection) -> Result<(), DbError> {
        if self.0.is_empty() {
            return Ok(());
        }
        write(conn, &self.0.into_iter().collect::<Vec<_>>())
    }
}

/// Holds `beats` (of screens online and kept up) until the write scope's open transaction commits;
/// outside a scope, or in a dry run, writes them at once.
pub(super) fn hold(db: Scoped<'_>, tx: &Tx, mut beats: Vec<(String, Beat)>) -> Result<(), DbError> {
    if beats.is_empty() {
        return Ok(());
    }
    db.transaction_state(tx, |held: &mut HeldBeats, kept| {
        if kept == Kept::UntilCommit {
            for (device, beat) in std::mem::take(&mut beats) {
                match held.0.get_mut(&device) {
                    Some(kept) => kept.then(beat),
                    None => {
                        held.0.insert(device, beat);
                    }
                }
            }
        }
    });
    if beats.is_empty() {
        return Ok(());
    }
    write(tx, &beats)
}

/// Whether a beat of `device` is held for the write scope's open transaction.
pub(super) fn is_held(db: Scoped<'_>, tx: &Tx, device: &str) -> bool {
    db.transaction_state(tx, |held: &mut HeldBeats, _| held.0.contains_key(device))
        .unwrap_or(false)
}

/// Writes the beat held for `device`, if any, now: the screen is no longer kept up. (A dry run
/// writes a copy and keeps what is held.)
pub(super) fn release(db: Scoped<'_>, tx: &Tx, device: &str) -> Result<(), DbError> {
    match db.transaction_state(tx, |held: &mut HeldBeats, _| held.0.remove(device)) {
        Some(Some(beat)) => write(tx, &[(device.to_string(), beat)]),
        _ => Ok(()),
    }
}

/// Writes every beat held for the write scope's open transaction now (its commit then finds none
/// to write). (A dry run writes a copy and keeps what is held.)
pub(super) fn flush(db: Scoped<'_>, tx: &Tx) -> Result<(), DbError> {
    let held = db
        .transaction_state(tx, |held: &mut HeldBeats, _| std::mem::take(&mut held.0))
        .unwrap_or_default();
    if held.is_empty() {
        return Ok(());
    }
    write(tx, &held.into_iter().collect::<Vec<_>>())
}

/// Screens per heartbeat statement ([`write`]).
const BEATS: usize = 32;
/// Fewer screens than this are written one statement each: a statement of [`BEATS`] rows costs
/// ~135 k instructions whatever it holds plus ~12 k per screen, a single-row one ~22 k.
const FEWEST_IN_BULK: usize = 13;

/// Writes heartbeats: each screen's `last_heartbeat_at` moves forward to its beat (never back),
/// `updated_at` with it, and `current_ad_id` to the ad its beat reports, if it reports one.
/// [`BEATS`] screens to a statement rather than one each: every statement on `devices` (a trigger
/// bumps the cache generation) journals the pages it first changes, so one per screen copied the
/// same few pages for every screen. A short chunk's unused rows are NULL, matching no screen, so one
/// cached statement serves every fleet size; a few screens go one statement each.
pub(super) fn write(tx: &Connection, beats: &[(String, Beat)]) -> Result<(), DbError> {
    if beats.len() < FEWEST_IN_BULK {
        let mut one = tx.prepare_cached(
            "UPDATE devices SET last_heartbeat_at = ?2, updated_at = max(updated_at, ?2),
                 current_ad_id = CASE WHEN ?4 THEN ?3 ELSE current_ad_id END
             WHERE id = ?1 AND coalesce(last_heartbeat_at, ?2 - 1) < ?2",
        )?;
        for (id, beat) in beats {
            one.execute(rusqlite::params![
                id,
                beat.at,
                beat.ad.as_ref().and_then(|ad| ad.as_deref()),
                beat.ad.is_some()
            ])?;
        }
        return Ok(());
    }
    let rows = vec!["(?, ?, ?, ?)"; BEATS].join(", ");
    let mut stmt = tx.prepare_cached(&format!(
        "WITH b(id, at, ad, shows) AS (VALUES {rows})
         UPDATE devices SET last_heartbeat_at = b.at, updated_at = max(devices.updated_at, b.at),
             current_ad_id = CASE WHEN b.shows THEN b.ad ELSE devices.current_ad_id END
         FROM b WHERE devices.id = b.id AND coalesce(devices.last_heartbeat_at, b.at - 1) < b.at"
    ))?;
    for chunk in beats.chunks(BEATS) {
        for i in 0..BEATS {
            let (id, at, ad, shows) = match chunk.get(i) {
                Some((id, beat)) => (
                    Some(id.as_str()),
                    Some(beat.at),
                    beat.ad.as_ref().and_then(|ad| ad.as_deref()),
                    beat.ad.is_some(),
                ),
                None => (None, None, None, false),
            };
            stmt.raw_bind_parameter(4 * i + 1, id)?;
            stmt.raw_bind_parameter(4 * i + 2, at)?;
            stmt.raw_bind_parameter(4 * i + 3, ad)?;
            stmt.raw_bind_parameter(4 * i + 4, shows)?;
        }
        stmt.raw_execute()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::WriteIntent;

    fn stored(db: Scoped<'_>, device: &str) -> Option<i64> {
        db.conn()
            .unwrap()
            .query_row(
                "SELECT last_heartbeat_at FROM devices WHERE id = ?1",
                [device],
                |r| r.get(0),
            )
            .unwrap()
    }

    /// A held beat is written when the transaction commits, not before; a dry run inside the
    /// transaction that writes the held beats (rolled back with it) leaves them held, so the
    /// commit still writes them.
    #[test]
    fn a_held_beat_is_written_at_commit_whatever_a_dry_run_wrote_meanwhile() {
        let db = crate::db::Db::demo_in_memory();
        let db = db.unscoped();
        let device: String = db
            .conn()
            .unwrap()
            .query_row("SELECT id FROM devices ORDER BY id LIMIT 1", [], |r| {
                r.get(0)
            })
            .unwrap();
        let at = stored(db, &device).unwrap_or(0) + 3_600;
        db.write_scope(|db| {
            let kept = WriteIntent::sandbox();
            let preview = WriteIntent {
                dry_run: true,
                ..WriteIntent::sandbox()
            };
            db.write(&kept, |tx| {
                hold(db, tx, vec![(device.clone(), Beat { at, ad: None })])
            })?;
            let held =
                |db: Scoped<'_>| db.write(&kept, |tx| Ok::<_, DbError>(is_held(db, tx, &device)));
            assert!(held(db)?);
            assert_ne!(stored(db, &device), Some(at), "written before the commit");
            db.write(&preview, |tx| flush(db, tx))?;
            db.write(&preview, |tx| release(db, tx, &device))?;
            assert!(held(db)?, "a dry run took the held beat");
            assert_ne!(stored(db, &device), Some(at));
            Ok::<_, DbError>(())
        })
        .unwrap();
        assert_eq!(stored(db, &device), Some(at));
    }
}
