//! The journal's own SQLite file (`<database>.requests`, beside the database and never part of
//! a snapshot): its schema, the writer's segments, the per-account ring and age limit, and the
//! filtered, keyset-paged reads. Entries are ordered by `seq`, the order they were written in,
//! never by the sandbox clock (which a restore or an advance moves).
//!
//! **Segments, not rows.** Entries are encoded as they arrive into their account's segment in
//! memory ([`Writer::stage`]); a write puts every segment held into `request_segments` as one
//! batch, one row per segment, its entries laid out one after another ([`codec`]). A row and an index
//! entry per request (and, at benchmark rates, its delete a second later as the ring turns) was
//! most of what journaling cost a request; a segment costs a few hundred nanoseconds of encoding
//! per entry and one insert per segment. Reads decode segments newest first and filter in memory:
//! an account's ring is `journal_max_entries` (10,000 by default), a full scan milliseconds.
//!
//! Segments of one write are numbered alike (`batch`); batches follow each other in `seq`, so the
//! entries of every account, read batch by batch and sorted within the batch, come out in `seq`
//! order. Within one account, segments never overlap.

use super::codec::{self, Decoder, Fields};
use super::record::Row;
pub use super::summary::Index;
use super::summary::{Indexed, Summary};
use crate::validate::OneOf;
use rusqlite::{params, Connection};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;

