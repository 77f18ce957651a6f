//! Tests: mcp_mrtr. Confirmation by elicitation on protocol 2026-07-28, by multi round-trip:
//! `confirm_change` from a client that declared form elicitation answers `input_required` with an
//! `elicitation/create` question and a signed `requestState`; the retry with the user's answer
//! and the echoed state decides. Accept executes exactly once, decline and cancel do not; a
//! tampered, foreign, expired or replayed state is refused and runs nothing; clients without the
//! capability keep the two-step tools.

use crate::helpers::mcp::post;
use crate::helpers::{company_id, TestApp, TestResponse};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use serde_json::{json, Value};

const RW: &str = "northwind-readwrite";

fn eliciting() -> Value {
    json!({"elicitation": {"form": {}}})
}

/// One 2026-07-28 `tools/call` with these client capabilities and extra params.
async fn modern_call(
    app: &TestApp,
    key_name: &str,
    id: i64,
    tool: &str,
    args: Value,
    capabilities: Value,
    extra: Value,
) -> TestResponse {
    let mut params = json!({"name": tool, "arguments": args,
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "mrtr-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }});
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            params[k] = v;
        }
    }
    post(app, key_name)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))
        .send()
        .await
}

/// A call that must get a JSON-RPC result; returns it.
async fn result_of(r: TestResponse) -> Value {
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert!(v.get("error").is_none(), "unexpected error: {v}");
    v["result"].clone()
}

/// A retry that must be refused with -32602 and this reason.
fn assert_refused(r: &TestResponse, reason: &str) -> String {
    assert_eq!(r.status, 400, "{}", r.text());
    let v = r.json();
    assert!(v.get("result").is_none(), "expected a refusal: {v}");
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert_eq!(v["error"]["data"]["reason"], reason, "{v}");
    assert_eq!(v["error"]["data"]["applied"], false, "{v}");
    let message = v["error"]["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("othing was applied") || message.contains("nothing"),
        "{message}"
    );
    message
}

fn grocers_ad(app: &TestApp) -> String {
    let grocers = company_id("Northwind Grocers");
    app.sql(|c| {
        c.query_row(
            "SELECT min(id) FROM ads WHERE company_id = ?1",
            [&grocers],
            |r| r.get(0),
        )
    })
}

async fn ad_name(app: &TestApp, ad: &str) -> String {
    let r = app.get(&format!("/ads/{ad}")).key(RW).send().await.ok();
    r["name"].as_str().unwrap().to_string()
}

