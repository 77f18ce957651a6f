//! Tests: mcp_resources. Resource templates, `resources/list` paging, `resources/read` through
//! the REST pipeline (another company's object is an error, never its data), and
//! `completion/complete` for prompt arguments and template ids, scoped to the key.

use crate::helpers::mcp::{rpc, rpc_error};
use crate::helpers::{company_id, TestApp};
use base64::Engine;
use serde_json::{json, Value};
use std::collections::HashSet;

/// Every resource the key can list, page by page.
async fn all_resources(app: &TestApp, key_name: &str) -> (Vec<Value>, usize) {
    let mut out = Vec::new();
    let mut params = json!({});
    let mut pages = 0;
    loop {
        let page = rpc(app, key_name, "resources/list", params).await;
        pages += 1;
        out.extend(page["resources"].as_array().unwrap().iter().cloned());
        match page["nextCursor"].as_str() {
            Some(c) => params = json!({"cursor": c}),
            None => break,
        }
        assert!(pages < 100, "resources/list does not end");
    }
    (out, pages)
}

fn one_id(app: &TestApp, sql: &str, company: &str) -> String {
    app.sql(|c| c.query_row(sql, [company], |r| r.get(0)))
}

#[tokio::test]
async fn templates_and_paged_lists_show_only_what_the_key_sees() {
    let app = TestApp::spawn().await;
    let t = rpc(
        &app,
        "northwind-readonly",
        "resources/templates/list",
        json!({}),
    )
    .await;
    let templates: Vec<&str> = t["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    for want in [
        "signage://devices/{id}",
        "signage://qr-codes/{id}/image",
        "signage://media/{id}/content",
        "signage://companies/{id}",
        "signage://promotions/{id}",
    ] {
        assert!(templates.contains(&want), "{want} in {templates:?}");
    }

    let (resources, pages) = all_resources(&app, "northwind-grocers-write").await;
    assert!(pages > 1, "paged");
    let uris: Vec<&str> = resources
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris[0], "ui://signage/change-preview");
    assert_eq!(
        uris.len(),
        uris.iter().collect::<HashSet<_>>().len(),
        "no repeats"
    );
    // Exactly the key's devices, as REST lists them.
    let rest: Vec<Value> = app
        .collect_all("/devices", "northwind-grocers-write", 100)
        .await;
    let listed: HashSet<&str> = uris
        .iter()
        .filter_map(|u| u.strip_prefix("signage://devices/"))
        .collect();
    let expected: HashSet<&str> = rest.iter().map(|d| d["id"].as_str().unwrap()).collect();
    assert_eq!(listed, expected);
    let grocers = company_id("Northwind Grocers");
    assert!(uris.contains(&format!("signage://companies/{grocers}").as_str()));
    let pharmacy = company_id("Northwind Pharmacy");
    assert!(!uris.iter().any(|u| u.ends_with(&pharmacy)));
    for r in &resources {
        assert!(r["name"].is_string() && r["mimeType"].is_string(), "{r}");
    }

    // A key without the scope of a kind just does not list that kind.
    let (billing, _) = all_resources(&app, "harborview-hotels-billing").await;
    assert!(billing
        .iter()
        .all(|r| !r["uri"].as_str().unwrap().starts_with("signage://devices/")));

    let e = rpc_error(
        &app,
        "northwind-readonly",
        "resources/list",
        json!({"cursor": "bm9wZQ"}),
    )
    .await;
    assert_eq!(e["code"], -32602);
}

