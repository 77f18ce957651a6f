//! The readiness report's data: the [`Report`], its [`Check`]s and their [`Status`], as served
//! and printed. Plain types: this file imports nothing of `readiness` (every other file of it
//! may import it).

use crate::validate::OneOf;
use schemars::JsonSchema;
use serde::Serialize;

/// A report's verdicts.
pub const VERDICTS: &[&str] = &["ready", "not_ready", "incomplete"];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Fail,
    NotObserved,
}

// Open to members it does not list (`additionalProperties` is not false), as documented before
// its schema was derived; so is [`Report`].
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
pub struct Check {
    pub id: &'static str,
    /// What the check asks, in a few words.
    pub title: &'static str,
    /// `pass` on evidence of the behaviour, `fail` on evidence of the misbehaviour, else
    /// `not_observed`.
    pub status: Status,
    /// A required check decides the verdict; a recommended one does not.
    pub required: bool,
    /// The precise rule, as coded.
    // Exactly as the book states it (`docs/src/going-live.md`, its table of checks).
    pub rule: &'static str,
    /// What shows the status: request ids (`req_…`, see GET /requests/{request_id}), drill ids
    /// (`drl_…`) or key ids; for a check not observed, the webhooks (`wh_…`) still to drill. At
    /// most 20.
    pub evidence: Vec<String>,
    /// What to change (fail), or what is missing and how to show it (not observed); empty when
    /// the check passes.
    pub advice: String,
}

/// Whether an integration is ready to go live, check by check (the book: Going live: the
/// readiness report).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "ReadinessReport", extend("additionalProperties" = true))]
pub struct Report {
    #[schemars(extend("const" = "readiness_report"))]
    pub object: &'static str,
    pub account_id: String,
    /// The company a company-scoped credential's report covers; null for the whole account.
    pub company_id: Option<String>,
    /// The key (or login's user) asked about.
    pub key_id: Option<String>,
    /// The API client graded when `key_id` is a key: every key of it with the key's company
    /// scope (a rotated key's predecessor and successor included), whichever of them asks.
    pub client_id: Option<String>,
    /// The report grades the console's own sessions (signed in by a sign-in link), not the
    /// integration: the console is an integration of its own.
    pub console: bool,
    /// The journal mark the report counts from, if one was given.
    pub after: Option<String>,
    /// The sandbox clock.
    #[schemars(extend("format" = "date-time"))]
    pub generated_at: String,
    /// `not_ready`: a required check failed; `incomplete`: one was not observed; else `ready`.
    #[schemars(transform = &OneOf(VERDICTS))]
    pub verdict: &'static str,
    /// Every check, in a fixed order.
    pub checks: Vec<Check>,
}