/// Prepares renaming the ad (as `key_name`); returns the confirmation id.
async fn prepare_rename(app: &TestApp, key_name: &str, ad: &str, name: &str) -> String {
    let preview = result_of(
        modern_call(
            app,
            key_name,
            2,
            "prepare_ad_change",
            json!({"ad_id": ad, "changes": {"name": name}}),
            eliciting(),
            json!({}),
        )
        .await,
    )
    .await;
    assert_eq!(preview["isError"], false, "{preview}");
    preview["structuredContent"]["confirmation_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The first leg: `confirm_change` answered with the question; returns (result, requestState).
async fn ask(app: &TestApp, key_name: &str, confirmation_id: &str) -> (Value, String) {
    let result = result_of(
        modern_call(
            app,
            key_name,
            3,
            "confirm_change",
            json!({"confirmation_id": confirmation_id}),
            eliciting(),
            json!({}),
        )
        .await,
    )
    .await;
    assert_eq!(result["resultType"], "input_required", "{result}");
    let state = result["requestState"].as_str().unwrap().to_string();
    (result, state)
}

/// The retry: the same call with the user's answer and a state.
async fn retry(
    app: &TestApp,
    key_name: &str,
    confirmation_id: &str,
    action: &str,
    state: &str,
) -> TestResponse {
    let answer = if action == "accept" {
        json!({"action": "accept", "content": {}})
    } else {
        json!({"action": action})
    };
    modern_call(
        app,
        key_name,
        4,
        "confirm_change",
        json!({"confirmation_id": confirmation_id}),
        eliciting(),
        json!({"inputResponses": {"confirm_change": answer}, "requestState": state}),
    )
    .await
}

#[tokio::test]
async fn the_question_comes_back_as_input_required_and_accept_executes_once() {
    let app = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    let before = ad_name(&app, &ad).await;
    let id = prepare_rename(&app, RW, &ad, "Asked by round trip").await;

    let (result, state) = ask(&app, RW, &id).await;
    let question = &result["inputRequests"]["confirm_change"];
    assert_eq!(question["method"], "elicitation/create", "{result}");
    assert_eq!(question["params"]["mode"], "form");
    assert_eq!(question["params"]["requestedSchema"]["type"], "object");
    let message = question["params"]["message"].as_str().unwrap();
    assert!(
        message.contains(&ad) && message.contains("Asked by round trip"),
        "{message}"
    );
    assert!(result.get("content").is_none() && result.get("isError").is_none());
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "signage"
    );
    // The state carries no secret: neither the confirmation id nor any key material.
    let (payload, tag) = state.split_once('.').expect("payload.tag");
    let claims: Value = serde_json::from_slice(&B64.decode(payload).unwrap()).unwrap();
    assert_eq!(B64.decode(tag).unwrap().len(), 32, "an HMAC-SHA256 tag");
    assert!(!state.contains(&id) && !claims.to_string().contains(&id));
    assert!(!claims.to_string().contains("sgn_"), "{claims}");
    // Asking ran nothing.
    assert_eq!(ad_name(&app, &ad).await, before);

    let r = retry(&app, RW, &id, "accept", &state).await;
    let done = result_of(r).await;
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(done["structuredContent"]["status"], "applied");
    assert_eq!(ad_name(&app, &ad).await, "Asked by round trip");

    // Replaying the accepted answer runs nothing more: rename by REST, replay, the name stays.
    let ok = app
        .patch(&format!("/ads/{ad}"))
        .key(RW)
        .json(&json!({"name": "Renamed afterwards"}))
        .send()
        .await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    let r = retry(&app, RW, &id, "accept", &state).await;
    let message = assert_refused(&r, "request_state_used");
    assert!(message.contains("already used"), "{message}");
    assert_eq!(ad_name(&app, &ad).await, "Renamed afterwards");
}

#[tokio::test]
async fn decline_and_cancel_cancel_the_change_and_run_nothing() {
    let app = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    let before = ad_name(&app, &ad).await;
    for (action, code) in [
        ("decline", "confirmation_declined"),
        ("cancel", "confirmation_cancelled"),
    ] {
        let id = prepare_rename(&app, RW, &ad, &format!("Not wanted {action}")).await;
        let (_, state) = ask(&app, RW, &id).await;
        let result = result_of(retry(&app, RW, &id, action, &state).await).await;
        assert_eq!(result["isError"], true, "{result}");
        assert_eq!(result["resultType"], "complete");
        assert_eq!(result["structuredContent"]["error"]["code"], code);
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("nothing was applied"), "{text}");
        assert_eq!(ad_name(&app, &ad).await, before, "{action} ran the change");

        // The change is cancelled: an accept with the same state, or a plain confirmation, runs nothing.
        let r = retry(&app, RW, &id, "accept", &state).await;
        let message = assert_refused(&r, "request_state_used");
        assert!(message.contains("cancelled"), "{message}");
        let plain = result_of(
            modern_call(
                &app,
                RW,
                9,
                "confirm_change",
                json!({"confirmation_id": id}),
                json!({}),
                json!({}),
            )
            .await,
        )
        .await;
        assert_eq!(plain["isError"], true, "{plain}");
        assert_eq!(
            plain["structuredContent"]["error"]["code"],
            "confirmation_cancelled"
        );
        assert_eq!(ad_name(&app, &ad).await, before);
    }
}