/// The journal file of a database: `<database>.requests`; `None` for a throw-away database.
pub fn path_for(database: &str) -> Option<std::path::PathBuf> {
    (database != ":memory:").then(|| std::path::PathBuf::from(format!("{database}.requests")))
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS request_segments (
    first_seq INTEGER PRIMARY KEY,
    last_seq INTEGER NOT NULL,
    batch INTEGER NOT NULL,
    account_id TEXT,
    entries INTEGER NOT NULL,
    newest_wall_ms INTEGER NOT NULL,
    newest_at_ms INTEGER NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS request_segments_by_account ON request_segments (account_id, first_seq);
CREATE TABLE IF NOT EXISTS drills (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL,
    company_id TEXT NOT NULL,
    webhook_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    verdict TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    wall_ms INTEGER NOT NULL,
    body TEXT NOT NULL,
    url_digest TEXT,
    journal_seq INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS drills_by_account ON drills (account_id, seq);
CREATE TABLE IF NOT EXISTS journal_counters (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
";

/// Draws the next number of the counter `name` (1, 2, …): numbers kept in the journal's file, so
/// no restore of the world, which rewinds every seeded stream, ever hands one out twice.
pub fn next_number(conn: &Connection, name: &str) -> rusqlite::Result<i64> {
    conn.query_row(
        "INSERT INTO journal_counters (name, value) VALUES (?1, 1)
         ON CONFLICT (name) DO UPDATE SET value = value + 1 RETURNING value",
        [name],
        |r| r.get(0),
    )
}

/// The counters that hold the sandbox clock as the server last noted it ([`note_clock`]).
const CLOCK_FROZEN_MS: &str = "sandbox_clock_frozen_ms";
const CLOCK_OFFSET_MS: &str = "sandbox_clock_offset_ms";

/// Notes the sandbox clock in the journal's file (at start-up, after an advance or a restore): a
/// frozen clock's instant (`frozen_ms`), or a running clock's offset from the system time, so that
/// `signage readiness` without a server reports the sandbox's now ([`noted_now_ms`]).
pub fn note_clock(
    conn: &Connection,
    frozen_ms: Option<i64>,
    offset_ms: i64,
) -> rusqlite::Result<()> {
    let set = |name: &str, value: i64| {
        conn.execute(
            "INSERT INTO journal_counters (name, value) VALUES (?1, ?2)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            params![name, value],
        )
    };
    match frozen_ms {
        Some(ms) => set(CLOCK_FROZEN_MS, ms)?,
        None => conn.execute(
            "DELETE FROM journal_counters WHERE name = ?1",
            [CLOCK_FROZEN_MS],
        )?,
    };
    set(CLOCK_OFFSET_MS, offset_ms)?;
    Ok(())
}

/// The sandbox clock's now as the server last noted it (Unix milliseconds): a frozen clock's
/// instant, or `wall_ms` plus a running clock's offset; `None` when no server noted it.
pub fn noted_now_ms(conn: &Connection, wall_ms: i64) -> rusqlite::Result<Option<i64>> {
    let get = |name: &str| -> rusqlite::Result<Option<i64>> {
        use rusqlite::OptionalExtension;
        conn.query_row(
            "SELECT value FROM journal_counters WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .optional()
    };
    if let Some(frozen) = get(CLOCK_FROZEN_MS)? {
        return Ok(Some(frozen));
    }
    Ok(get(CLOCK_OFFSET_MS)?.map(|offset| wall_ms.saturating_add(offset)))
}

/// A segment is closed at this many entries or bytes (a batch of one account may span several):
/// what a read decodes to find one entry, and what a prune rewrites, stays small.
const SEGMENT_ENTRIES: usize = 512;
const SEGMENT_BYTES: usize = 256 * 1024;

/// Opens (creating) the journal at `path`, or in memory for a throw-away database. A file that is
/// not a journal of the current layout ([`current_tables`]: one of an earlier signage, or no
/// journal at all) is not read: it is moved aside as `<path>.old` ([`set_aside`]) and a new,
/// empty journal starts in its place.
pub fn open(path: Option<&std::path::Path>) -> rusqlite::Result<Connection> {
    let Some(path) = path else {
        let conn = Connection::open_in_memory()?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute_batch(SCHEMA)?;
        return Ok(conn);
    };
    let mut conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    if current_tables(&conn)?.is_none() {
        drop(conn);
        let old = set_aside(path)?;
        tracing::warn!(
            journal = %path.display(),
            old = %old.display(),
            "the request journal file is of an earlier or unknown layout: moved aside, a new journal starts"
        );
        conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
    }
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")?;
    conn.execute_batch(SCHEMA)?;
    Ok(conn)
}

/// The tables of the journal file `conn` if it is one of the current layout (or still empty):
/// each of its tables one of [`SCHEMA`]'s with the same columns, every segment of
/// [`codec::VERSION`]. `None` for anything else, a file that is no SQLite database included.
fn current_tables(
    conn: &Connection,
) -> rusqlite::Result<Option<std::collections::BTreeSet<String>>> {
    fn columns(conn: &Connection) -> rusqlite::Result<HashMap<String, Vec<String>>> {
        let mut tables: HashMap<String, Vec<String>> = HashMap::new();
        let mut stmt = conn.prepare(
            "SELECT m.name, c.name FROM sqlite_master m, pragma_table_info(m.name) c
             WHERE m.type = 'table' AND substr(m.name, 1, 7) <> 'sqlite_'
             ORDER BY m.name, c.cid",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            tables.entry(r.get(0)?).or_default().push(r.get(1)?);
        }
        Ok(tables)
    }
    let have = match columns(conn) {
        Ok(have) => have,
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) => {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let schema = Connection::open_in_memory()?;
    schema.execute_batch(SCHEMA)?;
    let want = columns(&schema)?;
    if have
        .iter()
        .any(|(table, cols)| want.get(table) != Some(cols))
    {
        return Ok(None);
    }
    if have.contains_key("request_segments") {
        let other: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM request_segments WHERE substr(data, 1, 1) <> ?1)",
            [vec![codec::VERSION]],
            |r| r.get(0),
        )?;
        if other {
            return Ok(None);
        }
    }
    Ok(Some(have.into_keys().collect()))
}

/// Moves the journal file at `path` aside as `<path>.old`, with its write-ahead log and shared
/// memory (`-wal`, `-shm`) or rollback journal, so that none of them is applied to the new file;
/// a file set aside before is replaced. Where the file went.
fn set_aside(path: &std::path::Path) -> rusqlite::Result<std::path::PathBuf> {
    let with = |p: &std::path::Path, suffix: &str| {
        let mut name = p.as_os_str().to_owned();
        name.push(suffix);
        std::path::PathBuf::from(name)
    };
    let old = with(path, ".old");
    let failed = |e: std::io::Error| {
        rusqlite::Error::InvalidPath(with(path, &format!(" (cannot be moved aside: {e})")))
    };
    for suffix in ["", "-wal", "-shm", "-journal"] {
        match std::fs::remove_file(with(&old, suffix)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(failed(e)),
            _ => {}
        }
        match std::fs::rename(with(path, suffix), with(&old, suffix)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(failed(e)),
            _ => {}
        }
    }
    Ok(old)
}

/// Opens an existing journal read-only (the `signage readiness` command).
pub fn open_read_only(path: &std::path::Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    if !current_tables(&conn)?.is_some_and(|t| t.contains("request_segments")) {
        return Err(rusqlite::Error::InvalidPath(path.join(
            "(not a journal of this signage: a server started on this database moves it aside and starts a new one)",
        )));
    }
    Ok(conn)
}

fn malformed(e: codec::Malformed) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Blob, Box::new(e))
}

/// The journal's writer: entries are encoded into segments as they arrive ([`Writer::stage`]) and
/// held in memory until [`Writer::write`] puts them in the file. An account's ring is applied to
/// what is held too, so under a sustained load most entries are dropped in memory, never written:
/// the file is the journal's persistence, not its buffer.
pub struct Writer {
    next_seq: i64,
    next_batch: i64,
    /// Entries per account in the file, counted once at start-up and kept as segments are written
    /// and pruned.
    counts: HashMap<Option<String>, i64>,
    /// The sequence number of each account's newest entry (its mark).
    newest: HashMap<String, i64>,
    /// What each account has in memory, not yet written.
    held: Vec<Held>,
    /// What every segment of the file holds, kept as segments are written, pruned and expired
    /// (counts read it instead of the entries); `None` when the file could not be summarised at
    /// start-up (a damaged segment): counts then read the entries.
    index: Option<Index>,
}

/// One account's entries in memory: closed segments, oldest first, and the one being filled.
struct Held {
    account_id: Option<String>,
    closed: std::collections::VecDeque<Closed>,
    open: Option<Open>,
    entries: usize,
}

struct Open {
    segment: codec::Encoder,
    last_seq: i64,
    newest_wall_ms: i64,
    newest_at_ms: i64,
    summary: Summary,
}

/// A segment as it is written: its bytes and the columns read without decoding it.
struct Closed {
    first_seq: i64,
    last_seq: i64,
    entries: usize,
    newest_wall_ms: i64,
    newest_at_ms: i64,
    data: Vec<u8>,
    summary: Summary,
}

impl Open {
    fn close(self) -> Closed {
        Closed {
            first_seq: self.segment.first_seq(),
            last_seq: self.last_seq,
            entries: self.segment.entries(),
            newest_wall_ms: self.newest_wall_ms,
            newest_at_ms: self.newest_at_ms,
            data: self.segment.into_bytes(),
            summary: self.summary,
        }
    }
}

impl Held {
    fn bytes(&self) -> usize {
        self.closed.iter().map(|c| c.data.len()).sum::<usize>()
            + self.open.as_ref().map_or(0, |o| o.segment.bytes().len())
    }

    /// Drops the oldest closed segments the account's newest `max_entries` do not reach.
    fn keep_newest(&mut self, max_entries: usize) {
        while let Some(oldest) = self.closed.front() {
            if self.entries - oldest.entries < max_entries {
                return;
            }
            self.entries -= oldest.entries;
            self.closed.pop_front();
        }
    }
}

impl Writer {
    pub fn load(conn: &Connection) -> rusqlite::Result<Writer> {
        let (next_seq, next_batch) = conn.query_row(
            "SELECT coalesce(max(last_seq), 0) + 1, coalesce(max(batch), 0) + 1
             FROM request_segments",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(Writer {
            next_seq,
            next_batch,
            counts: counts(conn)?,
            newest: newest_by_account(conn)?,
            held: Vec::new(),
            index: index_of(conn),
        })
    }

    /// What every segment of the file holds (`None`: unknown, read the entries).
    pub fn index(&self) -> Option<&Index> {
        self.index.as_ref()
    }

    /// Numbers `rows` in order and encodes them into their accounts' segments in memory; then
    /// drops what is held beyond each account's newest `max_entries` (the file's older entries of
    /// that account go at the next write, when it is pruned).
    pub fn stage(&mut self, rows: impl Iterator<Item = Row>, max_entries: i64) {
        for row in rows {
            let seq = self.next_seq;
            self.next_seq += 1;
            let account = row.o.account_id.as_deref();
            if let Some(account) = account {
                match self.newest.get_mut(account) {
                    Some(newest) => *newest = seq,
                    None => {
                        self.newest.insert(account.to_string(), seq);
                    }
                }
            }
            let at = match self
                .held
                .iter()
                .position(|h| h.account_id.as_deref() == account)
            {
                Some(at) => at,
                None => {
                    self.held.push(Held {
                        account_id: account.map(str::to_string),
                        closed: Default::default(),
                        open: None,
                        entries: 0,
                    });
                    self.held.len() - 1
                }
            };
            let held = &mut self.held[at];
            let open = held.open.get_or_insert_with(|| Open {
                segment: codec::Encoder::new(seq),
                last_seq: seq,
                newest_wall_ms: i64::MIN,
                newest_at_ms: i64::MIN,
                summary: Summary::default(),
            });
            let fields = row.fields(seq);
            open.segment.push(&fields);
            open.summary.add(&fields);
            open.last_seq = seq;
            open.newest_wall_ms = open.newest_wall_ms.max(fields.wall_ms);
            open.newest_at_ms = open.newest_at_ms.max(fields.at_ms);
            held.entries += 1;
            if open.segment.entries() >= SEGMENT_ENTRIES
                || open.segment.bytes().len() >= SEGMENT_BYTES
            {
                if let Some(full) = held.open.take() {
                    held.closed.push_back(full.close());
                }
            }
        }
        let max_entries = usize::try_from(max_entries).unwrap_or(usize::MAX);
        for held in &mut self.held {
            held.keep_newest(max_entries);
        }
    }

    /// The sequence number of the newest entry staged (0 when there is none).
    pub fn last_seq(&self) -> i64 {
        self.next_seq - 1
    }

    /// The sequence number of `account`'s newest entry (0 before its first): a mark that moves
    /// with that account's requests only.
    pub fn last_seq_of(&self, account: &str) -> i64 {
        self.newest.get(account).copied().unwrap_or(0)
    }

    /// Entries and bytes held in memory, not yet written.
    pub fn held(&self) -> (usize, usize) {
        self.held
            .iter()
            .fold((0, 0), |(n, b), h| (n + h.entries, b + h.bytes()))
    }

    /// Writes everything held as one batch in one transaction, then cuts every account past
    /// `max_entries + slack` back to its newest `max_entries` (a slack lets the ring turn in
    /// bulk, a few segments at a time). What was held is let go either way: on an error it is
    /// lost (and the caller says so), never written twice.
    pub fn write(
        &mut self,
        conn: &mut Connection,
        max_entries: i64,
        slack: i64,
    ) -> rusqlite::Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        let held = std::mem::take(&mut self.held);
        let batch = self.next_batch;
        self.next_batch += 1;
        let mut changes = Vec::new();
        let written = write_held(
            conn,
            batch,
            held,
            &mut self.counts,
            &mut changes,
            max_entries,
            slack,
        );
        if written.is_err() {
            // Rolled back: the counts and the index are read again.
            self.index = index_of(conn);
            self.counts = counts(conn)?;
        } else if let Some(index) = &mut self.index {
            for change in changes {
                change.apply(index);
            }
        }
        written
    }

    /// Removes entries older than `cutoff_wall_ms` (the age limit).
    pub fn expire(&mut self, conn: &Connection, cutoff_wall_ms: i64) -> rusqlite::Result<()> {
        let removed = conn.execute(
            "DELETE FROM request_segments WHERE newest_wall_ms < ?1",
            [cutoff_wall_ms],
        )?;
        if removed > 0 {
            self.counts = counts(conn)?;
            if let Some(index) = &mut self.index {
                index.retain(|_, s| s.summary.newest_wall_ms >= cutoff_wall_ms);
            }
        }
        conn.execute("DELETE FROM drills WHERE wall_ms < ?1", [cutoff_wall_ms])?;
        Ok(())
    }
}

