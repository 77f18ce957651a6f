//! V31 moves `media.content` to the row's last column on a database that already holds media and
//! ads that use it (`ads.media_id` is ON DELETE RESTRICT, so the table is rebuilt in place).

use super::*;

#[test]
fn v31_keeps_every_media_item_and_the_ads_that_use_it_and_puts_content_last() {
    let db = Db::migrated_to(30);
    let mut conn = db.open_connection().unwrap();
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    conn.execute_batch(Db::COMPANY_A).unwrap();
    conn.execute(
        "INSERT INTO media (id, company_id, filename, content_type, size_bytes, sha256, width,
             height, duration_ms, content, created_at)
         VALUES ('med_a', 'cmp_a', 'a.png', 'image/png', ?1, 'x', 1, 1, NULL, ?2, 7)",
        rusqlite::params![bytes.len() as i64, bytes],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO ads (id, company_id, name, status, headline, media_id, duration_seconds,
             created_at, updated_at) VALUES ('ad_a', 'cmp_a', 'A', 'draft', 'h', 'med_a', 10, 0, 0)",
        [],
    )
    .unwrap();
    super::migrations::runner().run(&mut *conn).unwrap();

    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('media') ORDER BY cid")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        columns.last().map(String::as_str),
        Some("content"),
        "{columns:?}"
    );
    let (content, created_at, filename): (Vec<u8>, i64, String) = conn
        .query_row(
            "SELECT content, created_at, filename FROM media WHERE id = 'med_a'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert!(content == bytes && created_at == 7 && filename == "a.png");
    let fk_errors: i64 = conn
        .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(fk_errors, 0);
    // The ad still holds on to its media.
    assert!(conn
        .execute("DELETE FROM media WHERE id = 'med_a'", [])
        .is_err());
    let media_of_ad: String = conn
        .query_row("SELECT media_id FROM ads WHERE id = 'ad_a'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(media_of_ad, "med_a");
}
