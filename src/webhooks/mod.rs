//! Webhook delivery: a durable outbox in SQLite, sent by a background worker, signed per the
//! Standard Webhooks specification, retried on the sandbox clock.
//!
//! - [`crate::events::record`] writes one delivery per event and subscribed, enabled webhook, in
//!   the event's transaction, and asks the database to wake the sender once it commits.
//! - The [`worker`] sends first attempts as soon as it is woken, on the system and on a frozen
//!   clock alike: a test of a webhook handler expects the delivery right after the write, whatever
//!   the clock. Many attempts run at once (up to [`MAX_IN_FLIGHT`]), shared fairly between
//!   accounts, then between the companies of an account ([`fair`]): an account's hanging receivers
//!   hold at most its share, however many companies it has.
//! - Retries are due at instants of the sandbox clock. [`Retries`] is the timeline's source for
//!   them ([`crate::timeline`]): on the system clock the tick claims what fell due and hands it to
//!   the worker; on a frozen clock, `POST /_sandbox/clock/advance` sends each retry at its due
//!   instant and waits for its outcome before going on, so advancing a day walks the schedule in
//!   order and in milliseconds.
//! - [`store`] claims, builds the request and records attempts; [`send`] makes one attempt;
//!   [`sign`] computes the signatures.
//!
//! Sending happens outside any database transaction; the attempt is recorded afterwards.

pub mod drain;
pub mod fair;
pub mod send;
pub mod sign;
pub mod store;

use crate::config::Settings;
use crate::db::{Db, DbError, Scoped, WriteIntent};
use crate::time::Mode;
use crate::timeline::{Env, Report, Source};
use std::sync::Arc;
use store::Job;
use tokio::sync::{mpsc, Notify};

/// Attempts one process sends at once.
pub const MAX_IN_FLIGHT: usize = 128;

/// What the app keeps for delivery: the client, the worker's wake-up and its queue of claimed
/// retries.
pub struct Outbox {
    pub client: send::Client,
    /// Which clock signs `webhook-timestamp` (`webhooks.timestamps`).
    pub timestamps: crate::config::WebhookTimestamps,
    wake: Notify,
    claimed_tx: mpsc::UnboundedSender<Job>,
    claimed_rx: std::sync::Mutex<Option<mpsc::UnboundedReceiver<Job>>>,
    slots: std::sync::Mutex<fair::Fair>,
    /// Counts recorded batches of outcomes, so a drain can wait for the worker's ([`drain`]).
    recorded: (std::sync::Mutex<u64>, std::sync::Condvar),
    /// Clock advances running ([`Outbox::leave_first_attempts`]): meanwhile the worker claims no
    /// first attempt, so the advance sends every attempt that falls due on its way itself.
    advancing: std::sync::atomic::AtomicUsize,
}

/// Held while an advance runs; on drop the worker takes up first attempts again.
pub struct FirstAttemptsLeft(Arc<Outbox>);

impl Drop for FirstAttemptsLeft {
    fn drop(&mut self) {
        self.0
            .advancing
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        self.0.wake();
    }
}

impl Outbox {
    pub fn new(settings: &Settings) -> Outbox {
        let (claimed_tx, claimed_rx) = mpsc::unbounded_channel();
        Outbox {
            client: send::Client::new(settings),
            timestamps: settings.webhook_timestamps,
            wake: Notify::new(),
            claimed_tx,
            claimed_rx: std::sync::Mutex::new(Some(claimed_rx)),
            slots: std::sync::Mutex::new(fair::Fair::new(MAX_IN_FLIGHT)),
            recorded: Default::default(),
            advancing: Default::default(),
        }
    }

    /// Leaves the first attempts of deliveries to a clock advance while the guard lives: the
    /// worker, woken on the wall clock by each commit of the run, would otherwise take some of
    /// them first, and the advance's answer (its `webhook.attempt` count) would depend on a
    /// receiver's timing.
    pub fn leave_first_attempts(self: &Arc<Self>) -> FirstAttemptsLeft {
        self.advancing
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        FirstAttemptsLeft(Arc::clone(self))
    }

    /// Wakes the worker (a new delivery has committed).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Tells drains that outcomes were recorded.
    fn outcomes_recorded(&self) {
        let (count, changed) = &self.recorded;
        if let Ok(mut n) = count.lock() {
            *n += 1;
        }
        changed.notify_all();
    }

