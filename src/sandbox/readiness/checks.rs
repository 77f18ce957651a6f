//! The readiness checks: each a precise rule over the journal (oldest entry first) and the kept
//! drills, answering `pass`, `fail` or `not_observed` with the request (or drill) ids that show
//! it. Client pacing is judged on the wall clock (`wall_ms`), which no sandbox clock control
//! moves; key rotations on the sandbox clock, where their grace periods run. README "Going live:
//! the readiness report" states every rule as written here.

use super::{Check, Inputs, Status};
use crate::sandbox::drills::Drill;
use crate::sandbox::journal::store::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Evidence ids listed per check at most. (Ordered maps throughout: a report is the same every
/// time it is read.)
const EVIDENCE_MAX: usize = 20;
/// More `401`s than this within one minute are a storm.
pub const STORM_401_PER_MINUTE: usize = 10;
/// The shortest wait after a 5xx that is not hammering (milliseconds).
pub const MIN_RETRY_GAP_MS: i64 = 100;
/// First pages of one list, by one key, in one minute, beyond which it is polling.
pub const POLLS_PER_MINUTE: usize = 30;
/// How long after a failed create a request with the same body counts as its retry.
pub const RETRY_WINDOW_MS: i64 = 10 * 60 * 1000;
/// A 2xx from a receiver must come within this (milliseconds).
pub const FAST_MS: i64 = 5_000;

struct Finding {
    evidence: Vec<String>,
    observed: bool,
}

impl Finding {
    fn new() -> Finding {
        Finding {
            evidence: Vec::new(),
            observed: false,
        }
    }
    fn fail(&mut self, ids: &[&str]) {
        self.observed = true;
        for id in ids {
            if self.evidence.len() < EVIDENCE_MAX && !self.evidence.iter().any(|e| e == id) {
                self.evidence.push((*id).to_string());
            }
        }
    }
    fn check(
        self,
        id: &'static str,
        title: &'static str,
        required: bool,
        rule: &'static str,
        advice: &'static str,
    ) -> Check {
        let status = if !self.evidence.is_empty() {
            Status::Fail
        } else if self.observed {
            Status::Pass
        } else {
            Status::NotObserved
        };
        Check {
            id,
            title,
            status,
            required,
            rule,
            evidence: self.evidence,
            advice: if status == Status::Pass {
                String::new()
            } else {
                advice.to_string()
            },
        }
    }
}

/// A key and an operation: the requests a retry, a walk or a poll is made of.
type Thread<'a> = (Option<&'a str>, Option<&'a str>);

fn same_thread(a: &Entry, b: &Entry) -> bool {
    a.key_id == b.key_id && a.operation_id == b.operation_id && a.operation_id.is_some()
}

/// The entry that follows `i` for the same key and operation.
fn next_of(entries: &[Entry], i: usize) -> Option<&Entry> {
    entries[i + 1..]
        .iter()
        .find(|e| same_thread(&entries[i], e))
}

pub fn authenticates_every_request(x: &Inputs) -> Check {
    let mut f = Finding::new();
    let mut succeeded = false;
    for e in &x.entries {
        if e.credentials != "none" && e.status < 400 {
            succeeded = true;
            f.observed = true;
        } else if e.credentials == "none" && succeeded {
            f.fail(&[&e.request_id]);
        }
    }
    let failures: Vec<&Entry> = x.entries.iter().filter(|e| e.status == 401).collect();
    for (i, first) in failures.iter().enumerate() {
        let window: Vec<&&Entry> = failures[i..]
            .iter()
            .take_while(|e| e.wall_ms < first.wall_ms + 60_000)
            .collect();
        if window.len() > STORM_401_PER_MINUTE {
            let ids: Vec<&str> = window.iter().map(|e| e.request_id.as_str()).collect();
            f.fail(&ids);
            break;
        }
    }
    f.check(
        "authenticates_every_request",
        "Authenticates every request",
        true,
        "Fails when, after the first request answered below 400 with a credential, a request arrives with no credential at all; or when more than 10 requests are answered 401 within any 60 seconds (a 401 storm). Passes once a credentialed request succeeded without either.",
        "Send the credential (`X-API-KEY` and `X-Service-Client-Id`, or `Authorization: Bearer`) on every request, and stop retrying when the answer is 401: a refused credential does not get better by repetition.",
    )
}

pub fn retry_after_respected(x: &Inputs) -> Check {
    let mut f = Finding::new();
    for (i, e) in x.entries.iter().enumerate() {
        let (429 | 503) = e.status else { continue };
        let Some(secs) = e.retry_after else { continue };
        f.observed = true;
        if let Some(next) = next_of(&x.entries, i) {
            if next.wall_ms < e.wall_ms + i64::from(secs) * 1000 {
                f.fail(&[&e.request_id, &next.request_id]);
            }
        }
    }
    f.check(
        "retry_after_respected",
        "Respects Retry-After",
        true,
        "For every answer 429 or 503 carrying `Retry-After: s`, the next request of the same operation by the same key starts no sooner than s seconds after the refused one started (wall clock). Not observed until such an answer was given.",
        "On 429 and 503, read `Retry-After` and wait at least that many seconds before sending that request again.",
    )
}

pub fn backs_off_on_5xx(x: &Inputs) -> Check {
    let mut f = Finding::new();
    // Per key and operation: the gap before each retry that followed a 5xx.
    let mut last_gap: BTreeMap<Thread<'_>, i64> = BTreeMap::new();
    for (i, e) in x.entries.iter().enumerate() {
        let thread = (e.key_id.as_deref(), e.operation_id.as_deref());
        if e.status < 500 {
            last_gap.remove(&thread);
            continue;
        }
        let Some(next) = next_of(&x.entries, i) else {
            continue;
        };
        f.observed = true;
        let gap = next.wall_ms - e.wall_ms;
        let shrinking = last_gap
            .get(&thread)
            .is_some_and(|&prev| gap * 10 < prev * 9);
        if gap < MIN_RETRY_GAP_MS || shrinking {
            f.fail(&[&e.request_id, &next.request_id]);
        }
        last_gap.insert(thread, gap);
    }
    f.check(
        "backs_off_on_5xx",
        "Backs off on 5xx",
        true,
        "After an answer of 500 or more, the next request of the same operation by the same key starts at least 100 ms later; and while the answers stay 5xx, each wait is at least as long as the one before (10 % tolerance for jitter). Not observed until a 5xx was followed by a retry.",
        "Retry 5xx answers with exponential back-off (and jitter), never in a tight loop.",
    )
}

fn failed_attempt(e: &Entry) -> bool {
    e.status >= 500 || e.status == 429 || e.status == 408 || e.fault.is_some()
}

pub fn idempotency_keys_on_create(x: &Inputs) -> Check {
    let mut f = Finding::new();
    let creates: Vec<&Entry> = x
        .entries
        .iter()
        .filter(|e| e.creates && e.method == "POST" && e.via == "rest")
        .collect();
    for (i, e) in creates.iter().enumerate() {
        f.observed = true;
        if e.idempotency_key.is_none() {
            f.fail(&[&e.request_id]);
        }
        if !failed_attempt(e) {
            continue;
        }
        let retry = creates[i + 1..].iter().find(|r| {
            r.key_id == e.key_id
                && r.operation_id == e.operation_id
                && r.body == e.body
                && r.wall_ms - e.wall_ms <= RETRY_WINDOW_MS
        });
        if let Some(r) = retry {
            if r.idempotency_key != e.idempotency_key || r.idempotency_key.is_none() {
                f.fail(&[&e.request_id, &r.request_id]);
            }
        }
    }
    f.check(
        "idempotency_keys_on_create",
        "Idempotency keys on every create",
        true,
        "Every REST POST to an operation that creates (answers 201) carries `Idempotency-Key`; and when such a request failed (5xx, 429, 408 or an injected fault, a delay included), the next one of the same operation by the same key with the same body within 10 minutes (its retry) carries the very same key. Not observed until a create was sent.",
        "Send a fresh `Idempotency-Key` with every create, and reuse it, unchanged, on every retry of that create (after an error or a timeout), so a retry never creates twice.",
    )
}

fn query_str<'a>(e: &'a Entry, name: &str) -> Option<&'a str> {
    e.query
        .as_ref()
        .and_then(|q| q.get(name))
        .and_then(|v| v.as_str())
}

