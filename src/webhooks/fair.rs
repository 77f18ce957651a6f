//! Fair delivery slots: the [`super::MAX_IN_FLIGHT`] attempts that may be sent at once are shared
//! between companies, so one company's slow or hanging receivers cannot hold everyone's slots.
//!
//! A company may have at most its share in flight: the slots divided by the companies with work
//! (in flight or waiting), and never more than half of them, so a newcomer always finds slots free
//! even while one company's attempts hang to their timeout. Attempts past a company's share wait
//! in its own queue (in memory; each is a claimed delivery, released at start-up after a stop);
//! the worker never blocks on a full company, and freed slots go to the waiting companies in turn.

use super::store::Job;
use std::collections::{HashMap, VecDeque};

/// The slots and queues of one outbox.
pub struct Fair {
    total: usize,
    in_flight: HashMap<String, usize>,
    running: usize,
    waiting: HashMap<String, VecDeque<Job>>,
    /// Companies with waiting jobs, in the order they are served.
    turn: VecDeque<String>,
}

impl Fair {
    pub fn new(total: usize) -> Fair {
        Fair {
            total: total.max(2),
            in_flight: HashMap::new(),
            running: 0,
            waiting: HashMap::new(),
            turn: VecDeque::new(),
        }
    }

    /// The most one company may have in flight now.
    pub fn share(&self) -> usize {
        let active = self
            .in_flight
            .keys()
            .chain(self.waiting.keys())
            .collect::<std::collections::HashSet<_>>()
            .len();
        (self.total / active.max(2)).max(1)
    }

    /// Queues a claimed job behind its company's others.
    pub fn push(&mut self, job: Job) {
        let company = job.company_id.clone();
        let queue = self.waiting.entry(company.clone()).or_default();
        if queue.is_empty() {
            self.turn.push_back(company);
        }
        queue.push_back(job);
    }

    /// The jobs that may start now (their slots taken), companies served in turn.
    pub fn next_batch(&mut self) -> Vec<Job> {
        let mut out = Vec::new();
        let mut passes = self.turn.len();
        while self.running < self.total && passes > 0 {
            let Some(company) = self.turn.pop_front() else {
                break;
            };
            let share = self.share();
            let mine = self.in_flight.get(&company).copied().unwrap_or(0);
            if mine >= share {
                // Full: its turn comes back when one of its attempts ends.
                self.turn.push_back(company);
                passes -= 1;
                continue;
            }
            let job = self.waiting.get_mut(&company).and_then(VecDeque::pop_front);
            let Some(job) = job else {
                self.waiting.remove(&company);
                passes = self.turn.len();
                continue;
            };
            *self.in_flight.entry(company.clone()).or_default() += 1;
            self.running += 1;
            if self.waiting.get(&company).is_some_and(|q| !q.is_empty()) {
                self.turn.push_back(company);
            } else {
                self.waiting.remove(&company);
            }
            passes = self.turn.len();
            out.push(job);
        }
        out
    }

    /// An attempt of `company` ended: its slot is free.
    pub fn finish(&mut self, company: &str) {
        if let Some(n) = self.in_flight.get_mut(company) {
            *n -= 1;
            if *n == 0 {
                self.in_flight.remove(company);
            }
            self.running = self.running.saturating_sub(1);
        }
    }

    /// Attempts in flight and waiting, for logs and tests.
    pub fn load(&self) -> (usize, usize) {
        (self.running, self.waiting.values().map(VecDeque::len).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(company: &str, n: usize) -> Job {
        Job {
            delivery_id: format!("whd_{company}{n}"),
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

    #[test]
    fn one_company_never_takes_more_than_half_and_a_newcomer_starts_at_once() {
        let mut fair = Fair::new(8);
        for n in 0..20 {
            fair.push(job("a", n));
        }
        let started = fair.next_batch();
        assert_eq!(started.len(), 4, "half of the slots while alone");
        assert_eq!(fair.load(), (4, 16));
        fair.push(job("b", 0));
        let started = fair.next_batch();
        assert_eq!(started.len(), 1);
        assert_eq!(started[0].company_id, "b");
        // A third company: the share is a third now; `a` keeps what it has but gets no more.
        fair.push(job("c", 0));
        fair.push(job("c", 1));
        let started = fair.next_batch();
        assert_eq!(started.len(), 2);
        assert!(started.iter().all(|j| j.company_id == "c"));
        fair.finish("a");
        assert!(
            fair.next_batch().is_empty(),
            "a is over its share (8 / 3 = 2)"
        );
        fair.finish("a");
        fair.finish("a");
        let started = fair.next_batch();
        assert_eq!(started.len(), 1);
        assert_eq!(started[0].company_id, "a");
    }
}
