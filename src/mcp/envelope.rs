//! The envelopes the MCP layer itself defines, as Rust types: what a prepare tool answers (a
//! [`PendingChange`]), what confirm_change and cancel_change answer ([`ChangeApplied`],
//! [`ChangeCancelled`]), and the body a write without one reports ([`NoBody`]). The answers are
//! built from these types and the tools' output schemas derived from them
//! ([`crate::jsonschema::response`]), so the two cannot drift; only the REST part (`current`,
//! `result`) is spliced in, from the route's own schema.
//!
//! Data only: it imports nothing of the MCP layer, so every part of it may use it.
//!
//! The types carry `//` comments rather than doc comments where a doc comment would become a
//! `description` that each tool's schema repeats (the catalogue is measured by the byte); a
//! member's doc comment is its description, written for the model.

use crate::http::router::Withheld;
use crate::jsonschema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

// The answer of a prepare tool: the change, previewed, waiting for the user's confirmation.
#[derive(Serialize, JsonSchema)]
pub struct PendingChange {
    #[schemars(extend("const" = "pending_change"))]
    pub object: &'static str,
    /// Pass to confirm_change after the user confirms, or to cancel_change.
    pub confirmation_id: String,
    #[schemars(extend("const" = "awaiting_confirmation"))]
    pub status: &'static str,
    pub tool: String,
    /// The REST operation the change will run.
    pub operation: String,
    pub target: PreviewedTarget,
    /// The change in words a person decides on: the objects and company by name, what changes,
    /// the price in currency units, the balance after and every side effect.
    pub summary: String,
    // The target as its read route answers it: the schema is that route's ([`preview_schema`]).
    pub current: Value,
    /// What confirm_change will return as `result` (a dry run of the write).
    #[schemars(extend("type" = "object"))]
    pub after: Value,
    /// Paths in `after` that only the confirmation sets (new ids, the time of the write, a
    /// receiver's answer); null in `after`.
    pub set_at_confirmation: Vec<String>,
    pub differences: Vec<Difference>,
    pub cost: Cost,
    /// Every path of `current` and `after` whose shown value hides text that looks like a
    /// secret, changed or not; the value stored is the one sent, or the one already stored.
    pub redacted_fields: Vec<String>,
    #[schemars(extend("format" = "date-time"))]
    pub expires_at: String,
    pub next_step: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = jsonschema::absent_when_none)]
    pub withheld: Option<WithheldNote>,
}

impl PendingChange {
    pub const OBJECT: &'static str = "pending_change";
    pub const STATUS: &'static str = "awaiting_confirmation";
}

// The object a change is made to, at the version the preview read.
#[derive(Serialize, JsonSchema)]
pub struct PreviewedTarget {
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
    /// The ETag of the previewed state.
    pub version: String,
}

// The object a change was made to.
#[derive(Serialize, JsonSchema)]
pub struct Target {
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
}

// One field the change moves: from `current` to `proposed`.
#[derive(Serialize, JsonSchema, Clone, Debug, PartialEq)]
pub struct Difference {
    pub field: String,
    #[schemars(transform = any_value)]
    pub current: Value,
    #[schemars(transform = any_value)]
    pub proposed: Value,
    // Only the confirmation sets the value (`proposed` is null until then).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("const" = true))]
    pub set_at_confirmation: Option<bool>,
}

impl Difference {
    pub fn new(field: impl Into<String>, current: Value, proposed: Value) -> Difference {
        Difference {
            field: field.into(),
            current,
            proposed,
            set_at_confirmation: None,
        }
    }

    /// A field whose new value only the confirmation sets.
    pub fn set_at_confirmation(field: impl Into<String>, current: Value) -> Difference {
        Difference {
            set_at_confirmation: Some(true),
            ..Difference::new(field, current, Value::Null)
        }
    }
}

// What a change costs: nothing (`null`), an activation's tokens against the balance, or a
// purchase's price. Stored with the change as JSON, and read back by the confirmation; each
// kind refuses the other's members, so it reads back as the kind it was.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(untagged)]
pub enum Cost {
    #[default]
    None,
    Activation(ActivationCost),
    Purchase(PurchaseCost),
}

impl Cost {
    pub fn is_none(&self) -> bool {
        matches!(self, Cost::None)
    }
}

// An activation's tokens, and the balance before and after (`null` where the key may not read
// the balance).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ActivationCost {
    pub tokens: Option<i64>,
    pub balance: Option<i64>,
    pub balance_after: Option<i64>,
    pub sufficient: Option<bool>,
}

