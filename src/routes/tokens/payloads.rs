//! The tokens area's event payloads ([`crate::routes::payloads`]): a ledger row as `GET
//! /tokens/transactions` lists it, and a purchase or a month's grant with what it billed.

use crate::http::ApiError;
use crate::ids::Kind;
use crate::ledger::{self, Purchase};
use crate::routes::payload::{schema_ref, to_data, Payload, Subject, SubjectKind};
use serde_json::Value;

/// The subject of the events about a token transaction (`resource_type` `token_transaction`).
pub const TOKEN_TRANSACTION: SubjectKind = SubjectKind {
    kind: Kind::TokenTransaction,
    resource: "token_transaction",
    table: "token_transactions o",
    company: "o.company_id",
};

pub fn payloads() -> Vec<Payload> {
    vec![
        Payload::new(
            "tokens.purchased",
            "A token pack was bought: the ledger row, the charge and the invoice it went on.",
            &TOKEN_TRANSACTION,
            purchase_schema(),
            purchased,
        )
        .pick("o.kind = 'purchase' AND o.charge_id IS NOT NULL"),
        Payload::new(
            "tokens.spent",
            "Tokens were spent (promotion activation): the ledger row.",
            &TOKEN_TRANSACTION,
            schema_ref("TokenTransaction"),
            spent,
        )
        .pick("o.kind = 'spend'"),
        Payload::new(
            "tokens.granted",
            "A new UTC month began: the plan's included tokens were granted (the ledger row), with the month's subscription charge and the invoice it went on.",
            &TOKEN_TRANSACTION,
            purchase_schema(),
            granted,
        )
        .pick("o.kind = 'grant' AND o.charge_id IS NOT NULL"),
    ]
}

fn granted(s: &Subject<'_>) -> Result<Value, ApiError> {
    purchased(s)
}

fn transaction(s: &Subject<'_>) -> Result<ledger::TokenTransaction, ApiError> {
    Ok(ledger::load_transaction(s.conn, s.id)?)
}

fn spent(s: &Subject<'_>) -> Result<Value, ApiError> {
    to_data(&transaction(s)?)
}

fn purchased(s: &Subject<'_>) -> Result<Value, ApiError> {
    let transaction = transaction(s)?;
    let charge_id = transaction.charge_id.clone().unwrap_or_default();
    let invoice_id: String = s
        .conn
        .prepare_cached("SELECT invoice_id FROM charges WHERE id = ?1")?
        .query_row([&charge_id], |r| r.get(0))?;
    to_data(&Purchase {
        transaction,
        charge_id,
        invoice_id,
    })
}

fn purchase_schema() -> Value {
    crate::jsonschema::response::<Purchase>()
}
