//! Benchmark data generator: replaces one company's token ledger with `--rows` generated
//! transactions, so `GET /tokens/transactions` can be timed on a large ledger against a small one.
//!
//! Run it on a database that `signage migrate --database <file>` has created (with fixtures):
//!
//! ```text
//! cargo run --release --example seed_ledger -- --database /tmp/big.db \
//!     --company cmp_0m5d4ruo5fepbn59k9ts --rows 1000000
//! ```
//!
//! The rows look like the fixtures' ledger (monthly grants, pack purchases, promotion spends and
//! refunds) and keep its invariants: ids are `ttx_` + 9 base-36 characters of the creation time in
//! milliseconds + 11 base-36 characters, so id order is time order; `balance_after` is the running
//! sum and never negative; `token_balances.balance` ends equal to the sum of the ledger. The
//! company's existing transactions are removed first, so the ledger holds exactly `--rows` rows.
//! Output is deterministic for a given `--seed` apart from the time base (now).

use argh::FromArgs;
use rusqlite::{params, Connection, OptionalExtension};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

#[derive(FromArgs)]
/// Replace one company's token ledger with generated transactions.
struct Args {
    /// database file (created by `signage migrate`)
    #[argh(option)]
    database: String,
    /// company id (cmp_…)
    #[argh(option)]
    company: String,
    /// number of transactions to generate
    #[argh(option)]
    rows: u64,
    /// seconds between consecutive transactions (default 30: 1M rows span about a year)
    #[argh(option, default = "30")]
    step_secs: i64,
    /// PRNG seed
    #[argh(option, default = "0x5eed_1ed6e7")]
    seed: u64,
}

const BASE36: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// xorshift64*: enough randomness for plausible rows, and no extra dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Same shape as `signage::ids::new_id`, but for a chosen time, so ids sort with `created_at`.
fn ttx_id(ms: u64, rng: &mut Rng) -> String {
    let mut out = String::with_capacity(24);
    out.push_str("ttx_");
    let mut stamp = [b'0'; 9];
    let mut t = ms;
    for slot in stamp.iter_mut().rev() {
        *slot = BASE36[(t % 36) as usize];
        t /= 36;
    }
    out.extend(stamp.iter().map(|&c| c as char));
    for _ in 0..11 {
        out.push(BASE36[rng.below(36) as usize] as char);
    }
    out
}

struct Pack {
    id: String,
    name: String,
    tokens: i64,
}

