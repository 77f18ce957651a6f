//! Tests: mcp_secret_handoff. A webhook secret rotated through MCP reaches the person, never the
//! model: the confirmation holds it for a one-time reveal and gives the assistant only a link
//! (`/console/reveal#…`) with words to pass it on. The link shows the secret once, then 410; an
//! expired one is refused; the secret it showed verifies the deliveries that follow; REST
//! rotation is as it was. (A client with URL-mode elicitation is shown the link itself:
//! `mcp_elicitation`.)

use crate::helpers::mcp::{request, send};
use crate::helpers::TestApp;
use crate::webhook_delivery::{advance, hook, quiet_fixture_hooks};
use crate::webhook_receiver::{signatures_matching, Receiver};
use serde_json::{json, Value};

const RW: &str = "northwind-readwrite";

/// Every MCP response body of a test, as bytes, for the search.
#[derive(Default)]
struct Seen(Vec<Vec<u8>>);

impl Seen {
    async fn ok(&mut self, app: &TestApp, tool: &str, args: Value) -> Value {
        let msg = request(1, "tools/call", json!({"name": tool, "arguments": args}));
        let r = send(app, RW, &msg).await;
        assert_eq!(r.status, 200, "{}", r.text());
        self.0.push(r.body.to_vec());
        let result = r.json()["result"].clone();
        assert_eq!(result["isError"], false, "{tool}: {result}");
        result["structuredContent"].clone()
    }

    /// No body holds `needle`'s bytes.
    fn assert_without(&self, needle: &str) {
        assert!(!self.0.is_empty());
        for body in &self.0 {
            assert!(
                !body.windows(needle.len()).any(|w| w == needle.as_bytes()),
                "a body holds {needle}: {}",
                String::from_utf8_lossy(body)
            );
        }
    }
}

fn stored_secret(app: &TestApp, id: &str) -> String {
    app.sql(|c| {
        c.query_row("SELECT secret FROM webhooks WHERE id = ?1", [id], |r| {
            r.get(0)
        })
    })
}

/// Rotates `id`'s secret through MCP; returns the confirmation's result.
async fn rotate(app: &TestApp, seen: &mut Seen, id: &str) -> Value {
    let preview = seen
        .ok(
            app,
            "prepare_webhook_secret_rotation",
            json!({"webhook_id": id}),
        )
        .await;
    let summary = preview["summary"].as_str().unwrap();
    // The person decides knowing the grace and where the secret will be.
    assert!(
        summary.contains("keeps signing beside the new one for")
            && summary.contains("one-time link"),
        "{summary}"
    );
    seen.ok(
        app,
        "confirm_change",
        json!({"confirmation_id": preview["confirmation_id"]}),
    )
    .await
}

