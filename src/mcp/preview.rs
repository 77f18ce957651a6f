//! What a prepare tool shows: the change run for real as a dry run, so the preview is the outcome.
//!
//! The target is read through the pipeline (what the caller may see, and its version), then the
//! write itself runs twice inside [`crate::db::Db::dry_run`] (every check it makes, nothing kept).
//! Its answer is `after`: what `confirm_change` will return as its `result`. Values that only the
//! confirmation can fix are `null` there and named in `set_at_confirmation`: what differs between
//! the two runs, the second made a minute later by the clock ([`crate::time::shifted`]): ids the
//! write mints and instants it stamps. Nothing is invented.

use super::advice;
use super::call::{self, from_rest, Caller};
use super::failure::Failure;
use crate::http::router::Withheld;
use crate::http::App;
use hyper::Method;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// A change ready to be previewed and stored: what to show and what to run.
pub struct ChangePlan {
    pub tool: &'static str,
    pub operation: &'static str,
    pub target_type: &'static str,
    pub target_id: String,
    /// GET path of the target's current state.
    pub read_path: String,
    pub method: Method,
    pub path: String,
    /// JSON body of the change request, if the route takes one.
    pub body: Option<Value>,
    /// The fields of the target the change sets, for the preview.
    pub changes: Map<String, Value>,
    /// A value added to or removed from an array field of the target; `changes` is then
    /// computed from the current state.
    pub array_edit: Option<ArrayEdit>,
    /// What the preview compares.
    pub kind: PlanKind,
    /// A field of the write's answer never shown through MCP.
    pub withholds: Option<Withheld>,
    /// Show the token cost (`activation_cost_tokens`) and the company's balance.
    pub with_cost: bool,
    /// The exact tool arguments.
    pub arguments: Value,
}

/// How a preview finds the differences.
pub enum PlanKind {
    /// The write changes fields of the target.
    Fields,
    /// The write makes something (or acts on the target): the difference is what it returns.
    Creates,
    /// The write deletes the target.
    Deletes,
    /// The write changes many items; see [`crate::http::router::Change::Batch`].
    Batch {
        items: &'static str,
        key: &'static str,
        flag: &'static str,
    },
}

/// See [`ChangePlan::array_edit`].
pub struct ArrayEdit {
    pub field: &'static str,
    pub value: String,
    pub add: bool,
}

impl ArrayEdit {
    /// The field's new value: the current array with the value added (kept sorted) or removed.
    fn apply(&self, current: &Value) -> (String, Value) {
        let mut items: Vec<Value> = current
            .get(self.field)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let value = Value::String(self.value.clone());
        if self.add {
            if !items.contains(&value) {
                items.push(value);
                items.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
            }
        } else {
            items.retain(|v| *v != value);
        }
        (self.field.to_string(), Value::Array(items))
    }
}

/// The preview of one change, before it is stored.
pub struct Preview {
    pub current: Value,
    /// The target's ETag, or a fingerprint of its body.
    pub version: String,
    pub after: Value,
    pub set_at_confirmation: Vec<String>,
    pub differences: Vec<Value>,
    pub cost: Value,
    pub redacted_fields: Vec<String>,
    pub withholds: Option<Withheld>,
}

/// The ETag of a response, or a fingerprint of its body when the route sends none.
pub fn version_of(resp: &crate::http::Response) -> String {
    match resp.headers.get("etag").and_then(|v| v.to_str().ok()) {
        Some(tag) => tag.to_string(),
        None => {
            let digest = Sha256::digest(&resp.body);
            let mut s = String::from("sha256:");
            for b in digest {
                s.push_str(&format!("{b:02x}"));
            }
            s
        }
    }
}

