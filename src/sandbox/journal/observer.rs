//! The running journal ([`Journal`]): the queue the pipeline's observer pushes onto, the writer
//! thread that stages and writes it, and the file's connection reads and drills go through. It
//! composes `store` and `record`, and never imports the folder's `mod.rs`.

use super::{record, store};
use crate::http::observe::{Observation, Observer};
use rusqlite::Connection;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

/// Observations queued before the writer is woken early (it also wakes every 100 ms).
const WAKE_AT: usize = 512;
/// Observations queued beyond this are dropped (and counted) rather than grow without bound.
const QUEUE_MAX: usize = 100_000;
/// Held entries are written at the latest this long after the first of them arrived (a sustained
/// load never pauses), or when they take this much memory.
const WRITE_AFTER: Duration = Duration::from_secs(2);
const HOLD_BYTES: usize = 2 * 1024 * 1024;
/// How often entries past the age limit are removed.
const EXPIRE_EVERY: Duration = Duration::from_secs(60);

pub struct Journal {
    inner: Arc<Inner>,
}

struct Inner {
    queue: Mutex<Vec<Observation>>,
    wake: Condvar,
    store: Mutex<Store>,
    max_entries: i64,
    max_age_ms: i64,
    dropped: std::sync::atomic::AtomicU64,
    /// The MCP catalogue's tool names: any other name a client called is not kept.
    tools: std::sync::OnceLock<std::collections::HashSet<&'static str>>,
}

struct Store {
    conn: Connection,
    /// The queue's other half: swapped with it on every flush, so neither is reallocated.
    spare: Vec<Observation>,
    writer: store::Writer,
    /// When the oldest entry held in memory arrived.
    held_since: Instant,
    expired_at: Instant,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Journal {
    /// Opens the journal of `settings.database` and starts its writer thread.
    pub fn open(settings: &crate::config::Settings) -> rusqlite::Result<Journal> {
        let path = store::path_for(&settings.database);
        let conn = store::open(path.as_deref())?;
        let writer = store::Writer::load(&conn)?;
        let inner = Arc::new(Inner {
            queue: Mutex::new(Vec::new()),
            wake: Condvar::new(),
            store: Mutex::new(Store {
                conn,
                spare: Vec::new(),
                writer,
                held_since: Instant::now(),
                expired_at: Instant::now()
                    .checked_sub(EXPIRE_EVERY)
                    .unwrap_or_else(Instant::now),
            }),
            max_entries: i64::try_from(settings.journal_max_entries).unwrap_or(i64::MAX),
            max_age_ms: i64::try_from(settings.journal_max_age_secs)
                .unwrap_or(i64::MAX / 1000)
                .saturating_mul(1000),
            dropped: Default::default(),
            tools: Default::default(),
        });
        let weak = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("journal".into())
            .spawn(move || write_batches(weak))
            .map_err(|e| {
                rusqlite::Error::InvalidPath(PathBuf::from(format!("journal writer thread: {e}")))
            })?;
        Ok(Journal { inner })
    }

    /// Writes what is queued, then runs `f` on the journal's connection.
    pub fn read<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        let mut store = lock(&self.inner.store);
        self.inner.flush(&mut store);
        f(&store.conn)
    }

    /// Writes what is queued, then runs `f` on the journal's connection and what the writer
    /// keeps of every segment ([`store::Index`]; `None` when it could not be built).
    pub fn read_indexed<T>(
        &self,
        f: impl FnOnce(&Connection, Option<&store::Index>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        let mut store = lock(&self.inner.store);
        self.inner.flush(&mut store);
        f(&store.conn, store.writer.index())
    }

    /// How many entries match `filter`, everything queued written first: from what the writer
    /// keeps of every segment ([`store::count_indexed`]).
    pub fn count(&self, filter: &store::Filter) -> rusqlite::Result<i64> {
        let mut store = lock(&self.inner.store);
        self.inner.flush(&mut store);
        store::count_indexed(&store.conn, store.writer.index(), filter)
    }

    /// Runs `f` on the journal's connection (a drill's verdict).
    pub fn write<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        let store = lock(&self.inner.store);
        f(&store.conn)
    }

    /// Names the tools an MCP client may call (the catalogue's); set once, at start-up.
    pub fn know_tools(&self, names: impl IntoIterator<Item = &'static str>) {
        let _ = self.inner.tools.set(names.into_iter().collect());
    }

    /// The sequence number of the newest entry written so far, everything queued first: entries
    /// of later requests have greater numbers (a test's mark, `after`).
    pub fn mark(&self) -> i64 {
        let mut store = lock(&self.inner.store);
        self.inner.stage(&mut store);
        store.writer.last_seq()
    }

    /// [`Journal::mark`] for one account: the newest of its entries, so that one account cannot
    /// watch another's requests move the number.
    pub fn mark_of(&self, account: &str) -> i64 {
        let mut store = lock(&self.inner.store);
        self.inner.stage(&mut store);
        store.writer.last_seq_of(account)
    }

