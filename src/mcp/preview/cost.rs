//! What a change costs, as its preview shows it: an activation's tokens against the balance, a
//! purchase's price, tokens and invoice line.

use crate::http::App;
use crate::mcp::call::{self, Caller};
use serde_json::{json, Value};

/// A cost as shown, and the company balance it showed (which the confirmation is bound to).
pub(super) type Shown = (Value, Option<(String, i64)>);

/// The activation cost and the company's balance, read through the pipeline (so a key without
/// `tokens:read` sees the cost but not the balance).
pub(super) fn activation_cost(app: &App, caller: &Caller, current: &Value) -> Shown {
    let tokens = current
        .get("activation_cost_tokens")
        .and_then(Value::as_i64);
    let balance = current
        .get("company_id")
        .and_then(Value::as_str)
        .and_then(|company| {
            let route = app.router.by_operation("getTokenBalance")?;
            let mut query = String::from("company_id=");
            call::encode(company, &mut query);
            let resp = caller.rest(
                app,
                route.method.clone(),
                route.path.to_string(),
                query,
                None,
                None,
            );
            if !resp.status.is_success() {
                return None;
            }
            resp.body_json()?.get("balance")?.as_i64()
        });
    let after = tokens.zip(balance).map(|(t, b)| b - t);
    let bound = current["company_id"]
        .as_str()
        .zip(balance)
        .map(|(c, b)| (c.to_string(), b));
    (
        json!({"tokens": tokens, "balance": balance, "balance_after": after, "sufficient": after.map(|a| a >= 0)}),
        bound,
    )
}

/// What a purchase costs, from the dry run's answer: the price and currency, the tokens and the
/// balance after, and the line it adds to the open invoice (its id `null` when the confirmation
/// opens the invoice).
pub(super) fn purchase_cost(outcome: &Value, after: &Value) -> Shown {
    let charge = &outcome["charge"];
    let added = outcome["transaction"]["amount"].as_i64();
    let balance_after = outcome["balance"]["balance"].as_i64();
    let before = balance_after.zip(added).map(|(b, a)| b - a);
    let bound = outcome["transaction"]["company_id"]
        .as_str()
        .zip(before)
        .map(|(c, b)| (c.to_string(), b));
    let cost = json!({
        "price_cents": charge["amount_cents"],
        "currency": charge["currency"],
        "tokens_added": added,
        "balance": before,
        "balance_after": balance_after,
        "invoice_line": {
            "invoice_id": after["charge"]["invoice_id"],
            "description": charge["description"],
            "amount_cents": charge["amount_cents"],
            "currency": charge["currency"],
        },
    });
    (cost, bound)
}
