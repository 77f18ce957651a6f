//! Tests: mcp_tools. Every tool through real HTTP, the REST = MCP authorization matrix and the
//! redaction canary. The two-step write state machine is in `mcp_writes`.
//!
//! The matrix and the canary are driven by the tools declared on the route table
//! (`signage::mcp::spec::specs`), so they cover every tool; `mcp_catalogue` checks the catalogue.

use crate::helpers::mcp::{
    call, call_err, call_ok, full_tools, post, post_accept, rpc, tool_names,
};
use crate::helpers::{company_id, demo, key, TestApp};
use crate::samples;
use serde_json::{json, Value};
use signage::mcp::spec::{Kind, ToolSpec};
use signage::redact::redact_value;
use std::collections::HashMap;

fn active_keys() -> Vec<String> {
    demo()
        .keys
        .iter()
        .filter(|k| k.status == "active")
        .map(|k| k.name.clone())
        .collect()
}

/// The REST answer to the request a read tool makes for these arguments.
async fn rest_for(app: &TestApp, key_name: &str, spec: &ToolSpec, args: &Value) -> (u16, Value) {
    let route = app.app.router.by_operation(spec.operation).expect("route");
    let ids: Vec<&str> = spec
        .path_args
        .iter()
        .map(|(n, _)| args[*n].as_str().unwrap())
        .collect();
    let path = signage::mcp::call::fill_path(route.path, &ids);
    let mut query = Vec::new();
    for q in &route.query {
        match args.get(q.name) {
            Some(Value::String(s)) => query.push(format!("{}={s}", q.name)),
            Some(v) if !v.is_null() => query.push(format!("{}={v}", q.name)),
            _ => {}
        }
    }
    let url = if query.is_empty() {
        path
    } else {
        format!("{path}?{}", query.join("&"))
    };
    let k = key(key_name);
    let r = app
        .get(&url)
        .bearer(&k.raw)
        .header("x-service-client-id", &k.client_id)
        .send()
        .await;
    let body = if r.body.is_empty() {
        Value::Null
    } else {
        r.json()
    };
    (r.status.as_u16(), body)
}

/// Argument sets for a read tool: one object of every company (so visibility differs by key), a
/// missing one, and each company as a list filter.
fn arg_sets(app: &TestApp, spec: &ToolSpec) -> Vec<Value> {
    let route = app.app.router.by_operation(spec.operation).expect("route");
    let companies: Vec<String> = demo().companies.iter().map(|c| c.0.clone()).collect();
    let mut sets = Vec::new();
    match spec.path_args.first().map(|(n, _)| *n) {
        Some(arg) => {
            // The first object of each company (every object of a shared catalogue) of the area
            // the route's first path parameter names (`samples`), and one that does not exist.
            let mut segments = route.path.trim_start_matches('/').split('/');
            let previous = segments
                .by_ref()
                .take_while(|s| !s.starts_with('{'))
                .last()
                .unwrap_or("");
            let (ids, missing) = match previous {
                // Each key reads only its own journal entries: a request nobody made.
                "requests" => (Vec::new(), "req_000000000000000000000000".to_string()),
                _ => {
                    let objects = samples::objects_after(app, previous, arg)
                        .unwrap_or_else(|e| panic!("{}: no sample ids for {e}", spec.name));
                    let ids = objects.first_of_each_company(app);
                    let first = ids.first().unwrap_or_else(|| {
                        panic!(
                            "{}: no sample ids for ({:?}, {arg}): {} is empty",
                            spec.name, objects.area, objects.table
                        )
                    });
                    let missing = samples::missing_like(first);
                    (ids, missing)
                }
            };
            for id in ids.iter().chain([&missing]) {
                sets.push(json!({ arg: id }));
            }
        }
        None => {
            let params: Vec<&str> = route.query.iter().map(|q| q.name).collect();
            if !route.query.iter().any(|q| q.required) {
                sets.push(json!({}));
            }
            if params.contains(&"company_id") {
                for c in &companies {
                    sets.push(json!({ "company_id": c }));
                }
            }
            if params.contains(&"limit") {
                sets.push(json!({"limit": 1}));
            }
        }
    }
    sets
}