#[tokio::test]
async fn a_tampered_or_foreign_state_is_refused_and_runs_nothing() {
    let app = TestApp::spawn().await;
    let other_instance = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    let before = ad_name(&app, &ad).await;
    let id = prepare_rename(&app, RW, &ad, "Only if asked").await;
    let (_, state) = ask(&app, RW, &id).await;
    let (payload, tag) = state.split_once('.').unwrap();

    // Claims rewritten (a later expiry) under the old tag; a flipped tag bit; junk; no tag.
    let mut claims: Value = serde_json::from_slice(&B64.decode(payload).unwrap()).unwrap();
    claims["exp"] = json!(i64::MAX / 2);
    let rewritten = format!("{}.{tag}", B64.encode(claims.to_string()));
    let mut bits = B64.decode(tag).unwrap();
    bits[7] ^= 0x40;
    let flipped = format!("{payload}.{}", B64.encode(bits));
    let long = "A".repeat(5000);
    for bad in [
        rewritten.as_str(),
        flipped.as_str(),
        payload,
        "not-a-state",
        "",
        long.as_str(),
    ] {
        let r = retry(&app, RW, &id, "accept", bad).await;
        assert_refused(&r, "request_state_invalid");
    }
    // A state that is not a string.
    let r = modern_call(
        &app,
        RW,
        5,
        "confirm_change",
        json!({"confirmation_id": id}),
        eliciting(),
        json!({"inputResponses": {"confirm_change": {"action": "accept"}}, "requestState": {"k": 1}}),
    )
    .await;
    assert_refused(&r, "request_state_invalid");
    // Answers without the state that goes with them.
    let r = modern_call(
        &app,
        RW,
        6,
        "confirm_change",
        json!({"confirmation_id": id}),
        eliciting(),
        json!({"inputResponses": {"confirm_change": {"action": "accept", "content": {}}}}),
    )
    .await;
    assert_refused(&r, "request_state_missing");

    // A state signed by another running instance (its own secret), for its own change.
    let foreign_ad = grocers_ad(&other_instance);
    let foreign_id = prepare_rename(&other_instance, RW, &foreign_ad, "Elsewhere").await;
    let (_, foreign_state) = ask(&other_instance, RW, &foreign_id).await;
    let r = retry(&app, RW, &id, "accept", &foreign_state).await;
    assert_refused(&r, "request_state_invalid");

    assert_eq!(
        ad_name(&app, &ad).await,
        before,
        "a refused state ran the change"
    );
    // The genuine state still works, once.
    let done = result_of(retry(&app, RW, &id, "accept", &state).await).await;
    assert_eq!(done["structuredContent"]["status"], "applied", "{done}");
    assert_eq!(ad_name(&app, &ad).await, "Only if asked");
}

#[tokio::test]
async fn a_state_answers_only_for_its_key_and_its_change() {
    let app = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    let before = ad_name(&app, &ad).await;
    let mine = prepare_rename(&app, RW, &ad, "Mine").await;
    let (_, state) = ask(&app, RW, &mine).await;

    // Another key of the same account (same client id) replays the state, for the same id.
    let r = retry(&app, "northwind-grocers-write", &mine, "accept", &state).await;
    assert_refused(&r, "request_state_other_key");
    // Its own pending change, answered with my state.
    let theirs = prepare_rename(&app, "northwind-grocers-write", &ad, "Theirs").await;
    let r = retry(&app, "northwind-grocers-write", &theirs, "accept", &state).await;
    assert_refused(&r, "request_state_other_key");
    // My other change, answered with the state of the first question.
    let second = prepare_rename(&app, RW, &ad, "Second").await;
    let r = retry(&app, RW, &second, "accept", &state).await;
    assert_refused(&r, "request_state_other_change");
    assert_eq!(ad_name(&app, &ad).await, before);
}

#[tokio::test]
async fn an_expired_state_is_refused_and_the_user_can_be_asked_again() {
    let app = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    let before = ad_name(&app, &ad).await;
    let id = prepare_rename(&app, RW, &ad, "Asked twice").await;
    let (_, state) = ask(&app, RW, &id).await;
    // Past the state's five minutes, within the change's ten.
    let r = app
        .post("/_sandbox/clock/advance")
        .key("sandbox-operator")
        .json(&json!({"seconds": 301}))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = retry(&app, RW, &id, "accept", &state).await;
    let message = assert_refused(&r, "request_state_expired");
    assert!(message.contains("expired at"), "{message}");
    assert_eq!(ad_name(&app, &ad).await, before);

    // The change is still pending: asking again gives a fresh state, and the answer counts.
    let (_, fresh) = ask(&app, RW, &id).await;
    assert_ne!(fresh, state);
    let done = result_of(retry(&app, RW, &id, "accept", &fresh).await).await;
    assert_eq!(done["structuredContent"]["status"], "applied", "{done}");
    assert_eq!(ad_name(&app, &ad).await, "Asked twice");
}

