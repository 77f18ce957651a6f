//! Checkpoints off the request path.
//!
//! In WAL mode every commit appends pages to the write-ahead log, and a checkpoint copies them back
//! into the database file. SQLite's automatic checkpoint runs inside whichever commit takes the
//! log past 1,000 pages: that request pays for the copy and its `fsync`s (a 24 h advance measured
//! 27–29 ms at p90 against 14–18 ms at the median because of it, and every write request had the
//! same tail). Here each connection's commit only counts the log's pages ([`Connection::wal_hook`]
//! replaces the automatic checkpoint) and, past [`PAGES`], wakes a thread of the database's own
//! that runs the same checkpoint (`PASSIVE`: it never waits for readers or writers, and writers go
//! on while it copies).
//!
//! The log stays bounded as before: a checkpoint that readers or writers stop short is asked for
//! again by the next commit, one that writes outpace finishes with writers held back for the
//! little it has left ([`checkpoint`]), and the tick's [`super::Scoped::bound_wal`] still truncates a
//! log that a long reader let grow. Were the thread impossible to start, or so far behind that the
//! log reaches [`INLINE_PAGES`], the commit checkpoints in place, as SQLite's automatic checkpoint
//! did: the log stays bounded on a machine too busy to give the thread its turn.

use rusqlite::{Connection, OpenFlags};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{JoinHandle, Thread};

/// Pages in the log past which a commit asks for a checkpoint (SQLite's automatic default).
pub const PAGES: i32 = 1000;
/// Frames in the log past which a checkpoint holds writers back to finish ([`checkpoint`]).
const FORCE_PAGES: i64 = 2 * PAGES as i64;
/// Pages in the log past which a commit checkpoints in place all the same ([`Checkpointer::watch`]).
const INLINE_PAGES: i32 = 4 * PAGES;
/// How long a `RESTART` checkpoint waits for the write lock, and then for readers.
const RESTART_WAIT: std::time::Duration = std::time::Duration::from_millis(5);

/// The database's checkpointing thread, started by the first commit that asks for it.
pub struct Checkpointer {
    shared: Arc<Shared>,
}

struct Shared {
    path: PathBuf,
    /// Set by a commit that asks for a checkpoint; the thread clears it before it runs one, so a
    /// commit made meanwhile asks again.
    wanted: AtomicBool,
    stop: AtomicBool,
    /// Checkpoints run so far ([`Checkpointer::runs`]).
    runs: AtomicU64,
    /// Checkpoints commits ran in place ([`Checkpointer::inline`]).
    inline: AtomicU64,
    /// `RESTART` checkpoints tried, writers held back ([`Checkpointer::forced`]).
    forced: AtomicU64,
    thread: OnceLock<Option<Thread>>,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl Checkpointer {
    pub fn new(path: PathBuf) -> Checkpointer {
        Checkpointer {
            shared: Arc::new(Shared {
                path,
                wanted: AtomicBool::new(false),
                stop: AtomicBool::new(false),
                runs: AtomicU64::new(0),
                inline: AtomicU64::new(0),
                forced: AtomicU64::new(0),
                thread: OnceLock::new(),
                handle: Mutex::new(None),
            }),
        }
    }

    /// Installs on `conn` the commit-time page count that asks this checkpointer for a
    /// checkpoint (and turns SQLite's automatic checkpoint off on it).
    pub fn watch(&self, conn: &mut Connection) -> rusqlite::Result<()> {
        let shared = Arc::clone(&self.shared);
        conn.wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, pages| {
            if pages >= PAGES && (!shared.ask() || pages >= INLINE_PAGES) {
                // No thread to ask, or one too far behind (a machine too busy to run it): the
                // commit checkpoints here, as SQLite's automatic checkpoint did, and writes slow
                // down to what checkpoints keep up with.
                shared.inline.fetch_add(1, Ordering::AcqRel);
                let _ = wal.checkpoint();
            }
            Ok(())
        }))
    }

    /// Checkpoints the thread has run since the database was opened.
    pub fn runs(&self) -> u64 {
        self.shared.runs.load(Ordering::Acquire)
    }

    /// Checkpoints commits ran in place since the database was opened.
    pub fn inline(&self) -> u64 {
        self.shared.inline.load(Ordering::Acquire)
    }

    /// `RESTART` checkpoints the thread has tried (each may hold writers back a moment).
    pub fn forced(&self) -> u64 {
        self.shared.forced.load(Ordering::Acquire)
    }

    /// Stops the thread (after the checkpoint it may be running) and closes its connection.
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(Some(thread)) = self.shared.thread.get() {
            thread.unpark();
        }
        let handle = self
            .shared
            .handle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

