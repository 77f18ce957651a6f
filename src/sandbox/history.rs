//! The demo world's past: when the fixtures of an account are loaded (a new database, a reset), the
//! sandbox writes the 30 days before as the simulations would have made them, so the overview opens
//! on a month of plays and scans instead of nothing, and a day advanced afterwards continues the
//! same curves rather than standing out as one spike.
//!
//! Rules (all derived from the fixture rows and the load instant; nothing is drawn at random, so
//! the same load instant gives the same history):
//! - Plays: every screen of the account the fleet simulates ([`super::simulator`]) played as its
//!   profile says over [`DAYS`] UTC days before the current one and the current day up to the
//!   load: steady and failing screens all along, a flaky screen outside its drop-outs, an offline
//!   screen until its last heartbeat, a never-seen screen not at all; nothing before the screen
//!   was created, and only while its company's stores were open ([`crate::opening_hours`], the
//!   simulator's [`play_spans`]). A screen plays its active assigned ads in the same rotation as
//!   the simulator, each ad only from the later of its creation and its assignment, and an ad of a
//!   promotion only
//!   while the promotion was switched on (from `activated_at` until `deactivated_at`) inside its
//!   window. The current day is written as the simulator's hourly rows, which it then continues;
//!   the days before as their daily roll-up rows alone (what retention leaves of old plays).
//! - Scans: every QR code of the account is scanned as [`super::simulated_scans`] scans it, each
//!   whole hour of those days up to the load in which its company's stores were open, while its
//!   promotion was switched on inside its window and only after the code was made. The fixtures' own scans in those days are replaced (older
//!   ones stay), so a code's scans list by id stays in time order; `scan_count` is recounted.
//! - Written when the timeline settles after the load (`world_history.written_at` stamps it), only
//!   with `sandbox.simulate_fleet` on: a world whose screens do not play has no history of plays.
//! - Nothing is recorded as an event: this is the past, not something happening now.

use super::playables::{Playable, Slot, Slots, Tally};
use super::simulated_scans::scans_in;
use super::simulator::{
    of_screen, order, play_span, play_spans, write_slots, StoreHours, GRID, SLOT,
};
use crate::db::WriteIntent;
use crate::db::{DbError, Tx};
use crate::ids::Kind;
use crate::opening_hours::Hours;
use crate::routes::on_air::Run;
use crate::timeline::{Env, Report, Source};
use rusqlite::Connection;

/// Whole UTC days of history before the day of the load.
pub const DAYS: i64 = 30;
const DAY: i64 = 86_400;

pub struct History;

impl Source for History {
    fn name(&self) -> &'static str {
        "history"
    }

    fn settle(&self, env: &Env<'_>, _at: i64) -> Result<(), DbError> {
        let owed: Vec<(String, i64)> = env
            .db
            .conn()?
            .prepare_cached(
                "SELECT account_id, loaded_at FROM world_history WHERE written_at IS NULL
                 ORDER BY account_id",
            )?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        for (account, loaded_at) in owed {
            env.db.write(&WriteIntent::sandbox(), |tx| {
                if env.settings.sandbox_simulate_fleet {
                    write_plays(tx, &account, loaded_at)?;
                    write_scans(tx, &account, loaded_at, env.settings.scan_detail_per_code)?;
                }
                tx.prepare_cached(
                    "UPDATE world_history SET written_at = ?2 WHERE account_id = ?1",
                )?
                .execute(rusqlite::params![account, loaded_at])?;
                Ok::<_, DbError>(())
            })?;
        }
        Ok(())
    }

    fn next_due(&self, _env: &Env<'_>, _until: i64) -> Result<Option<i64>, DbError> {
        Ok(None)
    }

    fn run_due(&self, _env: &Env<'_>, _at: i64, _report: &mut Report) -> Result<(), DbError> {
        Ok(())
    }
}

