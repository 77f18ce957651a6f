//! Retries: which request retries which ([`Retries`]), and the three checks that judge them:
//! `retry_after_respected`, `backs_off_on_5xx` and `idempotency_keys_on_create`.
//!
//! A retry is a correlation, not a neighbour. The retry of a failed request is the next request of
//! the same API client (any of its keys; a login's user for a login token) and the same
//! operation, within [`RETRY_WINDOW_MS`], that sent the same `Idempotency-Key` or the same
//! request (the same shape: method, path, query and body, timestamps set aside). Another request
//! of the same operation is not a retry, however soon it follows.

use super::finding::{Finding, Texts};
use super::inputs::Inputs;
use crate::sandbox::journal::store::Entry;
use std::collections::HashMap;

/// How long after a failed request a request can still be its retry.
pub const RETRY_WINDOW_MS: i64 = 10 * 60 * 1000;
/// A back-off chain shows growth when a wait is at least this many times an earlier one...
pub const GROWTH_FACTOR: f64 = 2.0;
/// ...and at least this much longer (milliseconds).
pub const GROWTH_MIN_MS: f64 = 100.0;
/// Waits needed before a chain that does not grow can fail.
pub const MIN_WAITS_TO_FAIL: usize = 3;
/// Flat: the longest wait is at most this times the shortest, plus [`FLAT_SLACK_MS`].
pub const FLAT_FACTOR: f64 = 1.25;
pub const FLAT_SLACK_MS: f64 = 25.0;
/// Shrinking: each wait at most this share of the one before.
pub const SHRINK_FACTOR: f64 = 0.9;
/// Hammering: at least [`MIN_WAITS_TO_HAMMER`] waits, none longer than this (milliseconds).
pub const HAMMER_MS: f64 = 50.0;
pub const MIN_WAITS_TO_HAMMER: usize = 4;

/// Who sends a request, for retries: the API client (all its keys), else the key or user.
pub fn sender(e: &Entry) -> Option<&str> {
    e.client_id.as_deref().or(e.key_id.as_deref())
}

/// A request that did not get a usable answer, from its client's side: a 5xx, 429 or 408, or
/// one an injected fault answered or held back (a client that timed out retries it).
pub fn failed(e: &Entry) -> bool {
    e.status >= 500 || e.status == 429 || e.status == 408 || e.fault.is_some()
}

/// The retry of every failed entry (by index), when there is one.
pub struct Retries {
    pub of: Vec<Option<usize>>,
}

impl Retries {
    pub fn find(entries: &[Entry]) -> Retries {
        // Entries by (sender, operation, key) and (sender, operation, shape), in order.
        type Index<'a> = HashMap<(Option<&'a str>, &'a str, &'a str), Vec<usize>>;
        let (mut by_key, mut by_shape): (Index<'_>, Index<'_>) = Default::default();
        for (i, e) in entries.iter().enumerate() {
            let Some(op) = e.operation_id.as_deref() else {
                continue;
            };
            if let Some(k) = e.idempotency_key.as_deref() {
                by_key.entry((sender(e), op, k)).or_default().push(i);
            }
            if let Some(s) = e.shape.as_deref() {
                by_shape.entry((sender(e), op, s)).or_default().push(i);
            }
        }
        let next_after = |list: Option<&Vec<usize>>, i: usize| {
            list.and_then(|l| {
                let at = l.partition_point(|&j| j <= i);
                l.get(at).copied()
            })
        };
        let of = entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                if !failed(e) {
                    return None;
                }
                let op = e.operation_id.as_deref()?;
                let by_k = e
                    .idempotency_key
                    .as_deref()
                    .and_then(|k| next_after(by_key.get(&(sender(e), op, k)), i));
                let by_s = e
                    .shape
                    .as_deref()
                    .and_then(|s| next_after(by_shape.get(&(sender(e), op, s)), i));
                let j = match (by_k, by_s) {
                    (Some(a), Some(b)) => a.min(b),
                    (a, b) => a.or(b)?,
                };
                (entries[j].wall_ms - e.wall_ms <= RETRY_WINDOW_MS).then_some(j)
            })
            .collect();
        Retries { of }
    }
}

/// When the answer to `e` reached its client (the start plus the time it took).
fn answered_at(e: &Entry) -> f64 {
    e.wall_ms as f64 + e.duration_ms.unwrap_or(0.0)
}

