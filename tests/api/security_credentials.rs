//! Issue 8, as an attacker would try it: a company-scoped admin (key or login user) escaping its
//! company, secrets in the idempotency cache, a key rotated twice, a reset reaching another account,
//! and the audit log flooded with bad credentials or shown to the wrong account.

use crate::helpers::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How a test authenticates: an API key with its client id, or a login token.
#[derive(Clone, Debug)]
enum Cred {
    Key { raw: String, client: String },
    Bearer(String),
}

impl Cred {
    fn demo(name: &str) -> Cred {
        let k = key(name);
        Cred::Key {
            raw: k.raw,
            client: k.client_id,
        }
    }
    fn apply<'a>(&self, r: RequestBuilder<'a>) -> RequestBuilder<'a> {
        match self {
            Cred::Key { raw, client } => r
                .header("x-api-key", raw)
                .header("x-service-client-id", client),
            Cred::Bearer(token) => r.bearer(token),
        }
    }
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "signage-sec-{name}-{}-{}",
            std::process::id(),
            signage::random::hex::<6>(None, "test")
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn db(&self) -> String {
        self.0.join("s.db").to_str().unwrap().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the CLI on a database file; returns (success, stdout, stderr).
fn cli(db: &str, args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_signage"))
        .args(args)
        .args(["--database", db])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn northwind() -> String {
    key("northwind-admin").account_id
}

/// The three kinds of admin of the matrix, all of Northwind; the two restricted ones see only
/// Northwind Grocers.
struct Admins {
    account: Cred,
    scoped_key: Cred,
    scoped_user: Cred,
    /// A client bound to Northwind Grocers, created by the account admin.
    grocers_client: String,
}

async fn admins(app: &TestApp, db: &str) -> Admins {
    let grocers = company_id("Northwind Grocers");
    let account = Cred::demo("northwind-admin");
    let client = account
        .apply(app.post("/api-clients"))
        .json(&json!({"name": "grocers ops", "companyScope": grocers}))
        .send()
        .await;
    assert_eq!(client.status, 201, "{}", client.text());
    let client = client.json();
    assert_eq!(client["companyScope"], json!(grocers));
    let grocers_client = client["id"].as_str().unwrap().to_string();
    let scoped = account
        .apply(app.post("/api-keys"))
        .json(&json!({"client_id": grocers_client, "name": "grocers admin", "scopes": ["admin"], "companyScope": grocers}))
        .send()
        .await;
    assert_eq!(scoped.status, 201, "{}", scoped.text());
    let scoped_key = Cred::Key {
        raw: scoped.json()["rawKey"].as_str().unwrap().to_string(),
        client: grocers_client.clone(),
    };
    let (ok, _, err) = cli(
        db,
        &[
            "users",
            "create",
            "--account",
            &northwind(),
            "--username",
            "grocers-admin@northwind.example",
            "--role",
            "admin",
            "--company",
            &grocers,
        ],
        "grocers-admin-password\n",
    );
    assert!(ok, "{err}");
    let token = app
        .login("grocers-admin@northwind.example", "grocers-admin-password")
        .await;
    let scoped_user = Cred::Bearer(token);
    let me = scoped_user.apply(app.get("/me")).send().await.ok();
    assert_eq!(me["visible_company_ids"], json!([grocers]));
    Admins {
        account,
        scoped_key,
        scoped_user,
        grocers_client,
    }
}

fn key_ids(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_company_scoped_admin_cannot_reach_beyond_its_company() {
    let dir = TempDir::new("reach");
    let db = dir.db();
    let app = TestApp::spawn_with(|l| l.database = Some(db.clone())).await;
    let a = admins(&app, &db).await;
    let grocers = company_id("Northwind Grocers");
    let pharmacy = company_id("Northwind Pharmacy");
    let hotels = company_id("Harborview Hotels");
    let pharmacy_key = key("northwind-pharmacy-read").key_id;
    let wide_key = key("northwind-readwrite").key_id;
    let other_account_key = key("harborview-readwrite").key_id;
    let own_key = key("northwind-grocers-write").key_id;
    let unbound_client = key("northwind-admin").client_id;

    for (who, cred) in [
        ("scoped key", &a.scoped_key),
        ("scoped user", &a.scoped_user),
    ] {
        let create = |body: Value| cred.apply(app.post("/api-keys")).json(&body);
        // Wider: no companyScope (the key would see every company) is refused, on its own client...
        let r = create(json!({"client_id": a.grocers_client, "name": "wide", "scopes": ["read"]}))
            .send()
            .await;
        let p = r.problem(422);
        assert_eq!(p["errors"][0]["field"], "/companyScope", "{who}: {p}");
        assert_eq!(p["errors"][0]["code"], "required", "{who}");
        // ... and an account-wide client is not even visible to it.
        create(json!({"client_id": unbound_client, "name": "x", "scopes": ["read"], "companyScope": grocers}))
            .send()
            .await
            .problem(404);
        // Another company, of this account or another: not found.
        for other in [&pharmacy, &hotels] {
            create(json!({"client_id": a.grocers_client, "name": "x", "scopes": ["read"], "companyScope": other}))
                .send()
                .await
                .problem(404);
        }
        // Within its reach: fine.
        let mine = create(json!({"client_id": a.grocers_client, "name": "ok", "scopes": ["read"], "companyScope": grocers}))
            .send()
            .await;
        assert_eq!(mine.status, 201, "{who}: {}", mine.text());
        // List: only keys scoped to its company, through every page.
        let mut seen = Vec::new();
        let mut url = "/api-keys?limit=2".to_string();
        loop {
            let page = cred.apply(app.get(&url)).send().await.ok();
            for k in page["data"].as_array().unwrap() {
                assert_eq!(k["companyScope"], json!(grocers), "{who} sees {k}");
            }
            seen.extend(key_ids(&page));
            match page["next_cursor"].as_str() {
                Some(c) => url = format!("/api-keys?limit=2&cursor={c}"),
                None => break,
            }
        }
        assert!(seen.contains(&own_key), "{who}");
        for hidden in [&pharmacy_key, &wide_key, &other_account_key] {
            assert!(!seen.contains(hidden), "{who} lists {hidden}");
        }
        cred.apply(app.get(&format!("/api-keys?client_id={unbound_client}")))
            .send()
            .await
            .problem(404);
        // Get, revoke, rotate a key of another company (or account-wide): 404, and nothing changes.
        for target in [&pharmacy_key, &wide_key, &other_account_key] {
            for (method, path) in [
                ("GET", format!("/api-keys/{target}")),
                ("POST", format!("/api-keys/{target}/revoke")),
                ("POST", format!("/api-keys/{target}/rotate")),
            ] {
                let req = if method == "GET" {
                    app.get(&path)
                } else {
                    app.post(&path)
                };
                cred.apply(req).send().await.problem(404);
            }
        }
        cred.apply(app.get(&format!("/api-keys/{own_key}")))
            .send()
            .await
            .ok();
        // Clients: only its company's; a new one must name its company.
        let clients = cred.apply(app.get("/api-clients")).send().await.ok();
        for c in clients["data"].as_array().unwrap() {
            assert_eq!(c["companyScope"], json!(grocers), "{who} sees {c}");
        }
        cred.apply(app.get(&format!("/api-clients/{unbound_client}")))
            .send()
            .await
            .problem(404);
        let r = cred
            .apply(app.post("/api-clients"))
            .json(&json!({"name": "wide"}))
            .send()
            .await;
        assert_eq!(r.problem(422)["errors"][0]["field"], "/companyScope");
        cred.apply(app.post("/api-clients"))
            .json(&json!({"name": "x", "companyScope": pharmacy}))
            .send()
            .await
            .problem(404);
        let c = cred
            .apply(app.post("/api-clients"))
            .json(&json!({"name": "mine", "companyScope": grocers}))
            .send()
            .await;
        assert_eq!(c.status, 201, "{}", c.text());
        // The whole account is not its to reset.
        let p = cred
            .apply(app.post("/_sandbox/reset"))
            .send()
            .await
            .problem(403);
        assert_eq!(p["code"], "account_admin_required");
    }
    // The keys it could not touch are untouched.
    for target in [&pharmacy_key, &wide_key] {
        let k = a
            .account
            .apply(app.get(&format!("/api-keys/{target}")))
            .send()
            .await
            .ok();
        assert_eq!(k["status"], "active");
        assert_eq!(k["replaced_by"], Value::Null);
    }

    // The account admin reaches its whole account, and nothing of another.
    let acc = &a.account;
    let all = acc.apply(app.get("/api-keys?limit=100")).send().await.ok();
    let all_ids = key_ids(&all);
    assert!(all_ids.contains(&pharmacy_key) && all_ids.contains(&own_key));
    assert!(!all_ids.contains(&other_account_key));
    for (method, path) in [
        ("GET", format!("/api-keys/{other_account_key}")),
        ("POST", format!("/api-keys/{other_account_key}/revoke")),
        ("POST", format!("/api-keys/{other_account_key}/rotate")),
    ] {
        let req = if method == "GET" {
            app.get(&path)
        } else {
            app.post(&path)
        };
        acc.apply(req).send().await.problem(404);
    }
    acc.apply(app.post("/api-keys"))
        .json(&json!({"client_id": unbound_client, "name": "x", "scopes": ["read"], "companyScope": hotels}))
        .send()
        .await
        .problem(404);
    acc.apply(app.post("/api-clients"))
        .json(&json!({"name": "x", "companyScope": hotels}))
        .send()
        .await
        .problem(404);
    acc.apply(app.get(&format!(
        "/api-clients/{}",
        key("harborview-admin").client_id
    )))
    .send()
    .await
    .problem(404);
    let clients = acc.apply(app.get("/api-clients")).send().await.ok();
    assert!(key_ids(&clients).contains(&a.grocers_client));
    // A client bound to a company holds only keys of that company.
    for (body, code) in [
        (
            json!({"client_id": a.grocers_client, "name": "x", "scopes": ["read"]}),
            "required",
        ),
        (
            json!({"client_id": a.grocers_client, "name": "x", "scopes": ["read"], "companyScope": pharmacy}),
            "not_client_company",
        ),
    ] {
        let p = acc
            .apply(app.post("/api-keys"))
            .json(&body)
            .send()
            .await
            .problem(422);
        assert_eq!(p["errors"][0]["code"], code);
    }
    // What the account admin revokes in Pharmacy, it may.
    let r = acc
        .apply(app.post(&format!("/api-keys/{pharmacy_key}/revoke")))
        .send()
        .await
        .ok();
    assert_eq!(r["status"], "revoked");
    // The scoped admin's audit log holds its own company's entries only: not the account admin's.
    let scoped_log = a
        .scoped_key
        .apply(app.get("/audit-log?limit=100"))
        .send()
        .await
        .ok();
    let entries = scoped_log["data"].as_array().unwrap();
    assert!(!entries.is_empty());
    let account_admin = key("northwind-admin").key_id;
    assert!(entries.iter().all(|e| e["actor"] != json!(account_admin)));
    drop(app);
}

#[tokio::test]
async fn the_cli_refuses_a_user_in_a_company_of_another_account() {
    let dir = TempDir::new("users");
    let db = dir.db();
    let (ok, _, err) = cli(&db, &["migrate"], "");
    assert!(ok, "{err}");
    let hotels = company_id("Harborview Hotels");
    let (ok, out, err) = cli(
        &db,
        &[
            "users",
            "create",
            "--account",
            &northwind(),
            "--username",
            "sneaky@example.com",
            "--role",
            "admin",
            "--company",
            &hotels,
        ],
        "a-long-enough-password\n",
    );
    assert!(!ok, "{out}");
    assert!(err.contains("not a company of account"), "{err}");
    let (ok, _, err) = cli(
        &db,
        &[
            "users",
            "create",
            "--account",
            "acct_doesnotexist",
            "--username",
            "ghost@example.com",
        ],
        "a-long-enough-password\n",
    );
    assert!(!ok);
    assert!(err.contains("no account"), "{err}");
    let c = rusqlite::Connection::open(&db).unwrap();
    let n: i64 = c
        .query_row(
            "SELECT count(*) FROM users WHERE username IN ('sneaky@example.com', 'ghost@example.com')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 0);
}

/// Every byte of the database, its WAL and shared-memory files.
fn database_bytes(db: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        if let Ok(b) = std::fs::read(format!("{db}{suffix}")) {
            bytes.extend(b);
        }
    }
    bytes
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn an_idempotent_key_creation_never_stores_or_replays_the_secret() {
    let dir = TempDir::new("idem");
    let db = dir.db();
    let app = TestApp::spawn_with(|l| l.database = Some(db.clone())).await;
    let admin = Cred::demo("northwind-admin");
    let body =
        json!({"client_id": key("northwind-admin").client_id, "name": "ci", "scopes": ["read"]});
    let first = admin
        .apply(app.post("/api-keys"))
        .header("idempotency-key", "create-ci-key")
        .json(&body)
        .send()
        .await;
    assert_eq!(first.status, 201, "{}", first.text());
    let created = first.json();
    let raw = created["rawKey"].as_str().unwrap().to_string();
    let key_id = created["id"].as_str().unwrap().to_string();
    // The replay says what was created and that the secret is gone; it never returns it.
    let replay = admin
        .apply(app.post("/api-keys"))
        .header("idempotency-key", "create-ci-key")
        .json(&body)
        .send()
        .await;
    let p = replay.problem(409);
    assert_eq!(p["code"], "secret_not_replayable");
    assert_eq!(p["resource_id"], json!(key_id));
    assert!(p["detail"].as_str().unwrap().contains("revoke"));
    assert!(!replay.text().contains(&raw));
    // No second key was made.
    let listed = admin
        .apply(app.get("/api-keys?limit=100"))
        .send()
        .await
        .ok();
    assert_eq!(
        listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| k["name"] == "ci")
            .count(),
        1
    );
    // The same for a rotation.
    let rotate = || {
        admin
            .apply(app.post(&format!("/api-keys/{key_id}/rotate")))
            .header("idempotency-key", "rotate-ci-key")
    };
    let rotated = rotate().send().await;
    assert_eq!(rotated.status, 201, "{}", rotated.text());
    let rotated = rotated.json();
    let new_raw = rotated["new_key"]["rawKey"].as_str().unwrap().to_string();
    let p = rotate().send().await.problem(409);
    assert_eq!(p["code"], "secret_not_replayable");
    assert_eq!(p["resource_id"], rotated["new_key"]["id"]);
    // Neither secret is anywhere in the files, before or after a checkpoint.
    for checkpoint in [false, true] {
        if checkpoint {
            app.sql(|c| c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)"));
        }
        let bytes = database_bytes(&db);
        assert!(!bytes.is_empty());
        for secret in [&raw, &new_raw] {
            assert!(!contains(&bytes, secret), "raw key on disk");
            assert!(!contains(&bytes, &secret[26..58]), "secret part on disk");
        }
    }
    // A response without a secret still replays as before.
    let client = || {
        admin
            .apply(app.post("/api-clients"))
            .header("idempotency-key", "client-1")
            .json(&json!({"name": "replayable"}))
    };
    let one = client().send().await.ok();
    let two = client().send().await;
    assert_eq!(two.header("idempotent-replayed"), Some("true"));
    assert_eq!(two.json(), one);
    drop(app);
    assert!(Path::new(&db).exists());
}

#[tokio::test]
async fn a_key_is_rotated_once_and_the_chain_stays_intact() {
    let app = TestApp::spawn().await;
    let admin = Cred::demo("northwind-admin");
    let a = key("northwind-readonly").key_id;
    let rotate = |id: String| {
        admin
            .apply(app.post(&format!("/api-keys/{id}/rotate")))
            .json(&json!({"grace_period_seconds": 3600}))
    };
    let first = rotate(a.clone()).send().await;
    assert_eq!(first.status, 201, "{}", first.text());
    let b = first.json()["new_key"]["id"].as_str().unwrap().to_string();
    // Rotating the same key again is refused and names the successor.
    let p = rotate(a.clone()).send().await.problem(409);
    assert!(p["detail"].as_str().unwrap().contains(&b), "{p}");
    // The successor rotates normally; the chain is a -> b -> c.
    let second = rotate(b.clone()).send().await;
    assert_eq!(second.status, 201, "{}", second.text());
    let c = second.json()["new_key"]["id"].as_str().unwrap().to_string();
    let get = |id: String| admin.apply(app.get(&format!("/api-keys/{id}")));
    let ka = get(a.clone()).send().await.ok();
    let kb = get(b.clone()).send().await.ok();
    let kc = get(c.clone()).send().await.ok();
    assert_eq!(ka["replaced_by"], json!(b));
    assert_eq!(kb["replaced_by"], json!(c));
    assert_eq!(kc["replaced_by"], Value::Null);
    // Only one successor of `a` exists.
    let all = admin
        .apply(app.get("/api-keys?limit=100"))
        .send()
        .await
        .ok();
    let successors_of_a = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["name"] == ka["name"])
        .count();
    assert_eq!(successors_of_a, 3);
    // Revoked and expired keys cannot be rotated either.
    for name in ["northwind-revoked", "northwind-expired"] {
        let p = rotate(key(name).key_id).send().await.problem(409);
        assert!(p["detail"].as_str().unwrap().contains("cannot be rotated"));
    }
}

async fn tagline(app: &TestApp, company: &str, who: &str) -> Value {
    app.get(&format!("/companies/{company}/branding"))
        .key(who)
        .send()
        .await
        .ok()["tagline"]
        .clone()
}

#[tokio::test]
async fn an_account_reset_restores_that_account_only() {
    let app = TestApp::spawn().await;
    let grocers = company_id("Northwind Grocers");
    let hotels = company_id("Harborview Hotels");
    let nw_original = tagline(&app, &grocers, "northwind-readonly").await;
    for (company, who) in [
        (&grocers, "northwind-readwrite"),
        (&hotels, "harborview-readwrite"),
    ] {
        app.patch(&format!("/companies/{company}/branding"))
            .key(who)
            .json(&json!({"tagline": "changed by a test"}))
            .send()
            .await
            .ok();
    }
    let nw_client = app
        .post("/api-clients")
        .key("northwind-admin")
        .json(&json!({"name": "nw temp"}))
        .send()
        .await
        .ok();
    let hv_client = app
        .post("/api-clients")
        .key("harborview-admin")
        .json(&json!({"name": "hv temp"}))
        .send()
        .await
        .ok();
    app.post(&format!(
        "/api-keys/{}/revoke",
        key("northwind-readonly").key_id
    ))
    .key("northwind-admin")
    .send()
    .await
    .ok();
    app.post(&format!(
        "/api-keys/{}/revoke",
        key("harborview-hotels-billing").key_id
    ))
    .key("harborview-admin")
    .send()
    .await
    .ok();

    // Records kept per credential: an idempotent request of each account.
    let idempotent = |who: &'static str| {
        app.post("/api-clients")
            .key(who)
            .header("idempotency-key", "same-key")
            .json(&json!({"name": "idempotent"}))
    };
    for who in ["northwind-admin", "harborview-admin"] {
        assert_eq!(idempotent(who).send().await.status, 201);
    }

    let r = app
        .post("/_sandbox/reset")
        .key("northwind-admin")
        .send()
        .await;
    assert_eq!(r.ok(), json!({"object": "sandbox_reset", "reset": true}));

    // Northwind's idempotency record went with its data (the request runs anew); Harborview's stays.
    let nw_again = idempotent("northwind-admin").send().await;
    assert_eq!(nw_again.status, 201);
    assert_eq!(nw_again.header("idempotent-replayed"), None);
    let hv_again = idempotent("harborview-admin").send().await;
    assert_eq!(hv_again.header("idempotent-replayed"), Some("true"));

    // Northwind is back to the fixtures.
    assert_eq!(
        tagline(&app, &grocers, "northwind-readonly").await,
        nw_original
    );
    app.get(&format!(
        "/api-clients/{}",
        nw_client["id"].as_str().unwrap()
    ))
    .key("northwind-admin")
    .send()
    .await
    .problem(404);
    app.get("/companies")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    // Harborview keeps every change.
    assert_eq!(
        tagline(&app, &hotels, "harborview-readwrite").await,
        json!("changed by a test")
    );
    app.get(&format!(
        "/api-clients/{}",
        hv_client["id"].as_str().unwrap()
    ))
    .key("harborview-admin")
    .send()
    .await
    .ok();
    assert_eq!(
        app.get("/tokens/balance")
            .key("harborview-hotels-billing")
            .send()
            .await
            .problem(401)["code"],
        "revoked_key"
    );
    // An account the fixtures do not define has nothing to be reset to: nothing changes.
    assert!(!app
        .app
        .db
        .unscoped()
        .reset_account(
            &signage::db::WriteIntent::sandbox(),
            "acct_notinthefixtures"
        )
        .unwrap());
    // The global catalogue is there once, and the database is consistent.
    let (plans, packs, fk): (i64, i64, i64) = app.sql(|c| {
        Ok((
            c.query_row("SELECT count(*) FROM plans", [], |r| r.get(0))?,
            c.query_row("SELECT count(*) FROM token_packs", [], |r| r.get(0))?,
            c.prepare("PRAGMA foreign_key_check")?
                .query_map([], |_| Ok(()))?
                .count() as i64,
        ))
    });
    assert_eq!((plans, packs, fk), (3, 3, 0));
}

#[tokio::test]
async fn failed_authentications_are_aggregated_and_shown_only_to_their_account() {
    let app = TestApp::spawn().await;
    let revoked = key("northwind-revoked");
    let unknown = signage::auth::keys::generate(None);
    for i in 0..300 {
        let r = match i % 3 {
            // A key of Northwind's that exists: Northwind's failure.
            0 | 1 => app.get("/companies").key(&revoked.name),
            // A well-formed key that does not exist, and garbage: the operator's.
            _ if i % 2 == 0 => app
                .get("/companies")
                .header("x-api-key", &unknown.raw)
                .header("x-service-client-id", &revoked.client_id),
            _ => app
                .get("/companies")
                .header("x-api-key", "sgn_test_garbage"),
        };
        assert_eq!(r.send().await.status, 401);
    }
    type Row = (Option<String>, Option<String>, String, i64);
    let rows: Vec<Row> = app.sql(|c| {
        c.prepare("SELECT account_id, actor, outcome, count FROM audit_log WHERE status = 401")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect()
    });
    let sum = |outcome: &str| -> (usize, i64) {
        let of: Vec<&Row> = rows.iter().filter(|r| r.2 == outcome).collect();
        (of.len(), of.iter().map(|r| r.3).sum())
    };
    // Each kind is one row (two if the minute turned), whose counts add up.
    let (n, total) = sum("revoked_key");
    assert!((1..=2).contains(&n) && total == 200, "{rows:?}");
    let (n, total) = sum("unknown_key");
    assert!((1..=2).contains(&n) && total == 50, "{rows:?}");
    let (n, total) = sum("malformed_key");
    assert!((1..=2).contains(&n) && total == 50, "{rows:?}");
    for r in &rows {
        if r.2 == "revoked_key" {
            assert_eq!(r.0.as_deref(), Some(revoked.account_id.as_str()));
            assert_eq!(r.1.as_deref(), Some(revoked.key_id.as_str()));
        } else {
            assert_eq!((r.0.as_deref(), r.1.as_deref()), (None, None), "{r:?}");
        }
    }
    // Northwind's admin sees its own failures with their count; nobody sees the operator's.
    let log = |who: &'static str| {
        let req = app.get("/audit-log?limit=100").key(who);
        async move { req.send().await.ok()["data"].as_array().unwrap().clone() }
    };
    let nw = log("northwind-admin").await;
    let nw_revoked: i64 = nw
        .iter()
        .filter(|e| e["outcome"] == "revoked_key")
        .map(|e| e["count"].as_i64().unwrap())
        .sum();
    assert_eq!(nw_revoked, 200);
    let hv = log("harborview-admin").await;
    for entries in [&nw, &hv] {
        assert!(entries
            .iter()
            .all(|e| e["outcome"] != "unknown_key" && e["outcome"] != "malformed_key"));
    }
    assert!(hv.iter().all(|e| e["outcome"] != "revoked_key"));
    assert!(nw.iter().all(|e| e["count"].as_i64().unwrap() >= 1));
}
