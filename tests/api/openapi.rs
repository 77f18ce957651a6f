//! The OpenAPI document is generated from the route table; these tests prove the two agree and
//! that the document is internally whole.

use crate::helpers::*;
use serde_json::Value;
use signage::routes::openapi::documented;
use std::collections::BTreeSet;

fn refs(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                out.insert(r.clone());
            }
            m.values().for_each(|x| refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

#[tokio::test]
async fn the_router_and_the_document_list_the_same_operations() {
    let app = TestApp::spawn().await;
    let r = app.get("/openapi.json").send().await;
    let doc = r.ok();
    assert_eq!(doc["openapi"], "3.1.0");
    let mut in_doc = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            in_doc.insert((
                method.to_uppercase(),
                path.clone(),
                op["operationId"].as_str().unwrap().to_string(),
            ));
        }
    }
    let routed: BTreeSet<(String, String, String)> = app
        .app
        .router
        .routes()
        .iter()
        .filter(|r| documented(r))
        .map(|r| {
            (
                r.method.to_string(),
                r.path.to_string(),
                r.operation_id.to_string(),
            )
        })
        .collect();
    assert_eq!(in_doc, routed);
    // Operation ids are unique.
    let ids: BTreeSet<&str> = app
        .app
        .router
        .routes()
        .iter()
        .map(|r| r.operation_id)
        .collect();
    assert_eq!(ids.len(), app.app.router.routes().len());
}

#[tokio::test]
async fn every_reference_resolves_and_every_operation_is_secured_as_routed() {
    let app = TestApp::spawn().await;
    let doc = app.get("/openapi.json").send().await.ok();
    let mut all = BTreeSet::new();
    refs(&doc, &mut all);
    for r in &all {
        let pointer = r.trim_start_matches('#');
        assert!(doc.pointer(pointer).is_some(), "dangling $ref {r}");
    }
    let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
    for name in ["ApiKeyHeader", "ClientId", "BearerKey", "BearerJwt"] {
        assert!(schemes.contains_key(name), "{name}");
    }
    for route in app.app.router.routes().iter().filter(|r| documented(r)) {
        let op = &doc["paths"][route.path][route.method.as_str().to_lowercase()];
        let public = route.action == signage::auth::Action::Public;
        assert_eq!(
            op["security"].as_array().unwrap().is_empty(),
            public,
            "{}",
            route.path
        );
        let declared: BTreeSet<&str> = op["parameters"]
            .as_array()
            .map(|p| {
                p.iter()
                    .filter(|x| x["in"] == "query")
                    .map(|x| x["name"].as_str().unwrap())
                    .collect()
            })
            .unwrap_or_default();
        let routed: BTreeSet<&str> = route.query.iter().map(|q| q.name).collect();
        assert_eq!(declared, routed, "{}", route.path);
        assert!(
            op["responses"].get(route.success.0.to_string()).is_some(),
            "{} lacks its success status",
            route.path
        );
    }
}

#[tokio::test]
async fn list_responses_have_the_one_list_shape() {
    let app = TestApp::spawn().await;
    let lists = app
        .app
        .router
        .routes()
        .iter()
        .filter(|r| r.success.1.is_some_and(|s| s.ends_with("List")) && !r.path.contains('{'))
        .map(|r| r.path)
        .collect::<Vec<_>>();
    assert!(lists.len() >= 10);
    for path in lists {
        let who = if path.starts_with("/_sandbox/") {
            "sandbox-operator"
        } else {
            "northwind-admin"
        };
        let body = app.get(&format!("{path}?limit=1")).key(who).send().await;
        if body.status == 422 {
            continue; // needs a filter such as company_id
        }
        let body = body.ok();
        assert_eq!(body["object"], "list", "{path}");
        assert!(body["data"].as_array().unwrap().len() <= 1, "{path}");
        assert!(body["has_more"].is_boolean(), "{path}");
        assert!(
            body["next_cursor"].is_string() || body["next_cursor"].is_null(),
            "{path}"
        );
        assert_eq!(
            body["has_more"] == true,
            body["next_cursor"].is_string(),
            "{path}"
        );
    }
    let r = app
        .get("/devices?limit=0")
        .key("northwind-admin")
        .send()
        .await;
    assert_eq!(r.problem(422)["errors"][0]["field"], "limit");
    let r = app
        .get("/devices?limit=101")
        .key("northwind-admin")
        .send()
        .await;
    r.problem(422);
    let r = app
        .get("/devices?cursor=%%%")
        .key("northwind-admin")
        .send()
        .await;
    assert!(r.status == 400 || r.status == 422);
    let r = app
        .get("/devices?cursor=not-an-id!")
        .key("northwind-admin")
        .send()
        .await;
    r.problem(422);
    let r = app
        .get("/devices?colour=red")
        .key("northwind-admin")
        .send()
        .await;
    assert_eq!(r.problem(422)["errors"][0]["code"], "unknown_parameter");
}
