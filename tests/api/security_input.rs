//! Strict input (issue 8, items 10–13): cursors of the listed kind only, JSON bodies without
//! duplicate member names, one credential per request, JWT `nbf`, filters that respect visibility,
//! a well-formed `WWW-Authenticate`, webhook targets that are not internal endpoints, and `If-Match`
//! syntax.

use crate::helpers::*;
use serde_json::{json, Value};

/// The first id of a list, as the admin of Northwind sees it.
async fn first_id(app: &TestApp, path: &str) -> String {
    let page = app.get(path).key("northwind-admin").send().await.ok();
    page["data"][0]["id"].as_str().unwrap().to_string()
}

/// Every list route declares the kind of its cursor, documents exactly that id pattern, and
/// refuses any other cursor with 422 `invalid_cursor` (it used to serve the first page).
#[tokio::test]
async fn every_list_refuses_a_cursor_that_is_not_an_id_of_its_kind() {
    let app = TestApp::spawn().await;
    let device = first_id(&app, "/devices?limit=1").await;
    let promotion = first_id(&app, "/promotions?limit=1").await;
    let doc = app.get("/openapi.json").send().await.ok();
    let mut checked = 0;
    for route in app.app.router.routes() {
        let Some(cursor) = route.query.iter().find(|p| p.name == "cursor") else {
            continue;
        };
        let path = route
            .path
            .replace("/devices/{id}", &format!("/devices/{device}"))
            .replace("/promotions/{id}", &format!("/promotions/{promotion}"));
        assert!(!path.contains('{'), "{path}: no fixture id for this path");
        let Some(kind) = route.cursor else {
            // The audit log has integer ids and its own numeric cursor.
            assert_eq!(
                route.path, "/audit-log",
                "{} declares no cursor kind",
                route.path
            );
            continue;
        };
        let prefix = kind.prefix();
        // The document states the pattern of exactly the ids the list returns.
        let documented = doc["paths"][route.path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "cursor")
            .unwrap()["schema"]["pattern"]
            .clone();
        assert_eq!(
            documented,
            format!("^{prefix}_[0-9A-Za-z]{{1,64}}$"),
            "{path}"
        );
        assert_eq!(cursor.schema, kind.schema());
        let other = if prefix == "dev" { "ad" } else { "dev" };
        for bad in [
            "garbage".to_string(),
            format!("{other}_0m5d4ruo5fepbn59k9ts"),
            format!("{prefix}_"),
            format!("{prefix}_a-b"),
            format!("{prefix}_{}", "a".repeat(65)),
            format!("{}_abc", prefix.to_uppercase()),
            "~".to_string(),
        ] {
            let r = app
                .get(&format!("{path}?cursor={bad}"))
                .key("northwind-admin")
                .send()
                .await;
            let p = r.problem(422);
            assert_eq!(p["errors"][0]["field"], "cursor", "{path} {bad}");
            assert_eq!(p["errors"][0]["code"], "invalid_cursor", "{path} {bad}");
        }
        // Any id of the kind is a keyset bound: before everything, or after everything.
        for good in [
            format!("{prefix}_0"),
            format!("{prefix}_zzzzzzzzzzzzzzzzzzzz"),
        ] {
            let r = app
                .get(&format!("{path}?cursor={good}"))
                .key("northwind-admin")
                .send()
                .await;
            assert_eq!(r.status, 200, "{path} {good}: {}", r.text());
        }
        // A real next_cursor matches the kind.
        let page = app
            .get(&format!("{path}?limit=1"))
            .key("northwind-admin")
            .send()
            .await
            .ok();
        if let Some(next) = page["next_cursor"].as_str() {
            assert!(signage::ids::is_valid(kind, next), "{path}: {next}");
            let r = app
                .get(&format!("{path}?limit=1&cursor={next}"))
                .key("northwind-admin")
                .send()
                .await;
            assert_eq!(r.status, 200, "{path}: {}", r.text());
        }
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} lists checked");
}

