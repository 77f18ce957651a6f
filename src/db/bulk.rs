//! Many rows in few statements: a bulk write (the demo history, the fleet's plays) inserts its rows
//! [`ROWS`] to a statement, so the per-statement work (binding, stepping, resetting, the statement
//! journal) is paid once per chunk instead of once per row. Rows are inserted in the order given,
//! exactly as one `INSERT` each would insert them (rowids, conflicts and triggers alike: SQLite runs
//! a multi-row `VALUES` one row after the other).
//!
//! A chunk's statement is cached by its text; a remainder is written one row at a time, so a table
//! needs two cached statements whatever the count. Measured on the fleet's hourly rows (a few dozen
//! per step), remainder chunks of 8 cost more than the statements they saved.
//!
//! The statement journal. A multi-row statement that can abort halfway (an immediate foreign key,
//! or a CHECK, NOT NULL or UNIQUE rule that aborts) runs with a statement journal: a copy of every
//! page it first changes, so that SQLite can undo it alone. A chunk of 64 rows into an indexed
//! table changes dozens of pages, past the journal's 64 KiB buffer, so the copies go on to a
//! temporary file: memory traffic and system calls that an instruction count does not show (a
//! fifth of a 24 h advance's time before schema V38). A single-row INSERT needs no journal. A hot
//! bulk write avoids it with `INSERT OR FAIL` on a table whose keys are checked at commit
//! (`DEFERRABLE INITIALLY DEFERRED`): nothing in the statement can abort, and a broken rule still
//! fails the write, and so the transaction, at once or at COMMIT.

use super::error::DbError;
use rusqlite::{Connection, Statement};

/// Rows per statement of a full chunk.
pub const ROWS: usize = 64;

/// One bulk `INSERT`: `head` (`INSERT INTO t (a, b)`), each row's `VALUES` tuple (`(?, ?)`, with
/// `params` placeholders, all anonymous `?`), and an optional `tail` (`ON CONFLICT …`).
pub struct Insert<'a> {
    pub head: &'a str,
    pub row: &'a str,
    pub params: usize,
    pub tail: &'a str,
}

impl Insert<'_> {
    fn sql(&self, rows: usize) -> String {
        let mut sql = String::with_capacity(
            self.head.len() + 8 + rows * (self.row.len() + 2) + self.tail.len() + 1,
        );
        sql.push_str(self.head);
        sql.push_str(" VALUES ");
        for i in 0..rows {
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(self.row);
        }
        if !self.tail.is_empty() {
            sql.push(' ');
            sql.push_str(self.tail);
        }
        sql
    }

    /// Inserts `rows` in order; `bind(statement, first, row)` binds one row's values at the
    /// 1-based parameter indexes `first`, `first + 1`, …
    pub fn run<T>(
        &self,
        tx: &Connection,
        rows: &[T],
        mut bind: impl FnMut(&mut Statement<'_>, usize, &T) -> rusqlite::Result<()>,
    ) -> Result<(), DbError> {
        let mut rest = rows;
        for size in [ROWS, 1] {
            if rest.len() < size {
                continue;
            }
            let mut stmt = tx.prepare_cached(&self.sql(size))?;
            while rest.len() >= size {
                let (chunk, after) = rest.split_at(size);
                for (i, row) in chunk.iter().enumerate() {
                    bind(&mut stmt, i * self.params + 1, row)?;
                }
                stmt.raw_execute()?;
                rest = after;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_go_in_in_order_in_chunks_of_every_size() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (n INTEGER NOT NULL, label TEXT NOT NULL, kind TEXT NOT NULL)",
        )
        .unwrap();
        let insert = Insert {
            head: "INSERT INTO t (n, label, kind)",
            row: "(?, ?, 'fixed')",
            params: 2,
            tail: "",
        };
        // Every split: full chunks, remainder chunks and single rows, and none at all.
        for count in [0, 1, 2, 63, 64, 65, 128, 200] {
            let rows: Vec<(i64, String)> = (0..count).map(|n| (n, format!("row {n}"))).collect();
            let tx = conn.transaction().unwrap();
            tx.execute("DELETE FROM t", []).unwrap();
            insert
                .run(&tx, &rows, |stmt, i, (n, label)| {
                    stmt.raw_bind_parameter(i, n)?;
                    stmt.raw_bind_parameter(i + 1, label)
                })
                .unwrap();
            let got: Vec<(i64, String, String)> = tx
                .prepare("SELECT n, label, kind FROM t ORDER BY rowid")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            tx.commit().unwrap();
            let want: Vec<(i64, String, String)> = rows
                .into_iter()
                .map(|(n, l)| (n, l, "fixed".to_string()))
                .collect();
            assert_eq!(got, want, "{count} rows");
        }
    }

    #[test]
    fn a_row_conflicting_with_one_of_its_own_statement_takes_the_upsert() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE c (k TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID")
            .unwrap();
        let count = Insert {
            head: "INSERT INTO c (k, n)",
            row: "(?, 1)",
            params: 1,
            tail: "ON CONFLICT (k) DO UPDATE SET n = n + 1",
        };
        // 64 + 9 rows: a chunk and single rows, each seeing keys written before in its statement.
        let keys: Vec<&str> = (0..73).map(|i| ["a", "b", "c"][i % 3]).collect();
        let tx = conn.transaction().unwrap();
        count
            .run(&tx, &keys, |stmt, i, k| stmt.raw_bind_parameter(i, k))
            .unwrap();
        let got: Vec<(String, i64)> = tx
            .prepare("SELECT k, n FROM c ORDER BY k")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got, [("a".into(), 25), ("b".into(), 24), ("c".into(), 24)]);
    }
}
