//! Per-credential rate limits: one token bucket per API key or login user, in memory.
//!
//! A bucket holds up to `rate_limit_burst` tokens and gains `rate_limit_per_second` tokens a second.
//! Every authenticated request through the pipeline spends one, whether it came over REST or as an
//! MCP tool call (one pipeline), so a batch of tool calls spends one token per call. An empty bucket
//! answers 429 with `Retry-After`. Responses carry the fields of draft-ietf-httpapi-ratelimit-headers
//! (revision 11):
//!
//! ```text
//! RateLimit-Policy: "default";q=<burst>;w=<seconds to refill an empty bucket>
//! RateLimit: "default";r=<whole tokens left>;t=<seconds until the bucket is full again>
//! ```
//!
//! On a 429, `t` equals `Retry-After` (the draft: Retry-After should not point before the end of the
//! effective window). Memory: buckets live in sharded maps; a full bucket is the same as no bucket, so
//! when a shard grows past its capacity the full ones are dropped. Only authenticated principals get a
//! bucket, so the maps never hold more entries than credentials active within one refill window.

use super::response::Response;
use crate::config::Settings;
use hyper::header::HeaderName;
use hyper::header::HeaderValue;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;
use std::time::Instant;

/// The name of the one quota policy, as the headers and the problem's `violated-policies` give it.
pub const POLICY: &str = "default";
const SHARDS: usize = 16;
/// Entries a shard holds before idle (full) buckets are swept out.
const SHARD_CAPACITY: usize = 1024;
/// `RateLimit` values kept made, at most: one per (tokens left, seconds to full) a policy can say.
const MAX_KEPT_VALUES: usize = 4096;

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The state of a bucket after a request, for the headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// Whole tokens left.
    pub remaining: u64,
    /// Seconds until the bucket is full again (on a refusal: until one token is back).
    pub reset_secs: u64,
    /// `Some(seconds)` when the request was refused.
    pub retry_after_secs: Option<u64>,
}

pub struct RateLimiter {
    rate: f64,
    burst: f64,
    /// Seconds an empty bucket takes to fill (the policy's window), at least 1.
    window_secs: u64,
    enabled: bool,
    hasher: RandomState,
    shards: Vec<Mutex<HashMap<String, Bucket>>>,
    /// `RateLimit-Policy`, made once.
    policy: HeaderValue,
    /// `RateLimit` values, each made the first time it is sent and shared after (a response takes a
    /// reference, not a new string): index `remaining * (window + 1) + reset`.
    values: Vec<std::sync::OnceLock<HeaderValue>>,
}

impl RateLimiter {
    pub fn new(settings: &Settings) -> RateLimiter {
        let rate = settings.rate_limit_per_second;
        let burst = f64::from(settings.rate_limit_burst);
        let enabled = settings.rate_limit_enabled();
        let window_secs = if enabled {
            secs_ceil(burst / rate).max(1)
        } else {
            0
        };
        let kept = if enabled {
            (burst as usize + 1).saturating_mul(window_secs as usize + 1)
        } else {
            0
        };
        RateLimiter {
            rate,
            burst,
            window_secs,
            enabled,
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            policy: header_value(&policy_text(burst, window_secs)),
            values: if kept <= MAX_KEPT_VALUES {
                (0..kept).map(|_| std::sync::OnceLock::new()).collect()
            } else {
                Vec::new()
            },
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    fn shard(&self, key: &str) -> &Mutex<HashMap<String, Bucket>> {
        let i = (self.hasher.hash_one(key) as usize) % SHARDS;
        &self.shards[i]
    }

    fn refill(&self, b: &mut Bucket, now: Instant) {
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed * self.rate).min(self.burst);
        b.at = now;
    }

    fn quota(&self, tokens: f64, refused: bool) -> Quota {
        if refused {
            let wait = secs_ceil((1.0 - tokens) / self.rate).max(1);
            return Quota {
                remaining: 0,
                reset_secs: wait,
                retry_after_secs: Some(wait),
            };
        }
        Quota {
            remaining: tokens.floor().max(0.0) as u64,
            reset_secs: secs_ceil((self.burst - tokens) / self.rate),
            retry_after_secs: None,
        }
    }

    /// Spends one token of `key`'s bucket. `None` when rate limiting is off.
    pub fn take(&self, key: &str) -> Option<Quota> {
        if !self.enabled {
            return None;
        }
        let now = Instant::now();
        let mut map = self.shard(key).lock().unwrap_or_else(|e| e.into_inner());
        if !map.contains_key(key) {
            if map.len() >= SHARD_CAPACITY {
                self.sweep(&mut map, now);
            }
            map.insert(
                key.to_owned(),
                Bucket {
                    tokens: self.burst,
                    at: now,
                },
            );
        }
        let b = map.get_mut(key)?;
        self.refill(b, now);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Some(self.quota(b.tokens, false))
        } else {
            Some(self.quota(b.tokens, true))
        }
    }