fn limit_of(e: &Entry) -> i64 {
    query_str(e, "limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(20)
}

pub fn pagination_walked(x: &Inputs) -> Check {
    let mut f = Finding::new();
    let lists: Vec<&Entry> = x
        .entries
        .iter()
        .filter(|e| e.list && e.status == 200)
        .collect();
    let followed: HashSet<(Option<&str>, Option<&str>, &str)> = lists
        .iter()
        .filter_map(|e| {
            query_str(e, "cursor").map(|c| (e.key_id.as_deref(), e.operation_id.as_deref(), c))
        })
        .collect();
    // Per key and operation: pages that had more, and whether any was followed.
    let mut walks: BTreeMap<Thread<'_>, (Vec<&str>, bool)> = BTreeMap::new();
    for (i, e) in lists.iter().enumerate() {
        let Some(cursor) = &e.next_cursor else {
            continue;
        };
        f.observed = true;
        let thread = (e.key_id.as_deref(), e.operation_id.as_deref());
        let walk = walks.entry(thread).or_insert((Vec::new(), false));
        walk.0.push(&e.request_id);
        walk.1 |= followed.contains(&(thread.0, thread.1, cursor.as_str()));
        // Asking the same list again, without a cursor and for more, instead of following it.
        let bigger = lists[i + 1..].iter().find(|r| {
            r.key_id == e.key_id
                && r.operation_id == e.operation_id
                && query_str(r, "cursor").is_none()
                && r.wall_ms - e.wall_ms <= 60_000
                && limit_of(r) > limit_of(e)
        });
        if let Some(r) = bigger {
            f.fail(&[&e.request_id, &r.request_id]);
        }
    }
    for (pages, was_followed) in walks.values() {
        if !was_followed {
            f.fail(pages);
        }
    }
    f.check(
        "pagination_walked",
        "Walks lists by cursor",
        true,
        "For every list operation that answered a page with `has_more: true` to a key, that key later sent one of the `next_cursor`s it was given; and no such page was followed, within 60 seconds, by a request of the same list without a cursor and with a larger `limit`. Not observed until a page with more was served.",
        "Walk a list by passing each page's `next_cursor` as `cursor` until `has_more` is false; never raise `limit` to get everything at once.",
    )
}

pub fn conditional_updates(x: &Inputs) -> Check {
    let mut f = Finding::new();
    for e in x
        .entries
        .iter()
        .filter(|e| e.method == "PATCH" && e.via == "rest")
    {
        f.observed = true;
        if !e.if_match {
            f.fail(&[&e.request_id]);
        }
    }
    f.check(
        "conditional_updates",
        "Conditional updates (If-Match)",
        false,
        "Every REST PATCH carries `If-Match` (the `ETag` of the version it changes). Recommended, not required. Not observed until a PATCH was sent.",
        "Send `If-Match` with the `ETag` you read, so a concurrent change is a 412 instead of a silent overwrite.",
    )
}

/// The newest drill of `kind` against each webhook.
fn latest<'a>(drills: &'a [Drill], kind: &str) -> Vec<&'a Drill> {
    let mut by_hook: HashMap<&str, &Drill> = HashMap::new();
    for d in drills.iter().filter(|d| d.kind == kind) {
        by_hook.insert(&d.webhook_id, d);
    }
    let mut out: Vec<&Drill> = by_hook.into_values().collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

