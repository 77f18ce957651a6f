//! Throttling of failed logins, per username and per client address, in memory.
//!
//! A window is real elapsed time, read from the monotonic clock, never from the sandbox clock
//! (`crate::time::Clock`): an operator who freezes the sandbox clock, starts it at another instant
//! (`--clock`) or advances it (`POST /_sandbox/clock/advance`) neither unlocks a throttled login
//! nor keeps one locked past its window. The HTTP edge's limits (`http::rate_limit`,
//! `http::auth_failures`) count time the same way.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const WINDOW_SECS: u64 = 300;
pub const MAX_FAILURES_PER_USERNAME: usize = 5;
pub const MAX_FAILURES_PER_ADDRESS: usize = 20;
const WINDOW: Duration = Duration::from_secs(WINDOW_SECS);

#[derive(Default)]
pub struct LoginThrottle {
    /// When each recent failure happened, oldest first, per `user:` and `addr:` key.
    failures: Mutex<HashMap<String, Vec<Instant>>>,
}

/// True while a failure at `at` still counts at `now`.
fn recent(at: Instant, now: Instant) -> bool {
    now.saturating_duration_since(at) < WINDOW
}

impl LoginThrottle {
    fn keys(username: &str, address: &str) -> [(String, usize); 2] {
        [
            (
                format!("user:{}", username.to_lowercase()),
                MAX_FAILURES_PER_USERNAME,
            ),
            (format!("addr:{address}"), MAX_FAILURES_PER_ADDRESS),
        ]
    }

    /// `Some(seconds)` to wait when either the username or the address is over its limit.
    pub fn retry_after(&self, username: &str, address: &str) -> Option<u64> {
        self.retry_after_at(username, address, Instant::now())
    }

    fn retry_after_at(&self, username: &str, address: &str, now: Instant) -> Option<u64> {
        let mut map = self.failures.lock().ok()?;
        let mut wait = None;
        for (key, limit) in Self::keys(username, address) {
            if let Some(times) = map.get_mut(&key) {
                times.retain(|t| recent(*t, now));
                if times.len() >= limit {
                    let oldest = times.first().copied().unwrap_or(now);
                    let left = WINDOW.saturating_sub(now.saturating_duration_since(oldest));
                    // Rounded up: a client that waits this long is let in.
                    let w = left.as_secs() + u64::from(left.subsec_nanos() > 0);
                    let w = w.max(1);
                    wait = Some(wait.map_or(w, |x: u64| x.max(w)));
                }
            }
        }
        wait
    }

    pub fn record_failure(&self, username: &str, address: &str) {
        self.record_failure_at(username, address, Instant::now());
    }

    fn record_failure_at(&self, username: &str, address: &str, now: Instant) {
        if let Ok(mut map) = self.failures.lock() {
            // Bound memory: an attacker cycling usernames must not grow the map without limit.
            if map.len() > 10_000 {
                map.retain(|_, times| times.iter().any(|t| recent(*t, now)));
            }
            for (key, _) in Self::keys(username, address) {
                map.entry(key).or_default().push(now);
            }
        }
    }

    pub fn record_success(&self, username: &str) {
        if let Ok(mut map) = self.failures.lock() {
            map.remove(&format!("user:{}", username.to_lowercase()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_real_elapsed_time() {
        let throttle = LoginThrottle::default();
        let t0 = Instant::now();
        for i in 0..MAX_FAILURES_PER_USERNAME as u64 {
            throttle.record_failure_at("Ann@x.example", "127.0.0.1", t0 + Duration::from_secs(i));
        }
        // Locked from the fifth failure, for what is left of the first one's window.
        let at = t0 + Duration::from_secs(10);
        assert_eq!(
            throttle.retry_after_at("ann@x.example", "127.0.0.9", at),
            Some(WINDOW_SECS - 10)
        );
        let part = t0 + Duration::from_millis(10_500);
        assert_eq!(
            throttle.retry_after_at("ann@x.example", "127.0.0.9", part),
            Some(WINDOW_SECS - 10),
            "rounded up"
        );
        // Still locked a second before the first failure leaves the window; then the other
        // four still count (fewer than the limit): open.
        let almost = t0 + WINDOW - Duration::from_secs(1);
        assert_eq!(
            throttle.retry_after_at("ann@x.example", "127.0.0.9", almost),
            Some(1)
        );
        assert_eq!(
            throttle.retry_after_at("ann@x.example", "127.0.0.9", t0 + WINDOW),
            None
        );
    }

    #[test]
    fn an_address_is_locked_after_its_own_limit_and_a_success_clears_only_the_username() {
        let throttle = LoginThrottle::default();
        let t0 = Instant::now();
        for i in 0..MAX_FAILURES_PER_ADDRESS {
            throttle.record_failure_at(&format!("u{i}"), "10.0.0.1", t0);
        }
        assert!(throttle.retry_after_at("fresh", "10.0.0.1", t0).is_some());
        assert!(throttle.retry_after_at("fresh", "10.0.0.2", t0).is_none());
        throttle.record_success("u0");
        assert!(throttle.retry_after_at("fresh", "10.0.0.1", t0).is_some());
        assert!(throttle.retry_after_at("u0", "10.0.0.2", t0).is_none());
    }
}