    /// `key`'s bucket as it stands, spending nothing (for responses that are not themselves a
    /// credential operation, such as the MCP envelope). `None` when rate limiting is off.
    pub fn peek(&self, key: &str) -> Option<Quota> {
        if !self.enabled {
            return None;
        }
        let now = Instant::now();
        let map = self.shard(key).lock().unwrap_or_else(|e| e.into_inner());
        let tokens = match map.get(key) {
            Some(b) => {
                let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
                (b.tokens + elapsed * self.rate).min(self.burst)
            }
            None => self.burst,
        };
        Some(self.quota(tokens, false))
    }

    /// Spends one token of `key`'s bucket: `Err(seconds to wait)` when it is empty (nothing is
    /// spent then). Always `Ok` when rate limiting is off.
    pub fn spend(&self, key: &str) -> Result<(), u64> {
        match self.take(key).and_then(|q| q.retry_after_secs) {
            Some(wait) => Err(wait),
            None => Ok(()),
        }
    }

    /// Seconds until `key`'s bucket holds `n` tokens; `None` when it holds them now (or rate
    /// limiting is off). Spends nothing.
    pub fn wait_for(&self, key: &str, n: u32) -> Option<u64> {
        if !self.enabled {
            return None;
        }
        let now = Instant::now();
        let map = self.shard(key).lock().unwrap_or_else(|e| e.into_inner());
        let tokens = map.get(key).map_or(self.burst, |b| {
            let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
            (b.tokens + elapsed * self.rate).min(self.burst)
        });
        let n = f64::from(n).min(self.burst);
        (tokens < n).then(|| secs_ceil((n - tokens) / self.rate).max(1))
    }

    /// Drops the buckets that have filled up again: they say nothing a new bucket would not.
    fn sweep(&self, map: &mut HashMap<String, Bucket>, now: Instant) {
        map.retain(|_, b| {
            let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
            b.tokens + elapsed * self.rate < self.burst
        });
    }

    /// Buckets held (for tests of the memory bound).
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().map(|m| m.len()).unwrap_or(0))
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `RateLimit-Policy` and `RateLimit` for `quota` to a response: shared values, nothing
    /// formatted or allocated per response once a value has been sent.
    pub fn set_headers(&self, quota: &Quota, resp: &mut Response) {
        const POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
        const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
        resp.set_header_value(POLICY, self.policy.clone());
        resp.set_header_value(RATELIMIT, self.value(quota));
    }

    fn value(&self, quota: &Quota) -> HeaderValue {
        let stride = self.window_secs + 1;
        let slot = (quota.reset_secs < stride)
            .then(|| {
                quota
                    .remaining
                    .checked_mul(stride)?
                    .checked_add(quota.reset_secs)
            })
            .flatten()
            .and_then(|i| self.values.get(usize::try_from(i).ok()?));
        let make = || header_value(&value_text(quota));
        match slot {
            Some(kept) => kept.get_or_init(make).clone(),
            None => make(),
        }
    }

    pub fn policy_header(&self) -> String {
        policy_text(self.burst, self.window_secs)
    }
}

