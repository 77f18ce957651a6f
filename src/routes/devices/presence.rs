//! A device's presence as last reported, so `device.offline` and `device.online` fire once per
//! transition ([`crate::timeline::Source`] for the first, the heartbeat write for the second).
//!
//! The API derives `status` from the clock on every read (`online` while the last heartbeat is at
//! most `devices.offline_after_secs` old). The stored `presence` is what was announced:
//! - `online` -> `offline` the second the last heartbeat becomes older than the threshold:
//!   `device.offline`, recorded by the timeline at that instant.
//! - `offline` -> `online` when a heartbeat arrives (from a player or the simulated fleet):
//!   `device.online`, recorded by the heartbeat write itself ([`heartbeat_arrived`]).
//! - NULL: not judged yet (never seen, or just loaded from the fixtures, which are settled silently
//!   at start-up so a fresh sandbox fires nothing). A first heartbeat makes it `online` without an
//!   event: the device was never reported offline.
//!
//! A heartbeat written in the same timeline step as the check (the fleet's `catch_up` runs before
//! `run_due`) is read from the table, so a refreshed device never goes offline.

//! The events' `data` is the screen as `GET /devices/{id}` shows it ([`device_data`], the
//! catalogue's builder), `status` `offline` or `online`.

use super::payloads::device_data;
use crate::db::DbError;
use crate::db::WriteIntent;
use crate::timeline::{failed, Env, Report, Source};

pub struct DevicePresence;

pub const OFFLINE: &str = "device.offline";
pub const ONLINE: &str = "device.online";

/// While the simulated fleet runs (`?2`), the screens it keeps heartbeating (`device_simulations.up`)
/// are not looked at: their heartbeats are refreshed at every step of the timeline before this check
/// runs, so looking would only make the timeline stop every few minutes for nothing.
const NOT_KEPT_UP: &str = "NOT (?2 AND EXISTS (SELECT 1 FROM device_simulations s
    WHERE s.device_id = devices.id AND s.up = 1))";

impl Source for DevicePresence {
    fn name(&self) -> &'static str {
        "device_presence"
    }

    fn settle(&self, env: &Env<'_>, at: i64) -> Result<(), DbError> {
        let threshold = at - env.settings.device_offline_after_secs;
        env.db.write(&WriteIntent::sandbox(), |tx| {
            tx.execute(
                "UPDATE devices SET presence = CASE WHEN last_heartbeat_at >= ?1 THEN 'online' ELSE 'offline' END
                 WHERE presence IS NULL AND last_heartbeat_at IS NOT NULL",
                [threshold],
            )?;
            Ok(())
        })
    }

    fn next_due(&self, env: &Env<'_>, until: i64) -> Result<Option<i64>, DbError> {
        let after = env.settings.device_offline_after_secs;
        let conn = env.db.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT min(last_heartbeat_at) FROM devices
             WHERE presence = 'online' AND last_heartbeat_at < ?1 AND {NOT_KEPT_UP}"
        ))?;
        // Offline at the first second the heartbeat is older than the threshold.
        let oldest: Option<i64> = stmt.query_row(
            rusqlite::params![until - after, env.settings.sandbox_simulate_fleet],
            |r| r.get(0),
        )?;
        Ok(oldest.map(|t| t + after + 1))
    }

    fn run_due(&self, env: &Env<'_>, at: i64, report: &mut Report) -> Result<(), DbError> {
        let after = env.settings.device_offline_after_secs;
        env.db.write(&WriteIntent::sandbox(), |tx| {
            let due: Vec<(String, String, i64)> = tx
                .prepare_cached(&format!(
                    "SELECT id, company_id, last_heartbeat_at FROM devices
                     WHERE presence = 'online' AND last_heartbeat_at < ?1 AND {NOT_KEPT_UP}
                     ORDER BY last_heartbeat_at, id"
                ))?
                .query_map(
                    rusqlite::params![at - after, env.settings.sandbox_simulate_fleet],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )?
                .collect::<Result<_, _>>()?;
            for (id, company, _) in &due {
                tx.prepare_cached("UPDATE devices SET presence = 'offline' WHERE id = ?1")?
                    .execute([id])?;
                let payload = device_data(tx, id, after, tx.now()).map_err(failed)?;
                crate::events::record(tx, company, OFFLINE, "device", id, &payload)?;
            }
            report.count(OFFLINE, due.len() as u64);
            Ok(())
        })
    }
}