fn main() {
    let args: Args = argh::from_env();
    if let Err(e) = run(&args) {
        eprintln!("seed_ledger: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    if args.rows == 0 {
        return Err("--rows must be at least 1".into());
    }
    if args.step_secs < 1 {
        return Err("--step-secs must be at least 1".into());
    }
    let started = Instant::now();
    let mut conn = Connection::open(&args.database)?;
    // A bulk load into a scratch file: a rollback journal instead of a WAL the size of the ledger,
    // and no fsync. The server switches the file back to WAL when it opens it.
    conn.execute_batch(
        "PRAGMA journal_mode = DELETE;
         PRAGMA synchronous = OFF;
         PRAGMA foreign_keys = ON;
         PRAGMA cache_size = -65536;",
    )?;

    let company: Option<String> = conn
        .query_row(
            "SELECT name FROM companies WHERE id = ?1",
            [&args.company],
            |r| r.get(0),
        )
        .optional()?;
    let company_name = company.ok_or_else(|| format!("no company {}", args.company))?;

    let plan_name: String = conn.query_row(
        "SELECT p.name FROM companies c JOIN plans p ON p.id = c.plan_id WHERE c.id = ?1",
        [&args.company],
        |r| r.get(0),
    )?;
    let included: i64 = conn.query_row(
        "SELECT p.included_tokens_monthly FROM companies c JOIN plans p ON p.id = c.plan_id
         WHERE c.id = ?1",
        [&args.company],
        |r| r.get(0),
    )?;
    let grant_amount = included.max(100);

    let packs: Vec<Pack> = conn
        .prepare("SELECT id, name, tokens FROM token_packs ORDER BY tokens")?
        .query_map([], |r| {
            Ok(Pack {
                id: r.get(0)?,
                name: r.get(1)?,
                tokens: r.get(2)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    let promotions: Vec<(String, String)> = conn
        .prepare("SELECT id, name FROM promotions WHERE company_id = ?1 ORDER BY id")?
        .query_map([&args.company], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;

    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64;
    // The newest row is a minute old; the oldest `rows * step` seconds before that.
    let rows = i64::try_from(args.rows)?;
    let first = now - 60 - (rows - 1) * args.step_secs;
    let mut rng = Rng(args.seed | 1);

    let tx = conn.transaction()?;
    let removed = tx.execute(
        "DELETE FROM token_transactions WHERE company_id = ?1",
        [&args.company],
    )?;
    let mut balance: i64 = 0;
    let mut last_at = first;
    {
        let mut insert = tx.prepare(
            "INSERT INTO token_transactions
               (id, company_id, kind, amount, balance_after, description, token_pack_id,
                promotion_id, charge_id, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULL, ?9)",
        )?;
        let grant_text = format!("Monthly included tokens ({plan_name} plan)");
        for i in 0..rows {
            let at = first + i * args.step_secs;
            // Milliseconds within the second vary, but never past the next row's second.
            let ms = (at as u64) * 1000 + rng.below(1000);
            let id = ttx_id(ms, &mut rng);
            let roll = rng.below(100);
            let (kind, amount, description, pack, promo): (&str, i64, String, _, _) =
                if balance < 200 || roll < 5 {
                    ("grant", grant_amount, grant_text.clone(), None, None)
                } else if roll < 12 && !packs.is_empty() {
                    let p = &packs[rng.below(packs.len() as u64) as usize];
                    (
                        "purchase",
                        p.tokens,
                        format!("Purchased {}", p.name),
                        Some(p.id.as_str()),
                        None,
                    )
                } else if roll < 17 && !promotions.is_empty() {
                    let (pid, pname) = &promotions[rng.below(promotions.len() as u64) as usize];
                    (
                        "refund",
                        10 + rng.below(41) as i64,
                        format!("Refund for promotion '{pname}'"),
                        None,
                        Some(pid.as_str()),
                    )
                } else {
                    let cost = (20 + rng.below(201) as i64).min(balance);
                    if promotions.is_empty() {
                        ("spend", -cost, "Token spend".to_string(), None, None)
                    } else {
                        let (pid, pname) = &promotions[rng.below(promotions.len() as u64) as usize];
                        (
                            "spend",
                            -cost,
                            format!("Activated promotion '{pname}'"),
                            None,
                            Some(pid.as_str()),
                        )
                    }
                };
            balance += amount;
            insert.execute(params![
                id,
                args.company,
                kind,
                amount,
                balance,
                description,
                pack,
                promo,
                at
            ])?;
            last_at = at;
        }
    }
    tx.execute(
        "INSERT INTO token_balances (company_id, balance, updated_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (company_id) DO UPDATE SET balance = excluded.balance,
                                                updated_at = excluded.updated_at",
        params![args.company, balance, last_at],
    )?;
    // The invariant the API relies on, checked inside the same transaction.
    let (count, sum): (i64, i64) = tx.query_row(
        "SELECT count(*), coalesce(sum(amount), 0) FROM token_transactions WHERE company_id = ?1",
        [&args.company],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    if count != rows || sum != balance {
        return Err(
            format!("ledger check failed: {count} rows, sum {sum}, balance {balance}").into(),
        );
    }
    tx.commit()?;
    conn.execute_batch("PRAGMA journal_mode = WAL;")?;
    println!(
        "seeded {rows} token transactions for {company_name} ({}), replaced {removed}, balance {balance}, in {:.1} s",
        args.company,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