/// The first instant of history for a load at `loaded_at`: [`DAYS`] UTC days before its day.
fn history_start(loaded_at: i64) -> i64 {
    loaded_at.div_euclid(DAY) * DAY - DAYS * DAY
}

/// The span in which a promotion ran: its window, cut to when it was switched on (`None`: it
/// never ran).
fn ran(
    window: (i64, i64),
    active: bool,
    activated: Option<i64>,
    deactivated: Option<i64>,
) -> Option<(i64, i64)> {
    let (on, off) = match (activated, deactivated) {
        (Some(a), Some(d)) if d > a => (a, d),
        (Some(a), _) if active => (a, i64::MAX),
        (Some(_), _) => return None,
        (None, _) if active => (i64::MIN, i64::MAX),
        (None, _) => return None,
    };
    let (s, e) = (window.0.max(on), window.1.min(off));
    (s < e).then_some((s, e))
}

/// A day's sums: (plays, seconds, hourly rows they stand for).
type Total = (i64, i64, i64);

fn write_plays(tx: &Tx, account: &str, loaded_at: i64) -> Result<(), DbError> {
    let key = super::simulator::fleet_key(tx.seeded());
    let start = history_start(loaded_at);
    // The fleet's heartbeat grid starts at the load's minute: history ends where it begins.
    let end = loaded_at.div_euclid(GRID) * GRID;
    let mut hours = StoreHours::default();
    let mut screens: Vec<(String, String, i64, Option<i64>, Hours)> = Vec::new();
    let mut stmt = tx.prepare_cached(
        "SELECT s.device_id, s.profile, d.created_at, d.last_heartbeat_at, c.id,
                c.opening_hours, c.timezone
         FROM device_simulations s JOIN devices d ON d.id = s.device_id
         JOIN companies c ON c.id = d.company_id
         WHERE c.account_id = ?1 AND s.profile <> 'never_seen' ORDER BY s.device_id",
    )?;
    let mut rows = stmt.query([account])?;
    while let Some(r) = rows.next()? {
        let company: String = r.get(4)?;
        let open = hours.of(&company, &r.get::<_, String>(5)?, &r.get::<_, String>(6)?);
        screens.push((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, *open));
    }
    drop(rows);
    drop(stmt);
    let playables = playables(tx, account)?;
    let today = end.div_euclid(DAY) * DAY;
    // The current day as the simulator's hourly rows; the days before as their roll-up rows
    // alone, as retention keeps old plays, per (playable, day).
    let mut recent = Slots::new();
    let mut totals: Vec<((usize, i64), Total)> = Vec::new();
    let mut grid = Grid::new(start, end);
    for (device, profile, created, last_seen, open) in &screens {
        let range = of_screen(&playables, device);
        if range.is_empty() {
            continue;
        }
        let ads = &playables[range.clone()];
        let from = start.max(*created);
        let (profile, until) = match profile.as_str() {
            // An offline screen played (steadily) until it went silent.
            "offline" => ("steady", last_seen.unwrap_or(from).min(end)),
            p => (p, end),
        };
        grid.clear(range.clone());
        for (a, b) in play_spans(key, device, profile, open, from, until) {
            play_span(&mut grid, ads, range.start, a, b);
        }
        for ((i, hour), slot) in grid.slots() {
            if hour >= today {
                recent.insert((i, hour), slot);
                continue;
            }
            let day = hour.div_euclid(DAY);
            match totals.last_mut() {
                Some(((j, d), t)) if *j == i && *d == day => {
                    t.0 += slot.plays;
                    t.1 += slot.seconds;
                    t.2 += 1;
                }
                _ => totals.push(((i, day), (slot.plays, slot.seconds, 1))),
            }
        }
    }
    write_slots(tx, &playables, &recent, i64::MIN, loaded_at)?;
    // Written in the table's key order: (company, day, device, ad), the playables being in
    // (device, ad) order.
    totals.sort_by(|((i, d), _), ((j, e), _)| {
        (playables[*i].company.as_str(), d, i).cmp(&(playables[*j].company.as_str(), e, j))
    });
    // The days' roll-up rows (the hourly rows of today added theirs above).
    let days: Vec<_> = totals
        .iter()
        .map(|&((i, day), (plays, seconds, rows))| {
            (
                (playables[i].company.as_str(), day, i),
                super::plays::Day {
                    plays,
                    seconds,
                    rows,
                },
            )
        })
        .collect();
    super::plays::add_to_days(tx, &days, |&i| &playables[i])?;
    Ok(())
}