/// Called in the transaction that writes a heartbeat of `device` (of `company`): a device
/// reported offline comes back (`device.online`, returns true); otherwise it is (or stays) online
/// silently. `offline_after` judges the status the event's `data` shows.
pub fn heartbeat_arrived(
    tx: &crate::db::Tx,
    device: &str,
    company: &str,
    offline_after: i64,
) -> Result<bool, DbError> {
    let was: Option<String> = tx
        .prepare_cached("SELECT presence FROM devices WHERE id = ?1")?
        .query_row([device], |r| r.get(0))?;
    if was.as_deref() == Some("online") {
        return Ok(false);
    }
    tx.prepare_cached("UPDATE devices SET presence = 'online' WHERE id = ?1")?
        .execute([device])?;
    if was.as_deref() != Some("offline") {
        return Ok(false);
    }
    let payload = device_data(tx, device, offline_after, tx.now()).map_err(failed)?;
    crate::events::record(tx, company, ONLINE, "device", device, &payload)?;
    Ok(true)
}

/// The same as [`heartbeat_arrived`] for heartbeats written in bulk at `at` (the simulated fleet's
/// `catch_up`): in the writing transaction, every device whose heartbeat is now fresh but that was
/// reported offline records `device.online` (in id order); never-judged ones become `online`
/// silently. Returns how many came back (count them as `device.online` transitions).
pub fn heartbeats_arrived(tx: &crate::db::Tx, at: i64, offline_after: i64) -> Result<u64, DbError> {
    // Never-judged devices too (NULL), so that the UPDATE below, a walk of every device, runs
    // only when it changes a row: most of the fleet's steps bring nobody back.
    let arrived: Vec<(String, String, Option<String>)> = tx
        .prepare_cached(
            "SELECT id, company_id, presence FROM devices
             WHERE (presence IS NULL OR presence = 'offline') AND last_heartbeat_at >= ?1
             ORDER BY id",
        )?
        .query_map([at - offline_after], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?;
    if arrived.is_empty() {
        return Ok(0);
    }
    tx.prepare_cached(
        "UPDATE devices SET presence = 'online'
         WHERE (presence IS NULL OR presence = 'offline') AND last_heartbeat_at >= ?1",
    )?
    .execute([at - offline_after])?;
    // The ones reported offline come back; never-judged ones become online silently.
    let back: Vec<_> = arrived
        .iter()
        .filter(|(_, _, presence)| presence.is_some())
        .collect();
    for (id, company, _) in &back {
        let payload = device_data(tx, id, offline_after, tx.now()).map_err(failed)?;
        crate::events::record(tx, company, ONLINE, "device", id, &payload)?;
    }
    Ok(back.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fleet's bulk write: an offline device refreshed comes back once (an event), a
    /// never-judged one becomes online silently, an online one is left alone.
    #[test]
    fn bulk_heartbeats_bring_offline_devices_back_once() {
        let db = crate::db::Db::demo_in_memory();
        let at = 1_772_442_000;
        let ids: Vec<String> = {
            let conn = db.conn().unwrap();
            let mut s = conn
                .prepare("SELECT id FROM devices ORDER BY id LIMIT 3")
                .unwrap();
            let rows = s.query_map([], |r| r.get(0)).unwrap();
            rows.collect::<Result<_, _>>().unwrap()
        };
        let back = db
            .write(&WriteIntent::sandbox(), |tx| {
                for (id, presence) in ids.iter().zip(["offline", "online"]) {
                    tx.execute(
                        "UPDATE devices SET presence = ?2, last_heartbeat_at = ?3 WHERE id = ?1",
                        rusqlite::params![id, presence, at],
                    )?;
                }
                tx.execute(
                    "UPDATE devices SET presence = NULL, last_heartbeat_at = ?2 WHERE id = ?1",
                    rusqlite::params![ids[2], at],
                )?;
                let first = heartbeats_arrived(tx, at, 300)?;
                let again = heartbeats_arrived(tx, at, 300)?;
                Ok::<_, DbError>((first, again))
            })
            .unwrap();
        assert_eq!(back, (1, 0));
        let conn = db.conn().unwrap();
        let presence: Vec<Option<String>> = ids
            .iter()
            .map(|id| {
                conn.query_row("SELECT presence FROM devices WHERE id = ?1", [id], |r| {
                    r.get(0)
                })
                .unwrap()
            })
            .collect();
        assert_eq!(presence, vec![Some("online".to_string()); 3]);
        let online: Vec<String> = {
            let mut s = conn
                .prepare("SELECT resource_id FROM events WHERE type = 'device.online'")
                .unwrap();
            let rows = s.query_map([], |r| r.get(0)).unwrap();
            rows.collect::<Result<_, _>>().unwrap()
        };
        assert_eq!(online, vec![ids[0].clone()]);
    }
}
