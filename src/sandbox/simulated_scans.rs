//! Simulated scans: with `sandbox.simulate_fleet` on, the QR codes of running promotions are
//! scanned on their own, deterministically, as the sandbox clock passes each whole hour.
//!
//! Rules:
//! - Each whole UTC hour `h` from 09:00 to 21:00 (the end of the hour's scans) in which the
//!   promotion's company's stores are open (at `h - 1`, [`crate::opening_hours`]: people scan the
//!   screens of an open store) gives each code of a
//!   promotion that is running at `h` (switched on, inside its window) 0 to 3 scans, at `h`,
//!   `h - 20 s`, `h - 40 s` (so at most one `qr_code.scanned` event per code and hour); how many, and the user-agent class of each, follow from a hash of the code's id
//!   and `h`, so two sandboxes with the same fixtures and the same clock moves scan alike.
//! - The scans are written in bulk, one write per catch-up, not one timeline step per hour;
//!   they count, list and report like real scans, and `qr_code.scanned` keeps its rate limit.
//! - Simulation starts at the hour the sandbox clock started in (no backfill) and reaches back at most
//!   [`MAX_HOURS`] hours per catch-up, so a jump of a year does bounded work.

use crate::db::DbError;
use crate::db::WriteIntent;
use crate::opening_hours::Hours;
use crate::routes::scan::{count_scan, found_from_row, store_code, FOUND_COLUMNS};
use crate::timeline::{Env, Report, Source};
use std::sync::{Arc, Mutex};

const HOUR: i64 = 3600;
/// The most hours one catch-up simulates (the latest ones).
pub const MAX_HOURS: i64 = 24 * 14;
const CLASSES: [&str; 8] = [
    "ios", "android", "ios", "android", "ios", "android", "desktop", "other",
];

/// The source; registered by `app::App::build`, which keeps a clone (the same mark) for the
/// sandbox's snapshots.
#[derive(Default, Clone)]
pub struct SimulatedScans {
    /// The last whole hour simulated; `None` until the first catch-up.
    done: Arc<Mutex<Option<i64>>>,
}

impl SimulatedScans {
    /// The simulation's mark: the last whole hour simulated (a snapshot saves it).
    pub fn mark(&self) -> Option<i64> {
        *self.done.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Puts a snapshot's mark back.
    pub fn set_mark(&self, mark: Option<i64>) {
        *self.done.lock().unwrap_or_else(|e| e.into_inner()) = mark;
    }
}

/// The key of the simulation's draws: the seed's `simulated_scans` stream key in a seeded sandbox,
/// else 0.
pub(super) fn scans_key(seeded: Option<&crate::random::Seeded>) -> u64 {
    crate::random::stream_key(seeded, "simulated_scans")
}

/// FNV-1a of the code id and the hour (started from the seed's `simulated_scans` stream key in a
/// seeded sandbox): the simulation's only randomness, which no other draw moves.
fn draw(key: u64, id: &str, hour: i64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ key;
    for b in id.bytes().chain(hour.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// How many scans a code gets in the hour ending at `hour`, and of which classes.
pub(super) fn scans_in(key: u64, id: &str, hour: i64) -> Vec<&'static str> {
    let of_day = hour.rem_euclid(86_400) / HOUR;
    if !(9..=21).contains(&of_day) {
        return Vec::new();
    }
    let v = draw(key, id, hour);
    (0..(v % 4) as usize)
        .map(|i| CLASSES[((v >> (8 + 3 * i)) & 7) as usize])
        .collect()
}

impl Source for SimulatedScans {
    fn name(&self) -> &'static str {
        "simulated_scans"
    }

    fn next_due(&self, _env: &Env<'_>, _until: i64) -> Result<Option<i64>, DbError> {
        Ok(None)
    }

    fn run_due(&self, _env: &Env<'_>, _at: i64, _report: &mut Report) -> Result<(), DbError> {
        Ok(())
    }

    fn catch_up(&self, env: &Env<'_>, at: i64, report: &mut Report) -> Result<(), DbError> {
        if !env.settings.sandbox_simulate_fleet {
            return Ok(());
        }
        // A poisoned lock only means an earlier catch-up panicked; the hour it holds is still valid.
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        let last = at.div_euclid(HOUR) * HOUR;
        // Before the first catch-up: the hour the clock started in (the fixtures' scans end there).
        let start = env.db.clock().started_at();
        let done_hour = done.unwrap_or(start.div_euclid(HOUR) * HOUR);
        if last <= done_hour {
            *done = Some(done_hour);
            return Ok(());
        }
        let from = done_hour.max(last - MAX_HOURS * HOUR);
        let scanned = env.db.write(&WriteIntent::sandbox(), |tx| {
            let key = scans_key(tx.seeded());
            // The codes of every promotion running at some hour of the span, read once: nothing
            // else writes codes or promotions in this write, and each code's count and event
            // marks are kept up to date in its `Found` as its scans are counted.
            let mut codes = tx
                .prepare_cached(&format!(
                    "SELECT {FOUND_COLUMNS}, p.starts_at, p.ends_at, c.opening_hours, c.timezone
                     FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id
                     JOIN companies c ON c.id = p.company_id
                     WHERE p.active = 1 AND p.starts_at <= ?2 AND p.ends_at > ?1 ORDER BY q.id"
                ))?
                .query_map([from + HOUR, last], |r| {
                    let hours = Hours::read(&r.get::<_, String>(10)?, &r.get::<_, String>(11)?);
                    Ok((
                        found_from_row(r)?,
                        r.get::<_, i64>(8)?,
                        r.get::<_, i64>(9)?,
                        hours,
                    ))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            let mut scanned = 0u64;
            let mut hour = from + HOUR;
            while hour <= last {
                let running = codes.iter_mut().filter(|(_, starts, ends, open)| {
                    *starts <= hour && *ends > hour && open.is_open(hour - 1)
                });
                for (code, _, _, _) in running {
                    let classes = scans_in(key, &code.id, hour);
                    for (i, class) in classes.iter().enumerate().rev() {
                        count_scan(
                            tx,
                            code,
                            class,
                            hour - 20 * i as i64,
                            env.settings.scan_detail_per_code,
                        )?;
                        scanned += 1;
                    }
                    // The code's row once per hour: its last scan is the one at `hour`.
                    if !classes.is_empty() {
                        store_code(tx, code, hour)?;
                    }
                }
                hour += HOUR;
            }
            Ok::<_, DbError>(scanned)
        })?;
        // The mark follows the rows: a run that rolls back puts it back too.
        let before = done.replace(last);
        let mark = Arc::clone(&self.done);
        env.db.on_rollback(move || {
            *mark.lock().unwrap_or_else(|e| e.into_inner()) = before;
        });
        report.count("qr_code.simulated_scan", scanned);
        Ok(())
    }
}