impl Shared {
    /// Asks the thread for a checkpoint, starting it on first use. False when it cannot run.
    fn ask(self: &Arc<Self>) -> bool {
        let thread = self.thread.get_or_init(|| self.start());
        let Some(thread) = thread else {
            return false;
        };
        if !self.wanted.swap(true, Ordering::AcqRel) {
            thread.unpark();
        }
        true
    }

    fn start(self: &Arc<Self>) -> Option<Thread> {
        if self.stop.load(Ordering::Acquire) {
            return None;
        }
        let shared = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("signage-checkpoint".into())
            .spawn(move || shared.run());
        match spawned {
            Ok(handle) => {
                let thread = handle.thread().clone();
                *self.handle.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
                Some(thread)
            }
            Err(err) => {
                tracing::warn!(error = %err, "checkpoints: no thread; commits checkpoint in place");
                None
            }
        }
    }

    fn run(&self) {
        let mut conn: Option<Connection> = None;
        let mut retry_at = 0;
        loop {
            while !self.wanted.swap(false, Ordering::AcqRel) {
                if self.stop.load(Ordering::Acquire) {
                    return;
                }
                std::thread::park();
            }
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            if conn.is_none() {
                conn = open(&self.path)
                    .inspect_err(|e| tracing::warn!(error = %e, "checkpoints: cannot open"))
                    .ok();
            }
            let Some(c) = &conn else { continue };
            match checkpoint(c, &mut retry_at, &self.forced) {
                Ok(()) => {
                    self.runs.fetch_add(1, Ordering::AcqRel);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "checkpoints: failed; tried again on the next ask");
                    conn = None;
                }
            }
        }
    }
}

/// One checkpoint. `PASSIVE` first: it copies what it can without holding anyone back, while
/// writers go on appending. When writes come faster than it copies, it never quite catches up,
/// and the log restarts only when a writer begins on a fully copied one: past [`FORCE_PAGES`] the
/// rest is copied with writers held back (`RESTART`, waiting at most [`RESTART_WAIT`] for the
/// write lock and then for readers), which lets the next writer start the log again. The hold is
/// the copy of what the passive pass left, not of the whole log.
///
/// A reader that stays (a slow download's snapshot) makes every `RESTART` wait its whole
/// [`RESTART_WAIT`] in vain, writers held meanwhile: one that could not finish is not tried again
/// until the log has grown by another [`FORCE_PAGES`] (`retry_at`, in frames), so such a reader
/// costs writers one wait per 1,000 pages' worth of writes, not one per commit.
fn checkpoint(conn: &Connection, retry_at: &mut i64, forced: &AtomicU64) -> rusqlite::Result<()> {
    let (_, log, _) = run_mode(conn, "PASSIVE")?;
    if log < FORCE_PAGES {
        *retry_at = 0;
        return Ok(());
    }
    if log >= *retry_at {
        forced.fetch_add(1, Ordering::AcqRel);
        let (busy, after, _) = run_mode(conn, "RESTART")?;
        *retry_at = if busy != 0 {
            after.max(log) + FORCE_PAGES
        } else {
            0
        };
    }
    Ok(())
}

/// Runs a checkpoint in `mode`: whether it stopped short (1), the log's frames and those copied
/// (-1 each when there is no log).
fn run_mode(conn: &Connection, mode: &str) -> rusqlite::Result<(i64, i64, i64)> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })
}

/// The thread's connection: it only checkpoints, so it needs neither foreign keys nor a hook.
fn open(path: &std::path::Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // A short wait: `PASSIVE` never waits; `RESTART` waits this long for the writer of the moment
    // to commit and again for readers to leave the log (writers wait meanwhile), else it does what
    // it can and returns, and the next commit asks again.
    conn.busy_timeout(RESTART_WAIT)?;
    Ok(conn)
}