/// Sets each `seconds_since_heartbeat` of `mcp` to the one of `rest` at the same place, after
/// checking they differ by at most the second the two calls may straddle.
fn align_heartbeat_ages(mcp: &mut Value, rest: &Value, what: &str) {
    match (mcp, rest) {
        (Value::Object(m), Value::Object(r)) => {
            for (k, v) in m.iter_mut() {
                let Some(other) = r.get(k) else { continue };
                if k == "seconds_since_heartbeat" {
                    if let (Some(a), Some(b)) = (v.as_i64(), other.as_i64()) {
                        assert!((0..=1).contains(&(a - b)), "{what}: {a} vs {b}");
                        *v = other.clone();
                    }
                } else if k == "from" || k == "to" || k == "generated_at" {
                    // Instants of "now" (a default window, a report's stamp): the two calls may
                    // straddle a second.
                    let at = |x: &Value| x.as_str().and_then(signage::time::parse_rfc3339);
                    if let (Some(a), Some(b)) = (at(v), at(other)) {
                        assert!((0..=1).contains(&(a - b)), "{what}: {k} {a} vs {b}");
                        *v = other.clone();
                    }
                } else {
                    align_heartbeat_ages(v, other, what);
                }
            }
        }
        (Value::Array(m), Value::Array(r)) => {
            for (v, other) in m.iter_mut().zip(r) {
                align_heartbeat_ages(v, other, what);
            }
        }
        _ => {}
    }
}

fn read_specs(app: &TestApp) -> Vec<ToolSpec> {
    signage::mcp::spec::specs(&app.app.router)
        .into_iter()
        .filter(|t| t.kind == Kind::Read)
        .collect()
}

/// `tools/list` for every key shows exactly the tools whose routes REST lets the key use.
#[tokio::test]
async fn tools_list_matches_what_rest_allows() {
    let app = TestApp::spawn().await;
    for key_name in active_keys() {
        let listed = tool_names(&rpc(&app, &key_name, "tools/list", json!({})).await);
        for spec in &read_specs(&app) {
            if app.app.router.by_operation(spec.operation).is_none() {
                assert!(!listed.contains(&spec.name.to_string()));
                continue;
            }
            let args = arg_sets(&app, spec).remove(0);
            let (status, _) = rest_for(&app, &key_name, spec, &args).await;
            assert_eq!(
                listed.contains(&spec.name.to_string()),
                status != 403,
                "{key_name} / {}: REST said {status}",
                spec.name
            );
        }
    }
    // The public and credential-level tools are there for every key.
    let listed = tool_names(&rpc(&app, "harborview-hotels-billing", "tools/list", json!({})).await);
    assert!(listed.contains(&"service_health_check".to_string()));
    assert!(listed.contains(&"get_api_key_permissions".to_string()));
    assert!(!listed.contains(&"list_companies".to_string()));
}

