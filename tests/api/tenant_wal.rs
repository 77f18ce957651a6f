//! Issue 22 item 3: the write-ahead log is bounded. A burst of writes while a reader holds an old
//! snapshot grows the log past its limit (no checkpoint can reset it); once the reader is gone the
//! tick checkpoints it and truncates it back under `database.wal_limit_bytes`.

use crate::helpers::*;
use std::time::{Duration, Instant};

/// A server whose scans are all written one by one (no rate limit, no counters, no fleet writing
/// beside them), its tick every `tick_millis`, and a code to scan.
async fn scanning_app(tick_millis: u64, wal_limit: Option<u64>) -> (TestApp, String) {
    let app = TestApp::spawn_with(|l| {
        l.wal_limit_bytes = wal_limit;
        l.sandbox_tick_millis = Some(tick_millis);
        l.scan_rate_limit_per_minute = Some(0);
        l.scan_detail_per_code = Some(1_000_000);
        l.sandbox_simulate_fleet = Some(false);
    })
    .await;
    let code: String =
        app.sql(|c| c.query_row("SELECT code FROM qr_codes LIMIT 1", [], |r| r.get(0)));
    (app, code)
}

/// Scans `code` `n` times back to back: the log's largest size, looked at every `every` scans
/// and at the end.
async fn scan_burst(app: &TestApp, code: &str, n: usize, every: usize) -> u64 {
    let mut peak = 0;
    for i in 0..n {
        let r = app.get(&format!("/q/{code}")).send().await;
        assert_eq!(r.status, 302);
        if i % every == 0 {
            peak = peak.max(app.app.db.wal_bytes());
        }
    }
    peak.max(app.app.db.wal_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wal_returns_under_its_limit_after_a_burst() {
    let limit: u64 = 1024 * 1024;
    let (app, code) = scanning_app(100, Some(limit)).await;
    // A reader on an old snapshot: checkpoints cannot pass it, so the burst piles up in the log.
    let reader = rusqlite::Connection::open(app.app.db.path()).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let _: i64 = reader
        .query_row("SELECT count(*) FROM qr_scans", [], |r| r.get(0))
        .unwrap();
    let peak = scan_burst(&app, &code, 2500, 100).await;
    assert!(peak > limit, "the burst grew the log to {peak} bytes");
    // The reader keeps any checkpoint from finishing: one that holds writers back to finish is
    // tried once per 2,000 more frames, not on every commit (each try holds them a moment).
    let frames = peak / (4096 + 24);
    let forced = app.app.db.forced_checkpoints();
    assert!(
        forced <= frames / 2000 + 2,
        "{forced} forced checkpoints for a log of {frames} frames"
    );
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);
    let started = Instant::now();
    loop {
        let wal = app.app.db.wal_bytes();
        if wal <= limit {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the log is still {wal} bytes"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Nothing was lost on the way.
    let count: i64 = app.sql(|c| {
        c.query_row(
            "SELECT scan_count FROM qr_codes WHERE code = ?1",
            [&code],
            |r| r.get(0),
        )
    });
    assert!(count >= 2500);
}

/// Checkpoints run on the database's own thread, not in a request's commit: a steady stream of
/// writes (no reader holding an old snapshot) is checkpointed as it goes, and the log restarts
/// instead of growing. Without the thread nothing would checkpoint it (each connection's automatic
/// checkpoint is off), and the log would hold every page the stream wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steady_writes_are_checkpointed_off_the_request_path() {
    // The tick's truncating checkpoint out of the way: only the thread can keep the log small.
    let (app, code) = scanning_app(60_000, None).await;
    // A pooled connection hands its checkpoints to the thread: SQLite's own is off on it.
    let auto: i64 = app.sql(|c| c.query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0)));
    assert_eq!(auto, 0);
    let before = app.app.db.checkpoints();
    let peak = scan_burst(&app, &code, 3000, 50).await;
    let ran = app.app.db.checkpoints() - before;
    let inline = app.app.db.inline_checkpoints();
    eprintln!("{ran} checkpoints on the thread, {inline} in place, the log's peak {peak} bytes");
    assert!(ran >= 1, "no checkpoint ran on the thread");
    // A checkpoint is asked for at 1,000 pages and the log restarts when a writer begins on a
    // fully copied one; writes that never leave it that chance are held back once past 2,000, and
    // a thread that the machine leaves behind is helped in place from 4,000 (each frame is a
    // 4 KiB page and its 24-byte header).
    assert!(
        peak < 5 * 1000 * (4096 + 24),
        "the log grew to {peak} bytes"
    );
}
