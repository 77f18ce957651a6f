//! The service's one clock, and Unix seconds <-> RFC 3339.
//!
//! Every part of the service reads the time from the [`Clock`] of its app, passed to it: a request
//! through its context (`http::Ctx::now`), a write through its handle (`db::Tx::now`), background
//! work through the app or the database it is given (`db::Db::clock`). Nothing reads the system
//! clock for a world's time, and nothing finds a clock on the thread: several apps in one process
//! (the test suite) each keep their own time, and a dry run made later (an MCP preview's second
//! run) carries how much later in its write intent (`db::WriteIntent::later_ms`). A clock is
//! either running (the system clock plus an offset, zero at start) or frozen at an instant; either
//! moves forward when told to (`POST /_sandbox/clock/advance`): a frozen one jumps there and stays,
//! a running one adds to its offset and keeps running from there. Never backwards. The CLI's
//! commands outside any app make a system clock of their own.
//!
//! The database stores Unix seconds (cheap to compare and to offset); the API speaks RFC 3339 UTC.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// `system` (running: the system time plus an offset the sandbox may grow), or `frozen` at an
/// instant that moves only when the sandbox is told to advance it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    System,
    Frozen,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::System => "system",
            Mode::Frozen => "frozen",
        }
    }
}

/// A clock moves forward only.
#[derive(Debug, PartialEq, Eq)]
pub enum ClockError {
    /// The asked instant is before the clock's (seconds asked, seconds now).
    Backwards { asked: i64, now: i64 },
}

pub struct Clock {
    /// Milliseconds since the epoch while frozen; `None` for the system clock.
    frozen_ms: Option<AtomicI64>,
    /// Milliseconds added to the system time while running: grown by advances, never shrunk.
    offset_ms: AtomicI64,
    /// The instant the app started at (seconds): the demo fixtures are anchored to it.
    started_at: i64,
    /// The last (millisecond, counter) stamp of an id drawn on this clock (see `ids`): ids are
    /// ordered per clock, so two apps in one process do not share a sequence.
    last_id_stamp: Mutex<(u64, u64)>,
}

impl Clock {
    pub fn system() -> Clock {
        Clock {
            frozen_ms: None,
            offset_ms: AtomicI64::new(0),
            started_at: system_millis().div_euclid(1000),
            last_id_stamp: Mutex::new((0, 0)),
        }
    }

    /// A clock frozen at `secs` (Unix seconds).
    pub fn frozen_at(secs: i64) -> Clock {
        Clock {
            frozen_ms: Some(AtomicI64::new(secs.saturating_mul(1000))),
            offset_ms: AtomicI64::new(0),
            started_at: secs,
            last_id_stamp: Mutex::new((0, 0)),
        }
    }

    pub fn mode(&self) -> Mode {
        if self.frozen_ms.is_some() {
            Mode::Frozen
        } else {
            Mode::System
        }
    }

    pub fn started_at(&self) -> i64 {
        self.started_at
    }

    pub fn now_millis(&self) -> i64 {
        match &self.frozen_ms {
            Some(ms) => ms.load(Ordering::Acquire),
            None => system_millis().saturating_add(self.offset_ms.load(Ordering::Acquire)),
        }
    }

    /// How far a running clock has been advanced ahead of the system time (ms); 0 when frozen.
    pub fn offset_millis(&self) -> i64 {
        match &self.frozen_ms {
            Some(_) => 0,
            None => self.offset_ms.load(Ordering::Acquire),
        }
    }

    pub fn now(&self) -> i64 {
        self.now_millis().div_euclid(1000)
    }

    /// Moves the clock to `secs`. A frozen clock jumps there (the instant it already shows is a
    /// no-op; an earlier one is refused). A running clock grows its offset so that it shows `secs`
    /// now and keeps running from there; asked for an instant it has already passed (the
    /// milliseconds a caller took), it stays where it is.
    pub fn set(&self, secs: i64) -> Result<(), ClockError> {
        let target = secs.saturating_mul(1000);
        let Some(ms) = &self.frozen_ms else {
            let ahead = target.saturating_sub(system_millis());
            self.offset_ms.fetch_max(ahead, Ordering::AcqRel);
            return Ok(());
        };
        ms.fetch_update(Ordering::AcqRel, Ordering::Acquire, |current| {
            (target >= current).then_some(target)
        })
        .map(|_| ())
        .map_err(|current| ClockError::Backwards {
            asked: secs,
            now: current.div_euclid(1000),
        })
    }

