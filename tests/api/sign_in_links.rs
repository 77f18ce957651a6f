//! Tests: one-click sign-in links (`POST /auth/sign-in-links`, `POST /auth/sign-in`). A link signs
//! a tab in as the credential that made it (never wider), once, within 10 minutes, and only at a
//! loopback address or the public base URL; the token is kept nowhere a log or replay could leak it.

use crate::helpers::TestApp;
use serde_json::{json, Value};

async fn link(app: &TestApp, key: &str, body: Value) -> Value {
    let r = app
        .post("/auth/sign-in-links")
        .key(key)
        .json(&body)
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("cache-control"), Some("no-store"));
    r.json()
}

fn token_of(link: &Value) -> String {
    link["url"]
        .as_str()
        .unwrap()
        .split_once("#signin=")
        .unwrap()
        .1
        .to_string()
}

#[tokio::test]
async fn a_link_signs_in_once_as_the_credential_that_made_it() {
    let app = TestApp::spawn().await;
    let made = link(&app, "northwind-readwrite", json!({})).await;
    assert_eq!(made["object"], "sign_in_link");
    let url = made["url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("{}/console#signin=", app.base_url)),
        "{url}"
    );
    assert_eq!(
        made["path"].as_str().unwrap(),
        &url[app.base_url.len()..],
        "the same link on the caller's origin"
    );
    let token = token_of(&made);
    assert!(token.len() >= 64, "{token}");

    let r = app
        .post("/auth/sign-in")
        .json(&json!({"token": token}))
        .send()
        .await;
    let session = r.ok();
    assert_eq!(session["token_type"], "Bearer");
    assert_eq!(session["scope"], "read write");
    assert_eq!(session["path"], "/console");
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let bearer = session["access_token"].as_str().unwrap();
    let me = app.get("/me").bearer(bearer).send().await.ok();
    assert_eq!(me["type"], "api_key");
    assert_eq!(me["name"], "northwind-readwrite");
    assert_eq!(me["scopes"], json!(["read", "write"]));
    // The session acts as the key: it reads and writes what the key may.
    app.get("/companies").bearer(bearer).send().await.ok();
    // Once only.
    let again = app
        .post("/auth/sign-in")
        .json(&json!({"token": token}))
        .send()
        .await;
    assert_eq!(again.problem(401)["code"], "invalid_sign_in_link");
    let unknown = app
        .post("/auth/sign-in")
        .json(&json!({"token": "0".repeat(64)}))
        .send()
        .await;
    assert_eq!(unknown.problem(401)["code"], "invalid_sign_in_link");
}

#[tokio::test]
async fn a_session_is_never_wider_than_its_key_and_ends_with_it() {
    let app = TestApp::spawn().await;
    let admin = crate::helpers::key("northwind-admin");
    let made = app
        .post("/api-keys")
        .key("northwind-admin")
        .json(&json!({"client_id": admin.client_id, "name": "Link check", "scopes": ["read"]}))
        .send()
        .await
        .ok();
    let raw = made["rawKey"].as_str().unwrap();
    let r = app
        .post("/auth/sign-in-links")
        .header("x-api-key", raw)
        .header("x-service-client-id", &admin.client_id)
        .json(&json!({}))
        .send()
        .await;
    let token = token_of(&r.ok());
    let session = app
        .post("/auth/sign-in")
        .json(&json!({"token": token}))
        .send()
        .await
        .ok();
    let bearer = session["access_token"].as_str().unwrap().to_string();
    assert_eq!(session["scope"], "read");
    let grocers = crate::helpers::company_id("Northwind Grocers");
    let write = app
        .post("/ads")
        .bearer(&bearer)
        .json(&json!({"company_id": grocers, "name": "x", "headline": "x"}))
        .send()
        .await;
    assert!(
        write.problem(403)["missing_scope"].is_string(),
        "a read key's session cannot write"
    );
    app.post(&format!(
        "/api-keys/{}/revoke",
        made["id"].as_str().unwrap()
    ))
    .key("northwind-admin")
    .send()
    .await
    .ok();
    let after = app.get("/companies").bearer(&bearer).send().await;
    assert_eq!(after.problem(401)["code"], "revoked_key");
}

