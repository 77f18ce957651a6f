//! The token ledger. Every change to a company's token balance is one row of `token_transactions`;
//! `token_balances` caches their sum so reads need not add up a million rows.
//!
//! All postings happen inside the caller's `BEGIN IMMEDIATE` transaction ([`crate::db::Db::write`]):
//! the balance is read under the write lock, so two concurrent spends cannot both pass the check
//! against the same old balance, and the cache can never drift from the sum of the rows.
//!
//! A transaction's id is drawn inside that same transaction, after the write lock is taken: ids are
//! monotonic within the process ([`crate::ids`]), so id order (the order every list uses) is
//! commit order, and the ledger listed by id is an unbroken chain of `balance_after` values.

pub use crate::db::billing_rule::month_bounds;
use crate::db::billing_rule::DUE_AFTER_PERIOD_SECS;
use crate::db::{DbError, Tx};
use crate::events;
use crate::ids::Kind;
use crate::time::rfc3339;
use rusqlite::{Connection, OptionalExtension, Row};
use schemars::JsonSchema;
use serde::Serialize;

/// Columns read by [`TokenTransaction::from_row`], for `token_transactions t`.
pub const TX_COLUMNS: &str = "t.id, t.company_id, t.kind, t.amount, t.balance_after, t.description,
    t.token_pack_id, t.promotion_id, t.charge_id, t.created_at";

/// Why the ledger refused or failed a posting; `http::error` maps each into its response.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// A posting would take the balance below zero (402); nothing was written.
    #[error("insufficient tokens: balance {balance}, required {required}")]
    InsufficientTokens { balance: i64, required: i64 },
    /// A posting would overflow the balance (409).
    #[error("the token balance would overflow")]
    Overflow,
    /// The company does not exist (404).
    #[error("no company {0}")]
    UnknownCompany(String),
    /// A transaction written in this very database transaction could not be read back (500).
    #[error("token transaction {0} vanished")]
    Vanished(String),
    /// The balance is not the one the write expected ([`crate::db::WriteIntent::expected_balance`]);
    /// nothing was written.
    #[error("the balance is {balance}, not the expected {expected}")]
    BalanceMoved { expected: i64, balance: i64 },
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<rusqlite::Error> for LedgerError {
    fn from(e: rusqlite::Error) -> Self {
        LedgerError::Db(DbError::from(e))
    }
}

pub const TX_KINDS: &[&str] = &["grant", "purchase", "spend", "refund"];

/// One entry of the token ledger: an amount and the balance after it.
// Field order is the order of the JSON members.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TokenTransaction {
    #[schemars(transform = Kind::TokenTransaction)]
    pub id: String,
    #[schemars(extend("const" = "token_transaction"))]
    object: &'static str,
    pub company_id: String,
    #[schemars(transform = &crate::validate::OneOf(TX_KINDS))]
    pub kind: String,
    /// Positive credits, negative debits.
    pub amount: i64,
    #[schemars(range(min = 0))]
    pub balance_after: i64,
    pub description: String,
    pub token_pack_id: Option<String>,
    pub promotion_id: Option<String>,
    pub charge_id: Option<String>,
    // RFC 3339 (this layer sits below the routes' `Time`).
    #[schemars(extend("format" = "date-time"))]
    pub created_at: String,
}

impl TokenTransaction {
    /// Reads a row of [`TX_COLUMNS`] by column name.
    pub fn from_row(r: &Row<'_>) -> rusqlite::Result<TokenTransaction> {
        Ok(TokenTransaction {
            id: r.get("id")?,
            object: "token_transaction",
            company_id: r.get("company_id")?,
            kind: r.get("kind")?,
            amount: r.get("amount")?,
            balance_after: r.get("balance_after")?,
            description: r.get("description")?,
            token_pack_id: r.get("token_pack_id")?,
            promotion_id: r.get("promotion_id")?,
            charge_id: r.get("charge_id")?,
            created_at: rfc3339(r.get("created_at")?),
        })
    }
}

pub fn load_transaction(conn: &Connection, id: &str) -> Result<TokenTransaction, LedgerError> {
    conn.prepare_cached(&format!(
        "SELECT {TX_COLUMNS} FROM token_transactions t WHERE t.id = ?1"
    ))?
    .query_row([id], TokenTransaction::from_row)
    .optional()?
    .ok_or_else(|| LedgerError::Vanished(id.to_string()))
}

/// A company's token balance.
// Field order is the order of the JSON members.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TokenBalance {
    #[schemars(extend("const" = "token_balance"))]
    object: &'static str,
    pub company_id: String,
    #[schemars(range(min = 0))]
    pub balance: i64,
    // RFC 3339.
    #[schemars(extend("format" = "date-time"))]
    pub updated_at: String,
}

