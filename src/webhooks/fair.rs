//! Fair delivery slots: the [`super::MAX_IN_FLIGHT`] attempts that may be sent at once are shared
//! between accounts, then between the companies of an account, so one account's slow or hanging
//! receivers cannot hold everyone's slots, however many companies it has.
//!
//! An account may have at most its share in flight: the slots divided by the accounts with work
//! (in flight or waiting), and never more than half of them, so a newcomer always finds slots free
//! even while one account's attempts hang to their timeout. Inside an account, a company may have
//! at most the account's share divided by its companies with work, so one company's hanging
//! receivers leave its sister companies their part. Attempts past a share wait in their company's
//! queue (in memory; each is a claimed delivery, released at start-up after a stop); the worker
//! never blocks on a full account, and freed slots go to the waiting accounts in turn (and inside
//! one, to its companies in turn).

use super::store::Job;
use std::collections::{HashMap, VecDeque};

/// One company's attempts: in flight, and waiting for a slot.
#[derive(Default)]
struct Company {
    in_flight: usize,
    waiting: VecDeque<Job>,
}

/// One account's attempts, by company.
#[derive(Default)]
struct Account {
    in_flight: usize,
    companies: HashMap<String, Company>,
    /// Companies with waiting jobs, in the order they are served.
    turn: VecDeque<String>,
}

impl Account {
    fn has_waiting(&self) -> bool {
        !self.turn.is_empty()
    }

    /// The most one of its companies may have in flight, with `share` for the whole account.
    fn company_share(&self, share: usize) -> usize {
        (share / self.companies.len().max(1)).max(1)
    }

    /// The next job of a company under its share, taking its slot; companies served in turn.
    fn start_next(&mut self, share: usize) -> Option<Job> {
        let company_share = self.company_share(share);
        for _ in 0..self.turn.len() {
            let name = self.turn.pop_front()?;
            let Some(company) = self.companies.get_mut(&name) else {
                continue;
            };
            if company.in_flight >= company_share {
                // Full: its turn comes back when one of its attempts ends.
                self.turn.push_back(name);
                continue;
            }
            let Some(job) = company.waiting.pop_front() else {
                continue;
            };
            company.in_flight += 1;
            self.in_flight += 1;
            if !company.waiting.is_empty() {
                self.turn.push_back(name);
            }
            return Some(job);
        }
        None
    }
}

/// The slots and queues of one outbox.
pub struct Fair {
    total: usize,
    running: usize,
    accounts: HashMap<String, Account>,
    /// Accounts with waiting jobs, in the order they are served.
    turn: VecDeque<String>,
}

impl Fair {
    pub fn new(total: usize) -> Fair {
        Fair {
            total: total.max(2),
            running: 0,
            accounts: HashMap::new(),
            turn: VecDeque::new(),
        }
    }

    /// The most one account may have in flight now.
    pub fn share(&self) -> usize {
        (self.total / self.accounts.len().max(2)).max(1)
    }

    /// Queues a claimed job behind its company's others.
    pub fn push(&mut self, job: Job) {
        let account = self.accounts.entry(job.account_id.clone()).or_default();
        if !account.has_waiting() {
            self.turn.push_back(job.account_id.clone());
        }
        let company = account.companies.entry(job.company_id.clone()).or_default();
        if company.waiting.is_empty() {
            account.turn.push_back(job.company_id.clone());
        }
        company.waiting.push_back(job);
    }

    /// The jobs that may start now (their slots taken), accounts served in turn.
    pub fn next_batch(&mut self) -> Vec<Job> {
        let mut out = Vec::new();
        let mut passes = self.turn.len();
        while self.running < self.total && passes > 0 {
            let Some(name) = self.turn.pop_front() else {
                break;
            };
            let share = self.share();
            let Some(account) = self.accounts.get_mut(&name) else {
                passes = self.turn.len();
                continue;
            };
            let job = (account.in_flight < share)
                .then(|| account.start_next(share))
                .flatten();
            let waiting = account.has_waiting();
            match job {
                Some(job) => {
                    self.running += 1;
                    out.push(job);
                    if waiting {
                        self.turn.push_back(name);
                    }
                    passes = self.turn.len();
                }
                None => {
                    // Full (or all its companies are): its turn comes back when an attempt ends.
                    if waiting {
                        self.turn.push_back(name);
                    }
                    passes -= 1;
                }
            }
        }
        out
    }

