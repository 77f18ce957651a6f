//! Credentials: API keys (headers, failures, scopes, company scope, rotation, revocation), the
//! login JWT, management endpoints, the CLI, and where secrets may and may not appear.

use crate::helpers::*;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::Duration;

fn ids(list: &Value) -> BTreeSet<String> {
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn get_companies_returns_exactly_what_each_demo_key_may_see() {
    let app = TestApp::spawn().await;
    for k in demo().keys.iter().filter(|k| k.status == "active") {
        let r = app.get("/companies").key(&k.name).send().await;
        let expected: BTreeSet<String> = demo()
            .companies
            .iter()
            .filter(|(id, _, account)| {
                *account == k.account_id && k.company_scope.as_ref().is_none_or(|c| c == id)
            })
            .map(|(id, _, _)| id.clone())
            .collect();
        let allowed = k.scopes.iter().any(|s| {
            [
                "read",
                "write",
                "admin",
                "companies:read",
                "companies:write",
            ]
            .contains(&s.as_str())
        });
        if allowed {
            assert_eq!(ids(&r.ok()), expected, "{}", k.name);
        } else {
            assert_eq!(
                r.problem(403)["missing_scope"],
                "companies:read",
                "{}",
                k.name
            );
        }
    }
}

#[tokio::test]
async fn the_key_is_accepted_in_either_header() {
    let app = TestApp::spawn().await;
    let k = key("northwind-readonly");
    let r = app
        .get("/companies")
        .bearer(&k.raw)
        .header("x-service-client-id", &k.client_id)
        .send()
        .await;
    assert_eq!(ids(&r.ok()).len(), 2);
}

#[tokio::test]
async fn authentication_failures_say_which_with_www_authenticate() {
    let app = TestApp::spawn().await;
    let k = key("northwind-readonly");
    let other = key("northwind-readwrite");
    let mut typo = k.raw.clone().into_bytes();
    typo[20] = if typo[20] == b'A' { b'B' } else { b'A' };
    let typo = String::from_utf8(typo).unwrap();
    let unknown = signage::auth::keys::generate(None).raw;
    let cases: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("missing_credential", vec![]),
        ("missing_client_id", vec![("x-api-key", k.raw.clone())]),
        (
            "malformed_key",
            vec![
                ("x-api-key", "not-a-key".into()),
                ("x-service-client-id", k.client_id.clone()),
            ],
        ),
        (
            "malformed_key",
            vec![
                ("x-api-key", typo.clone()),
                ("x-service-client-id", k.client_id.clone()),
            ],
        ),
        (
            "unknown_key",
            vec![
                ("x-api-key", unknown),
                ("x-service-client-id", k.client_id.clone()),
            ],
        ),
        (
            "client_mismatch",
            vec![
                ("x-api-key", k.raw.clone()),
                ("x-service-client-id", other.client_id.clone()),
            ],
        ),
        (
            "revoked_key",
            vec![
                ("x-api-key", key("northwind-revoked").raw),
                ("x-service-client-id", key("northwind-revoked").client_id),
            ],
        ),
        (
            "expired_key",
            vec![
                ("x-api-key", key("northwind-expired").raw),
                ("x-service-client-id", key("northwind-expired").client_id),
            ],
        ),
        (
            "invalid_token",
            vec![(
                "authorization",
                "Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc".into(),
            )],
        ),
    ];
    for (code, headers) in cases {
        let mut req = app.get("/companies");
        for (h, v) in &headers {
            req = req.header(h, v);
        }
        let r = req.send().await;
        let body = r.problem(401);
        assert_eq!(body["code"], code, "{headers:?}");
        assert!(r
            .header("www-authenticate")
            .unwrap()
            .starts_with("Bearer realm=\"signage\""));
        for (_, v) in &headers {
            if v.len() > 20 {
                assert!(!r.text().contains(v.as_str()), "the credential was echoed");
            }
        }
    }
}

#[tokio::test]
async fn a_malformed_key_never_reaches_the_database() {
    let app = TestApp::spawn().await;
    // With the key table gone, any lookup fails loudly; a malformed key must still be a clean 401.
    app.sql(|c| c.execute_batch("PRAGMA foreign_keys=OFF; DROP TABLE api_keys;"));
    let k = key("northwind-readonly");
    let r = app
        .get("/companies")
        .header("x-api-key", &k.raw[..k.raw.len() - 1])
        .header("x-service-client-id", &k.client_id)
        .send()
        .await;
    assert_eq!(r.problem(401)["code"], "malformed_key");
    let r = app.get("/companies").key("northwind-readonly").send().await;
    assert_eq!(
        r.status, 500,
        "a well-formed key does reach the (broken) database"
    );
}