/// The balance of a company. A company that never had a ledger row has a zero balance, dated from
/// the company's creation.
pub fn balance(conn: &Connection, company_id: &str) -> Result<TokenBalance, LedgerError> {
    let row: Option<(i64, i64)> = conn
        .prepare_cached("SELECT balance, updated_at FROM token_balances WHERE company_id = ?1")?
        .query_row([company_id], |r| {
            Ok((r.get("balance")?, r.get("updated_at")?))
        })
        .optional()?;
    let (balance, updated_at) = match row {
        Some(b) => b,
        None => {
            let created: Option<i64> = conn
                .prepare_cached("SELECT created_at FROM companies WHERE id = ?1")?
                .query_row([company_id], |r| r.get(0))
                .optional()?;
            let created =
                created.ok_or_else(|| LedgerError::UnknownCompany(company_id.to_string()))?;
            (0, created)
        }
    };
    Ok(TokenBalance {
        object: "token_balance",
        company_id: company_id.to_string(),
        balance,
        updated_at: rfc3339(updated_at),
    })
}

/// An event payload as JSON; a value that cannot be one fails as the SQL write it is for.
fn payload<T: Serialize>(value: &T) -> Result<serde_json::Value, LedgerError> {
    serde_json::to_value(value)
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)).into())
}

fn current_balance(tx: &Connection, company_id: &str) -> Result<i64, LedgerError> {
    Ok(tx
        .prepare_cached("SELECT balance FROM token_balances WHERE company_id = ?1")?
        .query_row([company_id], |r| r.get::<_, i64>(0))
        .optional()?
        .unwrap_or(0))
}

struct Posting<'a> {
    kind: &'static str,
    amount: i64,
    description: &'a str,
    token_pack_id: Option<&'a str>,
    promotion_id: Option<&'a str>,
    charge_id: Option<&'a str>,
}

