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
/// A run of back-off waits grows when a wait is at least twice an earlier one, allowing this
/// much per-request overhead (the answer's and the retry's travel, the client's own work: a
/// client that sleeps exactly 1 s then 2 s is measured at 1.15 s then 2.15 s over a 150 ms path, a
/// ratio of 1.87)...
pub const OVERHEAD_MS: f64 = 250.0;
/// ...and at least this much longer (milliseconds), and longer by half of the earlier one less
/// [`OVERHEAD_MS`]: overhead alone never makes a constant pace of a second look like growth.
pub const GROWTH_MIN_MS: f64 = 100.0;
/// A long wait grows too when it is this share of an earlier one and [`GROWTH_LONG_MS`] longer:
/// a client's own noise on the first wait (got adds up to 100 ms to each: 1.17 s then 2.02 s)
/// hides a doubling that no constant pace comes near.
pub const GROWTH_LONG_RATIO: f64 = 1.7;
pub const GROWTH_LONG_MS: f64 = 500.0;
/// Waits needed before a flat run can fail.
pub const MIN_WAITS_FLAT: usize = 3;
/// Flat: the longest wait is at most the shortest plus the larger of [`FLAT_SLACK_MS`] and
/// [`FLAT_SHARE`] of it: a constant pace measured through per-request noise. A jittered back-off
/// (stamina's 0.1 s · 2ⁿ plus up to 1 s) spreads wider than that on all but the rarest draws.
pub const FLAT_SLACK_MS: f64 = 50.0;
pub const FLAT_SHARE: f64 = 0.05;
/// Shrinking: at least [`MIN_WAITS_SHRINKING`] waits, each at most this share of the one before
/// (three can shrink by chance under full jitter: 968, 284, 113 ms).
pub const SHRINK_FACTOR: f64 = 0.9;
pub const MIN_WAITS_SHRINKING: usize = 4;
/// Hammering: at least [`MIN_WAITS_TO_HAMMER`] waits, none longer than this (milliseconds).
pub const HAMMER_MS: f64 = 50.0;
pub const MIN_WAITS_TO_HAMMER: usize = 4;
/// `Retry-After` shows the client read it only when it is at least this many seconds (1 s and
/// 2 s are the first waits of got, p-retry and fetch-retry's README, told or not)...
pub const TELLING_MIN_SECS: u32 = 3;
/// ...and the retry came within this long after the time it named: a later retry may be the
/// client's own back-off (got's and p-retry's 4 s) rather than the header.
pub const TELLING_SLACK_MS: i64 = 1000;

/// Who sends a request, for retries: the API client (all its keys), else the key or user.
pub fn sender(e: &Entry) -> Option<&str> {
    e.client_id.as_deref().or(e.key_id.as_deref())
}

/// A request that did not get a usable answer, from its client's side: a 5xx, 429 or 408, one an
/// injected fault answered or held back (a client that timed out retries it), or one whose
/// client closed the connection before its answer was written (it timed out: whatever the
/// status, it never read it).
pub fn failed(e: &Entry) -> bool {
    e.status >= 500 || e.status == 429 || e.status == 408 || e.fault.is_some() || e.client_closed
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
    let (mut refused, mut untold) = (false, false);
    for (i, e) in x.entries.iter().enumerate() {
        let (429 | 503) = e.status else { continue };
        let Some(secs) = e.retry_after else { continue };
        refused = true;
        let Some(j) = r.of[i] else { continue };
        let retry = &x.entries[j];
        let told_ms = i64::from(secs) * 1000;
        let waited = retry.wall_ms - e.wall_ms;
        if waited < told_ms {
            f.fail_entries(&[e, retry]);
        } else if secs >= TELLING_MIN_SECS && waited < told_ms + TELLING_SLACK_MS {
            f.pass_entries(&[e, retry]);
        } else {
            // Waited long enough, but a client that never reads the header would have too.
            untold = true;
        }
    }
    f.unobserved_because(if untold {
        "answers with `Retry-After` were waited out, but the evidence cannot tell a client that read the header from one that waited its own default: `Retry-After` was under 3 s (1 s and 2 s are the first waits of many retry libraries), or the retry came a second or more after the time it named. Inject a 429 or 503 with `retry_after` 3 (`POST /_sandbox/faults`) and let the client retry."
    } else if refused {
        "answers with `Retry-After` were given, but none was retried (a retry is the same `Idempotency-Key`, or the same request, from the same API client)."
    } else {
        "no 429 or 503 with `Retry-After` was answered. Inject one (`POST /_sandbox/faults`, action `status` with `retry_after` 3) and let the client retry."
    });
    f
}

