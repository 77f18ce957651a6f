//! The API reference as an integrator meets it: every operation and tag described, enums and list
//! envelopes named once, headers declared as the server sends them, problem types that resolve to
//! a page, the `/docs` page under its CSP, and the YAML copy.

use crate::auth_matrix::sample_path;
use crate::helpers::*;
use hyper::Method;
use serde_json::Value;
use signage::auth::Action;
use signage::routes::openapi::{documented, problems, tag_list};
use std::collections::BTreeSet;

async fn doc(app: &TestApp) -> Value {
    app.get("/openapi.json").send().await.ok()
}

fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            out.push((method.to_uppercase(), path.clone(), op.clone()));
        }
    }
    out
}

/// A route added without `.describe(...)` (or with a tag not in `tag_list()`) fails here, named, so
/// it gets its text where it is declared.
#[tokio::test]
async fn every_operation_and_tag_is_described() {
    let app = TestApp::spawn().await;
    let undescribed: Vec<&str> = app
        .app
        .router
        .routes()
        .iter()
        .filter(|r| documented(r) && r.description.trim().len() < 20)
        .map(|r| r.operation_id)
        .collect();
    assert!(
        undescribed.is_empty(),
        "routes without `.describe(\"…\")`: {undescribed:?}"
    );
    let declared: BTreeSet<&str> = tag_list().into_iter().map(|(t, _)| t).collect();
    let undeclared: BTreeSet<&str> = app
        .app
        .router
        .routes()
        .iter()
        .filter(|r| documented(r) && !declared.contains(r.tag))
        .map(|r| r.tag)
        .collect();
    assert!(
        undeclared.is_empty(),
        "tags used but not in openapi::tag_list(): {undeclared:?}"
    );
    let doc = doc(&app).await;
    let tags: BTreeSet<&str> = doc["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert!(t["description"].as_str().unwrap().len() > 20, "{t}");
            t["name"].as_str().unwrap()
        })
        .collect();
    for (method, path, op) in operations(&doc) {
        let text = op["description"].as_str().unwrap_or("");
        assert!(text.contains("**Access:**"), "{method} {path}: {text}");
        assert_eq!(
            op["tags"].as_array().map(Vec::len),
            Some(1),
            "{method} {path}"
        );
        assert!(tags.contains(op["tags"][0].as_str().unwrap()));
        for p in op["parameters"].as_array().into_iter().flatten() {
            assert!(
                p["description"].as_str().is_some_and(|d| !d.is_empty()),
                "{method} {path}: parameter {p} undescribed"
            );
        }
    }
    for (name, scheme) in doc["components"]["securitySchemes"].as_object().unwrap() {
        assert!(scheme["description"].as_str().is_some(), "{name}");
    }
    assert_eq!(doc["info"]["license"]["identifier"], "MIT");
}

