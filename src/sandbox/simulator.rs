//! The simulated fleet: every device with a behaviour profile heartbeats and plays its ads as the
//! sandbox clock moves ([`crate::timeline`]), in `system` mode on the background tick, in `frozen`
//! mode as `POST /_sandbox/clock/advance` moves the clock.
//!
//! Profiles (table `device_simulations`, derived for the fixture devices by `db::fixtures`):
//! - `steady`: heartbeats on a fixed grid (every [`GRID`] seconds: the last heartbeat is the last
//!   grid beat at or before now, whatever the step sizes) and plays its ads;
//! - `flaky`: as steady, but drops out for [`FLAKY_DOWN`] seconds every [`FLAKY_CYCLE`] seconds
//!   (long enough to go offline), at one of two instants of the cycle, fixed per device;
//! - `failing_playback`: as steady, and records a playback error every [`ERROR_PERIOD`] seconds
//!   (where diagnostics read them), at one of two instants of the period, fixed per device;
//! - `offline`, `never_seen`: silent.
//!
//! A playing screen plays only while its store is open (its company's opening hours,
//! [`crate::opening_hours`]; [`play_spans`] is the one rule): outside them it heartbeats, reporting
//! no ad, and plays nothing. It plays the ads it plays by the one definition (`routes::on_air`, the view
//! `screen_ads`: assigned, active, within its dates, its promotion, if any, switched on and within
//! its window) in rotation (ordered by id, each for its `duration_seconds`, the cycle anchored at
//! the Unix epoch), each from the later of its creation and its assignment. Proof-of-play is written as one `playbacks` row
//! per ad, screen and clock hour ([`SLOT`]): the plays that started in that hour and the seconds
//! played in it. Both sums are additive over time, so a day advanced in one step or in 1,440 steps
//! writes the same rows.
//!
//! A screen a real player drives (`POST /devices/{id}/heartbeat`) stays in the fleet: for
//! [`PLAYER_SPEAKS`] seconds after each of the player's heartbeats the player speaks for it (its
//! plays and heartbeats are the player's), and the rest of the time, a clock jump above all, the
//! fleet plays it by the same rule as any screen. So a jump gives a screen the same history
//! whether or not a browser plays it, and leaves it heartbeating at the new instant.
//!
//! Cost: [`Source::catch_up`] writes nothing when no grid beat passed since the last one (one
//! indexed read); otherwise one write for the whole fleet (in the run's one transaction, see
//! `db::write_scope`), its playables read once per transaction. [`Source::next_due`] reports only
//! profile-driven transitions (a flaky screen dropping out or coming back, a failing screen's
//! error), never one step per heartbeat.

use super::playables::{Playable, Slots, Tally};
use crate::db::{DbError, Scoped, TransactionState, WriteIntent};
use crate::ids::PlaybackErrorId;
use crate::opening_hours::Hours;
use crate::routes::devices::{record_playback_error, NewPlaybackError};
use crate::routes::on_air::{Run, RUN_COLUMNS};
use crate::timeline::{Env, Report, Source};
use rusqlite::{Connection, OptionalExtension};
use std::collections::BTreeMap;
use std::rc::Rc;

/// Seconds between two heartbeats of a playing screen.
pub const GRID: i64 = 60;
/// How long a real player's heartbeat speaks for its screen: the fleet neither plays nor
/// heartbeats for it then. The browser player heartbeats every 30 s (a hidden tab's timers may
/// slow to once a minute), so a connected player always speaks; a clock jump moves past it.
pub const PLAYER_SPEAKS: i64 = 120;
/// The span one simulated proof-of-play row covers: a clock hour.
pub const SLOT: i64 = 3_600;
/// A flaky screen's cycle, and how long it is down in each.
pub const FLAKY_CYCLE: i64 = 12 * 3_600;
pub const FLAKY_DOWN: i64 = 15 * 60;
/// Seconds between two playback errors of a `failing_playback` screen.
pub const ERROR_PERIOD: i64 = 8 * 3_600;

/// Every profile, as the `device_simulations` CHECK lists them.
pub const PROFILES: &[&str] = &[
    "steady",
    "flaky",
    "offline",
    "never_seen",
    "failing_playback",
];
/// The profiles an operator may give a screen (one that was seen cannot become never seen).
pub const SETTABLE: &[&str] = &["steady", "flaky", "offline", "failing_playback"];