pub const RETRY_AFTER: Texts = Texts {
    id: "retry_after_respected",
    title: "Respects Retry-After",
    required: true,
    rule: "For every answer 429 or 503 carrying `Retry-After: s`, its retry (the next request of the same API client, any of its keys, and the same operation, within 10 minutes, with the same `Idempotency-Key` or the same request: method, path, query and body, timestamps set aside) starts no sooner than s seconds after the refused request started (wall clock), else the check fails. It passes on a retry that shows the client read the header: s is 3 or more (no retry library's own first waits, 0 to 2 s, come to it) and the retry started within 1 s after the s seconds. A retry that waited long enough otherwise (s of 1 or 2, or a retry much later) shows nothing either way: a client that ignores the header would have waited as long. Another request of the same operation is not a retry. Not observed until a refused request was retried so.",
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

/// What a run of waits shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trend {
    /// A wait at least twice an earlier one (overhead allowed): back-off.
    Grows,
    /// A pace no back-off policy produces: flat, shrinking or a tight loop.
    Steady,
    /// Too few waits, or jitter that hides the trend.
    Unclear,
}

/// A run's trend. `Grows` when a wait, plus [`OVERHEAD_MS`], is at least twice an earlier one,
/// and longer than it by at least 100 ms and half of it less [`OVERHEAD_MS`], or at least 1.7
/// times an earlier one and 500 ms longer. `Steady` when it has at least 3
/// waits and is flat (the longest at most the shortest plus the larger of 50 ms and 5 % of it),
/// at least 4 each at most 0.9 times the one before (shrinking), or at least 4 none longer than
/// 50 ms (a tight loop, whatever the noise). `Unclear` otherwise.
pub fn trend(waits: &[f64]) -> Trend {
    let grows = waits.iter().enumerate().any(|(j, &later)| {
        waits[..j].iter().any(|&earlier| {
            (later + OVERHEAD_MS >= 2.0 * earlier
                && later - earlier >= GROWTH_MIN_MS.max((earlier - OVERHEAD_MS) / 2.0))
                || (later >= GROWTH_LONG_RATIO * earlier && later - earlier >= GROWTH_LONG_MS)
        })
    });
    if grows {
        return Trend::Grows;
    }
    let longest = waits.iter().copied().fold(0.0, f64::max);
    let shortest = waits.iter().copied().fold(f64::INFINITY, f64::min);
    let flat = waits.len() >= MIN_WAITS_FLAT
        && longest <= shortest + FLAT_SLACK_MS.max(FLAT_SHARE * shortest);
    let shrinking = waits.len() >= MIN_WAITS_SHRINKING
        && waits.windows(2).all(|w| w[1] <= SHRINK_FACTOR * w[0]);
    let hammering = waits.len() >= MIN_WAITS_TO_HAMMER && longest <= HAMMER_MS;
    if flat || shrinking || hammering {
        Trend::Steady
    } else {
        Trend::Unclear
    }
}

