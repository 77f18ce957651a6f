//! Tests: mcp_capabilities. A catalogue an assistant can afford (its size through HTTP, the full
//! schemas on request), toolsets and read-only mode per request, and images by `resource_link`.

use crate::helpers::mcp::{call_ok, full_tools, post, request, rpc, rpc_with, tool_names};
use crate::helpers::{company_id, TestApp};
use serde_json::{json, Value};

/// What the read-write key's `tools/list` may weigh on the wire.
const CATALOGUE_BUDGET: usize = 30_000;

async fn tools_list_bytes(
    app: &TestApp,
    key_name: &str,
    headers: &[(&str, &str)],
) -> (usize, Value) {
    let mut b = post(app, key_name).header("mcp-protocol-version", "2025-11-25");
    for (k, v) in headers {
        b = b.header(k, v);
    }
    let r = b.json(&request(1, "tools/list", json!({}))).send().await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert!(v["result"]["nextCursor"].is_null(), "one page");
    (r.body.len(), v["result"].clone())
}

#[tokio::test]
async fn the_read_write_catalogue_fits_the_budget_and_still_teaches() {
    let app = TestApp::spawn().await;
    let catalog = signage::mcp::state(&app.app).catalog(&app.app.router);
    let (bytes, list) = tools_list_bytes(&app, "northwind-readwrite", &[]).await;
    assert!(bytes <= CATALOGUE_BUDGET, "tools/list is {bytes} bytes");
    // The book gives the figures; they are this server's.
    let book = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/src/mcp/tools.md"
    ))
    .unwrap();
    let sentence = format!(
        "The read-write key's whole `tools/list` is {},{:03} bytes for {} tools;",
        bytes / 1000,
        bytes % 1000,
        list["tools"].as_array().unwrap().len()
    );
    assert!(
        book.contains(&sentence),
        "docs/src/mcp/tools.md should say: {sentence}"
    );
    let (full_bytes, full) =
        tools_list_bytes(&app, "northwind-readwrite", &[("x-mcp-schemas", "full")]).await;
    assert!(
        full_bytes > 2 * bytes,
        "full {full_bytes} vs compact {bytes}"
    );
    assert_eq!(
        tool_names(&list),
        tool_names(&full),
        "the same tools either way"
    );
    let by_name = |l: &Value, n: &str| {
        l["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .cloned()
            .unwrap()
    };
    let mut costly = 0;
    for tool in list["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        assert!(tool["description"].as_str().unwrap().len() > 40, "{name}");
        assert!(!tool["title"].as_str().unwrap().is_empty());
        // Every argument stays, with its type.
        let full_props = by_name(&full, name)["inputSchema"]["properties"].clone();
        let props = &tool["inputSchema"]["properties"];
        assert_eq!(
            props.as_object().unwrap().keys().collect::<Vec<_>>(),
            full_props.as_object().unwrap().keys().collect::<Vec<_>>(),
            "{name}"
        );
        for (arg, s) in props.as_object().unwrap() {
            assert!(
                s.get("type").is_some() || s.get("anyOf").is_some(),
                "{name}.{arg}"
            );
            assert_eq!(s.get("enum"), full_props[arg].get("enum"), "{name}.{arg}");
        }
        let required = by_name(&full, name)["inputSchema"]["required"].clone();
        if required.as_array().is_some_and(|r| !r.is_empty()) {
            assert_eq!(tool["inputSchema"]["required"], required, "{name}");
        }
        if name.starts_with("prepare_") {
            let d = tool["description"].as_str().unwrap();
            assert!(
                d.contains("confirm_change") && d.contains("Changes nothing"),
                "{name}: {d}"
            );
            // A write that costs tokens says so (the compact form once lost it with the two-step
            // boilerplate).
            let route = catalog.get(name).and_then(|t| t.route.as_ref()).unwrap();
            if signage::mcp::spec::costs_tokens(route) {
                assert!(d.contains("token"), "{name}: {d}");
                costly += 1;
            }
            // Every prepare tool answers the same pending change, which the instructions describe;
            // the full schemas keep it.
            assert!(tool.get("outputSchema").is_none(), "{name}");
            assert_eq!(
                by_name(&full, name)["outputSchema"]["anyOf"][0]["properties"]["object"]["const"],
                "pending_change"
            );
        }
    }
    assert!(costly > 0, "no prepare tool costs tokens");
    // confirm_change's results name each REST object once (three ad writes return one schema).
    let confirm = by_name(&full, "confirm_change");
    let out = crate::helpers::mcp::resolve_refs(&confirm["outputSchema"], &confirm["outputSchema"]);
    let branches = out["anyOf"][0]["properties"]["result"]["anyOf"]
        .as_array()
        .unwrap();
    let objects: Vec<&Value> = branches
        .iter()
        .map(|b| &b["properties"]["object"]["const"])
        .collect();
    for (i, o) in objects.iter().enumerate() {
        assert!(!objects[..i].contains(o), "{o} twice");
    }
    assert!(objects.contains(&&json!("ad")) && objects.contains(&&json!("promotion")));
    // With the structured-error branch; 13.3 KB for the results of 19 writes (7.2 KB for 12
    // before their repeats were shared, 4.8 KB after); 15.7 KB since each object's schema derives
    // from its Rust type and carries the descriptions its doc comments give.
    assert!(
        confirm.to_string().len() < 16_500,
        "{}",
        confirm.to_string().len()
    );
    // A bad schema mode is refused, not guessed.
    let r = post(&app, "northwind-readwrite")
        .header("x-mcp-schemas", "verbose")
        .json(&request(1, "tools/list", json!({})))
        .send()
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32602);
}

