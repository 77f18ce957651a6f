//! Promotion windows as time passes ([`crate::timeline::Source`]).
//!
//! The API derives a promotion's `state` from the clock on every read; what moves here is the
//! stored `phase`, the window as last announced, so each announcement fires once (NULL: not judged
//! yet, as fixtures just loaded, settled silently, or a promotion created and never switched on):
//! - `idle` -> `running` when a switched-on promotion's window opens (`starts_at`):
//!   `promotion.started`. Activating a promotion inside its window starts it at once (the
//!   activation records `promotion.activated` then `promotion.started`).
//! - `running` -> `ended` when its window closes (`ends_at`): `promotion.ended`.
//! - Deactivating a running promotion sets it back to `idle` (its event is `promotion.deactivated`,
//!   not `promotion.ended`); moving the window with PATCH re-arms it (see [`rearm`]).

use super::promotion::load;
use crate::db::DbError;
use crate::db::WriteIntent;
use crate::timeline::{failed, Env, Report, Source};

pub struct PromotionWindows;

const STARTED: &str = "promotion.started";
const ENDED: &str = "promotion.ended";

impl Source for PromotionWindows {
    fn name(&self) -> &'static str {
        "promotion_windows"
    }

    fn settle(&self, env: &Env<'_>, at: i64) -> Result<(), DbError> {
        env.db.write(&WriteIntent::sandbox(), |tx| {
            tx.execute(
                "UPDATE promotions SET phase = CASE
                     WHEN ends_at <= ?1 THEN 'ended'
                     WHEN active = 1 AND starts_at <= ?1 THEN 'running'
                     ELSE 'idle' END
                 WHERE phase IS NULL",
                [at],
            )?;
            Ok(())
        })
    }

    fn next_due(&self, env: &Env<'_>, until: i64) -> Result<Option<i64>, DbError> {
        let conn = env.db.conn()?;
        let start: Option<i64> = conn
            .prepare_cached(
                "SELECT min(starts_at) FROM promotions
                 WHERE phase = 'idle' AND active = 1 AND starts_at <= ?1",
            )?
            .query_row([until], |r| r.get(0))?;
        let end: Option<i64> = conn
            .prepare_cached(
                "SELECT min(ends_at) FROM promotions WHERE phase = 'running' AND ends_at <= ?1",
            )?
            .query_row([until], |r| r.get(0))?;
        Ok(match (start, end) {
            (Some(s), Some(e)) => Some(s.min(e)),
            (s, e) => s.or(e),
        })
    }

    fn run_due(&self, env: &Env<'_>, at: i64, report: &mut Report) -> Result<(), DbError> {
        env.db.write(&WriteIntent::sandbox(), |tx| {
            // Starts before ends: a window that both opened and closed by `at` (an overdue run after
            // downtime) announces both, in that order.
            let started = announce(
                tx,
                at,
                "SELECT id FROM promotions WHERE phase = 'idle' AND active = 1 AND starts_at <= ?1
                 ORDER BY starts_at, id",
                "running",
                STARTED,
            )?;
            let ended = announce(
                tx,
                at,
                "SELECT id FROM promotions WHERE phase = 'running' AND ends_at <= ?1
                 ORDER BY ends_at, id",
                "ended",
                ENDED,
            )?;
            report.count(STARTED, started);
            report.count(ENDED, ended);
            Ok(())
        })
    }
}

/// Moves every promotion the query selects to `phase`, recording `event` with the promotion.
fn announce(
    tx: &crate::db::Tx,
    at: i64,
    select: &str,
    phase: &str,
    event: &str,
) -> Result<u64, DbError> {
    let ids: Vec<String> = tx
        .prepare_cached(select)?
        .query_map([at], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for id in &ids {
        tx.prepare_cached("UPDATE promotions SET phase = ?2 WHERE id = ?1")?
            .execute(rusqlite::params![id, phase])?;
        let promo_id = <crate::ids::PromotionId as crate::ids::TypedId>::from_checked(id.clone());
        let promo = load(tx, &promo_id, at).map_err(failed)?;
        crate::events::record(tx, &promo.company_id, event, "promotion", id, &promo)?;
    }
    Ok(ids.len() as u64)
}

/// After a write to a promotion (switch or window change), brings its phase in line with the
/// window at `now`, recording `promotion.started` when it starts running at once. Never records
/// `promotion.ended`: a window closed by an edit or a deactivation is not a window that ran out.
/// A window moved back into the future (or extended after it ended) is re-armed to `idle`.
pub(super) fn rearm(
    tx: &crate::db::Tx,
    id: &crate::ids::PromotionId,
    now: i64,
) -> Result<(), crate::http::ApiError> {
    let (active, starts, ends, phase): (bool, i64, i64, Option<String>) = tx
        .prepare_cached("SELECT active, starts_at, ends_at, phase FROM promotions WHERE id = ?1")?
        .query_row([&**id], |r| {
            Ok((r.get::<_, i64>(0)? == 1, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
    // The same rule as `settle`: a window already closed is `ended` (silently: it was closed by
    // the write, not by time), a switched-on promotion inside it runs, anything else waits.
    let next = if ends <= now {
        "ended"
    } else if active && starts <= now {
        "running"
    } else {
        "idle"
    };
    if phase.as_deref() == Some(next) {
        return Ok(());
    }
    tx.prepare_cached("UPDATE promotions SET phase = ?2 WHERE id = ?1")?
        .execute(rusqlite::params![&**id, next])?;
    if next == "running" {
        let promo = load(tx, id, now)?;
        crate::events::record(tx, &promo.company_id, STARTED, "promotion", id, &promo)?;
    }
    Ok(())
}