fn policy_text(burst: f64, window_secs: u64) -> String {
    format!("\"{POLICY}\";q={};w={}", burst as u64, window_secs)
}

fn value_text(quota: &Quota) -> String {
    format!("\"{POLICY}\";r={};t={}", quota.remaining, quota.reset_secs)
}

/// The texts above are visible ASCII: always a valid header value.
fn header_value(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Whole seconds, rounded up, of a non-negative duration in seconds.
fn secs_ceil(secs: f64) -> u64 {
    if secs.is_finite() && secs > 0.0 {
        secs.ceil().min(u32::MAX as f64) as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(rate: f64, burst: u32) -> RateLimiter {
        RateLimiter::new(&Settings {
            rate_limit_per_second: rate,
            rate_limit_burst: burst,
            ..Settings::default()
        })
    }

    #[test]
    fn a_bucket_empties_then_refuses_with_a_wait() {
        let l = limiter(0.5, 3);
        assert_eq!(l.policy_header(), "\"default\";q=3;w=6");
        let a = l.take("k").unwrap();
        assert_eq!((a.remaining, a.retry_after_secs), (2, None));
        assert_eq!(a.reset_secs, 2);
        l.take("k");
        l.take("k");
        let refused = l.take("k").unwrap();
        assert_eq!(refused.remaining, 0);
        assert_eq!(refused.retry_after_secs, Some(2));
        assert_eq!(refused.reset_secs, 2);
        assert_eq!(l.wait_for("k", 1), Some(2));
        assert_eq!(l.wait_for("k", 2), Some(4));
        // Another key has its own bucket; peeking spends nothing.
        assert_eq!(l.wait_for("other", 3), None);
        assert_eq!(l.peek("other").unwrap().remaining, 3);
        assert_eq!(l.take("other").unwrap().remaining, 2);
        assert_eq!(l.peek("other").unwrap().remaining, 2);
    }

    #[test]
    fn kept_header_values_say_what_formatting_would() {
        let l = limiter(50.0, 100);
        assert_eq!(l.values.len(), 101 * 3);
        let mut resp = Response::no_content();
        for remaining in [0, 1, 57, 100, 101, 5000] {
            for reset_secs in [0, 1, 2, 3, 60] {
                let q = Quota {
                    remaining,
                    reset_secs,
                    retry_after_secs: None,
                };
                // Twice: made, then shared.
                for _ in 0..2 {
                    l.set_headers(&q, &mut resp);
                    assert_eq!(
                        resp.headers["ratelimit"],
                        format!("\"default\";r={remaining};t={reset_secs}")
                    );
                    assert_eq!(resp.headers["ratelimit-policy"], "\"default\";q=100;w=2");
                }
            }
        }
        // A policy with more values than are kept formats each one.
        let wide = limiter(0.001, 100_000);
        assert!(wide.values.is_empty());
        wide.set_headers(&wide.take("k").unwrap(), &mut resp);
        assert!(resp.headers["ratelimit"]
            .to_str()
            .unwrap()
            .starts_with("\"default\";r=99999;t="));
    }

    #[test]
    fn zero_turns_it_off() {
        assert!(limiter(0.0, 10).take("k").is_none());
        assert!(limiter(10.0, 0).take("k").is_none());
        assert!(limiter(0.0, 10).peek("k").is_none());
    }

    #[test]
    fn full_buckets_are_swept_so_many_keys_do_not_grow_memory() {
        // A fast refill: every bucket is full again almost at once.
        let l = limiter(1e9, 1);
        for i in 0..(SHARDS * SHARD_CAPACITY * 4) {
            l.take(&format!("key_{i}"));
        }
        assert!(l.len() <= SHARDS * (SHARD_CAPACITY + 1), "{}", l.len());
    }
}