#[tokio::test]
async fn toolsets_narrow_the_catalogue_and_the_calls() {
    let app = TestApp::spawn().await;
    let h = [("x-mcp-toolsets", "devices, Ads")];
    let list = rpc_with(&app, "northwind-readwrite", &h, "tools/list", json!({})).await;
    let names = tool_names(&list);
    assert!(
        names.contains(&"list_devices".to_string())
            && names.contains(&"prepare_ad_change".to_string())
    );
    assert!(
        names.contains(&"confirm_change".to_string())
            && names.contains(&"cancel_change".to_string())
    );
    for absent in [
        "list_promotions",
        "list_companies",
        "get_token_balance",
        "get_api_key_permissions",
    ] {
        assert!(
            !names.contains(&absent.to_string()),
            "{absent} in {names:?}"
        );
    }
    // A tool of another toolset is not callable in this request, and says why.
    let r = post(&app, "northwind-readwrite")
        .header("mcp-protocol-version", "2025-11-25")
        .header("x-mcp-toolsets", "devices,ads")
        .json(&request(
            1,
            "tools/call",
            json!({"name": "list_promotions", "arguments": {}}),
        ))
        .send()
        .await;
    let e = &r.json()["error"];
    assert_eq!(e["code"], -32602);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("`promotions` toolset"),
        "{e}"
    );
    // The same call without the header works.
    call_ok(&app, "northwind-readwrite", "list_promotions", json!({})).await;
    // Read-only toolsets bring no confirm/cancel.
    let list = rpc_with(
        &app,
        "northwind-readwrite",
        &[("x-mcp-toolsets", "account")],
        "tools/list",
        json!({}),
    )
    .await;
    let names = tool_names(&list);
    assert!(names.contains(&"get_api_key_permissions".to_string()));
    assert!(
        !names.iter().any(
            |n| n.contains("change") || (n.starts_with("list_") && n != "list_recent_failures")
        ),
        "{names:?}"
    );
    // An unknown name is a clear refusal listing the toolsets.
    let r = post(&app, "northwind-readwrite")
        .header("x-mcp-toolsets", "devices,screens")
        .json(&request(1, "tools/list", json!({})))
        .send()
        .await;
    assert_eq!(r.status, 400);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        msg.contains("`screens`") && msg.contains("promotions"),
        "{msg}"
    );
}

#[tokio::test]
async fn read_only_mode_hides_every_write_and_scopes_still_apply() {
    let app = TestApp::spawn().await;
    let ro = [("x-mcp-readonly", "true")];
    let names =
        tool_names(&rpc_with(&app, "northwind-readwrite", &ro, "tools/list", json!({})).await);
    assert!(names.len() > 20);
    assert!(
        names
            .iter()
            .all(|n| !n.starts_with("prepare_") && !n.ends_with("_change")),
        "{names:?}"
    );
    let r = post(&app, "northwind-readwrite")
        .header("x-mcp-readonly", "true")
        .json(&request(
            1,
            "tools/call",
            json!({"name": "cancel_change", "arguments": {"confirmation_id": "chg_x"}}),
        ))
        .send()
        .await;
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("read-only"));
    let r = post(&app, "northwind-readwrite")
        .header("x-mcp-readonly", "maybe")
        .json(&request(1, "tools/list", json!({})))
        .send()
        .await;
    assert_eq!(r.status, 400);
    // A toolset never widens a key: the ads editor selecting promotions sees no promotion writes,
    // and the read-only key selecting ads sees no prepare tool at all.
    let editor = tool_names(
        &rpc_with(
            &app,
            "northwind-ads-editor",
            &[("x-mcp-toolsets", "ads,promotions,tokens")],
            "tools/list",
            json!({}),
        )
        .await,
    );
    assert!(editor.contains(&"prepare_ad_change".to_string()));
    assert!(
        !editor
            .iter()
            .any(|n| n.starts_with("prepare_promotion") || n.starts_with("prepare_token")),
        "{editor:?}"
    );
    let reader = tool_names(
        &rpc_with(
            &app,
            "northwind-readonly",
            &[("x-mcp-toolsets", "ads")],
            "tools/list",
            json!({}),
        )
        .await,
    );
    assert!(reader.contains(&"list_ads".to_string()));
    assert!(
        !reader
            .iter()
            .any(|n| n.starts_with("prepare_") || n == "confirm_change"),
        "{reader:?}"
    );
    // Everything at once: the default is every toolset the key allows.
    let all = tool_names(&rpc(&app, "northwind-readonly", "tools/list", json!({})).await);
    let all_named = tool_names(
        &rpc_with(
            &app,
            "northwind-readonly",
            &[("x-mcp-toolsets", "all")],
            "tools/list",
            json!({}),
        )
        .await,
    );
    assert_eq!(all, all_named);
}

