//! Tests: mcp_elicitation. Confirmation by elicitation (2025-11-25, form mode) over Streamable
//! HTTP: `confirm_change` from a client that declared the capability asks the user first, on the
//! POST's event stream; accept executes, decline and cancel do not, no answer leaves the change
//! pending; nobody else can answer for the user; clients without it keep the two-step tools.

use crate::helpers::mcp::{post, post_accept, request, ACCEPT_BOTH};
use crate::helpers::{company_id, key, TestApp};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use std::time::Duration;

const VERSION: &str = "2025-11-25";

/// Opens a session for a client with these capabilities; returns its id.
async fn session(app: &TestApp, key_name: &str, capabilities: Value) -> String {
    let r = post(app, key_name)
        .json(&request(
            1,
            "initialize",
            json!({"protocolVersion": VERSION, "capabilities": capabilities,
                "clientInfo": {"name": "elicitation-test", "version": "1"}}),
        ))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.header("mcp-session-id").unwrap().to_string()
}

async fn call_in(
    app: &TestApp,
    key_name: &str,
    sid: &str,
    id: i64,
    tool: &str,
    args: Value,
) -> Value {
    let r = post(app, key_name)
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", sid)
        .json(&request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": args}),
        ))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("content-type"),
        Some("application/json"),
        "answered at once"
    );
    r.json()["result"].clone()
}

/// An event stream read as it arrives.
struct Stream {
    body: Incoming,
    buffer: String,
}

impl Stream {
    /// The next JSON-RPC message (comments skipped), or `None` at the end of the stream.
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                // The priming event (an id, `retry`, no data) opens the stream: skipped.
                if let Some(data) = event
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .filter(|d| !d.is_empty())
                {
                    assert!(event.lines().any(|l| l == "event: message"), "{event:?}");
                    return Some(serde_json::from_str(data).expect("data is JSON"));
                }
                continue;
            }
            let frame = tokio::time::timeout(Duration::from_secs(20), self.body.frame())
                .await
                .expect("the stream stalled")?
                .expect("body error");
            if let Ok(data) = frame.into_data() {
                self.buffer.push_str(std::str::from_utf8(&data).unwrap());
            }
        }
    }
}

/// `confirm_change` in a session, answered as a stream.
async fn confirm_stream(app: &TestApp, key_name: &str, sid: &str, confirmation_id: &str) -> Stream {
    let k = key(key_name);
    let body = serde_json::to_vec(&request(
        42,
        "tools/call",
        json!({"name": "confirm_change", "arguments": {"confirmation_id": confirmation_id}}),
    ))
    .unwrap();
    let req = hyper::Request::post(format!("{}/mcp", app.base_url))
        .header("authorization", format!("Bearer {}", k.raw))
        .header("x-service-client-id", &k.client_id)
        .header("accept", ACCEPT_BOTH)
        .header("content-type", "application/json")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", sid)
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let resp = client.request(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    Stream {
        body: resp.into_body(),
        buffer: String::new(),
    }
}

/// The client's answer to the server's question: 202, no body.
async fn answer(app: &TestApp, key_name: &str, sid: &str, message: Value) {
    let r = post(app, key_name)
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", sid)
        .json(&message)
        .send()
        .await;
    assert_eq!(r.status, 202, "{}", r.text());
    assert!(r.body.is_empty());
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
    let r = app
        .get(&format!("/ads/{ad}"))
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    r["name"].as_str().unwrap().to_string()
}

/// Prepares renaming the ad; returns the confirmation id.
async fn prepare_rename(app: &TestApp, sid: &str, ad: &str, name: &str) -> String {
    let preview = call_in(
        app,
        "northwind-readwrite",
        sid,
        2,
        "prepare_ad_change",
        json!({"ad_id": ad, "changes": {"name": name}}),
    )
    .await;
    assert_eq!(preview["isError"], false, "{preview}");
    preview["structuredContent"]["confirmation_id"]
        .as_str()
        .unwrap()
        .to_string()
}

const ELICITING: &str = r#"{"elicitation": {"form": {}}}"#;

#[tokio::test]
async fn accept_executes_after_the_user_answers() {
    let app = TestApp::spawn().await;
    let sid = session(
        &app,
        "northwind-readwrite",
        serde_json::from_str(ELICITING).unwrap(),
    )
    .await;
    let ad = grocers_ad(&app);
    let before = ad_name(&app, &ad).await;
    let id = prepare_rename(&app, &sid, &ad, "Asked first").await;

    let mut stream = confirm_stream(&app, "northwind-readwrite", &sid, &id).await;
    let question = stream.next().await.unwrap();
    assert_eq!(question["method"], "elicitation/create");
    let params = &question["params"];
    assert_eq!(params["mode"], "form");
    assert_eq!(params["requestedSchema"]["type"], "object");
    let message = params["message"].as_str().unwrap();
    assert!(
        message.contains(&ad) && message.contains("Asked first"),
        "{message}"
    );
    // Nothing has run while the question waits.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(ad_name(&app, &ad).await, before);

    // Another credential, or the same key in another session, cannot answer for the user.
    let other = session(&app, "northwind-readwrite", json!({})).await;
    let accept = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {}}});
    answer(&app, "northwind-readwrite", &other, accept.clone()).await;
    let foreign = session(&app, "northwind-admin", json!({})).await;
    answer(&app, "northwind-admin", &foreign, accept.clone()).await;
    assert_eq!(ad_name(&app, &ad).await, before);

    answer(&app, "northwind-readwrite", &sid, accept.clone()).await;
    let done = stream.next().await.unwrap();
    assert_eq!(done["id"], 42);
    let result = &done["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"]["status"], "applied");
    // Fenced like every tool result: the tenant text it carries is data, not instructions.
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains(signage::mcp::fence::DATA_START)
            && text.contains(signage::mcp::fence::DATA_END)
            && text.starts_with("Result of confirm_change"),
        "{text}"
    );
    assert!(
        stream.next().await.is_none(),
        "the stream ends with the result"
    );
    assert_eq!(ad_name(&app, &ad).await, "Asked first");

    // The answer counts once; the confirmation id is spent.
    answer(&app, "northwind-readwrite", &sid, accept).await;
    let plain = call_in(
        &app,
        "northwind-readwrite",
        &other,
        5,
        "confirm_change",
        json!({"confirmation_id": id}),
    )
    .await;
    assert_eq!(plain["isError"], true);
    assert!(
        plain["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("already used"),
        "{plain}"
    );
}

