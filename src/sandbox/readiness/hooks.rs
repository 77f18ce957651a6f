//! The webhook checks: every enabled webhook in the report's scope (the account's, or the
//! company's of a company-scoped credential) is graded on the newest drill of each kind run
//! against it *as it is now* (same id and same URL: a drill of a webhook that was deleted, or
//! rewound by a restore, and made again elsewhere, is not this one's). A webhook never drilled
//! leaves the check `not_observed`, naming it.

use super::finding::{Finding, Texts};
use super::inputs::{Hook, Inputs};
use crate::sandbox::drills::Drill;

/// A 2xx must come within this (milliseconds); any answer, for `webhook_responds_fast`.
pub const FAST_MS: i64 = 5_000;

/// The newest drill of `kind` against `hook` as it is now.
fn newest<'a>(x: &'a Inputs, hook: &Hook, kind: &str) -> Option<&'a Drill> {
    x.drills.iter().rev().find(|d| {
        d.kind == kind
            && d.webhook_id == hook.id
            && d.url_digest.as_deref() == Some(hook.url_digest.as_str())
    })
}

/// Grades every webhook on the newest drill of each of `kinds`.
fn graded(x: &Inputs, kinds: &[&str]) -> Finding {
    let mut f = Finding::new();
    if x.webhooks.is_empty() {
        f.unobserved_because("no enabled webhook is in this report's scope.");
        return f;
    }
    let mut missing: Vec<&str> = Vec::new();
    for hook in &x.webhooks {
        for kind in kinds {
            match newest(x, hook, kind) {
                None => missing.push(&hook.id),
                Some(d) if d.verdict == "pass" => f.pass(&[&d.id]),
                Some(d) => f.fail(&[&d.id]),
            }
        }
    }
    if !missing.is_empty() {
        missing.dedup();
        f.pending(
            format!(
                "no {} drill was run against {} (`POST /_sandbox/webhooks/{{id}}/drills`).",
                kinds.join(" or "),
                missing.join(", ")
            ),
            &missing,
        );
    }
    f
}

pub fn signatures(x: &Inputs) -> Finding {
    graded(x, &["bad_signature", "missing_signature"])
}

pub const SIGNATURES: Texts = Texts {
    id: "webhook_signatures_verified",
    title: "Webhook signatures verified",
    required: true,
    rule: "For every enabled webhook in scope, the newest `bad_signature` drill (signed with a wrong secret) and the newest `missing_signature` drill (no `webhook-signature` header) run against it, at its current URL, passed: each delivery was refused with a 4xx. A receiver that skips verification when the header is absent fails. Not observed while an enabled webhook lacks either drill (they are named).",
    advice: "Verify `webhook-signature` (HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` with the secret) on every delivery, with a constant-time comparison; answer 4xx when it does not match or is missing.",
};

pub fn timestamps(x: &Inputs) -> Finding {
    graded(x, &["stale_timestamp", "future_timestamp"])
}

pub const TIMESTAMPS: Texts = Texts {
    id: "webhook_stale_timestamp_rejected",
    title: "Stale or future webhook timestamps rejected",
    required: true,
    rule: "For every enabled webhook in scope, the newest `stale_timestamp` drill (a correctly signed delivery whose `webhook-timestamp` is 10 minutes old) and the newest `future_timestamp` drill (10 minutes ahead) passed: each was refused with a 4xx. Not observed while an enabled webhook lacks either drill.",
    advice: "Refuse deliveries whose `webhook-timestamp` is more than 5 minutes from your clock, in either direction (a replayed or forged delivery).",
};

pub fn duplicates(x: &Inputs) -> Finding {
    graded(x, &["duplicate"])
}

pub const DUPLICATES: Texts = Texts {
    id: "webhook_duplicates_tolerated",
    title: "Duplicate webhook deliveries tolerated",
    required: true,
    rule: "For every enabled webhook in scope, the newest `duplicate` drill passed: the same `webhook-id` delivered twice was answered 2xx both times. It proves the receiver does not refuse a redelivery, not that it processes it once: the sandbox cannot see what the receiver did with it (deduplicate by `webhook-id`). Not observed while an enabled webhook lacks the drill.",
    advice: "Deduplicate by `webhook-id`: answer 2xx to a delivery you already processed, without processing it again.",
};

pub fn out_of_order(x: &Inputs) -> Finding {
    graded(x, &["out_of_order"])
}

pub const OUT_OF_ORDER: Texts = Texts {
    id: "webhook_out_of_order_tolerated",
    title: "Out-of-order webhook deliveries tolerated",
    required: true,
    rule: "For every enabled webhook in scope, the newest `out_of_order` drill passed: two events of one object, the newer first, were both answered 2xx. It proves the receiver accepts them in that order, not that it kept the newer state: the sandbox cannot see that (compare `timestamp` or re-read the object). Not observed while an enabled webhook lacks the drill.",
    advice: "Order events by their `timestamp` (or re-read the object), not by arrival; accept an older event after a newer one.",
};

pub fn rotation(x: &Inputs) -> Finding {
    graded(x, &["rotation"])
}

pub const ROTATION: Texts = Texts {
    id: "webhook_rotation_accepted",
    title: "Webhook secret rotation accepted",
    required: true,
    rule: "For every enabled webhook in scope, the newest `rotation` drill passed: during a rotation's grace period, a delivery signed with the new and the old secret (two signatures) was answered 2xx. Not observed while an enabled webhook lacks the drill.",
    advice: "Accept a delivery when any of the space-separated signatures in `webhook-signature` verifies, and switch to the new secret when you rotate.",
};

/// Speed only: every answer of the newest drills came within 5 s, whatever it was. An attempt
/// that got no answer at once (connection refused) says nothing about speed; one that got no
/// answer within 5 s (a timeout) is slow.
pub fn responds_fast(x: &Inputs) -> Finding {
    let mut f = Finding::new();
    if x.webhooks.is_empty() {
        f.unobserved_because("no enabled webhook is in this report's scope.");
        return f;
    }
    let mut missing: Vec<&str> = Vec::new();
    for hook in &x.webhooks {
        let mut timed = false;
        for kind in crate::sandbox::drills::KINDS {
            let Some(d) = newest(x, hook, kind) else {
                continue;
            };
            for a in &d.attempts {
                if a.latency_ms > FAST_MS {
                    f.fail(&[&d.id]);
                    timed = true;
                } else if a.status.is_some() {
                    f.pass(&[&d.id]);
                    timed = true;
                }
            }
        }
        if !timed {
            missing.push(&hook.id);
        }
    }
    if !missing.is_empty() {
        f.pending(
            format!(
                "no drill got an answer from {} (run any drill against it).",
                missing.join(", ")
            ),
            &missing,
        );
    }
    f
}

pub const FAST: Texts = Texts {
    id: "webhook_responds_fast",
    title: "Webhook receiver answers fast",
    required: true,
    rule: "Speed only: for every enabled webhook in scope, every delivery of the newest drill of each kind was answered (any status) within 5 seconds; a delivery answered later, or not within the attempt's timeout, fails it. A delivery that got no answer at once (connection refused) says nothing about speed, and what the answer was is the drill's own check. Not observed while an enabled webhook has no answered drill.",
    advice: "Answer as soon as the delivery is verified and stored; do the work afterwards (a queue), so slow work never makes the delivery time out.",
};