// A purchase's price and currency, the tokens it adds, the balance before and after.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PurchaseCost {
    pub price_cents: Option<i64>,
    pub currency: Option<String>,
    pub tokens_added: Option<i64>,
    pub balance: Option<i64>,
    pub balance_after: Option<i64>,
    /// The line the purchase adds to the open invoice.
    pub invoice_line: InvoiceLine,
}

// The invoice line of a purchase; `invoice_id` is `null` when the confirmation opens the invoice.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct InvoiceLine {
    pub invoice_id: Option<String>,
    pub description: Option<String>,
    pub amount_cents: Option<i64>,
    pub currency: Option<String>,
}

// A field of the write's answer that MCP never shows, and where the integrator reads it.
#[derive(Serialize, JsonSchema)]
pub struct WithheldNote {
    pub field: &'static str,
    pub note: String,
}

// `withheld` in a confirmation: the note, and with `reveal` the one-time link that shows the
// person the withheld secret ([`super::handover`]).
#[derive(Serialize, JsonSchema)]
pub struct AppliedWithheld {
    pub field: &'static str,
    pub note: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = jsonschema::absent_when_none)]
    pub reveal: Option<Reveal>,
}

// The one-time link to a withheld secret: `url` only when the assistant must pass it on (the
// person's client did not show it).
#[derive(Serialize, JsonSchema)]
pub struct Reveal {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = jsonschema::absent_when_none)]
    pub url: Option<String>,
    #[schemars(extend("format" = "date-time"))]
    pub expires_at: String,
    pub instructions: &'static str,
}

impl WithheldNote {
    /// The note with `{id}` replaced by the object's id when the answer has one.
    pub fn of(w: &Withheld, answer: &Value) -> WithheldNote {
        let note = match answer["id"].as_str() {
            Some(id) => w.note.replace("{id}", id),
            None => w.note.to_string(),
        };
        WithheldNote {
            field: w.field,
            note,
        }
    }
}

// What confirm_change answers when the change was applied.
#[derive(Serialize, JsonSchema)]
pub struct ChangeApplied {
    #[schemars(extend("const" = "change_result"))]
    pub object: &'static str,
    #[schemars(extend("const" = "applied"))]
    pub status: &'static str,
    pub confirmation_id: String,
    pub tool: String,
    pub operation: String,
    pub target: Target,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = jsonschema::absent_when_none)]
    pub withheld: Option<AppliedWithheld>,
    // The write's answer: the schema is the union of the writes' own ([`confirm_schema`]).
    pub result: Value,
    // What it cost, as previewed (the write ran bound to that balance).
    #[serde(skip_serializing_if = "Cost::is_none")]
    pub cost: Cost,
}

impl ChangeApplied {
    pub const STATUS: &'static str = "applied";
}

// What cancel_change answers.
#[derive(Serialize, JsonSchema)]
pub struct ChangeCancelled {
    #[schemars(extend("const" = "change_result"))]
    pub object: &'static str,
    #[schemars(extend("const" = "cancelled"))]
    pub status: &'static str,
    pub confirmation_id: String,
}

impl ChangeCancelled {
    pub fn of(confirmation_id: &str) -> ChangeCancelled {
        ChangeCancelled {
            object: CHANGE_RESULT,
            status: "cancelled",
            confirmation_id: confirmation_id.to_string(),
        }
    }
}

pub const CHANGE_RESULT: &str = "change_result";

// What a write answered without a body (`204`, an unassignment) reports as its result.
#[derive(Serialize, JsonSchema)]
pub struct NoBody {
    #[schemars(extend("const" = true))]
    pub ok: bool,
    #[schemars(transform = jsonschema::plain_integer)]
    pub status: u16,
}

impl NoBody {
    pub fn of(status: u16) -> NoBody {
        NoBody { ok: true, status }
    }
}

/// An envelope as the structured content of a tool result. These types serialize to a JSON
/// object whatever their values (no map with non-string keys), so the fallback is never taken.
pub fn to_json<T: Serialize>(envelope: &T) -> Value {
    serde_json::to_value(envelope).unwrap_or_default()
}

/// The output schema of the prepare tools; `current` is the REST schema of the target.
pub fn preview_schema(current: Value) -> Value {
    let mut s = jsonschema::response::<PendingChange>();
    s["properties"]["current"] = current;
    s
}

/// The output schema of confirm_change; `result` is the union of the writes' answers.
pub fn confirm_schema(result: Value) -> Value {
    let mut s = jsonschema::response::<ChangeApplied>();
    s["properties"]["result"] = result;
    s
}

pub fn cancel_schema() -> Value {
    jsonschema::response::<ChangeCancelled>()
}

pub fn no_body_schema() -> Value {
    jsonschema::response::<NoBody>()
}