#[tokio::test]
async fn decline_and_cancel_execute_nothing() {
    let app = TestApp::spawn().await;
    let sid = session(
        &app,
        "northwind-readwrite",
        serde_json::from_str(ELICITING).unwrap(),
    )
    .await;
    let ad = grocers_ad(&app);
    let before = ad_name(&app, &ad).await;
    for (action, words) in [("decline", "declined"), ("cancel", "dismissed")] {
        let id = prepare_rename(&app, &sid, &ad, &format!("Not {action}")).await;
        let mut stream = confirm_stream(&app, "northwind-readwrite", &sid, &id).await;
        let question = stream.next().await.unwrap();
        answer(
            &app,
            "northwind-readwrite",
            &sid,
            json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": action}}),
        )
        .await;
        let done = stream.next().await.unwrap();
        assert_eq!(done["result"]["isError"], true, "{done}");
        let text = done["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains(words) && text.contains("nothing was applied"),
            "{text}"
        );
        assert_eq!(ad_name(&app, &ad).await, before);
        // The change is cancelled, not merely unconfirmed.
        let other = session(&app, "northwind-readwrite", json!({})).await;
        let again = call_in(
            &app,
            "northwind-readwrite",
            &other,
            9,
            "confirm_change",
            json!({"confirmation_id": id}),
        )
        .await;
        assert!(
            again["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("cancelled"),
            "{again}"
        );
    }
}

#[tokio::test]
async fn no_answer_leaves_the_change_pending_and_clients_without_the_capability_keep_two_steps() {
    // A short-lived change: the server waits no longer than the change lives.
    let app = TestApp::spawn_with(|l| l.pending_change_ttl_secs = Some(3)).await;
    let ad = grocers_ad(&app);
    let before = ad_name(&app, &ad).await;
    let sid = session(
        &app,
        "northwind-readwrite",
        serde_json::from_str(ELICITING).unwrap(),
    )
    .await;
    let id = prepare_rename(&app, &sid, &ad, "Never answered").await;
    let mut stream = confirm_stream(&app, "northwind-readwrite", &sid, &id).await;
    assert_eq!(stream.next().await.unwrap()["method"], "elicitation/create");
    let done = stream.next().await.unwrap();
    assert_eq!(done["result"]["isError"], true);
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("did not answer"),
        "{done}"
    );
    assert_eq!(ad_name(&app, &ad).await, before);

    // A client that did not declare elicitation confirms in one call, as before.
    let plain = session(&app, "northwind-readwrite", json!({"sampling": {}})).await;
    let id = prepare_rename(&app, &plain, &ad, "Two steps").await;
    let done = call_in(
        &app,
        "northwind-readwrite",
        &plain,
        3,
        "confirm_change",
        json!({"confirmation_id": id}),
    )
    .await;
    assert_eq!(done["structuredContent"]["status"], "applied", "{done}");
    assert_eq!(ad_name(&app, &ad).await, "Two steps");
    // So does a client that said so but reads no event stream.
    let id = prepare_rename(&app, &sid, &ad, "JSON only").await;
    let r = post_accept(&app, "northwind-readwrite", "application/json")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-session-id", &sid)
        .json(&request(
            4,
            "tools/call",
            json!({"name": "confirm_change", "arguments": {"confirmation_id": id}}),
        ))
        .send()
        .await;
    assert_eq!(r.json()["result"]["structuredContent"]["status"], "applied");
}