#[tokio::test]
async fn missing_scope_is_403_naming_it_and_other_companies_are_404() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let pharmacy = company_id("Northwind Pharmacy");
    let hotels = company_id("Harborview Hotels");
    let r = app
        .patch(&format!("/companies/{grocers}/branding"))
        .key("northwind-readonly")
        .json(&json!({"corner_radius_px": 3}))
        .send()
        .await;
    assert_eq!(r.problem(403)["missing_scope"], "companies:write");
    // Company-scoped key: the sibling company does not exist for it.
    app.get(&format!("/companies/{pharmacy}"))
        .key("northwind-grocers-write")
        .send()
        .await
        .problem(404);
    app.get(&format!("/companies/{pharmacy}/branding"))
        .key("northwind-grocers-write")
        .send()
        .await
        .problem(404);
    app.patch(&format!("/companies/{pharmacy}/branding"))
        .key("northwind-grocers-write")
        .json(&json!({"corner_radius_px": 3}))
        .send()
        .await
        .problem(404);
    // Another account's company, and a company that does not exist, answer the same.
    let a = app
        .get(&format!("/companies/{hotels}"))
        .key("northwind-readwrite")
        .send()
        .await
        .problem(404);
    let b = app
        .get("/companies/cmp_doesnotexist000000000")
        .key("northwind-readwrite")
        .send()
        .await
        .problem(404);
    assert_eq!(a["title"], b["title"]);
    app.get(&format!("/companies/{hotels}"))
        .key("harborview-readwrite")
        .send()
        .await
        .ok();
    // Nothing was written by the refused requests.
    let radius: i64 = app.sql(|c| {
        c.query_row(
            "SELECT corner_radius_px FROM brandings WHERE company_id = ?1",
            [&pharmacy],
            |r| r.get(0),
        )
    });
    assert_ne!(radius, 3);
}

#[tokio::test]
async fn fine_grained_scopes_grant_only_their_area() {
    let app = TestApp::spawn().await;
    let r = app
        .get("/me")
        .key("harborview-hotels-billing")
        .send()
        .await
        .ok();
    assert_eq!(r["scopes"], json!(["billing:read", "tokens:read"]));
    assert_eq!(r["companyScope"], json!(company_id("Harborview Hotels")));
    app.get("/companies")
        .key("harborview-hotels-billing")
        .send()
        .await
        .problem(403);
    app.get("/api-keys")
        .key("northwind-readwrite")
        .send()
        .await
        .problem(403);
}

async fn create_key(app: &TestApp, body: Value) -> Value {
    let r = app
        .post("/api-keys")
        .key("northwind-admin")
        .json(&body)
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("cache-control"), Some("no-store"));
    r.json()
}