pub fn build(app: &App, caller: &Caller, plan: &ChangePlan) -> Result<Preview, Failure> {
    let resp = caller.rest(
        app,
        Method::GET,
        plan.read_path.clone(),
        String::new(),
        None,
        None,
    );
    let current = from_rest(&resp)?;
    // The marker's word in any form, where the field's stored value holds a secret (shown
    // redacted): the write would put it where the secret was.
    if let Some(path) = crate::redact::marker::restores_secret(&plan.changes, &current, "changes") {
        let written = call::value_at(&plan.arguments, &path);
        return Err(call::marker_refusal(&path, written, true));
    }
    let version = version_of(&resp);
    let mut changes = plan.changes.clone();
    if let Some(edit) = &plan.array_edit {
        let (field, value) = edit.apply(&current);
        changes.insert(field, value);
    }
    let requested: Vec<Value> = changes
        .iter()
        .filter(|(k, v)| current.get(k.as_str()) != Some(*v))
        .map(|(k, v)| {
            json!({"field": k, "current": current.get(k.as_str()).cloned().unwrap_or(Value::Null), "proposed": v})
        })
        .collect();
    if requested.is_empty() && matches!(plan.kind, PlanKind::Fields) {
        return Err(Failure::new(
            "nothing_to_change",
            409,
            format!(
                "Nothing to change: the {} `{}` already has these values. Nothing was prepared.",
                plan.target_type, plan.target_id
            ),
        ));
    }
    // The write itself, run with every check it makes (state rules, balance, plan limits,
    // validation, If-Match) and rolled back: a change that cannot succeed gets no confirmation id.
    // It runs twice: what differs between the runs is minted by the write.
    let if_match = (!version.starts_with("sha256:")).then_some(version.as_str());
    let t0 = crate::time::now();
    let trial = || {
        crate::db::Db::dry_run(|| {
            caller.rest(
                app,
                plan.method.clone(),
                plan.path.clone(),
                String::new(),
                plan.body.as_ref().map(|b| b.to_string().into_bytes()),
                if_match,
            )
        })
    };
    let first = trial();
    if !first.status.is_success() {
        return Err(Failure::rest(
            &first,
            format!(
                "This change cannot be made as it stands, so nothing was prepared and no confirmation_id was issued. Tell the user why: {}",
                advice::explain(app, caller, &first)
            ),
        ));
    }
    // The second run happens a minute later by the clock, so what the write stamps with its own
    // time differs between the runs too.
    let mut second = crate::time::shifted(60, || from_rest(&trial()).ok());
    let window = (t0, crate::time::now());
    let mut outcome = from_rest(&first)?;
    if let Some(w) = plan.withholds {
        for answer in std::iter::once(&mut outcome).chain(second.as_mut()) {
            withhold(answer, w.field);
        }
    }

    let same_object = outcome.get("object").is_some()
        && outcome.get("object") == current.get("object")
        && outcome.get("id") == current.get("id");
    let mut after = outcome.clone();
    let mut set_at_confirmation = Vec::new();
    let settle = Settle {
        window,
        given: &changes,
    };
    settle.walk(&mut after, second.as_ref(), "", &mut set_at_confirmation);

    let differences = match plan.kind {
        PlanKind::Deletes => {
            vec![json!({"field": plan.target_type, "current": current, "proposed": null})]
        }
        PlanKind::Batch { items, key, flag } => {
            let changed = batch_differences(&after, items, key, flag);
            if changed.is_empty() {
                return Err(Failure::new(
                    "nothing_to_change",
                    409,
                    format!(
                        "Nothing to change: every item already is as asked, so nothing was prepared. The {} `{}` stays as it is.",
                        plan.target_type, plan.target_id
                    ),
                ));
            }
            changed
        }
        _ if same_object => field_differences(&current, &after, &set_at_confirmation, &changes),
        PlanKind::Creates => {
            let field = outcome["object"].as_str().unwrap_or("result").to_string();
            vec![json!({"field": field, "current": null, "proposed": after})]
        }
        PlanKind::Fields => requested,
    };
    let cost = if outcome["object"] == "token_purchase" {
        purchase_cost(&outcome, &after)
    } else if plan.with_cost {
        activation_cost(app, caller, &current)
    } else {
        Value::Null
    };
    let redacted_fields = redacted_fields(&differences);
    Ok(Preview {
        current,
        version,
        after,
        set_at_confirmation,
        differences,
        cost,
        redacted_fields,
        withholds: plan.withholds,
    })
}

/// Removes a withheld field from a write's answer (top level, or the object's own).
pub fn withhold(answer: &mut Value, field: &str) {
    if let Some(m) = answer.as_object_mut() {
        m.remove(field);
    }
}