/// The authorization matrix, case by case: the MCP result of every read tool, for every key and
/// argument set, is the REST answer to the same request (redacted), or the same refusal.
#[tokio::test]
async fn rest_and_mcp_agree_for_every_key_tool_and_object() {
    // Hundreds of calls per key in a few seconds: rate limiting (tested in `limits`) stays out of it.
    // A frozen clock: on a running one the simulated fleet plays between the REST call and the
    // MCP call, and a report counts the plays of that minute (two answers a second apart differ).
    let app = TestApp::spawn_with(|l| {
        l.rate_limit_per_second = Some(0.0);
        l.sandbox_clock = Some(Some(crate::sandbox_clock::FROZEN_AT));
    })
    .await;
    let definitions: HashMap<String, Value> = full_tools(&app, "northwind-admin").await["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_string(), t.clone()))
        .collect();
    let mut cases = 0;
    for key_name in active_keys() {
        let listed = tool_names(&rpc(&app, &key_name, "tools/list", json!({})).await);
        for spec in &read_specs(&app) {
            if app.app.router.by_operation(spec.operation).is_none() {
                continue;
            }
            for args in arg_sets(&app, spec) {
                cases += 1;
                let (status, mut rest) = rest_for(&app, &key_name, spec, &args).await;
                let result = call(&app, &key_name, spec.name, args.clone()).await;
                let what = format!("{key_name} / {} {args}", spec.name);
                if !listed.contains(&spec.name.to_string()) {
                    assert_eq!(status, 403, "{what}");
                    assert_eq!(result["isError"], true, "{what}");
                    let text = result["content"][0]["text"].as_str().unwrap();
                    assert!(text.contains("cannot use"), "{what}: {text}");
                } else if (200..300).contains(&status) {
                    assert_eq!(result["isError"], false, "{what}: {result}");
                    redact_value(&mut rest);
                    // QR images come as resource links, not inline (tests/api/mcp_capabilities.rs).
                    if spec.name == "get_promotion_qr_codes" {
                        for item in rest["data"].as_array_mut().unwrap() {
                            item.as_object_mut().unwrap().remove("image_svg");
                        }
                    }
                    let mut mcp = result["structuredContent"].clone();
                    // The one member computed from the wall clock (at any depth: fleet health
                    // nests it): the two calls may straddle a second. It must agree within that
                    // second; everything else exactly.
                    align_heartbeat_ages(&mut mcp, &rest, &what);
                    assert_eq!(mcp, rest, "{what}");
                    let schema = &definitions[spec.name]["outputSchema"];
                    signage::jsonschema::validate(&result["structuredContent"], schema, "")
                        .unwrap_or_else(|e| panic!("{what}: output schema: {e}"));
                } else {
                    assert_eq!(result["isError"], true, "{what}: {result}");
                    let text = result["content"][0]["text"].as_str().unwrap();
                    assert!(
                        text.starts_with(&format!("HTTP {status} ")),
                        "{what}: {text}"
                    );
                    assert_eq!(
                        rest["detail"].as_str().map(|d| text.contains(d)),
                        Some(true),
                        "{what}: {text}"
                    );
                    // The structured error is the REST problem's code and status, and fits the
                    // tool's output schema (clients validate error results too). Codes have one
                    // style: a problem without a `code` gives its type's slug in the codes' style.
                    let e = &result["structuredContent"]["error"];
                    assert_eq!(e["status"], status, "{what}: {result}");
                    let code = rest["code"].as_str().map(String::from).unwrap_or_else(|| {
                        rest["type"]
                            .as_str()
                            .unwrap()
                            .rsplit('/')
                            .next()
                            .unwrap()
                            .replace('-', "_")
                    });
                    assert_eq!(e["code"], code, "{what}: {result}");
                    assert_eq!(e["message"], text, "{what}");
                    if let Some(schema) = definitions.get(spec.name).map(|d| &d["outputSchema"]) {
                        signage::jsonschema::validate(&result["structuredContent"], schema, "")
                            .unwrap_or_else(|err| panic!("{what}: error vs output schema: {err}"));
                    }
                }
            }
        }
    }
    assert!(cases > 50, "only {cases} cases");
}

#[tokio::test]
async fn the_service_and_company_tools_answer_for_each_key() {
    let app = TestApp::spawn().await;
    for key_name in active_keys() {
        let k = key(&key_name);
        let health = call_ok(&app, &key_name, "service_health_check", json!({})).await;
        assert_eq!(
            health,
            json!({"ok": true, "backendAuthMode": "passthrough"})
        );
        let me = call_ok(&app, &key_name, "get_api_key_permissions", json!({})).await;
        assert_eq!(me["type"], "api_key");
        assert_eq!(me["key_id"], k.key_id.as_str());
        assert_eq!(me["client_id"], k.client_id.as_str());
        assert_eq!(me["scopes"], json!(k.scopes));
        assert_eq!(me["companyScope"], json!(k.company_scope));
        assert!(!me.to_string().contains(&k.raw));
    }
    // Companies as each key sees them.
    for (key_name, expected) in [
        (
            "northwind-readonly",
            vec!["Northwind Grocers", "Northwind Pharmacy"],
        ),
        ("northwind-grocers-write", vec!["Northwind Grocers"]),
        ("northwind-pharmacy-read", vec!["Northwind Pharmacy"]),
        (
            "harborview-readwrite",
            vec!["Harborview Hotels", "Bluefin Cafés"],
        ),
    ] {
        let list = call_ok(&app, key_name, "list_companies", json!({})).await;
        let mut names: Vec<&str> = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        names.sort_unstable();
        let mut expected = expected;
        expected.sort_unstable();
        assert_eq!(names, expected, "{key_name}");
        for c in list["data"].as_array().unwrap() {
            let id = c["id"].as_str().unwrap();
            let one = call_ok(&app, key_name, "get_company", json!({"company_id": id})).await;
            assert_eq!(&one, c);
            let b = call_ok(
                &app,
                key_name,
                "get_company_branding",
                json!({"company_id": id}),
            )
            .await;
            assert_eq!(b["company_id"], id);
            assert!(b["colors"]["primary"].is_string());
        }
    }
    // Another company's object is not found, exactly as over REST.
    let text = call_err(
        &app,
        "northwind-readonly",
        "get_company",
        json!({"company_id": company_id("Harborview Hotels")}),
    )
    .await;
    assert!(text.starts_with("HTTP 404 Not found"), "{text}");
}

#[tokio::test]
async fn list_tools_page_like_rest() {
    let app = TestApp::spawn().await;
    let all = app.collect_all("/companies", "northwind-admin", 1).await;
    let mut seen = Vec::new();
    let mut args = json!({"limit": 1});
    loop {
        let page = call_ok(&app, "northwind-admin", "list_companies", args.clone()).await;
        seen.extend(page["data"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => args = json!({"limit": 1, "cursor": c}),
            None => break,
        }
    }
    assert_eq!(seen, all);
    assert_eq!(seen.len(), 2);
}

#[tokio::test]
async fn invalid_arguments_are_tool_errors() {
    let app = TestApp::spawn().await;
    for (tool, args, needle) in [
        (
            "list_companies",
            json!({"company": "x"}),
            "Unknown argument `company`",
        ),
        (
            "service_health_check",
            json!({"verbose": true}),
            "takes no arguments",
        ),
        ("get_company", json!({}), "`company_id` is required"),
        (
            "get_company",
            json!({"company_id": 42}),
            "must be of type string",
        ),
        (
            "get_company",
            json!({"company_id": "../admin"}),
            "not an id",
        ),
        (
            "list_companies",
            json!({"limit": "ten"}),
            "`limit` must be of type integer",
        ),
        ("list_companies", json!({"limit": 0}), "at least 1"),
        ("list_companies", json!({"cursor": "!!"}), "HTTP 422"),
    ] {
        let text = call_err(&app, "northwind-readonly", tool, args.clone()).await;
        assert!(text.contains(needle), "{tool} {args}: {text}");
    }
    // `null` for an optional filter means "not given".
    let list = call_ok(
        &app,
        "northwind-readonly",
        "list_companies",
        json!({"cursor": null}),
    )
    .await;
    assert_eq!(list["object"], "list");
}

#[tokio::test]
async fn a_hidden_tool_is_refused_and_does_nothing() {
    let app = TestApp::spawn().await;
    let listed = tool_names(&rpc(&app, "northwind-ads-editor", "tools/list", json!({})).await);
    assert!(!listed.contains(&"list_companies".to_string()));
    let text = call_err(&app, "northwind-ads-editor", "list_companies", json!({})).await;
    assert!(text.contains("companies:read"), "{text}");
    let text = call_err(
        &app,
        "northwind-ads-editor",
        "get_company_branding",
        json!({"company_id": company_id("Northwind Grocers")}),
    )
    .await;
    assert!(text.contains("cannot use"), "{text}");
}

#[tokio::test]
async fn a_login_token_works_and_is_never_echoed() {
    let app = TestApp::spawn().await;
    let (user, password) = demo().users[1].clone();
    let token = app.login(&user, &password).await;
    let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "get_api_key_permissions", "arguments": {}}});
    let r = app
        .post("/mcp")
        .bearer(&token)
        .header("accept", "application/json")
        .json(&msg)
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["result"]["structuredContent"]["type"], "user");
    assert!(!r.text().contains(&token));
}