#[tokio::test]
async fn a_link_opens_only_on_loopback_or_the_public_base() {
    let app = TestApp::spawn_with(|l| {
        l.public_base_url = Some("http://demo.example:8080".into());
    })
    .await;
    let made = link(&app, "northwind-readwrite", json!({"path": "/console"})).await;
    assert!(made["url"]
        .as_str()
        .unwrap()
        .starts_with("http://demo.example:8080/console#signin="));
    let token = token_of(&made);
    for (host, origin, code) in [
        ("evil.example", None, "host_not_allowed"),
        ("demo.example:9090", None, "host_not_allowed"),
        (
            "127.0.0.1:8080",
            Some("http://evil.example"),
            "origin_not_allowed",
        ),
        // A sandboxed frame or a `file:` page names no site: refused too.
        ("127.0.0.1:8080", Some("null"), "origin_not_allowed"),
    ] {
        let mut req = app
            .post("/auth/sign-in")
            .header("host", host)
            .json(&json!({"token": token}));
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        let r = req.send().await;
        assert_eq!(r.problem(403)["code"], code, "{host} {origin:?}");
    }
    // A refused host used nothing up: the link still works where it may.
    let r = app
        .post("/auth/sign-in")
        .header("host", "demo.example:8080")
        .header("origin", "http://demo.example:8080")
        .json(&json!({"token": token}))
        .send()
        .await;
    r.ok();
}

#[tokio::test]
async fn a_player_link_names_a_screen_the_caller_sees() {
    let app = TestApp::spawn().await;
    let screen = app
        .get(&format!(
            "/devices?company_id={}&limit=1",
            crate::helpers::company_id("Northwind Grocers")
        ))
        .key("northwind-readwrite")
        .send()
        .await
        .ok()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let made = link(
        &app,
        "northwind-readwrite",
        json!({"path": format!("/player/{screen}?slot=5")}),
    )
    .await;
    assert!(made["path"]
        .as_str()
        .unwrap()
        .starts_with(&format!("/player/{screen}?slot=5#signin=")));
    // Another account's screen is the same 404 as one that does not exist.
    let r = app
        .post("/auth/sign-in-links")
        .key("harborview-readwrite")
        .json(&json!({"path": format!("/player/{screen}")}))
        .send()
        .await;
    r.problem(404);
    let missing = app
        .post("/auth/sign-in-links")
        .key("northwind-readwrite")
        .json(&json!({"path": "/player/dev_0000000000zzzzzzzzzz"}))
        .send()
        .await;
    missing.problem(404);
    for bad in [
        "/",
        "https://evil.example/console",
        "/player/x",
        "/console?x=1",
        "/player/dev_0m5d4rura41qxb8vdg0l?slot=0",
    ] {
        let r = app
            .post("/auth/sign-in-links")
            .key("northwind-readwrite")
            .json(&json!({"path": bad}))
            .send()
            .await;
        assert_eq!(r.problem(422)["errors"][0]["code"], "invalid_path", "{bad}");
    }
    let anonymous = app
        .post("/auth/sign-in-links")
        .json(&json!({}))
        .send()
        .await;
    anonymous.problem(401);
}

#[tokio::test]
async fn the_token_reaches_no_replay_cache_and_no_journal() {
    let app = TestApp::spawn().await;
    // An Idempotency-Key is not honoured: a second call makes a second link, nothing is replayed.
    let first = app
        .post("/auth/sign-in-links")
        .key("northwind-readwrite")
        .header("idempotency-key", "same-key-twice")
        .json(&json!({}))
        .send()
        .await
        .ok();
    let second = app
        .post("/auth/sign-in-links")
        .key("northwind-readwrite")
        .header("idempotency-key", "same-key-twice")
        .json(&json!({}))
        .send()
        .await
        .ok();
    assert_ne!(first["url"], second["url"]);
    let token = token_of(&first);
    let r = app
        .post("/auth/sign-in")
        .json(&json!({"token": token}))
        .send()
        .await;
    let bearer = r.ok()["access_token"].as_str().unwrap().to_string();
    let stored: Vec<String> = app.sql(|c| {
        let mut out = Vec::new();
        for table in ["idempotency_keys", "audit_log", "events"] {
            let rows: Vec<String> = c
                .prepare(&format!("SELECT * FROM {table}"))?
                .query_map([], |r| {
                    let n = r.as_ref().column_count();
                    Ok((0..n)
                        .map(|i| format!("{:?}", r.get_ref(i).ok()))
                        .collect::<Vec<_>>()
                        .join("|"))
                })?
                .collect::<Result<_, _>>()?;
            out.extend(rows);
        }
        Ok(out)
    });
    for row in &stored {
        assert!(!row.contains(&token), "the link's token is stored: {row}");
        assert!(!row.contains(&bearer), "the session token is stored: {row}");
    }
    // The journal keeps the calls, never the token.
    let journal = app
        .get("/requests?limit=100")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    let text = journal.to_string();
    assert!(
        text.contains("redeemSignInLink") || text.contains("createSignInLink"),
        "{text}"
    );
    assert!(!text.contains(&token) && !text.contains(&bearer), "{text}");
    // The operator's view of every request (a public call that succeeded is nobody's and is not
    // kept at all) holds neither token.
    let all = app
        .get("/_sandbox/requests?limit=100")
        .key("sandbox-operator")
        .send()
        .await
        .ok()
        .to_string();
    assert!(!all.contains(&token) && !all.contains(&bearer), "{all}");
}