/// The errors a failing screen reports, in turn.
const ERRORS: &[(&str, &str)] = &[
    (
        "MEDIA_DECODE_FAILED",
        "Failed to decode media: unexpected end of stream",
    ),
    (
        "CODEC_UNSUPPORTED",
        "Player does not support the requested codec profile",
    ),
    (
        "NETWORK_TIMEOUT",
        "Timed out after 30000 ms fetching media from CDN",
    ),
    (
        "RENDER_STALLED",
        "Render loop stalled for more than 5 s; restarting player",
    ),
];

/// The fleet simulator, registered once in `app::sources`. Off (a no-op) when
/// `sandbox.simulate_fleet = false`.
pub struct Fleet;

/// The offsets into a period a screen's transitions may have: screens share a few instants, so an
/// advance stops at a handful of them a day, however large the fleet.
const PHASES: i64 = 2;

/// The key of the fleet's phases: the `fleet` stream key of the seed in a seeded sandbox, else 0.
pub(super) fn fleet_key(seeded: Option<&crate::random::Seeded>) -> u64 {
    crate::random::stream_key(seeded, "fleet")
}

/// A device's offset into a period, one of [`PHASES`] even fractions of it, fixed by its id
/// (FNV-1a: stable across builds and machines) and, in a seeded sandbox, by the seed's `fleet`
/// stream key (nothing else moves it).
fn phase(key: u64, device: &str, period: i64) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ key;
    for b in device.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % PHASES as u64) as i64 * (period / PHASES)
}

/// Where `t` falls in the period: seconds since the device's last period start.
fn offset(key: u64, device: &str, period: i64, t: i64) -> i64 {
    (t - phase(key, device, period)).rem_euclid(period)
}

fn flaky_up(key: u64, device: &str, t: i64) -> bool {
    offset(key, device, FLAKY_CYCLE, t) >= FLAKY_DOWN
}

/// The next transition of a screen with this profile strictly after `t`.
fn next_transition(key: u64, device: &str, profile: &str, t: i64) -> Option<i64> {
    match profile {
        "flaky" => {
            let r = offset(key, device, FLAKY_CYCLE, t);
            Some(if r < FLAKY_DOWN {
                t - r + FLAKY_DOWN
            } else {
                t - r + FLAKY_CYCLE
            })
        }
        "failing_playback" => Some(t - offset(key, device, ERROR_PERIOD, t) + ERROR_PERIOD),
        _ => None,
    }
}

/// The spans of `[a, b)` in which a screen with this profile plays.
pub(super) fn up_spans(key: u64, device: &str, profile: &str, a: i64, b: i64) -> Vec<(i64, i64)> {
    if profile != "flaky" {
        return if a < b { vec![(a, b)] } else { Vec::new() };
    }
    let mut out = Vec::new();
    let mut t = a;
    while t < b {
        let r = offset(key, device, FLAKY_CYCLE, t);
        if r < FLAKY_DOWN {
            t = t - r + FLAKY_DOWN;
            continue;
        }
        let end = (t - r + FLAKY_CYCLE).min(b);
        out.push((t, end));
        t = end;
    }
    out
}

/// The spans of `[a, b)` in which a screen with this profile plays: while it is up
/// ([`up_spans`]) and its store is open ([`Hours::open_spans`]). The one rule of when a simulated
/// screen plays, for the live fleet, a clock jump and the demo history alike.
pub(super) fn play_spans(
    key: u64,
    device: &str,
    profile: &str,
    hours: &Hours,
    a: i64,
    b: i64,
) -> Vec<(i64, i64)> {
    up_spans(key, device, profile, a, b)
        .into_iter()
        .flat_map(|(a, b)| hours.open_spans(a, b))
        .collect()
}

/// The opening hours of companies, read once per company (by id) for a pass over many screens.
#[derive(Default)]
pub(super) struct StoreHours(BTreeMap<String, Hours>);