#[tokio::test]
async fn a_missing_or_malformed_answer_is_asked_again_or_refused() {
    let app = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    let before = ad_name(&app, &ad).await;
    let id = prepare_rename(&app, RW, &ad, "Answer needed").await;
    let (_, state) = ask(&app, RW, &id).await;

    // The state without the answer: the question again (MRTR "Error Handling").
    let again = result_of(
        modern_call(
            &app,
            RW,
            7,
            "confirm_change",
            json!({"confirmation_id": id}),
            eliciting(),
            json!({"requestState": state, "inputResponses": {"other_key": {"action": "accept"}}}),
        )
        .await,
    )
    .await;
    assert_eq!(again["resultType"], "input_required", "{again}");
    assert_eq!(
        again["inputRequests"]["confirm_change"]["method"],
        "elicitation/create"
    );
    // An answer that is no ElicitResult.
    for answer in [json!({"action": "yes"}), json!("accept"), json!({})] {
        let r = modern_call(
            &app,
            RW,
            8,
            "confirm_change",
            json!({"confirmation_id": id}),
            eliciting(),
            json!({"requestState": state, "inputResponses": {"confirm_change": answer}}),
        )
        .await;
        assert_refused(&r, "input_response_invalid");
    }
    assert_eq!(ad_name(&app, &ad).await, before);
}

#[tokio::test]
async fn clients_without_the_capability_keep_the_two_step_tools() {
    let app = TestApp::spawn().await;
    let ad = grocers_ad(&app);
    // The two-step tools stay listed for a client that can be asked.
    let r = post(&app, RW)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "mrtr-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": eliciting()}}}),
        )
        .send()
        .await;
    let list = result_of(r).await;
    let names = crate::helpers::mcp::tool_names(&list);
    for tool in ["prepare_ad_change", "confirm_change", "cancel_change"] {
        assert!(names.iter().any(|n| n == tool), "{tool} not listed");
    }

    // Without elicitation (or with URL mode only) confirm_change applies at once, as before.
    for (n, capabilities) in [json!({}), json!({"elicitation": {"url": {}}})]
        .into_iter()
        .enumerate()
    {
        let name = format!("Two steps {n}");
        let id = prepare_rename(&app, RW, &ad, &name).await;
        let done = result_of(
            modern_call(
                &app,
                RW,
                3,
                "confirm_change",
                json!({"confirmation_id": id}),
                capabilities,
                json!({}),
            )
            .await,
        )
        .await;
        assert_eq!(done["resultType"], "complete", "{done}");
        assert_eq!(done["structuredContent"]["status"], "applied", "{done}");
        assert_eq!(ad_name(&app, &ad).await, name);
    }

    // An unknown or used id is not asked about: the ordinary refusal comes at once.
    let r = modern_call(
        &app,
        RW,
        4,
        "confirm_change",
        json!({"confirmation_id": "chg_doesnotexist"}),
        eliciting(),
        json!({}),
    )
    .await;
    let result = result_of(r).await;
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["structuredContent"]["error"]["code"], "confirmation_not_found",
        "{result}"
    );
}

#[tokio::test]
async fn a_rotation_confirmed_by_round_trip_hands_the_assistant_a_link_not_the_secret() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let hook = app.first_webhook_of(&grocers);
    let preview = result_of(
        modern_call(
            &app,
            RW,
            2,
            "prepare_webhook_secret_rotation",
            json!({"webhook_id": hook}),
            eliciting(),
            json!({}),
        )
        .await,
    )
    .await;
    let id = preview["structuredContent"]["confirmation_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, state) = ask(&app, RW, &id).await;
    let r = retry(&app, RW, &id, "accept", &state).await;
    let body = r.text();
    let done = result_of(r).await;
    assert_eq!(done["isError"], false, "{done}");
    // This era has no server-to-client request: the assistant carries the link, with words.
    let reveal = &done["structuredContent"]["withheld"]["reveal"];
    assert!(reveal["instructions"]
        .as_str()
        .unwrap()
        .contains("Give this link to the user"));
    let url = reveal["url"].as_str().unwrap();
    let token = url.split_once("/console/reveal#").unwrap().1;
    let secret: String = app.sql(|c| {
        c.query_row("SELECT secret FROM webhooks WHERE id = ?1", [&hook], |r| {
            r.get(0)
        })
    });
    assert!(!body.contains(&secret) && !body.contains(&secret["whsec_".len()..]));
    let shown = app
        .post("/console/reveal")
        .json(&json!({ "token": token }))
        .send()
        .await
        .ok();
    assert_eq!(shown["secret"], secret);
}