/// A change to the file, made to the index once the transaction that made it committed.
enum Change {
    Insert(i64, Indexed),
    Remove(i64),
    /// Every segment of the account below a sequence number.
    RemoveBelow(Option<String>, i64),
}

impl Change {
    fn apply(self, index: &mut Index) {
        match self {
            Change::Insert(first_seq, segment) => {
                index.insert(first_seq, segment);
            }
            Change::Remove(first_seq) => {
                index.remove(&first_seq);
            }
            Change::RemoveBelow(account, below) => {
                index.retain(|&first_seq, s| first_seq >= below || s.account_id != account);
            }
        }
    }
}

/// The index of every segment of the file, each decoded once; `None` (and a warning) when one
/// does not decode.
fn index_of(conn: &Connection) -> Option<Index> {
    let built = (|| -> rusqlite::Result<Index> {
        let mut stmt =
            conn.prepare("SELECT first_seq, last_seq, account_id, data FROM request_segments")?;
        let mut rows = stmt.query([])?;
        let mut index = Index::new();
        while let Some(r) = rows.next()? {
            let (first_seq, last_seq, account_id): (i64, i64, Option<String>) =
                (r.get(0)?, r.get(1)?, r.get(2)?);
            let data = r.get_ref(3)?.as_blob()?;
            let mut summary = Summary::default();
            for f in Decoder::new(data, first_seq, account_id.as_deref()).map_err(malformed)? {
                summary.add(&f.map_err(malformed)?);
            }
            index.insert(
                first_seq,
                Indexed {
                    account_id,
                    last_seq,
                    summary,
                },
            );
        }
        Ok(index)
    })();
    match built {
        Ok(index) => Some(index),
        Err(e) => {
            tracing::warn!(error = %e, "the request journal could not be summarised: counts read every entry");
            None
        }
    }
}

fn write_held(
    conn: &mut Connection,
    batch: i64,
    held: Vec<Held>,
    counts: &mut HashMap<Option<String>, i64>,
    changes: &mut Vec<Change>,
    max_entries: i64,
    slack: i64,
) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    {
        let mut insert = tx.prepare_cached(INSERT_SEGMENT)?;
        for Held {
            account_id,
            closed,
            open,
            ..
        } in held
        {
            let mut entries = 0i64;
            for c in closed.into_iter().chain(open.map(Open::close)) {
                let n = i64::try_from(c.entries).unwrap_or(i64::MAX);
                insert.execute(params![
                    c.first_seq,
                    c.last_seq,
                    batch,
                    account_id,
                    n,
                    c.newest_wall_ms,
                    c.newest_at_ms,
                    c.data,
                ])?;
                entries += n;
                changes.push(Change::Insert(
                    c.first_seq,
                    Indexed {
                        account_id: account_id.clone(),
                        last_seq: c.last_seq,
                        summary: c.summary,
                    },
                ));
            }
            *counts.entry(account_id).or_insert(0) += entries;
        }
    }
    prune(&tx, counts, changes, max_entries, slack)?;
    tx.commit()
}