/// One screen's slots over the history, an hour to a cell: what [`play_span`] adds to 30 days at
/// a time, without searching a map for each of the ~700 hours of each ad.
struct Grid {
    /// The first hour of the history, and how many hours it holds.
    start: i64,
    hours: usize,
    /// The screen's playables (a range of the account's list), and a cell per (playable, hour).
    playables: std::ops::Range<usize>,
    cells: Vec<Option<Slot>>,
}

impl Grid {
    fn new(start: i64, end: i64) -> Grid {
        Grid {
            start,
            hours: usize::try_from((end - start).div_euclid(SLOT) + 1).unwrap_or(0),
            playables: 0..0,
            cells: Vec::new(),
        }
    }

    /// Empties the grid for a screen's `playables`.
    fn clear(&mut self, playables: std::ops::Range<usize>) {
        self.cells.clear();
        self.cells.resize(playables.len() * self.hours, None);
        self.playables = playables;
    }

    /// The slots that played, in (playable, hour) order.
    fn slots(&self) -> impl Iterator<Item = ((usize, i64), Slot)> + '_ {
        self.cells.iter().enumerate().filter_map(|(n, cell)| {
            let slot = (*cell)?;
            let (i, h) = (n / self.hours, n % self.hours);
            Some((
                (self.playables.start + i, self.start + h as i64 * SLOT),
                slot,
            ))
        })
    }
}

impl Tally for Grid {
    fn add(&mut self, i: usize, hour: i64, plays: i64, seconds: i64, started_at: i64) {
        let h = usize::try_from((hour - self.start).div_euclid(SLOT)).ok();
        let cell = h
            .filter(|h| *h < self.hours && self.playables.contains(&i))
            .and_then(|h| {
                self.cells
                    .get_mut((i - self.playables.start) * self.hours + h)
            });
        // Every span lies inside the history and every playable is the screen's: no other cell.
        debug_assert!(
            cell.is_some(),
            "a slot outside the grid: playable {i}, hour {hour}"
        );
        if let Some(cell) = cell {
            let slot = cell.get_or_insert(Slot {
                plays: 0,
                seconds: 0,
                started_at,
            });
            slot.plays += plays;
            slot.seconds += seconds;
        }
    }
}

