//! What a prepare tool shows: the change run for real as a dry run, so the preview is the outcome.
//!
//! The target is read through the pipeline (what the caller may see, and its version), then the
//! write itself runs twice as a dry run ([`WriteTerms::preview`]: every check it makes, nothing kept).
//! Its answer is `after`: what `confirm_change` will return as its `result`. Values that only the
//! confirmation can fix are `null` there and named in `set_at_confirmation`: what differs between
//! the two runs, the second made a minute later by the clock ([`WriteTerms::later_secs`]): ids the
//! write mints and instants it stamps, and what the write itself says only the real attempt can
//! tell (a webhook receiver's answer). Nothing is invented.
//!
//! A preview is bound to everything it shows: its fingerprint (the target's version and state and
//! the settled `after`) is stored with the change, and [`recheck`] repeats the read and one dry
//! run just before the confirmation runs, which applies only if the same fingerprint comes out.

mod cost;
mod settle;

use super::advice;
use super::call::{from_rest, Caller, WriteTerms};
use super::envelope::{Cost, Difference, WithheldNote};
use super::failure::Failure;
use super::plan::{marker_refusal, value_at, ChangePlan, PlanKind};
use crate::http::router::Withheld;
use crate::http::App;
use hyper::Method;
use serde_json::{json, Value};
use settle::{batch_differences, field_differences, Settle};
use sha2::{Digest, Sha256};

/// The preview of one change, before it is stored.
pub struct Preview {
    pub current: Value,
    /// The target's ETag, or a fingerprint of its body.
    pub version: String,
    pub after: Value,
    pub set_at_confirmation: Vec<String>,
    pub differences: Vec<Difference>,
    pub cost: Cost,
    /// Every path of `current` and `after` shown redacted.
    pub redacted_fields: Vec<String>,
    pub withholds: Option<Withheld>,
    /// The fingerprint of what the preview shows ([`recheck`]).
    pub shown: String,
    /// The company balance the preview showed, which the confirmation is bound to.
    pub balance: Option<(String, i64)>,
}

/// The ETag of a response, or a fingerprint of its body when the route sends none.
pub fn version_of(resp: &crate::http::Response) -> String {
    match resp.headers.get("etag").and_then(|v| v.to_str().ok()) {
        Some(tag) => tag.to_string(),
        None => format!("sha256:{}", hex(&Sha256::digest(&resp.body))),
    }
}

