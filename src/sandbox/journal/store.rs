//! The journal's own SQLite file (`<database>.requests`, beside the database and never part of
//! a snapshot): its schema, batched writes, the per-account ring and age limit, and the filtered,
//! keyset-paged reads. Entries are ordered by `seq`, the order they were written in, never by the
//! sandbox clock (which a restore or an advance moves).

use super::record::Row;
use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS requests (
    seq INTEGER PRIMARY KEY,
    account_id TEXT,
    company_id TEXT,
    key_id TEXT,
    client_id TEXT,
    at_ms INTEGER NOT NULL,
    wall_ms INTEGER NOT NULL,
    duration_us INTEGER NOT NULL,
    method TEXT NOT NULL,
    route TEXT,
    operation_id TEXT,
    creates INTEGER NOT NULL,
    list INTEGER NOT NULL,
    status INTEGER NOT NULL,
    problem_code TEXT,
    request_id TEXT NOT NULL,
    idempotency_key TEXT,
    replayed INTEGER NOT NULL,
    fault TEXT,
    retry_after INTEGER,
    via TEXT NOT NULL,
    tool TEXT,
    credentials TEXT NOT NULL,
    if_match INTEGER NOT NULL,
    query TEXT,
    body TEXT,
    body_truncated INTEGER NOT NULL,
    body_bytes INTEGER NOT NULL,
    body_hash TEXT,
    problem TEXT,
    next_cursor TEXT
);
CREATE INDEX IF NOT EXISTS requests_by_account ON requests (account_id, seq);
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
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS drills_by_account ON drills (account_id, seq);
";

/// Opens (creating) the journal at `path`, or in memory for a throw-away database.
pub fn open(path: Option<&std::path::Path>) -> rusqlite::Result<Connection> {
    let conn = match path {
        Some(p) => Connection::open(p)?,
        None => Connection::open_in_memory()?,
    };
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    if path.is_some() {
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")?;
    }
    conn.execute_batch(SCHEMA)?;
    Ok(conn)
}

/// Opens an existing journal read-only (the `signage readiness` command).
pub fn open_read_only(path: &std::path::Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(conn)
}

/// Entries per account, counted once at start-up and kept as rows are written and pruned.
pub type Counts = HashMap<Option<String>, i64>;

pub fn counts(conn: &Connection) -> rusqlite::Result<Counts> {
    let mut stmt = conn.prepare("SELECT account_id, count(*) FROM requests GROUP BY account_id")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// Writes `rows` in one transaction, then cuts every account past `max_entries + slack` back to
/// its newest `max_entries` (a slack lets the writer delete in bulk; reads cut exactly, slack 0).
pub fn insert(
    conn: &mut Connection,
    rows: impl Iterator<Item = Row>,
    counts: &mut Counts,
    max_entries: i64,
    slack: i64,
) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    {
        let mut stmt = tx.prepare_cached(
            "INSERT INTO requests (account_id, company_id, key_id, client_id, at_ms, wall_ms,
                duration_us, method, route, operation_id, creates, list, status, problem_code,
                request_id, idempotency_key, replayed, fault, retry_after, via, tool, credentials,
                if_match, query, body, body_truncated, body_bytes, body_hash, problem, next_cursor)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30)",
        )?;
        for r in rows {
            let o = &r.o;
            stmt.execute(params![
                o.account_id,
                o.company_id,
                o.key_id,
                o.client_id,
                o.at_ms,
                o.wall_ms,
                i64::try_from(o.duration_us).unwrap_or(i64::MAX),
                o.method.as_str(),
                o.route,
                o.operation_id,
                o.creates,
                o.list,
                o.status,
                r.problem_code,
                o.request_id,
                o.idempotency_key,
                o.replayed,
                o.fault,
                o.retry_after,
                o.via,
                o.tool,
                o.credentials,
                o.if_match,
                r.query,
                r.body,
                r.body_truncated,
                i64::try_from(r.body_bytes).unwrap_or(i64::MAX),
                r.body_hash,
                r.problem,
                o.next_cursor,
            ])?;
            // Looked up before inserting: the key is cloned once per account, not once per row.
            match counts.get_mut(&o.account_id) {
                Some(n) => *n += 1,
                None => {
                    counts.insert(o.account_id.clone(), 1);
                }
            }
        }
    }
    prune(&tx, counts, max_entries, slack)?;
    tx.commit()
}