    /// Waits (on a blocking thread) until outcomes are recorded, at most `wait`.
    pub fn wait_recorded(&self, wait: std::time::Duration) {
        let (count, changed) = &self.recorded;
        let Ok(n) = count.lock() else { return };
        let seen = *n;
        let _ = changed.wait_timeout_while(n, wait, |n| *n == seen);
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, fair::Fair> {
        // A poisoned lock only means a panic elsewhere; the counters and queues are plain data.
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Attempts in flight and waiting for a slot.
    pub fn load(&self) -> (usize, usize) {
        self.slots().load()
    }
}

/// What the worker needs of the app (which sits above this layer): its database, settings and
/// clock.
pub trait Host: Send + Sync + 'static {
    fn db(&self) -> &Db;
    fn settings(&self) -> &Settings;
}

/// The delivery worker: releases the claims a killed process left, then sends first attempts
/// when woken and the retries the timeline hands over, each on its own task. Runs until aborted.
pub async fn worker<H: Host>(host: Arc<H>, outbox: Arc<Outbox>) {
    let Some(mut claimed) = outbox.claimed_rx.lock().ok().and_then(|mut rx| rx.take()) else {
        tracing::warn!("webhook worker started twice; the second one stops");
        return;
    };
    match store::release_claims(host.db().unscoped()) {
        Ok(0) => {}
        Ok(n) => tracing::info!(
            deliveries = n,
            "webhook attempts interrupted by a stop are sent again"
        ),
        Err(e) => tracing::warn!(error = %e, "webhook outbox: cannot release claims"),
    }
    outbox.wake();
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    let recorder = tokio::spawn(record_outcomes(
        Arc::clone(&host),
        Arc::clone(&outbox),
        done_rx,
    ));
    let _recorder = AbortOnDrop(recorder);
    loop {
        tokio::select! {
            _ = outbox.wake.notified() => {
                // An advance sends what falls due on its way; the guard's drop wakes us again.
                if outbox.advancing.load(std::sync::atomic::Ordering::SeqCst) > 0 {
                    continue;
                }
                loop {
                    let jobs =
                        store::claim_due(host.db().unscoped(), host.db().clock().now(), true);
                    match jobs {
                        Ok(jobs) => {
                            let full = jobs.len() as i64 >= store::CLAIM_BATCH;
                            for job in jobs {
                                spawn_attempt(&outbox, &done_tx, job);
                            }
                            if !full {
                                break;
                            }
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "webhook outbox: claim failed");
                            break;
                        }
                    }
                }
            }
            job = claimed.recv() => match job {
                Some(job) => spawn_attempt(&outbox, &done_tx, job),
                None => return,
            },
        }
    }
}

type Done = (Job, send::Outcome);

/// Queues one claimed attempt for a slot of its account's (and company's) share, and starts what
/// may start.
fn spawn_attempt(outbox: &Arc<Outbox>, done: &mpsc::UnboundedSender<Done>, job: Job) {
    outbox.slots().push(job);
    dispatch(outbox, done);
}

/// Starts every waiting attempt that has a slot, each on its own task; when one ends, its slot
/// goes to the next in turn and its outcome to the recorder.
fn dispatch(outbox: &Arc<Outbox>, done: &mpsc::UnboundedSender<Done>) {
    let ready = outbox.slots().next_batch();
    for job in ready {
        let outbox = Arc::clone(outbox);
        let done = done.clone();
        tokio::spawn(async move {
            let outcome = outbox
                .client
                .post(&job.url, &job.headers(outbox.timestamps), job.body.clone())
                .await;
            outbox.slots().finish(&job.account_id, &job.company_id);
            dispatch(&outbox, &done);
            let _ = done.send((job, outcome));
        });
    }
}

/// Records outcomes as they come, all those waiting in one transaction (one commit per batch
/// rather than per attempt under load). A batch that fails is retried one by one.
async fn record_outcomes<H: Host>(
    host: Arc<H>,
    outbox: Arc<Outbox>,
    mut done: mpsc::UnboundedReceiver<Done>,
) {
    while let Some(first) = done.recv().await {
        let mut batch = vec![first];
        while batch.len() < store::CLAIM_BATCH as usize {
            match done.try_recv() {
                Ok(more) => batch.push(more),
                Err(_) => break,
            }
        }
        let all = store::record_all(
            host.db().unscoped(),
            &WriteIntent::sandbox(),
            host.settings(),
            &batch,
        );
        if all.is_err() {
            for (job, outcome) in &batch {
                let one = store::record(
                    host.db().unscoped(),
                    &WriteIntent::sandbox(),
                    host.settings(),
                    job,
                    outcome,
                );
                if let Err(e) = one {
                    tracing::warn!(error = %e, delivery = %job.delivery_id, "webhook attempt not recorded");
                }
            }
        }
        outbox.outcomes_recorded();
    }
}

