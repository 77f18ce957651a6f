//! Issue 45 §2 and §3 (the console): the unit graded is the integration (the API client), whatever
//! key asks, and it gets one verdict in every view; the console's own traffic is an integration of
//! its own. Each a client scripted as it really runs, against the real server over HTTP (and the
//! real `signage readiness` binary for CI's view).

use crate::helpers::{company_id, key, TestApp};
use crate::readiness::drill_every_kind;
use crate::readiness_client::{check, evidence, rid, sandbox, status, OP};
use serde_json::{json, Value};
use std::collections::HashSet;

/// The checks of a report: id, status and evidence, in order (what two views must agree on).
fn findings(r: &Value) -> Vec<(String, String, Vec<String>)> {
    r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let mut ev: Vec<String> = c["evidence"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e.as_str().unwrap().to_string())
                .collect();
            ev.sort();
            (
                c["id"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
                ev,
            )
        })
        .collect()
}

/// `GET /readiness` sent with a raw key of `client`.
async fn readiness_as(app: &TestApp, raw: &str, client: &str, query: &str) -> Value {
    app.get(&format!("/readiness{query}"))
        .header("x-api-key", raw)
        .header("x-service-client-id", client)
        .send()
        .await
        .ok()
}

/// §2, first bullet: after a rotation (a required check, so every team rotates), the new key's
/// report holds what the integration did under the old key, and agrees with the old key's.
#[tokio::test]
async fn a_rotated_keys_report_holds_what_the_old_key_did() {
    let app = sandbox().await;
    let old = key("northwind-readonly");
    // Under the old key: a walk to the end.
    let walked = app.collect_all("/devices", "northwind-readonly", 2).await;
    assert!(walked.len() > 2);
    let rotation = app
        .post(&format!("/api-keys/{}/rotate", old.key_id))
        .key("northwind-admin")
        .json(&json!({"grace_period_seconds": 3600}))
        .send()
        .await
        .ok();
    let new_raw = rotation["new_key"]["rawKey"].as_str().unwrap();
    let new_id = rotation["new_key"]["id"].as_str().unwrap();
    // The deployment switches: its next request is the new key's.
    let adopted = app
        .get("/companies")
        .header("x-api-key", new_raw)
        .header("x-service-client-id", &old.client_id)
        .send()
        .await;
    assert_eq!(adopted.status, 200);

    let by_new = readiness_as(&app, new_raw, &old.client_id, "").await;
    assert_eq!(by_new["key_id"], new_id);
    assert_eq!(by_new["client_id"], old.client_id.as_str(), "{by_new}");
    assert_eq!(
        status(&by_new, "pagination_walked"),
        "pass",
        "the old key's walk is the integration's: {by_new}"
    );
    assert_eq!(status(&by_new, "rotated_key_adopted"), "pass", "{by_new}");
    assert!(evidence(&by_new, "rotated_key_adopted").contains(&rid(&adopted)));

    // The old key (still in its grace period) and an admin naming either key read the same.
    let by_old = app
        .get("/readiness")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    let admin_new = app
        .get(&format!("/readiness?key_id={new_id}"))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    let account = &old.account_id;
    let operator_old = app
        .get(&format!(
            "/_sandbox/readiness?account_id={account}&key_id={}",
            old.key_id
        ))
        .key(OP)
        .send()
        .await
        .ok();
    for other in [&by_old, &admin_new, &operator_old] {
        assert_eq!(other["verdict"], by_new["verdict"], "{other}");
        assert_eq!(other["client_id"], by_new["client_id"]);
        assert_eq!(findings(other), findings(&by_new), "{other}");
    }
}

/// The demo world's enabled webhooks of a company (they deliver to the built-in sink).
fn hooks_of(app: &TestApp, company: &str) -> Vec<String> {
    app.sql(|c| {
        let mut s =
            c.prepare("SELECT id FROM webhooks WHERE company_id = ?1 AND enabled = 1 ORDER BY id")?;
        let rows = s.query_map([company], |r| r.get(0))?;
        rows.collect()
    })
}

