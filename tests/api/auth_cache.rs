//! Issue 33: authentication from a cache checked on every request. Each test tries to make the
//! cache answer for something the database no longer says: another process's revocation, a
//! forged secret under a cached key id, another client, an expiry or a grace period that passes
//! without any write, a snapshot restore, a company that moves.

use crate::helpers::mcp;
use crate::helpers::*;
use serde_json::json;
use std::process::Command;
use std::time::Duration;

/// `signage keys revoke` run by another process on the server's own database file.
fn revoke_from_another_process(app: &TestApp, key_id: &str) {
    let db = app.app.db.path().to_str().unwrap().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_signage"))
        .args(["keys", "revoke", "--database", &db, key_id])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn generations(app: &TestApp) -> (i64, i64) {
    app.sql(|c| {
        c.query_row(
            "SELECT credentials, devices FROM cache_generations",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    })
}

#[tokio::test]
async fn a_key_revoked_by_another_process_is_refused_on_the_very_next_request() {
    let app = TestApp::spawn().await;
    let k = key("northwind-readwrite");
    // Cached: several requests in a row, over REST and MCP.
    for _ in 0..3 {
        app.get("/companies").key(&k.name).send().await.ok();
    }
    mcp::call(&app, &k.name, "list_companies", json!({})).await;
    assert!(!app.app.principals.is_empty());

    revoke_from_another_process(&app, &k.key_id);
    assert_eq!(
        app.get("/companies").key(&k.name).send().await.problem(401)["code"],
        "revoked_key"
    );
    let r = mcp::send(
        &app,
        &k.name,
        &mcp::request(
            1,
            "tools/call",
            json!({"name": "list_companies", "arguments": {}}),
        ),
    )
    .await;
    assert_eq!(r.status, 401, "{}", r.text());
    // Another key of the same account is untouched.
    app.get("/companies")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
}

#[tokio::test]
async fn a_forged_secret_under_a_cached_key_id_is_refused() {
    let app = TestApp::spawn().await;
    let k = key("northwind-readonly");
    app.get("/companies").key(&k.name).send().await.ok();
    // Same key id, another secret, a valid checksum: the shape check passes, the key must not.
    let body = &k.raw[..k.raw.len() - 6];
    let mut forged = body.to_string().into_bytes();
    let last = forged.len() - 1;
    forged[last] = if forged[last] == b'a' { b'b' } else { b'a' };
    let forged = String::from_utf8(forged).unwrap();
    let forged = format!("{forged}{}", signage::auth::keys::checksum(&forged));
    assert_ne!(forged, k.raw);
    let r = app
        .get("/companies")
        .header("x-api-key", &forged)
        .header("x-service-client-id", &k.client_id)
        .send()
        .await;
    assert_eq!(r.problem(401)["code"], "unknown_key");
    // The real key still works, from the cache.
    app.get("/companies").key(&k.name).send().await.ok();
}

#[tokio::test]
async fn a_cached_key_with_another_client_id_is_refused() {
    let app = TestApp::spawn().await;
    let k = key("northwind-readonly");
    app.get("/companies").key(&k.name).send().await.ok();
    let other = key("harborview-readwrite").client_id;
    let r = app
        .get("/companies")
        .header("x-api-key", &k.raw)
        .header("x-service-client-id", &other)
        .send()
        .await;
    assert_eq!(r.problem(401)["code"], "client_mismatch");
}

#[tokio::test]
async fn expiry_and_the_end_of_a_grace_period_are_checked_on_every_hit() {
    // No tick for a minute: the expiry passes with no write at all to the key's rows.
    let app = TestApp::spawn_with(|l| l.sandbox_tick_millis = Some(60_000)).await;
    let admin = "northwind-admin";
    let created = app
        .post("/api-keys")
        .key(admin)
        .json(
            &json!({"client_id": key(admin).client_id, "name": "short", "scopes": ["read"],
            "expires_at": signage::time::rfc3339(signage::time::wall_now() + 2)}),
        )
        .send()
        .await
        .ok();
    let raw = created["rawKey"].as_str().unwrap().to_string();
    let with = |raw: &str| {
        app.get("/companies")
            .header("x-api-key", raw)
            .header("x-service-client-id", &key(admin).client_id)
    };
    with(&raw).send().await.ok();
    // The grace period of a rotation ends the same way.
    let old = key("northwind-readonly");
    app.post(&format!("/api-keys/{}/rotate", old.key_id))
        .key(admin)
        .json(&json!({"grace_period_seconds": 2}))
        .send()
        .await
        .ok();
    app.get("/companies").key(&old.name).send().await.ok();
    let before = generations(&app);
    tokio::time::sleep(Duration::from_millis(3100)).await;
    assert_eq!(with(&raw).send().await.problem(401)["code"], "expired_key");
    assert_eq!(
        app.get("/companies")
            .key(&old.name)
            .send()
            .await
            .problem(401)["code"],
        "expired_key"
    );
    // Nothing was written meanwhile: the refusals came from the cached entries' own times.
    assert_eq!(generations(&app), before);
}

#[tokio::test]
async fn a_snapshot_restore_brings_back_exactly_the_credentials_it_saved() {
    // The system clock: the CLI stamps its revocation with the system clock, which a frozen sandbox
    // clock would see as a revocation to come.
    let app = TestApp::spawn().await;
    let k = key("northwind-readwrite");
    app.get("/companies").key(&k.name).send().await.ok();
    app.post("/_sandbox/snapshots")
        .key("sandbox-operator")
        .json(&json!({"name": "before"}))
        .send()
        .await
        .ok();
    app.post(&format!("/api-keys/{}/revoke", k.key_id))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    app.get("/companies").key(&k.name).send().await.problem(401);
    // A cached refusal must not outlive the restore, nor a cached acceptance the next revocation.
    app.post("/_sandbox/snapshots/before/restore")
        .key("sandbox-operator")
        .send()
        .await
        .ok();
    app.get("/companies").key(&k.name).send().await.ok();
    revoke_from_another_process(&app, &k.key_id);
    app.get("/companies").key(&k.name).send().await.problem(401);
}

#[tokio::test]
async fn a_new_company_is_visible_to_a_cached_account_wide_key_at_once() {
    let app = TestApp::spawn().await;
    let k = key("northwind-readonly");
    let before = app.get("/companies").key(&k.name).send().await.ok();
    let n = before["data"].as_array().unwrap().len();
    // Written behind the server's back, as another process would.
    let db = app.app.db.path().to_path_buf();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "INSERT INTO companies (id, account_id, plan_id, name, slug, industry, country, timezone,
                                created_at, updated_at)
         SELECT 'cmp_zzzzzzzzzzzzzzzzzzzzzzzz', account_id, plan_id, 'New Co', 'new-co', industry,
                country, timezone, created_at, updated_at FROM companies WHERE account_id = ?1 LIMIT 1",
        [&k.account_id],
    )
    .unwrap();
    drop(conn);
    let after = app.get("/companies").key(&k.name).send().await.ok();
    assert_eq!(after["data"].as_array().unwrap().len(), n + 1);
    assert_eq!(after["data"][0]["id"], "cmp_zzzzzzzzzzzzzzzzzzzzzzzz");
    app.get("/companies/cmp_zzzzzzzzzzzzzzzzzzzzzzzz")
        .key(&k.name)
        .send()
        .await
        .ok();
}

