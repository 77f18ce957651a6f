//! A prepared change in words a person can decide on: what it does to which objects (by name) of
//! which company, what it changes, what it costs in currency units, the balance after, and every
//! side effect. The elicitation question and the MCP App card show it; the preview carries it as
//! `summary`.
//!
//! The words come from the tool's declaration ([`crate::http::router::Tool::asking`]), with its
//! placeholders filled from the preview and the arguments; names are read through the pipeline as
//! the caller (an object the key may not read is named by its id). The details (the differences,
//! what a new object will hold, the cost) are added from the preview itself, so they are exactly
//! what the confirmation does.

use super::call::{fill_path, Caller};
use super::envelope::Cost;
use super::plan::{ChangePlan, PlanKind};
use super::preview::Preview;
use super::spec::ToolSpec;
use crate::http::router::{Change, Route, Router};
use crate::http::App;
use hyper::Method;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Objects named by a lookup per summary, at most (each is one request through the pipeline).
const LOOKUPS_MAX: usize = 8;
/// Items of a list named one by one; the rest are counted.
const LISTED_MAX: usize = 10;
/// Characters of a text value shown.
const TEXT_MAX: usize = 160;

/// The summary of a prepared change, redacted as everything the MCP server shows.
pub fn words(
    app: &App,
    caller: &Caller,
    spec: &ToolSpec,
    plan: &ChangePlan,
    p: &Preview,
) -> String {
    let mut names = Names {
        app,
        caller,
        cache: HashMap::new(),
        lookups: 0,
    };
    let args = plan.arguments.as_object().cloned().unwrap_or_default();
    let company = company_of(p, &args).map(|c| names.of(&c));
    let target = target_words(&p.current, &plan.target_id);
    let mut out = match spec.ask {
        Some(template) => fill(template, &target, company.as_deref(), &args, &mut names),
        None => format!("{} for {target}.", spec.title),
    };
    let details = match spec.change {
        Some(Change::Fields(_)) => changed(p, &mut names),
        Some(Change::Batch { .. }) => screens(p, &mut names),
        Some(Change::Body(fields)) => given(&args, fields, spec, &mut names),
        Some(Change::Upload { .. }) => upload(&p.after),
        _ => String::new(),
    };
    push_sentence(&mut out, &details);
    push_sentence(&mut out, &cost_words(&p.cost, company.as_deref()));
    if matches!(plan.kind, PlanKind::Deletes) {
        push_sentence(&mut out, "This cannot be undone");
    }
    // Names and text in quotes were written by the service's users and the summary is also shown
    // outside the fenced data (a stale confirmation's message, the confirmation dialog): redacted
    // and on one line, like every tenant text outside a fence.
    super::fence::one_line(&out)
}

fn push_sentence(out: &mut String, sentence: &str) {
    if sentence.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push(' ');
    }
    out.push_str(sentence);
    if !sentence.ends_with('.') {
        out.push('.');
    }
}

/// The company the change is about: the target's, or the one named in the arguments, or the
/// target itself when it is a company.
fn company_of(p: &Preview, args: &Map<String, Value>) -> Option<String> {
    if p.current["object"] == "company" {
        return p.current["id"].as_str().map(String::from);
    }
    p.current["company_id"]
        .as_str()
        .or_else(|| args.get("company_id").and_then(Value::as_str))
        .or_else(|| p.after["company_id"].as_str())
        .map(String::from)
}

/// The target as named in its own representation.
fn target_words(current: &Value, id: &str) -> String {
    match display_name(current) {
        Some(name) => format!("“{}” ({id})", clip(name)),
        None => id.to_string(),
    }
}

/// The members that name an object in words, in the order they are tried.
const DISPLAY_NAMES: [&str; 4] = ["name", "filename", "label", "url"];

/// What a person calls an object: its name, file name, label or URL.
fn display_name(v: &Value) -> Option<&str> {
    DISPLAY_NAMES
        .iter()
        .find_map(|k| v[*k].as_str())
        .filter(|s| !s.is_empty())
}

