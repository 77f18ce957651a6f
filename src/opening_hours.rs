//! A company's opening hours, kept in its own time zone: its stores' screens play only while the
//! store is open ([`Hours::is_open`], [`Hours::open_spans`]), in the simulated history of a demo
//! world, in the live fleet and across a clock jump alike. Outside its hours a screen still
//! heartbeats (it is on, and online) but plays nothing.
//!
//! Stored as the company's `opening_hours` column (schema V44), the JSON of a list of
//! [`OpenDay`]s, as `GET /companies/{id}` shows it; a day the list does not name is a closed day.
//! A company made through the API is open around the clock until its hours say otherwise.
//!
//! The time zones: the sandbox's companies are European, so the zone rule is written out here
//! rather than carried as a time-zone database: a zone's standard offset and, for the zones of the
//! European Union, summer time from 01:00 UTC on the last Sunday of March to 01:00 UTC on the last
//! Sunday of October. A zone not in [`ZONES`] is read as UTC.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const DAY: i64 = 86_400;
const HOUR: i64 = 3_600;

/// The week's days, Monday first, as [`OpenDay::day`] names them.
pub const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// The hours around the clock: every day from 00:00 to 24:00 (a new company's hours, schema V44).
pub const AROUND_THE_CLOCK: &str = r#"[{"day":"monday","opens":"00:00","closes":"24:00"},{"day":"tuesday","opens":"00:00","closes":"24:00"},{"day":"wednesday","opens":"00:00","closes":"24:00"},{"day":"thursday","opens":"00:00","closes":"24:00"},{"day":"friday","opens":"00:00","closes":"24:00"},{"day":"saturday","opens":"00:00","closes":"24:00"},{"day":"sunday","opens":"00:00","closes":"24:00"}]"#;

/// The zones the sandbox knows: (IANA name, standard offset in seconds, keeps EU summer time).
const ZONES: &[(&str, i64, bool)] = &[
    ("Europe/Amsterdam", HOUR, true),
    ("Europe/Berlin", HOUR, true),
    ("Europe/Brussels", HOUR, true),
    ("Europe/Copenhagen", HOUR, true),
    ("Europe/Luxembourg", HOUR, true),
    ("Europe/Madrid", HOUR, true),
    ("Europe/Oslo", HOUR, true),
    ("Europe/Paris", HOUR, true),
    ("Europe/Rome", HOUR, true),
    ("Europe/Stockholm", HOUR, true),
    ("Europe/Vienna", HOUR, true),
    ("Europe/Warsaw", HOUR, true),
    ("Europe/Zurich", HOUR, true),
    ("Europe/Athens", 2 * HOUR, true),
    ("Europe/Helsinki", 2 * HOUR, true),
    ("Europe/Dublin", 0, true),
    ("Europe/Lisbon", 0, true),
    ("Europe/London", 0, true),
    ("UTC", 0, false),
];

/// One day a store is open: from `opens` to `closes`, local time in the company's time zone.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OpenDay {
    /// The day of the week, in English, lower case (`monday` ... `sunday`).
    #[schemars(extend("enum" = WEEKDAYS))]
    pub day: String,
    /// When the store opens, `HH:MM` local time.
    #[schemars(regex(pattern = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"))]
    pub opens: String,
    /// When it closes, `HH:MM` local time, later than `opens` (`24:00`: at midnight).
    #[schemars(regex(pattern = r"^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$"))]
    pub closes: String,
}

/// A week of opening hours that [`check`] accepts: what `PATCH /companies/{id}` takes as
/// `opening_hours`. Parsed when the body is read (a list that does not hold is a 422 naming the
/// field), so code holding one never checks it again; its JSON and JSON Schema are the list's.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(try_from = "Vec<OpenDay>", into = "Vec<OpenDay>")]
pub struct OpeningHours(Vec<OpenDay>);

impl TryFrom<Vec<OpenDay>> for OpeningHours {
    type Error = String;

    fn try_from(days: Vec<OpenDay>) -> Result<Self, String> {
        match check(&days) {
            Ok(()) => Ok(OpeningHours(days)),
            Err((i, why)) => Err(format!("Day {i}: {why}")),
        }
    }
}