/// The token of a reveal link (what follows `#`), checking the link's shape.
fn token_of(app: &TestApp, url: &str) -> String {
    let (page, token) = url.split_once('#').unwrap();
    assert_eq!(page, format!("{}/console/reveal", app.base_url), "{url}");
    assert_eq!(token.len(), 64, "{url}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
    token.to_string()
}

async fn redeem(app: &TestApp, token: &str) -> crate::helpers::TestResponse {
    app.post("/console/reveal")
        .json(&json!({ "token": token }))
        .send()
        .await
}

#[tokio::test]
async fn a_secret_rotated_through_mcp_is_revealed_to_the_person_once_and_verifies_deliveries() {
    let app = TestApp::spawn_with(|l| l.webhook_rotation_grace_secs = Some(3600)).await;
    quiet_fixture_hooks(&app);
    let rx = Receiver::start().await;
    let (id, first) = hook(&app, &rx.url("/hook"), &["webhook.test"]).await;
    let mut seen = Seen::default();

    let done = rotate(&app, &mut seen, &id).await;
    let secret = stored_secret(&app, &id);
    assert_ne!(secret, first);
    // The model gets the link and what to do with it, never the secret.
    let withheld = &done["withheld"];
    assert_eq!(withheld["field"], "secret");
    let reveal = &withheld["reveal"];
    let instructions = reveal["instructions"].as_str().unwrap();
    assert!(
        instructions.contains("Give this link to the user") && instructions.contains("once"),
        "{instructions}"
    );
    assert!(reveal["expires_at"].as_str().unwrap().ends_with('Z'));
    let token = token_of(&app, reveal["url"].as_str().unwrap());
    seen.assert_without(&secret);
    seen.assert_without(&secret["whsec_".len()..]);

    // The page: the console's styles, no cache, no referrer, nothing inline.
    let page = app.get("/console/reveal").send().await;
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(page.header("cache-control"), Some("no-store"));
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    assert!(page
        .header("content-security-policy")
        .is_some_and(|p| p.contains("script-src 'self'")));
    let html = page.text();
    assert!(
        html.contains("/console/console.css") && html.contains("/console/reveal.js"),
        "{html}"
    );
    let script = app.get("/console/reveal.js").send().await;
    assert_eq!(script.status, 200);
    assert!(script.text().contains("location.hash"));

    // The token shows the secret once, and nothing after.
    let shown = redeem(&app, &token).await;
    assert_eq!(shown.status, 200, "{}", shown.text());
    assert_eq!(shown.header("cache-control"), Some("no-store"));
    assert_eq!(shown.header("referrer-policy"), Some("no-referrer"));
    let body = shown.json();
    assert_eq!(body["object"], "secret_reveal");
    assert_eq!(body["subject"], json!({"type": "webhook", "id": id}));
    assert_eq!(body["field"], "secret");
    assert_eq!(body["grace"], "1 hour");
    let revealed = body["secret"].as_str().unwrap().to_string();
    assert_eq!(revealed, secret);
    let again = redeem(&app, &token).await;
    let problem = again.problem(410);
    assert_eq!(problem["code"], "secret_reveal_gone");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("already opened"),
        "{problem}"
    );
    // A token that was never made is refused the same way, without saying more.
    let unknown = redeem(&app, &"0".repeat(64)).await.problem(410);
    assert!(unknown["detail"].as_str().unwrap().contains("expired"));

    // A genuine delivery after the grace: signed by the revealed secret only.
    advance(&app, 3601).await;
    let r = app
        .post(&format!("/webhooks/{id}/test"))
        .key("northwind-admin")
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let sent = &rx.wait_for(1).await[0];
    assert_eq!(signatures_matching(sent, &revealed), 1);
    assert_eq!(signatures_matching(sent, &first), 0);

    // The journal keeps neither the secret nor the token.
    for (path, who) in [
        ("/requests?limit=100", "northwind-admin"),
        ("/_sandbox/requests?limit=100", "sandbox-operator"),
    ] {
        let r = app.get(path).key(who).send().await;
        assert_eq!(r.status, 200, "{}", r.text());
        let text = r.text();
        assert!(text.contains("confirm_change"), "the journal has the call");
        assert!(!text.contains(&secret), "the journal holds the secret");
        assert!(!text.contains(&token), "the journal holds the token");
    }

    // REST rotation is as it was: the secret in its answer, once, and no link.
    let r = app
        .post(&format!("/webhooks/{id}/rotate-secret"))
        .key(RW)
        .send()
        .await;
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let rest = r.ok();
    assert_eq!(rest["secret"], stored_secret(&app, &id));
    assert!(!r.text().contains("reveal"), "{}", r.text());
}

#[tokio::test]
async fn an_expired_reveal_link_is_refused() {
    let app = TestApp::spawn_with(|l| l.mcp_secret_reveal_ttl_secs = Some(1)).await;
    let (id, _) = hook(&app, "https://hooks.example.com/x", &["webhook.test"]).await;
    let mut seen = Seen::default();
    let done = rotate(&app, &mut seen, &id).await;
    let token = token_of(&app, done["withheld"]["reveal"]["url"].as_str().unwrap());
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    let problem = redeem(&app, &token).await.problem(410);
    assert_eq!(problem["code"], "secret_reveal_gone");
    assert!(
        problem["detail"].as_str().unwrap().contains("expired"),
        "{problem}"
    );
}

#[tokio::test]
async fn a_malformed_reveal_request_is_a_problem() {
    let app = TestApp::spawn().await;
    let r = app
        .post("/console/reveal")
        .json(&json!({"token": "x", "more": 1}))
        .send()
        .await;
    assert!(r.status == 400 || r.status == 422, "{}", r.text());
    assert_eq!(
        r.header("content-type"),
        Some("application/problem+json"),
        "{}",
        r.text()
    );
}