impl StoreHours {
    /// The hours of `company`, from its `opening_hours` and `timezone` columns if not read yet.
    pub(super) fn of(&mut self, company: &str, json: &str, timezone: &str) -> &Hours {
        self.0
            .entry(company.to_owned())
            .or_insert_with(|| Hours::read(json, timezone))
    }
}

/// The last heartbeat of a playing screen at grid beat `g`: `g`, or for a flaky screen that is
/// down, the beat it dropped out at.
fn last_beat(key: u64, device: &str, profile: &str, g: i64) -> i64 {
    if profile == "flaky" && !flaky_up(key, device, g) {
        g - offset(key, device, FLAKY_CYCLE, g)
    } else {
        g
    }
}

/// The ads playing screens (one screen, or all) play, as `screen_ads` defines them (switched on;
/// `routes::on_air`), ordered by screen then ad ([`order`]; the query leaves the order to it,
/// which saves SQLite a temporary b-tree per call).
fn playables(tx: &Connection, device: Option<&str>) -> Result<Vec<Playable>, DbError> {
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT x.device_id, d.company_id, x.ad_id, x.duration_seconds, x.playable_from,
                {RUN_COLUMNS}
         FROM device_simulations s
         JOIN devices d ON d.id = s.device_id
         JOIN screen_ads x ON x.device_id = s.device_id
         WHERE s.profile IN ('steady', 'flaky', 'failing_playback')
           AND (?1 IS NULL OR s.device_id = ?1)
           AND x.switched_on"
    ))?;
    let rows = stmt.query_map([device], |r| {
        Ok(Playable {
            device: r.get(0)?,
            company: r.get(1)?,
            ad: r.get(2)?,
            duration: r.get::<_, i64>(3)?.max(1),
            from: r.get(4)?,
            window: Run::read(r)?.window(),
        })
    })?;
    let mut out: Vec<Playable> = rows.collect::<Result<_, _>>()?;
    order(&mut out);
    Ok(out)
}

/// The fleet's playables as read in the write scope's open transaction (see [`fleet_playables`]):
/// its [`TransactionState`], which writes nothing.
#[derive(Default, Clone)]
struct FleetPlayables(Option<Rc<Vec<Playable>>>);

impl TransactionState for FleetPlayables {
    fn before_commit(self, _conn: &Connection) -> Result<(), DbError> {
        Ok(())
    }

    /// A slice's next transaction reads the same playables unless another writer committed in
    /// between (what the query reads changes only by a request or a profile set).
    fn carried(&self) -> Option<Self> {
        self.0
            .as_ref()
            .map(|read| FleetPlayables(Some(Rc::clone(read))))
    }
}

/// Every playing screen's playables ([`playables`] of all screens), read once per write
/// transaction of a timeline run rather than at every step: while the run holds the write lock no
/// other connection changes a row, and nothing a timeline source writes changes what the query
/// reads (ads, assignments, promotions' switches and windows, profiles), but for a profile set
/// ([`forget_playables`]).
fn fleet_playables(db: Scoped<'_>, tx: &crate::db::Tx) -> Result<Rc<Vec<Playable>>, DbError> {
    let known = db.transaction_state(tx, |known: &mut FleetPlayables, _| match &known.0 {
        Some(read) => Ok(Rc::clone(read)),
        None => {
            let read = Rc::new(playables(tx, None)?);
            known.0 = Some(Rc::clone(&read));
            Ok(read)
        }
    });
    known.unwrap_or_else(|| Ok(Rc::new(playables(tx, None)?)))
}

/// Drops the playables [`fleet_playables`] keeps for the open transaction (the screens the fleet
/// simulates changed).
fn forget_playables(db: Scoped<'_>, tx: &crate::db::Tx) {
    db.transaction_state(tx, |known: &mut FleetPlayables, _| known.0 = None);
}

/// Seconds of `[0, t)` in which the ad at `start..start + d` of a rotation of `cycle` seconds
/// plays, and how many of its plays start in `[0, t)`. Differences give any span's share.
fn played_before(t: i64, cycle: i64, start: i64, d: i64) -> (i64, i64) {
    let (k, r) = (t.div_euclid(cycle), t.rem_euclid(cycle));
    (k * d + (r - start).clamp(0, d), k + i64::from(r > start))
}

