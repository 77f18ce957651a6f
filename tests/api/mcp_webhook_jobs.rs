//! Tests: mcp_webhook_jobs. Webhooks are created, deleted and their secret rotated in two steps,
//! and the signing secret never comes through MCP: not in a preview, a result, an error, a
//! resource or a journal entry. The result hands it to the person through a one-time link.

use crate::helpers::mcp::{call_err, call_ok, request, send, tool_names};
use crate::helpers::{company_id, key, TestApp};
use serde_json::{json, Value};

const RW: &str = "northwind-readwrite";

/// Every MCP response body of a test, kept for the canary.
#[derive(Default)]
struct Seen(Vec<String>);

impl Seen {
    /// A JSON-RPC call as `key_name`; the body is kept, the result (or error) returned.
    async fn rpc(&mut self, app: &TestApp, key_name: &str, method: &str, params: Value) -> Value {
        let r = send(app, key_name, &request(1, method, params)).await;
        assert_eq!(r.status, 200, "{}", r.text());
        self.0.push(r.text());
        let v = r.json();
        if v.get("error").is_some() {
            return v["error"].clone();
        }
        v["result"].clone()
    }

    /// A tool call that must succeed; returns its structured content.
    async fn ok(&mut self, app: &TestApp, key_name: &str, tool: &str, args: Value) -> Value {
        let params = json!({"name": tool, "arguments": args});
        let result = self.rpc(app, key_name, "tools/call", params).await;
        assert_eq!(result["isError"], false, "{tool}: {result}");
        result["structuredContent"].clone()
    }

    /// A tool call that must fail; returns its structured error.
    async fn err(&mut self, app: &TestApp, key_name: &str, tool: &str, args: Value) -> Value {
        let params = json!({"name": tool, "arguments": args});
        let result = self.rpc(app, key_name, "tools/call", params).await;
        assert_eq!(result["isError"], true, "{tool}: {result}");
        result["structuredContent"]["error"].clone()
    }

    /// No kept body holds any of `secrets`, or anything shaped like a signing secret.
    fn assert_none_of(&self, secrets: &[String]) {
        assert!(!self.0.is_empty());
        for body in &self.0 {
            for s in secrets {
                assert!(!body.contains(s.as_str()), "a secret came out: {body}");
                // Its body alone, without the prefix, does not either.
                assert!(!body.contains(&s["whsec_".len()..]), "{body}");
            }
            assert!(!body.contains("whsec_"), "{body}");
        }
    }
}