impl From<OpeningHours> for Vec<OpenDay> {
    fn from(hours: OpeningHours) -> Vec<OpenDay> {
        hours.0
    }
}

impl OpeningHours {
    /// The days, Monday first (the order `GET /companies/{id}` shows them in).
    pub fn days(&self) -> Vec<OpenDay> {
        let mut days = self.0.clone();
        days.sort_by_key(|d| WEEKDAYS.iter().position(|w| *w == d.day));
        days
    }
}

impl JsonSchema for OpeningHours {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "OpeningHours".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = <Vec<OpenDay>>::json_schema(generator);
        schema.insert("maxItems".into(), 7.into());
        schema.insert("uniqueItems".into(), true.into());
        schema
    }
}

/// A time zone's rule: its standard offset and whether it keeps EU summer time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone {
    standard: i64,
    summer: bool,
}

impl Zone {
    /// The zone of an IANA name; UTC for a name the sandbox does not know.
    pub fn named(name: &str) -> Zone {
        ZONES.iter().find(|(n, ..)| *n == name).map_or(
            Zone {
                standard: 0,
                summer: false,
            },
            |&(_, standard, summer)| Zone { standard, summer },
        )
    }

    /// The zone's offset from UTC at instant `t`, in seconds.
    pub fn offset_at(self, t: i64) -> i64 {
        self.standard
            + if self.summer && is_eu_summer(t) {
                HOUR
            } else {
                0
            }
    }

    /// The instant of local time `local` (seconds since 1970-01-01 00:00 local). A local time
    /// that summer time skips or repeats (01:00 to 03:00 on the changes) reads as standard time.
    fn instant(self, local: i64) -> i64 {
        let standard = local - self.standard;
        if self.summer && is_eu_summer(standard - HOUR) {
            standard - HOUR
        } else {
            standard
        }
    }
}

/// Whether `t` lies in EU summer time: from 01:00 UTC on the last Sunday of March to 01:00 UTC on
/// the last Sunday of October.
fn is_eu_summer(t: i64) -> bool {
    let (year, ..) = crate::time::civil_from_days(t.div_euclid(DAY));
    let starts = last_sunday(year, 3) * DAY + HOUR;
    let ends = last_sunday(year, 10) * DAY + HOUR;
    starts <= t && t < ends
}

/// The day (since 1970-01-01) of the last Sunday of a 31-day month.
fn last_sunday(year: i64, month: u32) -> i64 {
    let last = crate::time::days_from_civil(year, month, 31);
    last - ((weekday(last) + 1) % 7) as i64
}

/// The weekday of a day since 1970-01-01 (a Thursday): 0 for Monday ... 6 for Sunday.
fn weekday(day: i64) -> usize {
    (day + 3).rem_euclid(7) as usize
}

/// A company's opening hours, read: its zone and, per weekday (Monday first), the seconds after
/// local midnight it opens and closes, if it opens that day.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hours {
    zone: Zone,
    days: [Option<(i64, i64)>; 7],
}

/// `HH:MM` to seconds after midnight (`24:00` allowed when `end`).
fn clock_time(text: &str, end: bool) -> Option<i64> {
    let (h, m) = text.split_once(':')?;
    if h.len() != 2 || m.len() != 2 {
        return None;
    }
    let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
    let fits = (h < 24 && m < 60) || (end && h == 24 && m == 0);
    fits.then_some(h * HOUR + m * 60)
}

/// What is wrong with a list of open days, if anything: (index of the day at fault, a sentence).
pub fn check(days: &[OpenDay]) -> Result<(), (usize, String)> {
    let mut seen = [false; 7];
    for (i, d) in days.iter().enumerate() {
        let Some(n) = WEEKDAYS.iter().position(|w| *w == d.day) else {
            return Err((i, format!("`{}` is not a day of the week.", d.day)));
        };
        if std::mem::replace(&mut seen[n], true) {
            return Err((i, format!("`{}` is listed twice.", d.day)));
        }
        match (clock_time(&d.opens, false), clock_time(&d.closes, true)) {
            (Some(o), Some(c)) if o < c => {}
            (Some(_), Some(_)) => return Err((i, format!("`{}` closes before it opens.", d.day))),
            _ => return Err((i, "A time is `HH:MM` (`24:00` only to close).".into())),
        }
    }
    Ok(())
}