/// The ads the account's simulated screens play (`screen_ads`, `routes::on_air`), as they may have
/// played in the past: from the later of the ad's creation and its assignment, an ad of a
/// promotion only while the promotion ran. The past's one difference from now: whether a
/// promotion was switched on comes from its `activated_at` and `deactivated_at` ([`ran`]), not
/// from its switch now.
fn playables(tx: &Connection, account: &str) -> Result<Vec<Playable>, DbError> {
    type Switch = Option<(bool, Option<i64>, Option<i64>)>;
    let rows: Vec<(Playable, Switch, Run)> = tx
        .prepare_cached(
            "SELECT x.device_id, d.company_id, x.ad_id, x.duration_seconds, x.playable_from,
                    x.promotion_id IS NOT NULL, p.active, p.activated_at, p.deactivated_at,
                    x.runs_from, x.runs_until
             FROM device_simulations s
             JOIN devices d ON d.id = s.device_id
             JOIN companies c ON c.id = d.company_id
             JOIN screen_ads x ON x.device_id = s.device_id
             LEFT JOIN promotions p ON p.id = x.promotion_id
             WHERE c.account_id = ?1 AND x.status_on
             ORDER BY x.device_id, x.ad_id",
        )?
        .query_map([account], |r| {
            let promoted: bool = r.get(5)?;
            let switch = if promoted {
                Some((r.get::<_, i64>(6)? == 1, r.get(7)?, r.get(8)?))
            } else {
                None
            };
            Ok((
                Playable {
                    device: r.get(0)?,
                    company: r.get(1)?,
                    ad: r.get(2)?,
                    duration: r.get::<_, i64>(3)?.max(1),
                    from: r.get(4)?,
                    window: None,
                },
                switch,
                // Switched on as far as the ad goes (`status_on`); the promotion's part is `switch`.
                Run {
                    switched_on: true,
                    from: r.get(9)?,
                    until: r.get(10)?,
                },
            ))
        })?
        .collect::<Result<_, _>>()?;
    let mut playables: Vec<Playable> = rows
        .into_iter()
        .filter_map(|(mut p, switch, run)| {
            p.window = match switch {
                None => run.window(),
                Some((active, on, off)) => {
                    let span = run.window().unwrap_or((i64::MIN, i64::MAX));
                    Some(ran(span, active, on, off)?)
                }
            };
            Some(p)
        })
        .collect();
    order(&mut playables);
    Ok(playables)
}

