//! Tests: a screen's ETag moves when what it plays changes (issue 49): an ad switched on or paused,
//! a promotion switched on or off, as an assignment does; the browser player, which reads the
//! ETag every second, shows the change within that second.

use crate::helpers::TestApp;
use serde_json::json;

async fn etag(app: &TestApp, device: &str) -> String {
    app.get(&format!("/devices/{device}"))
        .key("northwind-readwrite")
        .send()
        .await
        .header("etag")
        .unwrap_or_default()
        .to_string()
}

/// The player reads its screen's ETag every second: switching an ad or its promotion moves the
/// ETag of every screen that carries it, and of no other.
#[tokio::test]
async fn switching_an_ad_or_its_promotion_moves_its_screens_etags() {
    let app = TestApp::spawn().await;
    // A promotion's ad and the screens it is assigned to; a screen it is not on.
    let (promotion, ad, screen, other): (String, String, String, String) = app.sql(|c| {
        c.query_row(
            "SELECT a.promotion_id, a.id, x.device_id,
                    (SELECT d.id FROM devices d WHERE d.company_id = a.company_id
                       AND d.id NOT IN (SELECT device_id FROM ad_assignments y
                                        JOIN ads b ON b.id = y.ad_id
                                        WHERE b.promotion_id = a.promotion_id OR b.id = a.id)
                     LIMIT 1)
             FROM ads a JOIN ad_assignments x ON x.ad_id = a.id
             JOIN promotions p ON p.id = a.promotion_id
             WHERE p.active = 1 AND a.status = 'active' ORDER BY a.id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
    });
    let (before, before_other) = (etag(&app, &screen).await, etag(&app, &other).await);
    assert!(before.starts_with("\"v"), "{before}");
    let r = app
        .post(&format!("/promotions/{promotion}/deactivate"))
        .key("northwind-readwrite")
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let off = etag(&app, &screen).await;
    assert_ne!(
        off, before,
        "deactivating the promotion moves the screen's ETag"
    );
    assert_eq!(
        etag(&app, &other).await,
        before_other,
        "a screen without it"
    );
    // The ad paused, then switched on again.
    let r = app
        .patch(&format!("/ads/{ad}"))
        .key("northwind-readwrite")
        .json(&json!({"status": "paused"}))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let paused = etag(&app, &screen).await;
    assert_ne!(paused, off, "pausing the ad moves the screen's ETag");
    let r = app
        .patch(&format!("/ads/{ad}"))
        .key("northwind-readwrite")
        .json(&json!({"status": "active"}))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_ne!(etag(&app, &screen).await, paused, "switching the ad on");
    // An edit that changes nothing the screen shows (the ad's name) leaves the ETag alone.
    let on = etag(&app, &screen).await;
    let r = app
        .patch(&format!("/ads/{ad}"))
        .key("northwind-readwrite")
        .json(&json!({"name": "Renamed in the console"}))
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(etag(&app, &screen).await, on);
    assert_eq!(etag(&app, &other).await, before_other);
}
