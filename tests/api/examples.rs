//! The document's examples are the demo world's: `reference/examples.json` is what a fresh
//! sandbox, its clock frozen at `openapi::examples::CLOCK`, answers to one GET of each operation.
//! This test captures those answers again and compares; after a deliberate change to the demo
//! world or a response, rewrite the file with
//! `SIGNAGE_WRITE_EXAMPLES=1 cargo test --test api examples::`.
//! It also checks that every example in the document validates against its schema.

use crate::auth_matrix::sample_path;
use crate::helpers::*;
use crate::schemas::Checker;
use hyper::Method;
use serde_json::{json, Map, Value};
use signage::routes::openapi::{documented, examples};
use std::collections::BTreeMap;

const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/reference/examples.json");

/// The keys tried in turn: an account admin sees every company; the operator holds `sandbox`.
const KEYS: [&str; 2] = ["northwind-admin", "sandbox-operator"];

async fn fresh_frozen_sandbox() -> TestApp {
    let clock = signage::config::parse_clock(examples::CLOCK).unwrap();
    TestApp::spawn_with(|l| {
        l.sandbox_clock = Some(clock);
        l.sandbox_seed = Some(14);
        l.rate_limit_per_second = Some(0.0);
        // The short links QR codes encode name the public address: the documented default, not
        // this test server's ephemeral port.
        l.public_base_url = Some("http://127.0.0.1:8080".into());
    })
    .await
}

/// The URL captured for a GET route: fixture ids, two rows per list, required filters filled.
fn url(app: &TestApp, route: &signage::http::router::Route) -> String {
    let mut query = Vec::new();
    if route.query.iter().any(|q| q.name == "limit") {
        query.push("limit=2".to_string());
    }
    for q in route.query.iter().filter(|q| q.required) {
        match q.name {
            "company_id" => query.push(format!("company_id={}", company_id("Northwind Pharmacy"))),
            "account_id" => query.push(format!("account_id={}", key("northwind-admin").account_id)),
            other => panic!("{}: no example value for `{other}`", route.path),
        }
    }
    let path = sample_path(app, route);
    if query.is_empty() {
        path
    } else {
        format!("{path}?{}", query.join("&"))
    }
}

async fn capture() -> Value {
    let app = fresh_frozen_sandbox().await;
    let mut ops = BTreeMap::new();
    for route in app.app.router.routes() {
        if !documented(route)
            || route.method != Method::GET
            // Downloads and images; a report that also answers CSV still answers JSON by default.
            || (!route.produces.is_empty() && route.success.1.is_none())
            || route.operation_id == "getOpenApi"
            // The public short link answers a redirect, not a body.
            || route.operation_id == "scanQrCode"
        {
            continue;
        }
        let url = url(&app, route);
        let mut answered = None;
        for key in KEYS {
            let r = app.get(&url).key(key).send().await;
            if r.status == 200 {
                answered = Some(r.json());
                break;
            }
        }
        let body = answered.unwrap_or_else(|| panic!("GET {url}: no demo key got a 200"));
        ops.insert(route.operation_id, json!({"url": url, "body": body}));
    }
    json!({"clock": examples::CLOCK, "operations": ops})
}

#[tokio::test]
async fn the_examples_are_what_a_fresh_frozen_sandbox_answers() {
    let fresh = capture().await;
    if std::env::var_os("SIGNAGE_WRITE_EXAMPLES").is_some() {
        let text = serde_json::to_string_pretty(&fresh).unwrap() + "\n";
        std::fs::write(FILE, text).unwrap();
        return;
    }
    let committed: Value = serde_json::from_str(examples::CAPTURED).unwrap();
    let mut stale = Vec::new();
    let (a, b) = (&committed["operations"], &fresh["operations"]);
    for op in a
        .as_object()
        .unwrap()
        .keys()
        .chain(b.as_object().unwrap().keys())
    {
        if a.get(op) != b.get(op) && !stale.contains(op) {
            stale.push(op.clone());
        }
    }
    assert!(
        stale.is_empty(),
        "reference/examples.json differs from a fresh sandbox for {stale:?}; if the change is \
         meant, run `SIGNAGE_WRITE_EXAMPLES=1 cargo test --test api examples::`"
    );
    assert_eq!(committed["clock"], examples::CLOCK);
}