#[tokio::test]
async fn admin_manages_clients_and_keys_and_listings_never_show_secrets() {
    let app = TestApp::spawn().await;
    let client = app
        .post("/api-clients")
        .key("northwind-admin")
        .json(&json!({"name": "Kiosk app", "description": "lobby kiosks"}))
        .send()
        .await;
    assert_eq!(client.status, 201);
    let client = client.json();
    assert!(client["id"].as_str().unwrap().starts_with("cli_"));
    let grocers = company_id("Northwind Grocers");
    let created = create_key(&app, json!({"client_id": client["id"], "name": "kiosk", "scopes": ["devices:read", "ads:write"], "companyScope": grocers})).await;
    let raw = created["rawKey"].as_str().unwrap().to_string();
    assert!(raw.starts_with("sgn_test_"));
    assert_eq!(
        created["last_four"].as_str().unwrap(),
        &raw[raw.len() - 4..]
    );
    // The new key works at once, with exactly its scopes and company.
    let me = app
        .get("/me")
        .header("x-api-key", &raw)
        .header("x-service-client-id", client["id"].as_str().unwrap())
        .send()
        .await
        .ok();
    assert_eq!(me["companyScope"], json!(grocers));
    assert_eq!(me["visible_company_ids"], json!([grocers]));
    // Get and list never carry the secret or its hash.
    let got = app
        .get(&format!("/api-keys/{}", created["id"].as_str().unwrap()))
        .key("northwind-admin")
        .send()
        .await;
    let list = app
        .get(&format!(
            "/api-keys?client_id={}",
            client["id"].as_str().unwrap()
        ))
        .key("northwind-admin")
        .send()
        .await;
    let all = app.collect_all("/api-keys", "northwind-admin", 3).await;
    for text in [
        got.text(),
        list.text(),
        serde_json::to_string(&all).unwrap(),
    ] {
        assert!(!text.contains(&raw) && !text.contains("rawKey") && !text.contains("secret_hash"));
    }
    assert_eq!(list.json()["data"].as_array().unwrap().len(), 1);
    // Only this account's keys, and no secrets of the fixtures either.
    assert!(all
        .iter()
        .all(|k| k["client_id"] != json!(key("harborview-admin").client_id)));
    assert!(all.len() >= 8);
    for k in &demo().keys {
        assert!(!serde_json::to_string(&all).unwrap().contains(&k.raw));
    }
    // Validation and reach.
    let r = app
        .post("/api-keys")
        .key("northwind-admin")
        .json(&json!({"client_id": client["id"], "name": "x", "scopes": ["root"]}))
        .send()
        .await;
    assert_eq!(r.problem(422)["errors"][0]["field"], "/scopes");
    let r = app
        .post("/api-keys")
        .key("northwind-admin")
        .json(&json!({"client_id": client["id"], "name": "x", "scopes": ["read"], "extra": 1}))
        .send()
        .await;
    r.problem(422);
    let r = app.post("/api-keys").key("northwind-admin").json(&json!({"client_id": key("harborview-admin").client_id, "name": "x", "scopes": ["read"]})).send().await;
    r.problem(404);
    let r = app.post("/api-keys").key("northwind-admin").json(&json!({"client_id": client["id"], "name": "x", "scopes": ["read"], "companyScope": company_id("Harborview Hotels")})).send().await;
    r.problem(404);
    app.get(&format!("/api-keys/{}", key("harborview-admin").key_id))
        .key("northwind-admin")
        .send()
        .await
        .problem(404);
}

#[tokio::test]
async fn revocation_takes_effect_on_the_very_next_request() {
    let app = TestApp::spawn().await;
    let k = key("northwind-readwrite");
    app.get("/companies").key(&k.name).send().await.ok();
    let revoked = app
        .post(&format!("/api-keys/{}/revoke", k.key_id))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert_eq!(revoked["status"], "revoked");
    assert_eq!(
        app.get("/companies").key(&k.name).send().await.problem(401)["code"],
        "revoked_key"
    );
}

#[tokio::test]
async fn rotation_keeps_the_old_key_for_the_grace_period_then_refuses_it() {
    let app = TestApp::spawn().await;
    let old = key("northwind-readonly");
    let r = app
        .post(&format!("/api-keys/{}/rotate", old.key_id))
        .key("northwind-admin")
        .json(&json!({"grace_period_seconds": 2}))
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let rotation = r.json();
    let new_raw = rotation["new_key"]["rawKey"].as_str().unwrap().to_string();
    assert_eq!(
        rotation["previous_key"]["replaced_by"],
        rotation["new_key"]["id"]
    );
    assert_eq!(rotation["new_key"]["scopes"], json!(["read"]));
    let with_new = || {
        app.get("/companies")
            .header("x-api-key", &new_raw)
            .header("x-service-client-id", &old.client_id)
    };
    with_new().send().await.ok();
    app.get("/companies").key(&old.name).send().await.ok();
    tokio::time::sleep(Duration::from_millis(2600)).await;
    assert_eq!(
        app.get("/companies")
            .key(&old.name)
            .send()
            .await
            .problem(401)["code"],
        "expired_key"
    );
    with_new().send().await.ok();
    // The default grace period is 24 hours.
    let r = app
        .post(&format!(
            "/api-keys/{}/rotate",
            key("northwind-readwrite").key_id
        ))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    let expires =
        signage::time::parse_rfc3339(r["previous_key"]["expires_at"].as_str().unwrap()).unwrap();
    let delta = expires - signage::time::wall_now();
    assert!((86_000..=86_400).contains(&delta), "{delta}");
    // A revoked key cannot be rotated.
    app.post(&format!(
        "/api-keys/{}/rotate",
        key("northwind-revoked").key_id
    ))
    .key("northwind-admin")
    .send()
    .await
    .problem(409);
}

