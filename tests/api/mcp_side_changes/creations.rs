//! The creations: bound to the company and to what they name.

use super::*;
use serde_json::json;

/// A media item of the company that no ad uses, uploaded now.
async fn spare_media(app: &TestApp) -> String {
    let png = base64_decode(crate::mcp_previews::PNG_1X1);
    let r = app
        .post(&format!(
            "/media?company_id={}&filename=spare.png",
            grocers()
        ))
        .key(ADMIN)
        .raw("image/png", png)
        .send()
        .await;
    r.ok()["id"].as_str().unwrap().to_string()
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creations_are_bound_to_the_company_and_what_they_name() {
    let app = spawn().await;
    let app = &app;
    let c = grocers();
    let promotion = one(
        app,
        "SELECT min(id) FROM promotions WHERE company_id = ?1",
        &[&c],
    );
    let creations: Vec<(&str, Value)> = vec![
        (
            "prepare_ad_creation",
            json!({"company_id": c, "name": "Side ad", "headline": "Side", "promotion_id": promotion}),
        ),
        (
            "prepare_device_creation",
            json!({"company_id": c, "name": "Side screen", "platform": "android"}),
        ),
        (
            "prepare_promotion_creation",
            json!({"company_id": c, "name": "Side promo", "description": "x",
            "landing_url": "https://www.northwind-grocers.example/side", "activation_cost_tokens": 5,
            "starts_at": "2026-01-01T00:00:00Z", "ends_at": "2031-01-01T00:00:00Z"}),
        ),
        (
            "prepare_webhook_creation",
            json!({"company_id": c, "url": "http://127.0.0.1:0/_sandbox/sink/side-hooks",
            "event_types": ["ad.created"]}),
        ),
        (
            "prepare_media_upload",
            json!({"company_id": c, "filename": "side.png", "content_type": "image/png",
            "content": crate::mcp_previews::PNG_1X1}),
        ),
    ];
    let mut n = 0;
    for (tool, args) in &creations {
        n += 1;
        cell(
            app,
            tool,
            args.clone(),
            "the company edited (REST PATCH)",
            company_edit(app, n),
            Expect::StaleWithFresh,
        )
        .await;
        cell(
            app,
            tool,
            args.clone(),
            "nothing",
            Side::None,
            Expect::Applied,
        )
        .await;
    }
    // What a new ad names: its media deleted on the side makes the ad impossible.
    let media = spare_media(app).await;
    cell(
        app,
        "prepare_ad_creation",
        json!({"company_id": c, "name": "With media", "headline": "Media", "media_id": media}),
        "its media deleted (REST)",
        Side::rest("DELETE", format!("/media/{media}"), None),
        Expect::Refused("not_found"),
    )
    .await;
}
