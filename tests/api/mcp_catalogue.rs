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
use std::collections::{BTreeSet, HashSet};

/// GET routes that are deliberately not MCP tools, each with the reason.
const NOT_A_TOOL: &[(&str, &str)] = &[
    (
        "getRequestMark",
        "a test harness's mark in the journal, not something an assistant asks about",
    ),
    ("getConsole", "an HTML page for people, not data"),
    ("getConsoleScript", "a script of the console page, not data"),
    (
        "getConsoleCommonScript",
        "a script of the console page, not data",
    ),
    (
        "getConsoleStyles",
        "a stylesheet of the console page, not data",
    ),
    (
        "getConsoleUiScript",
        "a script of the console page, not data",
    ),
    (
        "getConsoleLiveScript",
        "a script of the console page, not data",
    ),
    (
        "getConsoleChartsScript",
        "a script of the console page, not data",
    ),
    (
        "getConsoleFleetScript",
        "a script of the console page, not data",
    ),
    (
        "getConsoleAdsScript",
        "a script of the console page, not data",
    ),
    (
        "getConsolePromotionsScript",
        "a script of the console page, not data",
    ),
    (
        "getConsoleDashboardScript",
        "a script of the console page, not data",
    ),
    (
        "getConsoleEventsScript",
        "a script of the console page, not data",
    ),
    (
        "getConsoleSandboxScript",
        "a script of the console page, not data",
    ),
    ("getPlayer", "an HTML page that acts as a screen, not data"),
    ("getPlayerScript", "a script of the player page, not data"),
    (
        "getPlayerStyles",
        "a stylesheet of the player page, not data",
    ),
    (
        "getSandboxClock",
        "the sandbox operator's control of the instance, not account data",
    ),
    (
        "listSandboxFaults",
        "the sandbox operator's control of the instance, not account data",
    ),
    (
        "listSandboxSnapshots",
        "the sandbox operator's control of the instance, not account data",
    ),
    (
        "listSandboxDeliveries",
        "the sandbox operator's view of every account's outbox, not account data",
    ),
    (
        "listSandboxSink",
        "the sandbox operator's built-in receiver, not account data",
    ),
    (
        "getOpenApi",
        "the REST API's own description, not sandbox data",
    ),
    ("getOpenApiYaml", "the OpenAPI document again, as YAML"),
    ("getDocsPage", "the human-readable reference page (HTML)"),
    ("getDocsAsset", "the script and style of the reference page"),
    ("getProblemType", "an HTML page describing one problem type"),
    ("downloadMedia", "binary media bytes, not JSON"),
    ("getQrCodeImage", "an SVG or PNG image, not JSON"),
    (
        "getQrCode",
        "get_promotion_qr_codes returns every code with the same fields",
    ),
    (
        "listQrCodeScans",
        "single scans; get_promotion_report gives the totals per day, class and code",
    ),
    (
        "scanQrCode",
        "the public short link a phone opens: it records a scan and redirects",
    ),
    (
        "getWebhookDelivery",
        "list_webhook_deliveries returns the same fields, attempts included",
    ),
    (
        "listWebhookEventTypes",
        "a fixed list, given in list_webhooks' results",
    ),
    (
        "listApiClients",
        "admin: account administration stays on REST",
    ),
    (
        "getApiClient",
        "admin: account administration stays on REST",
    ),
    ("listApiKeys", "admin: account administration stays on REST"),
    ("getApiKey", "admin: account administration stays on REST"),
    (
        "listAuditLog",
        "admin: account administration stays on REST",
    ),
    ("getConsoleFormsScript", "a script of the console page, not data"),
    ("getConsoleReportsScript", "a script of the console page, not data"),
    ("getConsoleMediaScript", "a script of the console page, not data"),
    ("getConsoleBillingScript", "a script of the console page, not data"),
    ("getConsoleWebhooksScript", "a script of the console page, not data"),
    (
        "getLandingPage",
        "an HTML page for the phone that scanned a QR code, not data",
    ),
    (
        "getMediaUsage",
        "the console's storage line; list_media gives every item's size, and an upload past the quota says what is left",
    ),
    (
        "getConsoleReadinessScript",
        "a script of the console page, not data",
    ),
    (
        "getReadiness",
        "graded over REST and in CI (signage readiness); explain_request opens its evidence",
    ),
    (
        "listRequests",
        "list_recent_failures and explain_request answer what an assistant asks of the journal",
    ),
    (
        "listSandboxRequests",
        "the sandbox operator's view of every account, not account data",
    ),
    (
        "getSandboxReadiness",
        "the sandbox operator's view of every account, not account data",
    ),
    (
        "listWebhookDrills",
        "the sandbox operator's control of the instance, not account data",
    ),
];