fn newest_by_account(conn: &Connection) -> rusqlite::Result<HashMap<String, i64>> {
    let mut stmt = conn.prepare(
        "SELECT account_id, max(last_seq) FROM request_segments
         WHERE account_id IS NOT NULL GROUP BY account_id",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

fn counts(conn: &Connection) -> rusqlite::Result<HashMap<Option<String>, i64>> {
    let mut stmt =
        conn.prepare("SELECT account_id, sum(entries) FROM request_segments GROUP BY account_id")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// Cuts every account holding more than `max_entries + slack` entries back to its newest
/// `max_entries`: whole segments are deleted, the one the cut falls in is rewritten with its
/// newest entries.
fn prune(
    conn: &Connection,
    counts: &mut HashMap<Option<String>, i64>,
    changes: &mut Vec<Change>,
    max_entries: i64,
    slack: i64,
) -> rusqlite::Result<()> {
    for (account, n) in counts.iter_mut() {
        if *n <= max_entries + slack {
            continue;
        }
        let mut stmt = conn.prepare_cached(
            "SELECT first_seq, entries FROM request_segments WHERE account_id IS ?1
             ORDER BY first_seq DESC",
        )?;
        let mut kept = 0i64;
        let mut boundary = None;
        let mut rows = stmt.query(params![account])?;
        while let Some(r) = rows.next()? {
            let (first_seq, entries): (i64, i64) = (r.get(0)?, r.get(1)?);
            if kept + entries >= max_entries {
                boundary = Some((first_seq, max_entries - kept));
                break;
            }
            kept += entries;
        }
        drop(rows);
        let Some((first_seq, keep)) = boundary else {
            continue;
        };
        conn.prepare_cached(
            "DELETE FROM request_segments WHERE account_id IS ?1 AND first_seq < ?2",
        )?
        .execute(params![account, first_seq])?;
        changes.push(Change::RemoveBelow(account.clone(), first_seq));
        keep_newest(conn, first_seq, keep, changes)?;
        *n = max_entries;
    }
    Ok(())
}

/// Rewrites segment `first_seq` with only its newest `keep` entries.
fn keep_newest(
    conn: &Connection,
    first_seq: i64,
    keep: i64,
    changes: &mut Vec<Change>,
) -> rusqlite::Result<()> {
    let (batch, account, entries, data): (i64, Option<String>, i64, Vec<u8>) = conn.query_row(
        "SELECT batch, account_id, entries, data FROM request_segments WHERE first_seq = ?1",
        [first_seq],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?;
    if keep >= entries {
        return Ok(());
    }
    let all: Vec<Fields<'_>> = Decoder::new(&data, first_seq, account.as_deref())
        .map_err(malformed)?
        .collect::<Result<_, _>>()
        .map_err(malformed)?;
    let skip = all.len().saturating_sub(usize::try_from(keep).unwrap_or(0));
    let newest = &all[skip..];
    conn.execute(
        "DELETE FROM request_segments WHERE first_seq = ?1",
        [first_seq],
    )?;
    changes.push(Change::Remove(first_seq));
    write_segment(conn, batch, account.as_deref(), newest)?;
    if let (Some(first), Some(last)) = (newest.first(), newest.last()) {
        changes.push(Change::Insert(
            first.seq,
            Indexed {
                account_id: account.clone(),
                last_seq: last.seq,
                summary: Summary::of(newest),
            },
        ));
    }
    Ok(())
}

const INSERT_SEGMENT: &str = "INSERT INTO request_segments
    (first_seq, last_seq, batch, account_id, entries, newest_wall_ms, newest_at_ms, data)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

/// Writes `entries` (ascending by `seq`, all of `account`) as one segment of `batch`.
fn write_segment(
    conn: &Connection,
    batch: i64,
    account: Option<&str>,
    entries: &[Fields<'_>],
) -> rusqlite::Result<()> {
    let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
        return Ok(());
    };
    let mut segment = codec::Encoder::new(first.seq);
    for f in entries {
        segment.push(f);
    }
    conn.prepare_cached(INSERT_SEGMENT)?.execute(params![
        first.seq,
        last.seq,
        batch,
        account,
        i64::try_from(entries.len()).unwrap_or(i64::MAX),
        entries.iter().map(|f| f.wall_ms).max().unwrap_or(0),
        entries.iter().map(|f| f.at_ms).max().unwrap_or(0),
        segment.bytes(),
    ])?;
    Ok(())
}

/// Which accounts a read covers.
#[derive(Debug, Clone)]
pub enum Accounts {
    /// Every account and the operator's entries (the operator's view).
    All,
    /// One account (`None`: the operator's own, unattributed entries).
    One(Option<String>),
}

/// The filters of `GET /requests` and `GET /_sandbox/requests`.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub accounts: Option<Accounts>,
    pub company_id: Option<String>,
    pub key_id: Option<String>,
    pub operation_id: Option<String>,
    /// An exact status, or a class (`(400, 499)`).
    pub status: Option<(u16, u16)>,
    /// The digest of an `Idempotency-Key` (`sha256:…`, what entries keep).
    pub idempotency_key: Option<String>,
    pub test_name: Option<String>,
    pub via: Option<String>,
    pub tool: Option<String>,
    pub faulted: Option<bool>,
    pub request_id: Option<String>,
    /// On the sandbox clock (Unix milliseconds), inclusive.
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
    /// Entries older than this wall time are past the age limit.
    pub not_before_wall_ms: i64,
    /// Entries below this sequence number are past the ring (read from a lazily pruned file).
    pub min_seq: Option<i64>,
}

impl Filter {
    /// Whether `f` is one of the entries this filter asks for.
    fn admits(&self, f: &Fields<'_>) -> bool {
        fn eq(want: &Option<String>, have: Option<&str>) -> bool {
            want.as_deref().is_none_or(|w| have == Some(w))
        }
        let account = match &self.accounts {
            Some(Accounts::One(a)) => a.as_deref() == f.account_id,
            Some(Accounts::All) | None => true,
        };
        account
            && f.wall_ms >= self.not_before_wall_ms
            && eq(&self.company_id, f.company_id)
            && eq(&self.key_id, f.key_id)
            && eq(&self.operation_id, f.operation_id)
            && eq(&self.idempotency_key, f.idempotency_key)
            && eq(&self.test_name, f.test_name)
            && eq(&self.via, Some(f.via))
            && eq(&self.tool, f.tool)
            && eq(&self.request_id, Some(f.request_id))
            && self
                .status
                .is_none_or(|(lo, hi)| (lo..=hi).contains(&f.status))
            && self.faulted.is_none_or(|x| x == f.fault.is_some())
            && self.min_seq.is_none_or(|m| f.seq >= m)
            && self.since_ms.is_none_or(|t| f.at_ms >= t)
            && self.until_ms.is_none_or(|t| f.at_ms <= t)
    }
}

impl Filter {
    /// Whether every entry of `g` is one this filter asks for, as far as the group tells
    /// ([`Filter::by_groups`] says when it tells everything).
    fn admits_group(&self, g: &super::summary::Group) -> bool {
        fn eq(want: &Option<String>, have: Option<&str>) -> bool {
            want.as_deref().is_none_or(|w| have == Some(w))
        }
        eq(&self.company_id, g.company_id.as_deref())
            && eq(&self.key_id, g.key_id.as_deref())
            && eq(&self.operation_id, g.operation_id.as_deref())
            && eq(&self.via, Some(&g.via))
            && eq(&self.tool, g.tool.as_deref())
            && self
                .status
                .is_none_or(|(lo, hi)| (lo..=hi).contains(&g.status))
            && self.faulted.is_none_or(|x| x == g.faulted)
    }

    /// Whether a segment's groups tell which of its entries this filter asks for (no filter on
    /// a field they do not keep).
    fn by_groups(&self) -> bool {
        self.idempotency_key.is_none() && self.test_name.is_none() && self.request_id.is_none()
    }

    /// Whether this filter asks for none of a segment's entries (`Some(false)`), all those its
    /// groups admit (`Some(true)`), or it must read them (`None`: the segment straddles a bound
    /// of sequence, age or time).
    fn takes_whole(&self, first_seq: i64, s: &Indexed) -> Option<bool> {
        let m = &s.summary;
        let none = self.min_seq.is_some_and(|min| s.last_seq < min)
            || m.newest_wall_ms < self.not_before_wall_ms
            || self.since_ms.is_some_and(|t| m.newest_at_ms < t)
            || self.until_ms.is_some_and(|t| m.oldest_at_ms > t);
        if none {
            return Some(false);
        }
        let whole = self.min_seq.is_none_or(|min| first_seq >= min)
            && m.oldest_wall_ms >= self.not_before_wall_ms
            && self.since_ms.is_none_or(|t| m.oldest_at_ms >= t)
            && self.until_ms.is_none_or(|t| m.newest_at_ms <= t);
        whole.then_some(true)
    }
}

/// The doors a request comes through (an entry's `via`).
pub const VIAS: &[&str] = &["rest", "mcp"];
/// The kinds of credential a request may present (an entry's `credentials`).
pub const CREDENTIALS: &[&str] = &["none", "api_key", "bearer"];

/// One journaled request: a REST request, or an MCP tool call (`via: mcp`, naming its `tool`).
// One journal entry as the API shows it. Member order is the JSON order. Open to members it does
// not list (`additionalProperties` is not false), as documented before its schema was derived.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "RequestEntry", extend("additionalProperties" = true))]
pub struct Entry {
    /// The entry's sequence number (the order entries were written in); also the cursor.
    pub id: String,
    #[schemars(extend("const" = "request"))]
    pub object: &'static str,
    pub request_id: String,
    /// The sandbox clock when the request arrived.
    #[schemars(extend("format" = "date-time"))]
    pub at: String,
    pub account_id: Option<String>,
    pub company_id: Option<String>,
    /// `key_…` or `usr_…`; never a secret.
    pub key_id: Option<String>,
    pub client_id: Option<String>,
    /// `rest`, or `mcp` for a tool call.
    #[schemars(transform = &OneOf(VIAS))]
    pub via: String,
    /// The MCP tool called (`via: mcp`).
    pub tool: Option<String>,
    pub method: String,
    /// The route pattern (`/devices/{id}`); null when no route matched.
    pub route: Option<String>,
    /// The `operationId` of the route (see /openapi.json).
    pub operation_id: Option<String>,
    pub status: u16,
    /// The problem's `code` (or the last segment of its `type`).
    pub problem_code: Option<String>,
    /// Server time spent on the request; null in a seeded sandbox, whose answers must not depend
    /// on timing.
    pub duration_ms: Option<f64>,
    /// Which kind of credential was presented (never its value).
    #[schemars(transform = &OneOf(CREDENTIALS))]
    pub credentials: String,
    /// `sha256:` and 32 hex digits: a digest of the `Idempotency-Key` the request sent (the key
    /// itself is never kept). Filter with the key: `idempotency_key=`.
    pub idempotency_key: Option<String>,
    /// The answer replayed the first answer to that `Idempotency-Key`.
    pub idempotent_replayed: bool,
    /// The request sent `If-Match`.
    pub if_match: bool,
    /// The `If-Match` was `*` (any version): no condition on what the client read.
    pub if_match_wildcard: bool,
    /// The path as requested (`/devices/dev_…/ads`), redacted; null for a request of no account.
    pub path: Option<String>,
    /// The `Signage-Test-Name` header the request carried, if any.
    pub test_name: Option<String>,
    /// The injected fault that answered or delayed it: a rule id, or `prefer`.
    pub fault: Option<String>,
    /// The client closed the connection before the answer was written (it timed out or gave
    /// up): it never read the answer, whatever `status` says, and what the request did may
    /// have been done.
    pub client_closed: bool,
    /// The answer's `Retry-After`, in seconds.
    pub retry_after: Option<u32>,
    /// The query parameters, redacted.
    #[schemars(extend("type" = ["object", "null"]))]
    pub query: Option<Value>,
    /// The JSON body, redacted; when longer than 8 KiB, its first 8 KiB as a string and
    /// `body_truncated: true`. Null for no body or a body that is not JSON.
    pub body: Option<Value>,
    /// The body copy was cut at 8 KiB.
    pub body_truncated: bool,
    /// Bytes of the body as sent.
    pub body_bytes: i64,
    /// For a page of a list: the `next_cursor` it answered.
    pub next_cursor: Option<String>,
    /// The problem body as answered, redacted (`GET /requests/{request_id}` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "object"))]
    pub problem: Option<Value>,
    #[serde(skip)]
    pub seq: i64,
    #[serde(skip)]
    pub wall_ms: i64,
    #[serde(skip)]
    pub at_ms: i64,
    #[serde(skip)]
    pub creates: bool,
    #[serde(skip)]
    pub list: bool,
    #[serde(skip)]
    pub shape: Option<String>,
}

impl crate::http::response::Listed for Entry {
    fn list_key(&self) -> &str {
        &self.id
    }
}

/// `at_ms` as RFC 3339 with milliseconds.
pub fn rfc3339_ms(ms: i64) -> String {
    let s = crate::time::rfc3339(ms.div_euclid(1000));
    format!("{}.{:03}Z", s.trim_end_matches('Z'), ms.rem_euclid(1000))
}

/// How much of an entry a read builds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Detail {
    /// As a list shows it.
    Listed,
    /// With its problem body (one entry asked for).
    Explained,
    /// What the readiness checks read: no `at` text, no problem body, the body of an MCP call
    /// only (its `cursor` argument); nothing else of them reads those.
    Checked,
}

impl Entry {
    fn from_fields(f: &Fields<'_>, detail: Detail) -> Entry {
        let json = |text: Option<&str>| text.and_then(|t| serde_json::from_str::<Value>(t).ok());
        let owned = |s: Option<&str>| s.map(str::to_string);
        let checked = detail == Detail::Checked;
        Entry {
            id: f.seq.to_string(),
            object: "request",
            request_id: f.request_id.to_string(),
            at: if checked {
                String::new()
            } else {
                rfc3339_ms(f.at_ms)
            },
            account_id: owned(f.account_id),
            company_id: owned(f.company_id),
            key_id: owned(f.key_id),
            client_id: owned(f.client_id),
            via: f.via.to_string(),
            tool: owned(f.tool),
            method: f.method.to_string(),
            route: owned(f.route),
            operation_id: owned(f.operation_id),
            status: f.status,
            problem_code: owned(f.problem_code),
            duration_ms: Some(f.duration_us as f64 / 1000.0),
            credentials: f.credentials.to_string(),
            idempotency_key: owned(f.idempotency_key),
            idempotent_replayed: f.replayed,
            if_match: f.if_match,
            if_match_wildcard: f.if_match_any,
            path: owned(f.path),
            test_name: owned(f.test_name),
            fault: owned(f.fault),
            client_closed: f.client_closed,
            retry_after: f.retry_after,
            query: json(f.query),
            // A cut body is not JSON any more: it is shown as the text it is.
            body: if checked && f.via != "mcp" {
                None
            } else if f.body_truncated {
                f.body.map(|b| Value::String(b.to_string()))
            } else {
                json(f.body)
            },
            body_truncated: f.body_truncated,
            body_bytes: f.body_bytes,
            next_cursor: owned(f.next_cursor),
            problem: if detail == Detail::Explained {
                json(f.problem)
            } else {
                None
            },
            seq: f.seq,
            wall_ms: f.wall_ms,
            at_ms: f.at_ms,
            creates: f.creates,
            list: f.list,
            shape: owned(f.shape),
        }
    }
}

/// Visits the entries `filter` admits with `seq` below `before`, newest first, until `visit`
/// returns false. Segments are read batch by batch (a batch's segments of different accounts
/// interleave in `seq`; batches do not), each batch's entries sorted before they are visited.
fn scan(
    conn: &Connection,
    filter: &Filter,
    before: Option<i64>,
    visit: impl FnMut(&Fields<'_>) -> bool,
) -> rusqlite::Result<()> {
    scan_segments(conn, filter, before, None, visit)
}

/// [`scan`] of the segments `reads` names only (by first sequence number; `None`: all): the
/// others hold nothing the caller wants.
fn scan_segments(
    conn: &Connection,
    filter: &Filter,
    before: Option<i64>,
    reads: Option<&std::collections::HashSet<i64>>,
    mut visit: impl FnMut(&Fields<'_>) -> bool,
) -> rusqlite::Result<()> {
    let before = before.unwrap_or(i64::MAX);
    let mut stmt;
    let mut rows = match &filter.accounts {
        Some(Accounts::One(account)) => {
            stmt = conn.prepare_cached(
                "SELECT batch, first_seq, account_id, data FROM request_segments
                 WHERE account_id IS ?1 AND first_seq < ?2 ORDER BY first_seq DESC",
            )?;
            stmt.query(params![account, before])?
        }
        Some(Accounts::All) | None => {
            stmt = conn.prepare_cached(
                "SELECT batch, first_seq, account_id, data FROM request_segments
                 WHERE first_seq < ?1 ORDER BY first_seq DESC",
            )?;
            stmt.query(params![before])?
        }
    };
    let mut group: Vec<(i64, Option<String>, Vec<u8>)> = Vec::new();
    let mut group_batch = None;
    loop {
        let next = rows.next()?;
        let batch = match next {
            Some(r) => Some(r.get::<_, i64>(0)?),
            None => None,
        };
        if batch != group_batch && !group.is_empty() {
            if !visit_group(&group, filter, before, &mut visit)? {
                return Ok(());
            }
            group.clear();
        }
        let Some(r) = next else { return Ok(()) };
        group_batch = batch;
        let first_seq: i64 = r.get(1)?;
        if reads.is_some_and(|reads| !reads.contains(&first_seq)) {
            continue;
        }
        group.push((first_seq, r.get(2)?, r.get(3)?));
    }
}

/// Visits one batch's entries, newest first; false when the scan is over.
fn visit_group(
    group: &[(i64, Option<String>, Vec<u8>)],
    filter: &Filter,
    before: i64,
    visit: &mut impl FnMut(&Fields<'_>) -> bool,
) -> rusqlite::Result<bool> {
    let mut entries: Vec<Fields<'_>> = Vec::new();
    for (first_seq, account, data) in group {
        for f in Decoder::new(data, *first_seq, account.as_deref()).map_err(malformed)? {
            entries.push(f.map_err(malformed)?);
        }
    }
    entries.sort_unstable_by_key(|f| std::cmp::Reverse(f.seq));
    for f in entries.iter().filter(|f| f.seq < before) {
        // Newest first: below the floor, nothing further can match.
        if filter.min_seq.is_some_and(|m| f.seq < m) {
            return Ok(false);
        }
        if filter.admits(f) && !visit(f) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A page of entries matching `filter`, newest first, older than `before` (a sequence number).
pub fn page(
    conn: &Connection,
    filter: &Filter,
    before: Option<i64>,
    fetch: i64,
) -> rusqlite::Result<Vec<Entry>> {
    let fetch = usize::try_from(fetch).unwrap_or(0);
    let mut out = Vec::new();
    if fetch == 0 {
        return Ok(out);
    }
    scan(conn, filter, before, |f| {
        out.push(Entry::from_fields(f, Detail::Listed));
        out.len() < fetch
    })?;
    Ok(out)
}

/// How many entries match `filter`.
pub fn count(conn: &Connection, filter: &Filter) -> rusqlite::Result<i64> {
    let mut n = 0i64;
    scan(conn, filter, None, |_| {
        n += 1;
        true
    })?;
    Ok(n)
}

/// How many entries match `filter`, from `index` (what every segment of the file holds) where
/// it tells: a segment's groups are counted, and only a segment that straddles a bound (the
/// `after` mark, the age limit, `since`, `until`) is read. A filter on what the groups do not
/// keep (an idempotency key, a test name, a request id), or no index, reads every entry.
pub fn count_indexed(
    conn: &Connection,
    index: Option<&Index>,
    filter: &Filter,
) -> rusqlite::Result<i64> {
    let Some(index) = index.filter(|_| filter.by_groups()) else {
        return count(conn, filter);
    };
    let mut n = 0i64;
    let mut read =
        conn.prepare_cached("SELECT account_id, data FROM request_segments WHERE first_seq = ?1")?;
    for (&first_seq, segment) in index {
        if let Some(Accounts::One(a)) = &filter.accounts {
            if *a != segment.account_id {
                continue;
            }
        }
        match filter.takes_whole(first_seq, segment) {
            Some(false) => {}
            Some(true) => {
                n += segment
                    .summary
                    .groups
                    .iter()
                    .filter(|(g, _)| filter.admits_group(g))
                    .map(|(_, count)| count)
                    .sum::<i64>();
            }
            None => {
                let mut rows = read.query([first_seq])?;
                if let Some(r) = rows.next()? {
                    let account: Option<String> = r.get(0)?;
                    let data = r.get_ref(1)?.as_blob()?;
                    for f in Decoder::new(data, first_seq, account.as_deref()).map_err(malformed)? {
                        if filter.admits(&f.map_err(malformed)?) {
                            n += 1;
                        }
                    }
                }
            }
        }
    }
    #[cfg(debug_assertions)]
    {
        // A debug build recounts every entry: the index must never tell another number.
        let recount = count(conn, filter)?;
        if recount != n {
            return Err(rusqlite::Error::InvalidPath(std::path::PathBuf::from(
                format!("journal count: the index tells {n}, a recount {recount}"),
            )));
        }
    }
    Ok(n)
}

/// Every entry matching `filter`, oldest first.
pub fn all(conn: &Connection, filter: &Filter) -> rusqlite::Result<Vec<Entry>> {
    let mut out = Vec::new();
    scan(conn, filter, None, |f| {
        out.push(Entry::from_fields(f, Detail::Listed));
        true
    })?;
    out.reverse();
    Ok(out)
}

/// The entries matching `filter` that `pick` takes (told an entry's `credentials` and `key_id`),
/// oldest first, as the readiness checks read them: only what they read is built (no `at` text,
/// no problem body, an MCP call's body only), and nothing of an entry `pick` leaves. With the
/// writer's `index`, only the segments holding an entry of a key `key_wanted` takes are read
/// (`pick` takes no other key): a report of one integration reads its own traffic's segments.
pub fn picked_for_checks(
    conn: &Connection,
    filter: &Filter,
    index: Option<&Index>,
    key_wanted: impl Fn(Option<&str>) -> bool,
    mut pick: impl FnMut(&str, Option<&str>) -> bool,
) -> rusqlite::Result<Vec<Entry>> {
    let reads = index.map(|index| {
        index
            .iter()
            .filter(|(_, s)| match &filter.accounts {
                Some(Accounts::One(a)) => *a == s.account_id,
                Some(Accounts::All) | None => true,
            })
            .filter(|(_, s)| {
                s.summary
                    .groups
                    .iter()
                    .any(|(g, _)| key_wanted(g.key_id.as_deref()))
            })
            .map(|(&first_seq, _)| first_seq)
            .collect::<std::collections::HashSet<i64>>()
    });
    let mut out = Vec::new();
    scan_segments(conn, filter, None, reads.as_ref(), |f| {
        if pick(f.credentials, f.key_id) {
            out.push(Entry::from_fields(f, Detail::Checked));
        }
        true
    })?;
    out.reverse();
    Ok(out)
}

/// The entry `seq` if `filter` admits it, with its problem body.
pub fn by_seq(conn: &Connection, filter: &Filter, seq: i64) -> rusqlite::Result<Option<Entry>> {
    let mut f = filter.clone();
    f.min_seq = Some(f.min_seq.map_or(seq, |m| m.max(seq)));
    let mut found = None;
    scan(conn, &f, seq.checked_add(1), |e| {
        found = Some(Entry::from_fields(e, Detail::Explained));
        false
    })?;
    Ok(found)
}

/// The newest entry of `request_id` that `filter` admits, with its problem body.
pub fn by_request_id(
    conn: &Connection,
    filter: &Filter,
    request_id: &str,
) -> rusqlite::Result<Option<Entry>> {
    let mut f = filter.clone();
    f.request_id = Some(request_id.to_string());
    let mut found = None;
    scan(conn, &f, None, |e| {
        found = Some(Entry::from_fields(e, Detail::Explained));
        false
    })?;
    Ok(found)
}

/// The oldest sequence number within `account`'s newest `max_entries` (what a reader of a file
/// the writer prunes lazily must not go below).
pub fn ring_floor(
    conn: &Connection,
    account: Option<&str>,
    max_entries: i64,
) -> rusqlite::Result<Option<i64>> {
    let filter = Filter {
        accounts: Some(Accounts::One(account.map(str::to_string))),
        not_before_wall_ms: i64::MIN,
        ..Filter::default()
    };
    let (mut seen, mut floor) = (0i64, None);
    scan(conn, &filter, None, |f| {
        seen += 1;
        if seen >= max_entries {
            floor = Some(f.seq);
            return false;
        }
        true
    })?;
    Ok(floor)
}

/// The newest sandbox-clock instant journaled (Unix milliseconds; 0 when the journal is empty).
pub fn newest_at_ms(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row(
        "SELECT coalesce(max(newest_at_ms), 0) FROM request_segments",
        [],
        |r| r.get(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::observe::{Observation, Text};

    fn observation(account: &str, n: usize) -> Observation {
        Observation {
            account_id: Some(Text::new(account)),
            company_id: None,
            key_id: Some(Text::new("key_1")),
            client_id: None,
            at_ms: 1_000 + n as i64,
            wall_ms: 2_000 + n as i64,
            path: Text::new("/plans"),
            duration_us: 10,
            method: hyper::Method::GET,
            route: Some("/plans"),
            operation_id: Some("listPlans"),
            creates: false,
            list: true,
            status: 200,
            request_id: Text::new(&format!("req_{n}")),
            idempotency_key: None,
            replayed: false,
            fault: None,
            retry_after: None,
            via: "rest",
            tool: None,
            credentials: "api_key",
            if_match: false,
            if_match_any: false,
            test_name: None,
            hangup: Default::default(),
            query: Text::new(""),
            body: bytes::Bytes::new(),
            body_sent: 0,
            body_type: None,
            response: bytes::Bytes::new(),
            next_cursor: None,
        }
    }

    fn stage(writer: &mut Writer, account: &str, range: std::ops::Range<usize>, max: i64) {
        writer.stage(
            range.map(|n| Row::from(observation(account, n), &|_| true)),
            max,
        );
    }

    #[test]
    fn only_a_file_of_the_current_layout_is_read_as_one() {
        let conn = Connection::open_in_memory().unwrap();
        assert!(current_tables(&conn).unwrap().is_some(), "an empty file");
        // Today's tables as a file made before `drills` had its last columns in its CREATE.
        conn.execute_batch(&SCHEMA.replace(
            ",\n    url_digest TEXT,\n    journal_seq INTEGER NOT NULL DEFAULT 0",
            "",
        ))
        .unwrap();
        conn.execute_batch(
            "ALTER TABLE drills ADD COLUMN url_digest TEXT;
             ALTER TABLE drills ADD COLUMN journal_seq INTEGER NOT NULL DEFAULT 0;",
        )
        .unwrap();
        let mut segment = codec::Encoder::new(1);
        segment.push(&Fields {
            seq: 1,
            method: "GET",
            request_id: "req_1",
            via: "rest",
            credentials: "none",
            ..Fields::default()
        });
        let mut data = segment.into_bytes();
        conn.execute(
            INSERT_SEGMENT,
            params![1, 1, 1, None::<String>, 1, 0, 0, data],
        )
        .unwrap();
        let tables = current_tables(&conn).unwrap().unwrap();
        assert!(tables.contains("request_segments") && tables.contains("drills"));
        // A segment of an earlier layout.
        data[0] = codec::VERSION - 1;
        conn.execute(
            INSERT_SEGMENT,
            params![2, 2, 2, None::<String>, 1, 0, 0, data],
        )
        .unwrap();
        assert!(current_tables(&conn).unwrap().is_none());
        conn.execute_batch("DELETE FROM request_segments WHERE first_seq = 2")
            .unwrap();
        // A table of another layout, or of no journal at all.
        conn.execute_batch("CREATE TABLE requests (seq INTEGER PRIMARY KEY)")
            .unwrap();
        assert!(current_tables(&conn).unwrap().is_none());
    }

    #[test]
    fn what_is_held_is_cut_to_the_ring_before_it_reaches_the_file() {
        let mut conn = open(None).unwrap();
        let mut writer = Writer::load(&conn).unwrap();
        // Five segments of one account and a few entries of another, ring 600.
        stage(&mut writer, "acct_a", 0..2_000, 600);
        stage(&mut writer, "acct_b", 0..3, 600);
        stage(&mut writer, "acct_a", 2_000..2_560, 600);
        let (held, bytes) = writer.held();
        // Whole segments go: at most one segment more than the ring stays in memory.
        assert!((603..603 + SEGMENT_ENTRIES).contains(&held), "{held}");
        assert!(
            bytes > 0 && bytes < held * 64,
            "{bytes} bytes for {held} entries"
        );
        writer.write(&mut conn, 600, 75).unwrap();
        assert_eq!(writer.held(), (0, 0));
        let a = Filter {
            accounts: Some(Accounts::One(Some("acct_a".into()))),
            not_before_wall_ms: i64::MIN,
            ..Filter::default()
        };
        let kept = all(&conn, &a).unwrap();
        assert_eq!(kept.len(), 600);
        // The newest, in order, numbered as they arrived (the other account's between them).
        let ids: Vec<&str> = kept.iter().map(|e| e.request_id.as_str()).collect();
        let want: Vec<String> = (1_960..2_560).map(|n| format!("req_{n}")).collect();
        assert_eq!(ids, want);
        assert_eq!(kept.last().map(|e| e.seq), Some(2_563));
        let b = Filter {
            accounts: Some(Accounts::One(Some("acct_b".into()))),
            not_before_wall_ms: i64::MIN,
            ..Filter::default()
        };
        let seqs: Vec<i64> = all(&conn, &b).unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![2_001, 2_002, 2_003]);
    }

    /// What the index keeps of a segment, comparable: its counts and span and its groups.
    fn told(index: &Index) -> Vec<(i64, Option<String>, i64, String)> {
        index
            .iter()
            .map(|(first, s)| {
                let m = &s.summary;
                (
                    *first,
                    s.account_id.clone(),
                    s.last_seq,
                    format!(
                        "{} {} {} {} {} {:?}",
                        m.entries,
                        m.oldest_wall_ms,
                        m.newest_wall_ms,
                        m.oldest_at_ms,
                        m.newest_at_ms,
                        m.groups
                    ),
                )
            })
            .collect()
    }

    #[test]
    fn the_index_kept_as_the_ring_turns_and_ages_is_the_file_summarised_again() {
        let mut conn = open(None).unwrap();
        let mut writer = Writer::load(&conn).unwrap();
        let varied = |account: &str, n: usize| {
            let mut o = observation(account, n);
            o.key_id = Some(Text::new(["key_1", "key_2", "key_3"][n % 3]));
            o.company_id = n.is_multiple_of(4).then(|| Text::new("cmp_1"));
            o.status = [200, 503, 404, 200, 429][n % 5];
            o.operation_id = Some(["listPlans", "getMe"][n % 2]);
            o.fault = n.is_multiple_of(7).then(|| Text::new("flt_1"));
            o.wall_ms = 2_000 + (n as i64) * 10;
            o.at_ms = 1_000 + (n as i64) * 10;
            Row::from(o, &|_| true)
        };
        let filters = |after: i64| {
            let one = |a: &str| Some(Accounts::One(Some(a.to_string())));
            vec![
                Filter {
                    accounts: one("acct_a"),
                    ..Filter::default()
                },
                Filter {
                    accounts: one("acct_a"),
                    key_id: Some("key_2".into()),
                    ..Filter::default()
                },
                Filter {
                    accounts: one("acct_b"),
                    status: Some((500, 599)),
                    ..Filter::default()
                },
                Filter {
                    accounts: one("acct_a"),
                    company_id: Some("cmp_1".into()),
                    operation_id: Some("getMe".into()),
                    ..Filter::default()
                },
                Filter {
                    accounts: Some(Accounts::All),
                    faulted: Some(true),
                    ..Filter::default()
                },
                Filter {
                    accounts: one("acct_a"),
                    min_seq: Some(after),
                    ..Filter::default()
                },
                Filter {
                    accounts: one("acct_b"),
                    not_before_wall_ms: 2_000 + (after * 10),
                    ..Filter::default()
                },
                Filter {
                    accounts: one("acct_a"),
                    since_ms: Some(1_000 + after * 10),
                    until_ms: Some(1_000 + after * 12),
                    ..Filter::default()
                },
                Filter {
                    accounts: one("acct_a"),
                    request_id: Some("req_7".into()),
                    ..Filter::default()
                },
            ]
        };
        let mut n = 0;
        for round in 0..12 {
            // Rounds of different sizes: segments close at 512 entries, the ring (900, slack
            // 100) turns and cuts a segment in two, whole segments go.
            let size = [700, 40, 1_300, 3][round % 4];
            writer.stage(
                (n..n + size).map(|k| varied(if k % 3 == 0 { "acct_b" } else { "acct_a" }, k)),
                900,
            );
            n += size;
            writer.write(&mut conn, 900, 100).unwrap();
            if round == 7 {
                // The age limit takes every segment whose newest entry is older than this.
                writer.expire(&conn, 2_000 + (n as i64 - 800) * 10).unwrap();
            }
            let kept = told(writer.index().unwrap());
            assert_eq!(kept, told(&index_of(&conn).unwrap()), "round {round}");
            for f in filters(n as i64 / 2) {
                let counted = count_indexed(&conn, writer.index(), &f).unwrap();
                assert_eq!(counted, count(&conn, &f).unwrap(), "round {round}: {f:?}");
            }
        }
        // Some filters counted something, others nothing: the comparison is not of zeros.
        let f = &filters(n as i64 / 2)[1];
        assert!(count(&conn, f).unwrap() > 100);
    }

    #[test]
    fn a_report_reads_only_the_segments_of_its_keys_and_the_same_entries_from_them() {
        let mut conn = open(None).unwrap();
        let mut writer = Writer::load(&conn).unwrap();
        // Blocks of 600 entries of one key, then of another: most segments hold one key only,
        // a few both.
        let row = |n: usize| {
            let mut o = observation("acct_a", n);
            o.key_id = Some(Text::new(if (n / 600).is_multiple_of(2) {
                "key_1"
            } else {
                "key_2"
            }));
            Row::from(o, &|_| true)
        };
        for block in 0..4 {
            writer.stage((block * 600..block * 600 + 600).map(row), 100_000);
            writer.write(&mut conn, 100_000, 1_000).unwrap();
        }
        let filter = Filter {
            accounts: Some(Accounts::One(Some("acct_a".into()))),
            not_before_wall_ms: i64::MIN,
            ..Filter::default()
        };
        let key_1 = |k: Option<&str>| k == Some("key_1");
        let ids = |entries: Vec<Entry>| -> Vec<String> {
            entries.into_iter().map(|e| e.request_id).collect()
        };
        let indexed = picked_for_checks(&conn, &filter, writer.index(), key_1, |_, k| key_1(k));
        let read_all = picked_for_checks(&conn, &filter, None, key_1, |_, k| key_1(k));
        let want: Vec<String> = (0..2_400)
            .filter(|n| (n / 600) % 2 == 0)
            .map(|n| format!("req_{n}"))
            .collect();
        assert_eq!(ids(indexed.unwrap()), want);
        assert_eq!(ids(read_all.unwrap()), want);
        // What is not read is not seen: taking every entry of the segments read shows key_2's
        // only where a segment holds both.
        let seen = picked_for_checks(&conn, &filter, writer.index(), key_1, |_, _| true).unwrap();
        let other = seen
            .iter()
            .filter(|e| e.key_id.as_deref() == Some("key_2"))
            .count();
        assert!(other < 600, "{other} entries of key_2 were read");
        let everything = picked_for_checks(&conn, &filter, None, key_1, |_, _| true).unwrap();
        assert_eq!(everything.len(), 2_400);
    }
}
