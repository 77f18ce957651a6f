//! `count=true` is told by what the writer keeps of every segment (issue 48), not by reading the
//! entries: these tests hold it to the entries a list walk reads, for every kind of filter, as
//! the ring turns and after a restart that rebuilds what is kept from the file; and the readiness
//! report, read across that restart, stays the same.

use crate::helpers::{key, temp_db, TestApp};
use serde_json::Value;

const OP: &str = "sandbox-operator";

async fn on_file(db: &str) -> TestApp {
    let db = db.to_string();
    TestApp::spawn_with(move |l| {
        l.database = Some(db);
        l.journal_max_entries = Some(40);
    })
    .await
}

/// The operator's count of the demo account's entries matching `filters`.
async fn count(app: &TestApp, account: &str, filters: &str) -> u64 {
    let r = app
        .get(&format!(
            "/_sandbox/requests?count=true&account_id={account}{filters}"
        ))
        .key(OP)
        .send()
        .await
        .ok();
    assert_eq!(r["object"], "request_count");
    r["count"].as_u64().unwrap()
}

/// How many entries a walk of the same list reads, page by page.
async fn walked(app: &TestApp, account: &str, filters: &str) -> u64 {
    let (mut n, mut cursor) = (0, String::new());
    loop {
        let page = app
            .get(&format!(
                "/_sandbox/requests?limit=7&account_id={account}{filters}{cursor}"
            ))
            .key(OP)
            .send()
            .await
            .ok();
        n += page["data"].as_array().unwrap().len() as u64;
        match page["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => return n,
        }
    }
}

async fn traffic(app: &TestApp, rounds: usize) {
    for i in 0..rounds {
        let (name, path) = [
            ("northwind-readonly", "/plans"),
            ("northwind-readwrite", "/me"),
            ("northwind-readonly", "/devices/dev_missing"),
            ("northwind-readwrite", "/plans?limit=1"),
        ][i % 4];
        app.get(path).key(name).send().await;
    }
}

async fn counts_match_walks(app: &TestApp, account: &str, mark: &str) -> Vec<u64> {
    let readonly = key("northwind-readonly").key_id;
    let filters = [
        String::new(),
        "&operation_id=listPlans".into(),
        "&status=4xx".into(),
        "&status=200&via=rest".into(),
        format!("&key_id={readonly}"),
        format!("&key_id={readonly}&operation_id=getDevice"),
        "&faulted=false".into(),
        format!("&after={mark}"),
        "&since=2000-01-01T00:00:00Z&until=2100-01-01T00:00:00Z".into(),
        "&test_name=nobody".into(),
    ];
    let mut out = Vec::new();
    for f in &filters {
        let (c, w) = (count(app, account, f).await, walked(app, account, f).await);
        assert_eq!(c, w, "count and walk of {f:?}");
        out.push(c);
    }
    out
}

/// The readiness report of the readonly key's integration, as the operator reads it.
async fn report(app: &TestApp, account: &str) -> Value {
    let path = format!(
        "/_sandbox/readiness?account_id={account}&key_id={}",
        key("northwind-readonly").key_id
    );
    let mut r = app.get(&path).key(OP).send().await.ok();
    // The sandbox clock's now moves on; the graded answer does not.
    r.as_object_mut().unwrap().remove("generated_at");
    r
}

#[tokio::test]
async fn counts_are_the_entries_a_walk_reads_as_the_ring_turns_and_after_a_restart() {
    let (dir, db) = temp_db("journal-count");
    let account = key("northwind-readonly").account_id;
    let app = on_file(&db).await;
    traffic(&app, 12).await;
    let mark = app
        .get("/requests/mark")
        .key("northwind-readonly")
        .send()
        .await
        .ok()["after"]
        .as_str()
        .unwrap()
        .to_string();
    traffic(&app, 10).await;
    let before_ring = counts_match_walks(&app, &account, &mark).await;
    assert_eq!(before_ring[0], 22, "every request of the account is kept");
    assert_eq!(before_ring[7], 10, "the entries after the mark");
    // The ring (40, turning 5 at a time) drops the oldest, a segment cut in two.
    traffic(&app, 61).await;
    let turned = counts_match_walks(&app, &account, &mark).await;
    assert!((40..=45).contains(&turned[0]), "{turned:?}");
    assert!(
        turned[1] > 0 && turned[2] > 0 && turned[4] > 0,
        "{turned:?}"
    );
    let graded = report(&app, &account).await;
    app.stop().await;
    // A new server rebuilds what it keeps of every segment from the file.
    let app = on_file(&db).await;
    assert_eq!(counts_match_walks(&app, &account, &mark).await, turned);
    let again: Value = report(&app, &account).await;
    assert_eq!(again, graded);
    // And keeps it as it writes and turns the ring again.
    traffic(&app, 30).await;
    counts_match_walks(&app, &account, &mark).await;
    app.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}