/// A link needs no body (the defaults: the console), and the reference says so; redeeming one
/// documents its 401.
#[tokio::test]
async fn a_link_needs_no_body_and_the_reference_says_so() {
    let app = TestApp::spawn().await;
    let r = app
        .post("/auth/sign-in-links")
        .key("northwind-readwrite")
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json()["path"].as_str().unwrap().split('#').next(),
        Some("/console")
    );
    let doc = app.get("/openapi.json").send().await.ok();
    let create = &doc["paths"]["/auth/sign-in-links"]["post"];
    assert_eq!(create["requestBody"]["required"], false, "{create}");
    let redeem = &doc["paths"]["/auth/sign-in"]["post"];
    assert_eq!(redeem["requestBody"]["required"], true);
    assert!(redeem["responses"]["401"].is_object(), "{redeem}");
}

/// A screen holds only what a screen needs: a player link made by an admin key signs the player
/// in for its one screen. It reads that screen, what it plays and its company's branding, posts
/// its heartbeats and plays; every other operation is 403 `screen-credential` and another screen
/// is 404, so a screen's browser cannot mint keys, list the fleet or touch the sandbox.
#[tokio::test]
async fn a_player_session_acts_for_its_one_screen_only() {
    let app = TestApp::spawn().await;
    let grocers = crate::helpers::company_id("Northwind Grocers");
    let screens: Vec<String> = app
        .get(&format!("/devices?company_id={grocers}&limit=2"))
        .key("northwind-admin")
        .send()
        .await
        .ok()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect();
    let (screen, other) = (&screens[0], &screens[1]);
    let made = link(
        &app,
        "northwind-admin",
        json!({"path": format!("/player/{screen}")}),
    )
    .await;
    let session = app
        .post("/auth/sign-in")
        .json(&json!({"token": token_of(&made)}))
        .send()
        .await
        .ok();
    let bearer = session["access_token"].as_str().unwrap().to_string();
    // Narrower than the admin key that made it, and never `admin` or `sandbox`.
    let scope = session["scope"].as_str().unwrap();
    assert!(
        !scope.contains("admin") && !scope.contains("sandbox"),
        "{scope}"
    );

    // What the player does.
    let device = app
        .get(&format!("/devices/{screen}"))
        .bearer(&bearer)
        .send()
        .await
        .ok();
    app.get(&format!("/devices/{screen}/ads"))
        .bearer(&bearer)
        .send()
        .await
        .ok();
    app.get(&format!(
        "/companies/{}",
        device["company_id"].as_str().unwrap()
    ))
    .bearer(&bearer)
    .send()
    .await
    .ok();
    let beat = app
        .post(&format!("/devices/{screen}/heartbeat"))
        .bearer(&bearer)
        .json(&json!({}))
        .send()
        .await;
    assert!(beat.status.is_success(), "{}", beat.text());

    // Another screen of the same company is not found, to read or to report for.
    app.get(&format!("/devices/{other}"))
        .bearer(&bearer)
        .send()
        .await
        .problem(404);
    app.post(&format!("/devices/{other}/heartbeat"))
        .bearer(&bearer)
        .json(&json!({}))
        .send()
        .await
        .problem(404);
    // Nothing a screen never does.
    let client = crate::helpers::key("northwind-admin").client_id;
    for (method, path, body) in [
        ("GET", "/devices".to_string(), None),
        ("GET", "/api-keys".to_string(), None),
        (
            "POST",
            "/api-keys".to_string(),
            Some(json!({"client_id": client, "name": "x", "scopes": ["admin"]})),
        ),
        ("POST", "/auth/sign-in-links".to_string(), Some(json!({}))),
        (
            "PATCH",
            format!("/devices/{screen}"),
            Some(json!({"name": "Mine now"})),
        ),
        ("GET", "/_sandbox/clock".to_string(), None),
        (
            "POST",
            "/_sandbox/clock/advance".to_string(),
            Some(json!({"seconds": 60})),
        ),
    ] {
        let mut r = app.request(method.parse().unwrap(), &path).bearer(&bearer);
        if let Some(b) = &body {
            r = r.json(b);
        }
        let p = r.send().await.problem(403);
        assert_eq!(
            p["type"], "/problems/screen-credential",
            "{method} {path}: {p}"
        );
    }
}