/// Cuts every account holding more than `max_entries + slack` entries back to its newest
/// `max_entries`.
pub fn prune(
    conn: &Connection,
    counts: &mut Counts,
    max_entries: i64,
    slack: i64,
) -> rusqlite::Result<()> {
    let mut cut = conn.prepare_cached(
        "DELETE FROM requests WHERE account_id IS ?1 AND seq <
           (SELECT seq FROM requests WHERE account_id IS ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2)",
    )?;
    for (account, n) in counts.iter_mut() {
        if *n > max_entries + slack {
            cut.execute(params![account, max_entries - 1])?;
            *n = max_entries;
        }
    }
    Ok(())
}

/// The oldest sequence number within `account`'s newest `max_entries` (what a reader of a file
/// the writer prunes lazily must not go below).
pub fn ring_floor(
    conn: &Connection,
    account: Option<&str>,
    max_entries: i64,
) -> rusqlite::Result<Option<i64>> {
    conn.query_row(
        "SELECT seq FROM requests WHERE account_id IS ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2",
        params![account, max_entries - 1],
        |r| r.get(0),
    )
    .optional()
}

/// Removes entries older than `cutoff_wall_ms` (the age limit).
pub fn expire(conn: &Connection, cutoff_wall_ms: i64, counts: &mut Counts) -> rusqlite::Result<()> {
    let removed = conn.execute("DELETE FROM requests WHERE wall_ms < ?1", [cutoff_wall_ms])?;
    if removed > 0 {
        *counts = self::counts(conn)?;
    }
    conn.execute("DELETE FROM drills WHERE wall_ms < ?1", [cutoff_wall_ms])?;
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
    pub idempotency_key: Option<String>,
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
    fn sql(&self) -> (String, Vec<rusqlite::types::Value>) {
        let mut sql = String::from(" WHERE wall_ms >= ?");
        let mut args: Vec<rusqlite::types::Value> = vec![self.not_before_wall_ms.into()];
        let mut eq = |column: &str, v: &Option<String>, sql: &mut String| {
            if let Some(v) = v {
                sql.push_str(&format!(" AND {column} = ?"));
                args.push(v.clone().into());
            }
        };
        match &self.accounts {
            Some(Accounts::One(Some(a))) => eq("account_id", &Some(a.clone()), &mut sql),
            Some(Accounts::One(None)) => sql.push_str(" AND account_id IS NULL"),
            Some(Accounts::All) | None => {}
        }
        eq("company_id", &self.company_id, &mut sql);
        eq("key_id", &self.key_id, &mut sql);
        eq("operation_id", &self.operation_id, &mut sql);
        eq("idempotency_key", &self.idempotency_key, &mut sql);
        eq("via", &self.via, &mut sql);
        eq("tool", &self.tool, &mut sql);
        eq("request_id", &self.request_id, &mut sql);
        if let Some((lo, hi)) = self.status {
            sql.push_str(" AND status BETWEEN ? AND ?");
            args.push(i64::from(lo).into());
            args.push(i64::from(hi).into());
        }
        match self.faulted {
            Some(true) => sql.push_str(" AND fault IS NOT NULL"),
            Some(false) => sql.push_str(" AND fault IS NULL"),
            None => {}
        }
        if let Some(seq) = self.min_seq {
            sql.push_str(" AND seq >= ?");
            args.push(seq.into());
        }
        if let Some(t) = self.since_ms {
            sql.push_str(" AND at_ms >= ?");
            args.push(t.into());
        }
        if let Some(t) = self.until_ms {
            sql.push_str(" AND at_ms <= ?");
            args.push(t.into());
        }
        (sql, args)
    }
}

/// One journal entry as the API shows it. Member order is the JSON order.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// The sequence number as text: also the list's cursor.
    pub id: String,
    pub object: &'static str,
    pub request_id: String,
    /// The sandbox clock when the request arrived.
    pub at: String,
    pub account_id: Option<String>,
    pub company_id: Option<String>,
    pub key_id: Option<String>,
    pub client_id: Option<String>,
    pub via: String,
    pub tool: Option<String>,
    pub method: String,
    pub route: Option<String>,
    pub operation_id: Option<String>,
    pub status: u16,
    pub problem_code: Option<String>,
    pub duration_ms: Option<f64>,
    pub credentials: String,
    pub idempotency_key: Option<String>,
    pub idempotent_replayed: bool,
    pub if_match: bool,
    pub fault: Option<String>,
    pub retry_after: Option<u32>,
    pub query: Option<Value>,
    pub body: Option<Value>,
    pub body_truncated: bool,
    pub body_bytes: i64,
    pub next_cursor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
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
    pub body_hash: Option<String>,
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

