//! The journal's file: entries are kept in segments, one per writer batch and account. These
//! tests hold what that layout must not change: one order across accounts and batches (the
//! operator's view and its cursor), a restart that keeps everything a graceful stop had queued,
//! the ring turning segment by segment, and a journal file of an earlier or unknown layout set
//! aside when a server opens it.

use crate::helpers::{key, temp_db, TestApp};
use serde_json::Value;

const OP: &str = "sandbox-operator";

async fn on_file(db: &str) -> TestApp {
    let db = db.to_string();
    TestApp::spawn_with(move |l| l.database = Some(db)).await
}

async fn send_plans(app: &TestApp, key_name: &str) -> String {
    let r = app.get("/plans").key(key_name).send().await;
    assert_eq!(r.status, 200);
    r.header("request-id").unwrap().to_string()
}

fn request_ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["request_id"].as_str().unwrap().to_string())
        .collect()
}

/// Every `listPlans` entry the operator sees, newest first, walked `limit` at a time.
async fn walk_plans(app: &TestApp, limit: u32) -> Vec<String> {
    let mut out = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = app
            .get(&format!(
                "/_sandbox/requests?operation_id=listPlans&limit={limit}{cursor}"
            ))
            .key(OP)
            .send()
            .await
            .ok();
        out.extend(request_ids(&page));
        match page["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => return out,
        }
    }
}