#[tokio::test]
async fn the_minute_stamp_of_last_used_at_keeps_the_cache_and_every_other_write_moves_it() {
    let app = TestApp::spawn().await;
    let k = key("northwind-readonly");
    app.sql(|c| {
        c.execute(
            "UPDATE api_keys SET last_used_at = NULL WHERE id = ?1",
            [&k.key_id],
        )
    });
    let before = generations(&app);
    app.get("/companies").key(&k.name).send().await.ok();
    let stamped: Option<i64> = app.sql(|c| {
        c.query_row(
            "SELECT last_used_at FROM api_keys WHERE id = ?1",
            [&k.key_id],
            |r| r.get(0),
        )
    });
    assert!(stamped.is_some());
    assert_eq!(generations(&app), before);
    // Every other column of the key moves the credentials generation, and nothing else does.
    let columns: Vec<String> = app.sql(|c| {
        c.prepare("SELECT name FROM pragma_table_info('api_keys')")?
            .query_map([], |r| r.get(0))?
            .collect()
    });
    let read = |c: &rusqlite::Connection| -> rusqlite::Result<(i64, i64)> {
        c.query_row(
            "SELECT credentials, devices FROM cache_generations",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    };
    for column in columns.iter().filter(|c| *c != "last_used_at") {
        // A value no row holds, then the old one back: each write must move the generation.
        app.sql(|c| {
            c.execute_batch("PRAGMA foreign_keys = OFF")?;
            let g = read(c)?;
            let old: rusqlite::types::Value = c.query_row(
                &format!("SELECT {column} FROM api_keys WHERE id = ?1"),
                [&k.key_id],
                |r| r.get(0),
            )?;
            c.execute(
                &format!("UPDATE api_keys SET {column} = 'x-changed' WHERE id = ?1"),
                [&k.key_id],
            )?;
            let changed = read(c)?;
            assert_ne!(
                changed.0, g.0,
                "a write to api_keys.{column} kept the cache"
            );
            assert_eq!(changed.1, g.1);
            let id = if column == "id" {
                "x-changed"
            } else {
                k.key_id.as_str()
            };
            c.execute(
                &format!("UPDATE api_keys SET {column} = ?1 WHERE id = ?2"),
                rusqlite::params![old, id],
            )?;
            assert_ne!(read(c)?.0, changed.0);
            c.execute_batch("PRAGMA foreign_keys = ON")
        });
    }
    app.get("/companies").key(&k.name).send().await.ok();
    for (table, set) in [
        ("api_clients", "name = name || ''"),
        ("companies", "name = name || ''"),
    ] {
        let g = generations(&app);
        app.sql(|c| c.execute(&format!("UPDATE {table} SET {set}"), []));
        assert_ne!(
            generations(&app).0,
            g.0,
            "a write to {table} kept the cache"
        );
    }
}
