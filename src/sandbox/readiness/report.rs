//! The readiness report's data: the [`Report`], its [`Check`]s and their [`Status`], as served
//! and printed. Plain types: this file imports nothing of `readiness` (every other file of it
//! may import it).

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Fail,
    NotObserved,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub id: &'static str,
    pub title: &'static str,
    pub status: Status,
    pub required: bool,
    /// The rule, exactly as the book states it (`docs/src/going-live.md`, its table of checks).
    pub rule: &'static str,
    /// Request ids (`req_…`), drill ids (`drl_…`) or key ids that show the status; for a check
    /// not observed, what is still to be observed (webhook ids never drilled).
    pub evidence: Vec<String>,
    /// What to change; for a check not observed, what is missing; empty when it passes.
    pub advice: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub object: &'static str,
    pub account_id: String,
    /// The company a company-scoped credential's report covers.
    pub company_id: Option<String>,
    pub key_id: Option<String>,
    /// The journal mark the report counts from (`after`), if any.
    pub after: Option<String>,
    pub generated_at: String,
    pub verdict: &'static str,
    pub checks: Vec<Check>,
}
