//! What a change costs, as its preview shows it: an activation's tokens against the balance, a
//! purchase's price, tokens and invoice line.

use crate::http::App;
use crate::mcp::call::{self, Caller};
use crate::mcp::envelope::{ActivationCost, Cost, InvoiceLine, PurchaseCost};
use serde_json::Value;

/// A cost as shown, and the company balance it showed (which the confirmation is bound to).
pub(super) type Shown = (Cost, Option<(String, i64)>);

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
    let cost = Cost::Activation(ActivationCost {
        tokens,
        balance,
        balance_after: after,
        sufficient: after.map(|a| a >= 0),
    });
    (cost, bound)
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
    let text = |v: &Value| v.as_str().map(String::from);
    let cost = Cost::Purchase(PurchaseCost {
        price_cents: charge["amount_cents"].as_i64(),
        currency: text(&charge["currency"]),
        tokens_added: added,
        balance: before,
        balance_after,
        invoice_line: InvoiceLine {
            invoice_id: text(&after["charge"]["invoice_id"]),
            description: text(&charge["description"]),
            amount_cents: charge["amount_cents"].as_i64(),
            currency: text(&charge["currency"]),
        },
    });
    (cost, bound)
}