fn drill_check(x: &Inputs, kind: &str) -> Finding {
    let mut f = Finding::new();
    for d in latest(&x.drills, kind) {
        f.observed = true;
        if d.verdict != "pass" {
            f.fail(&[&d.id]);
        }
    }
    f
}

pub fn webhook_checks(x: &Inputs) -> Vec<Check> {
    vec![
        drill_check(x, "bad_signature").check(
            "webhook_signatures_verified",
            "Webhook signatures verified",
            true,
            "The newest `bad_signature` drill against each of the account's webhooks passed: a delivery signed with a wrong secret was refused with a 4xx. Not observed until one ran.",
            "Verify `webhook-signature` (HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` with the secret) on every delivery, with a constant-time comparison, and answer 4xx when it does not match.",
        ),
        drill_check(x, "stale_timestamp").check(
            "webhook_stale_timestamp_rejected",
            "Stale webhook timestamps rejected",
            true,
            "The newest `stale_timestamp` drill against each of the account's webhooks passed: a correctly signed delivery whose `webhook-timestamp` is 10 minutes old was refused with a 4xx. Not observed until one ran.",
            "Refuse deliveries whose `webhook-timestamp` is more than 5 minutes from your clock (a replayed delivery).",
        ),
        drill_check(x, "duplicate").check(
            "webhook_duplicates_tolerated",
            "Duplicate webhook deliveries tolerated",
            true,
            "The newest `duplicate` drill against each of the account's webhooks passed: the same `webhook-id` delivered twice was answered 2xx both times. Not observed until one ran.",
            "Deduplicate by `webhook-id`: answer 2xx to a delivery you already processed, without processing it again.",
        ),
        drill_check(x, "out_of_order").check(
            "webhook_out_of_order_tolerated",
            "Out-of-order webhook deliveries tolerated",
            true,
            "The newest `out_of_order` drill against each of the account's webhooks passed: two events of one object, the newer first, were both answered 2xx. Not observed until one ran.",
            "Order events by their `timestamp` (or re-read the object), not by arrival; accept an older event after a newer one.",
        ),
        drill_check(x, "rotation").check(
            "webhook_rotation_accepted",
            "Webhook secret rotation accepted",
            true,
            "The newest `rotation` drill against each of the account's webhooks passed: during a rotation's grace period, a delivery signed with the new and the old secret (two signatures) was answered 2xx. Not observed until one ran.",
            "Accept a delivery when any of the space-separated signatures in `webhook-signature` verifies, and switch to the new secret when you rotate.",
        ),
        webhook_responds_fast(x),
    ]
}

