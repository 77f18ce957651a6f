//! Schema and body cannot drift: every GET route of the OpenAPI document (`GET /openapi.json`) is
//! called on the demo world, and each 200 body is checked against the schema the document gives for
//! it, `$ref`s resolved. List routes check every row of their first page; routes with an `{id}`
//! check every object of their collection. A route added without a sample value for a required
//! parameter fails here until one is given.
//!
//! The checker is the project's own JSON Schema validator, plus what it does not read (`anyOf`,
//! `oneOf`, every `pattern`, the `date-time` format), so a body that passes here passes a strict
//! client too.

use crate::helpers::*;
use regex::Regex;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// The project's JSON Schema validator, imported in this one place.
use signage::jsonschema::validate as project_validate;

/// Every GET is made as the first of these keys that gets a 200: an account admin sees everything.
const KEYS: [&str; 3] = ["northwind-admin", "northwind-readwrite", "sandbox-operator"];

/// A value for each required query parameter a GET route may have.
fn sample_query_value(name: &str) -> Option<String> {
    match name {
        "company_id" => Some(company_id("Northwind Grocers")),
        "account_id" => Some(crate::helpers::key("northwind-admin").account_id),
        _ => None,
    }
}

/// Inlines every `$ref` (`#/components/schemas/...`) of `schema`.
pub(crate) fn resolve(doc: &Value, schema: &Value, depth: usize) -> Value {
    assert!(depth < 32, "a $ref cycle? {schema}");
    match schema {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                let target = doc
                    .pointer(r.trim_start_matches('#'))
                    .unwrap_or_else(|| panic!("dangling $ref {r}"));
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

/// Checks `v` against a resolved schema: the project validator first, then what it leaves out.
pub(crate) struct Checker {
    patterns: HashMap<String, Regex>,
    date_time: Regex,
}

impl Checker {
    pub(crate) fn new() -> Checker {
        Checker {
            patterns: HashMap::new(),
            date_time: Regex::new(
                r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$",
            )
            .unwrap(),
        }
    }

    pub(crate) fn check(&mut self, v: &Value, schema: &Value, at: &str) -> Result<(), String> {
        project_validate(v, schema, at).map_err(|e| format!("{at}: {e}"))?;
        let Some(s) = schema.as_object() else {
            return Ok(());
        };
        if let Some(branches) = s.get("anyOf").and_then(Value::as_array) {
            if !branches.iter().any(|b| self.check(v, b, at).is_ok()) {
                return Err(format!("{at}: matches no branch of anyOf: {v}"));
            }
        }
        if let Some(branches) = s.get("oneOf").and_then(Value::as_array) {
            let n = branches
                .iter()
                .filter(|b| self.check(v, b, at).is_ok())
                .count();
            if n != 1 {
                return Err(format!("{at}: matches {n} branches of oneOf: {v}"));
            }
        }
        if let Value::String(text) = v {
            if let Some(p) = s.get("pattern").and_then(Value::as_str) {
                let re = self.patterns.entry(p.to_string()).or_insert_with(|| {
                    Regex::new(p).unwrap_or_else(|e| panic!("pattern {p}: {e}"))
                });
                if !re.is_match(text) {
                    return Err(format!("{at}: {text:?} does not match {p}"));
                }
            }
            if s.get("format").and_then(Value::as_str) == Some("date-time")
                && !self.date_time.is_match(text)
            {
                return Err(format!("{at}: {text:?} is not an RFC 3339 date-time"));
            }
        }
        match v {
            Value::Object(obj) => {
                let props = s.get("properties").and_then(Value::as_object);
                for (k, x) in obj {
                    let path = format!("{at}/{k}");
                    match (props.and_then(|p| p.get(k)), s.get("additionalProperties")) {
                        (Some(ps), _) => self.check(x, ps, &path)?,
                        (None, Some(extra @ Value::Object(_))) => self.check(x, extra, &path)?,
                        _ => {}
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item) = s.get("items") {
                    for (i, x) in items.iter().enumerate() {
                        self.check(x, item, &format!("{at}/{i}"))?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The GET routes of the document that answer 200 (not a redirect such as `/q/{code}`, which has
/// no body to check), in document order, with their operation.
fn get_routes(doc: &Value) -> Vec<(String, Value)> {
    doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .filter_map(|(path, item)| item.get("get").map(|op| (path.clone(), op.clone())))
        .filter(|(_, op)| op["responses"].get("200").is_some())
        .collect()
}

/// `path` with its required query parameters filled in.
fn with_query(path: &str, op: &Value) -> String {
    let mut query = Vec::new();
    for p in op["parameters"].as_array().into_iter().flatten() {
        if p["in"] == "query" && p["required"] == true {
            let name = p["name"].as_str().unwrap();
            let value = sample_query_value(name).unwrap_or_else(|| {
                panic!("GET {path} requires `{name}`: add a sample value in sample_query_value")
            });
            query.push(format!("{name}={value}"));
        }
    }
    if query.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", query.join("&"))
    }
}

async fn get_200(app: &TestApp, url: &str) -> TestResponse {
    let mut refused = Vec::new();
    for key in KEYS {
        let r = app.get(url).key(key).send().await;
        if r.status == 200 {
            return r;
        }
        refused.push((key, r.status, r.text()));
    }
    panic!("GET {url}: no demo key got a 200: {refused:?}")
}

/// The ids of the objects behind `/{collection}/{id}`: the rows of `GET /{collection}`, or for QR
/// codes (which have no top-level list) the QR codes of every promotion.
async fn sample_ids(app: &TestApp, doc: &Value, collection: &str) -> Vec<String> {
    let ids = |page: &Value| -> Vec<String> {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["id"].as_str().unwrap().to_string())
            .collect()
    };
    // A sandbox control of a platform object (`/_sandbox/webhooks/{id}/drills`): its objects.
    let collection = match collection.strip_prefix("/_sandbox") {
        Some(platform) if doc["paths"][collection].get("get").is_none() => platform,
        _ => collection,
    };
    if let Some(op) = doc["paths"][collection].get("get") {
        let url = with_query(collection, op);
        let sep = if url.contains('?') { '&' } else { '?' };
        return ids(&get_200(app, &format!("{url}{sep}limit=100")).await.json());
    }
    assert_eq!(
        collection, "/qr-codes",
        "no list to draw {collection} ids from"
    );
    let mut out = Vec::new();
    for promo in ids(&get_200(app, "/promotions?limit=100").await.json()) {
        let page = get_200(app, &format!("/promotions/{promo}/qr-codes?limit=100")).await;
        out.extend(ids(&page.json()));
    }
    out
}

/// The documented 200 response of a GET: content type → resolved schema.
fn ok_content(doc: &Value, path: &str, op: &Value) -> Map<String, Value> {
    let content = op["responses"]["200"]["content"]
        .as_object()
        .unwrap_or_else(|| panic!("GET {path} documents no 200 content"));
    content
        .iter()
        .map(|(ct, media)| (ct.clone(), resolve(doc, &media["schema"], 0)))
        .collect()
}

/// Every (route, url, body) sample of the demo world: one per list route, one per object for
/// routes with an `{id}`.
async fn samples(app: &TestApp, doc: &Value) -> Vec<(String, String, TestResponse)> {
    let mut out = Vec::new();
    for (path, op) in get_routes(doc) {
        let urls = match path.split_once("/{id}") {
            // A sink is named by its user; the demo world's webhooks deliver to this one.
            None => vec![with_query(
                &path.replace("{name}", "northwind-grocers"),
                &op,
            )],
            Some((collection, rest)) => {
                let ids = sample_ids(app, doc, collection).await;
                assert!(!ids.is_empty(), "no demo {collection} to sample GET {path}");
                let mut urls = Vec::new();
                for id in &ids {
                    let filled = format!("{collection}/{id}{rest}");
                    match filled.split_once("/{") {
                        None => urls.push(with_query(&filled, &op)),
                        // A nested object (`/webhooks/{id}/deliveries/{delivery_id}`): the ids
                        // its parent's list shows.
                        Some((parent, _)) => {
                            let page = get_200(app, &format!("{parent}?limit=100")).await.json();
                            for row in page["data"].as_array().unwrap() {
                                let sub = row["id"].as_str().unwrap();
                                urls.push(with_query(&format!("{parent}/{sub}"), &op));
                            }
                        }
                    }
                }
                assert!(!urls.is_empty(), "no demo object to sample GET {path}");
                urls
            }
        };
        for url in urls {
            let r = get_200(app, &url).await;
            out.push((path.clone(), url, r));
        }
    }
    out
}

#[tokio::test]
async fn every_get_route_returns_what_its_schema_documents() {
    // A few hundred GETs as one key: the per-key rate limit is not under test here.
    let app = TestApp::spawn_with(|l| l.rate_limit_per_second = Some(0.0)).await;
    // The audit log starts empty: one write and one refused credential give it both kinds of row.
    let grocers = company_id("Northwind Grocers");
    app.patch(&format!("/companies/{grocers}/branding"))
        .key("northwind-readwrite")
        .json(&json!({"corner_radius_px": 9}))
        .send()
        .await
        .ok();
    app.get("/companies")
        .header("x-api-key", "sgn_test_nope")
        .send()
        .await
        .problem(401);
    // The sandbox's in-memory lists hold one item each (a rule that matches no real request).
    let rule = json!({"match": {"operation_id": "listAds", "method": "GET", "path": "/nowhere/**",
        "key_id": crate::helpers::key("northwind-admin").key_id, "via": "rest"},
        "action": {"type": "status", "status": 503, "detail": "d", "retry_after": 1},
        "times": 3, "probability": 0.5});
    for (path, body) in [
        ("/_sandbox/faults", rule),
        ("/_sandbox/snapshots", json!({"name": "s"})),
    ] {
        let r = app
            .post(path)
            .key("sandbox-operator")
            .json(&body)
            .send()
            .await;
        assert_eq!(r.status, 201, "{}", r.text());
    }
    // Drills start empty: one, against a closed port, gives the drill list a row.
    let hook: String = app.sql(|c| c.query_row("SELECT min(id) FROM webhooks", [], |r| r.get(0)));
    let url: String = app.sql(|c| {
        c.query_row("SELECT url FROM webhooks WHERE id = ?1", [&hook], |r| {
            r.get(0)
        })
    });
    let set_url = |to: &str| {
        let to = to.to_string();
        let hook = hook.clone();
        app.sql(move |c| c.execute("UPDATE webhooks SET url = ?1 WHERE id = ?2", [&to, &hook]))
    };
    set_url("http://127.0.0.1:9/drill");
    let r = app
        .post(&format!("/_sandbox/webhooks/{hook}/drills"))
        .key("sandbox-operator")
        .json(&json!({"kind": "duplicate"}))
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    // Back to the built-in sink: the test delivery below gives the sink list a row.
    set_url(&url);
    // Proof-of-play starts empty (the fleet writes on the clock): one reported play gives the
    // playback lists and the report rows.
    let (device, ad): (String, String) = app.sql(|c| {
        c.query_row(
            "SELECT device_id, ad_id FROM ad_assignments ORDER BY 1, 2 LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    let started = signage::time::rfc3339(signage::time::wall_now() - 60);
    app.post(&format!("/devices/{device}/playbacks"))
        .key("northwind-admin")
        .json(&json!({"ad_id": ad, "started_at": started, "duration_seconds": 10}))
        .send()
        .await
        .ok();
    // A webhook delivery with an attempt (the fixture URL does not resolve: a failed one).
    let hook = app.sql(|c| {
        c.query_row(
            "SELECT id FROM webhooks WHERE company_id = ?1 ORDER BY id LIMIT 1",
            [&grocers],
            |r| r.get::<_, String>(0),
        )
    });
    let tested = app
        .post(&format!("/webhooks/{hook}/test"))
        .key("northwind-admin")
        .send()
        .await;
    assert_eq!(tested.status, 200);
    let doc = app.get("/openapi.json").send().await.ok();
    let mut checker = Checker::new();
    let mut checked_json = 0;
    let mut routes_seen = std::collections::BTreeSet::new();
    // List routes → rows checked over all their samples.
    let mut list_rows: HashMap<String, usize> = HashMap::new();
    for (path, url, r) in samples(&app, &doc).await {
        routes_seen.insert(path.clone());
        let content = ok_content(&doc, &path, &doc["paths"][&path]["get"]);
        let ct = r.header("content-type").unwrap_or("").to_string();
        let media = ct.split(';').next().unwrap().trim();
        let schema = match content.get(media).or_else(|| content.get("*/*")) {
            Some(s) => s,
            None => panic!(
                "GET {url}: content type {ct} is not documented ({:?})",
                content.keys()
            ),
        };
        if schema["format"] == "binary" {
            assert!(!r.body.is_empty(), "GET {url}: empty binary body");
            continue;
        }
        let body = r.json();
        if let Err(e) = checker.check(&body, schema, "") {
            panic!("GET {url} drifted from its documented schema: {e}\nbody: {body}");
        }
        checked_json += 1;
        if body.get("object") == Some(&json!("list")) {
            *list_rows.entry(path).or_default() += body["data"].as_array().unwrap().len();
        }
    }
    // A list whose samples have no rows proves nothing about its rows.
    for (path, rows) in &list_rows {
        assert!(*rows > 0, "GET {path}: the demo world has no rows to check");
    }
    let documented: std::collections::BTreeSet<String> =
        get_routes(&doc).into_iter().map(|(p, _)| p).collect();
    assert_eq!(routes_seen, documented, "every GET route was sampled");
    assert!(checked_json > documented.len(), "{checked_json} bodies");
}

/// The checker is not vacuous: a body that drifts from its schema in any of the ways a hand-built
/// response can (a missing field, an extra one, a wrong type, a wrong enum value, a bad id or date,
/// a nested object gone wrong) is rejected.
#[tokio::test]
async fn the_schema_check_rejects_each_kind_of_drift() {
    let app = TestApp::spawn().await;
    let doc = app.get("/openapi.json").send().await.ok();
    let mut checker = Checker::new();
    let devices = get_200(&app, "/devices?limit=1").await.json();
    let id = devices["data"][0]["id"].as_str().unwrap().to_string();
    let device = get_200(&app, &format!("/devices/{id}")).await.json();
    let schema = ok_content(&doc, "/devices/{id}", &doc["paths"]["/devices/{id}"]["get"])
        ["application/json"]
        .clone();
    checker.check(&device, &schema, "").unwrap();

    type Drift = fn(&mut Map<String, Value>);
    let drifts: [(&str, Drift); 7] = [
        ("missing field", |d| {
            d.remove("name");
        }),
        ("extra field", |d| {
            d.insert("serial".into(), json!("x"));
        }),
        ("wrong type", |d| {
            d.insert("assigned_ad_count".into(), json!("3"));
        }),
        ("wrong enum", |d| {
            d.insert("status".into(), json!("sleeping"));
        }),
        ("wrong id prefix", |d| {
            d.insert("id".into(), json!("ad_123"));
        }),
        ("not a date-time", |d| {
            d.insert("created_at".into(), json!("yesterday"));
        }),
        ("null where not nullable", |d| {
            d.insert("location".into(), Value::Null);
        }),
    ];
    for (what, drift) in drifts {
        let mut body = device.clone();
        drift(body.as_object_mut().unwrap());
        assert!(
            checker.check(&body, &schema, "").is_err(),
            "a device with a {what} passed: {body}"
        );
    }

    // Lists: a bad row deep in `data` is found, and so is a wrong envelope.
    let list_schema =
        ok_content(&doc, "/devices", &doc["paths"]["/devices"]["get"])["application/json"].clone();
    let mut list = get_200(&app, "/devices?limit=5").await.json();
    checker.check(&list, &list_schema, "").unwrap();
    list["data"][0]["orientation"] = json!("diagonal");
    assert!(checker.check(&list, &list_schema, "").is_err());
    list["data"][0]["orientation"] = json!("landscape");
    list["has_more"] = json!("no");
    assert!(checker.check(&list, &list_schema, "").is_err());

    // anyOf and oneOf branches are checked, not skipped.
    let any = json!({"anyOf": [{"type": "string", "pattern": "^ad_"}, {"type": "null"}]});
    checker.check(&json!("ad_1"), &any, "").unwrap();
    checker.check(&Value::Null, &any, "").unwrap();
    assert!(checker.check(&json!("dev_1"), &any, "").is_err());
    let one = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
    assert!(
        checker.check(&json!(1), &one, "").is_err(),
        "two branches match"
    );
    checker.check(&json!(1.5), &one, "").unwrap();
}