// --- Redaction: a canary seeded everywhere never comes out of any tool.

struct Canary {
    key: String,
    whsec: String,
    jwt: String,
    phc: String,
    bearer: String,
    password: String,
}

impl Canary {
    fn text(&self) -> String {
        format!(
            "Canary {} {} {} {} Bearer {} password={} end",
            self.key, self.whsec, self.jwt, self.phc, self.bearer, self.password
        )
    }
    fn secrets(&self) -> [&str; 6] {
        [
            &self.key,
            &self.whsec,
            &self.jwt,
            &self.phc,
            &self.bearer,
            &self.password,
        ]
    }
}

async fn seed_canary(app: &TestApp) -> Canary {
    let (user, password) = demo().users[0].clone();
    let jwt = app.login(&user, &password).await;
    let phc: String =
        app.sql(|c| c.query_row("SELECT password_hash FROM users LIMIT 1", [], |r| r.get(0)));
    let canary = Canary {
        key: key("northwind-readwrite").raw,
        whsec: "whsec_CanaryWebhookSigningSecret0123456789".into(),
        jwt,
        phc,
        bearer: "opaqueCanaryBearerValue42".into(),
        password: "hunter2Canary".into(),
    };
    let text = canary.text();
    let columns: &[(&str, &[&str])] = &[
        ("companies", &["name", "industry", "timezone"]),
        ("brandings", &["tagline", "heading_font", "body_font"]),
        ("brand_logos", &["url"]),
        ("plans", &["name", "description"]),
        ("media", &["filename"]),
        ("promotions", &["name", "description", "landing_url"]),
        ("qr_codes", &["label", "target_url"]),
        ("ads", &["name", "headline"]),
        ("devices", &["name", "location", "app_version"]),
        ("playback_errors", &["message"]),
        ("token_packs", &["name"]),
        ("charges", &["description"]),
        ("token_transactions", &["description"]),
        ("webhooks", &["url", "description"]),
        ("api_keys", &["name"]),
    ];
    app.app
        .db
        .write(
            &signage::db::WriteIntent::sandbox(),
            |tx| -> Result<(), signage::db::DbError> {
                for (table, cols) in columns {
                    for col in *cols {
                        tx.execute(&format!("UPDATE {table} SET {col} = ?1"), [&text])?;
                    }
                }
                tx.execute("UPDATE webhooks SET secret = ?1", [&canary.whsec])?;
                Ok(())
            },
        )
        .unwrap();
    canary
}