/// §2, second bullet: a company-scoped key's integration gets one verdict in its own view, an
/// admin's `?key_id=`, a company-scoped admin's, the operator's and `signage readiness --key` in
/// CI: the same company, the same webhooks, the same checks. Before, the CLI counted the other
/// company's undrilled webhooks and said `incomplete` where the key's own view passed them.
#[tokio::test]
async fn a_company_scoped_key_gets_one_verdict_in_every_view() {
    let dir = std::env::temp_dir().join(format!("signage-one-verdict-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("signage.db").to_str().unwrap().to_string();
    let app = TestApp::spawn_with(|l| {
        l.database = Some(db.clone());
        l.sandbox_clock = Some(Some(crate::sandbox_clock::FROZEN_AT));
        l.sandbox_simulate_fleet = Some(false);
    })
    .await;
    let grocers = company_id("Northwind Grocers");
    let pharmacy = company_id("Northwind Pharmacy");
    let scoped = key("northwind-grocers-write");
    let drilled = hooks_of(&app, &grocers);
    assert!(!drilled.is_empty());
    // The other company has a webhook of its own, never drilled: what the CLI used to count.
    let sink: String = app.sql(|c| {
        c.query_row(
            "SELECT url FROM webhooks WHERE id = ?1",
            [&drilled[0]],
            |r| r.get(0),
        )
    });
    app.post("/webhooks")
        .key("northwind-admin")
        .header("idempotency-key", "pharmacy-hook")
        .json(&json!({"company_id": pharmacy, "url": sink, "event_types": ["webhook.test"]}))
        .send()
        .await
        .ok();
    assert_eq!(hooks_of(&app, &pharmacy).len(), 1);
    for hook in &drilled {
        drill_every_kind(&app, hook, "northwind-admin", |_| {}).await;
    }
    // The key's own traffic: a walk to the end.
    app.collect_all("/devices", "northwind-grocers-write", 2)
        .await;

    // A company-scoped admin of the Grocers.
    let admin = app
        .post("/api-keys")
        .key("northwind-admin")
        .header("idempotency-key", "grocers-admin")
        .json(
            &json!({"client_id": key("northwind-admin").client_id, "name": "grocers-admin",
                      "scopes": ["admin"], "companyScope": grocers}),
        )
        .send()
        .await
        .ok();
    let admin_raw = admin["rawKey"].as_str().unwrap().to_string();
    let admin_client = key("northwind-admin").client_id;

    let own = app
        .get("/readiness")
        .key("northwind-grocers-write")
        .send()
        .await
        .ok();
    assert_eq!(own["company_id"], grocers.as_str(), "{own}");
    assert_eq!(own["client_id"], scoped.client_id.as_str());
    assert_eq!(status(&own, "webhook_signatures_verified"), "pass", "{own}");
    let q = format!("?key_id={}", scoped.key_id);
    let by_admin = app
        .get(&format!("/readiness{q}"))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    let by_scoped_admin = readiness_as(&app, &admin_raw, &admin_client, &q).await;
    let by_operator = app
        .get(&format!(
            "/_sandbox/readiness?account_id={}&key_id={}",
            scoped.account_id, scoped.key_id
        ))
        .key(OP)
        .send()
        .await
        .ok();
    // A read writes what the journal holds, for the CLI to read the file.
    app.get("/requests?limit=1")
        .key("northwind-admin")
        .send()
        .await
        .ok();
    let cli = |args: &[&str]| {
        let mut all = vec![
            "readiness",
            "--database",
            &db,
            "--account",
            &scoped.account_id,
        ];
        all.extend_from_slice(args);
        std::process::Command::new(env!("CARGO_BIN_EXE_signage"))
            .args(all)
            .output()
            .unwrap()
    };
    let out = cli(&["--key", &scoped.key_id]);
    let by_cli: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let exit = match own["verdict"].as_str().unwrap() {
        "ready" => 0,
        "not_ready" => 2,
        _ => 3,
    };
    assert_eq!(out.status.code(), Some(exit), "{by_cli}");
    for (view, r) in [
        ("admin", &by_admin),
        ("company-scoped admin", &by_scoped_admin),
        ("operator", &by_operator),
        ("CLI", &by_cli),
    ] {
        assert_eq!(r["verdict"], own["verdict"], "{view}: {r}");
        assert_eq!(r["company_id"], own["company_id"], "{view}");
        assert_eq!(r["client_id"], own["client_id"], "{view}");
        assert_eq!(findings(r), findings(&own), "{view}: {r}");
    }

    // Without a key, `--company` is the company-scoped admin's own report.
    let scoped_admin_own = readiness_as(&app, &admin_raw, &admin_client, "").await;
    let out = cli(&["--company", &grocers]);
    let cli_company: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cli_company["company_id"], grocers.as_str());
    assert_eq!(
        status(&cli_company, "webhook_signatures_verified"),
        "pass",
        "{cli_company}"
    );
    for id in ["webhook_signatures_verified", "webhook_rotation_accepted"] {
        assert_eq!(
            check(&cli_company, id),
            check(&scoped_admin_own, id),
            "{id}"
        );
    }
    // The whole account still lacks the other company's drills, named.
    let out = cli(&[]);
    let account: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(3));
    let missing = evidence(&account, "webhook_signatures_verified");
    assert!(hooks_of(&app, &pharmacy)
        .iter()
        .all(|h| missing.contains(h)));
    // A key's report covers its own scope: another company with it is an error, not a blend.
    let out = cli(&["--key", &scoped.key_id, "--company", &pharmacy]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("company scope"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// §3, the console: its Events view stops after a few pages of a list and its live views ask the
/// same first page every 3 s. Signed in by a link (as `signage demo`'s console is), its requests
/// are the console's own integration: the demo key's report, read by the key, an admin, the
/// operator or the console's own Readiness view, never counts them; `console=true` grades them.
#[tokio::test]
async fn the_consoles_own_traffic_is_graded_as_its_own_integration() {
    let app = sandbox().await;
    let demo = key("northwind-readwrite");
    let link = app
        .post("/auth/sign-in-links")
        .key("northwind-readwrite")
        .json(&json!({"path": "/console"}))
        .send()
        .await
        .ok();
    let token = link["url"]
        .as_str()
        .unwrap()
        .split_once("#signin=")
        .unwrap()
        .1
        .to_string();
    let session = app
        .post("/auth/sign-in")
        .json(&json!({"token": token}))
        .send()
        .await
        .ok();
    let bearer = session["access_token"].as_str().unwrap().to_string();

    // The console: a list read a page further and left with more (the Events view's cap)...
    let first = app
        .get("/devices?limit=1")
        .bearer(&bearer)
        .send()
        .await
        .ok();
    assert_eq!(first["has_more"], true);
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = app
        .get(&format!("/devices?limit=1&cursor={cursor}"))
        .bearer(&bearer)
        .send()
        .await;
    assert_eq!(second.ok()["has_more"], true);
    let stopped = rid(&second);
    // ...and a live view's first page asked again and again.
    let grocers = company_id("Northwind Grocers");
    let mut polls = HashSet::new();
    for _ in 0..32 {
        let r = app
            .get(&format!("/promotions?company_id={grocers}"))
            .bearer(&bearer)
            .send()
            .await;
        assert_eq!(r.status, 200);
        polls.insert(rid(&r));
    }
    // The integration itself: a careful walk with the key.
    app.collect_all("/devices", "northwind-readwrite", 2).await;

    let by_key = app
        .get("/readiness")
        .key("northwind-readwrite")
        .send()
        .await
        .ok();
    let by_console = app.get("/readiness").bearer(&bearer).send().await.ok();
    let by_admin = app
        .get(&format!("/readiness?key_id={}", demo.key_id))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    let account = app
        .get(&format!(
            "/_sandbox/readiness?account_id={}",
            demo.account_id
        ))
        .key(OP)
        .send()
        .await
        .ok();
    for (view, r) in [
        ("key", &by_key),
        ("console's Readiness view", &by_console),
        ("admin", &by_admin),
        ("operator, whole account", &account),
    ] {
        assert_eq!(r["console"], false, "{view}");
        assert_eq!(status(r, "pagination_walked"), "pass", "{view}: {r}");
        assert_eq!(status(r, "polling_reasonable"), "pass", "{view}: {r}");
        for id in ["pagination_walked", "polling_reasonable"] {
            let ev = evidence(r, id);
            assert!(
                ev.is_disjoint(&polls) && !ev.contains(&stopped),
                "{view}, {id}: the console's requests are not the key's: {r}"
            );
        }
    }
    assert_eq!(findings(&by_console), findings(&by_key));
    // Making the sign-in link answered 201, but the route honours no `Idempotency-Key` (its
    // token is never stored): not a create the key is graded on.
    assert_eq!(
        status(&by_key, "idempotency_keys_on_create"),
        "not_observed",
        "{by_key}"
    );

    // The console graded as what it is: its own integration, which polls and stops short.
    let console = app
        .get(&format!("/readiness?key_id={}&console=true", demo.key_id))
        .key("northwind-admin")
        .send()
        .await
        .ok();
    assert_eq!(console["console"], true);
    assert_eq!(status(&console, "polling_reasonable"), "fail", "{console}");
    assert_eq!(status(&console, "pagination_walked"), "fail", "{console}");
    assert!(evidence(&console, "polling_reasonable").is_subset(&polls));
    assert_eq!(console["verdict"], "not_ready");
    let operator_console = app
        .get(&format!(
            "/_sandbox/readiness?account_id={}&console=true",
            demo.account_id
        ))
        .key(OP)
        .send()
        .await
        .ok();
    assert_eq!(
        status(&operator_console, "polling_reasonable"),
        "fail",
        "{operator_console}"
    );
}

/// §2, third bullet, decided as Stripe reasons about idempotency: a key is asked of a create so
/// that a retry cannot do the work twice and gets the first answer. A rotation cannot happen twice
/// whatever the client sends (the second is 409), and its answer, which holds the new secret, is
/// never replayed: a retry after a lost answer ends the same with a key or without (409 naming the
/// successor). So the report does not ask a rotation for a key, and the route and the book say so.
#[tokio::test]
async fn a_retried_rotation_ends_alike_with_or_without_an_idempotency_key() {
    let app = sandbox().await;
    let admin = "northwind-admin";
    let mut successors = Vec::new();
    for (name, idem) in [
        ("northwind-readonly", None),
        ("northwind-ads-editor", Some("rot-1")),
    ] {
        let rotate = || {
            let r = app
                .post(&format!("/api-keys/{}/rotate", key(name).key_id))
                .key(admin)
                .json(&json!({}));
            match idem {
                Some(k) => r.header("idempotency-key", k),
                None => r,
            }
        };
        let first = rotate().send().await;
        assert_eq!(first.status, 201, "{}", first.text());
        let successor = first.json()["new_key"]["id"].as_str().unwrap().to_string();
        // The answer was lost; the retry cannot rotate again, and names what the first made.
        let retry = rotate().send().await;
        let p = retry.problem(409);
        assert!(
            retry.text().contains(&successor),
            "{name}: the retry names the successor: {p}"
        );
        assert!(!retry.text().contains("rawKey"));
        successors.push(successor);
    }
    let r = app
        .get(&format!("/readiness?key_id={}", key(admin).key_id))
        .key(admin)
        .send()
        .await
        .ok();
    assert_eq!(
        status(&r, "idempotency_keys_on_create"),
        "not_observed",
        "no rotation is graded as a create: {r}"
    );
    let rule = check(&r, "idempotency_keys_on_create")["rule"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        rule.contains("a key rotation, which can happen once"),
        "{rule}"
    );
    // The route says it too, and the book's rule is the report's.
    let doc = app.get("/openapi.json").send().await.ok();
    let describe = doc["paths"]["/api-keys/{id}/rotate"]["post"]["description"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        describe.contains("needs no `Idempotency-Key`"),
        "{describe}"
    );
    assert!(include_str!("../../docs/src/going-live.md").contains(&rule));
}

/// §2, fourth bullet: `signage readiness` reads the file without a server, yet reports the
/// sandbox clock's now, as the server noted it: a frozen clock's instant (advanced or not), a
/// running clock's offset added to the system time. Before, an empty journal said 1970, then the
/// system's time whatever the sandbox showed.
#[tokio::test]
async fn the_cli_reports_the_sandbox_clocks_now_with_no_request_journaled() {
    let dir = std::env::temp_dir().join(format!("signage-cli-now-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let generated = |db: &str| -> i64 {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_signage"))
            .args([
                "readiness",
                "--database",
                db,
                "--account",
                &key("northwind-admin").account_id,
            ])
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        signage::time::parse_rfc3339(report["generated_at"].as_str().unwrap()).unwrap()
    };
    // A frozen sandbox, asked nothing: its instant.
    let frozen = dir.join("frozen.db").to_str().unwrap().to_string();
    let app = TestApp::spawn_with(|l| {
        l.database = Some(frozen.clone());
        l.sandbox_clock = Some(Some(crate::sandbox_clock::FROZEN_AT));
        l.sandbox_simulate_fleet = Some(false);
    })
    .await;
    assert_eq!(generated(&frozen), crate::sandbox_clock::FROZEN_AT);
    // Advanced an hour (the advance is the operator's request, not the account's).
    advance(&app, 3600).await;
    app.stop().await;
    assert_eq!(generated(&frozen), crate::sandbox_clock::FROZEN_AT + 3600);
    // A running sandbox advanced two days: the system's time plus two days.
    let running = dir.join("running.db").to_str().unwrap().to_string();
    let app = TestApp::spawn_with(|l| {
        l.database = Some(running.clone());
        l.sandbox_simulate_fleet = Some(false);
    })
    .await;
    advance(&app, 2 * 86_400).await;
    app.stop().await;
    let ahead = generated(&running) - signage::time::wall_now();
    assert!(
        (2 * 86_400 - 60..=2 * 86_400 + 60).contains(&ahead),
        "{ahead} s ahead of the system clock"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Moves the sandbox clock forward by `seconds`, as the operator.
async fn advance(app: &TestApp, seconds: i64) {
    let r = app
        .post("/_sandbox/clock/advance")
        .key(OP)
        .json(&json!({"seconds": seconds}))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
}
