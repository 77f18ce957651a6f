//! Issue 29 §5: nothing secret in the journal, anywhere. A run tries each form a secret reached
//! disk in before: a raw key as a query-parameter *name*, as a JSON member *name*, as the
//! `Idempotency-Key` value (also kept in `idempotency_keys`), as an unknown MCP tool name and as
//! an MCP argument's name; a password typed into the login `username` field; `https://user:pw@…`
//! URLs in a query, a body and an MCP argument. Then every stored byte of both databases (the
//! database and the journal file) and their WALs is read, while the server runs and after it
//! stopped, with the journal's answers (`GET /requests`, `/_sandbox/requests`, MCP
//! `explain_request` text and structured content): no canary anywhere.

use crate::helpers::{company_id, key, mcp, TestApp};
use crate::readiness_client::OP;
use serde_json::{json, Value};

/// Every byte of every file of the database and the journal (and their WAL and shared memory).
fn stored_bytes(dir: &std::path::Path) -> (Vec<u8>, Vec<String>) {
    let mut bytes = Vec::new();
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("signage.db") && e.path().is_file() {
            bytes.extend(std::fs::read(e.path()).unwrap());
            names.push(name);
        }
    }
    names.sort();
    (bytes, names)
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn no_secret_form_reaches_any_stored_byte_or_answer() {
    let dir = std::env::temp_dir().join(format!("signage-canary29-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("signage.db").to_str().unwrap().to_string();
    let app = TestApp::spawn_with(|l| l.database = Some(db.clone())).await;
    let admin = key("northwind-admin");

    // A key minted now: its raw value exists nowhere but in this answer.
    let made = app
        .post("/api-keys")
        .key("northwind-admin")
        .header("idempotency-key", "canary-key")
        .json(&json!({"client_id": admin.client_id, "name": "canary", "scopes": ["read", "write"]}))
        .send()
        .await
        .ok();
    let raw = made["rawKey"].as_str().unwrap().to_string();
    let secret_part = raw.rsplit('_').next().unwrap().to_string();
    let password = "Typed-Into-Username-9c1e5a";
    let url_password = "UrlCanaryPw-4b7d2f";
    let url = format!("https://canary-user:{url_password}@hooks.example.com/in");
    fn as_new<'a>(
        req: crate::helpers::RequestBuilder<'a>,
        raw: &str,
        client: &str,
    ) -> crate::helpers::RequestBuilder<'a> {
        req.header("x-api-key", raw)
            .header("x-service-client-id", client)
    }

    // The raw key as a query-parameter name.
    as_new(
        app.get(&format!("/devices?{raw}=1")),
        &raw,
        &admin.client_id,
    )
    .send()
    .await
    .problem(422);
    // ... as a JSON member name.
    let mut body =
        json!({"company_id": company_id("Northwind Grocers"), "name": "Canary", "headline": "H"});
    body[raw.as_str()] = json!("1");
    as_new(app.post("/ads"), &raw, &admin.client_id)
        .json(&body)
        .send()
        .await
        .problem(422);
    // ... as the Idempotency-Key of a create that succeeds (and of its replay).
    for _ in 0..2 {
        let r = as_new(app.post("/ads"), &raw, &admin.client_id)
            .header("idempotency-key", &raw)
            .json(&json!({"company_id": company_id("Northwind Grocers"), "name": "Keyed", "headline": "H"}))
            .send()
            .await;
        assert_eq!(r.status, 201, "{}", r.text());
    }
    // ... as an unknown MCP tool name, and as an argument's name.
    let unknown = mcp::rpc_error(
        &app,
        "northwind-admin",
        "tools/call",
        json!({"name": raw, "arguments": {}}),
    )
    .await;
    assert!(!unknown.to_string().contains(&secret_part), "{unknown}");
    mcp::call(&app, "northwind-admin", "list_ads", json!({raw.clone(): 1})).await;
    // A password typed into the login's username field.
    app.post("/auth/login")
        .json(&json!({"username": password, "password": "not-it"}))
        .send()
        .await
        .problem(401);
    // URLs with credentials: in a query, a body, an MCP argument.
    let encoded: String = url
        .bytes()
        .map(|b| match b {
            b':' => "%3A".to_string(),
            b'/' => "%2F".to_string(),
            b'@' => "%40".to_string(),
            _ => (b as char).to_string(),
        })
        .collect();
    as_new(
        app.get(&format!("/ads?q={encoded}")),
        &raw,
        &admin.client_id,
    )
    .send()
    .await
    .ok();
    as_new(app.post("/webhooks"), &raw, &admin.client_id)
        .json(&json!({"company_id": company_id("Northwind Grocers"), "url": url, "event_types": ["ad.created"]}))
        .send()
        .await
        .problem(422);
    mcp::call(&app, "northwind-admin", "list_ads", json!({"q": url})).await;

    // Every answer the journal gives.
    let mut answers = String::new();
    let mut cursor = String::new();
    loop {
        let page = app
            .get(&format!("/_sandbox/requests?limit=100{cursor}"))
            .key(OP)
            .send()
            .await
            .ok();
        answers.push_str(&page.to_string());
        match page["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => break,
        }
    }
    let own = app
        .get("/requests?limit=100")
        .key("northwind-admin")
        .send()
        .await
        .ok();
    answers.push_str(&own.to_string());
    let entries: Vec<Value> = own["data"].as_array().unwrap().clone();
    assert!(entries.len() >= 10, "{own}");
    for e in entries
        .iter()
        .filter(|e| e["status"].as_i64().unwrap() >= 400)
    {
        let rid = e["request_id"].as_str().unwrap();
        let one = app
            .get(&format!("/requests/{rid}"))
            .key("northwind-admin")
            .send()
            .await
            .ok();
        answers.push_str(&one.to_string());
        let explained = mcp::call(
            &app,
            "northwind-admin",
            "explain_request",
            json!({"request_id": rid}),
        )
        .await;
        answers.push_str(&explained.to_string());
    }
    assert!(
        answers.contains("[REDACTED]"),
        "the planted names show redacted"
    );
    let while_running = stored_bytes(&dir);
    app.stop().await;
    let after_stop = stored_bytes(&dir);
    assert!(
        while_running.1.iter().any(|n| n.ends_with(".requests")),
        "{:?}",
        while_running.1
    );
    assert!(
        while_running.1.iter().any(|n| n.ends_with("-wal")),
        "{:?}",
        while_running.1
    );

    for canary in [raw.as_str(), secret_part.as_str(), password, url_password] {
        assert!(!answers.contains(canary), "an answer holds {canary}");
        for (when, (bytes, names)) in [("running", &while_running), ("stopped", &after_stop)] {
            assert!(!holds(bytes, canary), "{when}: {names:?} hold {canary}");
        }
    }
    // The key is kept as its digest, and the journal can still find requests by it.
    let app = TestApp::spawn_with(|l| l.database = Some(db.clone())).await;
    let found = app
        .get(&format!("/requests?count=true&idempotency_key={raw}"))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert_eq!(found["count"], 2);
    app.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}