/// The ad a screen plays at `t` among `ads` (its playables), if any.
fn playing_at(ads: &[Playable], t: i64) -> Option<String> {
    let cycle: i64 = ads
        .iter()
        .filter(|a| a.plays_at(t))
        .map(|a| a.duration)
        .sum();
    if cycle == 0 {
        return None;
    }
    let mut r = t.rem_euclid(cycle);
    for a in ads.iter().filter(|a| a.plays_at(t)) {
        if r < a.duration {
            return Some(a.ad.clone());
        }
        r -= a.duration;
    }
    None
}

/// Orders `playables` by screen then ad: the order their slots are written in (a property of the
/// code, whatever a collation or a query plan says).
pub(super) fn order(playables: &mut [Playable]) {
    playables.sort_by(|a, b| (&a.device, &a.ad).cmp(&(&b.device, &b.ad)));
}

/// The range of `device`'s playables in `playables` (in [`order`]: by screen, then ad), found by
/// two binary searches: a screen's playables are looked up once per screen and step, and once
/// per playback error, whose count grows with the fleet as the list does (a pass over the list
/// per error was 4 % of a 24 h advance of a 3,000-screen fleet).
pub(super) fn of_screen(playables: &[Playable], device: &str) -> std::ops::Range<usize> {
    let start = playables.partition_point(|p| p.device.as_str() < device);
    let end = start + playables[start..].partition_point(|p| p.device.as_str() == device);
    start..end
}

/// Adds the plays of a screen's span `[a, b)` to `slots` (`ads`: the screen's playables, which
/// start at index `first` of the list the slots refer to).
///
/// The span is cut where the set of ads playing changes (an ad's window opens or closes, an ad
/// may first play): between two such instants the rotation stays the same, and each clock hour
/// of it adds each ad's difference of [`played_before`] at the hour's two ends. An ad's count at
/// the end of one hour is its count at the start of the next, so each is computed once.
pub(super) fn play_span(slots: &mut impl Tally, ads: &[Playable], first: usize, a: i64, b: i64) {
    let mut edges: Vec<i64> = Vec::with_capacity(3 * ads.len() + 1);
    for ad in ads {
        if let Some((s, e)) = ad.window {
            edges.extend([s, e]);
        }
        edges.push(ad.from);
    }
    edges.retain(|t| a < *t && *t < b);
    edges.push(b);
    edges.sort_unstable();
    edges.dedup();
    // The ads playing in the current stretch: (index in `ads`, start in the rotation, duration,
    // seconds and plays before the instant reached).
    let mut playing: Vec<(usize, i64, i64, (i64, i64))> = Vec::with_capacity(ads.len());
    let mut u = a;
    for &edge in &edges {
        if u >= edge {
            continue;
        }
        playing.clear();
        let mut cycle = 0;
        for (i, p) in ads.iter().enumerate() {
            if p.plays_at(u) {
                playing.push((i, cycle, p.duration, (0, 0)));
                cycle += p.duration;
            }
        }
        if cycle > 0 {
            for (_, start, d, before) in playing.iter_mut() {
                *before = played_before(u, cycle, *start, *d);
            }
            let mut t = u;
            while t < edge {
                let hour = t.div_euclid(SLOT) * SLOT;
                let next = (hour + SLOT).min(edge);
                for (i, start, d, before) in playing.iter_mut() {
                    let now = played_before(next, cycle, *start, *d);
                    if now == *before {
                        continue;
                    }
                    slots.add(
                        first + *i,
                        hour,
                        now.1 - before.1,
                        now.0 - before.0,
                        ads[*i].row_start(hour),
                    );
                    *before = now;
                }
                t = next;
            }
        }
        u = edge;
    }
}

fn marker(conn: &rusqlite::Connection) -> Result<Option<i64>, DbError> {
    Ok(conn
        .prepare_cached("SELECT beat_at FROM fleet_simulation WHERE id = 1")?
        .query_row([], |r| r.get(0))
        .optional()?)
}

