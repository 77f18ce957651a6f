//! Throttling of failed logins, per username and per client address, in memory.

use std::collections::HashMap;
use std::sync::Mutex;

pub const WINDOW_SECS: i64 = 300;
pub const MAX_FAILURES_PER_USERNAME: usize = 5;
pub const MAX_FAILURES_PER_ADDRESS: usize = 20;

#[derive(Default)]
pub struct LoginThrottle {
    failures: Mutex<HashMap<String, Vec<i64>>>,
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
    pub fn retry_after(&self, username: &str, address: &str, now: i64) -> Option<u64> {
        let mut map = self.failures.lock().ok()?;
        let mut wait = None;
        for (key, limit) in Self::keys(username, address) {
            if let Some(times) = map.get_mut(&key) {
                times.retain(|t| now - t < WINDOW_SECS);
                if times.len() >= limit {
                    let oldest = times.first().copied().unwrap_or(now);
                    let w = (oldest + WINDOW_SECS - now).max(1) as u64;
                    wait = Some(wait.map_or(w, |x: u64| x.max(w)));
                }
            }
        }
        wait
    }

    pub fn record_failure(&self, username: &str, address: &str, now: i64) {
        if let Ok(mut map) = self.failures.lock() {
            // Bound memory: an attacker cycling usernames must not grow the map without limit.
            if map.len() > 10_000 {
                map.retain(|_, times| times.iter().any(|t| now - t < WINDOW_SECS));
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