    /// The last id stamp drawn on this clock (a snapshot saves it with the instant).
    pub fn id_stamp(&self) -> (u64, u64) {
        *self.last_id_stamp.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A snapshot restore: puts the id stamp back and a frozen clock at `now_ms`, even backwards
    /// (the only way a clock moves back). A system clock keeps following the system time.
    pub fn restore(&self, now_ms: i64, id_stamp: (u64, u64)) {
        if let Some(ms) = &self.frozen_ms {
            ms.store(now_ms, Ordering::Release);
        }
        *self.last_id_stamp.lock().unwrap_or_else(|e| e.into_inner()) = id_stamp;
    }

    /// A failed run of the timeline rolled its writes back: a frozen clock moves back to `ms`, the
    /// instant its last commit was made at, if it shows a later one (with a snapshot restore, the
    /// only ways a clock moves back). A running clock keeps running.
    pub fn rewind(&self, ms: i64) {
        if let Some(frozen) = &self.frozen_ms {
            frozen.fetch_min(ms, Ordering::AcqRel);
        }
    }

    /// Makes a running clock's offset at least `ms` (never smaller); a frozen clock ignores it.
    pub fn ensure_offset(&self, ms: i64) {
        if self.frozen_ms.is_none() {
            self.offset_ms.fetch_max(ms, Ordering::AcqRel);
        }
    }

    /// The next id stamp on this clock (see `ids::new_id`): updates the last one with
    /// `next(now_ms, last)` and returns it.
    pub fn next_id_stamp(&self, next: impl FnOnce(u64, (u64, u64)) -> (u64, u64)) -> (u64, u64) {
        // A poisoned lock only means another thread panicked while holding it; the pair is valid.
        let mut last = self.last_id_stamp.lock().unwrap_or_else(|e| e.into_inner());
        *last = next(self.now_millis().max(0) as u64, *last);
        *last
    }
}

fn system_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The system's time in Unix seconds, whatever the sandbox clock shows: only for transport
/// (a webhook attempt's `webhook-timestamp` header, which receivers check against their own clock).
pub fn wall_now() -> i64 {
    system_millis().div_euclid(1000)
}

/// Days since 1970-01-01 to (year, month, day), after Howard Hinnant's `civil_from_days`.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `1764107201` -> `"2025-11-25T21:46:41Z"`.
/// The 20 bytes of [`rfc3339`] for a year from 0 to 9999 (`None` outside them), written digit by
/// digit on the stack: a list page writes three times a row.
pub fn rfc3339_bytes(ts: i64) -> Option<[u8; 20]> {
    let (days, secs) = (ts.div_euclid(86_400), ts.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return None;
    }
    let mut buf = *b"0000-00-00T00:00:00Z";
    let mut put = |at: usize, width: usize, mut n: u64| {
        for slot in buf[at..at + width].iter_mut().rev() {
            *slot = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, y as u64);
    put(5, 2, u64::from(m));
    put(8, 2, u64::from(d));
    put(11, 2, (secs / 3600) as u64);
    put(14, 2, (secs % 3600 / 60) as u64);
    put(17, 2, (secs % 60) as u64);
    Some(buf)
}

pub fn rfc3339(ts: i64) -> String {
    let days = ts.div_euclid(86_400);
    let secs = ts.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        (secs % 3600) / 60,
        secs % 60
    )
}

/// `1772442000` -> `"Mon, 02 Mar 2026 09:00:00 GMT"`: the IMF-fixdate of an HTTP `Date` header.
pub fn http_date(ts: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = ts.div_euclid(86_400);
    let secs = ts.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{}, {d:02} {} {y:04} {:02}:{:02}:{:02} GMT",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(m as usize).saturating_sub(1) % 12],
        secs / 3600,
        (secs % 3600) / 60,
        secs % 60
    )
}

/// Parses the RFC 3339 subset the API accepts: `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !(b[10] == b'T' || b[10] == b't') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo as u32) as i64 {
        return None;
    }
    if h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let rb = rest.as_bytes();
            if rb.len() != 6 || rb[3] != b':' || !(rb[0] == b'+' || rb[0] == b'-') {
                return None;
            }
            let oh: i64 = rest.get(1..3)?.parse().ok()?;
            let om: i64 = rest.get(4..6)?.parse().ok()?;
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if rb[0] == b'+' {
                o
            } else {
                -o
            }
        }
    };
    let days = days_from_civil(y, mo as u32, d as u32);
    Some(days * 86_400 + h * 3600 + mi * 60 + se.min(59) - offset)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// A lifetime in words an assistant can repeat exactly: "45 seconds", "1 minute", "15 minutes",
/// "2 hours", "1 hour 30 minutes" (seconds are dropped from two minutes on).
pub fn duration_words(secs: i64) -> String {
    fn unit(n: i64, one: &str) -> String {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {one}s")
        }
    }
    let secs = secs.max(0);
    if secs < 120 && secs % 60 != 0 {
        return unit(secs, "second");
    }
    let minutes = secs / 60;
    let (hours, rest) = (minutes / 60, minutes % 60);
    match (hours, rest) {
        (0, m) => unit(m, "minute"),
        (h, 0) => unit(h, "hour"),
        (h, m) => format!("{} {}", unit(h, "hour"), unit(m, "minute")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frozen_clock_moves_forward_only_and_is_what_now_reads() {
        let clock = Clock::frozen_at(1_772_442_000);
        assert_eq!(clock.now(), 1_772_442_000);
        assert_eq!(clock.set(1_772_442_060), Ok(()));
        assert_eq!(clock.now(), 1_772_442_060);
        assert_eq!(
            clock.set(1_772_442_000),
            Err(ClockError::Backwards {
                asked: 1_772_442_000,
                now: 1_772_442_060
            })
        );
        // A running clock moves forward by an offset and keeps running; never back.
        let running = Clock::system();
        let before = running.now();
        assert_eq!(running.set(before + 3600), Ok(()));
        assert!(running.now() >= before + 3600 && running.now() <= before + 3602);
        assert!(running.offset_millis() > 3_598_000);
        assert_eq!(running.set(0), Ok(()));
        assert!(running.now() >= before + 3600);
        // The frozen clock did not follow: each clock is its own.
        assert_eq!(clock.now(), 1_772_442_060);
        assert!(wall_now() > 1_772_442_060 + 86_400 * 200);
    }

    #[test]
    fn round_trips() {
        for ts in [0, 951_782_400, 1_764_107_201, 4_102_444_800, -86_400] {
            assert_eq!(parse_rfc3339(&rfc3339(ts)), Some(ts), "{ts}");
        }
        assert_eq!(rfc3339(1_764_107_201), "2025-11-25T21:46:41Z");
        assert_eq!(
            parse_rfc3339("2025-11-25T23:46:41+02:00"),
            Some(1_764_107_201)
        );
        assert_eq!(parse_rfc3339("2025-02-30T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(http_date(1_772_442_000), "Mon, 02 Mar 2026 09:00:00 GMT");
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    }
}