/// Any JSON value, as `{}` (a `serde_json::Value` derives the boolean schema `true`).
fn any_value(schema: &mut schemars::Schema) {
    schema.ensure_object();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pending() -> PendingChange {
        PendingChange {
            object: PendingChange::OBJECT,
            confirmation_id: "chg_1".into(),
            status: PendingChange::STATUS,
            tool: "prepare_ad_change".into(),
            operation: "updateAd".into(),
            target: PreviewedTarget {
                kind: "ad".into(),
                id: "ad_1".into(),
                version: "\"3\"".into(),
            },
            summary: "Change ad.".into(),
            current: json!({"id": "ad_1"}),
            after: json!({"id": "ad_1"}),
            set_at_confirmation: vec!["updated_at".into()],
            differences: vec![
                Difference::new("name", json!("a"), json!("b")),
                Difference::set_at_confirmation("updated_at", json!("2026-01-01T00:00:00Z")),
            ],
            cost: Cost::Purchase(PurchaseCost {
                price_cents: Some(4900),
                currency: Some("EUR".into()),
                tokens_added: Some(100),
                balance: Some(5),
                balance_after: Some(105),
                invoice_line: InvoiceLine {
                    invoice_id: None,
                    description: Some("100 tokens".into()),
                    amount_cents: Some(4900),
                    currency: Some("EUR".into()),
                },
            }),
            redacted_fields: Vec::new(),
            expires_at: "2026-01-01T00:15:00Z".into(),
            next_step: "Ask the user.".into(),
            withheld: Some(WithheldNote {
                field: "secret",
                note: "Read it once.".into(),
            }),
        }
    }

    /// Every member a built envelope has is one its schema names, of the schema's type, and
    /// every member the schema requires is there: the schema and the value cannot drift.
    #[test]
    fn each_envelope_fits_its_derived_schema() {
        let object = json!({});
        let activation = Cost::Activation(ActivationCost {
            tokens: Some(10),
            balance: None,
            balance_after: None,
            sufficient: None,
        });
        let mut without = pending();
        without.withheld = None;
        without.cost = Cost::None;
        let applied = |cost: Cost| ChangeApplied {
            object: CHANGE_RESULT,
            status: ChangeApplied::STATUS,
            confirmation_id: "chg_1".into(),
            tool: "prepare_ad_change".into(),
            operation: "updateAd".into(),
            target: Target {
                kind: "ad".into(),
                id: "ad_1".into(),
            },
            withheld: None,
            result: json!({"id": "ad_1"}),
            cost,
        };
        let cases = [
            (to_json(&pending()), preview_schema(object.clone())),
            (to_json(&without), preview_schema(object.clone())),
            (
                to_json(&applied(activation)),
                confirm_schema(object.clone()),
            ),
            (
                to_json(&applied(Cost::None)),
                confirm_schema(object.clone()),
            ),
            (to_json(&ChangeCancelled::of("chg_1")), cancel_schema()),
            (to_json(&NoBody::of(204)), no_body_schema()),
        ];
        for (value, schema) in &cases {
            crate::jsonschema::validate(value, schema, "").unwrap_or_else(|e| panic!("{e}"));
            let members: Vec<&String> = value.as_object().unwrap().keys().collect();
            let named: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
            assert!(members.iter().all(|m| named.contains(m)), "{members:?}");
            for required in schema["required"].as_array().unwrap() {
                assert!(
                    value.get(required.as_str().unwrap()).is_some(),
                    "{required}"
                );
            }
            assert_eq!(schema["additionalProperties"], false);
        }
        // Absent when there is none; `null` in a preview, which always says.
        assert!(cases[3].0.get("cost").is_none());
        assert_eq!(cases[1].0["cost"], Value::Null);
        // The constants the clients branch on.
        let preview = &cases[0].1["properties"];
        assert_eq!(preview["object"], json!({"const": "pending_change"}));
        assert_eq!(
            preview["differences"]["items"]["properties"]["set_at_confirmation"],
            json!({"const": true})
        );
        assert_eq!(
            preview["differences"]["items"]["properties"]["current"],
            json!({})
        );
        assert_eq!(
            preview["cost"]["anyOf"][0],
            json!({"type": "null"}),
            "{}",
            preview["cost"]
        );
    }

    /// A stored cost reads back as the kind it was.
    #[test]
    fn a_stored_cost_reads_back_as_its_kind() {
        let activation = Cost::Activation(ActivationCost {
            tokens: Some(10),
            balance: Some(50),
            balance_after: Some(40),
            sufficient: Some(true),
        });
        for cost in [Cost::None, activation, pending().cost] {
            let text = serde_json::to_string(&cost).unwrap();
            assert_eq!(serde_json::from_str::<Cost>(&text).unwrap(), cost, "{text}");
        }
    }
}