fn fill(
    template: &str,
    target: &str,
    company: Option<&str>,
    args: &Map<String, Value>,
    names: &mut Names<'_>,
) -> String {
    let mut out = String::with_capacity(template.len() + 64);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let key = &rest[open + 1..open + close];
        match key {
            "target" => out.push_str(target),
            "company" => out.push_str(company.unwrap_or("its company")),
            // The secret rotation's grace, as configured: the person decides knowing how long
            // the receiver has to switch.
            "grace" => out.push_str(&crate::time::duration_words(
                names.app.settings.webhook_rotation_grace_secs,
            )),
            arg => out.push_str(&show(args.get(arg).unwrap_or(&Value::Null), names)),
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out
}

/// What a change to fields does, field by field, as the preview's differences say.
fn changed(p: &Preview, names: &mut Names<'_>) -> String {
    let parts: Vec<String> = p
        .differences
        .iter()
        .filter(|d| d.set_at_confirmation.is_none())
        .map(|d| {
            format!(
                "{} from {} to {}",
                d.field,
                show(&d.current, names),
                show(&d.proposed, names)
            )
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("It changes {}", parts.join("; "))
    }
}

/// Which screens a batch puts the ad on and takes it off.
fn screens(p: &Preview, names: &mut Names<'_>) -> String {
    let mut on = Vec::new();
    let mut off = Vec::new();
    for d in &p.differences {
        let field = d.field.as_str();
        let id = field.split('.').next().unwrap_or(field);
        if d.proposed == true {
            on.push(Value::String(id.to_string()));
        } else {
            off.push(Value::String(id.to_string()));
        }
    }
    let mut parts = Vec::new();
    if !on.is_empty() {
        parts.push(format!(
            "It goes on {} ({})",
            count(on.len(), "screen"),
            show(&Value::Array(on), names)
        ));
    }
    if !off.is_empty() {
        parts.push(format!(
            "it comes off {} ({})",
            count(off.len(), "screen"),
            show(&Value::Array(off), names)
        ));
    }
    parts.join("; ")
}

/// What a new object is given, argument by argument (its path arguments are in the template).
fn given(
    args: &Map<String, Value>,
    fields: &[&str],
    spec: &ToolSpec,
    names: &mut Names<'_>,
) -> String {
    let parts: Vec<String> = fields
        .iter()
        .filter(|f| !spec.path_args.iter().any(|(name, _)| name == *f))
        .filter_map(|f| Some(format!("{f} {}", show(args.get(*f)?, names))))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("With {}", parts.join(", "))
    }
}

fn upload(after: &Value) -> String {
    match (after["content_type"].as_str(), after["size_bytes"].as_i64()) {
        (Some(t), Some(n)) => format!("The file is {t}, {} bytes", group(n)),
        _ => String::new(),
    }
}

/// The cost as the preview computed it: tokens and the balance for an activation; the price in
/// currency units, where it is billed and the balance for a purchase.
fn cost_words(cost: &Cost, company: Option<&str>) -> String {
    let whose = company.map_or("the balance".to_string(), |c| format!("the balance of {c}"));
    let balance = |before: Option<i64>, after: Option<i64>| match (before, after) {
        (Some(b), Some(a)) => format!("; {whose} goes from {} to {} tokens", group(b), group(a)),
        _ => String::new(),
    };
    match cost {
        Cost::None => String::new(),
        Cost::Purchase(p) => {
            let Some(cents) = p.price_cents else {
                return String::new();
            };
            let currency = p.currency.as_deref().unwrap_or("");
            let tokens = p
                .tokens_added
                .map_or(String::new(), |t| format!(" for {} tokens", group(t)));
            let invoice = match &p.invoice_line.invoice_id {
                Some(id) => format!("billed on the open invoice {id}"),
                None => "billed on a new invoice".to_string(),
            };
            let balance = balance(p.balance, p.balance_after);
            format!(
                "It costs {} {currency}{tokens}, {invoice}{balance}",
                money(cents)
            )
        }
        Cost::Activation(a) => {
            let balance = balance(a.balance, a.balance_after);
            match a.tokens {
                Some(0) => format!("It costs no tokens{balance}"),
                Some(t) => {
                    let short = if a.sufficient == Some(false) {
                        ": the balance is too low"
                    } else {
                        ""
                    };
                    format!("It costs {} tokens{balance}{short}", group(t))
                }
                None => String::new(),
            }
        }
    }
}

/// Cents as currency units: `4900` is `49.00`.
fn money(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let c = cents.unsigned_abs();
    format!("{sign}{}.{:02}", group((c / 100) as i64), c % 100)
}

/// `3650` as `3,650`.
fn group(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
}

fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn clip(s: &str) -> String {
    if s.chars().count() <= TEXT_MAX {
        s.to_string()
    } else {
        let cut: String = s.chars().take(TEXT_MAX).collect();
        format!("{cut}…")
    }
}

/// A value in words: an id with its object's name, text in quotes, `none` for null.
fn show(v: &Value, names: &mut Names<'_>) -> String {
    match v {
        Value::Null => "none".into(),
        Value::Bool(b) => if *b { "yes" } else { "no" }.into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if reader(&names.app.router, s).is_some() => names.of(s),
        Value::String(s) => format!("“{}”", clip(s)),
        Value::Array(items) if items.is_empty() => "none".into(),
        Value::Array(items) => {
            let mut shown: Vec<String> = items
                .iter()
                .take(LISTED_MAX)
                .map(|x| show(x, names))
                .collect();
            if items.len() > LISTED_MAX {
                shown.push(format!("and {} more", items.len() - LISTED_MAX));
            }
            shown.join(", ")
        }
        Value::Object(_) => v.to_string(),
    }
}

/// The route that reads an object by its id, when that object has a name to show
/// ([`display_name`]): a `GET /{collection}/{id}` whose body's `id` is of the id's kind (its
/// schema's pattern starts `^{prefix}_`). Derived from the route table and its schemas, so a new area's
/// objects are named in summaries without a line here.
fn reader<'r>(router: &'r Router, id: &str) -> Option<&'r Route> {
    let (prefix, rest) = id.split_once('_')?;
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    let reads_one = |r: &Route| {
        let mut segments = r.path.trim_start_matches('/').split('/');
        r.method == Method::GET
            && segments.next().is_some_and(|s| !s.starts_with('{'))
            && segments.next().is_some_and(|s| s.starts_with('{'))
            && segments.next().is_none()
    };
    router.routes().iter().filter(|r| reads_one(r)).find(|r| {
        let Some(properties) = r
            .success
            .1
            .and_then(|schema| router.schema(schema))
            .map(|schema| &schema["properties"])
        else {
            return false;
        };
        let pattern = properties["id"]["pattern"].as_str().unwrap_or("");
        pattern
            .strip_prefix('^')
            .and_then(|p| p.split_once('_'))
            .is_some_and(|(p, _)| p == prefix)
            && DISPLAY_NAMES.iter().any(|k| properties.get(*k).is_some())
    })
}

