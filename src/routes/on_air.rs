//! What a screen plays, the one definition (issue 44). The views `ad_runs` and `screen_ads`
//! (`schema/V40__what_a_screen_plays.sql`) resolve an ad's rule inputs (its status, its dates, its
//! promotion's switch and window, its assignments) into a [`Run`]: whether it is switched on and
//! the span it may play in; [`Run::plays_at`] is the rest of the rule. An ad's `on_air`, a
//! heartbeat's `current_ad_id` and a reported play ([`on_screen`]) and the simulated fleet all read
//! them. A leaf: it imports nothing of the routes.

use rusqlite::{Connection, OptionalExtension};

/// The columns of `ad_runs` and `screen_ads` a [`Run`] is read from, by these names.
pub const RUN_COLUMNS: &str = "switched_on, runs_from, runs_until";

/// An ad's run: whether it is switched on (`active`, and its promotion, if any, switched on) and
/// the span it may play in (its dates cut to its promotion's window; `None`: no bound that side).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub switched_on: bool,
    pub from: Option<i64>,
    pub until: Option<i64>,
}

impl Run {
    /// Reads [`RUN_COLUMNS`] of a row by name.
    pub fn read(r: &rusqlite::Row<'_>) -> rusqlite::Result<Run> {
        Ok(Run {
            switched_on: r.get("switched_on")?,
            from: r.get("runs_from")?,
            until: r.get("runs_until")?,
        })
    }

    /// Whether the ad plays at `t`: switched on, and `t` in its span.
    pub fn plays_at(&self, t: i64) -> bool {
        self.switched_on && self.from.is_none_or(|s| s <= t) && self.until.is_none_or(|e| t < e)
    }

    /// The span it may play in, for a switched-on ad: `None` when unbounded both sides; an empty
    /// span is `(t, t)`, which plays nothing.
    pub fn window(&self) -> Option<(i64, i64)> {
        if self.from.is_none() && self.until.is_none() {
            return None;
        }
        let s = self.from.unwrap_or(i64::MIN);
        Some((s, self.until.unwrap_or(i64::MAX).max(s)))
    }
}

/// How `ad` stands on `device` at `t`: `None` when it is not assigned there, else whether the
/// screen plays it at `t` ([`Run::plays_at`]).
pub fn on_screen(
    conn: &Connection,
    device: &str,
    ad: &str,
    t: i64,
) -> rusqlite::Result<Option<bool>> {
    conn.prepare_cached(&format!(
        "SELECT {RUN_COLUMNS} FROM screen_ads WHERE device_id = ?1 AND ad_id = ?2"
    ))?
    .query_row([device, ad], Run::read)
    .optional()
    .map(|run| run.map(|r| r.plays_at(t)))
}

#[cfg(test)]
mod tests {
    use super::Run;

    #[test]
    fn an_ad_plays_only_switched_on_and_inside_its_span() {
        let run = |switched_on, from, until| Run {
            switched_on,
            from,
            until,
        };
        assert!(run(true, None, None).plays_at(0));
        assert!(!run(false, None, None).plays_at(0));
        assert!(run(true, Some(0), Some(10)).plays_at(0));
        assert!(!run(true, Some(0), Some(10)).plays_at(10));
        assert!(!run(true, Some(1), None).plays_at(0));
        assert_eq!(run(true, None, None).window(), None);
        assert_eq!(run(true, Some(5), Some(3)).window(), Some((5, 5)));
        assert_eq!(run(true, None, Some(3)).window(), Some((i64::MIN, 3)));
    }
}
