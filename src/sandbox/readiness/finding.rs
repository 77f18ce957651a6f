//! What a check found, and the [`Check`] it makes: `fail` on evidence of the misbehaviour,
//! `pass` on evidence of the behaviour, otherwise `not_observed`, saying what was missing.

use super::report::{Check, Status};
use crate::sandbox::journal::store::Entry;

/// Evidence ids listed per check at most.
pub const EVIDENCE_MAX: usize = 20;

/// The fixed texts of a check.
pub struct Texts {
    pub id: &'static str,
    pub title: &'static str,
    pub required: bool,
    /// The rule, exactly as coded (the book states it the same way).
    pub rule: &'static str,
    /// What to change when it fails.
    pub advice: &'static str,
}

#[derive(Default)]
pub struct Finding {
    /// What shows the misbehaviour: request, drill or key ids.
    failed: Vec<String>,
    /// Evidence of the behaviour was seen, and what shows it.
    passed: bool,
    shown: Vec<String>,
    /// Why it could not be judged (and how to let it be), when nothing failed or passed; and
    /// the ids of what is still to be observed (webhooks never drilled).
    why: Option<String>,
    pending: Vec<String>,
}

fn push_unique(list: &mut Vec<String>, id: &str) {
    if list.len() < EVIDENCE_MAX && !list.iter().any(|e| e == id) {
        list.push(id.to_string());
    }
}

impl Finding {
    pub fn new() -> Finding {
        Finding::default()
    }

    pub fn fail<S: AsRef<str>>(&mut self, ids: &[S]) {
        if ids.is_empty() {
            // A failure always names something: a rule that found one has its ids.
            push_unique(&mut self.failed, "-");
        }
        for id in ids {
            push_unique(&mut self.failed, id.as_ref());
        }
    }

    pub fn fail_entries(&mut self, entries: &[&Entry]) {
        let ids: Vec<&str> = entries.iter().map(|e| e.request_id.as_str()).collect();
        self.fail(&ids);
    }

    /// Evidence of the behaviour, shown by these ids.
    pub fn pass<S: AsRef<str>>(&mut self, ids: &[S]) {
        self.passed = true;
        for id in ids {
            push_unique(&mut self.shown, id.as_ref());
        }
    }

    pub fn pass_entries(&mut self, entries: &[&Entry]) {
        let ids: Vec<&str> = entries.iter().map(|e| e.request_id.as_str()).collect();
        self.pass(&ids);
    }

    pub fn failed(&self) -> bool {
        !self.failed.is_empty()
    }

    /// Not judged yet: `why`, and what is still to be observed.
    pub fn pending<S: AsRef<str>>(&mut self, why: String, ids: &[S]) {
        self.why.get_or_insert(why);
        for id in ids {
            push_unique(&mut self.pending, id.as_ref());
        }
    }

    /// The reason given when neither a failure nor a pass was seen (the first one set wins).
    pub fn unobserved_because(&mut self, why: impl Into<String>) {
        if self.why.is_none() {
            self.why = Some(why.into());
        }
    }

    pub fn check(self, t: Texts) -> Check {
        // Something still to observe keeps a check from passing, never from failing.
        let (status, evidence, advice) = if !self.failed.is_empty() {
            (Status::Fail, self.failed, t.advice.to_string())
        } else if self.passed && self.pending.is_empty() {
            (Status::Pass, self.shown, String::new())
        } else {
            let why = self
                .why
                .unwrap_or_else(|| "What this check judges has not happened yet.".into());
            (
                Status::NotObserved,
                self.pending,
                format!("Not observed: {why}"),
            )
        };
        Check {
            id: t.id,
            title: t.title,
            status,
            required: t.required,
            rule: t.rule,
            evidence,
            advice,
        }
    }
}