/// Heartbeats and plays of every playing screen from the last grid beat to `g`; the plays. A screen
/// in `players` (a real player heartbeated it last at the instant given) is the player's for
/// [`PLAYER_SPEAKS`] seconds from that heartbeat: the fleet neither plays nor heartbeats for it
/// then, and does both again after (a clock jump moves past it at once; a closed player stops
/// heartbeating).
fn beat_to(
    db: crate::db::Scoped<'_>,
    tx: &crate::db::Tx,
    from: i64,
    g: i64,
    players: &BTreeMap<String, i64>,
) -> Result<i64, DbError> {
    let key = fleet_key(tx.seeded());
    // Whether each screen is online and kept up: its beats are held for the transaction (`beats`).
    let mut hours = StoreHours::default();
    let mut stmt = tx.prepare_cached(
        "SELECT s.device_id, s.profile, s.since_at, s.up = 1 AND d.presence IS 'online',
                c.id, c.opening_hours, c.timezone
         FROM device_simulations s JOIN devices d ON d.id = s.device_id
         JOIN companies c ON c.id = d.company_id
         WHERE s.profile IN ('steady', 'flaky', 'failing_playback') ORDER BY s.device_id",
    )?;
    let mut rows = stmt.query([])?;
    let mut screens: Vec<(String, String, i64, bool, Hours)> = Vec::new();
    while let Some(r) = rows.next()? {
        let company: String = r.get(4)?;
        let open = hours.of(&company, &r.get::<_, String>(5)?, &r.get::<_, String>(6)?);
        screens.push((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, *open));
    }
    drop(rows);
    drop(stmt);
    let playables = fleet_playables(db, tx)?;
    // A screen that is up at `g` reports the ad it plays then, as a player's heartbeat does.
    let mut now = Vec::new();
    let mut held = Vec::with_capacity(screens.len());
    let mut slots = Slots::new();
    for (device, profile, since, kept_up, open) in &screens {
        let range = of_screen(&playables, device);
        let ads = &playables[range.clone()];
        // The player's heartbeat speaks for the screen until then.
        let spoken_for = players.get(device).map(|h| h + PLAYER_SPEAKS);
        let at = last_beat(key, device, profile, g);
        if at >= *since && spoken_for.is_none_or(|until| until <= at) {
            let beat = super::beats::Beat {
                at,
                // A closed store's screen is on but plays nothing.
                ad: (at == g).then(|| playing_at(ads, g).filter(|_| open.is_open(g))),
            };
            if *kept_up {
                held.push((device.clone(), beat));
            } else {
                now.push((device.clone(), beat));
            }
        }
        if ads.is_empty() {
            continue;
        }
        let start = from.max(*since).max(spoken_for.unwrap_or(from));
        for (a, b) in play_spans(key, device, profile, open, start, g) {
            play_span(&mut slots, ads, range.start, a, b);
        }
    }
    // A screen no longer held (none is, between two transitions) takes its held beat first.
    if now
        .iter()
        .any(|(device, _)| super::beats::is_held(db, tx, device))
    {
        super::beats::flush(db, tx)?;
    }
    super::beats::write(tx, &now)?;
    super::beats::hold(db, tx, held)?;
    // Held for the run's transaction and written once when it commits (`super::plays`).
    super::plays::write(db, tx, &playables, &slots, from, tx.now())
}

/// Writes `slots` (of `playables`) as the simulator's hourly rows, created at `now`, at once: a
/// slot of an hour that starts before `written_to` is added to the row already there, if any (rows
/// were written for the instants before it); every other slot is a new row, inserted in the
/// slots' order (the order its id and rowid follow), many rows to a statement. Returns the plays
/// written.
pub(super) fn write_slots(
    tx: &crate::db::Tx,
    playables: &[Playable],
    slots: &Slots,
    written_to: i64,
    now: i64,
) -> Result<i64, DbError> {
    let mut rows = super::plays::Rows::default();
    let plays = rows.add(tx, playables, slots, written_to, now)?;
    rows.write(tx, playables)?;
    Ok(plays)
}