fn assert_clean(body: &str, canary: &Canary, what: &str) {
    for s in canary.secrets() {
        assert!(!body.contains(s), "{what} leaks {s}: {body}");
    }
}

#[tokio::test]
async fn redaction_canary_never_leaves_any_tool() {
    // Every read tool, twice per argument set, with one key: more calls than a bucket's burst,
    // made as fast as the server answers. Rate limiting is not what this checks.
    let app = TestApp::spawn_with(|l| l.rate_limit_per_second = Some(0.0)).await;
    let canary = seed_canary(&app).await;
    // The canary is really in the data: REST shows it.
    let rest = app
        .get(&format!("/companies/{}", company_id("Northwind Grocers")))
        .key("northwind-admin")
        .send()
        .await;
    assert!(rest.text().contains(&canary.key));

    let mut redacted_seen = 0;
    for key_name in ["northwind-admin", "harborview-admin", "northwind-readwrite"] {
        let list = rpc(&app, key_name, "tools/list", json!({})).await;
        assert_clean(&list.to_string(), &canary, "tools/list");
        for spec in signage::mcp::spec::specs(&app.app.router)
            .iter()
            .filter(|t| tool_names(&list).contains(&t.name.to_string()))
        {
            let arg_sets = match spec.kind {
                Kind::Read => arg_sets(&app, spec),
                _ => continue,
            };
            for args in arg_sets {
                for accept in ["application/json", "text/event-stream"] {
                    let r = post_accept(&app, key_name, accept)
                        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": spec.name, "arguments": args}}))
                        .send()
                        .await;
                    assert_eq!(r.status, 200);
                    let body = r.text();
                    assert_clean(&body, &canary, &format!("{key_name} {} {args}", spec.name));
                    redacted_seen += body.matches("[REDACTED]").count();
                }
            }
        }
    }
    assert!(
        redacted_seen > 20,
        "the canary should have been met and redacted ({redacted_seen})"
    );

    // Secrets in arguments come back redacted in errors and refusals too.
    let text = call_err(
        &app,
        "northwind-admin",
        "get_company",
        json!({"company_id": canary.key}),
    )
    .await;
    assert!(text.starts_with("HTTP 404"), "{text}");
    assert_clean(&text, &canary, "error text");
    let r = post(&app, "northwind-admin")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": canary.key, "arguments": {}}}))
        .send()
        .await;
    assert_clean(&r.text(), &canary, "unknown tool error");
    let r = post(&app, "northwind-admin")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "list_companies", "arguments": {canary.jwt.clone(): 1}}}))
        .send()
        .await;
    assert_clean(&r.text(), &canary, "argument error");
    let r = post(&app, "northwind-admin")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": canary.whsec}))
        .send()
        .await;
    assert_clean(&r.text(), &canary, "unknown method error");

    // Previews and results of two-step writes are redacted like everything else.
    let ad: String = one_row(
        &app,
        "SELECT min(id) FROM ads WHERE company_id = ?1",
        &company_id("Northwind Grocers"),
    );
    let mut args = json!({"ad_id": ad, "changes": {"headline": "New headline"}});
    for tool in ["prepare_ad_change", "confirm_change"] {
        let r = post(&app, "northwind-admin")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": tool, "arguments": args}}))
            .send()
            .await;
        assert_eq!(r.status, 200);
        let body = r.text();
        assert_clean(&body, &canary, tool);
        assert!(body.contains("[REDACTED]"), "{tool}: {body}");
        let result = &r.json()["result"];
        assert_eq!(result["isError"], false, "{tool}: {result}");
        args = json!({"confirmation_id": result["structuredContent"]["confirmation_id"]});
    }
}