/// A JSON body that names a member twice is 400 `duplicate_member`, at any depth and however the
/// name is escaped, and nothing is written. It used to be "last one wins", so a check could look at
/// one value while the write used another.
#[tokio::test]
async fn a_body_with_a_duplicate_member_name_is_400_and_writes_nothing() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let devices_before = app
        .collect_all("/devices", "northwind-admin", 100)
        .await
        .len();
    let device = |extra: &str| {
        format!(
            r#"{{"company_id":"{grocers}","name":"Dup","platform":"tizen","orientation":"portrait","resolution":"1080x1920"{extra}}}"#
        )
    };
    for (path, method, body, pointer, name) in [
        ("/devices".to_string(), "POST", device(r#","name":"Other""#), "", "name"),
        ("/devices".to_string(), "POST", device(r#","n\u0061me":"Other""#), "", "name"),
        ("/devices".to_string(), "POST", device(r#","company_id":"cmp_0m5d4ruo7267avfgnhvw""#), "", "company_id"),
        (
            format!("/companies/{grocers}/branding"),
            "PATCH",
            r##"{"colors":{"primary":"#000000","primary":"#ffffff"}}"##.to_string(),
            "/colors",
            "primary",
        ),
        (
            "/auth/login".to_string(),
            "POST",
            r#"{"username":"demo@northwind.example","password":"x","password":"northwind-demo-2026"}"#.to_string(),
            "",
            "password",
        ),
    ] {
        let method: hyper::Method = method.parse().unwrap();
        let r = app
            .request(method, &path)
            .key("northwind-admin")
            .raw("application/json", body.clone())
            .send()
            .await;
        let p = r.problem(400);
        assert_eq!(p["code"], "duplicate_member", "{body}");
        let detail = p["detail"].as_str().unwrap();
        assert!(detail.contains(&format!("`{name}`")), "{detail}");
        if !pointer.is_empty() {
            assert!(detail.contains(&format!("`{pointer}`")), "{detail}");
        }
    }
    let devices_after = app
        .collect_all("/devices", "northwind-admin", 100)
        .await
        .len();
    assert_eq!(devices_before, devices_after);
    let branding = app
        .get(&format!("/companies/{grocers}/branding"))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert_ne!(branding["colors"]["primary"], "#ffffff");
    // The same name in two different objects is not a duplicate.
    let r = app
        .post("/devices")
        .key("northwind-admin")
        .json(
            &json!({"company_id": grocers, "name": "Twin", "platform": "tizen",
            "orientation": "portrait", "resolution": "1080x1920"}),
        )
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
}

/// A request carries one credential. Two (`X-API-KEY` twice, `Authorization` twice, a client id
/// twice, or `X-API-KEY` next to a different `Authorization`) is 400 `conflicting_credentials`, on
/// REST and on `/mcp` alike; it used to be "the first one wins". The same key in `X-API-KEY` and
/// `Authorization: Bearer` is one credential and is accepted.
#[tokio::test]
async fn two_credentials_in_one_request_are_400() {
    let app = TestApp::spawn().await;
    let admin = key("northwind-admin");
    let reader = key("northwind-readonly");
    let harbor = key("harborview-admin");
    let (user, password) = demo().users[0].clone();
    let token = app
        .post("/auth/login")
        .json(&json!({"username": user, "password": password}))
        .send()
        .await
        .ok()["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let bearer = |v: &str| format!("Bearer {v}");
    let cases: Vec<(&str, Vec<(&str, String)>)> = vec![
        (
            "X-API-KEY twice, same key",
            vec![
                ("x-api-key", admin.raw.clone()),
                ("x-api-key", admin.raw.clone()),
            ],
        ),
        (
            "X-API-KEY twice, two keys",
            vec![
                ("x-api-key", reader.raw.clone()),
                ("x-api-key", admin.raw.clone()),
            ],
        ),
        (
            "X-API-KEY and a Bearer of another key",
            vec![
                ("x-api-key", reader.raw.clone()),
                ("authorization", bearer(&harbor.raw)),
            ],
        ),
        (
            "X-API-KEY and a login token",
            vec![
                ("x-api-key", reader.raw.clone()),
                ("authorization", bearer(&token)),
            ],
        ),
        (
            "X-API-KEY and Basic",
            vec![
                ("x-api-key", admin.raw.clone()),
                ("authorization", "Basic YTpi".into()),
            ],
        ),
        (
            "Authorization twice",
            vec![
                ("authorization", bearer(&token)),
                ("authorization", bearer(&admin.raw)),
            ],
        ),
        (
            "Authorization twice, same token",
            vec![
                ("authorization", bearer(&token)),
                ("authorization", bearer(&token)),
            ],
        ),
        (
            "client id twice",
            vec![
                ("x-api-key", admin.raw.clone()),
                ("x-service-client-id", reader.client_id.clone()),
            ],
        ),
    ];
    for (what, headers) in &cases {
        for path in ["/companies", "/mcp"] {
            let mut req = if path == "/mcp" {
                app.post(path)
                    .header("accept", "application/json, text/event-stream")
                    .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            } else {
                app.get(path)
            };
            req = req.header("x-service-client-id", &admin.client_id);
            for (h, v) in headers {
                req = req.header(h, v);
            }
            let r = req.send().await;
            let p = r.problem(400);
            assert_eq!(p["code"], "conflicting_credentials", "{what} on {path}");
            let detail = p["detail"].as_str().unwrap();
            assert!(
                !detail.contains(&admin.raw[12..]),
                "no secret echoed: {detail}"
            );
        }
    }
    // One key, in both headers: one credential.
    let r = app
        .get("/companies")
        .header("x-api-key", &admin.raw)
        .bearer(&admin.raw)
        .header("x-service-client-id", &admin.client_id)
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    // Each header alone still works.
    for req in [
        app.get("/companies").key("northwind-admin"),
        app.get("/companies")
            .bearer(&admin.raw)
            .header("x-service-client-id", &admin.client_id),
        app.get("/companies").bearer(&token),
    ] {
        assert_eq!(req.send().await.status, 200);
    }
}

fn jwt_secret(app: &TestApp) -> Vec<u8> {
    use base64::Engine;
    let encoded: String = app.sql(|c| {
        c.query_row(
            "SELECT value FROM server_secrets WHERE name = 'jwt_hs256'",
            [],
            |r| r.get(0),
        )
    });
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap()
}

/// A login token whose `nbf` (not before) is in the future is refused (401 `invalid_token`); one
/// whose `nbf` has passed, or within the 5 s leeway, is accepted.
#[tokio::test]
async fn a_login_token_is_refused_before_its_nbf() {
    let app = TestApp::spawn().await;
    let (user, password) = demo().users[0].clone();
    let token = app
        .post("/auth/login")
        .json(&json!({"username": user, "password": password}))
        .send()
        .await
        .ok()["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let user_id = app.get("/me").bearer(&token).send().await.ok()["user_id"]
        .as_str()
        .unwrap()
        .to_string();
    let secret = jwt_secret(&app);
    let now = signage::time::now();
    let sign = |nbf: Value| {
        let claims = json!({"iss": "signage-sandbox", "aud": "signage-api", "sub": user_id,
            "iat": now - 10, "exp": now + 600, "typ": "user_session", "nbf": nbf});
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(&secret),
        )
        .unwrap()
    };
    for nbf in [
        json!(now + 60),
        json!(now + 86_400),
        json!(i64::MAX),
        json!("soon"),
    ] {
        let r = app.get("/me").bearer(&sign(nbf.clone())).send().await;
        assert_eq!(r.problem(401)["code"], "invalid_token", "nbf {nbf}");
    }
    for nbf in [json!(now - 60), json!(now), json!(now + 2)] {
        let r = app.get("/me").bearer(&sign(nbf.clone())).send().await;
        assert_eq!(r.status, 200, "nbf {nbf}: {}", r.text());
    }
}

/// `GET /ads?promotion_id=` of a promotion the credential cannot see is 404, like `device_id` and
/// `company_id`; it used to answer an empty list, which told a caller nothing was linked there.
#[tokio::test]
async fn filtering_ads_by_an_invisible_promotion_is_404() {
    let app = TestApp::spawn().await;
    let harbor_promo = app
        .get("/promotions?limit=1")
        .key("harborview-readwrite")
        .send()
        .await
        .ok()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let pharmacy = company_id("Northwind Pharmacy");
    let pharmacy_promo = app
        .get(&format!("/promotions?company_id={pharmacy}&limit=1"))
        .key("northwind-readonly")
        .send()
        .await
        .ok()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    for (key_name, promo) in [
        ("northwind-readonly", harbor_promo.as_str()),
        ("northwind-readonly", "promo_doesnotexist0000000"),
        ("northwind-grocers-write", pharmacy_promo.as_str()),
    ] {
        let r = app
            .get(&format!("/ads?promotion_id={promo}"))
            .key(key_name)
            .send()
            .await;
        assert!(r.problem(404)["detail"].as_str().unwrap().contains(promo));
    }
    // Visible: a list (those ads, possibly none).
    let r = app
        .get(&format!("/ads?promotion_id={pharmacy_promo}"))
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    for ad in r["data"].as_array().unwrap() {
        assert_eq!(ad["promotion_id"], json!(pharmacy_promo));
    }
}