impl Hours {
    /// The hours of a company: its `opening_hours` JSON and its time zone's name. Hours that do
    /// not read (which the API never stores) read as around the clock.
    pub fn read(json: &str, timezone: &str) -> Hours {
        let zone = Zone::named(timezone);
        let days: Vec<OpenDay> = serde_json::from_str(json).unwrap_or_default();
        if check(&days).is_err() {
            return Hours {
                zone,
                days: [Some((0, DAY)); 7],
            };
        }
        let mut out = [None; 7];
        for d in &days {
            if let (Some(n), Some(o), Some(c)) = (
                WEEKDAYS.iter().position(|w| *w == d.day),
                clock_time(&d.opens, false),
                clock_time(&d.closes, true),
            ) {
                out[n] = Some((o, c));
            }
        }
        Hours { zone, days: out }
    }

    /// The store's days as a list, Monday first (what `GET /companies/{id}` shows).
    pub fn parse_days(json: &str) -> Vec<OpenDay> {
        serde_json::from_str(json).unwrap_or_default()
    }

    /// Whether the store is open at instant `t`: the one rule every simulation of plays follows.
    pub fn is_open(&self, t: i64) -> bool {
        let local = t + self.zone.offset_at(t);
        let day = local.div_euclid(DAY);
        self.days[weekday(day)].is_some_and(|(o, c)| {
            let s = local - day * DAY;
            o <= s && s < c
        })
    }

    /// The spans of `[a, b)` in which the store is open, in time order, touching spans joined
    /// (a store open around the clock is one span). The same instants [`Hours::is_open`] says.
    pub fn open_spans(&self, a: i64, b: i64) -> Vec<(i64, i64)> {
        let mut out: Vec<(i64, i64)> = Vec::new();
        if a >= b {
            return out;
        }
        // Local days that may overlap `[a, b)`, with a day's margin for the offset.
        let first = a.div_euclid(DAY) - 1;
        let last = b.div_euclid(DAY) + 1;
        for day in first..=last {
            let Some((o, c)) = self.days[weekday(day)] else {
                continue;
            };
            let (s, e) = (
                self.zone.instant(day * DAY + o).max(a),
                self.zone.instant(day * DAY + c).min(b),
            );
            if s >= e {
                continue;
            }
            match out.last_mut() {
                Some(span) if span.1 >= s => span.1 = span.1.max(e),
                _ => out.push((s, e)),
            }
        }
        out
    }

    /// When the store next opens at or after `t` (`t` itself if it is open then), within a week.
    pub fn opens_at(&self, t: i64) -> Option<i64> {
        self.open_spans(t, t + 8 * DAY).first().map(|s| s.0)
    }

