//! The readiness checks, in the report's order: each a precise rule over the journal (oldest entry
//! first) and the kept drills, answering `pass` on evidence of the behaviour, `fail` on evidence
//! of the misbehaviour, and otherwise `not_observed` saying what is missing. Client pacing is
//! judged on the wall clock (`wall_ms`), which no sandbox clock control moves; key rotations on
//! the sandbox clock, where their grace periods run. The rules live beside their code:
//! [`super::retries`], [`super::lists`], [`super::hooks`] and below; the book states each as
//! written there.
//!
//! Retired: `authenticates_every_request`. Whether a client sent its credential cannot be judged
//! from evidence nobody else can forge: a request without a valid credential proves nothing about
//! whose it is (anyone may send another account's client id or key id), so it belongs to no
//! account and no check reads it. A refused credential that proved itself (its secret matched) is
//! still its holder's, which is what `rotated_key_adopted` judges.

use super::finding::{Finding, Texts};
use super::inputs::Inputs;
use super::report::Check;
use super::{hooks, lists, retries};

/// Every check, in the report's order.
pub fn all(x: &Inputs) -> Vec<Check> {
    let r = retries::Retries::find(&x.entries);
    vec![
        retries::retries_transient_errors(x, &r).check(retries::TRANSIENT),
        retries::retry_after_respected(x, &r).check(retries::RETRY_AFTER),
        retries::backs_off_on_5xx(x, &r).check(retries::BACKOFF),
        retries::idempotency_keys_on_create(x, &r).check(retries::IDEMPOTENCY),
        lists::pagination_walked(x).check(lists::PAGINATION),
        conditional_updates(x).check(CONDITIONAL),
        hooks::signatures(x).check(hooks::SIGNATURES),
        hooks::timestamps(x).check(hooks::TIMESTAMPS),
        hooks::duplicates(x).check(hooks::DUPLICATES),
        hooks::out_of_order(x).check(hooks::OUT_OF_ORDER),
        hooks::rotation(x).check(hooks::ROTATION),
        hooks::responds_fast(x).check(hooks::FAST),
        rotated_key_adopted(x).check(ROTATED_KEY),
        lists::polling_reasonable(x).check(lists::POLLING),
    ]
}

pub fn conditional_updates(x: &Inputs) -> Finding {
    let mut f = Finding::new();
    for e in x
        .entries
        .iter()
        .filter(|e| e.method == "PATCH" && e.via == "rest")
    {
        if !e.if_match || e.if_match_wildcard {
            f.fail_entries(&[e]);
        } else {
            f.pass_entries(&[e]);
        }
    }
    f.unobserved_because("no REST PATCH was sent.");
    f
}

pub const CONDITIONAL: Texts = Texts {
    id: "conditional_updates",
    title: "Conditional updates (If-Match)",
    required: false,
    rule: "Every REST PATCH carries `If-Match` with an ETag: `If-Match: *` (any version) is no condition and fails like no header. Recommended, not required. Not observed until a PATCH was sent.",
    advice: "Send `If-Match` with the `ETag` you read, so a concurrent change is a 412 instead of a silent overwrite.",
};

pub fn rotated_key_adopted(x: &Inputs) -> Finding {
    let mut f = Finding::new();
    let mut running = false;
    // The rotations in scope only: of the keys graded (gathered so).
    for r in &x.rotations {
        let grace_end_ms = r.grace_end * 1000;
        let adopted: Vec<&str> = x
            .all_entries
            .iter()
            .filter(|e| {
                e.key_id.as_deref() == Some(&r.new_key) && e.status != 401 && e.at_ms < grace_end_ms
            })
            .map(|e| e.request_id.as_str())
            .take(1)
            .collect();
        let late_old: Vec<&str> = x
            .all_entries
            .iter()
            .filter(|e| e.key_id.as_deref() == Some(&r.old_key) && e.at_ms >= grace_end_ms)
            .map(|e| e.request_id.as_str())
            .collect();
        if !late_old.is_empty() {
            f.fail(&late_old);
        } else if !adopted.is_empty() {
            f.pass(&adopted);
        } else if x.now_ms >= grace_end_ms {
            f.fail(&[&r.old_key]);
        } else {
            running = true;
        }
    }
    f.unobserved_because(if running {
        "a rotation's grace period is running and its new key has not been used yet."
    } else {
        "no API key of the account was rotated (`POST /api-keys/{id}/rotate`)."
    });
    f
}

pub const ROTATED_KEY: Texts = Texts {
    id: "rotated_key_adopted",
    title: "Rotated API keys adopted in time",
    required: true,
    rule: "For every rotated API key in scope (`POST /api-keys/{id}/rotate`): the new key was used (an answer other than 401) before the grace period ended (sandbox clock), and the old key was not used after it (only requests that presented the old key's very secret count: a key id alone proves nothing). Fails with the old key's late requests, or with the old key's id when the grace period ended unused; not observed while a grace period runs and the new key is unused, or when no key was rotated.",
    advice: "After rotating a key, deploy the new key before the grace period ends; the old one stops working then.",
};
