//! Tests: mcp_assist (issue 12). What an assistant does with the tools: previews that refuse a
//! change that cannot succeed, advice that names only tools the key may call, boolean arguments,
//! and wording an assistant can repeat (lifetimes, argument descriptions).

use crate::helpers::mcp::{call_err, call_ok, rpc, tool_names};
use crate::helpers::{company_id, TestApp};
use serde_json::json;

fn pending_count(app: &TestApp) -> i64 {
    app.sql(|c| c.query_row("SELECT count(*) FROM mcp_pending_changes", [], |r| r.get(0)))
}

/// Everything a refused prepare could have touched, as text.
fn state_of(app: &TestApp) -> String {
    app.dump_tables(&[
        "promotions",
        "token_balances",
        "token_transactions",
        "events",
    ])
}

fn exec(app: &TestApp, sql: &str, args: &[&dyn rusqlite::ToSql]) {
    app.app
        .db
        .write(
            &signage::db::WriteIntent::sandbox(),
            |tx| -> Result<(), signage::db::DbError> {
                tx.execute(sql, args)?;
                Ok(())
            },
        )
        .unwrap();
}

/// A Grocers promotion made inactive, running now, costing 10 tokens the company can pay:
/// (id, cost).
fn grocers_promotion(app: &TestApp) -> (String, i64) {
    let grocers = company_id("Northwind Grocers");
    let id: String = app.sql(|c| {
        c.query_row(
            "SELECT min(id) FROM promotions WHERE company_id = ?1",
            [&grocers],
            |r| r.get(0),
        )
    });
    let now = signage::time::wall_now();
    exec(
        app,
        "UPDATE promotions SET active = 0, starts_at = ?1, ends_at = ?2, activation_cost_tokens = 10
         WHERE id = ?3",
        &[&(now - 3600), &(now + 86_400), &id],
    );
    exec(
        app,
        "UPDATE token_balances SET balance = max(balance, 100) WHERE company_id = ?1",
        &[&grocers],
    );
    (id, 10)
}

/// Advice any assistant must never see: actions no tool offers.
/// These tests edit rows behind the service's back and compare the database before and after a
/// refused preview: the system clock's tick (which moves promotion windows along) must not run in
/// between, so it is slowed to once a minute.
async fn quiet() -> TestApp {
    TestApp::spawn_with(|l| l.sandbox_tick_millis = Some(60_000)).await
}

fn assert_no_rest_advice(text: &str) {
    for sentence in signage::mcp::advice::rest_sentences() {
        assert!(!text.contains(sentence), "REST advice reached MCP: {text}");
    }
}

#[tokio::test]
async fn a_preview_of_an_expired_promotion_is_refused_with_advice() {
    let app = quiet().await;
    let (promo, _) = grocers_promotion(&app);
    let now = signage::time::wall_now();
    exec(
        &app,
        "UPDATE promotions SET starts_at = ?1, ends_at = ?2 WHERE id = ?3",
        &[&(now - 7200), &(now - 3600), &promo],
    );
    let before = state_of(&app);
    // A key that may edit promotions is told which tool makes it possible.
    let text = call_err(
        &app,
        "northwind-readwrite",
        "prepare_promotion_activation",
        json!({"promotion_id": promo}),
    )
    .await;
    assert!(text.contains("no confirmation_id was issued"), "{text}");
    assert!(text.contains("HTTP 409"), "{text}");
    assert!(text.contains("prepare_promotion_change"), "{text}");
    assert_no_rest_advice(&text);
    assert_eq!(pending_count(&app), 0);
    assert_eq!(state_of(&app), before);

    // The advice is followable: move `ends_at`, confirm, then the activation can be prepared.
    let ends = signage::time::rfc3339(now + 86_400);
    let preview = call_ok(
        &app,
        "northwind-readwrite",
        "prepare_promotion_change",
        json!({"promotion_id": promo, "changes": {"ends_at": ends}}),
    )
    .await;
    assert_eq!(preview["differences"][0]["field"], "ends_at");
    let done = call_ok(
        &app,
        "northwind-readwrite",
        "confirm_change",
        json!({"confirmation_id": preview["confirmation_id"]}),
    )
    .await;
    assert_eq!(done["status"], "applied");
    assert_eq!(done["result"]["state"], "inactive");
    let preview = call_ok(
        &app,
        "northwind-readwrite",
        "prepare_promotion_activation",
        json!({"promotion_id": promo}),
    )
    .await;
    assert_eq!(preview["cost"]["sufficient"], true);
}

