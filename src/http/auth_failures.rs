//! Failed authentication, rate-limited per client address (issue 29 item 4, issue 31 item 1).
//!
//! Each client address (grouped as [`super::admission::client_of`] does) has a bucket of
//! `server.auth_failures_per_minute` tokens that refills at that many a minute. A request whose
//! credential is refused (401) spends one; while the bucket is empty, such a request is answered
//! 429 `too_many_failed_authentications` instead: its body is not read, it is not run, audited or
//! journaled, and its connection is closed. A valid credential spends nothing and is never refused
//! so, even from an address that is over its budget: on a loopback sandbox every client shares
//! one address, and one of them failing must not lock the others out.
//!
//! Memory: an address with a full bucket is the same as one with none; past [`CAPACITY`]
//! addresses the full buckets are swept out, and if every bucket is in use the oldest is dropped.

use super::admission::client_of;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// Addresses tracked before full buckets are swept out.
const CAPACITY: usize = 4096;

struct Bucket {
    tokens: f64,
    at: Instant,
}

pub struct AuthFailures {
    per_minute: f64,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

impl AuthFailures {
    /// `per_minute` 0: off.
    pub fn new(per_minute: u32) -> AuthFailures {
        AuthFailures {
            per_minute: f64::from(per_minute),
            buckets: Mutex::default(),
        }
    }

    fn refill(&self, b: &mut Bucket, now: Instant) {
        let secs = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + secs * self.per_minute / 60.0).min(self.per_minute);
        b.at = now;
    }

    /// `Some(seconds)` to wait when `peer` has no failure left to spend.
    pub fn blocked(&self, peer: IpAddr) -> Option<u64> {
        if self.per_minute <= 0.0 {
            return None;
        }
        let now = Instant::now();
        let mut map = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let b = map.get_mut(&client_of(peer))?;
        self.refill(b, now);
        (b.tokens < 1.0).then(|| (((1.0 - b.tokens) * 60.0 / self.per_minute).ceil() as u64).max(1))
    }

    /// `peer` failed to authenticate: one token less.
    pub fn failed(&self, peer: IpAddr) {
        if self.per_minute <= 0.0 {
            return;
        }
        let now = Instant::now();
        let mut map = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let client = client_of(peer);
        if !map.contains_key(&client) && map.len() >= CAPACITY {
            map.retain(|_, b| {
                let secs = now.saturating_duration_since(b.at).as_secs_f64();
                b.tokens + secs * self.per_minute / 60.0 < self.per_minute
            });
            if map.len() >= CAPACITY {
                let oldest = map.iter().min_by_key(|(_, b)| b.at).map(|(k, _)| *k);
                if let Some(k) = oldest {
                    map.remove(&k);
                }
            }
        }
        let b = map.entry(client).or_insert(Bucket {
            tokens: self.per_minute,
            at: now,
        });
        self.refill(b, now);
        b.tokens = (b.tokens - 1.0).max(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_blocked_after_its_failures_and_others_are_not() {
        let f = AuthFailures::new(3);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..3 {
            assert_eq!(f.blocked(a), None);
            f.failed(a);
        }
        // One token comes back every 20 s.
        let wait = f.blocked(a).unwrap();
        assert!((19..=20).contains(&wait), "{wait}");
        assert_eq!(f.blocked(b), None);
        assert_eq!(AuthFailures::new(0).blocked(a), None);
    }
}