pub fn backs_off_on_5xx(x: &Inputs, r: &Retries) -> Finding {
    let mut f = Finding::new();
    let all = chains(x, r);
    // A client is judged on all its runs together: one run that grows shows its policy backs
    // off (a jittered one may draw a flat or shrinking run now and then); it fails only when
    // none grows and one is steady.
    let mut by_client: HashMap<Option<&str>, Vec<(&Chain<'_>, Trend)>> = HashMap::new();
    for chain in &all {
        by_client
            .entry(sender(chain.requests[0]))
            .or_default()
            .push((chain, trend(&chain.waits)));
    }
    let mut clients: Vec<_> = by_client.into_iter().collect();
    clients.sort_by_key(|(c, _)| *c);
    for (_, runs) in &clients {
        let grows = runs.iter().any(|(_, t)| *t == Trend::Grows);
        for (chain, t) in runs {
            match (grows, t) {
                (true, Trend::Grows) => f.pass_entries(&chain.requests),
                (false, Trend::Steady) => f.fail_entries(&chain.requests),
                _ => {}
            }
        }
    }
    f.unobserved_because(if all.is_empty() {
        "no 5xx answer (without `Retry-After`) was retried. Inject one that fails several times (`POST /_sandbox/faults`, action `status` 500 or 503, `times` 4) and let the client retry.".to_string()
    } else {
        let most = all.iter().map(|c| c.waits.len()).max().unwrap_or(0);
        format!("5xx answers were retried (at most {most} times in a row), but no wait was yet twice an earlier one, and no run was flat (3 waits or more), shrinking or a tight loop (4 or more): too few retries to tell back-off from jitter. Inject a fault with `times` 4 or more.")
    });
    f
}

pub const BACKOFF: Texts = Texts {
    id: "backs_off_on_5xx",
    title: "Backs off on 5xx",
    required: true,
    rule: "The waits of every run of retries after 5xx answers without `Retry-After` (each wait from an answer to the start of its retry, wall clock; a retry as `retry_after_respected` defines it) are judged on their trend, all runs of an API client together. A run grows when a wait, plus 250 ms of per-request overhead, is at least twice an earlier one, and longer than it by at least 100 ms and by half of it less 250 ms (1 s then 2 s measured as 1.15 s and 2.15 s grows, so does 0.2 s then 0.4 s measured through 100 ms of noise; jitter tolerated), or is at least 1.7 times an earlier one and 500 ms longer (1.17 s then 2.02 s, a client's own noise on its first wait). A run is steady when it has at least 3 waits and is flat (the longest at most the shortest plus the larger of 50 ms and 5 % of it), or at least 4 waits each at most 0.9 times the one before (shrinking) or none longer than 50 ms (a tight loop). A client passes when one of its runs grows; it fails when none grows and one is steady (a jittered back-off may draw one flat or shrinking run, never only such runs); else it is not observed (too few retries to tell).",
    advice: "Retry 5xx answers with exponential back-off (full or equal jitter is fine: the trend of the waits must grow), never at a constant or shrinking pace.",
};

/// An answer a client should retry: 408, 429, 500, 502, 503 or 504.
fn transient(e: &Entry) -> bool {
    matches!(e.status, 408 | 429 | 500 | 502 | 503 | 504)
}

/// A request safe to send again: an idempotent method, or one that carries `Idempotency-Key`.
fn safe_to_repeat(e: &Entry) -> bool {
    e.idempotency_key.is_some() || matches!(e.method.as_str(), "GET" | "HEAD" | "PUT" | "DELETE")
}

pub fn retries_transient_errors(x: &Inputs, r: &Retries) -> Finding {
    let mut f = Finding::new();
    let mut seen = false;
    for (i, e) in x.entries.iter().enumerate() {
        if e.via != "rest" || !transient(e) || !safe_to_repeat(e) {
            continue;
        }
        let Some(op) = e.operation_id.as_deref() else {
            continue;
        };
        seen = true;
        if let Some(j) = r.of[i] {
            f.pass_entries(&[e, &x.entries[j]]);
            continue;
        }
        // Not retried (yet): given up when the client went on to another request of that
        // operation (the next list, the next create), or the retry window passed.
        let moved_on = x.entries[i + 1..]
            .iter()
            .find(|n| sender(n) == sender(e) && n.operation_id.as_deref() == Some(op));
        if let Some(next) = moved_on {
            f.fail_entries(&[e, next]);
        } else if x.wall_ms - e.wall_ms > RETRY_WINDOW_MS {
            f.fail_entries(&[e]);
        } else {
            f.pending(
                "a transient error is not retried yet, and its client has sent no other request of that operation since.".to_string(),
                &[e.request_id.as_str()],
            );
        }
    }
    if !seen {
        f.unobserved_because("no 408, 429, 500, 502, 503 or 504 answered a request safe to repeat (GET, HEAD, PUT, DELETE, or one with `Idempotency-Key`). Inject one (`POST /_sandbox/faults`, action `status` 503) on a create the client sends with its key, and on a list.");
    }
    f
}

pub const TRANSIENT: Texts = Texts {
    id: "retries_transient_errors",
    title: "Retries transient errors",
    required: true,
    rule: "Every REST request safe to repeat (GET, HEAD, PUT or DELETE, or any request with `Idempotency-Key`) answered 408, 429, 500, 502, 503 or 504 is retried (a retry as `retry_after_respected` defines it). It fails when the client gave such a request up: it sent another request of that operation that is not its retry (the next list, the next create: the one that failed is lost), or 10 minutes passed without a retry. Passes when such a request was retried; not observed until one was answered so, or while one waits for its retry and the client sent nothing else of that operation.",
    advice: "Retry 408, 429 and 5xx answers of requests that are safe to repeat (reads, and creates with their `Idempotency-Key`): most retry libraries retry no POST at their defaults (urllib3, axios-retry, got, ky), and some retry only connection errors (httpx's transport). Add POST for requests you send with a key, and these statuses.",
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
        f.unobserved_because(
            "no REST create (a POST that answers 201 and honours `Idempotency-Key`) was sent.",
        );
    }
    f
}