#[tokio::test]
async fn a_preview_the_balance_cannot_pay_is_refused() {
    let app = quiet().await;
    let (promo, _) = grocers_promotion(&app);
    let grocers = company_id("Northwind Grocers");
    exec(
        &app,
        "UPDATE token_balances SET balance = 5 WHERE company_id = ?1",
        &[&grocers],
    );
    exec(
        &app,
        "UPDATE promotions SET activation_cost_tokens = 700 WHERE id = ?1",
        &[&promo],
    );
    let before = state_of(&app);
    for key_name in [
        "northwind-readwrite",
        "northwind-grocers-write",
        "northwind-admin",
    ] {
        let text = call_err(
            &app,
            key_name,
            "prepare_promotion_activation",
            json!({"promotion_id": promo}),
        )
        .await;
        assert!(text.contains("no confirmation_id was issued"), "{text}");
        assert!(
            text.contains("HTTP 402") && text.contains("costs 700 tokens but the balance is 5"),
            "{text}"
        );
        assert_no_rest_advice(&text);
        // Every tool the advice names is one this key may call.
        let tools = rpc(&app, key_name, "tools/list", json!({})).await;
        let names = tool_names(&tools);
        for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if word.starts_with("prepare_") || word.starts_with("list_") || word.starts_with("get_")
            {
                assert!(
                    names.contains(&word.to_string()),
                    "{key_name}: {word} in {text}"
                );
            }
        }
    }
    assert_eq!(pending_count(&app), 0);
    assert_eq!(state_of(&app), before);
}

/// A key that cannot make the fix itself is told that the user must do it elsewhere.
#[tokio::test]
async fn advice_without_a_tool_sends_the_user_elsewhere() {
    let app = quiet().await;
    let (promo, _) = grocers_promotion(&app);
    let now = signage::time::wall_now();
    exec(
        &app,
        "UPDATE promotions SET starts_at = ?1, ends_at = ?2 WHERE id = ?3",
        &[&(now - 7200), &(now - 3600), &promo],
    );
    // A key allowed to activate promotions, and nothing else.
    let client = crate::helpers::key("northwind-readwrite").client_id;
    let created = app
        .post("/api-keys")
        .key("northwind-admin")
        .json(
            &json!({"client_id": client, "name": "activate only", "scopes": ["promotions:write"]}),
        )
        .send()
        .await;
    assert_eq!(created.status, 201, "{}", created.text());
    let raw = created.json()["rawKey"].as_str().unwrap().to_string();
    let r = app
        .post("/mcp")
        .header("x-api-key", &raw)
        .header("x-service-client-id", &client)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "prepare_promotion_activation", "arguments": {"promotion_id": promo}}}))
        .send()
        .await;
    let result = r.json()["result"].clone();
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    // promotions:write does allow prepare_promotion_change: it is named.
    assert!(text.contains("prepare_promotion_change"), "{text}");

    // A balance problem for the same key: no token tool is allowed, so the user must act.
    exec(
        &app,
        "UPDATE promotions SET ends_at = ?1, activation_cost_tokens = 100000 WHERE id = ?2",
        &[&(now + 86_400), &promo],
    );
    let r = app
        .post("/mcp")
        .header("x-api-key", &raw)
        .header("x-service-client-id", &client)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "prepare_promotion_activation", "arguments": {"promotion_id": promo}}}))
        .send()
        .await;
    let result = r.json()["result"].clone();
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("outside this assistant"), "{text}");
    assert!(!text.contains("prepare_token_purchase"), "{text}");
    assert_no_rest_advice(text);
}