/// Finds every `enum` in `v`, with its JSON Pointer.
fn enums(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if m.contains_key("enum") {
                out.push(at.to_string());
            }
            for (k, x) in m {
                enums(x, &format!("{at}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                enums(x, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Generators make one class per inline enum and per anonymous list: both are named components,
/// each defined once and referenced wherever it appears.
#[tokio::test]
async fn enums_and_list_envelopes_are_named_components() {
    let app = TestApp::spawn().await;
    let doc = doc(&app).await;
    let mut found = Vec::new();
    enums(&doc, "", &mut found);
    let inline: Vec<&String> = found
        .iter()
        .filter(|p| {
            let top = p.strip_prefix("/components/schemas/");
            top.is_none_or(|t| t.contains('/'))
                && !p.starts_with("/components/headers/IdempotentReplayed")
        })
        .collect();
    assert!(inline.is_empty(), "inline enums: {inline:?}");
    // One set of values, one component.
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut sets = BTreeSet::new();
    for (name, s) in schemas {
        if let Some(values) = s["enum"].as_array() {
            let mut v: Vec<String> = values.iter().map(|x| x.to_string()).collect();
            v.sort();
            assert!(sets.insert(v), "{name} repeats another enum's values");
        }
    }
    let platform = "#/components/schemas/DevicePlatform";
    for s in ["Device", "DeviceCreate", "DeviceUpdate"] {
        assert_eq!(
            schemas[s]["properties"]["platform"]["$ref"], platform,
            "{s}"
        );
    }
    let status = &doc["paths"]["/devices"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "status")
        .unwrap()["schema"];
    assert_eq!(status["$ref"], "#/components/schemas/DeviceStatus");
    // Lists: `DeviceList` with `data: Device[]`, referenced by name.
    let list = &doc["paths"]["/devices"]["get"]["responses"]["200"]["content"]["application/json"]
        ["schema"];
    assert_eq!(list["$ref"], "#/components/schemas/DeviceList");
    assert_eq!(
        schemas["DeviceList"]["properties"]["data"]["items"]["$ref"],
        "#/components/schemas/Device"
    );
    for (method, path, op) in operations(&doc) {
        for (status, resp) in op["responses"].as_object().unwrap() {
            if let Some(s) = resp["content"]["application/json"]["schema"].as_object() {
                assert!(
                    s.contains_key("$ref"),
                    "{method} {path} {status}: anonymous schema"
                );
            }
        }
    }
    // The problem codes are a described enum holding every code the server sends.
    let codes = &schemas["ProblemCode"];
    for code in ["missing_credential", "client_mismatch", "invalid_if_match"] {
        assert!(codes["enum"].as_array().unwrap().contains(&code.into()));
        assert!(codes["description"].as_str().unwrap().contains(code));
    }
}

/// Headers the server sends are declared where it sends them, and the declarations are true:
/// each authenticated GET is called and its `ETag` compared with the document.
#[tokio::test]
async fn headers_are_declared_as_sent() {
    // A limit high enough never to refuse, but on: its headers are part of what is checked.
    let app = TestApp::spawn_with(|l| l.rate_limit_per_second = Some(1000.0)).await;
    let doc = doc(&app).await;
    let mut checked = 0;
    for route in app.app.router.routes() {
        if !documented(route) || route.method != Method::GET || route.action == Action::Public {
            continue;
        }
        let op = &doc["paths"][route.path]["get"];
        let ok = &op["responses"]["200"];
        let r = app
            .get(&sample_path(&app, route))
            .key("northwind-admin")
            .send()
            .await;
        if r.status != 200 {
            continue; // a list that needs a filter: its headers are those of any other.
        }
        checked += 1;
        assert_eq!(
            r.header("etag").is_some(),
            ok["headers"].get("ETag").is_some(),
            "GET {}: ETag sent and declared disagree",
            route.path
        );
        for h in ["Request-Id", "RateLimit", "RateLimit-Policy"] {
            assert!(r.header(h).is_some(), "GET {}: {h} not sent", route.path);
            assert!(ok["headers"].get(h).is_some(), "GET {}: {h}", route.path);
        }
        assert!(op["responses"]["401"]["headers"]["WWW-Authenticate"].is_object());
        assert!(op["responses"]["429"]["headers"]["Retry-After"].is_object());
        assert!(op["responses"]["503"]["headers"]["Retry-After"].is_object());
    }
    assert!(checked > 15, "{checked}");
    // Writes: Idempotency-Key in, Idempotent-Replayed out; If-Match where honoured; If-None-Match
    // where a 304 is possible.
    let create = &doc["paths"]["/devices"]["post"];
    let names = |op: &Value| -> Vec<String> {
        op["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(names(create).contains(&"Idempotency-Key".into()));
    assert!(create["responses"]["201"]["headers"]["Idempotent-Replayed"].is_object());
    assert!(create["responses"]["201"]["headers"]["ETag"].is_object());
    assert!(names(&doc["paths"]["/devices/{id}"]["patch"]).contains(&"If-Match".into()));
    let download = &doc["paths"]["/media/{id}/content"]["get"];
    assert!(names(download).contains(&"If-None-Match".into()));
    assert!(download["responses"]["304"]["headers"]["ETag"].is_object());
    // A 401 really carries the declared challenge.
    let r = app.get("/devices").send().await;
    r.problem(401);
    assert!(r.header("www-authenticate").is_some());
}

#[tokio::test]
async fn servers_are_templated_with_defaults() {
    let app = TestApp::spawn().await;
    let doc = doc(&app).await;
    let servers = doc["servers"].as_array().unwrap();
    assert_eq!(servers[0]["url"], "http://{host}:{port}");
    assert_eq!(servers[0]["variables"]["host"]["default"], "127.0.0.1");
    assert_eq!(servers[0]["variables"]["port"]["default"], "8080");
    assert_eq!(servers[1]["url"], "/");
}

/// Every problem `type` is a page; an error's own `type` resolves against the server.
#[tokio::test]
async fn problem_types_resolve_to_pages() {
    let app = TestApp::spawn().await;
    let p = app
        .get("/devices/dev_nope")
        .key("northwind-admin")
        .send()
        .await;
    let ty = p.problem(404)["type"].as_str().unwrap().to_string();
    assert_eq!(ty, "/problems/not-found");
    let page = app.get(&ty).send().await;
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    assert!(page.text().contains("Another company"));
    let doc = doc(&app).await;
    let listed = doc["components"]["schemas"]["ProblemType"]["enum"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(listed.len(), problems::TYPES.len());
    for t in problems::TYPES {
        let r = app.get(&format!("/problems/{}", t.slug)).send().await;
        assert_eq!(r.status, 200, "{}", t.slug);
        assert!(
            r.text().contains(&format!("HTTP {}", t.status)),
            "{}",
            t.slug
        );
        assert!(listed.contains(&format!("/problems/{}", t.slug).into()));
    }
    // Names that are not problem types, escapes included, are plain 404s.
    for bad in [
        "nope",
        "%2e%2e",
        "..%2fopenapi.json",
        "NOT-FOUND",
        "%3Cscript%3E",
    ] {
        let r = app.get(&format!("/problems/{bad}")).send().await;
        assert_eq!(r.status, 404, "{bad}");
        assert!(!r.text().contains("<script"), "{bad}");
    }
}

/// `/docs` is our own page: no inline script or CDN, served with a CSP that forbids both.
#[tokio::test]
async fn the_docs_page_is_served_with_its_csp() {
    let app = TestApp::spawn().await;
    let page = app.get("/docs").send().await;
    assert_eq!(page.status, 200);
    let csp = page.header("content-security-policy").unwrap().to_string();
    assert!(csp.contains("script-src 'self'") && csp.contains("default-src 'none'"));
    assert!(!csp.contains("unsafe-inline"));
    let html = page.text();
    assert!(html.contains("src=\"/docs/app.js\""));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no CDN"
    );
    assert_eq!(html.matches("<script").count(), 1);
    for (file, ty) in [("app.js", "text/javascript"), ("app.css", "text/css")] {
        let r = app.get(&format!("/docs/{file}")).send().await;
        assert_eq!(r.status, 200, "{file}");
        assert!(r.header("content-type").unwrap().starts_with(ty));
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        assert!(r.header("content-security-policy").is_some());
    }
    let js = app.get("/docs/app.js").send().await.text();
    assert!(
        js.contains("sessionStorage"),
        "the credential stays in the tab"
    );
    assert!(!js.contains("localStorage") && !js.contains("innerHTML"));
    for bad in ["app.jsx", "..", "%2e%2e%2fopenapi.json", "docs.html"] {
        assert_eq!(
            app.get(&format!("/docs/{bad}")).send().await.status,
            404,
            "{bad}"
        );
    }
}

#[tokio::test]
async fn the_yaml_document_is_the_json_document() {
    let app = TestApp::spawn().await;
    let r = app.get("/openapi.yaml").send().await;
    assert_eq!(r.status, 200);
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("application/yaml"));
    let text = r.text();
    assert!(text.starts_with("\"openapi\": \"3.1.0\"\n"));
    // Every top-level member, in order, as a block key.
    let doc = doc(&app).await;
    let keys: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with('-'))
        .map(|l| l.split(':').next().unwrap().trim_matches('"').to_string())
        .collect();
    let members: Vec<String> = doc.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, members);
}

fn undescribed_properties(v: &Value, at: &str, out: &mut Vec<String>) {
    let Some(obj) = v.as_object() else { return };
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        for (name, p) in props {
            if p.get("description")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                out.push(format!("{at}.{name}"));
            }
            undescribed_properties(p, &format!("{at}.{name}"), out);
        }
    }
    if let Some(items) = obj.get("items") {
        undescribed_properties(items, &format!("{at}[]"), out);
    }
    for key in ["anyOf", "oneOf"] {
        for b in obj.get(key).and_then(Value::as_array).into_iter().flatten() {
            undescribed_properties(b, at, out);
        }
    }
}

/// A schema added without text (in its `schemas()` or in `openapi/descriptions.rs`) fails here,
/// named, as does a property whose name the table does not know.
#[tokio::test]
async fn every_schema_and_property_is_described() {
    let app = TestApp::spawn().await;
    let doc = doc(&app).await;
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let bare: Vec<&String> = schemas
        .iter()
        .filter(|(_, s)| s.get("description").is_none())
        .map(|(n, _)| n)
        .collect();
    assert!(bare.is_empty(), "schemas without a description: {bare:?}");
    let mut props = Vec::new();
    for (name, s) in schemas {
        undescribed_properties(s, name, &mut props);
    }
    assert!(
        props.is_empty(),
        "properties without a description: {props:?}"
    );
}

/// Every `code: "…"` a handler puts in a problem (`ApiError::Malformed`, `ApiError::ConflictCode`)
/// is a value of the documented `ProblemCode` enum: a strict generated client would otherwise
/// fail to read that error. Reads the sources, so a code added anywhere is named here.
#[test]
fn every_problem_code_in_the_sources_is_documented() {
    fn walk(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (i, _) in text.match_indices("ApiError::") {
                    let rest = &text[i..];
                    let variant = rest["ApiError::".len()..]
                        .split(|c: char| !c.is_alphanumeric())
                        .next()
                        .unwrap();
                    if variant != "Malformed" && variant != "ConflictCode" {
                        continue;
                    }
                    let window = &rest[..rest.len().min(200)];
                    if let Some(at) = window.find("code: \"") {
                        let code = window[at + 7..].split('"').next().unwrap();
                        out.push((code.to_string(), path.display().to_string()));
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut found,
    );
    assert!(found.len() >= 4, "{found:?}");
    let codes = problems::codes();
    let documented: Vec<&str> = codes.iter().map(|c| c.code.as_ref()).collect();
    let missing: Vec<&(String, String)> = found
        .iter()
        .filter(|(code, _)| !documented.contains(&code.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "problem codes missing from openapi::problems: {missing:?}"
    );
}

fn nulls(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Null => out.push(at.to_string()),
        Value::Object(m) => {
            for (k, x) in m {
                if !matches!(
                    k.as_str(),
                    "example" | "examples" | "default" | "const" | "enum"
                ) {
                    nulls(x, &format!("{at}/{k}"), out);
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                nulls(x, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Outside example values, the document has no `null`: a member filled in by indexing a
/// missing key (`op["requestBody"]…`) would be one, and validators refuse it.
#[tokio::test]
async fn the_document_has_no_stray_null() {
    let app = TestApp::spawn().await;
    let doc = doc(&app).await;
    let mut found = Vec::new();
    nulls(&doc, "", &mut found);
    assert!(found.is_empty(), "{found:?}");
    let bodies = operations(&doc)
        .iter()
        .filter(|(_, _, op)| op.get("requestBody").is_some())
        .count();
    assert!(bodies < 40, "{bodies} operations with a request body");
}