/// Appends one transaction and moves the cached balance with it. Refuses (402) a posting that
/// would take the balance below zero; nothing is written then.
fn post(
    tx: &Tx,
    company_id: &str,
    p: &Posting<'_>,
    now: i64,
) -> Result<TokenTransaction, LedgerError> {
    let before = current_balance(tx, company_id)?;
    if let Some(expected) = tx.take_expected_balance(company_id) {
        if expected != before {
            return Err(LedgerError::BalanceMoved {
                expected,
                balance: before,
            });
        }
    }
    let after = before.checked_add(p.amount).ok_or(LedgerError::Overflow)?;
    if after < 0 {
        return Err(LedgerError::InsufficientTokens {
            balance: before,
            required: -p.amount,
        });
    }
    // Drawn under the write lock, so the id sorts after every committed posting (see module doc).
    let id = tx.new_id(Kind::TokenTransaction);
    tx.prepare_cached(
        "INSERT INTO token_transactions
            (id, company_id, kind, amount, balance_after, description, token_pack_id, promotion_id, charge_id, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(rusqlite::params![
        id,
        company_id,
        p.kind,
        p.amount,
        after,
        p.description,
        p.token_pack_id,
        p.promotion_id,
        p.charge_id,
        now
    ])?;
    tx.prepare_cached(
        "INSERT INTO token_balances (company_id, balance, updated_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (company_id) DO UPDATE SET balance = excluded.balance, updated_at = excluded.updated_at",
    )?
    .execute(rusqlite::params![company_id, after, now])?;
    load_transaction(tx, &id)
}

/// Spends `amount` tokens for a promotion activation. A zero cost leaves no ledger row (the
/// ledger records only real movements) and returns `None`.
pub fn spend_for_promotion(
    tx: &Tx,
    company_id: &str,
    promotion_id: &str,
    promotion_name: &str,
    amount: i64,
    now: i64,
) -> Result<Option<TokenTransaction>, LedgerError> {
    if amount <= 0 {
        return Ok(None);
    }
    let description = format!("Activated promotion '{promotion_name}'");
    let t = post(
        tx,
        company_id,
        &Posting {
            kind: "spend",
            amount: -amount,
            description: &description,
            token_pack_id: None,
            promotion_id: Some(promotion_id),
            charge_id: None,
        },
        now,
    )?;
    events::record(
        tx,
        company_id,
        "tokens.spent",
        "token_transaction",
        &t.id,
        &payload(&t)?,
    )?;
    Ok(Some(t))
}

// What a purchase wrote; also the `data` of `tokens.purchased` and `tokens.granted` (no description
// of its own there: the event type's says what it is).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Purchase {
    /// The ledger entry.
    #[schemars(transform = crate::jsonschema::component::<TokenTransaction>)]
    pub transaction: TokenTransaction,
    #[schemars(transform = crate::ids::Kind::Charge)]
    pub charge_id: String,
    #[schemars(transform = crate::ids::Kind::Invoice)]
    pub invoice_id: String,
}

/// Buys a token pack: credits the balance, and bills the price as a `token_pack` charge on the
/// company's open invoice in the pack's currency (opening one for the current month if none is).
/// Returns `Ok(None)` when the pack does not exist.
pub fn purchase_pack(
    tx: &Tx,
    company_id: &str,
    pack_id: &str,
    now: i64,
) -> Result<Option<Purchase>, LedgerError> {
    let pack: Option<(String, i64, i64, String)> = tx
        .prepare_cached(
            "SELECT name, tokens, price_cents, currency FROM token_packs WHERE id = ?1",
        )?
        .query_row([pack_id], |r| {
            Ok((
                r.get("name")?,
                r.get("tokens")?,
                r.get("price_cents")?,
                r.get("currency")?,
            ))
        })
        .optional()?;
    let Some((name, tokens, price_cents, currency)) = pack else {
        return Ok(None);
    };
    let invoice_id = open_invoice(tx, company_id, &currency, now)?;
    let charge_id = charge(
        tx,
        &ChargeRow {
            company_id,
            invoice_id: &invoice_id,
            kind: "token_pack",
            description: &format!("Token pack: {name}"),
            amount_cents: price_cents,
            currency: &currency,
        },
        now,
    )?;
    let description = format!("Purchased {name}");
    let transaction = post(
        tx,
        company_id,
        &Posting {
            kind: "purchase",
            amount: tokens,
            description: &description,
            token_pack_id: Some(pack_id),
            promotion_id: None,
            charge_id: Some(&charge_id),
        },
        now,
    )?;
    let bought = Purchase {
        transaction,
        charge_id,
        invoice_id,
    };
    events::record(
        tx,
        company_id,
        "tokens.purchased",
        "token_transaction",
        &bought.transaction.id,
        &payload(&bought)?,
    )?;
    Ok(Some(bought))
}

/// What a month's renewal wrote: the grant of the plan's tokens (if the plan includes any), the
/// subscription charge and the month's invoice.
#[derive(Debug, Serialize)]
pub struct Renewal {
    pub transaction: Option<TokenTransaction>,
    pub charge_id: String,
    pub invoice_id: String,
}

/// Renews a company's subscription for the UTC month starting at `month_start`: the plan's monthly
/// price as a `subscription` charge on that month's invoice (opened if need be) and the plan's
/// included tokens as a `grant`, both dated `month_start`; records `tokens.granted` (with the
/// charge and invoice) when tokens were granted.
pub fn renew_subscription(
    tx: &Tx,
    company_id: &str,
    month_start: i64,
) -> Result<Renewal, LedgerError> {
    let (plan, price, currency, included): (String, i64, String, i64) = tx
        .prepare_cached(
            "SELECT p.name, p.monthly_price_cents, p.currency, p.included_tokens_monthly
             FROM companies c JOIN plans p ON p.id = c.plan_id WHERE c.id = ?1",
        )?
        .query_row([company_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()?
        .ok_or_else(|| LedgerError::UnknownCompany(company_id.to_string()))?;
    let invoice_id = month_invoice(tx, company_id, &currency, month_start)?;
    let charge_id = charge(
        tx,
        &ChargeRow {
            company_id,
            invoice_id: &invoice_id,
            kind: "subscription",
            description: &format!("{plan} plan - monthly subscription"),
            amount_cents: price,
            currency: &currency,
        },
        month_start,
    )?;
    let transaction = if included > 0 {
        let description = format!("Monthly included tokens ({plan} plan)");
        Some(post(
            tx,
            company_id,
            &Posting {
                kind: "grant",
                amount: included,
                description: &description,
                token_pack_id: None,
                promotion_id: None,
                charge_id: Some(&charge_id),
            },
            month_start,
        )?)
    } else {
        None
    };
    let renewal = Renewal {
        transaction,
        charge_id,
        invoice_id,
    };
    if let Some(t) = &renewal.transaction {
        events::record(
            tx,
            company_id,
            "tokens.granted",
            "token_transaction",
            &t.id,
            &payload(&renewal)?,
        )?;
    }
    Ok(renewal)
}

/// One line of an invoice, as [`charge`] writes it.
struct ChargeRow<'a> {
    company_id: &'a str,
    invoice_id: &'a str,
    kind: &'static str,
    description: &'a str,
    amount_cents: i64,
    currency: &'a str,
}

/// Writes a charge dated `at` on its invoice; returns its id.
fn charge(tx: &Tx, row: &ChargeRow<'_>, at: i64) -> Result<String, LedgerError> {
    let id = tx.new_id(Kind::Charge);
    tx.prepare_cached(
        "INSERT INTO charges (id, company_id, invoice_id, kind, description, amount_cents, currency, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(rusqlite::params![
        id,
        row.company_id,
        row.invoice_id,
        row.kind,
        row.description,
        row.amount_cents,
        row.currency,
        at
    ])?;
    Ok(id)
}

/// The company's `open` invoice in `currency` for the month starting at `month_start`, or a new
/// one for it.
fn month_invoice(
    tx: &Tx,
    company_id: &str,
    currency: &str,
    month_start: i64,
) -> Result<String, LedgerError> {
    let existing: Option<String> = tx
        .prepare_cached(
            "SELECT id FROM invoices WHERE company_id = ?1 AND status = 'open' AND currency = ?2
               AND period_start = ?3
             ORDER BY id DESC LIMIT 1",
        )?
        .query_row(rusqlite::params![company_id, currency, month_start], |r| {
            r.get(0)
        })
        .optional()?;
    match existing {
        Some(id) => Ok(id),
        None => new_invoice(tx, company_id, currency, month_start),
    }
}

/// The newest `open` invoice of the company in `currency`, or a new one for the current month.
fn open_invoice(
    tx: &Tx,
    company_id: &str,
    currency: &str,
    now: i64,
) -> Result<String, LedgerError> {
    let existing: Option<String> = tx
        .prepare_cached(
            "SELECT id FROM invoices WHERE company_id = ?1 AND status = 'open' AND currency = ?2
             ORDER BY id DESC LIMIT 1",
        )?
        .query_row([company_id, currency], |r| r.get(0))
        .optional()?;
    if let Some(id) = existing {
        return Ok(id);
    }
    new_invoice(tx, company_id, currency, now)
}

/// A new `open` invoice for the UTC month holding `now`, issued at `now`, due by the billing rule
/// ([`crate::db::billing_rule`]).
fn new_invoice(tx: &Tx, company_id: &str, currency: &str, now: i64) -> Result<String, LedgerError> {
    let (start, end) = month_bounds(now);
    let number = next_invoice_number(tx, company_id, now)?;
    let id = tx.new_id(Kind::Invoice);
    tx.prepare_cached(
        "INSERT INTO invoices (id, company_id, number, status, currency, period_start, period_end, issued_at, due_at, paid_at, created_at)
         VALUES (?1, ?2, ?3, 'open', ?4, ?5, ?6, ?7, ?8, NULL, ?7)",
    )?
    .execute(rusqlite::params![id, company_id, number, currency, start, end, now, end + DUE_AFTER_PERIOD_SECS])?;
    Ok(id)
}

/// `<PREFIX>-<YEAR>-<NNNN>`, continuing the company's own numbering (its prefix is the one of its
/// latest invoice) and skipping any number already taken, since numbers are unique service-wide.
fn next_invoice_number(tx: &Connection, company_id: &str, now: i64) -> Result<String, LedgerError> {
    let numbers: Vec<String> = tx
        .prepare_cached("SELECT number FROM invoices WHERE company_id = ?1 ORDER BY id DESC")?
        .query_map([company_id], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let prefix = match numbers.first() {
        Some(n) => n.split('-').next().unwrap_or_default().to_string(),
        None => {
            let slug: Option<String> = tx
                .prepare_cached("SELECT slug FROM companies WHERE id = ?1")?
                .query_row([company_id], |r| r.get(0))
                .optional()?;
            slug.unwrap_or_default()
                .split('-')
                .filter_map(|w| w.chars().next())
                .filter(char::is_ascii_alphanumeric)
                .take(3)
                .collect::<String>()
                .to_ascii_uppercase()
        }
    };
    let prefix: String = prefix.chars().filter(char::is_ascii_alphanumeric).collect();
    let prefix = if prefix.is_empty() {
        "INV".to_string()
    } else {
        prefix
    };
    let year = rfc3339(now).get(0..4).unwrap_or("1970").to_string();
    let head = format!("{prefix}-{year}-");
    let mut seq = numbers
        .iter()
        .filter_map(|n| n.strip_prefix(&head)?.parse::<u32>().ok())
        .max()
        .unwrap_or(0);
    loop {
        seq += 1;
        let candidate = format!("{head}{seq:04}");
        let taken: bool = tx
            .prepare_cached("SELECT count(*) > 0 FROM invoices WHERE number = ?1")?
            .query_row([&candidate], |r| r.get(0))?;
        if !taken {
            return Ok(candidate);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_rfc3339;

    #[test]
    fn month_bounds_cover_now() {
        let now = parse_rfc3339("2026-12-17T10:00:00Z").unwrap();
        let (s, e) = month_bounds(now);
        assert_eq!(rfc3339(s), "2026-12-01T00:00:00Z");
        assert_eq!(rfc3339(e), "2027-01-01T00:00:00Z");
    }
}