fn webhook_responds_fast(x: &Inputs) -> Check {
    let mut f = Finding::new();
    for kind in crate::sandbox::drills::KINDS {
        for d in latest(&x.drills, kind) {
            for a in d.attempts.iter().filter(|a| a.expected == "2xx") {
                f.observed = true;
                let ok =
                    a.status.is_some_and(|s| (200..300).contains(&s)) && a.latency_ms <= FAST_MS;
                if !ok {
                    f.fail(&[&d.id]);
                }
            }
        }
    }
    f.check(
        "webhook_responds_fast",
        "Webhook receiver answers fast",
        true,
        "Every delivery of the newest drills that should be accepted was answered 2xx within 5 seconds. Not observed until a drill ran.",
        "Answer 2xx as soon as the delivery is verified and stored; do the work afterwards (a queue), so slow work never makes the delivery time out.",
    )
}

pub fn rotated_key_adopted(x: &Inputs) -> Check {
    let mut f = Finding::new();
    for r in &x.rotations {
        if x.key
            .as_deref()
            .is_some_and(|k| k != r.old_key && k != r.new_key)
        {
            continue;
        }
        let grace_end_ms = r.grace_end * 1000;
        let adopted = x.all_entries.iter().any(|e| {
            e.key_id.as_deref() == Some(&r.new_key) && e.status != 401 && e.at_ms < grace_end_ms
        });
        let late_old: Vec<&str> = x
            .all_entries
            .iter()
            .filter(|e| e.key_id.as_deref() == Some(&r.old_key) && e.at_ms >= grace_end_ms)
            .map(|e| e.request_id.as_str())
            .collect();
        if !late_old.is_empty() {
            f.fail(&late_old);
        } else if adopted {
            f.observed = true;
        } else if x.now_ms >= grace_end_ms {
            f.fail(&[&r.old_key]);
        }
    }
    f.check(
        "rotated_key_adopted",
        "Rotated API keys adopted in time",
        true,
        "For every rotated API key of the account (`POST /api-keys/{id}/rotate`): the new key was used (an answer other than 401) before the grace period ended (sandbox clock), and the old key was not used after it. Fails with the old key's late requests, or with the old key's id when the grace period ended unused; not observed while a grace period runs and the new key is unused, or when no key was rotated.",
        "After rotating a key, deploy the new key before the grace period ends; the old one stops working then.",
    )
}

pub fn polling_reasonable(x: &Inputs) -> Check {
    let mut f = Finding::new();
    let mut polls: BTreeMap<Thread<'_>, Vec<&Entry>> = BTreeMap::new();
    for e in x.entries.iter().filter(|e| e.list && e.method == "GET") {
        f.observed = true;
        let watched = e
            .route
            .as_deref()
            .and_then(|r| r.trim_start_matches('/').split('/').next())
            .and_then(crate::areas::Area::of_path_segment)
            .is_some_and(|a| !a.spec().events.is_empty());
        if watched && query_str(e, "cursor").is_none() {
            polls
                .entry((e.key_id.as_deref(), e.operation_id.as_deref()))
                .or_default()
                .push(e);
        }
    }
    for list in polls.values() {
        for (i, first) in list.iter().enumerate() {
            let window: Vec<&str> = list[i..]
                .iter()
                .take_while(|e| e.wall_ms < first.wall_ms + 60_000)
                .map(|e| e.request_id.as_str())
                .collect();
            if window.len() > POLLS_PER_MINUTE {
                f.fail(&window);
                break;
            }
        }
    }
    f.check(
        "polling_reasonable",
        "Polls reasonably",
        true,
        "No key requests the first page (no `cursor`) of a list whose changes a webhook event announces (devices, ads, promotions, companies, media, billing, tokens, webhooks) more than 30 times within any 60 seconds. Not observed until a list was read.",
        "Subscribe a webhook to the events of what you watch instead of polling its list; poll at most every few seconds if you must.",
    )
}
