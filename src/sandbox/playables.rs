//! The simulated fleet's play data: an ad a screen may play ([`Playable`]) and the hourly slots its
//! plays are tallied into ([`Slots`]), which the simulator computes, the history replays and
//! `plays` writes. Plain types: this file imports no other file of `sandbox`.

use std::collections::BTreeMap;

/// An ad a screen may play: its id, duration, the instant it may first play there (the later of
/// the ad's creation and its assignment to the screen) and, with a promotion, the span in which
/// the promotion runs.
#[derive(Clone)]
pub(super) struct Playable {
    pub(super) device: String,
    pub(super) company: String,
    pub(super) ad: String,
    pub(super) duration: i64,
    pub(super) from: i64,
    pub(super) window: Option<(i64, i64)>,
}

impl Playable {
    pub(super) fn plays_at(&self, t: i64) -> bool {
        t >= self.from && self.window.is_none_or(|(s, e)| s <= t && t < e)
    }

    /// The `started_at` of this ad's row for the clock hour `hour`: the hour's start, or the first
    /// instant in it the ad may play there, so that no row predates the ad, its assignment or its
    /// promotion.
    pub(super) fn row_start(&self, hour: i64) -> i64 {
        hour.max(self.from)
            .max(self.window.map_or(i64::MIN, |(s, _)| s))
    }
}

/// Per (playable, clock hour): the plays that started in it, the seconds played and the row's
/// `started_at` ([`Playable::row_start`]). A playable is its index in the list it was taken from,
/// kept in [`order`](super::simulator::order) (by screen then ad), so the map's order is the order of
/// (screen, ad, hour) without comparing a string.
pub(super) type Slots = BTreeMap<(usize, i64), Slot>;

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(super) struct Slot {
    pub(super) plays: i64,
    pub(super) seconds: i64,
    pub(super) started_at: i64,
}

/// Where [`play_span`](super::simulator::play_span) adds plays: a slot per (playable, clock hour).
pub(super) trait Tally {
    /// Adds `plays` and `seconds` to the slot of playable `i` in the clock hour `hour`, which
    /// starts at `started_at` when it is new.
    fn add(&mut self, i: usize, hour: i64, plays: i64, seconds: i64, started_at: i64);
}

impl Tally for Slots {
    fn add(&mut self, i: usize, hour: i64, plays: i64, seconds: i64, started_at: i64) {
        let slot = self.entry((i, hour)).or_insert(Slot {
            plays: 0,
            seconds: 0,
            started_at,
        });
        slot.plays += plays;
        slot.seconds += seconds;
    }
}