pub fn retry_after_respected(x: &Inputs, r: &Retries) -> Finding {
    let mut f = Finding::new();
    let mut refused = false;
    for (i, e) in x.entries.iter().enumerate() {
        let (429 | 503) = e.status else { continue };
        let Some(secs) = e.retry_after else { continue };
        refused = true;
        let Some(j) = r.of[i] else { continue };
        let retry = &x.entries[j];
        if retry.wall_ms < e.wall_ms + i64::from(secs) * 1000 {
            f.fail_entries(&[e, retry]);
        } else {
            f.pass_entries(&[e, retry]);
        }
    }
    f.unobserved_because(if refused {
        "answers with `Retry-After` were given, but none was retried (a retry is the same `Idempotency-Key`, or the same request, from the same API client)."
    } else {
        "no 429 or 503 with `Retry-After` was answered. Inject one (`POST /_sandbox/faults`, action `status` with `retry_after`) and let the client retry."
    });
    f
}

pub const RETRY_AFTER: Texts = Texts {
    id: "retry_after_respected",
    title: "Respects Retry-After",
    required: true,
    rule: "For every answer 429 or 503 carrying `Retry-After: s`, its retry (the next request of the same API client, any of its keys, and the same operation, within 10 minutes, with the same `Idempotency-Key` or the same request: method, path, query and body, timestamps set aside) starts no sooner than s seconds after the refused request started (wall clock). Passes when such a retry waited; another request of the same operation is not a retry. Not observed until a refused request was retried.",
    advice: "On 429 and 503, read `Retry-After` and wait at least that many seconds before sending that request again, from every worker and key of the client.",
};

/// The waits of one chain of 5xx retries, and its requests.
struct Chain<'a> {
    waits: Vec<f64>,
    requests: Vec<&'a Entry>,
}

/// The chains of retries after 5xx answers without `Retry-After` (that header says how long to
/// wait, so those waits are judged by `retry_after_respected`).
fn chains<'a>(x: &'a Inputs, r: &Retries) -> Vec<Chain<'a>> {
    let backoff_link = |i: usize| {
        let e = &x.entries[i];
        (e.status >= 500 && e.retry_after.is_none())
            .then_some(r.of[i])
            .flatten()
    };
    let mut is_target = vec![false; x.entries.len()];
    for i in 0..x.entries.len() {
        if let Some(j) = backoff_link(i) {
            is_target[j] = true;
        }
    }
    let mut out = Vec::new();
    for (start, &target) in is_target.iter().enumerate() {
        if target || backoff_link(start).is_none() {
            continue;
        }
        let mut chain = Chain {
            waits: Vec::new(),
            requests: vec![&x.entries[start]],
        };
        let mut at = start;
        while let Some(next) = backoff_link(at) {
            let (e, n) = (&x.entries[at], &x.entries[next]);
            chain
                .waits
                .push((n.wall_ms as f64 - answered_at(e)).max(0.0));
            chain.requests.push(n);
            at = next;
        }
        out.push(chain);
    }
    out
}

/// A chain's trend: `Some(true)` when it grows (a wait at least twice an earlier one and 100 ms
/// longer); `Some(false)` when it has at least 3 waits and is flat (the longest at most 1.25 times
/// the shortest plus 25 ms) or shrinking (each at most 0.9 times the one before), or at least 4
/// waits none longer than 50 ms (a tight loop, whatever the noise); `None` otherwise.
pub fn trend(waits: &[f64]) -> Option<bool> {
    let grows = waits.iter().enumerate().any(|(j, &later)| {
        waits[..j]
            .iter()
            .any(|&earlier| later >= GROWTH_FACTOR * earlier && later - earlier >= GROWTH_MIN_MS)
    });
    if grows {
        return Some(true);
    }
    if waits.len() < MIN_WAITS_TO_FAIL {
        return None;
    }
    let longest = waits.iter().copied().fold(0.0, f64::max);
    let shortest = waits.iter().copied().fold(f64::INFINITY, f64::min);
    let flat = longest <= FLAT_FACTOR * shortest + FLAT_SLACK_MS;
    let shrinking = waits.windows(2).all(|w| w[1] <= SHRINK_FACTOR * w[0]);
    let hammering = waits.len() >= MIN_WAITS_TO_HAMMER && longest <= HAMMER_MS;
    (flat || shrinking || hammering).then_some(false)
}