pub const IDEMPOTENCY: Texts = Texts {
    id: "idempotency_keys_on_create",
    title: "Idempotency keys on every create",
    required: true,
    rule: "Every REST POST to an operation that creates (answers 201 and honours `Idempotency-Key`: a key rotation, which can happen once, and a sign-in link or a sandbox control, which honour no key, are not creates) carries `Idempotency-Key`; and when such a request failed (5xx, 429, 408 or an injected fault, a delay included: the client may have timed out while the write applied), its retry (the next request of the same API client and operation within 10 minutes with the same key or the same request: method, path, query and body, timestamps set aside) carries the very same key. Not observed until a create was sent.",
    advice: "Send a fresh `Idempotency-Key` with every create, and reuse it, unchanged, on every retry of that create (after an error or a timeout, from any worker or key), so a retry never creates twice; build the retry from the first attempt, not anew.",
};

#[cfg(test)]
mod tests {
    use super::{trend, Trend};

    #[test]
    fn the_trend_of_waits_tells_back_off_from_a_constant_pace() {
        use Trend::*;
        // Growth, whatever the jitter.
        assert_eq!(trend(&[80.0, 30.0, 350.0]), Grows);
        assert_eq!(trend(&[1000.0, 2000.0]), Grows);
        // got (1 s, 2 s), ky (300, 600 ms) and 0.2, 0.4 s measured through 70 to 150 ms of
        // overhead: a ratio under 2.
        assert_eq!(trend(&[1070.0, 2000.0]), Grows);
        assert_eq!(trend(&[1150.0, 2150.0]), Grows);
        assert_eq!(trend(&[450.0, 750.0]), Grows);
        assert_eq!(trend(&[350.0, 550.0]), Grows);
        // Flat, shrinking, a tight loop.
        assert_eq!(trend(&[150.0, 152.0, 149.0, 151.0, 150.0]), Steady);
        assert_eq!(trend(&[1000.0, 1030.0, 1010.0]), Steady);
        assert_eq!(trend(&[800.0, 400.0, 200.0, 100.0]), Steady);
        assert_eq!(trend(&[1.0, 3.0, 0.0, 2.0]), Steady);
        // A tight loop on a loaded machine: noisy, but never 50 ms.
        assert_eq!(trend(&[11.0, 3.0, 6.0, 40.0]), Steady);
        // A constant pace with overhead noise is no growth.
        assert_eq!(trend(&[400.0, 520.0]), Unclear);
        // 0.2 s then 0.4 s, the first wait measured through 100 ms of a loaded machine's noise.
        assert_eq!(trend(&[320.0, 420.0]), Grows);
        assert_eq!(trend(&[1000.0, 1250.0]), Unclear);
        // got's defaults measured: 1 s then 2 s, each with up to 100 ms of its own noise.
        assert_eq!(trend(&[1168.0, 2022.0]), Grows);
        assert_eq!(trend(&[1183.0, 2036.0]), Grows);
        assert_eq!(trend(&[1000.0, 1600.0]), Unclear);
        // Too few to tell.
        assert_eq!(trend(&[150.0, 150.0]), Unclear);
        assert_eq!(trend(&[300.0, 2.0]), Unclear);
        // stamina's defaults (0.1 s · 2ⁿ plus up to 1 s) and full jitter's three shrinking
        // draws: a correct policy, never steady.
        assert_eq!(trend(&[988.0, 1036.0, 888.0, 1072.0]), Unclear);
        assert_eq!(trend(&[968.0, 284.0, 113.0]), Unclear);
        // Jitter around a constant.
        assert_eq!(trend(&[1000.0, 1300.0, 800.0, 1200.0]), Unclear);
    }

    /// stamina's default waits, simulated over many seeds: a run is never judged steady more
    /// than rarely, and the growth shows across runs.
    #[test]
    fn stamina_defaults_are_almost_never_steady() {
        let mut state = 0x5eed_u64;
        let mut uniform = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let runs = 100_000;
        let steady = (0..runs)
            .filter(|_| {
                let waits: Vec<f64> = (0..4)
                    .map(|n| 100.0 * f64::from(1u32 << n) + 1000.0 * uniform() + 5.0)
                    .collect();
                trend(&waits) == Trend::Steady
            })
            .count();
        // Under one run in a thousand (the old rule: one in seventy).
        assert!(steady * 1000 < runs, "{steady} of {runs}");
    }
}
