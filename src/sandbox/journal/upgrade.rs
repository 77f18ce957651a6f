//! Journal files of earlier signage versions, brought up to date when a server opens them: the
//! first layout's table of one row per request is converted into segments, and segments of the
//! second layout are rewritten with digests of idempotency keys and copies scrubbed by today's
//! rules, so an upgraded file keeps its history and no longer the secrets it held.

/// Segments of the second layout, written before the journal kept only digests of idempotency keys
/// and replaced secret-holding names: rewritten once, in the current layout, with their keys
/// digested and their query, body and problem copies scrubbed again ([`super::scrub`]); the file
/// is then vacuumed, so the old bytes are gone from it too.
pub mod second_layout {
    use crate::sandbox::journal::codec::{self, Decoder, Fields};
    use crate::sandbox::journal::scrub;
    use crate::sandbox::journal::store::malformed;
    use rusqlite::{params, Connection};

    /// A text copy (JSON) scrubbed again; `None` when it is not JSON (a cut body: dropped).
    fn rescrub(text: Option<&str>) -> Option<String> {
        let mut v: serde_json::Value = serde_json::from_str(text?).ok()?;
        scrub::value(&mut v);
        Some(v.to_string())
    }

    pub fn scrub(conn: &mut Connection) -> rusqlite::Result<()> {
        let old: Vec<(i64, Option<String>, Vec<u8>)> = conn
            .prepare(
                "SELECT first_seq, account_id, data FROM request_segments
                 WHERE substr(data, 1, 1) = ?1",
            )?
            .query_map([vec![codec::VERSION_2]], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        if old.is_empty() {
            return Ok(());
        }
        let tx = conn.transaction()?;
        for (first_seq, account, data) in &old {
            let entries: Vec<Fields<'_>> = Decoder::new(data, *first_seq, account.as_deref())
                .map_err(malformed)?
                .collect::<Result<_, _>>()
                .map_err(malformed)?;
            // Owned texts first, then the entries borrow them.
            let owned: Vec<[Option<String>; 4]> = entries
                .iter()
                .map(|f| {
                    [
                        f.idempotency_key.map(|k| {
                            if k.starts_with("sha256:") {
                                k.to_string()
                            } else {
                                crate::http::idempotency::digest(k)
                            }
                        }),
                        rescrub(f.query),
                        if f.body_truncated {
                            None
                        } else {
                            rescrub(f.body)
                        },
                        rescrub(f.problem),
                    ]
                })
                .collect();
            let mut segment = codec::Encoder::new(*first_seq);
            for (f, [key, query, body, problem]) in entries.iter().zip(&owned) {
                segment.push(&Fields {
                    idempotency_key: key.as_deref(),
                    query: query.as_deref(),
                    body: body.as_deref(),
                    body_truncated: f.body_truncated && body.is_some(),
                    problem: problem.as_deref(),
                    ..*f
                });
            }
            tx.execute(
                "UPDATE request_segments SET data = ?2 WHERE first_seq = ?1",
                params![first_seq, segment.bytes()],
            )?;
        }
        tx.commit()?;
        conn.execute_batch("VACUUM")
    }
}

/// The row-per-request layout of the first journal (table `requests`), converted into segments
/// when a server opens such a file, so an upgrade keeps what was journaled.
pub mod legacy {
    use crate::sandbox::journal::codec::Fields;
    use rusqlite::Connection;

    /// One row of the old table, owned.
    struct Legacy {
        seq: i64,
        account_id: Option<String>,
        company_id: Option<String>,
        key_id: Option<String>,
        client_id: Option<String>,
        at_ms: i64,
        wall_ms: i64,
        duration_us: i64,
        method: String,
        route: Option<String>,
        operation_id: Option<String>,
        creates: bool,
        list: bool,
        status: u16,
        problem_code: Option<String>,
        request_id: String,
        idempotency_key: Option<String>,
        replayed: bool,
        fault: Option<String>,
        retry_after: Option<u32>,
        via: String,
        tool: Option<String>,
        credentials: String,
        if_match: bool,
        query: Option<String>,
        body: Option<String>,
        body_truncated: bool,
        body_bytes: i64,
        problem: Option<String>,
        next_cursor: Option<String>,
    }

