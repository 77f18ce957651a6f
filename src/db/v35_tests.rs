//! V35 rebuilds `qr_scans` and `qr_scan_counts` with their agent-class CHECK written as equalities
//! (no temporary b-tree per inserted row): every row, id and rowid stays, and the rule still holds.

use super::*;
use rusqlite::Connection;

#[test]
fn v35_keeps_every_scan_and_count_and_still_refuses_an_unknown_class() {
    let db = Db::migrated_to(34);
    let mut conn = db.open_connection().unwrap();
    conn.execute_batch(Db::COMPANY_A).unwrap();
    conn.execute_batch(
        "INSERT INTO promotions (id, company_id, name, description, landing_url,
             activation_cost_tokens, active, starts_at, ends_at, created_at, updated_at)
             VALUES ('promo_a', 'cmp_a', 'P', 'd', 'https://example.com', 0, 1, 0, 100, 0, 0);
         INSERT INTO qr_codes (id, promotion_id, code, label, target_url, redirect_url, created_at)
             VALUES ('qr_a', 'promo_a', 'abc', 'A', 'https://example.com', 'https://example.com', 0);
         -- Ids out of rowid order, so a rebuild that renumbered the rows would show.
         INSERT INTO qr_scans (id, qr_code_id, scanned_at, agent_class) VALUES
             ('qrs_3', 'qr_a', 30, 'bot'), ('qrs_1', 'qr_a', 10, 'ios'),
             ('qrs_2', 'qr_a', 20, 'other');
         INSERT INTO qr_scan_counts (qr_code_id, minute, agent_class, scans) VALUES
             ('qr_a', 1, 'android', 4), ('qr_a', 2, 'desktop', 1);",
    )
    .unwrap();
    let scans = |conn: &Connection| -> Vec<(i64, String, i64, String)> {
        conn.prepare("SELECT rowid, id, scanned_at, agent_class FROM qr_scans ORDER BY rowid")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let counts = |conn: &Connection| -> Vec<(String, i64, String, i64)> {
        conn.prepare("SELECT qr_code_id, minute, agent_class, scans FROM qr_scan_counts")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let (scans_before, counts_before) = (scans(&conn), counts(&conn));
    super::migrations::runner().run(&mut *conn).unwrap();
    assert_eq!(scans(&conn), scans_before);
    assert_eq!(counts(&conn), counts_before);
    let indexes: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL
             AND tbl_name IN ('qr_scans', 'qr_scan_counts') ORDER BY name",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        indexes,
        // V36 (run here too: the runner goes to the latest) folded the code's two indexes into one.
        [
            "qr_scan_counts_by_minute",
            "qr_scans_by_code",
            "qr_scans_by_time"
        ]
    );
    for class in ["ios", "android", "desktop", "bot", "other"] {
        conn.execute(
            "INSERT INTO qr_scans (id, qr_code_id, scanned_at, agent_class)
             VALUES ('qrs_' || ?1, 'qr_a', 40, ?1)",
            [class],
        )
        .unwrap();
    }
    for class in ["IOS", "tv", ""] {
        let refused = conn.execute(
            "INSERT INTO qr_scans (id, qr_code_id, scanned_at, agent_class)
             VALUES ('qrs_x', 'qr_a', 40, ?1)",
            [class],
        );
        assert!(refused.is_err(), "{class:?} was taken");
        let refused = conn.execute(
            "INSERT INTO qr_scan_counts (qr_code_id, minute, agent_class, scans)
             VALUES ('qr_a', 9, ?1, 1)",
            [class],
        );
        assert!(refused.is_err(), "{class:?} was counted");
    }
    // The code's scans still go with it.
    conn.execute("DELETE FROM qr_codes WHERE id = 'qr_a'", [])
        .unwrap();
    assert!(scans(&conn).is_empty() && counts(&conn).is_empty());
}