#[tokio::test]
async fn reads_go_through_the_same_authorization_as_rest() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let pharmacy = company_id("Northwind Pharmacy");
    let device = one_id(
        &app,
        "SELECT id FROM devices WHERE company_id = ?1 LIMIT 1",
        &grocers,
    );
    let other = one_id(
        &app,
        "SELECT id FROM devices WHERE company_id = ?1 LIMIT 1",
        &pharmacy,
    );

    let read = rpc(
        &app,
        "northwind-grocers-write",
        "resources/read",
        json!({"uri": format!("signage://devices/{device}")}),
    )
    .await;
    let c = &read["contents"][0];
    assert_eq!(c["uri"], format!("signage://devices/{device}"));
    // Marked as data like a tool result: a note, then the JSON between the fence lines.
    assert_eq!(c["mimeType"], "text/plain");
    let text = c["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!(
            "Contents of signage://devices/{device}: JSON data from the signage service."
        )),
        "{text}"
    );
    let mut body: Value = serde_json::from_str(crate::helpers::mcp::data_section(text)).unwrap();
    let mut rest = app
        .get(&format!("/devices/{device}"))
        .key("northwind-grocers-write")
        .send()
        .await
        .ok();
    // The heartbeat's age is each request's own (the system clock may pass a second meanwhile).
    for v in [&mut body, &mut rest] {
        v.as_object_mut().unwrap().remove("seconds_since_heartbeat");
    }
    assert_eq!(body, rest);

    // Another company's device reads exactly like one that does not exist.
    let e1 = rpc_error(
        &app,
        "northwind-grocers-write",
        "resources/read",
        json!({"uri": format!("signage://devices/{other}")}),
    )
    .await;
    let e2 = rpc_error(
        &app,
        "northwind-grocers-write",
        "resources/read",
        json!({"uri": "signage://devices/dev_doesnotexist"}),
    )
    .await;
    assert_eq!(e1["code"], -32002);
    assert_eq!(e2["code"], -32002);
    assert_eq!(
        e1["message"].as_str().unwrap().replace(&other, "X"),
        e2["message"]
            .as_str()
            .unwrap()
            .replace("dev_doesnotexist", "X")
    );
    assert!(!e1.to_string().contains("Pharmacy"));
    // And the REST answer agrees.
    let r = app
        .get(&format!("/devices/{other}"))
        .key("northwind-grocers-write")
        .send()
        .await;
    assert_eq!(r.status, 404);

    // A key without the scope is told which scope it lacks; nothing is read.
    let company = rpc_error(
        &app,
        "northwind-ads-editor",
        "resources/read",
        json!({"uri": format!("signage://companies/{grocers}")}),
    )
    .await;
    assert_eq!(company["code"], -32602);
    assert!(
        company["message"].as_str().unwrap().contains("403"),
        "{company}"
    );

    // URIs that are not ours, or try to leave their template, are not found.
    for uri in [
        "signage://devices/../companies".to_string(),
        format!("signage://devices/{device}/extra"),
        "file:///etc/passwd".into(),
        "ui://signage/other".into(),
    ] {
        let e = rpc_error(
            &app,
            "northwind-readwrite",
            "resources/read",
            json!({"uri": uri}),
        )
        .await;
        assert_eq!(e["code"], -32002, "{uri}");
    }
    let e = rpc_error(&app, "northwind-readwrite", "resources/read", json!({})).await;
    assert_eq!(e["code"], -32602);

    // Media bytes are the REST download, base64.
    let media = one_id(
        &app,
        "SELECT id FROM media WHERE company_id = ?1 LIMIT 1",
        &grocers,
    );
    let read = rpc(
        &app,
        "northwind-grocers-write",
        "resources/read",
        json!({"uri": format!("signage://media/{media}/content")}),
    )
    .await;
    let c = &read["contents"][0];
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(c["blob"].as_str().unwrap())
        .unwrap();
    let rest = app
        .get(&format!("/media/{media}/content"))
        .key("northwind-grocers-write")
        .send()
        .await;
    assert_eq!(rest.status, 200);
    assert_eq!(bytes, rest.body.to_vec());
    assert_eq!(c["mimeType"], rest.header("content-type").unwrap());

    // The preview card.
    let card = rpc(
        &app,
        "northwind-readonly",
        "resources/read",
        json!({"uri": "ui://signage/change-preview"}),
    )
    .await;
    let c = &card["contents"][0];
    assert_eq!(c["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(c["_meta"]["ui"]["csp"]["connectDomains"], json!([]));
    assert!(c["text"].as_str().unwrap().contains("confirm_change"));
}

async fn complete(
    app: &TestApp,
    key_name: &str,
    reference: Value,
    arg: &str,
    value: &str,
) -> Value {
    rpc(
        app,
        key_name,
        "completion/complete",
        json!({"ref": reference, "argument": {"name": arg, "value": value}}),
    )
    .await["completion"]
        .clone()
}

#[tokio::test]
async fn completions_find_ids_by_name_within_the_key() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let prompt = json!({"type": "ref/prompt", "name": "triage_offline_screens"});
    // Company ids by name prefix, only among the key's companies.
    let c = complete(
        &app,
        "northwind-readwrite",
        prompt.clone(),
        "company_id",
        "northwind g",
    )
    .await;
    assert_eq!(c["values"], json!([grocers]));
    let c = complete(
        &app,
        "harborview-readwrite",
        prompt.clone(),
        "company_id",
        "northwind",
    )
    .await;
    assert_eq!(c["values"], json!([]));
    let c = complete(
        &app,
        "northwind-readwrite",
        prompt.clone(),
        "company_id",
        "",
    )
    .await;
    assert_eq!(c["total"], 2);
    assert_eq!(c["hasMore"], false);

    // Device ids by name, scoped: the Grocers key never sees a Pharmacy screen.
    let (name, id): (String, String) = app.sql(|c| {
        c.query_row(
            "SELECT name, id FROM devices WHERE company_id = ?1 ORDER BY name LIMIT 1",
            [&grocers],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    });
    let template = json!({"type": "ref/resource", "uri": "signage://devices/{id}"});
    let prefix: String = name.chars().take(5).collect();
    let c = complete(
        &app,
        "northwind-grocers-write",
        template.clone(),
        "id",
        &prefix,
    )
    .await;
    let values: Vec<&str> = c["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(values.contains(&id.as_str()), "{values:?}");
    let companies: HashSet<String> = values
        .iter()
        .map(|v| {
            app.sql(|c| {
                c.query_row("SELECT company_id FROM devices WHERE id = ?1", [v], |r| {
                    r.get(0)
                })
            })
        })
        .collect();
    assert_eq!(companies, HashSet::from([grocers.clone()]));
    // An id prefix completes too.
    let c = complete(
        &app,
        "northwind-grocers-write",
        template.clone(),
        "id",
        &id[..8],
    )
    .await;
    assert!(c["values"].as_array().unwrap().contains(&json!(id)));

    // Promotion ids for the activation prompt; months for the billing report.
    let promo = json!({"type": "ref/prompt", "name": "activate_promotion_safely"});
    let c = complete(&app, "northwind-readwrite", promo, "promotion_id", "").await;
    assert!(c["values"][0].as_str().unwrap().starts_with("promo_"));
    let report = json!({"type": "ref/prompt", "name": "monthly_token_billing_report"});
    let c = complete(&app, "northwind-readwrite", report, "month", "20").await;
    assert_eq!(c["values"].as_array().unwrap().len(), 12);

    // Mistakes are invalid params.
    for (reference, arg) in [
        (json!({"type": "ref/prompt", "name": "nope"}), "company_id"),
        (prompt.clone(), "device_id"),
        (
            json!({"type": "ref/resource", "uri": "signage://nothing/{id}"}),
            "id",
        ),
        (template.clone(), "name"),
        (json!({"type": "ref/other"}), "id"),
    ] {
        let e = rpc_error(
            &app,
            "northwind-readwrite",
            "completion/complete",
            json!({"ref": reference, "argument": {"name": arg, "value": ""}}),
        )
        .await;
        assert_eq!(e["code"], -32602, "{reference} {arg}");
    }
    // A prompt the key may not use is unknown to it.
    let e = rpc_error(&app, "northwind-readonly", "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "activate_promotion_safely"}, "argument": {"name": "promotion_id", "value": ""}})).await;
    assert_eq!(e["code"], -32602);
}