#[tokio::test]
async fn last_used_at_is_recorded_at_most_once_a_minute() {
    // On the sandbox clock, so "a minute later" is exact.
    let app = crate::sandbox_clock::frozen_without_fleet().await;
    let k = key("northwind-readonly");
    app.sql(|c| {
        c.execute(
            "UPDATE api_keys SET last_used_at = NULL WHERE id = ?1",
            [&k.key_id],
        )
    });
    let last_used = || -> i64 {
        app.sql(|c| {
            c.query_row(
                "SELECT last_used_at FROM api_keys WHERE id = ?1",
                [&k.key_id],
                |r| r.get(0),
            )
        })
    };
    let advance = |seconds: i64| {
        app.post("/_sandbox/clock/advance")
            .key("sandbox-operator")
            .json(&json!({ "seconds": seconds }))
            .send()
    };
    app.get("/companies").key(&k.name).send().await.ok();
    let first = last_used();
    assert_eq!(
        first,
        signage::time::parse_rfc3339("2026-03-02T09:00:00Z").unwrap()
    );
    advance(59).await.ok();
    app.get("/companies").key(&k.name).send().await.ok();
    assert_eq!(last_used(), first, "written again within a minute");
    advance(1).await.ok();
    app.get("/companies").key(&k.name).send().await.ok();
    assert_eq!(last_used(), first + 60);
}

#[tokio::test]
async fn login_tokens_are_validated_strictly() {
    let app = TestApp::spawn().await;
    let (user, password) = demo().users[0].clone();
    let r = app
        .post("/auth/login")
        .json(&json!({"username": user, "password": password}))
        .send()
        .await;
    let body = r.ok();
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 3600);
    let token = body["access_token"].as_str().unwrap().to_string();
    let me = app.get("/me").bearer(&token).send().await.ok();
    assert_eq!(me["type"], "user");
    assert_eq!(me["username"], json!(user));

    let secret = app.jwt_secret();
    let user_id = me["user_id"].as_str().unwrap().to_string();
    let now = signage::time::wall_now();
    let claims = |iss: &str, aud: &str, exp: i64, typ: &str| json!({"iss": iss, "aud": aud, "sub": user_id, "iat": now - 10, "exp": exp, "typ": typ});
    let sign = |alg: Algorithm, c: &Value, key: &[u8]| {
        encode(&Header::new(alg), c, &EncodingKey::from_secret(key)).unwrap()
    };
    let good = claims("signage-sandbox", "signage-api", now + 600, "user_session");
    let b64 = |v: &Value| {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
    };
    let table: Vec<(&str, String, u16)> = vec![
        ("valid", sign(Algorithm::HS256, &good, &secret), 200),
        (
            "expired",
            sign(
                Algorithm::HS256,
                &claims("signage-sandbox", "signage-api", now - 120, "user_session"),
                &secret,
            ),
            401,
        ),
        (
            "alg none",
            format!(
                "{}.{}.",
                b64(&json!({"alg": "none", "typ": "JWT"})),
                b64(&good)
            ),
            401,
        ),
        (
            // Signed by hand: the server's own JWT provider signs HS256 only, an attacker's need not.
            "alg swapped to HS512",
            {
                use hmac::Mac;
                let input = format!(
                    "{}.{}",
                    b64(&json!({"alg": "HS512", "typ": "JWT"})),
                    b64(&good)
                );
                let mut mac = hmac::Hmac::<sha2::Sha512>::new_from_slice(&secret).unwrap();
                mac.update(input.as_bytes());
                use base64::Engine;
                let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(mac.finalize().into_bytes());
                format!("{input}.{sig}")
            },
            401,
        ),
        (
            "wrong aud",
            sign(
                Algorithm::HS256,
                &claims("signage-sandbox", "other-api", now + 600, "user_session"),
                &secret,
            ),
            401,
        ),
        (
            "wrong iss",
            sign(
                Algorithm::HS256,
                &claims("evil", "signage-api", now + 600, "user_session"),
                &secret,
            ),
            401,
        ),
        (
            "wrong typ",
            sign(
                Algorithm::HS256,
                &claims("signage-sandbox", "signage-api", now + 600, "refresh"),
                &secret,
            ),
            401,
        ),
        (
            "bad signature",
            sign(
                Algorithm::HS256,
                &good,
                b"another-secret-another-secret-another-secret",
            ),
            401,
        ),
    ];
    for (name, token, status) in table {
        let r = app.get("/me").bearer(&token).send().await;
        assert_eq!(r.status.as_u16(), status, "{name}: {}", r.text());
        if status == 401 {
            let code = r.json()["code"].as_str().unwrap().to_string();
            let expected = if name == "expired" {
                "expired_token"
            } else {
                "invalid_token"
            };
            assert_eq!(code, expected, "{name}");
        }
    }
}