/// The simulated screens a real player heartbeated at or after `since`, with the instant of its
/// latest heartbeat (a `device.heartbeat` event, which only the REST route records: the simulation
/// writes its heartbeats straight into the row).
fn player_beats(tx: &Connection, since: i64) -> Result<BTreeMap<String, i64>, DbError> {
    let rows = tx
        .prepare_cached(
            "SELECT e.resource_id, max(e.created_at) FROM events e
             JOIN device_simulations s ON s.device_id = e.resource_id
             WHERE e.created_at >= ?1 AND e.type = 'device.heartbeat'
             GROUP BY e.resource_id",
        )?
        .query_map([since], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

/// Records a playback error of a screen at `at` (in the table diagnostics read), naming the ad it
/// plays then if any, and keeps the latest ones ([`record_playback_error`]).
pub fn record_error(
    tx: &crate::db::Tx,
    device: &str,
    code: &str,
    message: &str,
    at: i64,
) -> Result<(PlaybackErrorId, Option<String>), DbError> {
    let ad = playing_at(&playables(tx, Some(device))?, at);
    error_row(tx, device, ad, code, message, at)
}

/// [`record_error`] with the ad playing then known (`ad`).
fn error_row(
    tx: &crate::db::Tx,
    device: &str,
    ad: Option<String>,
    code: &str,
    message: &str,
    at: i64,
) -> Result<(PlaybackErrorId, Option<String>), DbError> {
    let error = NewPlaybackError {
        code,
        message,
        ad_id: ad.as_deref(),
    };
    let id = record_playback_error(tx, device, &error, at)?;
    Ok((id, ad))
}

/// Whether the fleet keeps this screen heartbeating at `t` (the `up` column: the offline check skips
/// such screens while the fleet runs).
fn heartbeating(key: u64, device: &str, profile: &str, t: i64) -> bool {
    matches!(profile, "steady" | "failing_playback")
        || (profile == "flaky" && flaky_up(key, device, t))
}

/// Gives a screen a profile from `now` on: a playing profile heartbeats at once (a flaky screen
/// only if it is up). Returns the next transition (at or after `now`), if the profile has any.
/// (`db`: the database `tx` writes in, whose write scope may keep the fleet's playables.)
pub fn set_profile(
    db: Scoped<'_>,
    tx: &crate::db::Tx,
    device: &str,
    profile: &str,
    now: i64,
) -> Result<Option<i64>, DbError> {
    forget_playables(db, tx);
    let key = fleet_key(tx.seeded());
    let next = next_transition(key, device, profile, now - 1);
    let plays = heartbeating(key, device, profile, now);
    tx.prepare_cached(
        "INSERT INTO device_simulations (device_id, profile, since_at, next_due_at, up)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (device_id) DO UPDATE SET profile = excluded.profile,
             since_at = excluded.since_at, next_due_at = excluded.next_due_at, up = excluded.up",
    )?
    .execute(rusqlite::params![device, profile, now, next, plays])?;
    if plays {
        tx.prepare_cached(
            "UPDATE devices SET last_heartbeat_at = ?2, updated_at = max(updated_at, ?2)
             WHERE id = ?1 AND coalesce(last_heartbeat_at, ?2 - 1) < ?2",
        )?
        .execute(rusqlite::params![device, now])?;
    }
    Ok(next)
}

impl Source for Fleet {
    fn name(&self) -> &'static str {
        "fleet"
    }

    fn catch_up(&self, env: &Env<'_>, at: i64, report: &mut Report) -> Result<(), DbError> {
        if !env.settings.sandbox_simulate_fleet {
            return Ok(());
        }
        let g = at.div_euclid(GRID) * GRID;
        if marker(&*env.db.conn()?)?.is_some_and(|m| g <= m) {
            return Ok(());
        }
        let plays = env.db.write(&WriteIntent::sandbox(), |tx| {
            let from = match marker(tx)? {
                Some(m) if g <= m => return Ok(0),
                Some(m) => m,
                None => g,
            };
            // A screen a real player heartbeats is the player's while it does (one screen, one
            // voice); the span a clock jump moves over is the fleet's, played by the same rule as
            // every screen's, since the player only plays the instants it lives through.
            let players = player_beats(tx, from - PLAYER_SPEAKS)?;
            let plays = if from < g {
                beat_to(env.db, tx, from, g, &players)?
            } else {
                0
            };
            // Screens the fleet brought back (a flaky one up again, a profile switched on) are
            // online again: `device.online`, once each, as a player's heartbeat would record.
            let back = crate::routes::devices::heartbeats_arrived(
                tx,
                g,
                env.settings.device_offline_after_secs,
            )?;
            report.count(crate::routes::devices::ONLINE, back);
            tx.prepare_cached(
                "INSERT INTO fleet_simulation (id, beat_at) VALUES (1, ?1)
                 ON CONFLICT (id) DO UPDATE SET beat_at = excluded.beat_at",
            )?
            .execute([g])?;
            Ok::<_, DbError>(plays)
        })?;
        report.count("fleet.plays", plays.max(0) as u64);
        Ok(())
    }

    fn next_due(&self, env: &Env<'_>, until: i64) -> Result<Option<i64>, DbError> {
        if !env.settings.sandbox_simulate_fleet {
            return Ok(None);
        }
        let conn = env.db.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT min(next_due_at) FROM device_simulations WHERE next_due_at <= ?1",
        )?;
        Ok(stmt.query_row([until], |r| r.get(0))?)
    }

    fn run_due(&self, env: &Env<'_>, at: i64, report: &mut Report) -> Result<(), DbError> {
        if !env.settings.sandbox_simulate_fleet {
            return Ok(());
        }
        env.db.write(&WriteIntent::sandbox(), |tx| {
            let key = fleet_key(tx.seeded());
            let due: Vec<(String, String, i64)> = tx
                .prepare_cached(
                    "SELECT device_id, profile, next_due_at FROM device_simulations
                     WHERE next_due_at <= ?1 ORDER BY next_due_at, device_id",
                )?
                .query_map([at], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<_, _>>()?;
            for (device, profile, t) in due {
                match profile.as_str() {
                    "flaky" => match offset(key, &device, FLAKY_CYCLE, t) {
                        0 => report.count("fleet.dropped_out", 1),
                        FLAKY_DOWN => report.count("fleet.came_back", 1),
                        _ => {}
                    },
                    "failing_playback" if offset(key, &device, ERROR_PERIOD, t) == 0 => {
                        let n = (t.div_euclid(ERROR_PERIOD)).rem_euclid(ERRORS.len() as i64);
                        let (code, message) = ERRORS[n as usize];
                        // The fleet's playables of this transaction (read once for all its
                        // steps) rather than a query of the screen's for each error.
                        let playables = fleet_playables(env.db, tx)?;
                        let ads = &playables[of_screen(&playables, &device)];
                        error_row(tx, &device, playing_at(ads, t), code, message, t)?;
                        report.count("fleet.playback_error", 1);
                    }
                    _ => {}
                }
                // Something overdue (a system clock after a pause) is not replayed one by one.
                let next = next_transition(key, &device, &profile, t.max(at));
                let up = heartbeating(key, &device, &profile, t.max(at));
                if !up {
                    // The offline check reads a screen no longer kept up: its beat goes in first.
                    super::beats::release(env.db, tx, &device)?;
                }
                tx.prepare_cached(
                    "UPDATE device_simulations SET next_due_at = ?2, up = ?3 WHERE device_id = ?1",
                )?
                .execute(rusqlite::params![device, next, up])?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::playables::Slot;

    #[test]
    fn play_shares_add_up_whatever_the_steps() {
        let a = Playable {
            device: "dev_1".into(),
            company: "cmp_1".into(),
            ad: "ad_1".into(),
            duration: 15,
            from: 0,
            window: None,
        };
        let b = Playable {
            ad: "ad_2".into(),
            duration: 30,
            window: Some((1_000, 5_000)),
            ..a_clone(&a)
        };
        let ads = vec![a_clone(&a), b];
        let mut whole = Slots::new();
        play_span(&mut whole, &ads, 0, 0, 7_200);
        let mut steps = Slots::new();
        for t in (0..7_200).step_by(60) {
            play_span(&mut steps, &ads, 0, t, t + 60);
        }
        assert_eq!(whole, steps);
        let seconds: i64 = whole.values().map(|v| v.seconds).sum();
        assert_eq!(seconds, 7_200);
    }

    /// The plain statement of the rule [`play_span`] computes by stretches: cut the span at every
    /// clock hour and every instant the set of ads playing changes, and give each window each
    /// playing ad's share.
    fn play_span_window_by_window(
        slots: &mut Slots,
        ads: &[Playable],
        first: usize,
        a: i64,
        b: i64,
    ) {
        let mut cuts: Vec<i64> = vec![a, b];
        let mut hour = a.div_euclid(SLOT) * SLOT + SLOT;
        while hour < b {
            cuts.push(hour);
            hour += SLOT;
        }
        for ad in ads {
            if let Some((s, e)) = ad.window {
                cuts.extend([s, e].into_iter().filter(|t| a < *t && *t < b));
            }
            if a < ad.from && ad.from < b {
                cuts.push(ad.from);
            }
        }
        cuts.sort_unstable();
        cuts.dedup();
        for w in cuts.windows(2) {
            let (u, v) = (w[0], w[1]);
            let cycle: i64 = ads
                .iter()
                .filter(|p| p.plays_at(u))
                .map(|p| p.duration)
                .sum();
            let hour = u.div_euclid(SLOT) * SLOT;
            let mut start = 0;
            for (i, p) in ads.iter().enumerate().filter(|(_, p)| p.plays_at(u)) {
                let (s1, n1) = played_before(v, cycle, start, p.duration);
                let (s0, n0) = played_before(u, cycle, start, p.duration);
                start += p.duration;
                if s1 == s0 && n1 == n0 {
                    continue;
                }
                let slot = slots.entry((first + i, hour)).or_insert_with(|| Slot {
                    plays: 0,
                    seconds: 0,
                    started_at: p.row_start(hour),
                });
                slot.plays += n1 - n0;
                slot.seconds += s1 - s0;
            }
        }
    }

    /// Stretch by stretch gives exactly what window by window gives, on many made-up screens:
    /// ads that start late, windows that open and close inside the span or outside it, empty
    /// windows, spans shorter than an hour and spans of days.
    #[test]
    fn play_span_by_stretches_is_play_span_window_by_window() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut draw = |n: i64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as i64
        };
        let mut played = 0;
        for case in 0..400 {
            let base = 1_767_225_600 + draw(86_400);
            let ads: Vec<Playable> = (0..1 + draw(6))
                .map(|k| {
                    let window = match draw(3) {
                        0 => None,
                        _ => {
                            let s = base + draw(200_000) - 50_000;
                            Some((s, s + draw(150_000)))
                        }
                    };
                    Playable {
                        device: "dev_1".into(),
                        company: "cmp_1".into(),
                        ad: format!("ad_{k}"),
                        duration: 1 + draw(90),
                        from: base + draw(120_000) - 60_000,
                        window,
                    }
                })
                .collect();
            let a = base + draw(100_000);
            let b = a + if case % 4 == 0 {
                draw(3_600)
            } else {
                draw(400_000)
            };
            let first = draw(5) as usize;
            let mut fast = Slots::new();
            let mut plain = Slots::new();
            play_span(&mut fast, &ads, first, a, b);
            play_span_window_by_window(&mut plain, &ads, first, a, b);
            assert_eq!(fast, plain, "case {case}: span {a}..{b}");
            played += usize::from(!plain.is_empty());
        }
        assert!(
            played > 300,
            "only {played} of 400 made-up screens played anything"
        );
    }

    fn a_clone(p: &Playable) -> Playable {
        Playable {
            device: p.device.clone(),
            company: p.company.clone(),
            ad: p.ad.clone(),
            duration: p.duration,
            from: p.from,
            window: p.window,
        }
    }

    #[test]
    fn a_flaky_screen_is_down_a_quarter_hour_per_cycle() {
        let d = "dev_0m5d4rurdcoluk2ocqea";
        let spans = up_spans(0, d, "flaky", 0, FLAKY_CYCLE * 2);
        let up: i64 = spans.iter().map(|(a, b)| b - a).sum();
        assert_eq!(up, 2 * (FLAKY_CYCLE - FLAKY_DOWN));
        let drop = next_transition(0, d, "flaky", 0).unwrap();
        assert!(!flaky_up(0, d, drop) || flaky_up(0, d, drop - 1));
        assert_eq!(drop % GRID, 0);
        assert!(PROFILES
            .iter()
            .all(|p| SETTABLE.contains(p) || *p == "never_seen"));
    }
}