pub fn build(app: &App, caller: &Caller, plan: &ChangePlan) -> Result<Preview, Failure> {
    let (resp, current) = read_target(app, caller, plan)?;
    // The marker's word in any form, where the field's stored value holds a secret (shown
    // redacted): the write would put it where the secret was.
    if let Some(path) = crate::redact::marker::restores_secret(&plan.changes, &current, "changes") {
        let written = value_at(&plan.arguments, &path);
        return Err(marker_refusal(&path, written, true));
    }
    let version = version_of(&resp);
    let mut changes = plan.changes.clone();
    if let Some(edit) = &plan.array_edit {
        let (field, value) = edit.apply(&current);
        changes.insert(field, value);
    }
    let requested: Vec<Difference> = changes
        .iter()
        .filter(|(k, v)| current.get(k.as_str()) != Some(*v))
        .map(|(k, v)| {
            let now = current.get(k.as_str()).cloned().unwrap_or(Value::Null);
            Difference::new(k, now, v.clone())
        })
        .collect();
    if requested.is_empty() && matches!(plan.kind, PlanKind::Fields) {
        return Err(Failure::new(
            "nothing_to_change",
            409,
            format!(
                "Nothing to change: the {} `{}` already has these values. Nothing was prepared.",
                plan.target_type, plan.target_id
            ),
        ));
    }
    // The write itself, run with every check it makes (state rules, balance, plan limits,
    // validation, If-Match) and rolled back: a change that cannot succeed gets no confirmation id.
    // It runs twice: what differs between the runs is minted by the write.
    let if_match = if_match(&version);
    let t0 = app.clock().now();
    let trial = |later_secs| {
        let terms = WriteTerms {
            later_secs,
            ..WriteTerms::preview(if_match)
        };
        plan.run(app, caller, terms)
    };
    let first = trial(0);
    if !first.status.is_success() {
        return Err(Failure::rest(
            &first,
            format!(
                "This change cannot be made as it stands, so nothing was prepared and no confirmation_id was issued. Tell the user why: {}",
                advice::explain(app, caller, &first)
            ),
        ));
    }
    // The second run happens a minute later by the clock, so what the write stamps with its own
    // time differs between the runs too.
    let mut second = from_rest(&trial(60)).ok();
    let window = (t0, app.clock().now());
    let mut outcome = from_rest(&first)?;
    if let Some(w) = plan.withholds {
        for answer in std::iter::once(&mut outcome).chain(second.as_mut()) {
            withhold(answer, w.field);
        }
    }

    let same_object = outcome.get("object").is_some()
        && outcome.get("object") == current.get("object")
        && outcome.get("id") == current.get("id");
    let mut after = outcome.clone();
    let mut set_at_confirmation = Vec::new();
    let settle = Settle {
        window,
        given: &changes,
    };
    settle.walk(&mut after, second.as_ref(), "", &mut set_at_confirmation);
    // What only the attempt itself can tell (a receiver's answer), as the write names it.
    for path in unknown_until_applied(&first) {
        settle::blank(&mut after, &path);
        if !set_at_confirmation.contains(&path) {
            set_at_confirmation.push(path);
        }
    }

    let differences = match plan.kind {
        PlanKind::Deletes => {
            vec![Difference::new(
                plan.target_type,
                current.clone(),
                Value::Null,
            )]
        }
        PlanKind::Batch { items, key, flag } => {
            let changed = batch_differences(&after, items, key, flag);
            if changed.is_empty() {
                return Err(Failure::new(
                    "nothing_to_change",
                    409,
                    format!(
                        "Nothing to change: every item already is as asked, so nothing was prepared. The {} `{}` stays as it is.",
                        plan.target_type, plan.target_id
                    ),
                ));
            }
            changed
        }
        _ if same_object => field_differences(&current, &after, &set_at_confirmation, &changes),
        PlanKind::Creates => {
            let field = outcome["object"].as_str().unwrap_or("result").to_string();
            vec![Difference::new(field, Value::Null, after.clone())]
        }
        PlanKind::Fields => requested,
    };
    let (cost, balance) = if outcome["object"] == "token_purchase" {
        cost::purchase_cost(&outcome, &after)
    } else if plan.with_cost {
        cost::activation_cost(app, caller, &current)
    } else {
        (Cost::None, None)
    };
    let mut redacted_fields = Vec::new();
    redacted_paths(&current, &mut redacted_fields);
    redacted_paths(&after, &mut redacted_fields);
    let shown = shown(&version, &current, &after);
    Ok(Preview {
        current,
        version,
        after,
        set_at_confirmation,
        differences,
        cost,
        redacted_fields,
        withholds: plan.withholds,
        shown,
        balance,
    })
}

/// Reads the change's target through the pipeline, as the caller.
fn read_target(
    app: &App,
    caller: &Caller,
    plan: &ChangePlan,
) -> Result<(crate::http::Response, Value), Failure> {
    let resp = caller.rest(
        app,
        Method::GET,
        plan.read_path.clone(),
        String::new(),
        None,
        None,
    );
    let current = from_rest(&resp)?;
    Ok((resp, current))
}

/// `If-Match` for a version that is an ETag (a body fingerprint is compared by the MCP layer).
fn if_match(version: &str) -> Option<&str> {
    (!version.starts_with("sha256:")).then_some(version)
}

