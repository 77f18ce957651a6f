//! The bound on requests held back by an injected delay (`Prefer: delay=`, a `delay` fault rule).
//!
//! A held request keeps its connection (and so one of the server's `max_connections` slots) for
//! up to [`super::faults::MAX_DELAY_MS`]; the rate limit bounds requests per second, not how many
//! wait at once. So each account (all its keys and login users together: an admin can mint keys,
//! so a bound per key is no bound) may have at most `sandbox.max_delayed_per_account` held
//! requests in flight, and all accounts together at most half the connection budget: past either,
//! a request that would be delayed is refused *before it runs* (429 `too_many_delayed_requests`,
//! `Retry-After`: when the account's earliest hold ends) and its connection is closed, so a
//! refused attacker holds no slot either.
//!
//! A [`Hold`] is taken by the pipeline when it decides on a delay and released when the server
//! has waited it out (or the connection is gone): the pipeline is synchronous and does not wait,
//! so it keeps the holds in the request's [`super::exchange::Exchange`], which the server takes
//! them from after the request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The held requests of every account: when each one's delay ends.
#[derive(Debug, Default)]
struct Held {
    by_account: HashMap<String, Vec<Instant>>,
    total: usize,
}

/// The counters of one app.
pub struct DelayHolds {
    per_account: usize,
    total: usize,
    held: Arc<Mutex<Held>>,
}

/// Why a delay was refused, and when to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    pub limit: usize,
    /// True when the sandbox-wide bound (not the account's) was reached.
    pub sandbox_wide: bool,
    pub retry_after_secs: u64,
}

impl DelayHolds {
    pub fn new(per_account: usize, max_connections: usize) -> DelayHolds {
        DelayHolds {
            per_account,
            total: (max_connections / 2).max(1),
            held: Arc::default(),
        }
    }

    /// Takes a hold of `delay_ms` for `account`, released when the returned [`Hold`] is dropped.
    pub fn acquire(&self, account: &str, delay_ms: u64) -> Result<Hold, Refused> {
        let now = Instant::now();
        let until = now + Duration::from_millis(delay_ms);
        let mut held = lock(&self.held);
        let mine = held.by_account.get(account).map_or(0, Vec::len);
        let sandbox_wide = held.total >= self.total;
        if mine >= self.per_account || sandbox_wide {
            let earliest = if sandbox_wide {
                held.by_account.values().flatten().min().copied()
            } else {
                held.by_account
                    .get(account)
                    .and_then(|v| v.iter().min().copied())
            };
            let wait =
                earliest.map_or(Duration::from_secs(1), |t| t.saturating_duration_since(now));
            return Err(Refused {
                limit: if sandbox_wide {
                    self.total
                } else {
                    self.per_account
                },
                sandbox_wide,
                retry_after_secs: wait.as_millis().div_ceil(1000).max(1) as u64,
            });
        }
        held.by_account
            .entry(account.to_string())
            .or_default()
            .push(until);
        held.total += 1;
        drop(held);
        Ok(Hold {
            held: Arc::clone(&self.held),
            account: account.to_string(),
            until,
        })
    }

    /// Held requests of `account` right now (for tests and logs).
    pub fn held_by(&self, account: &str) -> usize {
        lock(&self.held).by_account.get(account).map_or(0, Vec::len)
    }
}

fn lock(m: &Mutex<Held>) -> std::sync::MutexGuard<'_, Held> {
    // A poisoned lock only means a panic elsewhere; the counters are plain data.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One held request; released when dropped.
#[derive(Debug)]
pub struct Hold {
    held: Arc<Mutex<Held>>,
    account: String,
    until: Instant,
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut held = lock(&self.held);
        if let Some(list) = held.by_account.get_mut(&self.account) {
            if let Some(i) = list.iter().position(|t| *t == self.until) {
                list.swap_remove(i);
            }
            if list.is_empty() {
                held.by_account.remove(&self.account);
            }
        }
        held.total = held.total.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_are_bounded_per_account_and_released_on_drop() {
        let holds = DelayHolds::new(2, 100);
        let mut taken = Vec::new();
        taken.push(holds.acquire("acct_a", 1000).unwrap());
        taken.push(holds.acquire("acct_a", 3000).unwrap());
        let refused = holds.acquire("acct_a", 1000).unwrap_err();
        assert_eq!(refused.limit, 2);
        assert!(!refused.sandbox_wide);
        assert_eq!(refused.retry_after_secs, 1);
        taken.push(holds.acquire("acct_b", 1000).unwrap());
        assert_eq!(taken.len(), 3);
        assert_eq!(holds.held_by("acct_a"), 2);
        drop(taken);
        assert_eq!(holds.held_by("acct_a"), 0);
        assert!(holds.acquire("acct_a", 10).is_ok());
    }

    #[test]
    fn the_sandbox_wide_bound_is_half_the_connections() {
        let holds = DelayHolds::new(8, 4);
        let a = holds.acquire("acct_a", 10);
        assert!(a.is_ok());
        let b = holds.acquire("acct_b", 10);
        assert!(b.is_ok());
        let refused = holds.acquire("acct_c", 10).unwrap_err();
        assert!(refused.sandbox_wide);
        assert_eq!(refused.limit, 2);
    }
}