    impl Legacy {
        fn fields(&self) -> Fields<'_> {
            Fields {
                seq: self.seq,
                account_id: self.account_id.as_deref(),
                company_id: self.company_id.as_deref(),
                key_id: self.key_id.as_deref(),
                client_id: self.client_id.as_deref(),
                at_ms: self.at_ms,
                wall_ms: self.wall_ms,
                duration_us: self.duration_us,
                method: &self.method,
                route: self.route.as_deref(),
                operation_id: self.operation_id.as_deref(),
                creates: self.creates,
                list: self.list,
                status: self.status,
                problem_code: self.problem_code.as_deref(),
                request_id: &self.request_id,
                idempotency_key: self.idempotency_key.as_deref(),
                replayed: self.replayed,
                fault: self.fault.as_deref(),
                retry_after: self.retry_after,
                via: &self.via,
                tool: self.tool.as_deref(),
                credentials: &self.credentials,
                if_match: self.if_match,
                query: self.query.as_deref(),
                body: self.body.as_deref(),
                body_truncated: self.body_truncated,
                body_bytes: self.body_bytes,
                problem: self.problem.as_deref(),
                next_cursor: self.next_cursor.as_deref(),
                if_match_any: false,
                path: None,
                shape: None,
                test_name: None,
            }
        }
    }

    /// Old rows per converted batch: the batches follow each other in `seq`, as the writer's do.
    const WINDOW: i64 = 1024;

    pub fn convert(conn: &mut Connection) -> rusqlite::Result<()> {
        let old: bool = conn.query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'requests'",
            [],
            |r| r.get(0),
        )?;
        if !old {
            return Ok(());
        }
        let tx = conn.transaction()?;
        {
            let mut read = tx.prepare(
                "SELECT seq, account_id, company_id, key_id, client_id, at_ms, wall_ms,
                    duration_us, method, route, operation_id, creates, list, status, problem_code,
                    request_id, idempotency_key, replayed, fault, retry_after, via, tool,
                    credentials, if_match, query, body, body_truncated, body_bytes, problem,
                    next_cursor
                 FROM requests ORDER BY seq",
            )?;
            let rows = read.query_map([], |r| {
                Ok(Legacy {
                    seq: r.get(0)?,
                    account_id: r.get(1)?,
                    company_id: r.get(2)?,
                    key_id: r.get(3)?,
                    client_id: r.get(4)?,
                    at_ms: r.get(5)?,
                    wall_ms: r.get(6)?,
                    duration_us: r.get(7)?,
                    method: r.get(8)?,
                    route: r.get(9)?,
                    operation_id: r.get(10)?,
                    creates: r.get(11)?,
                    list: r.get(12)?,
                    status: r.get(13)?,
                    problem_code: r.get(14)?,
                    request_id: r.get(15)?,
                    // Only a digest of a key is kept (a client may have sent a secret as one).
                    idempotency_key: r
                        .get::<_, Option<String>>(16)?
                        .map(|k| crate::http::idempotency::digest(&k)),
                    replayed: r.get(17)?,
                    fault: r.get(18)?,
                    retry_after: r.get(19)?,
                    via: r.get(20)?,
                    tool: r.get(21)?,
                    credentials: r.get(22)?,
                    if_match: r.get(23)?,
                    query: r.get(24)?,
                    body: r.get(25)?,
                    body_truncated: r.get(26)?,
                    body_bytes: r.get(27)?,
                    problem: r.get(28)?,
                    next_cursor: r.get(29)?,
                })
            })?;
            let mut window: Vec<Legacy> = Vec::new();
            for row in rows {
                let row = row?;
                if window
                    .first()
                    .is_some_and(|w| row.seq / WINDOW != w.seq / WINDOW)
                {
                    write_window(&tx, &window)?;
                    window.clear();
                }
                window.push(row);
            }
            write_window(&tx, &window)?;
        }
        tx.execute_batch("DROP TABLE requests")?;
        tx.commit()
    }

    /// One window of old rows as one batch: a segment per account.
    fn write_window(conn: &Connection, window: &[Legacy]) -> rusqlite::Result<()> {
        let Some(first) = window.first() else {
            return Ok(());
        };
        let batch = first.seq / WINDOW + 1;
        let mut accounts: Vec<Option<&str>> =
            window.iter().map(|l| l.account_id.as_deref()).collect();
        accounts.sort_unstable();
        accounts.dedup();
        for account in accounts {
            let mine: Vec<Fields<'_>> = window
                .iter()
                .filter(|l| l.account_id.as_deref() == account)
                .map(Legacy::fields)
                .collect();
            crate::sandbox::journal::store::write_segment(conn, batch, account, &mine)?;
        }
        Ok(())
    }
}