/// Stops the recorder with the worker.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Sends a claimed attempt from a blocking thread and waits for its outcome (a frozen clock's
/// retries, a retry or test asked for by hand), then records it. The caller has the app's clock
/// installed. Returns the outcome. The outcome is recorded as `intent` (a retry asked for by hand
/// names its caller; the sandbox's own retries, the sandbox).
pub fn attempt_blocking(
    outbox: &Outbox,
    db: Scoped<'_>,
    intent: &WriteIntent,
    settings: &Settings,
    jobs: Vec<Job>,
) -> Result<Vec<send::Outcome>, DbError> {
    // Never from inside a write transaction: the rows the attempts read commit first.
    db.committed(|| attempt(outbox, db, intent, settings, jobs))
}

fn attempt(
    outbox: &Outbox,
    db: Scoped<'_>,
    intent: &WriteIntent,
    settings: &Settings,
    jobs: Vec<Job>,
) -> Result<Vec<send::Outcome>, DbError> {
    let outcomes = send_all_blocking(outbox, &jobs);
    for (job, outcome) in jobs.iter().zip(&outcomes) {
        store::record(db, intent, settings, job, outcome)?;
    }
    outbox.outcomes_recorded();
    Ok(outcomes)
}

/// Sends the jobs concurrently and waits on this thread for all. The caller may be a blocking
/// thread (a REST send route) or an async worker (an MCP tool call, which runs inline): a worker
/// hands its other tasks over while it waits ([`tokio::task::block_in_place`]), so the sends can
/// run; under a single-threaded runtime (a test's) the sends run on a thread of their own.
fn send_all_blocking(outbox: &Outbox, jobs: &[Job]) -> Vec<send::Outcome> {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return jobs
            .iter()
            .map(|_| failed("no async runtime to send from"))
            .collect();
    };
    if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread {
        return tokio::task::block_in_place(|| handle.block_on(send_all(outbox, jobs)));
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt.block_on(send_all(outbox, jobs)),
                    Err(_) => jobs
                        .iter()
                        .map(|_| failed("no async runtime to send from"))
                        .collect(),
                }
            })
            .join()
            .unwrap_or_else(|_| {
                jobs.iter()
                    .map(|_| failed("the attempt's task stopped"))
                    .collect()
            })
    })
}

/// Sends the jobs concurrently on the current runtime.
async fn send_all(outbox: &Outbox, jobs: &[Job]) -> Vec<send::Outcome> {
    let tasks: Vec<_> = jobs
        .iter()
        .map(|job| {
            let job = job.clone();
            let client = outbox.client.clone();
            let headers = job.headers(outbox.timestamps);
            tokio::spawn(async move { client.post(&job.url, &headers, job.body.clone()).await })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(tasks.len());
    for task in tasks {
        outcomes.push(
            task.await
                .unwrap_or_else(|_| failed("the attempt's task stopped")),
        );
    }
    outcomes
}

fn failed(why: &str) -> send::Outcome {
    send::Outcome {
        status: None,
        latency_ms: 0,
        response: String::new(),
        error: Some(why.to_string()),
    }
}

/// Retries (and any first attempt the worker has not taken yet) on the sandbox clock.
pub struct Retries {
    pub outbox: Arc<Outbox>,
}

impl Source for Retries {
    fn name(&self) -> &'static str {
        "webhook_deliveries"
    }

    fn next_due(&self, env: &Env<'_>, until: i64) -> Result<Option<i64>, DbError> {
        Ok(store::next_due(env.db)?.filter(|&at| at <= until))
    }

    fn run_due(&self, env: &Env<'_>, at: i64, report: &mut Report) -> Result<(), DbError> {
        // Sent outside the run's write transaction, once what the attempts read has committed.
        env.db.committed(|| {
            let jobs = store::claim_due(env.db, at, false)?;
            report.count("webhook.attempt", jobs.len() as u64);
            let frozen = env.db.clock().mode() == Mode::Frozen;
            if frozen {
                attempt_blocking(
                    &self.outbox,
                    env.db,
                    &WriteIntent::sandbox(),
                    env.settings,
                    jobs,
                )?;
            } else {
                for job in jobs {
                    // The worker stops only with the server; a job it never gets is released at
                    // start-up.
                    let _ = self.outbox.claimed_tx.send(job);
                }
            }
            Ok(())
        })
    }
}