fn write_scans(tx: &Tx, account: &str, loaded_at: i64, detail_cap: u64) -> Result<(), DbError> {
    const HOUR: i64 = 3_600;
    let key = super::simulated_scans::scans_key(tx.seeded());
    let start = history_start(loaded_at);
    // (code, created_at, window, active, activated_at, deactivated_at, its company's hours)
    type Code = (
        String,
        i64,
        (i64, i64),
        bool,
        Option<i64>,
        Option<i64>,
        Hours,
    );
    let codes: Vec<Code> = tx
        .prepare_cached(
            "SELECT q.id, q.created_at, p.starts_at, p.ends_at, p.active, p.activated_at,
                    p.deactivated_at, c.opening_hours, c.timezone
             FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id
             JOIN companies c ON c.id = p.company_id
             WHERE c.account_id = ?1 ORDER BY q.id",
        )?
        .query_map([account], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                (r.get(2)?, r.get(3)?),
                r.get::<_, i64>(4)? == 1,
                r.get(5)?,
                r.get(6)?,
                Hours::read(&r.get::<_, String>(7)?, &r.get::<_, String>(8)?),
            ))
        })?
        .collect::<Result<_, _>>()?;
    // Every scan of every code, in time order, so that the ids drawn below follow it: (instant,
    // code, class), a code being its index in `codes` (in id order, as the query gives them).
    debug_assert!(codes.windows(2).all(|w| w[0].0 < w[1].0));
    let mut scans: Vec<(i64, usize, &'static str)> = Vec::new();
    let last = loaded_at.div_euclid(HOUR) * HOUR;
    for (c, (code, created, window, active, on, off, open)) in codes.iter().enumerate() {
        let Some((s, e)) = ran(*window, *active, *on, *off) else {
            continue;
        };
        let mut hour = (start.div_euclid(HOUR) + 1) * HOUR;
        while hour <= last {
            // As the live simulation: only an hour the store was open in.
            if s <= hour && hour < e && open.is_open(hour - 1) {
                for (i, class) in scans_in(key, code, hour).into_iter().enumerate() {
                    let at = hour - 20 * i as i64;
                    if at >= *created && at <= loaded_at {
                        scans.push((at, c, class));
                    }
                }
            }
            hour += HOUR;
        }
    }
    scans.sort_unstable();
    // The fixtures' own scans of those days give way to these.
    tx.prepare_cached(
        "DELETE FROM qr_scans WHERE scanned_at >= ?2 AND qr_code_id IN
           (SELECT q.id FROM qr_codes q JOIN promotions p ON p.id = q.promotion_id
            JOIN companies c ON c.id = p.company_id WHERE c.account_id = ?1)",
    )?
    .execute(rusqlite::params![account, start])?;
    let mut detailed: Vec<u64> = Vec::with_capacity(codes.len());
    for (code, ..) in &codes {
        let n: i64 = tx
            .prepare_cached("SELECT count(*) FROM qr_scans WHERE qr_code_id = ?1")?
            .query_row([code], |r| r.get(0))?;
        detailed.push(n.max(0) as u64);
    }
    // A code's first `detail_cap` scans are rows (an id each, drawn in time order); the rest are
    // counted per minute. The two tables are independent, so each is written in one pass.
    let mut rows: Vec<(String, usize, i64, &'static str)> = Vec::new();
    let mut counted: Vec<(usize, i64, &'static str)> = Vec::new();
    for &(at, c, class) in &scans {
        if detailed[c] < detail_cap {
            rows.push((tx.new_id(Kind::QrScan), c, at, class));
            detailed[c] += 1;
        } else {
            counted.push((c, at.div_euclid(60), class));
        }
    }
    let insert = crate::db::bulk::Insert {
        head: "INSERT INTO qr_scans (id, qr_code_id, scanned_at, agent_class)",
        row: "(?, ?, ?, ?)",
        params: 4,
        tail: "",
    };
    insert.run(tx, &rows, |stmt, i, (id, c, at, class)| {
        stmt.raw_bind_parameter(i, id)?;
        stmt.raw_bind_parameter(i + 1, &codes[*c].0)?;
        stmt.raw_bind_parameter(i + 2, at)?;
        stmt.raw_bind_parameter(i + 3, class)
    })?;
    // Several scans of one minute in one statement: SQLite inserts a multi-row VALUES one row
    // after the other, so the second finds the first and adds to it.
    let count = crate::db::bulk::Insert {
        head: "INSERT INTO qr_scan_counts (qr_code_id, minute, agent_class, scans)",
        row: "(?, ?, ?, 1)",
        params: 3,
        tail: "ON CONFLICT (qr_code_id, minute, agent_class) DO UPDATE SET scans = scans + 1",
    };
    count.run(tx, &counted, |stmt, i, (c, minute, class)| {
        stmt.raw_bind_parameter(i, &codes[*c].0)?;
        stmt.raw_bind_parameter(i + 1, minute)?;
        stmt.raw_bind_parameter(i + 2, class)
    })?;
    // Each code's count and last scan from what it now holds; its next event counts from here.
    for (code, ..) in &codes {
        let (rows, rows_last): (i64, Option<i64>) = tx
            .prepare_cached("SELECT count(*), max(scanned_at) FROM qr_scans WHERE qr_code_id = ?1")?
            .query_row([code], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let (counts, counts_last): (i64, Option<i64>) = tx
            .prepare_cached(
                "SELECT coalesce(sum(scans), 0), max(minute) * 60 FROM qr_scan_counts
                 WHERE qr_code_id = ?1",
            )?
            .query_row([code], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let last = rows_last.max(counts_last);
        tx.prepare_cached(
            "UPDATE qr_codes SET scan_count = ?2, last_scanned_at = ?3, last_event_scan_count = ?2
             WHERE id = ?1",
        )?
        .execute(rusqlite::params![code, rows + counts, last])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_promotion_ran_while_switched_on_inside_its_window() {
        assert_eq!(ran((10, 100), true, Some(20), None), Some((20, 100)));
        assert_eq!(ran((10, 100), false, Some(20), Some(50)), Some((20, 50)));
        assert_eq!(ran((10, 100), false, None, None), None);
        assert_eq!(ran((10, 100), true, None, None), Some((10, 100)));
        // Switched on after it ended: it never ran.
        assert_eq!(ran((10, 100), true, Some(200), None), None);
        // Deactivated before a later activation: on since the activation.
        assert_eq!(ran((10, 100), true, Some(60), Some(30)), Some((60, 100)));
        assert_eq!(history_start(DAY * 40 + 5), DAY * 10);
    }
}