    /// When the store next closes after `t`, if it is open at `t` and closes within a week.
    pub fn closes_at(&self, t: i64) -> Option<i64> {
        let first = self.open_spans(t, t + 8 * DAY).into_iter().next()?;
        (first.0 == t && first.1 < t + 8 * DAY).then_some(first.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> i64 {
        crate::time::parse_rfc3339(text).unwrap()
    }

    const SHOP: &str = r#"[{"day":"monday","opens":"08:00","closes":"21:00"},
        {"day":"saturday","opens":"09:30","closes":"18:00"},
        {"day":"sunday","opens":"10:00","closes":"24:00"}]"#;

    #[test]
    fn the_eu_summer_time_rule_and_the_zones() {
        let ams = Zone::named("Europe/Amsterdam");
        // 2026: summer time from 29 March 01:00 UTC to 25 October 01:00 UTC.
        assert_eq!(ams.offset_at(at("2026-03-29T00:59:59Z")), 3_600);
        assert_eq!(ams.offset_at(at("2026-03-29T01:00:00Z")), 7_200);
        assert_eq!(ams.offset_at(at("2026-10-25T00:59:59Z")), 7_200);
        assert_eq!(ams.offset_at(at("2026-10-25T01:00:00Z")), 3_600);
        assert_eq!(
            Zone::named("Europe/Lisbon").offset_at(at("2026-07-01T00:00:00Z")),
            3_600
        );
        assert_eq!(
            Zone::named("Europe/Lisbon").offset_at(at("2026-12-01T00:00:00Z")),
            0
        );
        assert_eq!(
            Zone::named("Mars/Olympus").offset_at(at("2026-07-01T00:00:00Z")),
            0
        );
    }

    #[test]
    fn a_store_is_open_in_its_own_hours_and_zone() {
        let h = Hours::read(SHOP, "Europe/Amsterdam");
        // Monday 7 December 2026 (winter: UTC+1): open 07:00-20:00 UTC.
        assert!(!h.is_open(at("2026-12-07T06:59:59Z")));
        assert!(h.is_open(at("2026-12-07T07:00:00Z")));
        assert!(h.is_open(at("2026-12-07T19:59:59Z")));
        assert!(!h.is_open(at("2026-12-07T20:00:00Z")));
        // Tuesday: closed all day.
        assert!(!h.is_open(at("2026-12-08T12:00:00Z")));
        // Monday 6 July 2026 (summer: UTC+2): open 06:00-19:00 UTC.
        assert!(h.is_open(at("2026-07-06T06:00:00Z")));
        assert!(!h.is_open(at("2026-07-06T19:00:00Z")));
        // Sunday to midnight, local.
        assert!(h.is_open(at("2026-12-06T22:59:59Z")));
        assert!(!h.is_open(at("2026-12-06T23:00:00Z")));
    }

    #[test]
    fn open_spans_say_what_is_open_says() {
        let h = Hours::read(SHOP, "Europe/Brussels");
        for (a, b) in [
            (at("2026-12-01T00:00:00Z"), at("2026-12-22T00:00:00Z")),
            (at("2026-03-20T10:17:00Z"), at("2026-04-05T03:00:00Z")),
            (at("2026-10-20T00:00:00Z"), at("2026-11-02T13:13:13Z")),
        ] {
            let spans = h.open_spans(a, b);
            assert!(spans.windows(2).all(|w| w[0].1 < w[1].0), "{spans:?}");
            let mut t = a;
            while t < b {
                let inside = spans.iter().any(|&(s, e)| s <= t && t < e);
                assert_eq!(inside, h.is_open(t), "at {}", crate::time::rfc3339(t));
                t += 600;
            }
        }
        let always = Hours::read(AROUND_THE_CLOCK, "Europe/Amsterdam");
        assert_eq!(always.open_spans(5, 1_000_000), vec![(5, 1_000_000)]);
        assert_eq!(
            h.opens_at(at("2026-12-07T21:00:00Z")),
            Some(at("2026-12-12T08:30:00Z"))
        );
        assert_eq!(
            h.closes_at(at("2026-12-07T12:00:00Z")),
            Some(at("2026-12-07T20:00:00Z"))
        );
        assert_eq!(h.closes_at(at("2026-12-07T21:00:00Z")), None);
    }

    #[test]
    fn hours_that_do_not_hold_are_refused() {
        let day = |d: &str, o: &str, c: &str| OpenDay {
            day: d.into(),
            opens: o.into(),
            closes: c.into(),
        };
        assert!(check(&[day("monday", "08:00", "24:00")]).is_ok());
        assert!(check(&[day("funday", "08:00", "21:00")]).is_err());
        assert!(check(&[day("monday", "21:00", "08:00")]).is_err());
        assert!(check(&[day("monday", "24:00", "24:00")]).is_err());
        assert!(check(&[day("monday", "8:00", "21:00")]).is_err());
        assert_eq!(
            check(&[
                day("monday", "08:00", "21:00"),
                day("monday", "09:00", "10:00")
            ])
            .map_err(|e| e.0),
            Err(1)
        );
    }
}