#[tokio::test]
async fn qr_images_and_media_come_as_resource_links() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let promo: String = app.sql(|c| {
        c.query_row(
            "SELECT p.id FROM promotions p JOIN qr_codes q ON q.promotion_id = p.id WHERE p.company_id = ?1
             GROUP BY p.id ORDER BY COUNT(*) DESC LIMIT 1",
            [&grocers],
            |r| r.get(0),
        )
    });
    let r = post(&app, "northwind-readwrite")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&request(
            1,
            "tools/call",
            json!({"name": "get_promotion_qr_codes", "arguments": {"promotion_id": promo}}),
        ))
        .send()
        .await;
    assert!(r.body.len() < 8_000, "{} bytes", r.body.len());
    let result = r.json()["result"].clone();
    let codes = result["structuredContent"]["data"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!codes.is_empty());
    let links: Vec<&Value> = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "resource_link")
        .collect();
    assert_eq!(links.len(), codes.len());
    for (code, link) in codes.iter().zip(&links) {
        assert!(code.get("image_svg").is_none());
        let uri = format!("signage://qr-codes/{}/image", code["id"].as_str().unwrap());
        assert_eq!(link["uri"], uri.as_str());
        assert_eq!(link["mimeType"], "image/svg+xml");
        // The link reads as the image.
        let read = rpc(
            &app,
            "northwind-readwrite",
            "resources/read",
            json!({"uri": uri}),
        )
        .await;
        let svg = read["contents"][0]["text"].as_str().unwrap();
        assert!(svg.contains("<svg"), "{svg:.80}");
    }
    // The text block carries the same JSON as the structured content.
    let text: Value = serde_json::from_str(crate::helpers::mcp::data_section(
        result["content"][0]["text"].as_str().unwrap(),
    ))
    .unwrap();
    assert_eq!(text, result["structuredContent"]);
    // Media items link their bytes.
    let media = rpc(
        &app,
        "northwind-readwrite",
        "tools/call",
        json!({"name": "list_media", "arguments": {"limit": 2}}),
    )
    .await;
    let first = &media["structuredContent"]["data"][0];
    let link = media["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "resource_link")
        .unwrap();
    assert_eq!(
        link["uri"],
        format!("signage://media/{}/content", first["id"].as_str().unwrap())
    );
    assert_eq!(link["mimeType"], first["content_type"]);
    // A 2025-03-26 client does not know resource links: it gets the text and structured content.
    let r = post(&app, "northwind-readwrite")
        .header("mcp-protocol-version", "2025-03-26")
        .json(&request(
            1,
            "tools/call",
            json!({"name": "get_promotion_qr_codes", "arguments": {"promotion_id": promo}}),
        ))
        .send()
        .await;
    let content = r.json()["result"]["content"].clone();
    assert_eq!(content.as_array().unwrap().len(), 1, "{content}");
    // The full output schema no longer promises the inline image.
    let full = full_tools(&app, "northwind-readwrite").await;
    let qr = full["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "get_promotion_qr_codes")
        .unwrap();
    let item = &qr["outputSchema"]["properties"]["data"]["items"];
    assert!(item["properties"].get("image_svg").is_none());
    signage::jsonschema::validate(&result["structuredContent"], &qr["outputSchema"], "").unwrap();
}

/// A 2026-07-28 request: the per-request envelope with these client capabilities.
async fn modern(
    app: &TestApp,
    method: &str,
    params: Value,
    capabilities: Value,
    extra: &[(&str, &str)],
) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "capabilities-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let mut b = post(app, "northwind-readwrite")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = params["name"].as_str() {
        b = b.header("mcp-name", name);
    }
    for (k, v) in extra {
        b = b.header(k, v);
    }
    let r = b.json(&request(1, method, params)).send().await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["result"].clone()
}