/// The stored secrets of a webhook: (current, previous during a rotation's grace).
fn secrets(app: &TestApp, id: &str) -> (String, Option<String>) {
    app.sql(|c| {
        c.query_row(
            "SELECT secret, previous_secret FROM webhooks WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    })
}

fn webhook_count(app: &TestApp) -> i64 {
    app.sql(|c| c.query_row("SELECT count(*) FROM webhooks", [], |r| r.get(0)))
}

/// The journal entries the admin and the operator can read, and a resource listing, as MCP and
/// REST return them.
async fn journal_and_resources(app: &TestApp, seen: &mut Seen) -> Vec<String> {
    seen.rpc(app, RW, "resources/list", json!({})).await;
    let mut bodies = Vec::new();
    for (path, who) in [
        ("/requests?limit=100", "northwind-admin"),
        ("/requests?limit=100", RW),
        ("/_sandbox/requests?limit=100", "sandbox-operator"),
    ] {
        let r = app.get(path).key(who).send().await;
        assert_eq!(r.status, 200, "{}", r.text());
        bodies.push(r.text());
    }
    assert!(
        bodies[0].contains("prepare_webhook"),
        "the journal has the tool calls: {}",
        &bodies[0][..bodies[0].len().min(400)]
    );
    bodies
}

#[tokio::test]
async fn a_webhook_is_created_in_two_steps_and_its_secret_is_never_shown() {
    let app = TestApp::spawn().await;
    let mut seen = Seen::default();
    let grocers = company_id("Northwind Grocers");
    let count = webhook_count(&app);
    let args = json!({"company_id": grocers, "url": "https://hooks.example.com/signage",
        "event_types": ["ad.assigned", "promotion.activated"], "description": "Screens board"});
    let preview = seen.ok(&app, RW, "prepare_webhook_creation", args).await;
    assert_eq!(webhook_count(&app), count, "a preview creates nothing");
    assert_eq!(preview["target"]["type"], "company");
    assert_eq!(preview["target"]["id"], grocers);
    assert_eq!(preview["current"]["id"], grocers, "the company it is for");
    let after = &preview["after"];
    assert_eq!(after["object"], "webhook");
    assert_eq!(after["url"], "https://hooks.example.com/signage");
    assert_eq!(
        after["event_types"],
        json!(["ad.assigned", "promotion.activated"])
    );
    assert_eq!(after["enabled"], true);
    assert!(after.get("secret").is_none(), "{after}");
    // What only the confirmation fixes is null and named, never invented.
    let set = preview["set_at_confirmation"].as_array().unwrap();
    for path in ["id", "secret_last4", "created_at"] {
        assert!(set.contains(&json!(path)), "{path}: {set:?}");
        assert!(after[path].is_null());
    }
    assert_eq!(preview["withheld"]["field"], "secret");
    let note = preview["withheld"]["note"].as_str().unwrap();
    assert!(
        note.contains("one-time link") && note.contains("never shown to you"),
        "{note}"
    );
    let next = preview["next_step"].as_str().unwrap();
    assert!(
        next.contains("never shown through MCP") && next.contains(note),
        "{next}"
    );

    let done = seen
        .ok(
            &app,
            RW,
            "confirm_change",
            json!({"confirmation_id": preview["confirmation_id"]}),
        )
        .await;
    let result = &done["result"];
    let id = result["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("wh_"));
    assert!(result.get("secret").is_none(), "{result}");
    assert_eq!(webhook_count(&app), count + 1);
    // The result hands the first secret to the person: a link, never the secret.
    assert!(done["withheld"]["reveal"]["url"]
        .as_str()
        .is_some_and(|u| u.contains("/console/reveal#")));
    let (secret, _) = secrets(&app, &id);
    assert!(secret.starts_with("whsec_"));
    assert_eq!(result["secret_last4"], secret[secret.len() - 4..]);
    let rest = app
        .get(&format!("/webhooks/{id}"))
        .key(RW)
        .send()
        .await
        .ok();
    assert_eq!(&rest["url"], &result["url"]);

    // What else an assistant may read about it: the webhook, the list, the events.
    seen.ok(&app, RW, "get_webhook", json!({"webhook_id": id}))
        .await;
    seen.ok(&app, RW, "list_webhooks", json!({"company_id": grocers}))
        .await;
    seen.ok(
        &app,
        "northwind-admin",
        "list_events",
        json!({"type": "webhook.created"}),
    )
    .await;
    let journal = journal_and_resources(&app, &mut seen).await;
    seen.assert_none_of(std::slice::from_ref(&secret));
    for body in &journal {
        assert!(!body.contains(&secret), "the journal holds the secret");
    }

    // REST rotation shows a new secret, once.
    let r = app
        .post(&format!("/webhooks/{id}/rotate-secret"))
        .key(RW)
        .send()
        .await;
    let shown = r.ok();
    assert_eq!(r.header("cache-control"), Some("no-store"));
    assert_eq!(shown["secret"], secrets(&app, &id).0);
}

#[tokio::test]
async fn a_rotation_through_mcp_shows_neither_secret() {
    let app = TestApp::spawn().await;
    let mut seen = Seen::default();
    let grocers = company_id("Northwind Grocers");
    // A webhook made over REST: its first secret is known to the integrator, not to MCP.
    let made = app
        .post("/webhooks")
        .key(RW)
        .json(
            &json!({"company_id": grocers, "url": "https://hooks.example.com/rotate",
            "event_types": ["ad.updated"]}),
        )
        .send()
        .await;
    assert_eq!(made.status, 201, "{}", made.text());
    let made = made.json();
    let id = made["id"].as_str().unwrap().to_string();
    let first = made["secret"].as_str().unwrap().to_string();

    let preview = seen
        .ok(
            &app,
            RW,
            "prepare_webhook_secret_rotation",
            json!({"webhook_id": id}),
        )
        .await;
    assert_eq!(
        secrets(&app, &id),
        (first.clone(), None),
        "nothing rotated yet"
    );
    assert_eq!(preview["after"]["id"], id);
    assert!(preview["after"].get("secret").is_none());
    let diffs = preview["differences"].as_array().unwrap();
    let last4 = diffs.iter().find(|d| d["field"] == "secret_last4").unwrap();
    assert_eq!(last4["current"], first[first.len() - 4..]);
    assert_eq!(last4["set_at_confirmation"], true);
    assert!(last4["proposed"].is_null());
    let note = preview["withheld"]["note"].as_str().unwrap();
    assert!(
        note.contains("one-time link") && note.contains("webhooks.rotation_grace_secs"),
        "{note}"
    );
    // The person decides knowing how long the receiver has: the configured grace, in words.
    let summary = preview["summary"].as_str().unwrap();
    assert!(
        summary.contains("for 24 hours") && summary.contains("within 24 hours"),
        "{summary}"
    );
    let done = seen
        .ok(
            &app,
            RW,
            "confirm_change",
            json!({"confirmation_id": preview["confirmation_id"]}),
        )
        .await;
    assert!(done["result"].get("secret").is_none());
    assert_eq!(done["withheld"]["field"], "secret");
    let (now, previous) = secrets(&app, &id);
    assert_ne!(now, first);
    assert_eq!(
        previous.as_deref(),
        Some(first.as_str()),
        "the old one signs in the grace"
    );
    assert_eq!(done["result"]["secret_last4"], now[now.len() - 4..]);

    // Errors carry no secret either: a stale preview, an unknown webhook, a bad argument.
    let stale = seen
        .ok(
            &app,
            RW,
            "prepare_webhook_secret_rotation",
            json!({"webhook_id": id}),
        )
        .await;
    app.post(&format!("/webhooks/{id}/rotate-secret"))
        .key(RW)
        .send()
        .await
        .ok();
    let (rotated_again, _) = secrets(&app, &id);
    let e = seen
        .err(
            &app,
            RW,
            "confirm_change",
            json!({"confirmation_id": stale["confirmation_id"]}),
        )
        .await;
    assert_eq!(e["code"], "stale_preview");
    seen.err(
        &app,
        RW,
        "prepare_webhook_secret_rotation",
        json!({"webhook_id": "wh_0000000000000000000000"}),
    )
    .await;
    journal_and_resources(&app, &mut seen).await;
    seen.assert_none_of(&[first, now, rotated_again]);
}

#[tokio::test]
async fn a_deletion_previews_the_webhook_and_honours_its_version() {
    let app = TestApp::spawn().await;
    let account = key(RW).account_id;
    let ids: Vec<String> = app.sql(|c| {
        let mut s = c.prepare(
            "SELECT w.id FROM webhooks w JOIN companies c ON c.id = w.company_id
             WHERE c.account_id = ?1 ORDER BY w.id LIMIT 2",
        )?;
        let rows = s.query_map([&account], |r| r.get(0))?;
        rows.collect()
    });
    let (id, other) = (&ids[0], &ids[1]);
    let preview = call_ok(
        &app,
        RW,
        "prepare_webhook_deletion",
        json!({"webhook_id": id}),
    )
    .await;
    let d = &preview["differences"][0];
    assert_eq!(d["field"], "webhook");
    assert_eq!(d["current"]["id"], *id);
    assert!(d["proposed"].is_null());
    assert_eq!(preview["after"], json!({"ok": true, "status": 204}));
    app.get(&format!("/webhooks/{id}"))
        .key(RW)
        .send()
        .await
        .ok();
    let done = call_ok(
        &app,
        RW,
        "confirm_change",
        json!({"confirmation_id": preview["confirmation_id"]}),
    )
    .await;
    assert_eq!(done["result"], preview["after"]);
    app.get(&format!("/webhooks/{id}"))
        .key(RW)
        .send()
        .await
        .problem(404);

    // Changed since the preview: nothing is deleted.
    let preview = call_ok(
        &app,
        RW,
        "prepare_webhook_deletion",
        json!({"webhook_id": other}),
    )
    .await;
    app.patch(&format!("/webhooks/{other}"))
        .key(RW)
        .json(&json!({"description": "Renamed meanwhile"}))
        .send()
        .await
        .ok();
    let e = call_err(
        &app,
        RW,
        "confirm_change",
        json!({"confirmation_id": preview["confirmation_id"]}),
    )
    .await;
    assert!(e.contains("changed since the preview"), "{e}");
    app.get(&format!("/webhooks/{other}"))
        .key(RW)
        .send()
        .await
        .ok();
}

#[tokio::test]
async fn webhook_tools_keep_to_the_key_and_its_companies() {
    let app = TestApp::spawn().await;
    let pharmacy = company_id("Northwind Pharmacy");
    let count = webhook_count(&app);
    let listed = tool_names(
        &crate::helpers::mcp::rpc(&app, "northwind-readonly", "tools/list", json!({})).await,
    );
    for tool in [
        "prepare_webhook_creation",
        "prepare_webhook_deletion",
        "prepare_webhook_secret_rotation",
    ] {
        assert!(!listed.contains(&tool.to_string()), "{tool}");
    }
    let args = json!({"company_id": pharmacy, "url": "https://hooks.example.com/x",
        "event_types": ["ad.created"]});
    let e = call_err(
        &app,
        "northwind-readonly",
        "prepare_webhook_creation",
        args.clone(),
    )
    .await;
    assert!(e.contains("cannot use prepare_webhook_creation"), "{e}");
    // A key scoped to the grocers cannot create one for the pharmacy, nor touch its webhooks.
    let e = call_err(
        &app,
        "northwind-grocers-write",
        "prepare_webhook_creation",
        args,
    )
    .await;
    assert!(e.contains("404"), "{e}");
    let theirs = app.first_webhook_of(&pharmacy);
    for tool in [
        "prepare_webhook_deletion",
        "prepare_webhook_secret_rotation",
    ] {
        let e = call_err(
            &app,
            "northwind-grocers-write",
            tool,
            json!({"webhook_id": theirs}),
        )
        .await;
        assert!(e.contains("404"), "{tool}: {e}");
    }
    // Another account's company reads as none.
    let e = call_err(
        &app,
        "harborview-readwrite",
        "prepare_webhook_creation",
        json!({"company_id": pharmacy, "url": "https://hooks.example.com/x", "event_types": ["ad.created"]}),
    )
    .await;
    assert!(e.contains("404"), "{e}");
    // The write's own checks run at preview time: a metadata address, an unknown event type.
    let grocers = company_id("Northwind Grocers");
    let e = call_err(
        &app,
        RW,
        "prepare_webhook_creation",
        json!({"company_id": grocers, "url": "https://169.254.169.254/hook", "event_types": ["ad.created"]}),
    )
    .await;
    assert!(
        e.contains("422") && e.contains("nothing was prepared"),
        "{e}"
    );
    let e = call_err(
        &app,
        RW,
        "prepare_webhook_creation",
        json!({"company_id": grocers, "url": "https://hooks.example.com/x", "event_types": ["ad.exploded"]}),
    )
    .await;
    assert!(e.contains("event_types"), "{e}");
    assert_eq!(webhook_count(&app), count, "nothing was created");
}
