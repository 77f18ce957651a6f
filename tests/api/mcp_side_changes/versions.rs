//! The REST side: ETags cover what their objects show.

use super::*;
use serde_json::json;

/// The REST side of the same rule: a version covers everything its representation shows. An ad's
/// screens move its ETag however they change (one assignment, the bulk route, an MCP confirmation,
/// a deleted screen), and so does a promotion's QR code count; an `If-Match` from before is 412.
#[tokio::test]
async fn versions_cover_what_their_objects_show() {
    let app = spawn().await;
    let app = &app;
    let (ad, on, free) = ad_and_free_screen(app);
    let etag = |path: String| async move {
        app.get(&path)
            .key(RW)
            .send()
            .await
            .header("etag")
            .unwrap()
            .to_string()
    };
    let path = format!("/ads/{ad}");
    let mut seen = vec![etag(path.clone()).await];
    let device_before = etag(format!("/devices/{free}")).await;
    let moves: Vec<(&str, Side)> = vec![
        (
            "one assignment",
            Side::rest(
                "POST",
                format!("/ads/{ad}/devices"),
                Some(json!({"device_id": free})),
            ),
        ),
        (
            "the bulk route",
            Side::rest(
                "POST",
                format!("/ads/{ad}/assignments"),
                Some(json!({"unassign_device_ids": [free]})),
            ),
        ),
        (
            "an MCP confirmation",
            Side::Mcp(
                "prepare_ad_assignment",
                json!({"ad_id": ad, "device_id": free}),
            ),
        ),
        (
            "a screen deleted",
            Side::rest("DELETE", format!("/devices/{on}"), None),
        ),
    ];
    for (how, side) in moves {
        side.apply(app).await;
        let now = etag(path.clone()).await;
        assert!(!seen.contains(&now), "{how} left the ad's ETag at {now}");
        seen.push(now);
    }
    // The screen's own version moved with its assigned_ad_count.
    assert_ne!(etag(format!("/devices/{free}")).await, device_before);
    // An edit with the ETag from before the screens changed applies nothing.
    let r = app
        .patch(&path)
        .key(RW)
        .header("if-match", &seen[0])
        .json(&json!({"headline": "Too late"}))
        .send()
        .await;
    let p = r.problem(412);
    assert_eq!(p["current_etag"], seen[seen.len() - 1].as_str());
    // Assigning a screen already on the ad changes nothing, the ETag included.
    Side::rest(
        "POST",
        format!("/ads/{ad}/devices"),
        Some(json!({"device_id": free})),
    )
    .apply(app)
    .await;
    assert_eq!(etag(path.clone()).await, seen[seen.len() - 1]);

    // A promotion shows its QR code count.
    let p = northwind_promotion(app, true);
    let before = etag(format!("/promotions/{p}")).await;
    let code = app
        .post(&format!("/promotions/{p}/qr-codes"))
        .key(RW)
        .json(&json!({"label": "Counted"}))
        .send()
        .await
        .ok();
    let after_add = etag(format!("/promotions/{p}")).await;
    assert_ne!(after_add, before);
    app.delete(&format!("/qr-codes/{}", code["id"].as_str().unwrap()))
        .key(RW)
        .send()
        .await;
    assert_ne!(etag(format!("/promotions/{p}")).await, after_add);

    // An ad shows whether it is on air, which needs its promotion switched on and within its
    // window: switching the promotion moves the ad's ETag with its `on_air`.
    app.patch(&path)
        .key(RW)
        .json(&json!({"promotion_id": p, "status": "active"}))
        .send()
        .await
        .ok();
    let ad_json = |path: String| async move { app.get(&path).key(RW).send().await.ok() };
    let linked = ad_json(path.clone()).await;
    let linked_etag = etag(path.clone()).await;
    app.post(&format!("/promotions/{p}/deactivate"))
        .key(ADMIN)
        .send()
        .await
        .ok();
    let off = ad_json(path.clone()).await;
    assert_ne!(off["on_air"], linked["on_air"], "{linked} then {off}");
    assert_ne!(etag(path.clone()).await, linked_etag);
}