/// The other way: words that only look like secrets, and public identifiers, come back as they
/// are (issue 12: a promotion "Bearer of good news" and the key prefix were redacted).
#[tokio::test]
async fn redaction_keeps_words_and_public_identifiers() {
    let app = TestApp::spawn().await;
    let promo: String = one_row(
        &app,
        "SELECT min(id) FROM promotions WHERE company_id = ?1",
        &company_id("Northwind Grocers"),
    );
    let words = "Bearer of good news: 2-for-1. Our secret: fresh bread; passwords are not needed.";
    app.app
        .db
        .write(
            &signage::db::WriteIntent::sandbox(),
            |tx| -> Result<(), signage::db::DbError> {
                tx.execute(
                    "UPDATE promotions SET description = ?1 WHERE id = ?2",
                    [words, promo.as_str()],
                )?;
                Ok(())
            },
        )
        .unwrap();
    let got = call_ok(
        &app,
        "northwind-admin",
        "get_promotion",
        json!({"promotion_id": promo}),
    )
    .await;
    assert_eq!(got["description"], words);

    // The key prefix is public (REST `GET /me` shows it); MCP shows the same.
    let me = app
        .get("/me")
        .key("northwind-readwrite")
        .send()
        .await
        .json();
    let prefix = me["prefix"].as_str().expect("prefix").to_string();
    assert!(prefix.starts_with("sgn_test_"), "{prefix}");
    let perms = call_ok(
        &app,
        "northwind-readwrite",
        "get_api_key_permissions",
        json!({}),
    )
    .await;
    assert_eq!(perms["prefix"], prefix.as_str());

    // And the same text with a real secret in it is still caught.
    let leaky = format!("{words} password=hunter2 Bearer Zx81pQ0rT5uV");
    app.app
        .db
        .write(
            &signage::db::WriteIntent::sandbox(),
            |tx| -> Result<(), signage::db::DbError> {
                tx.execute(
                    "UPDATE promotions SET description = ?1 WHERE id = ?2",
                    [leaky.as_str(), promo.as_str()],
                )?;
                Ok(())
            },
        )
        .unwrap();
    let got = call_ok(
        &app,
        "northwind-admin",
        "get_promotion",
        json!({"promotion_id": promo}),
    )
    .await;
    assert_eq!(
        got["description"],
        format!("{words} password=[REDACTED] [REDACTED]")
    );
}

fn one_row<T: rusqlite::types::FromSql>(app: &TestApp, sql: &str, arg: &str) -> T {
    app.sql(|c| c.query_row(sql, [arg], |r| r.get(0)))
}