/// Inlines every `$ref` of `schema`.
fn resolve(doc: &Value, schema: &Value, depth: usize) -> Value {
    assert!(depth < 32, "a $ref cycle? {schema}");
    match schema {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                let target = doc.pointer(r.trim_start_matches('#')).unwrap();
                return resolve(doc, target, depth + 1);
            }
            Value::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), resolve(doc, v, depth + 1)))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| resolve(doc, v, depth + 1)).collect()),
        other => other.clone(),
    }
}

fn scalar(schema: &Map<String, Value>) -> bool {
    let is = |t: &str| matches!(t, "string" | "integer" | "number" | "boolean");
    match schema.get("type") {
        Some(Value::String(t)) => is(t),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).any(is),
        _ => false,
    }
}

/// Every example validates against its schema; every scalar property and every parameter has
/// one; every GET with a JSON answer and every JSON request body has one.
#[tokio::test]
async fn every_example_validates_and_none_is_missing() {
    let app = TestApp::spawn().await;
    let doc = app.get("/openapi.json").send().await.ok();
    let mut problems = Vec::new();
    // The full checker (every `pattern`, `oneOf`, date-times): what redocly's example rules read.
    let mut checker = Checker::new();
    let mut check = |what: String, v: &Value, schema: &Value| {
        if let Err(e) = checker.check(v, &resolve(&doc, schema, 0), "") {
            problems.push(format!("{what}: {e}: {v}"));
        }
    };
    fn props(at: &str, s: &Value, out: &mut Vec<(String, Option<Value>, Value)>) {
        for (name, p) in s["properties"].as_object().into_iter().flatten() {
            if let Some(m) = p.as_object() {
                if scalar(m) {
                    out.push((format!("{at}.{name}"), m.get("example").cloned(), p.clone()));
                }
            }
            props(&format!("{at}.{name}"), p, out);
            props(&format!("{at}.{name}[]"), &p["items"], out);
        }
    }
    let mut all = Vec::new();
    for (name, s) in doc["components"]["schemas"].as_object().unwrap() {
        props(name, s, &mut all);
    }
    // The events a receiver is sent (the document's `webhooks`): their payload schemas too.
    for (event, item) in doc["webhooks"].as_object().unwrap() {
        let media = &item["post"]["requestBody"]["content"]["application/json"];
        props(event, &media["schema"], &mut all);
    }
    let mut missing = Vec::new();
    for (at, example, schema) in &all {
        match example {
            Some(e) => check(at.clone(), e, schema),
            None => missing.push(at.clone()),
        }
    }
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let at = format!("{} {path}", method.to_uppercase());
            for p in op["parameters"].as_array().into_iter().flatten() {
                match p.get("example") {
                    Some(e) => check(format!("{at} {}", p["name"]), e, &p["schema"]),
                    None => missing.push(format!("{at} parameter {}", p["name"])),
                }
            }
            let body = &op["requestBody"]["content"]["application/json"];
            if body.is_object() {
                match body.get("example") {
                    Some(e) => check(format!("{at} request"), e, &body["schema"]),
                    None => missing.push(format!("{at} request body")),
                }
            }
            let ok = &op["responses"]["200"]["content"]["application/json"];
            if method == "get" && ok.is_object() && op["operationId"] != "getOpenApi" {
                match ok["examples"]["fresh_sandbox"].get("value") {
                    Some(e) => check(format!("{at} response"), e, &ok["schema"]),
                    None => missing.push(format!("{at} response")),
                }
            } else if ok.is_object()
                || op["responses"]["201"]["content"]["application/json"].is_object()
            {
                let media = if ok.is_object() {
                    ok
                } else {
                    &op["responses"]["201"]["content"]["application/json"]
                };
                match media.get("example") {
                    Some(e) if op["operationId"] != "getOpenApi" => {
                        check(format!("{at} response"), e, &media["schema"])
                    }
                    Some(_) => {}
                    None => missing.push(format!("{at} response")),
                }
            }
        }
    }
    assert!(missing.is_empty(), "without an example: {missing:#?}");
    assert!(problems.is_empty(), "invalid examples: {problems:#?}");
}