#[tokio::test]
async fn login_failures_are_throttled_and_audited_without_secrets() {
    let app = TestApp::spawn().await;
    let (user, password) = demo().users[1].clone();
    for _ in 0..5 {
        let r = app
            .post("/auth/login")
            .json(&json!({"username": user, "password": "wrong-password"}))
            .send()
            .await;
        assert_eq!(r.problem(401)["code"], "invalid_credentials");
    }
    let r = app
        .post("/auth/login")
        .json(&json!({"username": user, "password": password}))
        .send()
        .await;
    r.problem(429);
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=300).contains(&retry));
    // Another user from the same address is not yet blocked.
    let (other, other_password) = demo().users[0].clone();
    app.login(&other, &other_password).await;
    // Failures are aggregated per minute: the five are one or two rows whose counts add up.
    let audit: Vec<(String, i64, String, i64)> = app.sql(|c| {
        c.prepare("SELECT route, status, outcome, count FROM audit_log ORDER BY id")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect()
    });
    let failures: Vec<_> = audit
        .iter()
        .filter(|(route, status, ..)| route == "/auth/login" && *status == 401)
        .collect();
    assert!((1..=2).contains(&failures.len()), "{failures:?}");
    assert_eq!(failures.iter().map(|f| f.3).sum::<i64>(), 5);
    let dump: String = app.sql(|c| c.query_row("SELECT group_concat(coalesce(actor,'') || route || outcome || request_id, '|') FROM audit_log", [], |r| r.get(0)));
    assert!(!dump.contains("wrong-password") && !dump.contains(&password));
}

#[tokio::test]
async fn unknown_users_and_bad_bodies_are_refused_and_login_can_be_disabled() {
    let app = TestApp::spawn().await;
    let r = app
        .post("/auth/login")
        .json(&json!({"username": "nobody@example.com", "password": "x"}))
        .send()
        .await;
    assert_eq!(r.problem(401)["code"], "invalid_credentials");
    app.post("/auth/login")
        .json(&json!({"username": "a"}))
        .send()
        .await
        .problem(422);
    app.post("/auth/login")
        .raw("application/json", "{not json")
        .send()
        .await
        .problem(400);
    app.post("/auth/login")
        .raw("text/plain", "hi")
        .send()
        .await
        .problem(415);
    let disabled = TestApp::spawn_with(|l| l.login_enabled = Some(false)).await;
    let (user, password) = demo().users[0].clone();
    disabled
        .post("/auth/login")
        .json(&json!({"username": user, "password": password}))
        .send()
        .await
        .problem(404);
}

#[tokio::test]
async fn every_write_and_auth_failure_is_audited() {
    let app = TestApp::spawn().await;
    app.get("/companies")
        .header("x-api-key", "sgn_test_nope")
        .send()
        .await
        .problem(401);
    let grocers = company_id("Northwind Grocers");
    app.patch(&format!("/companies/{grocers}/branding"))
        .key("northwind-readwrite")
        .json(&json!({"corner_radius_px": 9}))
        .send()
        .await
        .ok();
    type AuditRow = (
        Option<String>,
        Option<String>,
        String,
        String,
        i64,
        String,
        String,
    );
    let rows: Vec<AuditRow> = app.sql(|c| {
        c.prepare("SELECT actor, client_id, method, route, status, outcome, request_id FROM audit_log ORDER BY id")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)))?
            .collect()
    });
    assert!(rows
        .iter()
        .any(|r| r.0.is_none() && r.3 == "/companies" && r.4 == 401 && r.5 == "malformed_key"));
    let k = key("northwind-readwrite");
    assert!(rows
        .iter()
        .any(|r| r.0.as_deref() == Some(k.key_id.as_str())
            && r.1.as_deref() == Some(k.client_id.as_str())
            && r.2 == "PATCH"
            && r.3 == "/companies/{id}/branding"
            && r.4 == 200
            && r.5 == "ok"
            && r.6.starts_with("req_")));
    let listed = app
        .get("/audit-log?limit=100")
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert!(listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["route"] == "/companies/{id}/branding"));
}

