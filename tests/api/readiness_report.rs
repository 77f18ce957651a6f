//! The report itself: its shape when nothing was observed, the `key_id` it takes, the CLI that
//! prints it for CI and exits by its verdict, and the book that states its rules as coded.

use crate::helpers::{company_id, key, TestApp};
use crate::readiness_client::{check, report, sandbox as frozen, OP};
use serde_json::{json, Value};

#[tokio::test]
async fn nothing_observed_is_incomplete_and_a_key_report_is_its_own() {
    let app = frozen().await;
    let r = app
        .get("/readiness")
        .key("northwind-readonly")
        .send()
        .await
        .ok();
    assert_eq!(r["verdict"], "incomplete", "{r}");
    assert_eq!(r["key_id"], key("northwind-readonly").key_id.as_str());
    assert_eq!(
        check(&r, "webhook_signatures_verified")["status"],
        "not_observed"
    );
    app.get("/_sandbox/readiness")
        .key(OP)
        .send()
        .await
        .problem(422);
    app.get("/_sandbox/readiness?account_id=acct_nope")
        .key("northwind-admin")
        .send()
        .await
        .problem(403);
}

#[tokio::test]
async fn the_cli_on_an_empty_journal_reports_now_not_1970() {
    let dir = std::env::temp_dir().join(format!("signage-readiness-empty-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("signage.db");
    let db_text = db.to_str().unwrap().to_string();
    // A server ran on the file and was asked nothing.
    TestApp::spawn_with(|l| l.database = Some(db_text.clone()))
        .await
        .stop()
        .await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_signage"))
        .args([
            "readiness",
            "--database",
            &db_text,
            "--account",
            &key("northwind-admin").account_id,
        ])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let generated = report["generated_at"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(generated.starts_with("20"), "{generated}");
    assert!(!generated.starts_with("1970"), "{generated}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_cli_prints_the_report_and_exits_by_its_verdict() {
    let dir = std::env::temp_dir().join(format!("signage-readiness-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("signage.db");
    let db_text = db.to_str().unwrap().to_string();
    let account = key("northwind-admin").account_id;
    {
        let app = TestApp::spawn_with(|l| l.database = Some(db_text.clone())).await;
        // A create without an idempotency key: a required check fails.
        app.post("/ads")
            .key("northwind-readwrite")
            .json(&json!({"company_id": company_id("Northwind Grocers"), "name": "N", "headline": "H"}))
            .send()
            .await
            .ok();
        // A read makes the journal write what is queued.
        app.get("/requests")
            .key("northwind-admin")
            .send()
            .await
            .ok();
    }
    let run = |format: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_signage"))
            .args([
                "readiness",
                "--database",
                &db_text,
                "--account",
                &account,
                "--format",
                format,
            ])
            .output()
            .unwrap()
    };
    let json_out = run("json");
    assert_eq!(
        json_out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&json_out.stderr)
    );
    let report: Value = serde_json::from_slice(&json_out.stdout).unwrap();
    assert_eq!(report["verdict"], "not_ready");
    assert_eq!(
        check(&report, "idempotency_keys_on_create")["status"],
        "fail"
    );
    let junit = run("junit");
    assert_eq!(junit.status.code(), Some(2));
    let xml = String::from_utf8(junit.stdout).unwrap();
    assert!(xml.starts_with("<?xml"), "{xml}");
    assert_eq!(
        xml.matches("<testcase ").count(),
        report["checks"].as_array().unwrap().len()
    );
    assert!(
        xml.contains("name=\"idempotency_keys_on_create\">\n      <failure type=\"fail\" message="),
        "{xml}"
    );
    // Not ready: the XML has failures, as the exit status says; a recommended check not
    // observed is skipped, a required one not observed is a failure too.
    assert!(!xml.contains("failures=\"0\""), "{xml}");
    assert!(
        xml.contains("<skipped message=\"not observed (recommended)"),
        "{xml}"
    );
    assert!(xml.contains("<failure type=\"not_observed\""), "{xml}");
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_signage"))
        .args(["readiness", "--database", &db_text, "--account", "nope"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `key_id` that is no key's id is refused, on both reports, rather than grading nobody and
/// answering a hollow verdict (schemathesis sent one and got a 200).
#[tokio::test]
async fn a_malformed_key_id_is_refused() {
    let app = TestApp::spawn().await;
    let account = key("northwind-admin").account_id;
    for (path, who) in [
        ("/readiness?key_id=", "northwind-admin"),
        ("/readiness?key_id=", "northwind-readonly"),
        (
            &*format!("/_sandbox/readiness?account_id={account}&key_id="),
            OP,
        ),
    ] {
        for bad in [
            "%5BFiltered%5D",
            "key_",
            "sgn_test_abc",
            "key_a-b",
            "usr_%C3%A9",
        ] {
            let r = app.get(&format!("{path}{bad}")).key(who).send().await;
            let p = r.problem(422);
            assert_eq!(p["errors"][0]["field"], "key_id", "{path}{bad}: {p}");
        }
    }
    let fine = app
        .get(&format!(
            "/_sandbox/readiness?account_id={account}&key_id=key_abc123"
        ))
        .key(OP)
        .send()
        .await;
    assert_eq!(fine.status, 200);
}

/// The book states every rule exactly as coded: the report's own `rule` text, verbatim, in
/// `docs/src/going-live.md`'s table; and the retired check is named there as retired.
#[tokio::test]
async fn the_book_states_every_rule_as_coded() {
    let app = frozen().await;
    let book = include_str!("../../docs/src/going-live.md");
    let r = report(&app).await;
    for c in r["checks"].as_array().unwrap() {
        let row = format!(
            "| `{}` | {} | {} |",
            c["id"].as_str().unwrap(),
            if c["required"] == true {
                "yes"
            } else {
                "no (recommended)"
            },
            c["rule"].as_str().unwrap()
        );
        assert!(
            book.contains(&row),
            "the book lacks, or states otherwise: {row}"
        );
    }
    assert!(book.contains("**Retired: `authenticates_every_request`.**"));
}

/// A key rotation answers 201 but can happen once (a second is 409), and the book says its replay
/// can never succeed: it is not a create that needs an `Idempotency-Key`, so rotating without one
/// fails nothing, while a plain create without one still does.
#[tokio::test]
async fn a_key_rotation_is_not_graded_as_a_create() {
    let app = frozen().await;
    let admin = "northwind-admin";
    let rotated = key("northwind-readonly").key_id;
    let r = app
        .post(&format!("/api-keys/{rotated}/rotate"))
        .key(admin)
        .json(&json!({}))
        .send()
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let report = app
        .get(&format!("/readiness?key_id={}", key(admin).key_id))
        .key(admin)
        .send()
        .await
        .ok();
    assert_eq!(
        check(&report, "idempotency_keys_on_create")["status"],
        "not_observed",
        "{report}"
    );
    // A plain create without the key is still a failure.
    app.post("/ads")
        .key(admin)
        .json(&json!({"company_id": company_id("Northwind Grocers"), "name": "N", "headline": "H"}))
        .send()
        .await
        .ok();
    let report = app
        .get(&format!("/readiness?key_id={}", key(admin).key_id))
        .key(admin)
        .send()
        .await
        .ok();
    assert_eq!(
        check(&report, "idempotency_keys_on_create")["status"],
        "fail"
    );
}