/// The paths a write's dry-run answer says only the real attempt can fill (a webhook receiver's
/// answer), from [`crate::http::response::UNKNOWN_UNTIL_APPLIED`].
fn unknown_until_applied(resp: &crate::http::Response) -> Vec<String> {
    resp.headers
        .get(crate::http::response::UNKNOWN_UNTIL_APPLIED)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// A fingerprint of what a preview shows: the target's version and state, and the write's
/// answer with what only the confirmation sets blanked. Stored with the change; the confirmation
/// applies only while the same fingerprint comes out again.
fn shown(version: &str, current: &Value, after: &Value) -> String {
    let bytes = serde_json::to_vec(&json!([version, current, after])).unwrap_or_default();
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// What a confirmation finds when it checks the change again, just before running it.
pub enum Recheck {
    /// The preview still shows exactly what the change does; the target is at `version`.
    Same { version: String },
    /// Something the preview showed has moved: the target, the outcome, or both.
    Moved,
    /// The change cannot be made now (the target is gone, the write refuses).
    Refused(Failure),
}

/// Reads the target and runs the write once more as a dry run, then compares what comes out with
/// the fingerprint the preview stored (`set_paths` blanked, as they were in the preview). A target
/// at another version than the previewed one has moved, whatever the write would now answer.
pub fn recheck(
    app: &App,
    caller: &Caller,
    plan: &ChangePlan,
    previewed: (&str, &str),
    set_paths: &[String],
) -> Recheck {
    let (stored_version, stored) = previewed;
    let nothing = |resp: &crate::http::Response| {
        Failure::rest(
            resp,
            format!(
                "Nothing was applied: {}",
                advice::explain(app, caller, resp)
            ),
        )
    };
    let resp = caller.rest(
        app,
        Method::GET,
        plan.read_path.clone(),
        String::new(),
        None,
        None,
    );
    if !resp.status.is_success() {
        return Recheck::Refused(nothing(&resp));
    }
    let version = version_of(&resp);
    if version != stored_version {
        return Recheck::Moved;
    }
    let Ok(current) = from_rest(&resp) else {
        return Recheck::Refused(nothing(&resp));
    };
    let trial = plan.run(app, caller, WriteTerms::preview(if_match(&version)));
    if trial.status == hyper::StatusCode::PRECONDITION_FAILED {
        return Recheck::Moved;
    }
    if !trial.status.is_success() {
        return Recheck::Refused(nothing(&trial));
    }
    let Ok(mut after) = from_rest(&trial) else {
        return Recheck::Refused(nothing(&trial));
    };
    if let Some(w) = plan.withholds {
        withhold(&mut after, w.field);
    }
    for path in set_paths {
        settle::blank(&mut after, path);
    }
    if shown(&version, &current, &after) == stored {
        Recheck::Same { version }
    } else {
        Recheck::Moved
    }
}

/// Removes a withheld field from a write's answer (top level, or the object's own).
pub fn withhold(answer: &mut Value, field: &str) {
    if let Some(m) = answer.as_object_mut() {
        m.remove(field);
    }
}

/// Every path of `shown` whose value the redactor replaces, whether the change touches it or
/// not: the user cannot see what is there, so the preview says so.
fn redacted_paths(shown: &Value, out: &mut Vec<String>) {
    let mut redacted = shown.clone();
    crate::redact::redact_value(&mut redacted);
    settle::differing_paths(shown, &redacted, "", out);
}

/// The sentences of `next_step` about what the preview cannot show.
pub fn notes(p: &Preview) -> String {
    let list = |fields: &[String]| {
        fields
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = String::new();
    if !p.redacted_fields.is_empty() {
        out.push_str(&format!(
            " Part of {} is shown as {marker} because it looks like a secret: tell the user so. What will be stored is exactly the text you sent, not {marker}; a value you did not send stays as it is stored.",
            list(&p.redacted_fields),
            marker = crate::redact::REDACTED
        ));
    }
    if let Some(w) = &p.withholds {
        let shown = WithheldNote::of(w, &p.after);
        out.push_str(&format!(
            " The `{}` this write makes is never shown through MCP: {}",
            w.field, shown.note
        ));
    }
    if !p.set_at_confirmation.is_empty() {
        out.push_str(&format!(
            " `after` is what confirm_change will return; {} will be set when it runs and are null here.",
            list(&p.set_at_confirmation)
        ));
    }
    out.push_str(&when_seen(p));
    out
}

/// When the change will be seen on screens, where that is not now: an ad that is not on air
/// after the change (or, for an assignment, the ad it puts on a screen) plays nowhere yet.
fn when_seen(p: &Preview) -> String {
    let ad = [&p.after, &p.current]
        .into_iter()
        .find(|v| v["object"] == "ad")
        .filter(|ad| ad["on_air"] == false);
    let Some(ad) = ad else {
        return String::new();
    };
    let from = ad["starts_at"]
        .as_str()
        .map(|t| format!(" (its `starts_at` is {t})"))
        .unwrap_or_default();
    format!(
        " The ad is not on air (`on_air` is false){from}: no screen will play it yet, even once this is confirmed. An ad plays while it is `active`, within its `starts_at`/`ends_at`, and its promotion (if any) is switched on and within its own dates; tell the user when that will be."
    )
}