    /// The oldest wall time an entry may have and still be shown (the age limit).
    pub fn not_before_wall_ms(&self) -> i64 {
        crate::http::observe::wall_millis().saturating_sub(self.inner.max_age_ms)
    }
}

/// The operation a harness takes its mark with: not journaled, so the mark it answers is the
/// last entry before the test's own requests and nothing the harness does counts in them.
const MARK_OPERATION: &str = "getRequestMark";

impl Observer for Journal {
    fn observe(&self, observation: Observation) {
        if observation.operation_id == Some(MARK_OPERATION) {
            return;
        }
        let mut queue = lock(&self.inner.queue);
        if queue.len() >= QUEUE_MAX {
            self.inner
                .dropped
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return;
        }
        queue.push(observation);
        if queue.len() == WAKE_AT {
            self.inner.wake.notify_one();
        }
    }

    fn flush(&self) {
        let mut store = lock(&self.inner.store);
        self.inner.flush(&mut store);
    }
}

impl Inner {
    /// Takes the queue and encodes it into the entries held in memory; how many it took. Called
    /// with the store locked, so batches are numbered in order.
    fn stage(&self, store: &mut Store) -> usize {
        std::mem::swap(&mut *lock(&self.queue), &mut store.spare);
        let taken = store.spare.len();
        if taken > 0 {
            if store.writer.held().0 == 0 {
                store.held_since = Instant::now();
            }
            let tools = self.tools.get();
            let known = |t: &str| tools.is_some_and(|names| names.contains(t));
            let rows = store.spare.drain(..).map(|o| record::Row::from(o, &known));
            store.writer.stage(rows, self.max_entries);
        }
        let dropped = self.dropped.swap(0, std::sync::atomic::Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!(dropped, "journal queue full: observations dropped");
        }
        taken
    }

    /// Writes what is held into the file, and applies the age limit when it is due.
    fn write(&self, store: &mut Store) {
        let Store { conn, writer, .. } = store;
        let (held, _) = writer.held();
        // The ring turns in bulk, an eighth of it at a time.
        let slack = self.max_entries / 8;
        if let Err(e) = writer.write(conn, self.max_entries, slack) {
            tracing::warn!(error = %e, entries = held, "journal write failed: entries lost");
        }
        if store.expired_at.elapsed() >= EXPIRE_EVERY {
            store.expired_at = Instant::now();
            let cutoff = crate::http::observe::wall_millis().saturating_sub(self.max_age_ms);
            let Store { conn, writer, .. } = store;
            if let Err(e) = writer.expire(conn, cutoff) {
                tracing::warn!(error = %e, "journal expiry failed");
            }
        }
    }

    /// Everything queued and held, into the file: a read, or the server stopping.
    fn flush(&self, store: &mut Store) {
        self.stage(store);
        self.write(store);
    }

    /// The writer thread's turn: stage what is queued; write when the traffic paused (nothing
    /// arrived since the last turn), when what is held is [`WRITE_AFTER`] old or
    /// [`HOLD_BYTES`] large.
    fn turn(&self, store: &mut Store) {
        let arrived = self.stage(store);
        let (held, bytes) = store.writer.held();
        if write_due(arrived, held, bytes, store.held_since.elapsed()) {
            self.write(store);
        }
    }
}

/// Whether a turn that took `arrived` observations writes the `held` entries (`bytes` of them,
/// the oldest `age` old) into the file.
fn write_due(arrived: usize, held: usize, bytes: usize, age: Duration) -> bool {
    held > 0 && (arrived == 0 || age >= WRITE_AFTER || bytes >= HOLD_BYTES)
}

/// The writer thread: every 100 ms (or when the queue fills), takes its turn. Ends when the
/// journal is dropped.
fn write_batches(weak: Weak<Inner>) {
    loop {
        let Some(inner) = weak.upgrade() else { return };
        {
            let queue = lock(&inner.queue);
            if queue.len() < WAKE_AT {
                let _ = inner.wake.wait_timeout(queue, Duration::from_millis(100));
            }
        }
        let mut store = lock(&inner.store);
        inner.turn(&mut store);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_entries_are_written_on_a_pause_on_age_or_on_size_and_only_then() {
        let fresh = Duration::from_millis(100);
        // Nothing held: nothing to write, whatever else.
        assert!(!write_due(0, 0, 0, WRITE_AFTER));
        // A turn with nothing new: the traffic paused.
        assert!(write_due(0, 1, 10, fresh));
        // Traffic that never pauses: small and young stays in memory...
        assert!(!write_due(512, 3_000, 150_000, fresh));
        // ...until it is old enough, or large enough (a flood of big bodies).
        assert!(write_due(512, 3_000, 150_000, WRITE_AFTER));
        assert!(write_due(512, 300, HOLD_BYTES, fresh));
    }
}