/// Names of objects by id, read through the pipeline as the caller.
struct Names<'a> {
    app: &'a App,
    caller: &'a Caller<'a>,
    cache: HashMap<String, String>,
    lookups: usize,
}

impl Names<'_> {
    /// `“Name” (id)`, or the id alone when it cannot be read.
    fn of(&mut self, id: &str) -> String {
        if let Some(known) = self.cache.get(id) {
            return known.clone();
        }
        let name = self.read(id);
        let shown = match name {
            Some(n) => format!("“{}” ({id})", clip(&n)),
            None => id.to_string(),
        };
        self.cache.insert(id.to_string(), shown.clone());
        shown
    }

    fn read(&mut self, id: &str) -> Option<String> {
        if self.lookups >= LOOKUPS_MAX {
            return None;
        }
        let route = reader(&self.app.router, id)?;
        self.lookups += 1;
        let resp = self.caller.rest(
            self.app,
            Method::GET,
            fill_path(route.path, &[id]),
            String::new(),
            None,
            None,
        );
        if !resp.status.is_success() {
            return None;
        }
        let v = resp.body_json()?;
        display_name(&v).map(String::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn amounts_read_as_people_write_them() {
        assert_eq!(money(4900), "49.00");
        assert_eq!(money(123456), "1,234.56");
        assert_eq!(money(5), "0.05");
        assert_eq!(group(3650), "3,650");
        assert_eq!(group(-1280), "-1,280");
        assert_eq!(group(100), "100");
    }

    #[test]
    fn a_cost_names_price_invoice_and_balance() {
        let cost = |v: Value| serde_json::from_value::<Cost>(v).unwrap();
        let purchase = cost(
            json!({"price_cents": 4900, "currency": "EUR", "tokens_added": 500,
            "balance": 3150, "balance_after": 3650, "invoice_line": {"invoice_id": null}}),
        );
        assert_eq!(
            cost_words(&purchase, Some("“Northwind Grocers” (cmp_1)")),
            "It costs 49.00 EUR for 500 tokens, billed on a new invoice; the balance of “Northwind Grocers” (cmp_1) goes from 3,150 to 3,650 tokens"
        );
        let activation = cost(
            json!({"tokens": 120, "balance": 1400, "balance_after": 1280, "sufficient": true}),
        );
        assert_eq!(
            cost_words(&activation, None),
            "It costs 120 tokens; the balance goes from 1,400 to 1,280 tokens"
        );
        assert_eq!(cost_words(&cost(Value::Null), None), "");
    }

    #[test]
    fn ids_are_recognised_by_their_prefix() {
        let router = Router::new(crate::app::routes()).with_schemas(crate::routes::schemas());
        let op = |id: &str| reader(&router, id).map(|r| r.operation_id);
        assert_eq!(op("dev_0m5d4ru"), Some("getDevice"));
        assert_eq!(op("tpk_abc"), Some("getTokenPack"));
        assert_eq!(op("draft"), None);
        assert_eq!(op("ad_"), None);
        assert_eq!(op("Use PASS_SUMMER24"), None);
        // Every kind whose objects carry a name is read by the route beside its list.
        let named: Vec<(&str, &str)> = crate::ids::Kind::PREFIXES
            .iter()
            .filter_map(|p| op(&format!("{p}_x1")).map(|o| (*p, o)))
            .collect();
        // Each is the plain `GET /<collection>/{id}` of its kind (the literal pairs are not
        // repeated here: a new area's kind joins by its route), and none of today's is lost.
        for (prefix, operation) in &named {
            let route = router
                .by_operation(operation)
                .unwrap_or_else(|| panic!("{operation}"));
            assert!(
                route.method == hyper::Method::GET
                    && route.path.matches('/').count() == 2
                    && route.path.ends_with("/{id}")
                    && operation.starts_with("get"),
                "{prefix}: {operation} is {} {}",
                route.method,
                route.path
            );
        }
        let prefixes: Vec<&str> = named.iter().map(|(p, _)| *p).collect();
        for kept in [
            "cmp", "dev", "ad", "promo", "qr", "plan", "tpk", "med", "wh", "cli", "key",
        ] {
            assert!(prefixes.contains(&kept), "{kept} in {prefixes:?}");
        }
    }
}