pub fn backs_off_on_5xx(x: &Inputs, r: &Retries) -> Finding {
    let mut f = Finding::new();
    let all = chains(x, r);
    for chain in &all {
        match trend(&chain.waits) {
            Some(true) => f.pass_entries(&chain.requests),
            Some(false) => f.fail_entries(&chain.requests),
            None => {}
        }
    }
    f.unobserved_because(if all.is_empty() {
        "no 5xx answer (without `Retry-After`) was retried. Inject one that fails several times (`POST /_sandbox/faults`, action `status` 500 or 503, `times` 4) and let the client retry.".to_string()
    } else {
        let most = all.iter().map(|c| c.waits.len()).max().unwrap_or(0);
        format!("5xx answers were retried (at most {most} times in a row), but no wait was yet twice an earlier one, and no run of 3 or more waits was flat or shrinking: too few retries to tell back-off from jitter. Inject a fault with `times` 4 or more.")
    });
    f
}

pub const BACKOFF: Texts = Texts {
    id: "backs_off_on_5xx",
    title: "Backs off on 5xx",
    required: true,
    rule: "The waits of every run of retries after 5xx answers without `Retry-After` (each wait from an answer to the start of its retry, wall clock; a retry as `retry_after_respected` defines it) are judged on their trend: the run passes when a wait is at least twice as long as an earlier one and at least 100 ms longer (jitter tolerated); it fails when it has at least 3 waits and they are flat (the longest at most 1.25 times the shortest plus 25 ms) or shrinking (each at most 0.9 times the one before), or at least 4 waits none longer than 50 ms (a tight loop). The check fails when a run fails, else passes when a run passes; else it is not observed (too few retries to tell).",
    advice: "Retry 5xx answers with exponential back-off (full or equal jitter is fine: the trend of the waits must grow), never at a constant or shrinking pace.",
};

pub fn idempotency_keys_on_create(x: &Inputs, r: &Retries) -> Finding {
    let mut f = Finding::new();
    let mut creates = 0;
    for (i, e) in x.entries.iter().enumerate() {
        if !(e.creates && e.method == "POST" && e.via == "rest") {
            continue;
        }
        creates += 1;
        if e.idempotency_key.is_none() {
            f.fail_entries(&[e]);
            continue;
        }
        if let Some(j) = r.of[i] {
            let retry = &x.entries[j];
            if retry.idempotency_key != e.idempotency_key {
                f.fail_entries(&[e, retry]);
                continue;
            }
        }
        f.pass_entries(&[e]);
    }
    if creates == 0 {
        f.unobserved_because("no REST create (a POST answered 201 when it succeeds) was sent.");
    }
    f
}

pub const IDEMPOTENCY: Texts = Texts {
    id: "idempotency_keys_on_create",
    title: "Idempotency keys on every create",
    required: true,
    rule: "Every REST POST to an operation that creates (answers 201; a key rotation, which can happen once, is not one) carries `Idempotency-Key`; and when such a request failed (5xx, 429, 408 or an injected fault, a delay included: the client may have timed out while the write applied), its retry (the next request of the same API client and operation within 10 minutes with the same key or the same request: method, path, query and body, timestamps set aside) carries the very same key. Not observed until a create was sent.",
    advice: "Send a fresh `Idempotency-Key` with every create, and reuse it, unchanged, on every retry of that create (after an error or a timeout, from any worker or key), so a retry never creates twice; build the retry from the first attempt, not anew.",
};

#[cfg(test)]
mod tests {
    use super::trend;

    #[test]
    fn the_trend_of_waits_tells_back_off_from_a_constant_pace() {
        // Growth, whatever the jitter.
        assert_eq!(trend(&[80.0, 30.0, 350.0]), Some(true));
        assert_eq!(trend(&[1000.0, 2000.0]), Some(true));
        // Flat, shrinking, a tight loop: three waits or more.
        assert_eq!(trend(&[150.0, 152.0, 149.0, 151.0, 150.0]), Some(false));
        assert_eq!(trend(&[800.0, 400.0, 200.0]), Some(false));
        assert_eq!(trend(&[1.0, 3.0, 0.0, 2.0]), Some(false));
        // A tight loop on a loaded machine: noisy, but never 50 ms.
        assert_eq!(trend(&[11.0, 3.0, 6.0, 40.0]), Some(false));
        // Too few to tell.
        assert_eq!(trend(&[150.0, 150.0]), None);
        assert_eq!(trend(&[300.0, 2.0]), None);
        // Neither: jitter around a constant.
        assert_eq!(trend(&[1000.0, 1300.0, 800.0, 1200.0]), None);
    }
}