#[tokio::test]
async fn list_promotions_takes_a_boolean_active() {
    let app = quiet().await;
    for flag in [true, false] {
        let mcp = call_ok(
            &app,
            "northwind-readonly",
            "list_promotions",
            json!({"active": flag, "limit": 100}),
        )
        .await;
        let rest = app
            .get(&format!("/promotions?active={flag}&limit=100"))
            .key("northwind-readonly")
            .send()
            .await
            .ok();
        assert_eq!(mcp["data"], rest["data"], "active={flag}");
        assert!(mcp["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| (p["state"] == "active") == flag));
    }
    for wrong in [json!("true"), json!(1), json!("yes")] {
        let text = call_err(
            &app,
            "northwind-readonly",
            "list_promotions",
            json!({"active": wrong}),
        )
        .await;
        assert_eq!(
            text,
            "Invalid arguments: `active` must be of type boolean (`true` or `false`, without quotes). Nothing was done.",
            "{wrong}"
        );
    }
    let tools = rpc(&app, "northwind-readonly", "tools/list", json!({})).await;
    let list = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "list_promotions")
        .unwrap();
    assert_eq!(
        list["inputSchema"]["properties"]["active"]["type"],
        "boolean"
    );
}

#[tokio::test]
async fn lifetimes_are_stated_exactly() {
    let app = TestApp::spawn_with(|l| l.pending_change_ttl_secs = Some(2)).await;
    let init = rpc(
        &app,
        "northwind-readwrite",
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await;
    let instructions = init["instructions"].as_str().unwrap();
    assert!(
        instructions.contains("valid for 2 seconds"),
        "{instructions}"
    );
    assert!(!instructions.contains("minute"), "{instructions}");
    let (promo, _) = grocers_promotion(&app);
    let preview = call_ok(
        &app,
        "northwind-readwrite",
        "prepare_promotion_activation",
        json!({"promotion_id": promo}),
    )
    .await;
    let next = preview["next_step"].as_str().unwrap();
    assert!(
        next.ends_with(
            "for 2 seconds, and only while everything this preview shows stays as it is."
        ),
        "{next}"
    );
    for (secs, words) in [
        (1, "1 second"),
        (59, "59 seconds"),
        (60, "1 minute"),
        (90, "90 seconds"),
        (900, "15 minutes"),
        (3600, "1 hour"),
        (5400, "1 hour 30 minutes"),
    ] {
        assert_eq!(signage::time::duration_words(secs), words);
    }
}

/// Each argument description is the only documentation an assistant reads: it must say more
/// than the argument's name ("The company." did not). What every tool shares is said once, by the
/// server's instructions (checked here): an argument they explain needs no words of its own.
#[tokio::test]
async fn every_argument_is_described_usefully() {
    let app = quiet().await;
    let init = rpc(
        &app,
        "northwind-admin",
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await;
    let instructions = init["instructions"].as_str().unwrap().to_string();
    // Each convention the compact catalogue relies on, as the instructions word it.
    for convention in [
        "pass `next_cursor` as `cursor` for more",
        "`limit` is 1 to 100, default 20",
        "an `<object>_id` takes the id of that object",
        "a read's other optional arguments filter it",
        "(`q`: the name contains the text",
        "`from` (included) and `to` (excluded) take RFC 3339 or a UTC date",
        "`changes` holds only the fields to change, at least one",
    ] {
        assert!(
            instructions.contains(convention),
            "{convention}: {instructions}"
        );
    }
    let tools = rpc(&app, "northwind-admin", "tools/list", json!({})).await;
    let mut weak = Vec::new();
    for tool in tools["tools"].as_array().unwrap() {
        let tool_name = tool["name"].as_str().unwrap();
        let description = tool["description"].as_str().unwrap_or("");
        if description.len() < 40 {
            weak.push(format!("{tool_name}: {description}"));
        }
        let props = tool["inputSchema"]["properties"].as_object().unwrap();
        let required = tool["inputSchema"]["required"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let read =
            tool["annotations"]["readOnlyHint"] == true && !tool_name.starts_with("prepare_");
        for (name, schema) in props {
            let d = schema["description"].as_str().unwrap_or("");
            let string = schema["type"] == "string" || schema["type"] == json!(["string", "null"]);
            // A page size says all with its bounds and default, or with the instructions' (1-100,
            // 20). A cursor, `q`, `from` and `to` are explained by the instructions, and so is an
            // id argument (its name says which object; ids come from the list_ and get_ tools)
            // and an update's `changes` (its fields are the creation tool's).
            // A read's optional filter with its values listed says what its name says.
            let explained = match name.as_str() {
                "limit" => schema["type"] == "integer",
                "cursor" | "q" | "from" | "to" => string,
                "changes" => schema["type"] == "object" && schema["minProperties"] == 1,
                _ if name.ends_with("_id") => string,
                _ => read && !required.contains(&json!(name)) && schema["enum"].is_array(),
            };
            if d.len() < 20 && !explained {
                weak.push(format!("{tool_name}.{name}: {d:?}"));
            }
        }
    }
    assert!(weak.is_empty(), "weak descriptions: {weak:#?}");
}