#[tokio::test]
async fn no_raw_key_or_password_is_stored_in_the_database_file() {
    let dir = std::env::temp_dir().join(format!("signage-secrets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.db");
    let _ = std::fs::remove_file(&path);
    let db = path.to_str().unwrap().to_string();
    {
        let app = TestApp::spawn_with(|l| l.database = Some(db.clone())).await;
        for k in &demo().keys {
            app.get("/companies").key(&k.name).send().await;
        }
        let (user, password) = demo().users[0].clone();
        app.login(&user, &password).await;
        let created = app.post("/api-keys").key("northwind-admin").json(&json!({"client_id": key("northwind-admin").client_id, "name": "n", "scopes": ["read"]})).send().await.ok();
        let raw = created["rawKey"].as_str().unwrap().to_string();
        app.sql(|c| c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)"));
        let mut bytes = std::fs::read(&path).unwrap();
        if let Ok(wal) = std::fs::read(format!("{db}-wal")) {
            bytes.extend(wal);
        }
        let hay = String::from_utf8_lossy(&bytes);
        for k in &demo().keys {
            assert!(!hay.contains(&k.raw), "raw key {} stored", k.name);
            let secret_part = &k.raw[26..58];
            assert!(
                !hay.contains(secret_part),
                "secret part of {} stored",
                k.name
            );
        }
        assert!(!hay.contains(&raw));
        for (_, password) in &demo().users {
            assert!(!hay.contains(password.as_str()));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_cli_manages_clients_keys_and_users_on_a_database_file() {
    let dir = std::env::temp_dir().join(format!("signage-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("cli.db").to_str().unwrap().to_string();
    let bin = env!("CARGO_BIN_EXE_signage");
    let run = |args: &[&str], stdin: Option<&str>| -> Value {
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .args(["--database", &db])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        if let Some(input) = stdin {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
        } else {
            drop(child.stdin.take());
        }
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let account = demo().companies[0].2.clone();
    let client = run(
        &[
            "clients",
            "create",
            "--account",
            &account,
            "--name",
            "cli client",
        ],
        None,
    );
    let client_id = client["id"].as_str().unwrap().to_string();
    let clients = run(&["clients", "list", "--account", &account], None);
    assert!(clients
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["id"] == client["id"]));
    let created = run(
        &[
            "keys",
            "create",
            "--client",
            &client_id,
            "--name",
            "ops",
            "--scopes",
            "read,devices:write",
        ],
        None,
    );
    let raw = created["rawKey"].as_str().unwrap().to_string();
    let listed = run(&["keys", "list", "--client", &client_id], None);
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert!(!listed.to_string().contains(&raw));
    let rotated = run(
        &[
            "keys",
            "rotate",
            created["id"].as_str().unwrap(),
            "--grace-secs",
            "60",
        ],
        None,
    );
    let new_raw = rotated["new_key"]["rawKey"].as_str().unwrap().to_string();
    let revoked = run(
        &["keys", "revoke", rotated["new_key"]["id"].as_str().unwrap()],
        None,
    );
    assert_eq!(revoked["status"], "revoked");
    let user = run(
        &[
            "users",
            "create",
            "--account",
            &account,
            "--username",
            "ops@example.com",
            "--role",
            "editor",
        ],
        Some("a-long-enough-password\n"),
    );
    assert_eq!(user["role"], "editor");
    // The server on that file honours what the CLI did.
    let app = TestApp::spawn_with(|l| l.database = Some(db.clone())).await;
    let r = app
        .get("/me")
        .header("x-api-key", &raw)
        .header("x-service-client-id", &client_id)
        .send()
        .await
        .ok();
    assert_eq!(r["scopes"], json!(["read", "devices:write"]));
    let r = app
        .get("/me")
        .header("x-api-key", &new_raw)
        .header("x-service-client-id", &client_id)
        .send()
        .await;
    assert_eq!(r.problem(401)["code"], "revoked_key");
    let token = app.login("ops@example.com", "a-long-enough-password").await;
    assert_eq!(
        app.get("/me").bearer(&token).send().await.ok()["scopes"],
        json!(["read", "write"])
    );
    drop(app);
    let _ = std::fs::remove_dir_all(&dir);
}
