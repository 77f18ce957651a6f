//! V38 rebuilds `playbacks` with its screen and ad keys checked at commit and without a key to
//! companies: every row, id and rowid stays, a play of a missing screen or ad still never commits,
//! and a screen's, an ad's or a company's deletion still takes its plays. V49 rebuilds it again
//! without the id's own index (no reader looks a play up by id alone): every row, id and rowid
//! stays, and the index by screen keeps an id unique to its screen.

use super::*;
use rusqlite::Connection;

type Play = (
    i64,
    String,
    String,
    String,
    String,
    String,
    i64,
    i64,
    i64,
    i64,
);

fn plays(conn: &Connection) -> Vec<Play> {
    conn.prepare(
        "SELECT rowid, id, company_id, device_id, ad_id, source, started_at, duration_seconds,
                plays, created_at FROM playbacks ORDER BY rowid",
    )
    .unwrap()
    .query_map([], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
            r.get(6)?,
            r.get(7)?,
            r.get(8)?,
            r.get(9)?,
        ))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

const PLAY: &str = "INSERT INTO playbacks (id, company_id, device_id, ad_id, source, started_at,
    duration_seconds, plays, created_at) VALUES (?1, 'cmp_a', ?2, ?3, 'simulator', ?4, 30, 2, 0)";

#[test]
fn v38_keeps_every_play_and_still_refuses_a_play_of_a_missing_screen_or_ad() {
    let db = Db::migrated_to(37);
    let mut conn = db.open_connection().unwrap();
    conn.execute_batch(Db::COMPANY_A).unwrap();
    conn.execute_batch(
        "INSERT INTO devices (id, company_id, name, location, platform, orientation, resolution,
             created_at, updated_at) VALUES
             ('dev_a', 'cmp_a', 'A', 'Hall', 'linux', 'landscape', '1920x1080', 0, 0),
             ('dev_b', 'cmp_a', 'B', 'Door', 'linux', 'portrait', '1080x1920', 0, 0);
         INSERT INTO ads (id, company_id, name, status, headline, duration_seconds, created_at,
             updated_at) VALUES ('ad_a', 'cmp_a', 'A', 'active', 'H', 15, 0, 0),
             ('ad_b', 'cmp_a', 'B', 'active', 'H', 15, 0, 0);
         -- Ids out of rowid order, so a rebuild that renumbered the rows would show.
         INSERT INTO playbacks (id, company_id, device_id, ad_id, source, started_at,
             duration_seconds, plays, created_at) VALUES
             ('pb_3', 'cmp_a', 'dev_a', 'ad_a', 'simulator', 7200, 60, 4, 7300),
             ('pb_1', 'cmp_a', 'dev_b', 'ad_b', 'player', 100, 15, 1, 120),
             ('pb_2', 'cmp_a', 'dev_a', 'ad_b', 'simulator', 3600, 45, 3, 3700);",
    )
    .unwrap();
    let before = plays(&conn);
    super::migrations::runner().run(&mut *conn).unwrap();
    assert_eq!(plays(&conn), before);
    let indexes: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL
             AND tbl_name = 'playbacks' ORDER BY name",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        indexes,
        // V39 and V47 (run here too: the runner goes to the latest) dropped the index by age
        // alone and the fleet's slot index.
        [
            "playbacks_by_ad_device",
            "playbacks_by_company_started",
            "playbacks_by_device",
        ]
    );

    // The index by screen is unique: a screen's id is never used twice.
    let twice = conn.execute(PLAY, rusqlite::params!["pb_3", "dev_a", "ad_b", 10_800]);
    assert!(
        matches!(&twice, Err(rusqlite::Error::SqliteFailure(e, _))
            if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE),
        "{twice:?}"
    );
    assert_eq!(plays(&conn), before);

    // A play of a missing screen, or of a missing ad, goes in but never commits: the transaction
    // fails at COMMIT and rolls back whole.
    for (id, device, ad) in [("pb_x", "dev_gone", "ad_a"), ("pb_y", "dev_a", "ad_gone")] {
        let tx = conn.transaction().unwrap();
        tx.execute(PLAY, rusqlite::params![id, device, ad, 10_800])
            .unwrap();
        let refused = tx.commit();
        assert!(
            matches!(&refused, Err(rusqlite::Error::SqliteFailure(e, _))
                if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY),
            "{id} committed: {refused:?}"
        );
        // (rusqlite rolls a transaction whose commit failed back as it drops it.)
        assert!(conn.is_autocommit());
        assert_eq!(plays(&conn), before, "{id} stayed");
    }
    // The fleet's statement form: a rule broken halfway fails the statement, and the caller rolls
    // the transaction back.
    let tx = conn.transaction().unwrap();
    let broken = tx.execute(
        "INSERT OR FAIL INTO playbacks (id, company_id, device_id, ad_id, source, started_at,
             duration_seconds, plays, created_at) VALUES
             ('pb_4', 'cmp_a', 'dev_b', 'ad_a', 'simulator', 0, 30, 2, 0),
             ('pb_5', 'cmp_a', 'dev_b', 'ad_a', 'simulator', 3600, -1, 2, 0)",
        [],
    );
    assert!(broken.is_err(), "a negative duration was taken");
    tx.rollback().unwrap();
    assert_eq!(plays(&conn), before);

    // Deleting an ad or a screen takes its plays at once, and a company its screens' plays.
    conn.execute("DELETE FROM ads WHERE id = 'ad_b'", [])
        .unwrap();
    let left: Vec<String> = plays(&conn).into_iter().map(|p| p.1).collect();
    assert_eq!(left, ["pb_3"]);
    conn.execute(PLAY, rusqlite::params!["pb_6", "dev_b", "ad_a", 10_800])
        .unwrap();
    conn.execute("DELETE FROM devices WHERE id = 'dev_a'", [])
        .unwrap();
    let left: Vec<String> = plays(&conn).into_iter().map(|p| p.1).collect();
    assert_eq!(left, ["pb_6"]);
    conn.execute("DELETE FROM companies WHERE id = 'cmp_a'", [])
        .unwrap();
    assert!(plays(&conn).is_empty());
}