#[tokio::test]
async fn a_client_that_cannot_ask_is_not_asked_again() {
    let app = TestApp::spawn().await;
    let sid = session(
        &app,
        "northwind-readwrite",
        serde_json::from_str(ELICITING).unwrap(),
    )
    .await;
    let ad = grocers_ad(&app);
    let id = prepare_rename(&app, &sid, &ad, "Asked in chat").await;
    let mut stream = confirm_stream(&app, "northwind-readwrite", &sid, &id).await;
    let question = stream.next().await.unwrap();
    answer(
        &app,
        "northwind-readwrite",
        &sid,
        json!({"jsonrpc": "2.0", "id": question["id"],
        "error": {"code": -32601, "message": "no dialog here"}}),
    )
    .await;
    let done = stream.next().await.unwrap();
    assert!(done["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("no dialog here"));
    // The change is still pending; the next confirm in this session runs it directly.
    let done = call_in(
        &app,
        "northwind-readwrite",
        &sid,
        7,
        "confirm_change",
        json!({"confirmation_id": id}),
    )
    .await;
    assert_eq!(done["structuredContent"]["status"], "applied", "{done}");
}

/// A question stays open for as long as the user takes, whatever the head time limit: the
/// connection is not waiting for its next request head while the answer to this one is still
/// being written (a stream the head limit cut would lose the user's answer).
#[tokio::test]
async fn the_stream_outlives_the_head_time_limit() {
    let app = TestApp::spawn_with(|l| {
        l.header_read_timeout_secs = Some(1);
        l.idle_timeout_secs = Some(30);
    })
    .await;
    let sid = session(
        &app,
        "northwind-readwrite",
        serde_json::from_str(ELICITING).unwrap(),
    )
    .await;
    let ad = grocers_ad(&app);
    let id = prepare_rename(&app, &sid, &ad, "Asked slowly").await;
    let mut stream = confirm_stream(&app, "northwind-readwrite", &sid, &id).await;
    let question = stream.next().await.unwrap();
    assert_eq!(question["method"], "elicitation/create");
    // The user thinks for well past the head limit.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let accept = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {}}});
    answer(&app, "northwind-readwrite", &sid, accept).await;
    let done = stream
        .next()
        .await
        .expect("the stream was cut before the answer");
    assert_eq!(
        done["result"]["structuredContent"]["status"], "applied",
        "{done}"
    );
    assert_eq!(ad_name(&app, &ad).await, "Asked slowly");
}

/// A webhook of the grocers and its prepared secret rotation in `sid`: (webhook, confirmation id).
async fn prepare_rotation(app: &TestApp, sid: &str) -> (String, String) {
    let grocers = company_id("Northwind Grocers");
    let hook = app.first_webhook_of(&grocers);
    let preview = call_in(
        app,
        "northwind-readwrite",
        sid,
        2,
        "prepare_webhook_secret_rotation",
        json!({"webhook_id": hook}),
    )
    .await;
    assert_eq!(preview["isError"], false, "{preview}");
    let id = preview["structuredContent"]["confirmation_id"]
        .as_str()
        .unwrap()
        .to_string();
    (hook, id)
}

fn stored_secret(app: &TestApp, hook: &str) -> String {
    app.sql(|c| {
        c.query_row("SELECT secret FROM webhooks WHERE id = ?1", [hook], |r| {
            r.get(0)
        })
    })
}

/// The URL-mode question of a stream: its link's token, after checking what the person is told.
fn link_question(question: &Value, hook: &str) -> String {
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let params = &question["params"];
    assert_eq!(params["mode"], "url", "{question}");
    assert!(params["elicitationId"]
        .as_str()
        .is_some_and(|e| !e.is_empty()));
    let message = params["message"].as_str().unwrap();
    assert!(
        message.contains(hook) && message.contains("once"),
        "{message}"
    );
    let url = params["url"].as_str().unwrap();
    let (page, token) = url.split_once("/console/reveal#").unwrap();
    assert!(page.starts_with("http://"), "{url}");
    token.to_string()
}

async fn revealed(app: &TestApp, token: &str) -> String {
    let r = app
        .post("/console/reveal")
        .json(&json!({ "token": token }))
        .send()
        .await;
    r.ok()["secret"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_client_with_url_mode_shows_the_person_the_new_secret_and_the_model_gets_no_link() {
    let app = TestApp::spawn().await;
    // Both modes: the confirmation dialog, then the link, on the same stream.
    let sid = session(
        &app,
        "northwind-readwrite",
        json!({"elicitation": {"form": {}, "url": {}}}),
    )
    .await;
    let (hook, id) = prepare_rotation(&app, &sid).await;
    let before = stored_secret(&app, &hook);
    let mut stream = confirm_stream(&app, "northwind-readwrite", &sid, &id).await;
    let confirm = stream.next().await.unwrap();
    assert_eq!(confirm["params"]["mode"], "form");
    answer(
        &app,
        "northwind-readwrite",
        &sid,
        json!({"jsonrpc": "2.0", "id": confirm["id"], "result": {"action": "accept", "content": {}}}),
    )
    .await;
    let link = stream.next().await.unwrap();
    let token = link_question(&link, &hook);
    let secret = stored_secret(&app, &hook);
    assert_ne!(secret, before, "rotated on the first accept");
    answer(
        &app,
        "northwind-readwrite",
        &sid,
        json!({"jsonrpc": "2.0", "id": link["id"], "result": {"action": "accept"}}),
    )
    .await;
    let done = stream.next().await.unwrap();
    assert_eq!(done["id"], 42);
    let result = &done["result"];
    assert_eq!(result["isError"], false, "{result}");
    let reveal = &result["structuredContent"]["withheld"]["reveal"];
    assert!(reveal.get("url").is_none(), "{reveal}");
    assert!(
        reveal["instructions"]
            .as_str()
            .unwrap()
            .contains("shown to the user by their MCP client"),
        "{reveal}"
    );
    // What the model reads holds neither the secret nor the way to it.
    let bytes = done.to_string();
    for needle in [&secret, &secret["whsec_".len()..].to_string(), &token] {
        assert!(!bytes.contains(needle.as_str()), "{bytes}");
    }
    assert!(stream.next().await.is_none());
    assert_eq!(revealed(&app, &token).await, secret);
}

#[tokio::test]
async fn a_declined_link_is_passed_to_the_assistant_to_hand_on() {
    let app = TestApp::spawn().await;
    // URL mode only: confirmed at once, then the link is offered on the call's own stream.
    let sid = session(
        &app,
        "northwind-readwrite",
        json!({"elicitation": {"url": {}}}),
    )
    .await;
    let (hook, id) = prepare_rotation(&app, &sid).await;
    let before = stored_secret(&app, &hook);
    let mut stream = confirm_stream(&app, "northwind-readwrite", &sid, &id).await;
    let link = stream.next().await.unwrap();
    let token = link_question(&link, &hook);
    let secret = stored_secret(&app, &hook);
    assert_ne!(secret, before);
    answer(
        &app,
        "northwind-readwrite",
        &sid,
        json!({"jsonrpc": "2.0", "id": link["id"], "result": {"action": "decline"}}),
    )
    .await;
    let done = stream.next().await.unwrap();
    let reveal = &done["result"]["structuredContent"]["withheld"]["reveal"];
    let url = reveal["url"].as_str().unwrap();
    assert!(url.ends_with(&format!("#{token}")), "{url}");
    assert!(reveal["instructions"]
        .as_str()
        .unwrap()
        .contains("Give this link to the user"));
    assert!(!done.to_string().contains(&secret));
    assert_eq!(revealed(&app, &token).await, secret);
}