/// The items of a batch answer that the write changes: `{field: "<key>.<flag>", current,
/// proposed}` with the flag before and after.
fn batch_differences(after: &Value, items: &str, key: &str, flag: &str) -> Vec<Value> {
    after[items]
        .as_array()
        .map(|list| {
            list.iter()
                .filter(|item| item["changed"] == true)
                .map(|item| {
                    let name = item[key].as_str().unwrap_or("");
                    let now = item[flag].as_bool().unwrap_or(false);
                    json!({"field": format!("{name}.{flag}"), "current": !now, "proposed": now})
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Finds the values of a dry run that the confirmation sets anew, and blanks them.
struct Settle<'a> {
    /// The clock (seconds) from before the first run to after the second.
    window: (i64, i64),
    /// Values the caller gave: never blanked.
    given: &'a Map<String, Value>,
}

impl Settle<'_> {
    fn walk(&self, v: &mut Value, other: Option<&Value>, path: &str, set: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, x) in map.iter_mut() {
                    let p = join(path, k);
                    self.walk(x, other.and_then(|o| o.get(k.as_str())), &p, set);
                }
            }
            Value::Array(items) => {
                for (i, x) in items.iter_mut().enumerate() {
                    let p = format!("{path}[{i}]");
                    self.walk(x, other.and_then(|o| o.get(i)), &p, set);
                }
            }
            Value::Null => {}
            scalar => {
                if self.is_new(scalar, other, path) {
                    *scalar = Value::Null;
                    set.push(path.to_string());
                }
            }
        }
    }

    fn is_new(&self, v: &Value, other: Option<&Value>, path: &str) -> bool {
        let field = path.rsplit('.').next().unwrap_or(path);
        if self.given.get(field) == Some(v) {
            return false;
        }
        match other {
            Some(o) => o != v,
            // The later run failed (a window closing within the minute): an instant of the
            // write's own time is then the only sign.
            None => v
                .as_str()
                .filter(|s| s.len() >= 20 && s.as_bytes().get(10) == Some(&b'T'))
                .and_then(crate::time::parse_rfc3339)
                .is_some_and(|t| (self.window.0..=self.window.1).contains(&t)),
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The fields the write changes on the target, as it answered them: the fields asked for first,
/// then what follows from them (a `state`), then what the confirmation sets (`null`, marked so).
fn field_differences(
    current: &Value,
    after: &Value,
    set: &[String],
    asked: &Map<String, Value>,
) -> Vec<Value> {
    let Some(fields) = after.as_object() else {
        return Vec::new();
    };
    let mut out: Vec<(u8, Value)> = fields
        .iter()
        .filter_map(|(k, v)| {
            let now = current.get(k.as_str()).unwrap_or(&Value::Null);
            if set.iter().any(|p| p == k) {
                return Some((2, json!({"field": k, "current": now, "proposed": null, "set_at_confirmation": true})));
            }
            let rank = if asked.contains_key(k) { 0 } else { 1 };
            (now != v).then(|| (rank, json!({"field": k, "current": now, "proposed": v})))
        })
        .collect();
    out.sort_by_key(|(rank, _)| *rank);
    out.into_iter().map(|(_, d)| d).collect()
}

/// The activation cost and the company's balance, read through the pipeline (so a key without
/// `tokens:read` sees the cost but not the balance).
fn activation_cost(app: &App, caller: &Caller, current: &Value) -> Value {
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
    json!({"tokens": tokens, "balance": balance, "balance_after": after, "sufficient": after.map(|a| a >= 0)})
}

/// What a purchase costs, from the dry run's answer: the price and currency, the tokens and the
/// balance after, and the line it adds to the open invoice (its id `null` when the confirmation
/// opens the invoice).
fn purchase_cost(outcome: &Value, after: &Value) -> Value {
    let charge = &outcome["charge"];
    let added = outcome["transaction"]["amount"].as_i64();
    let balance_after = outcome["balance"]["balance"].as_i64();
    json!({
        "price_cents": charge["amount_cents"],
        "currency": charge["currency"],
        "tokens_added": added,
        "balance": balance_after.zip(added).map(|(b, a)| b - a),
        "balance_after": balance_after,
        "invoice_line": {
            "invoice_id": after["charge"]["invoice_id"],
            "description": charge["description"],
            "amount_cents": charge["amount_cents"],
            "currency": charge["currency"],
        },
    })
}

/// The fields whose shown value (now or proposed) the redactor will replace: the user cannot see
/// what they confirm there, so the preview says so.
fn redacted_fields(differences: &[Value]) -> Vec<String> {
    let mut fields = Vec::new();
    for d in differences {
        let hidden = ["current", "proposed"].iter().any(|side| {
            let mut shown = d[*side].clone();
            crate::redact::redact_value(&mut shown);
            shown != d[*side]
        });
        if let (true, Some(field)) = (hidden, d["field"].as_str()) {
            fields.push(field.to_string());
        }
    }
    fields
}

/// The sentences of `next_step` about what the preview cannot show.
pub fn notes(p: &Preview) -> String {
    let list = |fields: &[String]| {
        fields
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = String::new();
    if !p.redacted_fields.is_empty() {
        out.push_str(&format!(
            " Part of {} is shown as {marker} because it looks like a secret: tell the user so. What will be stored is exactly the text you sent, not {marker}.",
            list(&p.redacted_fields),
            marker = crate::redact::REDACTED
        ));
    }
    if let Some(w) = &p.withholds {
        let shown = withheld_value(w, &p.after);
        out.push_str(&format!(
            " The `{}` this write makes is never shown through MCP: {}",
            w.field,
            shown["note"].as_str().unwrap_or(w.note)
        ));
    }
    if !p.set_at_confirmation.is_empty() {
        out.push_str(&format!(
            " `after` is what confirm_change will return; {} will be set when it runs and are null here.",
            list(&p.set_at_confirmation)
        ));
    }
    out
}

/// The output of the prepare tools; `current` is the REST schema of the target.
pub fn schema(current: Value, target: Value) -> Value {
    let int = json!({"type": ["integer", "null"]});
    let activation = json!({"type": "object", "additionalProperties": false,
        "required": ["tokens", "balance", "balance_after", "sufficient"],
        "properties": {"tokens": int, "balance": int, "balance_after": int,
            "sufficient": {"type": ["boolean", "null"]}}});
    let purchase = json!({"type": "object", "additionalProperties": false,
        "required": ["price_cents", "currency", "tokens_added", "balance", "balance_after", "invoice_line"],
        "properties": {"price_cents": int, "currency": {"type": ["string", "null"]},
            "tokens_added": int, "balance": int, "balance_after": int,
            "invoice_line": {"type": "object", "description": "The line the purchase adds to the open invoice."}}});
    json!({"type": "object", "additionalProperties": false,
        "required": ["object", "confirmation_id", "status", "tool", "operation", "target", "current",
            "after", "set_at_confirmation", "differences", "cost", "redacted_fields", "expires_at", "next_step"],
        "properties": {
            "object": {"const": "pending_change"},
            "confirmation_id": {"type": "string", "description": "Pass to confirm_change after the user confirms, or to cancel_change."},
            "status": {"const": "awaiting_confirmation"},
            "tool": {"type": "string"},
            "operation": {"type": "string", "description": "The REST operation the change will run."},
            "target": target,
            "current": current,
            "after": {"type": "object", "description": "What confirm_change will return as `result` (a dry run of the write)."},
            "set_at_confirmation": {"type": "array", "items": {"type": "string"},
                "description": "Paths in `after` that only the confirmation sets (new ids, the time of the write); null in `after`."},
            "differences": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                "required": ["field", "current", "proposed"],
                "properties": {"field": {"type": "string"}, "current": {}, "proposed": {},
                    "set_at_confirmation": {"const": true}}}},
            "cost": {"anyOf": [{"type": "null"}, activation, purchase]},
            "redacted_fields": {"type": "array", "items": {"type": "string"},
                "description": "Fields whose shown value hides text that looks like a secret; the value stored is the one sent."},
            "withheld": withheld_schema(),
            "expires_at": {"type": "string", "format": "date-time"},
            "next_step": {"type": "string"}}})
}

/// `withheld`, in a preview and a confirmation: a field of the write's answer that MCP never
/// shows, and where the integrator reads it.
pub fn withheld_schema() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": ["field", "note"],
        "properties": {"field": {"type": "string"}, "note": {"type": "string"}}})
}

/// `withheld` as shown: the note with `{id}` replaced by the object's id when it is known.
pub fn withheld_value(w: &Withheld, answer: &Value) -> Value {
    let note = match answer["id"].as_str() {
        Some(id) => w.note.replace("{id}", id),
        None => w.note.to_string(),
    };
    json!({"field": w.field, "note": note})
}