#[tokio::test]
async fn accounts_interleave_in_sequence_order_across_batches_and_a_restart() {
    let (dir, db) = temp_db("journal-restart");
    let app = on_file(&db).await;
    let mut sent = Vec::new();
    for round in 0..4 {
        sent.push(send_plans(&app, "northwind-readonly").await);
        sent.push(send_plans(&app, "harborview-readwrite").await);
        sent.push(send_plans(&app, "northwind-readwrite").await);
        if round == 1 {
            // A read writes what is queued: the rounds after it land in another batch.
            let n = app
                .get("/_sandbox/requests?count=true&operation_id=listPlans")
                .key(OP)
                .send()
                .await
                .ok();
            assert_eq!(n["count"], 6);
        }
    }
    // No read after the last requests: a graceful stop writes what is still queued.
    app.stop().await;

    let app = on_file(&db).await;
    let newest_first: Vec<String> = sent.iter().rev().cloned().collect();
    assert_eq!(walk_plans(&app, 100).await, newest_first);
    // The cursor walks across segments and batches without a gap or a repeat.
    assert_eq!(walk_plans(&app, 2).await, newest_first);
    assert_eq!(walk_plans(&app, 5).await, newest_first);

    // An account's view holds its own entries only, in the same order.
    let northwind: Vec<String> = {
        let page = app
            .get("/requests?operation_id=listPlans&limit=100")
            .key("northwind-admin")
            .send()
            .await
            .ok();
        request_ids(&page)
    };
    let expected: Vec<String> = sent
        .iter()
        .enumerate()
        .rev()
        .filter(|(i, _)| i % 3 != 1)
        .map(|(_, id)| id.clone())
        .collect();
    assert_eq!(northwind, expected);
    let harborview = key("harborview-readwrite").account_id;
    let counted = app
        .get(&format!(
            "/_sandbox/requests?count=true&operation_id=listPlans&account_id={harborview}"
        ))
        .key(OP)
        .send()
        .await
        .ok();
    assert_eq!(counted["count"], 4);

    // Numbering goes on after the restart: a new entry is the newest, and one entry by its id
    // is found in whichever segment holds it.
    let newest = send_plans(&app, "northwind-readonly").await;
    let page = app
        .get("/_sandbox/requests?operation_id=listPlans&limit=1")
        .key(OP)
        .send()
        .await
        .ok();
    assert_eq!(request_ids(&page), vec![newest]);
    for id in [&sent[0], &sent[5], &sent[11]] {
        let one = app
            .get(&format!("/requests/{id}"))
            .key("sandbox-operator")
            .send()
            .await;
        // The operator's key is not the account's: another account's entry is not found.
        assert_eq!(one.status, 404, "{id}");
        let owner = if sent.iter().position(|s| s == id).unwrap() % 3 == 1 {
            "harborview-admin"
        } else {
            "northwind-admin"
        };
        let one = app
            .get(&format!("/requests/{id}"))
            .key(owner)
            .send()
            .await
            .ok();
        assert_eq!(one["request_id"], id.as_str());
        assert_eq!(one["operation_id"], "listPlans");
        // By its sequence number too.
        let seq = one["id"].as_str().unwrap().to_string();
        let again = app
            .get(&format!("/requests/{seq}"))
            .key(owner)
            .send()
            .await
            .ok();
        assert_eq!(again["request_id"], id.as_str());
    }
    app.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn the_ring_turns_segment_by_segment_and_keeps_the_newest() {
    let app = TestApp::spawn_with(|l| l.journal_max_entries = Some(10)).await;
    let mut sent = Vec::new();
    for i in 0..40 {
        sent.push(send_plans(&app, "northwind-readonly").await);
        if i % 3 == 0 {
            // Reads by another account split the traffic into many small segments.
            app.get("/_sandbox/requests?limit=1")
                .key(OP)
                .send()
                .await
                .ok();
        }
    }
    let kept = walk_plans(&app, 100).await;
    // The ring turns in bulk (an eighth of it at a time), never dropping one of the newest.
    assert!((10..=11).contains(&kept.len()), "{}", kept.len());
    let newest_first: Vec<String> = sent.iter().rev().take(kept.len()).cloned().collect();
    assert_eq!(kept, newest_first);
}

/// The first journal layout: one row per request.
const ROW_LAYOUT: &str = "
CREATE TABLE requests (
    seq INTEGER PRIMARY KEY, account_id TEXT, company_id TEXT, key_id TEXT, client_id TEXT,
    at_ms INTEGER NOT NULL, wall_ms INTEGER NOT NULL, duration_us INTEGER NOT NULL,
    method TEXT NOT NULL, route TEXT, operation_id TEXT, creates INTEGER NOT NULL,
    list INTEGER NOT NULL, status INTEGER NOT NULL, problem_code TEXT, request_id TEXT NOT NULL,
    idempotency_key TEXT, replayed INTEGER NOT NULL, fault TEXT, retry_after INTEGER,
    via TEXT NOT NULL, tool TEXT, credentials TEXT NOT NULL, if_match INTEGER NOT NULL,
    query TEXT, body TEXT, body_truncated INTEGER NOT NULL, body_bytes INTEGER NOT NULL,
    body_hash TEXT, problem TEXT, next_cursor TEXT
);
INSERT INTO requests VALUES (1, NULL, NULL, NULL, NULL, 0, 0, 1500, 'GET', '/plans',
    'listPlans', 0, 1, 200, NULL, 'req_legacyfirst', NULL, 0, NULL, NULL, 'rest', NULL, 'none', 0,
    NULL, NULL, 0, 0, NULL, NULL, NULL);
";

#[tokio::test]
async fn a_journal_file_of_an_earlier_or_unknown_layout_is_set_aside_and_a_new_one_starts() {
    let row_layout = |path: &str| {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch(ROW_LAYOUT).unwrap();
    };
    let foreign = |path: &str| std::fs::write(path, b"not a journal").unwrap();
    for (name, make) in [("row", &row_layout as &dyn Fn(&str)), ("foreign", &foreign)] {
        let (dir, db) = temp_db(&format!("journal-aside-{name}"));
        let journal = format!("{db}.requests");
        make(&journal);
        let before = std::fs::read(&journal).unwrap();
        let app = on_file(&db).await;
        let sent = send_plans(&app, "northwind-readonly").await;
        // The new journal holds only what came after it started, not the old file's entry.
        assert_eq!(walk_plans(&app, 10).await, vec![sent], "{name}");
        app.stop().await;
        // The old file is kept as it was, beside the new one.
        let old = std::fs::read(format!("{journal}.old")).unwrap();
        assert!(old == before, "{name}");
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Entries of the journal file, read as another process would (`signage readiness` does).
fn entries_in_file(db: &str) -> i64 {
    let Ok(conn) = rusqlite::Connection::open_with_flags(
        format!("{db}.requests"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    ) else {
        return 0;
    };
    conn.query_row(
        "SELECT coalesce(sum(entries), 0) FROM request_segments",
        [],
        |r| r.get(0),
    )
    .unwrap_or(0)
}

#[tokio::test]
async fn a_pause_in_the_traffic_writes_the_file_so_the_cli_reads_a_running_server() {
    let (dir, db) = temp_db("journal-pause");
    let app = on_file(&db).await;
    // A create without an idempotency key, and no read of the journal afterwards.
    let created = app
        .post("/ads")
        .key("northwind-readwrite")
        .json(&serde_json::json!({
            "company_id": crate::helpers::company_id("Northwind Grocers"),
            "name": "N",
            "headline": "H",
        }))
        .send()
        .await;
    assert_eq!(created.status, 201);
    let request_id = created.header("request-id").unwrap().to_string();
    let account = key("northwind-admin").account_id;
    let started = std::time::Instant::now();
    let report: Value = loop {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_signage"))
            .args(["readiness", "--database", &db, "--account", &account])
            .args(["--format", "json"])
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let check = report["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["id"] == "idempotency_keys_on_create"))
            .cloned()
            .unwrap_or(Value::Null);
        if check["status"] == "fail" || started.elapsed() > std::time::Duration::from_secs(10) {
            break check;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(report["status"], "fail", "{report}");
    assert!(
        report["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e == request_id.as_str()),
        "{report}"
    );
    app.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn under_traffic_that_never_pauses_the_file_is_written_every_few_seconds() {
    let (dir, db) = temp_db("journal-steady");
    let file = db.clone();
    let app = std::sync::Arc::new(
        TestApp::spawn_with(move |l| {
            l.database = Some(file);
            l.rate_limit_per_second = Some(0.0);
        })
        .await,
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut senders = Vec::new();
    for _ in 0..4 {
        let (app, stop) = (app.clone(), stop.clone());
        senders.push(tokio::spawn(async move {
            let mut sent = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                send_plans(&app, "northwind-readonly").await;
                sent += 1;
            }
            sent
        }));
    }
    let started = std::time::Instant::now();
    let mut written = 0;
    while written == 0 && started.elapsed() < std::time::Duration::from_secs(10) {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        written = entries_in_file(&db);
    }
    // Seen while the senders were still sending: no read and no stop wrote it.
    let still_sending = senders.iter().all(|s| !s.is_finished());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut sent = 0;
    for s in senders {
        sent += s.await.unwrap();
    }
    assert!(
        written > 0 && still_sending,
        "{written} entries in the file"
    );
    assert!(i64::from(sent) > written, "{sent} sent, {written} written");
    let _ = std::fs::remove_dir_all(dir);
}