    /// An attempt of `company` (of `account`) ended: its slot is free.
    pub fn finish(&mut self, account: &str, company: &str) {
        let Some(a) = self.accounts.get_mut(account) else {
            return;
        };
        let Some(c) = a.companies.get_mut(company) else {
            return;
        };
        if c.in_flight == 0 {
            return;
        }
        c.in_flight -= 1;
        a.in_flight -= 1;
        self.running = self.running.saturating_sub(1);
        if c.in_flight == 0 && c.waiting.is_empty() {
            a.companies.remove(company);
        }
        if a.companies.is_empty() {
            self.accounts.remove(account);
        }
    }

    /// Attempts in flight and waiting, for logs and tests.
    pub fn load(&self) -> (usize, usize) {
        let waiting = self
            .accounts
            .values()
            .flat_map(|a| a.companies.values())
            .map(|c| c.waiting.len())
            .sum();
        (self.running, waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(account: &str, company: &str, n: usize) -> Job {
        Job {
            delivery_id: format!("whd_{company}{n}"),
            account_id: account.into(),
            company_id: company.into(),
            webhook_id: "wh_1".into(),
            url: "http://127.0.0.1:9/".into(),
            secrets: vec![],
            event_id: format!("evt_{n}"),
            body: bytes::Bytes::new(),
            timestamp: 0,
            at_ms: 0,
            manual: false,
            generation: None,
        }
    }

    fn started_by(jobs: &[Job], company: &str) -> usize {
        jobs.iter().filter(|j| j.company_id == company).count()
    }

    #[test]
    fn one_account_never_takes_more_than_half_and_a_newcomer_starts_at_once() {
        let mut fair = Fair::new(8);
        for n in 0..20 {
            fair.push(job("acct_a", "a", n));
        }
        let started = fair.next_batch();
        assert_eq!(started.len(), 4, "half of the slots while alone");
        assert_eq!(fair.load(), (4, 16));
        fair.push(job("acct_b", "b", 0));
        let started = fair.next_batch();
        assert_eq!(started.len(), 1);
        assert_eq!(started[0].company_id, "b");
        // A third account: the share is a third now; `a` keeps what it has but gets no more.
        fair.push(job("acct_c", "c", 0));
        fair.push(job("acct_c", "c", 1));
        let started = fair.next_batch();
        assert_eq!(started.len(), 2);
        assert!(started.iter().all(|j| j.company_id == "c"));
        fair.finish("acct_a", "a");
        assert!(
            fair.next_batch().is_empty(),
            "a is over its share (8 / 3 = 2)"
        );
        fair.finish("acct_a", "a");
        fair.finish("acct_a", "a");
        let started = fair.next_batch();
        assert_eq!(started.len(), 1);
        assert_eq!(started[0].company_id, "a");
    }

    #[test]
    fn two_companies_of_one_account_share_its_half_and_leave_the_rest() {
        let mut fair = Fair::new(8);
        for n in 0..20 {
            fair.push(job("acct_a", "a1", n));
            fair.push(job("acct_a", "a2", n));
        }
        let started = fair.next_batch();
        // The account's half, split between its two companies.
        assert_eq!(started.len(), 4);
        assert_eq!(started_by(&started, "a1"), 2);
        assert_eq!(started_by(&started, "a2"), 2);
        // Another account finds the other half free.
        for n in 0..4 {
            fair.push(job("acct_b", "b", n));
        }
        let started = fair.next_batch();
        assert_eq!(started.len(), 4);
        assert_eq!(started_by(&started, "b"), 4);
        // A company alone in its account may use the account's whole share.
        let mut fair = Fair::new(8);
        for n in 0..10 {
            fair.push(job("acct_a", "a1", n));
        }
        assert_eq!(fair.next_batch().len(), 4);
    }
}