#[tokio::test]
async fn the_stateless_era_reads_the_same_choices_from_each_request() {
    let app = TestApp::spawn().await;
    let ui = json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}});
    let list = modern(&app, "tools/list", json!({}), ui.clone(), &[]).await;
    let prepare = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "prepare_ad_change")
        .unwrap();
    assert_eq!(
        prepare["_meta"]["ui"]["resourceUri"],
        "ui://signage/change-preview"
    );
    let plain = modern(&app, "tools/list", json!({}), json!({}), &[]).await;
    assert!(plain["tools"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t.get("_meta").is_none()));
    let ro = modern(
        &app,
        "tools/list",
        json!({}),
        ui,
        &[("x-mcp-readonly", "true")],
    )
    .await;
    assert!(tool_names(&ro).iter().all(|n| !n.starts_with("prepare_")));
    let read = modern(
        &app,
        "resources/read",
        json!({"uri": "ui://signage/change-preview"}),
        json!({}),
        &[],
    )
    .await;
    assert_eq!(read["contents"][0]["mimeType"], "text/html;profile=mcp-app");
    let templates = modern(&app, "resources/templates/list", json!({}), json!({}), &[]).await;
    assert_eq!(templates["cacheScope"], "private");
}

#[tokio::test]
async fn prompts_follow_the_request_view() {
    let app = TestApp::spawn().await;
    let names = |v: &Value| -> Vec<String> {
        v["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    let all = names(&rpc(&app, "northwind-readwrite", "prompts/list", json!({})).await);
    assert!(
        all.contains(&"activate_promotion_safely".to_string()),
        "{all:?}"
    );
    // In read-only mode the activation prompt (it needs prepare and confirm) is not offered.
    let ro = names(
        &rpc_with(
            &app,
            "northwind-readwrite",
            &[("x-mcp-readonly", "true")],
            "prompts/list",
            json!({}),
        )
        .await,
    );
    assert!(
        !ro.contains(&"activate_promotion_safely".to_string()),
        "{ro:?}"
    );
    assert!(ro.contains(&"triage_offline_screens".to_string()));
    let devices = names(
        &rpc_with(
            &app,
            "northwind-readwrite",
            &[("x-mcp-toolsets", "devices")],
            "prompts/list",
            json!({}),
        )
        .await,
    );
    assert_eq!(devices, ["triage_offline_screens"]);
}

/// A narrowed session stays narrow: a session that selects only `devices` (or only reads) cannot
/// confirm a purchase another session of the same key prepared; the refusal says why, nothing is
/// bought, and the change still waits for a session that may confirm it.
#[tokio::test]
async fn a_narrowed_session_confirms_only_what_it_could_have_prepared() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let pack: String = app.sql(|c| {
        c.query_row("SELECT id FROM token_packs ORDER BY id LIMIT 1", [], |r| {
            r.get(0)
        })
    });
    let balance = || {
        app.sql(|c| {
            c.query_row(
                "SELECT count(*) FROM token_transactions WHERE company_id = ?1",
                [&grocers],
                |r| r.get::<_, i64>(0),
            )
        })
    };
    let before = balance();
    let preview = call_ok(
        &app,
        "northwind-readwrite",
        "prepare_token_purchase",
        json!({"token_pack_id": pack, "company_id": grocers}),
    )
    .await;
    let id = preview["confirmation_id"].as_str().unwrap().to_string();
    // A read-only session is not offered confirm_change at all.
    let r = post(&app, "northwind-readwrite")
        .header("x-mcp-readonly", "true")
        .json(&request(
            1,
            "tools/call",
            json!({"name": "confirm_change", "arguments": {"confirmation_id": id}}),
        ))
        .send()
        .await;
    assert_eq!(r.json()["error"]["code"], -32602, "{}", r.text());
    assert_eq!(balance(), before, "read-only: nothing was bought");
    let refused = rpc_with(
        &app,
        "northwind-readwrite",
        &[("x-mcp-toolsets", "devices")],
        "tools/call",
        json!({"name": "confirm_change", "arguments": {"confirmation_id": id}}),
    )
    .await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(balance(), before, "devices only: nothing was bought");
    let text = refused["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("prepare_token_purchase") && text.contains("tokens"),
        "{text}"
    );
    // The session that could have prepared it still confirms it.
    call_ok(
        &app,
        "northwind-readwrite",
        "confirm_change",
        json!({"confirmation_id": id}),
    )
    .await;
    assert!(balance() > before);
}