const COLUMNS: &str = "seq, account_id, company_id, key_id, client_id, at_ms, wall_ms,
    duration_us, method, route, operation_id, creates, list, status, problem_code, request_id,
    idempotency_key, replayed, fault, retry_after, via, tool, credentials, if_match, query, body,
    body_truncated, body_bytes, body_hash, problem, next_cursor";

fn from_row(r: &rusqlite::Row<'_>, with_problem: bool) -> rusqlite::Result<Entry> {
    let json = |text: Option<String>| text.and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let truncated: bool = r.get("body_truncated")?;
    let body_text: Option<String> = r.get("body")?;
    let body = if truncated {
        body_text.map(Value::String)
    } else {
        json(body_text)
    };
    let seq: i64 = r.get("seq")?;
    let at_ms: i64 = r.get("at_ms")?;
    Ok(Entry {
        id: seq.to_string(),
        object: "request",
        request_id: r.get("request_id")?,
        at: rfc3339_ms(at_ms),
        account_id: r.get("account_id")?,
        company_id: r.get("company_id")?,
        key_id: r.get("key_id")?,
        client_id: r.get("client_id")?,
        via: r.get("via")?,
        tool: r.get("tool")?,
        method: r.get("method")?,
        route: r.get("route")?,
        operation_id: r.get("operation_id")?,
        status: r.get("status")?,
        problem_code: r.get("problem_code")?,
        duration_ms: Some(r.get::<_, i64>("duration_us")? as f64 / 1000.0),
        credentials: r.get("credentials")?,
        idempotency_key: r.get("idempotency_key")?,
        idempotent_replayed: r.get("replayed")?,
        if_match: r.get("if_match")?,
        fault: r.get("fault")?,
        retry_after: r.get("retry_after")?,
        query: json(r.get("query")?),
        body,
        body_truncated: truncated,
        body_bytes: r.get("body_bytes")?,
        next_cursor: r.get("next_cursor")?,
        problem: if with_problem {
            json(r.get("problem")?)
        } else {
            None
        },
        seq,
        wall_ms: r.get("wall_ms")?,
        at_ms,
        creates: r.get("creates")?,
        list: r.get("list")?,
        body_hash: r.get("body_hash")?,
    })
}

/// A page of entries matching `filter`, newest first, older than `before` (a sequence number).
pub fn page(
    conn: &Connection,
    filter: &Filter,
    before: Option<i64>,
    fetch: i64,
) -> rusqlite::Result<Vec<Entry>> {
    let (mut sql, mut args) = filter.sql();
    if let Some(b) = before {
        sql.push_str(" AND seq < ?");
        args.push(b.into());
    }
    let sql = format!("SELECT {COLUMNS} FROM requests{sql} ORDER BY seq DESC LIMIT ?");
    args.push(fetch.into());
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| from_row(r, false))?;
    rows.collect()
}

/// How many entries match `filter`.
pub fn count(conn: &Connection, filter: &Filter) -> rusqlite::Result<i64> {
    let (sql, args) = filter.sql();
    conn.query_row(
        &format!("SELECT count(*) FROM requests{sql}"),
        rusqlite::params_from_iter(args),
        |r| r.get(0),
    )
}

/// Every entry matching `filter`, oldest first (what the readiness checks read).
pub fn all(conn: &Connection, filter: &Filter) -> rusqlite::Result<Vec<Entry>> {
    let (sql, args) = filter.sql();
    let sql = format!("SELECT {COLUMNS} FROM requests{sql} ORDER BY seq");
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| from_row(r, false))?;
    rows.collect()
}

/// The entry `seq` if `filter` admits it, with its problem body.
pub fn by_seq(conn: &Connection, filter: &Filter, seq: i64) -> rusqlite::Result<Option<Entry>> {
    let (sql, mut args) = filter.sql();
    let sql = format!("SELECT {COLUMNS} FROM requests{sql} AND seq = ?");
    args.push(seq.into());
    conn.query_row(&sql, rusqlite::params_from_iter(args), |r| {
        from_row(r, true)
    })
    .optional()
}

/// The newest entry of `request_id` that `filter` admits, with its problem body.
pub fn by_request_id(
    conn: &Connection,
    filter: &Filter,
    request_id: &str,
) -> rusqlite::Result<Option<Entry>> {
    let mut f = filter.clone();
    f.request_id = Some(request_id.to_string());
    let (sql, args) = f.sql();
    let sql = format!("SELECT {COLUMNS} FROM requests{sql} ORDER BY seq DESC LIMIT 1");
    conn.query_row(&sql, rusqlite::params_from_iter(args), |r| {
        from_row(r, true)
    })
    .optional()
}