#[tokio::test]
async fn every_get_route_has_a_tool_or_a_reason_not_to() {
    let app = TestApp::spawn().await;
    let router = &app.app.router;
    let without: BTreeSet<&str> = router
        .routes()
        .iter()
        .filter(|r| r.method == Method::GET && r.tool.is_none())
        .map(|r| r.operation_id)
        .collect();
    let excused: BTreeSet<&str> = NOT_A_TOOL.iter().map(|(op, _)| *op).collect();
    let forgotten: Vec<&&str> = without.difference(&excused).collect();
    assert!(
        forgotten.is_empty(),
        "GET routes with neither a tool nor an entry in NOT_A_TOOL: {forgotten:?}"
    );
    // The list names only GET routes that exist and have no tool, with a real reason.
    let stale: Vec<&&str> = excused.difference(&without).collect();
    assert!(stale.is_empty(), "NOT_A_TOOL entries to remove: {stale:?}");
    assert!(NOT_A_TOOL.iter().all(|(_, why)| why.len() > 10));
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
    // The same tools as when they were a hand-kept table (order aside).
    let expected: BTreeSet<&str> = [
        "service_health_check",
        "get_api_key_permissions",
        "list_companies",
        "get_company",
        "get_company_branding",
        "list_devices",
        "get_device",
        "get_device_diagnostics",
        "get_fleet_health",
        "get_token_runway",
        "rank_qr_codes",
        "prepare_webhook_change",
        "list_device_ads",
        "list_device_playbacks",
        "get_proof_of_play_report",
        "list_ads",
        "get_ad",
        "list_promotions",
        "get_promotion",
        "get_promotion_qr_codes",
        "get_promotion_report",
        "list_plans",
        "list_token_packs",
        "get_token_balance",
        "get_token_summary",
        "list_token_transactions",
        "list_invoices",
        "get_invoice",
        "list_recent_charges",
        "list_media",
        "list_webhooks",
        "get_plan",
        "get_media",
        "get_webhook",
        "get_token_pack",
        "list_webhook_deliveries",
        "list_events",
        "explain_request",
        "list_recent_failures",
        "prepare_ad_change",
        "prepare_ad_assignment",
        "prepare_ad_unassignment",
        "prepare_token_purchase",
        "prepare_promotion_change",
        "prepare_promotion_activation",
        "prepare_promotion_deactivation",
        "prepare_ad_assignments",
        "prepare_webhook_creation",
        "prepare_webhook_deletion",
        "prepare_webhook_secret_rotation",
        "prepare_promotion_creation",
        "prepare_qr_code_creation",
        "prepare_ad_creation",
        "prepare_device_creation",
        "prepare_media_upload",
        "prepare_webhook_test",
        "prepare_webhook_redelivery",
        "confirm_change",
        "cancel_change",
    ]
    .into_iter()
    .collect();
    assert_eq!(names.into_iter().collect::<BTreeSet<_>>(), expected);
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
        ]
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
        assert_eq!(read.operation_id, want_read);
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
    assert_eq!(prepares, 19);
}
