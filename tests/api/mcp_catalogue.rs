//! Tests: mcp_catalogue. The MCP tools are declared on the routes they call (`Route::tool`); the
//! catalogue, `confirm_change`'s write operations and every schema are built from the route table.
//! These tests hold that table to account: no readable GET route is forgotten, and no tool's
//! schema disagrees with the REST contract it stands for.

use crate::helpers::TestApp;
use hyper::Method;
use serde_json::{json, Value};
use signage::http::router::Change;
use signage::mcp::catalogue::Catalog;
use signage::mcp::spec::Kind;
use std::collections::HashSet;

/// Every GET route is an MCP tool, or says on its own declaration why not (`Route::no_tool`, a
/// real reason): a new read route is never left out of the catalogue unnoticed.
#[tokio::test]
async fn every_get_route_has_a_tool_or_a_reason_not_to() {
    let app = TestApp::spawn().await;
    let mut failures = Vec::new();
    for r in app.app.router.routes() {
        let what = format!("{} {} ({})", r.method, r.path, r.operation_id);
        match (r.method == Method::GET, &r.tool, r.no_tool) {
            (true, None, None) => failures.push(format!(
                "{what}: neither an MCP tool nor a reason not to be one: declare \
                 `.tool(Tool::read(…))` or `.no_tool(\"why\")` on the route"
            )),
            (_, Some(tool), Some(_)) => failures.push(format!(
                "{what}: both the tool `{}` and a reason not to be one",
                tool.name
            )),
            (false, None, Some(_)) => {
                failures.push(format!("{what}: `.no_tool` explains a GET route only"))
            }
            (_, _, Some(why)) if why.len() <= 10 => {
                failures.push(format!("{what}: `.no_tool({why:?})` is not a reason"))
            }
            _ => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn definitions_are_complete() {
    let app = TestApp::spawn().await;
    let catalog = signage::mcp::state(&app.app).catalog(&app.app.router);
    let mut names = HashSet::new();
    for tool in &catalog.tools {
        let d = &tool.definition;
        assert!(names.insert(tool.spec.name), "duplicate {}", tool.spec.name);
        assert!(
            tool.spec.name.len() <= 64
                && tool
                    .spec
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'_')
        );
        assert!(tool.available(), "{} is never listed", tool.spec.name);
        assert!(!d["title"].as_str().unwrap_or("").is_empty());
        assert!(d["description"].as_str().unwrap_or("").len() > 30);
        assert_eq!(d["inputSchema"]["type"], "object");
        assert_eq!(d["inputSchema"]["additionalProperties"], false);
        // confirm_change may send a request out of the sandbox (a webhook test or redelivery).
        assert_eq!(
            d["annotations"]["openWorldHint"],
            tool.spec.kind == Kind::Confirm,
            "{}",
            tool.spec.name
        );
        // A prepare tool changes nothing a user owns: read-only too (the user is asked once, at
        // confirm_change, which is the one destructive tool).
        let read_only = matches!(tool.spec.kind, Kind::Read | Kind::Prepare);
        assert_eq!(d["annotations"]["readOnlyHint"], read_only);
        // Every output schema admits the structured content of an error result.
        signage::jsonschema::validate(
            &json!({"error": {"code": "x", "status": 409, "message": "m"}}),
            &d["outputSchema"],
            "",
        )
        .unwrap_or_else(|e| panic!("{}: {e}", tool.spec.name));
        assert_eq!(d["outputSchema"]["type"], "object", "{}", tool.spec.name);
        // Our own checker accepts every schema we publish.
        signage::jsonschema::check_schema(&d["inputSchema"], tool.spec.name).unwrap();
        // The catalogue is server-authored: the redactor must have nothing to do in it.
        let mut scrubbed = d.clone();
        signage::redact::redact_value(&mut scrubbed);
        assert_eq!(&scrubbed, d);
    }
    assert_eq!(
        catalog
            .get("confirm_change")
            .map(|t| t.definition["annotations"]["destructiveHint"].clone()),
        Some(json!(true))
    );
    // Which tools there are is pinned both ways by the book's tool table
    // (`mcp_readme::the_readme_tool_table_is_the_catalogue`): a tool added without its row, or
    // removed with its row left, fails there.
    assert!(names.len() > 10, "{names:?}");
}

#[tokio::test]
async fn list_output_schema_is_the_envelope_of_the_rest_item() {
    let app = TestApp::spawn().await;
    let catalog = signage::mcp::state(&app.app).catalog(&app.app.router);
    let t = catalog.get("list_companies").unwrap();
    let out = &t.definition["outputSchema"]["anyOf"][0];
    assert_eq!(out["properties"]["object"]["const"], "list");
    assert_eq!(
        out["properties"]["data"]["items"]["properties"]["object"]["const"],
        "company"
    );
    assert!(t.definition["inputSchema"]["properties"]
        .get("cursor")
        .is_some());
    assert!(t.definition["inputSchema"]["properties"]
        .get("limit")
        .is_some());
}

/// Input schemas are the route's: one argument per path parameter, then its query parameters
/// with their REST schemas (plus the description).
#[tokio::test]
async fn read_tool_arguments_are_the_route_parameters() {
    let app = TestApp::spawn().await;
    let catalog = signage::mcp::state(&app.app).catalog(&app.app.router);
    for tool in catalog.tools.iter().filter(|t| t.spec.kind == Kind::Read) {
        let route = tool.route.as_ref().unwrap();
        let props = tool.input_schema["properties"].as_object().unwrap();
        assert_eq!(
            tool.spec.path_args.len(),
            route.path_params().count(),
            "{}",
            tool.spec.name
        );
        for q in &route.query {
            let mut arg = props[q.name].clone();
            arg.as_object_mut().unwrap().remove("description");
            let mut rest = q.schema.0.clone();
            rest.as_object_mut().unwrap().remove("description");
            // A REST flag (`"true"` / `"false"` in the query string) is a boolean argument.
            if rest == json!({"type": "string", "enum": ["true", "false"]}) {
                rest = json!({"type": "boolean"});
            }
            assert_eq!(arg, rest, "{} {}", tool.spec.name, q.name);
        }
        assert_eq!(
            props.len(),
            tool.spec.path_args.len() + route.query.len(),
            "{}",
            tool.spec.name
        );
    }
}

/// A prepare tool's `changes` are the fields of the REST body with the REST constraints (once a
/// hand-kept copy allowed a 120-character ad name where REST allows 100); the target is read with
/// the GET route of the same resource; only a change that may cost tokens shows its cost.
#[tokio::test]
async fn prepare_tools_follow_the_rest_routes() {
    let app = TestApp::spawn().await;
    let router = &app.app.router;
    let catalog: &Catalog = signage::mcp::state(&app.app).catalog(router);
    assert_eq!(
        catalog.write_operations,
        [
            "createDevice",
            "createAd",
            "updateAd",
            "assignAdToDevice",
            "unassignAdFromDevice",
            "changeAdAssignments",
            "uploadMedia",
            "createPromotion",
            "updatePromotion",
            "activatePromotion",
            "deactivatePromotion",
            "createQrCode",
            "purchaseTokenPack",
            "createWebhook",
            "updateWebhook",
            "deleteWebhook",
            "rotateWebhookSecret",
            "retryWebhookDelivery",
            "testWebhook"
        ],
        "the operations confirm_change runs, in route-table order (a new prepare tool: add its \
         write's operation here)"
    );
    let mut prepares = 0;
    for tool in catalog
        .tools
        .iter()
        .filter(|t| t.spec.kind == Kind::Prepare)
    {
        prepares += 1;
        let write = tool.route.as_ref().unwrap();
        let read = tool.read_route.as_ref().unwrap();
        assert_eq!(read.method, Method::GET);
        // The target is read on the write's own path, unless the tool names the read (a new
        // webhook: its company; a redelivery: the webhook it goes to).
        assert!(
            write.path.starts_with(read.path) || tool.spec.reads.is_some(),
            "{}",
            tool.spec.name
        );
        let want_read = if tool.spec.name.ends_with("_creation")
            && tool.spec.name != "prepare_qr_code_creation"
            || tool.spec.name == "prepare_media_upload"
        {
            // A new object of a company: the preview reads the company.
            "getCompany"
        } else if tool.spec.name.starts_with("prepare_ad_") {
            "getAd"
        } else if tool.spec.name == "prepare_token_purchase" {
            "getTokenPack"
        } else if tool.spec.name.starts_with("prepare_webhook_") {
            "getWebhook"
        } else {
            "getPromotion"
        };
        assert_eq!(
            read.operation_id, want_read,
            "{}: the GET operation its preview reads (a new prepare tool: add it here)",
            tool.spec.name
        );
        assert_eq!(
            signage::mcp::spec::costs_tokens(write),
            tool.spec.name == "prepare_promotion_activation"
        );
        if let Some(Change::Fields(fields)) = tool.spec.change {
            let signage::http::router::RequestBody::Json(body) = write.request else {
                panic!("{}: a change of fields needs a JSON body", tool.spec.name);
            };
            let rest = signage::mcp::catalogue::inline(router.schema(body).unwrap(), router, 0);
            let changes = &tool.input_schema["properties"]["changes"]["properties"];
            for field in fields {
                assert_eq!(
                    changes[*field], rest["properties"][*field],
                    "{} changes.{field}",
                    tool.spec.name
                );
                assert_ne!(changes[*field], Value::Null, "{field} not in {body}");
            }
            if fields.contains(&"name") {
                assert_eq!(changes["name"]["maxLength"], 100);
            }
        }
        // Body fields are arguments of their own, with the REST constraints and requirements.
        if let Some(Change::Body(fields) | Change::Batch { fields, .. }) = tool.spec.change {
            let props = &tool.input_schema["properties"];
            let required = tool.input_schema["required"].as_array().unwrap();
            let signage::http::router::RequestBody::Json(body) = write.request else {
                assert!(fields.is_empty(), "{}", tool.spec.name);
                continue;
            };
            let rest = signage::mcp::catalogue::inline(router.schema(body).unwrap(), router, 0);
            for field in fields {
                let by_path = tool.spec.path_args.iter().any(|(a, _)| a == field);
                if !by_path {
                    assert_eq!(props[*field], rest["properties"][*field], "{field}");
                    assert_ne!(props[*field], Value::Null, "{field} not in {body}");
                }
                let rest_required = rest["required"]
                    .as_array()
                    .is_some_and(|r| r.contains(&json!(field)));
                assert_eq!(
                    required.contains(&json!(field)),
                    rest_required || by_path,
                    "{} {field}",
                    tool.spec.name
                );
            }
        }
    }
    assert_eq!(
        prepares,
        catalog.write_operations.len(),
        "one prepare tool per write operation"
    );
}
